// The editor of chats held in files: what Neovim's Lua side does for a buffer, done for a file.
// Each chat has a virtual bufnr (`FILE_BUFNR_BASE` and up) and its lines (`FileLines`); the router
// (`./router.ts`) brings it the host → Lua methods of those bufnrs: the write batches (applied, and
// the file written whole after each, `./atomic.ts`), the lock, the send's start and end, the
// settings (`editor.context`, answered here from the base configuration, the creator's layer and
// trust, and the file's frontmatter), and what a buffer would only show (progress, spinners,
// markers), which the chat's observer hears. The document store follows the chats' lines through
// this adapter's `LineSource`.
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { ConfigData } from '../core/config/config.js';
import type { LineListener, LineSource } from '../editor/documents.js';
import type { LuaAnswer, LuaParams, HostToLuaMethod } from '../editor/protocol/index.js';
import type {
  BufferBatch,
  BufferResult,
  ContextAnswer,
  ContextParams,
  EditorFacts,
  FrontmatterAnswer,
  FrontmatterRequest,
  TrustState,
} from '../editor/protocol/wire.js';
import { writeAtomic, writeAtomicSync } from './atomic.js';
import { FILE_BUFNR_BASE, type ConfigLayer, type FileChat, type OpenOptions } from './api.js';
import { FileLines, joinLines, splitText } from './lines.js';
import { placeholderStatuses } from './settings.js';

/** What the adapter asks of the host it serves. */
export interface FileSettingsPort {
  /** The base configuration (Lua's snapshot in Neovim; the CLI's own without it). */
  baseConfig(): Promise<ConfigData>;
  /** Evaluate a Lua or custom-language frontmatter, or check JSON/YAML operations. */
  evaluate(
    chat: FileChat,
    request: FrontmatterRequest,
    trust: TrustState,
  ): Promise<FrontmatterAnswer>;
  /** A parent chat's environment and editor facts, when the host holds them. */
  inherited(bufnr: number): { env: Record<string, string>; facts: EditorFacts } | undefined;
  /** The environment a chat with no parent reads. */
  env: Readonly<Record<string, string | undefined>>;
  /** Tell Neovim the file was written (`files.changed`); absent with no Neovim. */
  changed?(path: string, running: boolean): void;
  /** A write of the file failed (the run goes on; the next write tries again). */
  failed(path: string, error: unknown): void;
}

/** What a chat's runner hears: every method the host sent for the chat, and its writes. */
export interface ChatObserver {
  method(method: HostToLuaMethod, params: unknown): void;
  /** Text appended to the chat (a reply as it streams). */
  appended(text: string): void;
  written(): void;
  /** A warning or an error for the user (it may be this chat's: the last one is kept). */
  noticed(message: string): void;
}

/** One chat held in a file. */
class Entry implements FileChat {
  readonly text: FileLines;
  listener: LineListener | undefined;
  observer: ChatObserver | undefined;
  /** The creator's trust decision; placeholders read from the file are not the user's. */
  trust: TrustState;
  layer: ConfigLayer;
  /** Options the runner sets over the layer (autopilot while it runs). */
  runLayer: ConfigLayer = [];
  running = false;
  private writing: Promise<void> | undefined;
  private dirty = false;

  constructor(
    readonly bufnr: number,
    readonly path: string,
    lines: string[],
    readonly options: OpenOptions,
    private readonly port: FileSettingsPort,
  ) {
    this.text = new FileLines(lines, (tick, first, last, data) => {
      this.listener?.lines(tick, first, last, data);
    });
    this.trust = trustOf(options.trust);
    this.layer = options.configLayer ?? [];
  }

  lines(): readonly string[] {
    return this.text.lines;
  }

  /** The file gets what the chat holds now (at most one write at a time; one more if needed). */
  save(): Promise<void> {
    this.dirty = true;
    this.writing ??= this.drain().finally(() => {
      this.writing = undefined;
    });
    return this.writing;
  }

  /** Resolves once the file holds everything applied so far. */
  async flushed(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
  }

  private async drain(): Promise<void> {
    while (this.dirty) {
      this.dirty = false;
      try {
        await writeAtomic(this.path, joinLines(this.text.lines));
        this.port.changed?.(this.path, this.running);
        this.observer?.written();
      } catch (error) {
        this.port.failed(this.path, error);
      }
    }
  }

