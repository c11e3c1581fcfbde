// Running chats held in files (`FileChats`, ./api.ts): a run is the session's `<C-]>` with
// autopilot on (the one loop, src/host/session.ts), and it ends where the buffer's would hand the
// word back to the user (`chat.step_ended`). What the run does is heard through the file adapter
// (`ChatObserver`) and told to the caller as `RunEvent`s.
import { resolve } from 'node:path';
import { totalInput } from '../core/usage/cost.js';
import type { ChatDocument } from '../core/chat/ast.js';
import type { HookName, HookPayloads } from '../core/hooks.js';
import type { DocumentStore } from '../editor/documents.js';
import type { HostToLuaMethod, LuaParams } from '../editor/protocol/index.js';
import { waitingBlocks } from '../host/approval-notice.js';
import type { EditorStates } from '../host/editor-state.js';
import type { SessionRegistry } from '../host/session.js';
import type { UsageTracker } from '../host/usage.js';
import type { ToolCommands } from '../host/tools/commands.js';
import type {
  FileChat,
  FileChats,
  OpenOptions,
  RunEvent,
  RunOptions,
  RunOutcome,
  RunTotals,
} from './api.js';
import type { ChatObserver, FileAdapter } from './adapter.js';
import type { ConfigLayer } from './api.js';

export interface RunnerDeps {
  adapter: FileAdapter;
  sessions: Pick<SessionRegistry, 'of' | 'get' | 'busy'>;
  documents: Pick<DocumentStore, 'attach' | 'parsed'>;
  usage: Pick<UsageTracker, 'capChat'>;
  /** Sets a placeholder's status, as `:Flemma tool:approve` does. */
  commands: Pick<ToolCommands, 'setStatusAt'>;
  states: Pick<EditorStates, 'stale'>;
  /** Forget everything the host keeps about a bufnr. */
  forget(bufnr: number): void;
  /** The Neovim buffer showing `path`, if any (absent: there is no Neovim). */
  status?(path: string): Promise<{ bufnr?: number; modified: boolean }>;
}

type StepEnding = LuaParams<'chat.step_ended'>['outcome'];

/** One run: its ticket, its numbers, how it ends. */
class Run implements ChatObserver {
  readonly totals: RunTotals = { turns: 0, cost: 0, inputTokens: 0, outputTokens: 0 };
  /** The run's own cap was reached (`usage.confirm`, or autopilot stopped by it). */
  private costReached = false;
  /** The last warning or error for the user while the run went on. */
  private notice: string | undefined;

  constructor(
    readonly ticket: number,
    private readonly options: RunOptions,
    private readonly finish: (outcome: StepEnding) => void,
  ) {}

  private tell(event: RunEvent): void {
    this.options.onEvent?.(event);
  }

  method(method: HostToLuaMethod, params: unknown): void {
    switch (method) {
      case 'chat.step_ended': {
        const ended = params as LuaParams<'chat.step_ended'>;
        if (ended.ticket === this.ticket) this.finish(ended.outcome);
        return;
      }
      case 'send.begin':
        this.totals.turns += 1;
        this.tell({ type: 'request', turn: this.totals.turns });
        return;
      case 'usage.show':
        this.counted(params as LuaParams<'usage.show'>);
        return;
      case 'usage.confirm':
        this.costReached = true;
        return;
      case 'attention.signal': {
        const { reason, tools } = params as LuaParams<'attention.signal'>;
        this.tell({ type: 'attention', reason, ...(tools === undefined ? {} : { tools }) });
        return;
      }
      case 'hooks.emit':
        this.hook(params as { name: HookName; data: HookPayloads[HookName] });
        return;
      default:
    }
  }

  private counted({ request }: LuaParams<'usage.show'>): void {
    this.totals.cost += request.cost ?? 0;
    this.totals.inputTokens += totalInput(request);
    this.totals.outputTokens += request.output_tokens + request.thoughts_tokens;
    if (this.options.maxCost !== undefined && this.totals.cost >= this.options.maxCost) {
      this.costReached = true;
    }
    this.tell({ type: 'usage', request, totals: { ...this.totals } });
  }

