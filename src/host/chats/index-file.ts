// The chat picker's index on disk (docs/picker.md, "How fast"): what `:Flemma chats` read of each
// chat file (its title, provider and model) with the file's modification time and size, so that
// the first listing of a freshly started host reads only the files that changed since.
//
// Decisions:
// - One JSON file, `stdpath("cache")/flemma/chats-index.json`, read once by a host and written
//   whole after a listing that read or dropped something: written to a temporary file of this
//   write (mode 0600) and renamed over the index, so a reader (another Neovim's host) sees the
//   old index or the new one, never half of one. Two hosts writing at once: the last one wins,
//   and what the other read is read again by the next listing that needs it.
// - Whatever the file holds is checked: a file that is not an index of this version (corrupt,
//   foreign, another version) counts as no index, an entry of the wrong shape as no entry. An
//   index only ever saves reading a file: every entry is checked against the file's current
//   modification time and size before it is used, so the entry of a file changed since costs a
//   read, never a stale line.
// - It holds at most `MAX_ENTRIES` chats, the newest (a chat deleted since is dropped by the
//   listing that finds it gone; chats of a project no longer visited stay until then).
// - What it holds of the chats' text (the titles, the user's own words) passed the host's
//   redaction of secrets before it was kept (src/host/chats/lister.ts).
// - It also holds where the reader of the usage ledger stopped and its sums per chat
//   (`ledger`, `./costs.ts`): a fresh host reads only the ledger's lines appended since.
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import type { ChatHead } from '../../core/chats/summary.js';
import { isLedgerMark, type LedgerMark } from './costs.js';

/** What is kept of a file: its modification time (ms, fractional) and size, and `value`. */
export interface Kept<T> {
  mtime: number;
  size: number;
  value: T;
}

const KIND = 'flemma-chats-index';
const VERSION = 1;
/** Chats the index holds at most (the newest). */
export const MAX_ENTRIES = 20_000;

/** Where the index of the cache directory `cache` (`stdpath("cache")`) is. */
export function indexPath(cache: string): string {
  return join(cache, 'flemma', 'chats-index.json');
}

/** One entry of the file: `[mtime, size, title, provider, model]`. */
type Row = [number, number, string, string, string];

function entryOf(row: unknown): Kept<ChatHead> | undefined {
  if (!Array.isArray(row) || row.length !== 5) return undefined;
  const [mtime, size, title, provider, model] = row as unknown[];
  if (typeof mtime !== 'number' || !Number.isFinite(mtime)) return undefined;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) return undefined;
  if (typeof title !== 'string' || typeof provider !== 'string' || typeof model !== 'string') {
    return undefined;
  }
  return { mtime, size, value: { title, provider, model } };
}

/** What an index holds: the chats' entries by absolute path, and the ledger's mark. */
export interface Index {
  entries: Map<string, Kept<ChatHead>>;
  ledger?: LedgerMark;
}

/**
 * The index in `file`; no entries when there is no index or it is not one (never rejects).
 */
export async function readIndex(file: string): Promise<Index> {
  const entries = new Map<string, Kept<ChatHead>>();
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return { entries };
  }
  if (typeof parsed !== 'object' || parsed === null) return { entries };
  const { kind, version, chats, ledger } = parsed as Record<string, unknown>;
  if (kind !== KIND || version !== VERSION || typeof chats !== 'object' || chats === null) {
    return { entries };
  }
  for (const [path, row] of Object.entries(chats)) {
    const entry = isAbsolute(path) ? entryOf(row) : undefined;
    if (entry !== undefined) entries.set(path, entry);
  }
  return isLedgerMark(ledger) ? { entries, ledger } : { entries };
}

/** The text of the index of `entries` (the newest `MAX_ENTRIES`) and `ledger`. */
function indexText(
  entries: ReadonlyMap<string, Kept<ChatHead>>,
  ledger: LedgerMark | undefined,
): string {
  let kept = [...entries];
  if (kept.length > MAX_ENTRIES) {
    kept = kept.sort((a, b) => b[1].mtime - a[1].mtime).slice(0, MAX_ENTRIES);
  }
  const chats: Record<string, Row> = {};
  for (const [path, { mtime, size, value }] of kept) {
    chats[path] = [mtime, size, value.title, value.provider, value.model];
  }
  return JSON.stringify({
    kind: KIND,
    version: VERSION,
    chats,
    ...(ledger === undefined ? {} : { ledger }),
  });
}

/**
 * Writes the index of `entries` and `ledger` to `file` atomically (a temporary file renamed over it, mode
 * 0600); false when it could not (the index is a cache: the next listing reads what it needs).
 */
export async function writeIndex(
  file: string,
  entries: ReadonlyMap<string, Kept<ChatHead>>,
  ledger?: LedgerMark,
): Promise<boolean> {
  // A name of this write alone (two listings of one host may write at once); `wx`: made anew, 0600.
  const temp = `${file}.${String(process.pid)}-${randomUUID()}.tmp`;
  try {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(temp, indexText(entries, ledger), { mode: 0o600, flag: 'wx' });
    await rename(temp, file);
    return true;
  } catch {
    await rm(temp, { force: true }).catch(() => undefined);
    return false;
  }
}