  /** What has not reached the file yet, written now without yielding (the host is ending). */
  saveSync(): void {
    if (!this.dirty && this.writing === undefined) return;
    writeAtomicSync(this.path, joinLines(this.text.lines));
    this.dirty = false;
  }
}

function trustOf(trust: TrustState | boolean): TrustState {
  return typeof trust === 'boolean' ? { trusted: trust, why: 'given' } : { ...trust };
}

/** Methods a file chat's bufnr gets from this adapter rather than from Neovim. */
export const FILE_METHODS: ReadonlySet<HostToLuaMethod> = new Set<HostToLuaMethod>([
  'buffer.lock',
  'buffer.unlock',
  'buffer.write',
  'progress.start',
  'progress.update',
  'progress.stop',
  'editor.context',
  'send.begin',
  'send.finish',
  'sink.destroy',
  'chat.step_ended',
  'chat.structure',
  'tools.facts',
  'tools.spinner',
  'tools.cursor',
  'tools.output',
  'tools.previews',
  'trust.confirm',
  'trust.seen',
  'frontmatter.diagnostics',
  'attention.signal',
  'autopilot.watch',
  'autopilot.cancel',
  'usage.show',
  'usage.confirm',
]);

export class FileAdapter implements LineSource {
  private readonly chats = new Map<number, Entry>();
  private readonly sinks = new Set<number>();
  private next = FILE_BUFNR_BASE;

  constructor(private readonly port: FileSettingsPort) {}

  /** Serve the file at `path` (absolute) under a new bufnr. */
  async open(path: string, options: OpenOptions): Promise<FileChat> {
    let text = '';
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const entry = new Entry(this.next++, path, splitText(text), options, this.port);
    if (!entry.trust.trusted) entry.trust.placeholders = placeholderStatuses(entry.lines());
    this.chats.set(entry.bufnr, entry);
    if (text === '') await entry.save();
    return entry;
  }

  /** Whether `bufnr` is a chat (or a sink) this adapter serves. */
  serves(bufnr: number): boolean {
    return this.chats.has(bufnr) || this.sinks.has(bufnr);
  }

  chat(bufnr: number): Entry | undefined {
    return this.chats.get(bufnr);
  }

  all(): FileChat[] {
    return [...this.chats.values()];
  }

  /** The runner of a chat hears what happens to it; `running` marks the file as running. */
  observe(bufnr: number, observer: ChatObserver | undefined, runLayer: ConfigLayer = []): void {
    const entry = this.chats.get(bufnr);
    if (entry === undefined) return;
    entry.observer = observer;
    entry.running = observer !== undefined;
    entry.runLayer = runLayer;
    this.port.changed?.(entry.path, entry.running);
  }

  /** What Lua renders a chat's templates with: its file and its given trust. */
  templateFile(bufnr: number): { path: string; trusted: boolean } | undefined {
    const entry = this.chats.get(bufnr);
    return entry === undefined ? undefined : { path: entry.path, trusted: entry.trust.trusted };
  }

  /** A chat's hook or message, which goes on to Neovim: its runner hears it. */
  heard(bufnr: number, method: HostToLuaMethod, params: unknown): void {
    this.chats.get(bufnr)?.observer?.method(method, params);
  }

  /** A warning or an error for the user: every running chat's runner hears it. */
  noticed(message: string): void {
    for (const entry of this.chats.values()) entry.observer?.noticed(message);
  }

  /** Forget a chat (its file stays as written). */
  async close(bufnr: number): Promise<void> {
    const entry = this.chats.get(bufnr);
    if (entry === undefined) return;
    await entry.flushed();
    this.chats.delete(bufnr);
    entry.listener?.detached();
    entry.listener = undefined;
  }

  // LineSource: the document store follows the chats' lines.

  attach(bufnr: number, listener: LineListener): Promise<boolean> {
    const entry = this.chats.get(bufnr);
    if (entry === undefined) return Promise.resolve(false);
    entry.listener = listener;
    listener.lines(entry.text.tick, 0, -1, [...entry.lines()]);
    return Promise.resolve(true);
  }

  detach(bufnr: number): Promise<void> {
    const entry = this.chats.get(bufnr);
    if (entry !== undefined) entry.listener = undefined;
    return Promise.resolve();
  }

