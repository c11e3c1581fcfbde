// What each chat cost so far, for `:Flemma chats` (docs/picker.md): the sums per chat of the
// usage ledger (`../ledger.ts`), read incrementally.
//
// Decisions:
// - The reader keeps where it stopped (the ledger's device and inode, the byte offset after the
//   last whole line) and the sums per chat path; the picker's index keeps them on disk
//   (`./index-file.ts`), so a freshly started host reads only the lines appended since.
// - A rotation is followed: when the file read last is now `usage.jsonl.1`, its rest is read, then
//   the new file from its start. When the reader cannot tell where it stopped (no mark, the file
//   replaced or truncated, rotated twice since), it starts over from `.1` and the current file:
//   the sums are then those of the lines still on disk.
// - A line that is not a ledger line (corrupt, cut short, another version) is skipped; a line not
//   ended yet (a write under way) is left for the next read.
import { open, stat } from 'node:fs/promises';
import { parseLedgerLine } from '../ledger.js';

/** Where a reader stopped in a ledger, and its sums so far (kept in the picker's index). */
export interface LedgerMark {
  file: string;
  dev: number;
  ino: number;
  offset: number;
  costs: Record<string, number>;
}

/** Bytes read at a time. */
const CHUNK = 1024 * 1024;

interface Identity {
  dev: number;
  ino: number;
  size: number;
}

async function identity(path: string): Promise<Identity | undefined> {
  try {
    const info = await stat(path);
    return info.isFile() ? { dev: info.dev, ino: info.ino, size: info.size } : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `value` is a mark (of the index, which may hold anything). */
export function isLedgerMark(value: unknown): value is LedgerMark {
  if (typeof value !== 'object' || value === null) return false;
  const mark = value as Record<string, unknown>;
  const integers = [mark['dev'], mark['ino'], mark['offset']];
  return (
    typeof mark['file'] === 'string' &&
    integers.every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0) &&
    typeof mark['costs'] === 'object' &&
    mark['costs'] !== null &&
    Object.values(mark['costs']).every((n) => typeof n === 'number' && Number.isFinite(n))
  );
}

export class LedgerCosts {
  /** USD per chat (its real path). */
  readonly costs = new Map<string, number>();
  private file: string | undefined;
  private at: Identity | undefined;
  private offset = 0;
  private reading: Promise<unknown> = Promise.resolve();

  /** Continues from `mark` (read from the index). */
  restore(mark: LedgerMark): void {
    this.file = mark.file;
    this.at = { dev: mark.dev, ino: mark.ino, size: mark.offset };
    this.offset = mark.offset;
    this.costs.clear();
    for (const [path, cost] of Object.entries(mark.costs)) this.costs.set(path, cost);
  }

  /** Where it stopped, for the index; undefined before it read a ledger. */
  mark(): LedgerMark | undefined {
    if (this.file === undefined || this.at === undefined) return undefined;
    const { dev, ino } = this.at;
    return {
      file: this.file,
      dev,
      ino,
      offset: this.offset,
      costs: Object.fromEntries(this.costs),
    };
  }

  /**
   * Reads what was appended to the ledger `file` since; true when where it stopped moved. One
   * read at a time (two listings at once would count the same lines twice).
   */
  update(file: string): Promise<boolean> {
    const next = this.reading.then(() => this.readNew(file));
    this.reading = next.catch(() => false);
    return next;
  }

  private async readNew(file: string): Promise<boolean> {
    const before = this.position();
    const [current, rotated] = await Promise.all([identity(file), identity(`${file}.1`)]);
    const same = (other: Identity | undefined): boolean =>
      this.file === file && other?.ino === this.at?.ino && other?.dev === this.at?.dev;
    if (current !== undefined && same(current) && current.size >= this.offset) {
      await this.readFrom(file, current);
    } else {
      if (rotated !== undefined && same(rotated) && rotated.size >= this.offset) {
        await this.readFrom(`${file}.1`, rotated);
      } else {
        this.costs.clear();
        this.at = undefined;
        this.offset = 0;
        if (rotated !== undefined) await this.readFrom(`${file}.1`, rotated, 0);
      }
      this.file = file;
      // With no current file yet, `.1` stays where it stopped.
      if (current !== undefined) await this.readFrom(file, current, 0);
    }
    return this.position() !== before;
  }

  private position(): string {
    return JSON.stringify([this.file, this.at?.dev, this.at?.ino, this.offset]);
  }

  /** The whole lines of `path` from `from` (where it stopped) up to its size, into the sums. */
  private async readFrom(path: string, info: Identity, from = this.offset): Promise<void> {
    let position = from;
    try {
      const handle = await open(path, 'r');
      try {
        const buffer = Buffer.allocUnsafe(CHUNK);
        let rest = Buffer.alloc(0);
        while (position + rest.length < info.size) {
          const { bytesRead } = await handle.read(buffer, 0, CHUNK, position + rest.length);
          if (bytesRead === 0) break;
          const data = Buffer.concat([rest, buffer.subarray(0, bytesRead)]);
          const end = data.lastIndexOf(0x0a) + 1;
          this.add(data.subarray(0, end).toString('utf8'));
          rest = data.subarray(end);
          position += end;
        }
      } finally {
        await handle.close();
      }
    } catch {
      // Gone or unreadable: what was read counts; the next listing looks again.
    }
    this.at = info;
    this.offset = position;
  }

  /** The ledger lines of `text` into the sums. */
  private add(text: string): void {
    for (const raw of text.split('\n')) {
      if (raw === '') continue;
      const line = parseLedgerLine(raw);
      if (line !== undefined)
        this.costs.set(line.chat, (this.costs.get(line.chat) ?? 0) + line.cost);
    }
  }
}
