// Keeps the parsed tree of every attached chat buffer current: its source streams line changes
// (Neovim through `nvim_buf_attach`, `neovimLines`; a chat held in a file through its adapter,
// src/files/), the store applies them, re-parses from the first changed message, and sends Lua
// what it shows (message markers, diagnostics) when that changed, at most once a frame.
import type { Buffer as NvimBuffer } from 'neovim/lib/api/Buffer.js';
import type { ChatDocument } from '../core/chat/ast.js';
import { parseLines, reparse } from '../core/chat/parser.js';
import { type Logger, silentLogger } from '../core/log.js';
import type { LuaBridge } from './lua.js';
import type { StructurePayload } from './protocol/wire.js';
import { trace } from './trace.js';

export type { StructurePayload } from './protocol/wire.js';

/** The part of the Neovim client that follows buffer changes. */
export interface BufferEventsPort {
  attachBuffer(
    buffer: NvimBuffer,
    eventName: string,
    callback: (...args: unknown[]) => void,
  ): unknown;
  detachBuffer(
    buffer: NvimBuffer,
    eventName: string,
    callback: (...args: unknown[]) => void,
  ): unknown;
  request(method: string, args: unknown[]): Promise<unknown>;
}

/** What a source tells the store of one followed buffer. */
export interface LineListener {
  /**
   * Rows [first, last) (0-based) now hold `data`, at changedtick `tick`; `last` -1: the whole
   * buffer (the first call after attaching).
   */
  lines(tick: number | null, first: number, last: number, data: string[]): void;
  /** The source stopped following the buffer by itself (Neovim's detach event). */
  detached(): void;
}

/** Where buffers' lines come from: Neovim, or the adapter of chats held in files. */
export interface LineSource {
  /** Start following `bufnr` (its whole text comes first); false: there is no such buffer. */
  attach(bufnr: number, listener: LineListener): Promise<boolean>;
  /** Stop following `bufnr`: the listener is not called again. */
  detach(bufnr: number): Promise<void>;
}

/** Neovim's buffers as a line source: `nvim_buf_attach` and its `lines` and `detach` events. */
export function neovimLines(nvim: BufferEventsPort): LineSource {
  /** Each followed buffer's callbacks on the client. */
  const followed = new Map<number, { lines: Callback; detach: Callback }>();
  /** Buffers whose `nvim_buf_detach` is not answered yet. */
  const detaching = new Map<number, Promise<void>>();
  const handleOf = (bufnr: number): NvimBuffer => ({ data: bufnr }) as unknown as NvimBuffer;
  const unfollow = (bufnr: number): void => {
    const callbacks = followed.get(bufnr);
    if (callbacks === undefined) return;
    followed.delete(bufnr);
    nvim.detachBuffer(handleOf(bufnr), 'lines', callbacks.lines);
    nvim.detachBuffer(handleOf(bufnr), 'detach', callbacks.detach);
  };
  return {
    async attach(bufnr, listener) {
      // Neovim answers our `nvim_buf_detach` after its detach event, and the client applies that
      // event to whatever follows the buffer then (it drops every listener of the buffer): a new
      // attachment made before the answer would be ended by the old one's event, its lines lost.
      const pending = detaching.get(bufnr);
      if (pending !== undefined) await pending;
      unfollow(bufnr);
      const callbacks = {
        /** `nvim_buf_lines_event`: [buffer, changedtick, firstline, lastline, linedata, more]. */
        lines: (...args: unknown[]) => {
          listener.lines(
            args[1] as number | null,
            args[2] as number,
            args[3] as number,
            args[4] as string[],
          );
        },
        detach: () => {
          // Only this attachment's end ends it.
          if (followed.get(bufnr) !== callbacks) return;
          unfollow(bufnr);
          listener.detached();
        },
      };
      followed.set(bufnr, callbacks);
      // NOTE: the client routes `nvim_buf_lines_event` by buffer number only.
      nvim.attachBuffer(handleOf(bufnr), 'lines', callbacks.lines);
      nvim.attachBuffer(handleOf(bufnr), 'detach', callbacks.detach);
      trace('doc:attach');
      const attached = (await nvim.request('nvim_buf_attach', [bufnr, true, {}])) as boolean;
      if (!attached && followed.get(bufnr) === callbacks) unfollow(bufnr);
      return attached;
    },
    async detach(bufnr) {
      unfollow(bufnr);
      const done = nvim.request('nvim_buf_detach', [bufnr]).then(
        () => undefined,
        () => undefined, // The buffer is gone already.
      );
      detaching.set(bufnr, done);
      await done;
      if (detaching.get(bufnr) === done) detaching.delete(bufnr);
    },
  };
}

type Callback = (...args: unknown[]) => void;

export interface DocumentState {
  bufnr: number;
  lines: string[];
  tick: number;
  document: ChatDocument;
}

