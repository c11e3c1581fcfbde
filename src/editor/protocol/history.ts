// The protocol of `:Flemma fork`, `:Flemma rewind` and `:Flemma retry` (docs/history.md), both
// directions, kept apart from the other methods; `LuaToHost`, `HostToLua` and their tables
// include them.
import {
  ActionError,
  type ActionSpecs,
  bufnrOf,
  field,
  type Method,
  type ToLuaSpecs,
} from './common.js';
import { type Buf, type Ticket, ticketOf } from './decoders.js';
import { type PushedState, pushedOf } from './pushed.js';
import type { DiffSpec } from './review.js';

/** The chat's file (absolute) and the cursor's 0-based row. */
type At = Buf & { file: string; row: number };

export interface HistoryActions {
  /** `:Flemma fork`: a new chat beside `file` with the conversation up to the message at `row`. */
  'chat:fork': Method<At, null>;
  /** `:Flemma rewind`: back to the message at `row`, its later calls undone. */
  'chat:rewind': Method<At, null>;
  /** `:Flemma retry`: the last reply out of the chat, then the same request sent again. */
  'chat:retry': Method<Buf & Ticket & { file: string; state?: PushedState }, null>;
}

export interface HistoryToLua {
  /**
   * What a fork or rewind leaves for the editor: `open` the new chat (the cursor on `row`),
   * `diff` the file that made a rewind refuse, `checktime` after files were restored.
   */
  'history.show': Method<
    {
      bufnr: number;
      open?: { path: string; row: number };
      diff?: DiffSpec;
      checktime?: boolean;
    },
    { opened: boolean; bufnr?: number }
  >;
}

function fileOf(raw: unknown): string {
  const file = field(raw, 'file');
  if (typeof file !== 'string' || file === '') {
    throw new ActionError(`expected { file = <the chat's file> }, got ${JSON.stringify(raw)}`);
  }
  return file;
}

function at(raw: unknown): At {
  const row = field(raw, 'row');
  if (typeof row !== 'number' || !Number.isInteger(row) || row < 0) {
    throw new ActionError(`expected { row = <0-based row> }, got ${JSON.stringify(raw)}`);
  }
  return { bufnr: bufnrOf(raw), file: fileOf(raw), row };
}

export const HISTORY_ACTIONS: ActionSpecs<HistoryActions, 'notification'> = {
  'chat:fork': {
    kind: 'notification',
    params: '`{bufnr, file, row}`',
    answer: '`nil` (`history.show` opens the new chat)',
    section: 'fork-rewind-retry',
    decode: at,
  },
  'chat:rewind': {
    kind: 'notification',
    params: '`{bufnr, file, row}`',
    answer: '`nil` (`history.show` after it)',
    section: 'fork-rewind-retry',
    decode: at,
  },
  'chat:retry': {
    kind: 'notification',
    params: '`{bufnr, file, ticket?, state?}`',
    answer: '`nil` (the request runs on; with `ticket`, `chat.step_ended` later)',
    section: 'fork-rewind-retry',
    decode: (raw) => ({
      bufnr: bufnrOf(raw),
      file: fileOf(raw),
      ...ticketOf(raw),
      ...pushedOf(field(raw, 'state')),
    }),
  },
};

export const HISTORY_TO_LUA = {
  'history.show': {
    kind: 'request',
    params: '`{bufnr, open?, diff?, checktime?}`',
    answer: '`{opened, bufnr?}`',
    section: 'fork-rewind-retry',
  },
} as const satisfies ToLuaSpecs<HistoryToLua>;
