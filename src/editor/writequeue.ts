// Frame-batched buffer writes. Every buffer has a FIFO of edits; one scheduler per Neovim
// connection sends all pending edits of all buffers as a single RPC at most once per frame,
// keeps one batch in flight, and retries when Neovim refuses edits for now (textlock).
import { trace } from './trace.js';
import { type Logger, silentLogger } from '../core/log.js';
import { type LuaBridge, wireLabel } from './lua.js';
import type { LuaAnswer, LuaNotification, LuaParams, LuaRequest } from './protocol/index.js';
import type {
  AfterCallWire,
  AfterResult,
  BufferBatch,
  BufferResult,
  WriteOp,
} from './protocol/wire.js';

export type { AppendOp, CloseStreamOp, SetLinesOp, WriteOp } from './protocol/wire.js';

export type WriteOutcome = 'applied' | 'conflict' | 'gone';

/**
 * A Lua call waiting for the queued edits (see WriteScheduler.callAfterWrites), or a notice that
 * goes only with the next batch (`noticeAfterWrites`: dropped, not carried on, when that batch
 * is held back).
 */
interface AfterCall {
  method: string;
  params: unknown;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  notice?: true;
}

interface QueuedOp {
  op: WriteOp;
  seq: number;
  settle?: (outcome: WriteOutcome) => void;
}

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): { cancel(): void };
}

const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => {
    // No wait: the next turn of the event loop (a zero timer still costs about a millisecond).
    if (ms <= 0) {
      const immediate = setImmediate(fn);
      return {
        cancel: () => {
          clearImmediate(immediate);
        },
      };
    }
    const handle = setTimeout(fn, ms);
    return {
      cancel: () => {
        clearTimeout(handle);
      },
    };
  },
};

export interface WriteSchedulerOptions {
  /** The minimum time between two batches, in ms (one frame). */
  frameMs?: number;
  /** The longest wait between retries of a refused batch, in ms. */
  maxRetryMs?: number;
  logger?: Logger;
  clock?: Clock;
}

/** The per-buffer end of the queue: what features use to edit a buffer. */
export class BufferWriter {
  private queue: QueuedOp[] = [];
  /** Streams appended to and not closed yet: while any is open, batches keep to one per frame. */
  readonly openStreams = new Set<string>();
  private appliedSeq = 0;
  private nextSeq = 1;
  private waiters: { seq: number; resolve: () => void }[] = [];
  /** The changedtick Neovim reported after our last batch, or null before the first one. */
  tick: number | null = null;
  /** How many batches found the buffer edited by someone else since our previous batch. */
  externalEdits = 0;
  gone = false;
  private editListeners: (() => void)[] = [];

  constructor(
    readonly bufnr: number,
    private readonly scheduler: WriteScheduler,
  ) {}

  /** Append text at the anchor of `stream`; consecutive appends are coalesced. */
  append(text: string, stream = 'default'): void {
    this.openStreams.add(stream);
    if (text === '' || this.gone) return;
    const last = this.queue[this.queue.length - 1];
    if (last?.op.op === 'append' && last.op.stream === stream && last.settle === undefined) {
      last.op.text += text;
      last.seq = this.nextSeq++;
    } else {
      this.push({ op: 'append', stream, text });
    }
    this.scheduler.wake();
  }

  /** Replace rows [start, end) if they still read `expect`; resolves with what happened. */
  setLines(
    start: number,
    end: number,
    lines: string[],
    expect: string[] | null = null,
  ): Promise<WriteOutcome> {
    if (this.gone) return Promise.resolve('gone');
    return new Promise((resolve) => {
      this.push({ op: 'set_lines', start, end, expect, lines }, resolve);
      this.scheduler.wake();
    });
  }

  closeStream(stream = 'default'): void {
    this.openStreams.delete(stream);
    if (this.gone) return;
    this.push({ op: 'close_stream', stream });
    this.scheduler.wake();
  }