  /** `buffer.apply_batch` for this adapter's bufnrs: applied, and each changed file written. */
  applyBatch(batch: BufferBatch): BufferResult {
    if (this.sinks.has(batch.bufnr)) return { status: 'ok', done: batch.ops.length };
    const entry = this.chats.get(batch.bufnr);
    if (entry === undefined) return { status: 'gone', done: 0 };
    const before = entry.text.tick;
    const result = entry.text.apply(batch);
    for (const op of batch.ops) if (op.op === 'append') entry.observer?.appended(op.text);
    if (entry.text.tick !== before) void entry.save();
    return result;
  }

  /** Every file written whole now, without yielding (SIGTERM, Neovim gone). */
  flushSync(): void {
    for (const entry of this.chats.values()) {
      try {
        entry.saveSync();
      } catch (error) {
        this.port.failed(entry.path, error);
      }
    }
  }

  /** A method of `FILE_METHODS` for one of this adapter's bufnrs: its answer. */
  async answer<M extends HostToLuaMethod>(
    method: M,
    params: LuaParams<M>,
  ): Promise<LuaAnswer<M> | null> {
    const bufnr = (params as { bufnr: number }).bufnr;
    if (this.sinks.has(bufnr)) {
      if (method === 'sink.destroy') this.sinks.delete(bufnr);
      return true;
    }
    const entry = this.chats.get(bufnr);
    if (entry === undefined) throw new Error(`no file chat has bufnr ${String(bufnr)}`);
    entry.observer?.method(method, params);
    return (await this.handle(entry, method, params)) as LuaAnswer<M> | null;
  }

  private async handle(entry: Entry, method: HostToLuaMethod, params: unknown): Promise<unknown> {
    switch (method) {
      case 'editor.context':
        return this.context(entry, params as ContextParams);
      case 'tools.facts':
        return this.facts(entry);
      case 'send.begin': {
        const sink = this.next++;
        this.sinks.add(sink);
        return { bufnr: sink, name: `flemma://sink/request/${String(entry.bufnr)}` };
      }
      case 'send.finish':
        this.sinks.delete((params as { sink: number }).sink);
        return { unlocked: true };
      case 'buffer.write':
        await entry.save();
        return { written: true };
      case 'trust.confirm': {
        const placeholders = entry.trust.placeholders;
        if (placeholders !== undefined) {
          for (const id of (params as { ids: string[] }).ids)
            Reflect.deleteProperty(placeholders, id);
        }
        return null;
      }
      default:
        return method.startsWith('buffer.') || method.startsWith('progress.') ? true : null;
    }
  }

  private facts(entry: Entry): EditorFacts {
    const parent =
      entry.options.parent === undefined ? undefined : this.inherited(entry.options.parent);
    return {
      ...(parent?.facts ?? { sandbox_override: null }),
      cwd: parent?.facts.cwd ?? entry.options.cwd ?? process.cwd(),
      filename: entry.path,
    };
  }

  /** A parent's env and facts: a file chat's own, else what the host holds of a buffer. */
  private inherited(
    bufnr: number,
  ): { env: Record<string, string>; facts: EditorFacts } | undefined {
    const chat = this.chats.get(bufnr);
    if (chat === undefined) return this.port.inherited(bufnr);
    return { env: this.environment(chat, Object.keys(this.port.env)), facts: this.facts(chat) };
  }

  private environment(entry: Entry, names: readonly string[]): Record<string, string> {
    const parent =
      entry.options.parent === undefined ? undefined : this.inherited(entry.options.parent);
    const source = parent?.env ?? this.port.env;
    const env: Record<string, string> = {};
    for (const name of names) {
      const value = source[name];
      if (typeof value === 'string' && value.trim() !== '') env[name] = value;
    }
    return env;
  }

  /** `editor.context` for a file chat: the base configuration, the layers, the frontmatter. */
  private async context(entry: Entry, params: ContextParams): Promise<ContextAnswer> {
    const answer: ContextAnswer = {
      // NOTE: no generation: the host does not take a file chat's answer for Lua's snapshot.
      config: await this.port.baseConfig(),
      facts: this.facts(entry),
      env: this.environment(entry, params.names),
      trust: { ...entry.trust },
      switched: [...entry.layer, ...entry.runLayer],
    };
    const request = params.frontmatter;
    if (request === undefined) return answer;
    // A file's Lua runs only in a chat its creator trusts (a custom language's reader is the
    // user's own code, as JSON's is).
    answer.frontmatter =
      'code' in request && request.custom === undefined && !entry.trust.trusted
        ? { untrusted: `${basename(entry.path)} is not trusted: its Lua frontmatter does not run` }
        : await this.port.evaluate(entry, request, entry.trust);
    return answer;
  }
}