interface Entry {
  state: DocumentState | undefined;
  /** 1-based first line changed since the last parse (Infinity: none). */
  dirtyFrom: number;
  parseTimer: ReturnType<typeof setImmediate> | undefined;
  published: string | undefined;
  /** A publish is scheduled. */
  publishTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the structure last went out (performance.now()). */
  publishedAt: number;
  waiters: (() => void)[];
}

const BUILTIN_LANGUAGES = ['lua', 'json', 'yaml', 'yml'];

/** How long a busy buffer's structure may wait before it goes out anyway. */
const PUBLISH_MAX_WAIT_MS = 500;

export interface DocumentStoreOptions {
  logger?: Logger;
  /** Wait before publishing, so that a burst of edits leads to one update. */
  publishDelayMs?: number;
}

export class DocumentStore {
  private readonly entries = new Map<number, Entry>();
  private readonly logger: Logger;
  private readonly publishDelayMs: number;
  private readonly listeners: ((state: DocumentState) => void)[] = [];

  constructor(
    private readonly source: LineSource,
    private readonly lua: LuaBridge,
    options: DocumentStoreOptions = {},
  ) {
    this.logger = options.logger ?? silentLogger;
    this.publishDelayMs = options.publishDelayMs ?? 16;
  }

  /** Start following a buffer (again, after a reload); resolves with its current tree. */
  async attach(bufnr: number): Promise<DocumentState | undefined> {
    const existing = this.entries.get(bufnr);
    // NOTE: changes received but not parsed yet (a burst is parsed on the next tick) must be in
    // the tree a caller gets: a send right after typing reads what was typed.
    if (existing?.state !== undefined) return this.parsed(bufnr);
    if (existing === undefined) {
      const entry = this.follower(bufnr);
      const attached = await this.source.attach(bufnr, {
        lines: (tick, first, last, data) => {
          if (this.entries.get(bufnr) === entry)
            this.onLines(bufnr, entry, tick, first, last, data);
        },
        detached: () => {
          // Only this attachment's end ends this entry.
          if (this.entries.get(bufnr) === entry) this.forget(bufnr);
        },
      });
      if (!attached) {
        if (this.entries.get(bufnr) === entry) this.forget(bufnr);
        return undefined;
      }
    }
    return this.parsed(bufnr);
  }

  /** A new entry for a buffer; its source is asked by the caller. */
  private follower(bufnr: number): Entry {
    const entry: Entry = {
      state: undefined,
      dirtyFrom: Infinity,
      parseTimer: undefined,
      published: undefined,
      publishTimer: undefined,
      publishedAt: 0,
      waiters: [],
    };
    this.entries.set(bufnr, entry);
    return entry;
  }

  /** Stop following a buffer. */
  async detach(bufnr: number): Promise<void> {
    if (!this.entries.has(bufnr)) return;
    this.forget(bufnr);
    await this.source.detach(bufnr);
  }

  get(bufnr: number): DocumentState | undefined {
    return this.entries.get(bufnr)?.state;
  }

  /** Frontmatter languages with a reader: Lua, JSON and YAML, and those registered from Lua. */
  private parseOptions: { frontmatterLanguages: ReadonlySet<string> } = {
    frontmatterLanguages: new Set(BUILTIN_LANGUAGES),
  };

  /** Set the languages registered from Lua; every followed buffer is read again. */
  setFrontmatterLanguages(names: readonly string[]): void {
    this.parseOptions = {
      frontmatterLanguages: new Set([...BUILTIN_LANGUAGES, ...names.map((n) => n.toLowerCase())]),
    };
    for (const entry of this.entries.values()) {
      const state = entry.state;
      if (state === undefined) continue;
      state.document = parseLines(state.lines, this.parseOptions);
      this.afterParse(entry);
    }
  }

  /** Called after every parse. */
  onParsed(listener: (state: DocumentState) => void): void {
    this.listeners.push(listener);
  }

  /** The latest parsed state of every followed buffer. */
  all(): DocumentState[] {
    const out: DocumentState[] = [];
    for (const entry of this.entries.values()) if (entry.state !== undefined) out.push(entry.state);
    return out;
  }

  /** The buffer's state once every change received so far has been parsed. */
  parsed(bufnr: number): Promise<DocumentState | undefined> {
    const entry = this.entries.get(bufnr);
    if (entry === undefined) return Promise.resolve(undefined);
    if (entry.state !== undefined && entry.dirtyFrom === Infinity)
      return Promise.resolve(entry.state);
    return new Promise((resolve) => {
      entry.waiters.push(() => {
        resolve(this.entries.get(bufnr)?.state);
      });
    });
  }