  /** Resolves once everything queued so far has been written (or the buffer is gone). */
  flushed(): Promise<void> {
    const target = this.nextSeq - 1;
    if (this.appliedSeq >= target || this.gone) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push({ seq: target, resolve });
    });
  }

  /** Called when a batch finds that the user edited the buffer since the host last wrote it. */
  onExternalEdit(listener: () => void): void {
    this.editListeners.push(listener);
  }

  get pending(): number {
    return this.queue.length;
  }

  private push(op: WriteOp, settle?: (outcome: WriteOutcome) => void): void {
    const entry: QueuedOp = { op, seq: this.nextSeq++ };
    if (settle !== undefined) entry.settle = settle;
    this.queue.push(entry);
  }

  /** @internal Take the whole queue for a batch. */
  take(): QueuedOp[] {
    const taken = this.queue;
    this.queue = [];
    return taken;
  }

  /** @internal Apply a batch result: settle what was handled, re-queue the rest in front. */
  settle(taken: QueuedOp[], result: BufferResult): void {
    if (result.tick !== undefined) this.tick = result.tick;
    if (result.edited === true) {
      this.externalEdits += 1;
      for (const listener of this.editListeners) listener();
    }
    if (result.status === 'gone') {
      this.markGone(taken);
      return;
    }
    const conflicts = new Set((result.conflicts ?? []).map((index) => index - 1));
    const handled = taken.slice(0, result.done);
    handled.forEach((entry, index) => {
      entry.settle?.(conflicts.has(index) ? 'conflict' : 'applied');
      this.appliedSeq = Math.max(this.appliedSeq, entry.seq);
    });
    const rest = taken.slice(result.done);
    if (result.status === 'error') {
      // The Lua side could not apply these edits at all; they are dropped, not retried forever.
      rest.forEach((entry) => {
        entry.settle?.('conflict');
        this.appliedSeq = Math.max(this.appliedSeq, entry.seq);
      });
    } else {
      this.queue = rest.concat(this.queue);
    }
    this.release();
  }

  private markGone(taken: QueuedOp[]): void {
    this.gone = true;
    for (const entry of taken.concat(this.queue)) entry.settle?.('gone');
    this.queue = [];
    this.appliedSeq = this.nextSeq - 1;
    this.release();
  }

  private release(): void {
    const ready = this.waiters.filter((waiter) => waiter.seq <= this.appliedSeq || this.gone);
    this.waiters = this.waiters.filter((waiter) => !ready.includes(waiter));
    for (const waiter of ready) waiter.resolve();
  }
}

/**
 * One per Neovim connection: turns all queued edits into one RPC at a time, at most one per frame
 * while a stream is open.
 */
export class WriteScheduler {
  private readonly writers = new Map<number, BufferWriter>();
  private readonly frameMs: number;
  private readonly maxRetryMs: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private inFlight = false;
  private timer: { cancel(): void } | undefined;
  private lastSentAt = -Infinity;
  private retryDelay = 0;

  constructor(
    private readonly lua: LuaBridge,
    options: WriteSchedulerOptions = {},
  ) {
    this.frameMs = options.frameMs ?? 16;
    this.maxRetryMs = options.maxRetryMs ?? 250;
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? realClock;
  }

  /** The writer of a buffer (created on first use). */
  buffer(bufnr: number): BufferWriter {
    let writer = this.writers.get(bufnr);
    if (writer === undefined || writer.gone) {
      writer = new BufferWriter(bufnr, this);
      this.writers.set(bufnr, writer);
    }
    return writer;
  }

  /** Forget a buffer's writer (after it was wiped). */
  forget(bufnr: number): void {
    this.writers.delete(bufnr);
  }

  private afterCalls: AfterCall[] = [];

  /**
   * Call a Lua method once every edit queued so far is applied: `await flushed()` on every
   * writer, then `lua.call`, but in the round trip of the last edits (Lua runs the calls after
   * the batch's edits, and holds them back when an edit must be retried). Edits queued before
   * that batch goes out are applied first too.
   */
  callAfterWrites<M extends LuaRequest>(method: M, params: LuaParams<M>): Promise<LuaAnswer<M>> {
    return new Promise((resolve, reject) => {
      this.afterCalls.push({
        method,
        params,
        // NOTE: Lua answers it through the same dispatch as `LuaBridge.call` (see there).
        resolve: (value) => {
          resolve(value as LuaAnswer<M>);
        },
        reject,
      });
      this.wake();
    });
  }

  /**
   * Send a Lua notification in the round trip of the next batch, after its edits: queued in the
   * same turn as an edit, it reaches Neovim with that edit (Lua runs it right after the edits,
   * before Neovim redraws). Resolves with whether it went: when the batch is held back (an edit
   * is retried, or the batch failed) or an edit of it was not applied (a conflict, an error),
   * the notice is dropped and resolves false, and the caller sends it the usual way once its
   * edit is in.
   */
  noticeAfterWrites<M extends LuaNotification>(method: M, params: LuaParams<M>): Promise<boolean> {
    trace(`wire:ride ${wireLabel(method, params)}`);
    return new Promise<boolean>((resolve) => {
      this.afterCalls.push({
        method,
        params,
        // Lua's answer (a notice has none: `null`), or `false` when the batch was held back.
        resolve: (value) => {
          resolve(value !== false);
        },
        // It went; Lua logged its error.
        reject: () => {
          resolve(true);
        },
        notice: true,
      });
      this.wake();
    });
  }

