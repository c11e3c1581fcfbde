// The usage ledger (docs/usage.md, "The ledger"): one line of JSON per priced request of a chat
// held in a file, appended to `stdpath("state")/flemma/usage.jsonl`, so that the chat picker
// shows what a chat cost so far, across hosts and restarts (`./chats/costs.ts` reads it).
//
// Decisions:
// - A line holds numbers and the chat's real path only (`LedgerLine`): nothing of the
//   conversation, no credential, no endpoint.
// - Each line is one `write` to a descriptor opened with `O_APPEND` (mode 0600, the file made on
//   the first line): two hosts appending at once each land whole lines. It is written
//   synchronously, before the request's end is told: a listing right after finds it.
// - Past `LEDGER_MAX_BYTES` the file is renamed to `usage.jsonl.1` (the older `.1` replaced) and
//   the next line starts a new one: the ledger never holds more than twice that.
// - A failed write is logged by the caller and forgotten: the ledger only ever feeds a display.
import {
  type Stats,
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  renameSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { RequestRecord } from '../core/usage/session.js';

/** The size past which the ledger is rotated to `.1`. */
export const LEDGER_MAX_BYTES = 10 * 1024 * 1024;

/** One request in the ledger: when it completed, the chat's real path, its tokens and cost. */
export interface LedgerLine {
  v: 1;
  /** Milliseconds since the epoch. */
  at: number;
  chat: string;
  provider: string;
  model: string;
  /** Non-cached input tokens. */
  input: number;
  /** Output tokens, thinking included. */
  output: number;
  cache_read: number;
  cache_write: number;
  /** USD. */
  cost: number;
}

/** The ledger of the state directory `state` (`stdpath("state")`). */
export function ledgerPath(state: string): string {
  return join(state, 'flemma', 'usage.jsonl');
}

/** The line of a completed request; undefined when it has no chat file or no price. */
export function ledgerLine(record: RequestRecord): LedgerLine | undefined {
  if (record.filepath === undefined || record.cost === undefined) return undefined;
  return {
    v: 1,
    at: Math.round(record.completed_at * 1000),
    chat: record.filepath,
    provider: record.provider,
    model: record.model,
    input: record.input_tokens,
    output: record.output_tokens + (record.output_has_thoughts ? 0 : record.thoughts_tokens),
    cache_read: record.cache_read_input_tokens,
    cache_write: record.cache_creation_input_tokens,
    cost: record.cost,
  };
}

function count(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/** The JSON object `text` holds, if it holds one. */
function objectOf(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The line `text` as a ledger line; undefined when it is not one (corrupt, another version). */
export function parseLedgerLine(text: string): LedgerLine | undefined {
  const line = objectOf(text);
  if (
    line === undefined ||
    line['v'] !== 1 ||
    typeof line['chat'] !== 'string' ||
    line['chat'] === ''
  )
    return undefined;
  const numbers = ['at', 'input', 'output', 'cache_read', 'cache_write', 'cost'];
  if (!numbers.every((key) => count(line[key]))) return undefined;
  if (typeof line['provider'] !== 'string' || typeof line['model'] !== 'string') return undefined;
  return line as unknown as LedgerLine;
}

/**
 * Appends `line` to the ledger of the state directory `state` (`stdpath("state")`), and rotates the
 * file to `.1` once it is past `LEDGER_MAX_BYTES`. Synchronous: a line is a few hundred bytes, and
 * it is on disk before the request's end is told (a host stopped right after loses none).
 */
export function appendLedger(state: string, line: LedgerLine): void {
  const file = ledgerPath(state);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const fd = openSync(file, 'a', 0o600);
  let info: Stats;
  try {
    writeSync(fd, `${JSON.stringify(line)}\n`);
    info = fstatSync(fd);
  } finally {
    closeSync(fd);
  }
  if (info.size < LEDGER_MAX_BYTES) return;
  // Only the file this host wrote to (another host may have rotated it meanwhile).
  const current = statSync(file, { throwIfNoEntry: false });
  if (current?.ino === info.ino && current.dev === info.dev) renameSync(file, `${file}.1`);
}
