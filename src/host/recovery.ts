// Keeping a streamed reply on disk (docs/context.md, "Recovery after a crash"). The host writes
// the record: it has what arrived, needs no round trip to Neovim for it, and keeps running while
// Neovim is gone long enough to write the last of it (main.ts flushes on disconnect). Every write
// is asynchronous and atomic (a temporary file, synced, then renamed over the record), at most
// one a second per reply and one at a time, so that a crash mid-write leaves the previous record.
// With `editing.auto_write`, Lua also writes the chat file itself at the same pace.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { writeSynced } from '../core/util/files.js';
import type { Clock } from '../editor/writequeue.js';
import { join } from 'node:path';
import {
  RECORD_VERSION,
  type RecoveryRecord,
  cutOffEnding,
  parseRecord,
  recordName,
  recordStart,
} from '../core/chat/recovery.js';
import type { Logger } from '../core/log.js';

/** The least time between two writes of one reply's record (ms). */
export const RECOVERY_INTERVAL_MS = 1000;

/** The recovery directory under Neovim's state directory (`stdpath("state")`). */
export function recoveryDir(state: string): string {
  return join(state, 'flemma', 'recovery');
}

/** The clock the service waits on: the write queue's (a test gives its own). */
export type RecoveryTimers = Clock;

const realTimers: RecoveryTimers = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    return {
      cancel: () => {
        clearTimeout(handle);
      },
    };
  },
};

export interface ReplyStart {
  bufnr: number;
  /** The chat's directory of records (`recoveryDir(stdpath("state"))`). */
  dir: string;
  /** The chat's full path. */
  path: string;
  /** The chat's lines when the send began. */
  lines: readonly string[];
  /** The opening lines after the last one (`openingLines(last).slice(1)`). */
  openingTail: readonly string[];
  /** `editing.auto_write`: Lua writes the chat file at the record's pace too. */
  writeFile?: () => void;
}

/** The record of one reply while it streams. */
export class ReplyRecord {
  private reply = '';
  private content = '';
  /** What the reply's text still owes before a cut-off ending (`ReplyLayout.owed`). */
  private owed = '';
  private complete = false;
  private dirty = false;
  /** How much of the reply is on disk (its length, plus one once its end is). */
  private durable = 0;
  /** The `owed` of the record on disk. */
  private durableOwed = '';
  private lastWrite = -Infinity;
  private timer: { cancel(): void } | undefined;
  private writing: Promise<void> = Promise.resolve();
  private start: { base: RecoveryRecord['base']; before: string } | undefined;
  private readonly file: string;
  /** The base, looked for with the reply's first text (the request is out by then). */
  private ready: Promise<void> | undefined;

  constructor(
    private readonly origin: ReplyStart,
    private readonly logger: Logger,
    private readonly timers: RecoveryTimers,
    /** The chat's previous reply's last write: this one's base is read once it is on disk. */
    private readonly after: Promise<void> = Promise.resolve(),
  ) {
    this.file = join(origin.dir, recordName(origin.path));
  }

  /** The base: this chat's earlier record, when the chat still continues it, else the chat now. */
  private async prepare(): Promise<void> {
    let previous: RecoveryRecord | undefined;
    await this.after.catch(() => undefined);
    try {
      await mkdir(this.origin.dir, { recursive: true, mode: 0o700 });
      previous = parseRecord(await readFile(this.file, 'utf8'));
    } catch {
      previous = undefined;
    }
    this.start = recordStart(
      this.origin.lines,
      this.origin.openingTail,
      previous?.path === this.origin.path ? previous.base : undefined,
    );
  }

  /**
   * Text appended under `@Assistant:`; `content`: the reply so far (`ReplyLayout.text`);
   * `owed`: what its text still owes were it cut off now (`ReplyLayout.owed`).
   */
  append(text: string, content: string, owed = ''): void {
    if ((text === '' && owed === this.owed) || this.complete) return;
    this.changed(this.reply + text, content, owed);
  }

  /**
   * A block inserted `at` characters into the reply (thinking written where it happened), in
   * place of the `removed` characters there (a block rewritten).
   */
  insert(at: number, text: string, content: string, owed = '', removed = 0): void {
    if (this.complete) return;
    this.changed(this.reply.slice(0, at) + text + this.reply.slice(at + removed), content, owed);
  }

  private changed(reply: string, content: string, owed: string): void {
    this.ready ??= this.prepare();
    this.reply = reply;
    this.content = content;
    this.owed = owed;
    this.dirty = true;
    this.schedule();
  }