  private hook({ name, data }: { name: HookName; data: HookPayloads[HookName] }): void {
    if (name === 'tool:executing') {
      const call = data as HookPayloads['tool:executing'];
      this.tell({ type: 'tool_started', id: call.tool_id, name: call.tool_name });
    } else if (name === 'tool:completed') {
      const call = data as HookPayloads['tool:completed'];
      this.tell({
        type: 'tool_finished',
        id: call.tool_id,
        name: call.tool_name,
        status: call.status,
      });
    }
  }

  appended(text: string): void {
    this.tell({ type: 'text', text });
  }

  written(): void {
    // Told by the runner, which knows the path.
  }

  noticed(message: string): void {
    this.notice = message;
  }

  /** The outcome of a step that ended as `ending`, for the chat's tree `document`. */
  outcome(ending: StepEnding, document: ChatDocument | undefined): RunOutcome {
    const totals = { ...this.totals };
    if (this.costReached && ending !== 'failed' && ending !== 'cancelled') {
      return { ...totals, kind: 'max_cost' };
    }
    switch (ending) {
      case 'waiting': {
        const calls = document === undefined ? [] : waitingBlocks(document);
        return { ...totals, kind: 'approval', calls: calls.map(({ id, name }) => ({ id, name })) };
      }
      case 'cancelled':
        return { ...totals, kind: 'cancelled' };
      case 'stopped':
        return { ...totals, kind: 'max_turns' };
      case 'failed':
      case 'refused':
        return { ...totals, kind: 'error', message: this.failure(document) };
      case 'done':
        // Nothing went out: what stopped it was said to the user (a problem of the chat).
        if (totals.turns === 0) {
          return { ...totals, kind: 'error', message: this.notice ?? 'nothing to send' };
        }
        return { ...totals, kind: 'done', text: lastReply(document) };
      default:
        return { ...totals, kind: 'done', text: lastReply(document) };
    }
  }

  /** Why the run failed: the reply's interruption, else the last message for the user. */
  private failure(document: ChatDocument | undefined): string {
    const last = document?.messages.at(-1);
    const aborted =
      last?.role === 'Assistant' ? last.segments.find((s) => s.kind === 'aborted') : undefined;
    if (aborted?.kind === 'aborted' && aborted.message !== '') return aborted.message;
    return this.notice ?? 'the run stopped with an error (see the log)';
  }
}

/** The text of the last `@Assistant:` message. */
function lastReply(document: ChatDocument | undefined): string {
  const last = document?.messages.filter((message) => message.role === 'Assistant').at(-1);
  if (last === undefined) return '';
  return last.segments
    .flatMap((segment) => (segment.kind === 'text' ? [segment.value] : []))
    .join('')
    .trim();
}

/**
 * The options autopilot runs with in a run (over the creator's layer, under the frontmatter);
 * the run's own limits are the usage tracker's (`capChat`).
 */
const RUN_LAYER: ConfigLayer = [
  { path: ['tools', 'autopilot', 'enabled'], value: true },
  { path: ['tools', 'autopilot', 'resume_delay'], value: 0 },
];

export class FileChatRunner implements FileChats {
  private readonly runs = new Map<number, Run>();
  private tickets = 0;

  constructor(private readonly deps: RunnerDeps) {}

  async open(path: string, options: OpenOptions): Promise<FileChat> {
    const absolute = resolve(options.cwd ?? process.cwd(), path);
    const open = this.find(absolute);
    if (open !== undefined) return open;
    const shown = await this.deps.status?.(absolute);
    if (shown?.modified === true) {
      throw new Error(
        `${path} has unsaved changes in Neovim: write them (:w) or drop them (:e!) first; nothing was changed`,
      );
    }
    if (shown?.bufnr !== undefined && this.deps.sessions.busy(shown.bufnr)) {
      throw new Error(
        `${path} is busy in Neovim (a reply or a tool runs there): wait, or <C-c> it`,
      );
    }
    return this.deps.adapter.open(absolute, options);
  }

