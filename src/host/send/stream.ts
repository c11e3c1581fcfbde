// Streaming a reply into a chat buffer (docs/chat-format.md §12, docs/ui.md "While Flemma writes"): the `@Assistant:` marker and the
// lock, the request's events written as they come (batched per frame), progress, retries of a
// request that failed before any content, a credential resolved again after a 401, cancel, and
// errors that leave the buffer as it was (or keep what arrived, marked as interrupted).
import { randomBytes } from 'node:crypto';
import type { Message } from '../../core/chat/ast.js';
import { type ReplyEdit, ReplyLayout, openingLines } from '../../core/chat/reply.js';
import {
  type ProviderAdapter,
  ProviderError,
  type ProviderEvent,
} from '../../core/provider/types.js';
import { XmlToolExtractor, extractXmlToolCalls } from '../../core/tools/xml.js';
import { ProgressThrottle, withRetries } from '../../core/provider/retry.js';
import type { HostBase } from '../base.js';
import type { BufferSettings } from '../buffer-settings.js';
import type { ToolCatalogue } from '../tools/catalogue.js';
import type { Verdicts } from '../tools/verdicts.js';
import { trace } from '../../editor/trace.js';
import type { BufferWriter } from '../../editor/writequeue.js';
import type { SendOptions, UsageTracker } from '../usage.js';
import { toolLoopWarmup } from '../warmup.js';
import type { Config } from '../../core/config/config.js';
import type { LuaParams } from '../../editor/protocol/index.js';
import type { PreparedRequest, RequestBuilder } from './request.js';
import { type RecoveryService, type ReplyRecord, recoveryDir } from '../recovery.js';
import type { ContextMeter } from '../meter.js';

/**
 * One edit of a reply to its buffer and its record: text appended at the stream's end, a
 * thinking block inserted where it happened, or a block of the client's own rewritten (the
 * buffer is locked while the reply streams: its rows under the marker are the reply's own).
 */
function putEdit(
  reply: Pick<Reply, 'writer' | 'stream' | 'markerRow' | 'layout' | 'record'>,
  edit: ReplyEdit,
): void {
  const { writer, layout, record } = reply;
  if (typeof edit !== 'string') {
    const row = reply.markerRow + edit.row;
    const replaced = edit.replaced ?? [];
    void writer.setLines(row, row + replaced.length, edit.lines, edit.replaced ?? null);
    record?.insert(edit.at, edit.text, layout.text, layout.owed, edit.removed);
    return;
  }
  if (edit !== '') writer.append(edit, reply.stream);
  record?.append(edit, layout.text, layout.owed);
}

/** What the progress indicator shows (`progress.update`). */
type Progress = LuaParams<'progress.update'>;

export type SendStatus = 'completed' | 'cancelled' | 'errored';

/**
 * Turns a request's events into sink lines (JSON). Consecutive text deltas share one line (up to
 * 4 KiB): a reply of 20,000 deltas would otherwise cost the editor 20,000 lines.
 */
export class SinkTap {
  private text = '';

  constructor(private readonly write: (line: string) => void) {}

  push(event: ProviderEvent): void {
    if (event.type === 'text') {
      this.text += event.text;
      if (this.text.length >= 4096) this.flush();
      return;
    }
    this.flush();
    this.write(JSON.stringify(event));
  }

  flush(): void {
    if (this.text === '') return;
    this.write(JSON.stringify({ type: 'text', text: this.text }));
    this.text = '';
  }
}

/**
 * Starts a stream now (its first `next()` issues the request) and hands it over as an iterable
 * to be consumed later. A failure before it is consumed is kept for the consumer, not reported
 * as unhandled.
 */
