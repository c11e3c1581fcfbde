// Writing into a chat buffer from the tool loop: each finished tool's result in its placeholder's
// place, results that finish close together in one batch, Phase 1's placeholders held back for
// a moment while quick tools return (so a loop of quick tools costs one round trip to Neovim),
// and a placeholder put back when the user deleted it while its tool ran.
import type { ChatDocument } from '../../core/chat/ast.js';
import {
  type Edit,
  type PlaceholderRequest,
  narrowEdit,
  planPlaceholders,
  planResult,
} from '../../core/chat/edits.js';
import type { ToolResultBlock } from '../../core/chat/writer.js';
import type { Logger } from '../../core/log.js';
import type { ToolOutcome } from '../../core/tools/registry.js';
import type { DocumentState, DocumentStore } from '../../editor/documents.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { WriteScheduler } from '../../editor/writequeue.js';
import { trace } from '../../editor/trace.js';

/**
 * How long a finished tool's result may wait for its still-running neighbours, so that results
 * finishing close together are written in one batch (ms).
 */
const COALESCE_MS = 3;

/** A finished tool's result waiting to be written into its buffer. */
interface PendingInjection {
  id: string;
  block: ToolResultBlock;
  replaceFinished: boolean;
  attempts: number;
  resolve: (injected: boolean) => void;
  /** Called once, in the turn its edit is queued (what follows can go in the same batch). */
  queued?: (() => void) | undefined;
}

/** Tell an item that its edit is queued (once). */
function tellQueued(item: PendingInjection): void {
  const queued = item.queued;
  item.queued = undefined;
  queued?.();
}

export interface ResultWriterPorts {
  writes: WriteScheduler;
  documents: Pick<DocumentStore, 'parsedAt'>;
  lua: Pick<LuaBridge, 'notify'>;
  logger: Pick<Logger, 'error'>;
  warn(message: string): void;
  /** Tools of the buffer still run or wait for a slot: a result may wait a moment for them. */
  toolsBusy(bufnr: number): boolean;
}

/** The 0-based row of the result header of `id`, if it has one. */
export function resultHeaderRow(doc: ChatDocument, id: string): number | undefined {
  for (const message of doc.messages) {
    for (const segment of message.segments) {
      if (segment.kind === 'tool_result' && segment.toolUseId === id) {
        return segment.span.startLine - 1;
      }
    }
  }
  return undefined;
}

export class ResultWriter {
  private readonly injections = new Map<number, PendingInjection[]>();
  private readonly injecting = new Set<number>();

  constructor(private readonly ports: ResultWriterPorts) {}

  /** What a tool waits for before it shows its spinner: Phase 1's held placeholders. */
  held(bufnr: number): Promise<void> {
    return this.holds.get(bufnr) ?? Promise.resolve();
  }