  get(bufnr: number): FileChat | undefined {
    return this.deps.adapter.chat(bufnr);
  }

  find(path: string): FileChat | undefined {
    const absolute = resolve(path);
    return this.deps.adapter.all().find((chat) => chat.path === absolute);
  }

  run(chat: FileChat, options: RunOptions = {}): Promise<RunOutcome> {
    const { adapter, sessions, usage, states } = this.deps;
    if (this.runs.has(chat.bufnr)) {
      return Promise.reject(new Error(`${chat.path} runs already`));
    }
    return new Promise<RunOutcome>((settle) => {
      const bufnr = chat.bufnr;
      let over = false;
      const end = (ending: StepEnding): void => {
        if (over) return;
        over = true;
        options.signal?.removeEventListener('abort', abort);
        void this.ended(chat, run, ending).then(settle);
      };
      const run = new Run(++this.tickets, options, end);
      const abort = (): void => {
        void this.cancel(chat);
      };
      this.runs.set(bufnr, run);
      adapter.observe(bufnr, this.observer(chat, run, options), RUN_LAYER);
      usage.capChat(bufnr, {
        ...(options.maxCost === undefined ? {} : { cost: options.maxCost }),
        ...(options.maxTurns === undefined ? {} : { requests: options.maxTurns }),
      });
      // The held settings were asked without the run's layer.
      states.stale(bufnr);
      if (options.signal?.aborted === true) {
        end('cancelled');
        return;
      }
      options.signal?.addEventListener('abort', abort, { once: true });
      sessions
        .of(bufnr)
        .step(true, run.ticket)
        .catch((error: unknown) => {
          run.noticed(error instanceof Error ? error.message : String(error));
          end('failed');
        });
    });
  }

  /** The run's observer: the run's, and `written` events with the chat's path. */
  private observer(chat: FileChat, run: Run, options: RunOptions): ChatObserver {
    return {
      method: (method, params) => {
        run.method(method, params);
      },
      appended: (text) => {
        run.appended(text);
      },
      written: () => options.onEvent?.({ type: 'written', path: chat.path }),
      noticed: (message) => {
        run.noticed(message);
      },
    };
  }

  /** The run is over: its file written, the chat no longer running, its outcome. */
  private async ended(chat: FileChat, run: Run, ending: StepEnding): Promise<RunOutcome> {
    const { adapter, documents, usage, states } = this.deps;
    const document = (await documents.parsed(chat.bufnr))?.document;
    const outcome = run.outcome(ending, document);
    await adapter.chat(chat.bufnr)?.flushed();
    this.runs.delete(chat.bufnr);
    adapter.observe(chat.bufnr, undefined);
    usage.capChat(chat.bufnr, undefined);
    states.stale(chat.bufnr);
    return outcome;
  }

  async decide(
    chat: FileChat,
    toolId: string,
    status: 'approved' | 'rejected',
    message?: string,
  ): Promise<void> {
    if (this.runs.has(chat.bufnr)) throw new Error(`${chat.path} runs: decide once it stopped`);
    const document = (await this.deps.documents.attach(chat.bufnr))?.document;
    const block =
      document === undefined ? undefined : waitingBlocks(document).find((b) => b.id === toolId);
    if (block === undefined) throw new Error(`no call ${toolId} waits in ${chat.path}`);
    await this.deps.commands.setStatusAt(chat.bufnr, block.toolResultLine - 1, status, message);
  }

  async cancel(chat: FileChat): Promise<void> {
    await this.deps.sessions.get(chat.bufnr)?.cancel();
  }

  async close(chat: FileChat): Promise<void> {
    if (this.runs.has(chat.bufnr)) await this.cancel(chat);
    await this.deps.adapter.close(chat.bufnr);
    this.deps.forget(chat.bufnr);
  }
}