function primed<T>(source: AsyncIterable<T>): AsyncIterable<T> {
  const iterator = source[Symbol.asyncIterator]();
  const head = iterator.next();
  head.catch(() => undefined);
  let used = false;
  return {
    [Symbol.asyncIterator]: (): AsyncIterator<T> => ({
      next: () => {
        if (used) return iterator.next();
        used = true;
        return head;
      },
      return: async (value?: unknown): Promise<IteratorResult<T>> =>
        iterator.return === undefined ? { done: true, value: value as T } : iterator.return(value),
    }),
  };
}

export interface StreamDeps {
  base: Pick<
    HostBase,
    | 'documents'
    | 'logger'
    | 'lua'
    | 'notify'
    | 'writes'
    | 'validator'
    | 'sandboxBackends'
    | 'probes'
  >;
  requests: Pick<RequestBuilder, 'prepare' | 'sent'>;
  usage: Pick<UsageTracker, 'allows' | 'begin'>;
  /** The context meter: the warning when a request nears its model's window. */
  meter: Pick<ContextMeter, 'beforeSend'>;
  catalogue: Pick<ToolCatalogue, 'isReady' | 'whenReady' | 'registry' | 'fromWire' | 'toolNames'>;
  verdicts: Pick<Verdicts, 'markInvalidInput'>;
  /** Each message's part of the trust digest, across parses. */
  memo: WeakMap<Message, string>;
  /** A reply's first event arrived (the request is out; work it would have delayed may start). */
  replyStarted?(bufnr: number): void;
  /** Keeps a streaming reply on disk (`context.recovery`). */
  recovery?: Pick<RecoveryService, 'begin' | 'end'>;
}

/** A reply on its way into a chat buffer: where it goes, what keeps it, where it started. */
interface Reply {
  bufnr: number;
  writer: BufferWriter;
  /** The writer's stream of the reply. */
  stream: string;
  /** The chat's last row and its line, as the send found them (the opening replaced it). */
  lastRow: number;
  lastLine: string;
  /** The row of the `@Assistant:` marker. */
  markerRow: number;
  record: ReplyRecord | undefined;
  layout: ReplyLayout;
  /** The hidden buffer the request's events go to, as JSON lines. */
  sink: number;
  sinkWriter: BufferWriter;
  sinkTap: SinkTap;
  /**
   * A piece of the reply to the buffer and, when the chat has a record, to that too: appended,
   * or a thinking block inserted where it happened (`ReplyLayout.push`).
   */
  put: (edit: ReplyEdit) => void;
  /** An event of the reply as it arrives: the warm-up, the sink, the usage meter. */
  observe: (event: ProviderEvent) => void;
}

export class Streamer {
  constructor(private readonly deps: StreamDeps) {}

