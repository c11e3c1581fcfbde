// The params Lua → host actions share (a buffer, a cursor, a ticket) and the decoders of common
// values, for the action tables (`./lua-to-host.ts`, `./tools.ts`).
import { bufnrOf, field } from './common.js';

/** A cursor in a buffer (`row` 0-based; null when Lua sent none, or not a row). */
export interface At {
  bufnr: number;
  row: number | null;
}

export interface Buf {
  bufnr: number;
}

/**
 * A user's action Lua wants to hear the end of: `ticket` (a number of its own) is answered by
 * `chat.step_ended` once the user has the word again (null: no answer).
 */
export interface Ticket {
  ticket: number | null;
}

function rowOf(raw: unknown): number | null {
  const row = field(raw, 'row');
  return typeof row === 'number' && Number.isInteger(row) && row >= 0 ? row : null;
}

/** A non-empty string, else undefined. */
export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function strings(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((item): item is string => typeof item === 'string')
    : [];
}

/** A list as Lua sent it (its items are checked where they are used). */
export function listOf<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

export const none = (): null => null;
export const buf = (raw: unknown): Buf => ({ bufnr: bufnrOf(raw) });
export const at = (raw: unknown): At => ({ bufnr: bufnrOf(raw), row: rowOf(raw) });
/** `ticket` of an action Lua wants to hear the end of (`chat.step_ended`), else null. */
export function ticketOf(raw: unknown): Ticket {
  const ticket = field(raw, 'ticket');
  return { ticket: typeof ticket === 'number' && Number.isInteger(ticket) ? ticket : null };
}
export const atTicket = (raw: unknown): At & Ticket => ({ ...at(raw), ...ticketOf(raw) });