  /**
   * Send what is queued now instead of on the next tick, unless a batch is in flight or a wait is
   * owed (a frame while something streams, or a retry). For a caller about to keep the event loop
   * busy for a while (a request being serialised), so that Neovim works on the edits meanwhile.
   */
  sendNow(): void {
    if (this.inFlight || this.streaming() || this.retryDelay > 0) return;
    if (this.timer !== undefined) {
      this.timer.cancel();
      this.timer = undefined;
    }
    void this.send();
  }

  /** @internal Called when a writer has new work. */
  wake(): void {
    if (this.inFlight) return;
    if (this.timer !== undefined) {
      // A frame wait is only owed while something streams: once the last stream closed, what is
      // queued goes at once.
      if (!this.pacing || this.streaming() || this.retryDelay > 0) return;
      this.timer.cancel();
      this.timer = undefined;
    }
    // Frames pace the batches while a reply streams; other edits (placeholders, tool results)
    // go out on the next tick, so a tool loop does not wait a frame per step.
    const frame = this.streaming() ? this.lastSentAt + this.frameMs - this.clock.now() : 0;
    const wait = Math.max(this.retryDelay, frame, 0);
    this.pacing = frame > 0;
    // NOTE: even with no wait, defer to a timer so edits queued in the same tick share a batch.
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      void this.send();
    }, wait);
  }

  /** Whether the pending timer waits for a frame (not for a retry). */
  private pacing = false;

  private streaming(): boolean {
    for (const writer of this.writers.values()) if (writer.openStreams.size > 0) return true;
    return false;
  }

  private async send(): Promise<void> {
    const taken = new Map<BufferWriter, QueuedOp[]>();
    const batches: BufferBatch[] = [];
    for (const writer of this.writers.values()) {
      if (writer.pending === 0) continue;
      const ops = writer.take();
      taken.set(writer, ops);
      batches.push({ bufnr: writer.bufnr, tick: writer.tick, ops: ops.map((entry) => entry.op) });
    }
    const after = this.afterCalls.splice(0);
    if (batches.length === 0 && after.length === 0) return;
    this.inFlight = true;
    this.lastSentAt = this.clock.now();
    let results: BufferResult[];
    let afterResults: AfterResult[] | null = null;
    try {
      trace('write:send');
      const answer = await this.lua.call(
        'buffer.apply_batch',
        after.length === 0
          ? batches
          : {
              batches,
              after: after.map((call): AfterCallWire =>
                call.notice === true
                  ? [call.method, call.params, true]
                  : [call.method, call.params],
              ),
            },
      );
      if (Array.isArray(answer)) {
        results = answer;
      } else {
        results = answer.results;
        afterResults = Array.isArray(answer.after) ? answer.after : null;
      }
      trace('write:applied');
    } catch (error) {
      this.logger.error('buffer write batch failed', error);
      results = batches.map(() => ({ status: 'retry', done: 0 }));
    }
    if (afterResults === null) {
      // Held back (an edit is retried, or the batch failed): calls go with the next batch,
      // notices are dropped (their senders send them once their edits are in).
      for (const call of after) if (call.notice === true) call.resolve(false);
      this.afterCalls = after.filter((call) => call.notice !== true).concat(this.afterCalls);
    } else {
      after.forEach((call, index) => {
        const result = afterResults[index];
        if (result?.held === true) call.resolve(false);
        else if (result?.ok === true) call.resolve(result.value ?? null);
        else call.reject(new Error(result?.error ?? `${call.method} gave no answer`));
      });
    }
    let retry = false;
    for (const [index, [writer, ops]] of [...taken.entries()].entries()) {
      const result = results[index] ?? { status: 'retry', done: 0 };
      if (result.status === 'retry') retry = true;
      if (result.status === 'error') {
        this.logger.error(`buffer ${String(writer.bufnr)}: edits refused: ${result.message ?? ''}`);
      }
      writer.settle(ops, result);
      if (writer.gone) this.writers.delete(writer.bufnr);
    }
    if (retry) {
      this.retryDelay = Math.min(Math.max(this.retryDelay * 2, this.frameMs), this.maxRetryMs);
    } else {
      this.retryDelay = 0;
    }
    this.inFlight = false;
    if (
      this.afterCalls.length > 0 ||
      [...this.writers.values()].some((writer) => writer.pending > 0)
    )
      this.wake();
  }
}