  /** Make sure `id` has a result block; returns the 0-based row of its header. */
  async ensurePlaceholder(bufnr: number, id: string): Promise<number | undefined> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const state = await this.fresh(bufnr);
      if (state === undefined) return undefined;
      const row = resultHeaderRow(state.document, id);
      if (row !== undefined) return row;
      const edits = planPlaceholders(state.document, state.lines, [{ id, status: 'approved' }]);
      if (edits.length === 0) return undefined;
      await this.applyEdits(bufnr, edits);
    }
    return undefined;
  }

  /**
   * Replace the placeholder (or, for a re-run, the finished result) of `id` with `outcome`.
   * Resolves with whether the result is in the buffer. `queued` is called in the turn the
   * result's edit is queued, so that what follows it can travel in the same batch.
   */
  inject(
    bufnr: number,
    id: string,
    outcome: ToolOutcome,
    replaceFinished: boolean,
    queued?: () => void,
  ): Promise<boolean> {
    const block: ToolResultBlock = outcome.ok
      ? { id, output: outcome.output, isError: false }
      : { id, output: outcome.error, isError: true, partialOutput: outcome.partialOutput };
    return new Promise((resolve) => {
      const queue = this.injections.get(bufnr) ?? [];
      queue.push({ id, block, replaceFinished, attempts: 0, resolve, queued });
      this.injections.set(bufnr, queue);
      if (!this.injecting.has(bufnr)) void this.drainInjections(bufnr);
    });
  }

  /**
   * Writes queued results. Results that finish while others are being written go out together:
   * planned against one parse, applied bottom to top in a single batch, each refused if its
   * block changed meanwhile (then planned again, up to five times).
   */
  private async drainInjections(bufnr: number): Promise<void> {
    this.injecting.add(bufnr);
    try {
      for (;;) {
        await this.holds.get(bufnr);
        await this.resultsSettle(bufnr);
        const taken = this.injections.get(bufnr) ?? [];
        if (taken.length === 0) break;
        this.injections.delete(bufnr);
        const state = await this.fresh(bufnr);
        if (state === undefined) {
          for (const item of taken) item.resolve(false);
          continue;
        }
        const retry = await this.writeTaken(bufnr, state, taken);
        if (retry.length > 0) {
          this.injections.set(bufnr, retry.concat(this.injections.get(bufnr) ?? []));
        }
      }
    } catch (error) {
      this.ports.logger.error(`writing tool results into buffer ${String(bufnr)} failed`, error);
      for (const item of this.injections.get(bufnr) ?? []) item.resolve(false);
      this.injections.delete(bufnr);
    } finally {
      this.injecting.delete(bufnr);
    }
  }

  /** One batch of results planned against `state`; returns those to plan again. */
  private async writeTaken(
    bufnr: number,
    state: { document: ChatDocument; lines: readonly string[] },
    taken: readonly PendingInjection[],
  ): Promise<PendingInjection[]> {
    const planned: { item: PendingInjection; edit: Edit }[] = [];
    const missing: PendingInjection[] = [];
    for (const item of taken) {
      const edit = planResult(state.document, state.lines, item.id, item.block, {
        replaceFinished: item.replaceFinished,
      });
      if (edit === undefined) missing.push(item);
      else planned.push({ item, edit });
    }
    const retry: PendingInjection[] = [];
    const again = (item: PendingInjection): void => {
      if (item.attempts < 5) {
        retry.push(item);
        return;
      }
      this.ports.warn(
        `Could not write the result of ${item.id}: its block kept changing. Run it again with <M-CR>.`,
      );
      item.resolve(false);
    };
    if (missing.length > 0) {
      // A placeholder is gone (deleted while the tool ran): put it back, then plan again.
      const edits = planPlaceholders(
        state.document,
        state.lines,
        missing.map((item) => ({ id: item.id, status: 'approved' as const })),
      );
      for (const item of missing) {
        if (edits.length === 0) {
          again({ ...item, attempts: 5 });
        } else {
          item.attempts += 1;
          again(item);
        }
      }
      await this.applyEdits(bufnr, edits);
      // The other results are planned again against the buffer with the placeholders back.
      for (const { item } of planned) retry.push(item);
      return retry;
    }
    const writer = this.ports.writes.buffer(bufnr);
    const sorted = [...planned].sort((a, b) => b.edit.start - a.edit.start);
    const queued = sorted.map(({ edit }) =>
      writer.setLines(edit.start, edit.end, edit.lines, edit.expect),
    );
    for (const { item } of sorted) tellQueued(item);
    const outcomes = await Promise.all(queued);
    sorted.forEach(({ item }, index) => {
      const outcome = outcomes[index];
      if (outcome === 'applied') item.resolve(true);
      else if (outcome === 'gone') item.resolve(false);
      else {
        item.attempts += 1;
        again(item);
      }
    });
    return retry;
  }

  /** Buffers whose placeholders Phase 1 holds back while their tools start (see below). */
  private readonly holds = new Map<number, Promise<void>>();

  /**
   * Phase 1 of a step whose calls were all approved (or denied): the tools start at once, and
   * the placeholders are written when they have returned, or after `COALESCE_MS` — a call whose
   * result is in by then gets its result written in its placeholder's place, in the same
   * batch, so a loop of quick tools costs one round trip to Neovim instead of two. Slower calls
   * get their placeholders as before, and their results follow. Results and spinners wait for
   * the hold to end.
   */
  async placeWhileRunning(
    bufnr: number,
    state: { document: ChatDocument; lines: readonly string[] },
    requests: readonly PlaceholderRequest[],
    start: () => void,
  ): Promise<void> {
    let release = (): void => undefined;
    this.holds.set(
      bufnr,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    let ready: PendingInjection[] = [];
    try {
      start();
      await this.resultsSettle(bufnr);
      trace('hold:settled');
      const queue = this.injections.get(bufnr) ?? [];
      const ids = new Set(requests.map((request) => request.id));
      ready = queue.filter((item) => ids.has(item.id) && !item.replaceFinished);
      const rest = queue.filter((item) => !ready.includes(item));
      if (rest.length > 0) this.injections.set(bufnr, rest);
      else this.injections.delete(bufnr);
    } finally {
      const known = new Map(ready.map((item) => [item.id, item.block]));
      const planned = requests.map((request) => {
        const result = known.get(request.id);
        return result === undefined ? request : { ...request, result };
      });
      const writer = this.ports.writes.buffer(bufnr);
      const outcomes = planPlaceholders(state.document, state.lines, planned).map((edit) =>
        writer.setLines(edit.start, edit.end, edit.lines, edit.expect),
      );
      for (const item of ready) tellQueued(item);
      // The step waits for this write: it goes now, not on the next tick.
      this.ports.writes.sendNow();
      this.holds.delete(bufnr);
      release();
      trace('hold:planned');
      const written = (await Promise.all(outcomes)).every((outcome) => outcome === 'applied');
      trace('hold:written');
      if (written) {
        for (const item of ready) item.resolve(true);
      } else if (ready.length > 0) {
        // Something refused the batch: the results go the usual way (placeholders put back
        // where they are missing, then the results).
        this.injections.set(bufnr, [...ready, ...(this.injections.get(bufnr) ?? [])]);
        if (!this.injecting.has(bufnr)) void this.drainInjections(bufnr);
      }
    }
  }

  /**
   * While other tools of the buffer are still running (or waiting for a slot), give them a
   * moment to return, so that results finishing close together go out as one write: every
   * batch is a round trip to Neovim and a fresh parse. A slow neighbour holds a result back for
   * at most `COALESCE_MS`.
   */
  private async resultsSettle(bufnr: number): Promise<void> {
    const until = performance.now() + COALESCE_MS;
    while (this.ports.toolsBusy(bufnr) && performance.now() < until) {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * The document once it includes every write queued to the buffer so far (a tool may return
   * before its placeholder, queued just before it started, is in).
   */
  async fresh(bufnr: number): Promise<DocumentState | undefined> {
    const writer = this.ports.writes.buffer(bufnr);
    await writer.flushed();
    return this.ports.documents.parsedAt(bufnr, writer.tick);
  }

  async applyEdits(bufnr: number, edits: readonly Edit[]): Promise<void> {
    const writer = this.ports.writes.buffer(bufnr);
    // Only the rows that change: a status rewritten in a fence leaves the header and the preview
    // line's mark where they are.
    const results = edits
      .map(narrowEdit)
      .map((edit) => writer.setLines(edit.start, edit.end, edit.lines, edit.expect));
    await Promise.all(results);
  }
}
