// The recovery record of a streamed reply (docs/context.md, "Recovery after a crash"): what a
// chat would hold had the reply reached the file, kept beside Neovim's swap files while the
// reply streams, so that a crash or a `:q!` loses at most the last second of it. Pure: the host
// writes the record (src/host/recovery.ts), Lua offers and inserts it (lua/flemma/chat/recovery.lua).
import { createHash } from 'node:crypto';
import { abortedMarker, blockChunk } from './writer.js';

/** The marker's message of a reply put back from its record. */
export const RECOVERED_MESSAGE =
  'Response interrupted: Neovim or Flemma stopped while it streamed.';

/** The version of the record's shape; Lua refuses another one. */
export const RECORD_VERSION = 1;

/**
 * One reply's record. The chat it belongs to is `base` (its first `rows` lines, checked by their
 * hash) followed by `before`, `reply` and `ending`: together the text to add after the base.
 */
export interface RecoveryRecord {
  version: number;
  /** The chat's full path, as Neovim names it (`fnamemodify(name, ':p')`). */
  path: string;
  /** The lines of the chat the record continues: how many, and the SHA-256 of them joined by `\n`. */
  base: { rows: number; sha256: string };
  /** From the end of the base to the end of the `@Assistant:` line (a `\n` first). */
  before: string;
  /** What the reply wrote under `@Assistant:`, as it was appended. */
  reply: string;
  /** What ends a cut-off reply on recovery: the interrupted marker and the next `@You:`. */
  ending: string;
  /** The reply ended (completed, cancelled or failed: `reply` holds its own end). */
  complete: boolean;
  /** When the record was written (ISO 8601). */
  written: string;
}

/** The SHA-256 (hex) of lines joined by `\n`, as Lua's `vim.fn.sha256(table.concat(lines, "\n"))`. */
export function linesHash(lines: readonly string[]): string {
  const hash = createHash('sha256');
  lines.forEach((line, index) => {
    if (index > 0) hash.update('\n');
    hash.update(line, 'utf8');
  });
  return hash.digest('hex');
}

/**
 * The record's file name in the recovery directory: the chat's name (for a person looking at the
 * directory) and the first 16 hex digits of the SHA-256 of its full path (so that two chats of
 * the same name never share a record). Lua computes the same name.
 */
export function recordName(path: string): string {
  const digest = createHash('sha256').update(path, 'utf8').digest('hex').slice(0, 16);
  const base = path.split('/').pop() ?? 'chat';
  // Byte by byte, as Lua sees the name: a character outside ASCII becomes one `_` per byte.
  const safe = [...Buffer.from(base, 'utf8').subarray(0, 64)]
    .map((byte) => {
      const char = String.fromCharCode(byte);
      return /[A-Za-z0-9._-]/.test(char) ? char : '_';
    })
    .join('');
  return `${safe}-${digest}.json`;
}

/**
 * What ends a reply cut off after `content` (the reply's text so far, as `ReplyLayout.text`):
 * what its text still owes (`ReplyLayout.owed`: the start of a line held back by the escape, a
 * closing fence), the interrupted marker, then the next `@You:` prompt, as a cancel would write
 * them.
 */
export function cutOffEnding(content: string, message = RECOVERED_MESSAGE, owed = ''): string {
  const text = content + owed;
  if (text === '') return '';
  return owed + blockChunk(text, abortedMarker(message)) + '\n@You:\n';
}

/**
 * Where a record's text starts, given the chat as the send found it (`lines`) and the record of
 * an earlier reply that never reached the file (`previous`, when it continues these lines):
 * the base and the text between the base and the new reply's `@Assistant:` line.
 * `openingTail`: the opening lines after the chat's last line (`openingLines(last).slice(1)`).
 */
export function recordStart(
  lines: readonly string[],
  openingTail: readonly string[],
  previous: RecoveryRecord['base'] | undefined,
): { base: RecoveryRecord['base']; before: string } {
  const opening = '\n' + openingTail.join('\n');
  if (
    previous !== undefined &&
    previous.rows <= lines.length &&
    linesHash(lines.slice(0, previous.rows)) === previous.sha256
  ) {
    // The chat still continues the earlier record's base: what came since (an earlier reply not
    // written to the file, tool results, the user's text) belongs to this record too.
    const since = lines.slice(previous.rows);
    return { base: previous, before: (since.length > 0 ? '\n' + since.join('\n') : '') + opening };
  }
  return { base: { rows: lines.length, sha256: linesHash(lines) }, before: opening };
}

/** Reads a record's JSON; undefined when it is not one this version wrote. */
export function parseRecord(text: string): RecoveryRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Partial<RecoveryRecord>;
  if (
    record.version !== RECORD_VERSION ||
    typeof record.path !== 'string' ||
    typeof record.base?.rows !== 'number' ||
    typeof record.base.sha256 !== 'string' ||
    typeof record.before !== 'string' ||
    typeof record.reply !== 'string' ||
    typeof record.ending !== 'string'
  ) {
    return undefined;
  }
  return record as RecoveryRecord;
}