  /** Build the request, stream the reply into the buffer; the status, or undefined when nothing went. */
  async run(
    bufnr: number,
    controller: AbortController,
    context: BufferSettings | undefined,
    onConfig: (config: Config) => void,
    options: SendOptions,
  ): Promise<SendStatus | undefined> {
    const ctx = this.deps.base;
    if (!this.deps.catalogue.isReady()) {
      ctx.notify.info('Waiting for tool definitions to load...');
      if (!(await this.deps.catalogue.whenReady(controller.signal))) {
        ctx.notify.info('Cancelled queued send.');
        return 'cancelled';
      }
    }
    trace('send:run');
    const prepared = await this.deps.requests.prepare(bufnr, context, onConfig);
    if (prepared === undefined) return undefined;
    if (controller.signal.aborted) return 'cancelled';
    // The spend cap: past it, nothing goes out without the user's yes.
    if (!this.deps.usage.allows(bufnr, prepared.config, options)) return undefined;
    this.deps.requests.sent(bufnr, prepared);
    return this.stream(bufnr, prepared, controller);
  }
  /**
   * The record that keeps the reply on disk while it streams: with `context.recovery`, for a chat
   * that has a file, when Neovim said where its state directory is.
   */
  private record(
    bufnr: number,
    prepared: PreparedRequest,
    opening: string[],
  ): ReplyRecord | undefined {
    const { facts } = prepared.editor;
    const state = facts.editor_dirs?.state;
    const recovery = this.deps.recovery;
    if (recovery === undefined || !prepared.config.context.recovery) return undefined;
    if (facts.filename === null || state === undefined || state === '') return undefined;
    const writes = this.deps.base.writes;
    return recovery.begin({
      bufnr,
      dir: recoveryDir(state),
      path: facts.filename,
      // A copy: the document's lines follow the buffer.
      lines: prepared.state.lines.slice(),
      openingTail: opening.slice(1),
      // With `editing.auto_write`, the file itself: once what is queued so far is in the buffer.
      ...(prepared.config.autoWrite
        ? {
            writeFile: () => {
              writes
                .callAfterWrites('buffer.write', { bufnr, streaming: true })
                .catch(() => undefined);
            },
          }
        : {}),
    });
  }
  /** A reply's events; in XML tool calling, with the XML tool blocks turned into tool uses. */
  private events(
    prepared: PreparedRequest,
    adapter: ProviderAdapter,
    signal: AbortSignal,
  ): AsyncIterable<ProviderEvent> {
    const events = adapter.stream(prepared.request, signal, prepared.wire);
    if (prepared.xml === undefined) return events;
    const registry = this.deps.catalogue.registry;
    const extractor = new XmlToolExtractor(
      prepared.xml,
      (name) => registry.get(name)?.inputSchema,
      () => `xml_${randomBytes(6).toString('hex')}`,
    );
    return extractXmlToolCalls(events, extractor);
  }
  /** One attempt: stream the reply's events into the buffer. */
  private async consume(
    bufnr: number,
    events: AsyncIterable<ProviderEvent>,
    layout: ReplyLayout,
    put: (edit: ReplyEdit) => void,
    tap: (event: ProviderEvent) => void,
  ): Promise<void> {
    const ctx = this.deps.base;
    let characters = 0;
    let seen = 0;
    const progress = new ProgressThrottle<Progress>((params) => {
      ctx.lua.notify('progress.update', params);
    });
    try {
      for await (const raw of events) {
        if (seen++ === 0) trace('send:first-event');
        // The buffer shows a tool's own name, not the provider-safe one.
        const event = fromApiNames(raw, (name) => this.deps.catalogue.fromWire(name));
        tap(event);
        if (event.type === 'tool_use' && event.invalid !== undefined) {
          this.deps.verdicts.markInvalidInput(event.id, event.name, event.invalid);
        }
        // Called with '' too: text held back still counts for the recovery record.
        put(layout.push(event));
        if (event.type === 'warning') ctx.notify.warn(event.message);
        if (event.type === 'text') characters += event.text.length;
        progress.push(progressOf(bufnr, event, characters));
      }
    } finally {
      progress.close();
    }
  }
  /** Stream the reply into the buffer: open it, receive it (with retries), end it. */
  private async stream(
    bufnr: number,
    prepared: PreparedRequest,
    controller: AbortController,
  ): Promise<SendStatus> {
    const { reply, first } = await this.open(bufnr, prepared, controller);
    const status = await this.receive(reply, prepared, controller, first);
    await this.end(reply, status);
    await this.finish(reply);
    return status;
  }
  /**
   * The start of a reply: the buffer locked, the `@Assistant:` marker, the request issued, the
   * warm-up of the tool loop; the reply once the editor's side of the start is in.
   */
  private async open(
    bufnr: number,
    prepared: PreparedRequest,
    controller: AbortController,
  ): Promise<{ reply: Reply; first: AsyncIterable<ProviderEvent> }> {
    const lines = prepared.state.lines;
    const ctx = this.deps.base;
    const writer = ctx.writes.buffer(bufnr);
    const stream = `reply-${String(Date.now())}`;
    const lastRow = lines.length - 1;
    const lastLine = lines[lastRow] ?? '';
    const opening = openingLines(lastLine);
    const meter = this.deps.usage.begin(bufnr, prepared);
    const markerRow = lastRow + opening.length - 1;
    // Made before the opening is written: the record's base is the chat as the send found it.
    const record = this.record(bufnr, prepared, opening);
    // The editor's side of the start goes out first, as one message, so that Neovim works on it
    // while the SDK serialises and sends the request (a long chat's JSON keeps the event loop
    // busy for a while): the buffer locked (a notification, ahead of the write), the
    // `@Assistant:` marker, then `send.begin` after it in the same round trip (progress on the
    // marker's row; the request's stream, event by event as JSON lines, in a hidden buffer
    // users can watch; then `request:sending`).
    ctx.lua.notify('buffer.lock', { bufnr, owner: 'request' });
    const opened = writer.setLines(lastRow, lastRow + 1, opening, [lastLine]);
    const begun = ctx.writes.callAfterWrites('send.begin', {
      bufnr,
      row: markerRow,
      from: lastRow,
      sink_name: `request/${String(bufnr)}`,
    });
    ctx.writes.sendNow();
    trace('send:http');
    const { first, warm } = this.issue(bufnr, prepared, controller);
    let sink: { bufnr: number };
    try {
      sink = await begun;
      await opened;
    } catch (error) {
      controller.abort();
      throw error;
    }
    const sinkWriter = ctx.writes.buffer(sink.bufnr);
    const sinkTap = new SinkTap((line) => {
      sinkWriter.append(line + '\n');
    });
    const layout = new ReplyLayout();
    let replying = false;
    const reply: Reply = {
      bufnr,
      writer,
      stream,
      lastRow,
      lastLine,
      markerRow,
      record,
      layout,
      sink: sink.bufnr,
      sinkWriter,
      sinkTap,
      put: (edit) => {
        putEdit({ writer, stream, markerRow, layout, record }, edit);
      },
      observe: (event) => {
        if (!replying) {
          replying = true;
          this.deps.replyStarted?.(bufnr);
        }
        warm(event);
        sinkTap.push(event);
        meter.observe(event);
      },
    };
    return { reply, first };
  }
  /**
   * The request issued (its first attempt, consumed later) and the warm-up of the tool loop that
   * follows the reply's events.
   */
  private issue(
    bufnr: number,
    prepared: PreparedRequest,
    controller: AbortController,
  ): { first: AsyncIterable<ProviderEvent>; warm: (event: ProviderEvent) => void } {
    const first = primed(this.events(prepared, prepared.adapter, controller.signal));
    // The request exactly as it is handed to the adapter, whatever its building left out; once
    // the request is on its way (the estimate reads the whole chat again, ~1 ms a megabyte).
    setImmediate(() => {
      this.deps.meter.beforeSend(bufnr, prepared);
    });
    // Once the reply streams, what a first tool call needs gets ready (src/host/warmup.ts).
    const warm = toolLoopWarmup(
      {
        tools: prepared.offered.flatMap((name) => this.deps.catalogue.registry.get(name) ?? []),
        sandbox: prepared.config.sandbox,
        sandboxOverride: prepared.editor.facts.sandbox_override,
      },
      this.deps.base,
    );
    return { first, warm };
  }
  /**
   * The reply's events into the buffer, the request tried again while nothing arrived (a
   * credential resolved again after a 401); how it went. A failure keeps what arrived, marked
   * as interrupted.
   */
  private async receive(
    reply: Reply,
    prepared: PreparedRequest,
    controller: AbortController,
    first: AsyncIterable<ProviderEvent>,
  ): Promise<SendStatus> {
    const ctx = this.deps.base;
    const { bufnr, layout, put } = reply;
    let status: SendStatus = 'completed';
    try {
      let pending: AsyncIterable<ProviderEvent> | undefined = first;
      const attempt = async (adapter: ProviderAdapter): Promise<void> => {
        const events = pending ?? this.events(prepared, adapter, controller.signal);
        pending = undefined;
        await this.consume(bufnr, events, layout, put, reply.observe);
        trace('send:streamed');
      };
      const { signal } = controller;
      const hasContent = (): boolean => layout.hasContent;
      await withRetries(
        { adapter: prepared.adapter, signal, attempt, hasContent },
        {
          reauthorize: () => prepared.reauthorize(),
          reauthorized: () => {
            ctx.logger.info('the provider refused the credential; trying a newly resolved one');
          },
          retrying: (next, wait, error) => {
            ctx.logger.info(`retrying after ${String(wait)} ms: ${String(error)}`);
            ctx.lua.notify('progress.update', { bufnr, phase: 'retrying', attempt: next });
          },
        },
      );
      if (controller.signal.aborted) {
        status = 'cancelled';
        put(layout.interrupt());
      }
    } catch (error) {
      status = controller.signal.aborted ? 'cancelled' : 'errored';
      if (status === 'errored') {
        const message = error instanceof ProviderError ? error.describe() : String(error);
        ctx.logger.warn(`send failed: ${message}`);
        ctx.notify.error(message);
        // What arrived before the failure stays, marked as an interrupted reply.
        put(layout.interrupt(`Response interrupted: ${message}`));
      } else {
        put(layout.interrupt());
      }
    }
    return status;
  }
  /** The reply's end in the buffer; a send that got nothing leaves the buffer as it was. */
  private async end(reply: Reply, status: SendStatus): Promise<void> {
    const { bufnr, writer, layout, lastRow, lastLine, markerRow: row } = reply;
    if (layout.hasContent) {
      reply.put(layout.close());
    } else if (status !== 'completed') {
      // Nothing arrived: leave the buffer as it was before the send.
      await writer.flushed();
      const current = await this.deps.base.documents.parsed(bufnr);
      if (current?.lines[row] === '@Assistant:') {
        await writer.setLines(lastRow, row + 1, [lastLine], current.lines.slice(lastRow, row + 1));
      }
    } else {
      this.deps.base.notify.warn('Request completed but no response was received.');
      writer.append(layout.close(), reply.stream);
    }
  }
  /** The streams closed, the record ended, and the editor's side of the end (`send.finish`). */
  private async finish(reply: Reply): Promise<void> {
    const ctx = this.deps.base;
    const { bufnr, record, sink } = reply;
    reply.writer.closeStream(reply.stream);
    if (record !== undefined) this.deps.recovery?.end(bufnr, record);
    reply.sinkTap.flush();
    // An open stream keeps every write paced by frames.
    reply.sinkWriter.closeStream();
    trace('send:closing');
    // The editor's side of the end runs once the last text is in, in the same round trip; the
    // next step starts from the settings the host holds (src/host/editor-state.ts).
    const finishing = ctx.writes.callAfterWrites('send.finish', { bufnr, sink });
    // The next step (the tool loop's) waits for it: it goes now, not on the next tick.
    ctx.writes.sendNow();
    await finishing;
    ctx.writes.forget(sink);
  }
}

/** What the indicator shows after `event`: its phase and the characters of text so far. */
function progressOf(bufnr: number, event: ProviderEvent, characters: number): Progress {
  if (event.type !== 'progress') return { bufnr, phase: 'streaming', characters };
  const params: Progress = { bufnr, phase: event.phase, characters: event.characters };
  if (event.toolName !== undefined) params.tool = event.toolName;
  return params;
}

/** A reply's event with tool names as the buffer shows them. */
function fromApiNames(event: ProviderEvent, canonical: (name: string) => string): ProviderEvent {
  if (event.type === 'tool_use') return { ...event, name: canonical(event.name) };
  if (event.type === 'progress' && event.toolName !== undefined) {
    return { ...event, toolName: canonical(event.toolName) };
  }
  return event;
}