  /** The reply ended (its end is appended): the last write, now. Resolves once it is on disk. */
  finish(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.reply === '') return this.writing;
    this.complete = true;
    this.dirty = true;
    return this.flush();
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    const wait = Math.max(0, this.lastWrite + RECOVERY_INTERVAL_MS - this.timers.now());
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
  }

  private flush(): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.dirty || this.ready === undefined) return;
      await this.ready;
      this.dirty = false;
      this.lastWrite = this.timers.now();
      const record = this.record();
      if (record === undefined) return;
      const owed = this.owed;
      try {
        await writeAtomic(this.file, JSON.stringify(record));
        this.durable = record.reply.length + (record.complete ? 1 : 0);
        this.durableOwed = owed;
      } catch (error) {
        this.logger.warn(`the recovery record ${this.file} was not written: ${String(error)}`);
      }
      // The chat file after the record: whatever the file holds, the record holds too.
      if (!this.complete) this.origin.writeFile?.();
    });
    return this.writing;
  }

  private record(): RecoveryRecord | undefined {
    if (this.start === undefined) return undefined;
    return {
      version: RECORD_VERSION,
      path: this.origin.path,
      base: this.start.base,
      before: this.start.before,
      reply: this.reply,
      ending: this.complete ? '' : cutOffEnding(this.content, undefined, this.owed),
      complete: this.complete,
      written: new Date().toISOString(),
    };
  }

  /**
   * Neovim is gone and the host exits: what arrived since the last write (or is in a write that
   * will not finish), written now.
   */
  flushSync(): void {
    if (this.reply === '') return;
    // Before the first write found its base: the chat as sent (an earlier record is not read now).
    this.start ??= recordStart(this.origin.lines, this.origin.openingTail, undefined);
    if (
      this.durable === this.reply.length + (this.complete ? 1 : 0) &&
      (this.complete || this.durableOwed === this.owed)
    ) {
      return;
    }
    const record = this.record();
    if (record === undefined) return;
    try {
      mkdirSync(this.origin.dir, { recursive: true, mode: 0o700 });
      const temp = `${this.file}.${String(process.pid)}.tmp`;
      writeFileSync(temp, JSON.stringify(record), { mode: 0o600 });
      renameSync(temp, this.file);
    } catch {
      // Exiting: nothing to tell.
    }
  }
}

/** Writes `content` to `file` so that `file` is always either the old or the new content. */
async function writeAtomic(file: string, content: string): Promise<void> {
  const temp = `${file}.${String(process.pid)}.tmp`;
  // Synced before the rename: after a crash of the machine the record is whole or the old one.
  await writeSynced(temp, content, 'w', 0o600);
  await rename(temp, file);
}

/** The replies being kept, one per buffer; made once by the host's wiring. */
export class RecoveryService {
  private readonly replies = new Map<number, ReplyRecord>();
  private readonly settling = new Map<number, Promise<void>>();
  private readonly finishing = new Set<ReplyRecord>();

  constructor(
    private readonly logger: Logger,
    private readonly timers: RecoveryTimers = realTimers,
  ) {}

  /** A reply starts streaming into a chat that has a file. */
  begin(start: ReplyStart): ReplyRecord {
    // The previous reply's last write may still be on its way (nothing waits for it when the
    // chat is not written after a reply): this one reads the record after it.
    const record = new ReplyRecord(start, this.logger, this.timers, this.settling.get(start.bufnr));
    this.replies.set(start.bufnr, record);
    return record;
  }

  /** The reply of `bufnr` ended: its last write. */
  end(bufnr: number, record: ReplyRecord): void {
    if (this.replies.get(bufnr) === record) this.replies.delete(bufnr);
    // Until its last write is on disk, an exit still writes it (`flushSync`).
    this.finishing.add(record);
    const settling = record.finish();
    this.settling.set(bufnr, settling);
    void settling.finally(() => this.finishing.delete(record));
  }

  /** Resolves once the last write of the buffer's last reply is on disk. */
  async settled(bufnr: number): Promise<void> {
    const settling = this.settling.get(bufnr);
    if (settling === undefined) return;
    await settling;
    if (this.settling.get(bufnr) === settling) this.settling.delete(bufnr);
  }

  /** Neovim disconnected: every reply's latest text not yet on disk, written synchronously. */
  flushSync(): void {
    for (const record of [...this.replies.values(), ...this.finishing]) record.flushSync();
  }
}