  /**
   * The parsed state once it includes changedtick `tick` (our own write's tick, which Neovim
   * reports in the write's answer; the matching lines event may still be on its way). Gives up
   * after `timeoutMs` and returns the latest state.
   */
  async parsedAt(
    bufnr: number,
    tick: number | null,
    timeoutMs = 1000,
  ): Promise<DocumentState | undefined> {
    const deadline = Date.now() + timeoutMs;
    let state = await this.parsed(bufnr);
    while (state !== undefined && tick !== null && state.tick < tick && Date.now() < deadline) {
      const entry = this.entries.get(bufnr);
      if (entry === undefined) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5);
        entry.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      state = await this.parsed(bufnr);
    }
    return state;
  }

  private forget(bufnr: number): void {
    const entry = this.entries.get(bufnr);
    if (entry === undefined) return;
    if (entry.parseTimer !== undefined) clearImmediate(entry.parseTimer);
    if (entry.publishTimer !== undefined) clearTimeout(entry.publishTimer);
    this.entries.delete(bufnr);
    for (const waiter of entry.waiters) waiter();
  }

  /** Rows [first, last) now hold `data` (`last` -1: the whole buffer). */
  private onLines(
    bufnr: number,
    entry: Entry,
    tick: number | null,
    first: number,
    last: number,
    data: string[],
  ): void {
    if (entry.state === undefined || last === -1) {
      // The whole buffer (the first event after attaching).
      trace('doc:lines');
      entry.state = {
        bufnr,
        lines: [...data],
        tick: tick ?? 0,
        document: parseLines(data, this.parseOptions),
      };
      entry.dirtyFrom = Infinity;
      trace('doc:parsed');
      this.afterParse(entry);
      return;
    }
    entry.state.lines.splice(first, last - first, ...data);
    if (tick !== null) entry.state.tick = tick;
    entry.dirtyFrom = Math.min(entry.dirtyFrom, first + 1);
    // Parse once per burst of events (a paste or a streamed batch arrives as several events, read
    // in the same turn of the event loop); `setImmediate`, not a timer, which costs a millisecond.
    entry.parseTimer ??= setImmediate(() => {
      entry.parseTimer = undefined;
      this.parse(entry);
    });
  }

  private parse(entry: Entry): void {
    const state = entry.state;
    if (state === undefined || entry.dirtyFrom === Infinity) return;
    try {
      state.document = reparse(state.document, state.lines, entry.dirtyFrom, this.parseOptions);
    } catch (error) {
      // The parser does not throw; if it ever does, a full parse is the safe fallback.
      this.logger.error(`reparse of buffer ${String(state.bufnr)} failed`, error);
      state.document = parseLines(state.lines, this.parseOptions);
    }
    entry.dirtyFrom = Infinity;
    this.afterParse(entry);
  }

  private afterParse(entry: Entry): void {
    const state = entry.state;
    if (state === undefined) return;
    for (const listener of this.listeners) listener(state);
    const waiters = entry.waiters;
    entry.waiters = [];
    for (const waiter of waiters) waiter();
    // The first structure of a buffer goes out at once; later ones wait a little, so that a
    // burst of edits leads to one update.
    this.schedulePublish(entry, entry.published === undefined ? 0 : this.publishDelayMs);
  }

  /** Says whether a buffer is busy (a request or tools run for it, or autopilot is on). */
  private busy: (bufnr: number) => boolean = () => false;

  setBusy(predicate: (bufnr: number) => boolean): void {
    this.busy = predicate;
  }

  private schedulePublish(entry: Entry, delayMs: number): void {
    if (entry.publishTimer !== undefined) return;
    entry.publishTimer = setTimeout(() => {
      entry.publishTimer = undefined;
      this.publish(entry);
    }, delayMs);
  }

  private publish(entry: Entry): void {
    const state = entry.state;
    if (state === undefined || !this.entries.has(state.bufnr)) return;
    // While the buffer is busy every round trip to Neovim is on someone's critical path (a tool
    // loop step, a send); the marks and diagnostics can wait for a quiet moment, or at most
    // PUBLISH_MAX_WAIT_MS.
    if (
      entry.published !== undefined &&
      this.busy(state.bufnr) &&
      performance.now() - entry.publishedAt < PUBLISH_MAX_WAIT_MS
    ) {
      this.schedulePublish(entry, this.publishDelayMs);
      return;
    }
    const payload = structureOf(state);
    const key = JSON.stringify([payload.markers, payload.diagnostics]);
    if (key === entry.published) return;
    entry.published = key;
    entry.publishedAt = performance.now();
    trace('doc:publish');
    this.lua.call('chat.structure', payload).then(
      () => {
        trace('doc:published');
      },
      (error: unknown) => {
        entry.published = undefined;
        this.logger.warn(`publishing the structure of buffer ${String(state.bufnr)} failed`, error);
      },
    );
  }
}

/** Message markers and diagnostics of a parsed buffer, in Neovim's 0-based rows. */
export function structureOf(state: DocumentState): StructurePayload {
  return {
    bufnr: state.bufnr,
    tick: state.tick,
    markers: state.document.messages.map((message) => ({
      row: message.span.startLine - 1,
      role: message.role,
      end_row: message.span.endLine - 1,
    })),
    diagnostics: state.document.diagnostics.map((diagnostic) => ({
      lnum: diagnostic.span.startLine - 1,
      end_lnum: diagnostic.span.endLine - 1,
      severity: diagnostic.severity,
      code: diagnostic.code,
      message: diagnostic.message,
    })),
  };
}
