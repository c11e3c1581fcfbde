// Counts the write queue's batches as the Lua side answers them. The queue keeps no statistics of
// its own; a test or the benchmark that wants the figures puts this between the queue and Lua.
import type { LuaBridge } from '../../src/editor/lua.js';
import type {
  LuaAnswer,
  LuaNotification,
  LuaParams,
  LuaRequest,
} from '../../src/editor/protocol/index.js';

interface Answer {
  status?: string;
}

export interface WriteCounter {
  /** The bridge to give the WriteScheduler. */
  readonly bridge: LuaBridge;
  /** `buffer.apply_batch` calls made. */
  readonly batches: number;
  /** Batches of which Lua refused an edit for now (or that failed), so the queue retries. */
  readonly retries: number;
  /** Resolves once `retries` has reached `count`. */
  retried(count: number): Promise<void>;
}

function resultsOf(answer: unknown): Answer[] {
  if (Array.isArray(answer)) return answer as Answer[];
  const results = (answer as { results?: unknown } | null)?.results;
  return Array.isArray(results) ? (results as Answer[]) : [];
}

export function countWrites(lua: Pick<LuaBridge, 'call' | 'notify'>): WriteCounter {
  const counter = { batches: 0, retries: 0 };
  const waiting: { count: number; resolve: () => void }[] = [];
  const retried = (): void => {
    counter.retries += 1;
    for (const wait of waiting.splice(0)) {
      if (counter.retries >= wait.count) wait.resolve();
      else waiting.push(wait);
    }
  };
  const bridge = {
    call: async <M extends LuaRequest>(method: M, params: LuaParams<M>): Promise<LuaAnswer<M>> => {
      if (method !== 'buffer.apply_batch') return lua.call(method, params);
      counter.batches += 1;
      try {
        const answer = await lua.call(method, params);
        if (resultsOf(answer).some((result) => result.status === 'retry')) retried();
        return answer;
      } catch (error) {
        retried();
        throw error;
      }
    },
    notify: <M extends LuaNotification>(method: M, params: LuaParams<M>): void => {
      lua.notify(method, params);
    },
  };
  return {
    bridge: bridge as unknown as LuaBridge,
    get batches() {
      return counter.batches;
    },
    get retries() {
      return counter.retries;
    },
    retried: (count) =>
      counter.retries >= count
        ? Promise.resolve()
        : new Promise((resolve) => {
            waiting.push({ count, resolve });
          }),
  };
}
