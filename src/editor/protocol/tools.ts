// Lua → host actions of tools (their definitions from Lua, running, cancelling, approving and
// rejecting calls, `:Flemma tool:*`, the review of a turn's calls), kept apart from the other
// actions; `LuaToHost` and `LUA_TO_HOST` include them.
import type { AlwaysEntry } from '../../core/approval/session.js';
import type { ReviewCall, ReviewScope } from '../../core/chat/review.js';
import { ActionError, type ActionSpecs, bufnrOf, field, type Method } from './common.js';
import {
  type At,
  at,
  atTicket,
  type Buf,
  buf,
  listOf,
  none,
  strings,
  text,
  type Ticket,
} from './decoders.js';
import type {
  DeclarativeSettings,
  LuaToolResult,
  LuaToolSpec,
  LuaTruncateParams,
  LuaTruncation,
  LuaWritableParams,
} from './wire.js';

/** One row of `:Flemma tool:list`: a running call. */
export interface RunListing {
  id: string;
  name: string;
  bufnr: number;
  age_ms: number;
  background: boolean;
  job_id: number | null;
}

export interface ToolActions {
  'tools:define': Method<
    {
      tools: LuaToolSpec[];
      pending: number;
      js_modules: string[];
      declarative: DeclarativeSettings | undefined;
      /** `mcp` as Lua sent it; absent when Lua sent none. */
      mcp?: unknown;
    },
    null
  >;
  'tools:result': Method<{ call_id: string | undefined; result: LuaToolResult }, null>;
  'tools:truncate': Method<LuaTruncateParams, LuaTruncation>;
  'tools:format-size': Method<{ bytes: number }, string>;
  'tools:writable': Method<LuaWritableParams, boolean>;
  'tool:execute': Method<At & Ticket, null>;
  'tool:cancel': Method<At, { cancelled: boolean }>;
  'tool:cancel-all': Method<null, { cancelled: number }>;
  'tool:background': Method<At, { moved: boolean }>;
  'tool:list': Method<null, RunListing[]>;
  'tool:why': Method<At, { text: string }>;
  'tool:output': Method<At, { lines: string[] } | { message: string }>;
  'tool:undo': Method<At, { ok: boolean; message: string }>;
  'chat:review': Method<Buf & { scope: ReviewScope }, { calls: ReviewCall[]; git: string[] }>;
  'tool:approve': Method<At & Ticket, null>;
  'tool:reject': Method<At & Ticket & { message: string | undefined }, null>;
  'tool:approve-always': Method<At & Ticket, AlwaysEntry | null>;
  'tool:always': Method<Buf, { lines: string[]; entries: AlwaysEntry[] }>;
  'tool:forget-always': Method<Buf & { tool: string | undefined }, { removed: number }>;
  'tool:yolo': Method<Buf & { mode: 'on' | 'off' | 'toggle' }, { yolo: boolean }>;
  'tool:cancel-pending': Method<Buf, { cancelled: number }>;
}

/** `scope = "last" | "all" | { first, last }` (1-based lines) of `chat:review`. */
const reviewScope = (raw: unknown): Buf & { scope: ReviewScope } => {
  const scope = field(raw, 'scope');
  const bufnr = bufnrOf(raw);
  if (scope === 'all') return { bufnr, scope: { kind: 'all' } };
  const first = field(scope, 'first');
  const last = field(scope, 'last');
  if (typeof first === 'number' && typeof last === 'number') {
    return {
      bufnr,
      scope: { kind: 'range', first: Math.min(first, last), last: Math.max(first, last) },
    };
  }
  return { bufnr, scope: { kind: 'last' } };
};
/** `declarative = { dirs = { { path, optional? } }, env = { … } }` of `tools:define`. */
function declarativeSettings(raw: unknown): DeclarativeSettings | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const dirs: DeclarativeSettings['dirs'] = [];
  for (const item of listOf<unknown>(field(raw, 'dirs'))) {
    const path = field(item, 'path');
    if (typeof path !== 'string' || path === '') continue;
    dirs.push(field(item, 'optional') === true ? { path, optional: true } : { path });
  }
  return { dirs, env: strings(field(raw, 'env')) };
}

/** `{text, from, max_lines?, max_bytes?}`: a limit that is not a number means the default. */
function truncation(raw: unknown): LuaTruncateParams {
  const input = field(raw, 'text');
  const from = field(raw, 'from');
  if (typeof input !== 'string' || (from !== 'head' && from !== 'tail')) {
    throw new ActionError(
      `expected { text = <string>, from = "head" | "tail" }, got ${JSON.stringify(raw)}`,
    );
  }
  const maxLines = field(raw, 'max_lines');
  const maxBytes = field(raw, 'max_bytes');
  return {
    text: input,
    from,
    ...(typeof maxLines === 'number' ? { max_lines: maxLines } : {}),
    ...(typeof maxBytes === 'number' ? { max_bytes: maxBytes } : {}),
  };
}

/** `{path, base, rw_paths}` of `tools:writable`. */
function writable(raw: unknown): LuaWritableParams {
  const path = field(raw, 'path');
  const base = field(raw, 'base');
  const roots = field(raw, 'rw_paths');
  if (typeof path !== 'string' || typeof base !== 'string' || !Array.isArray(roots)) {
    throw new ActionError(
      `expected { path = <string>, base = <string>, rw_paths = <list> }, got ${JSON.stringify(raw)}`,
    );
  }
  return { path, base, rw_paths: strings(roots) };
}

export const TOOL_ACTIONS: ActionSpecs<ToolActions> = {
  'tools:define': {
    kind: 'notification',
    params: '`{tools, pending, js_modules, declarative?, mcp?}`',
    answer: '`nil`',
    section: 'tools',
    decode: (raw) => {
      const pending = field(raw, 'pending');
      const mcp = field(raw, 'mcp');
      return {
        tools: listOf<LuaToolSpec>(field(raw, 'tools')),
        pending: typeof pending === 'number' ? pending : 0,
        js_modules: strings(field(raw, 'js_modules')),
        declarative: declarativeSettings(field(raw, 'declarative')),
        ...(mcp === undefined ? {} : { mcp }),
      };
    },
  },
  'tools:result': {
    kind: 'notification',
    params: '`{call_id, result}`',
    answer: '`nil`',
    section: 'tools',
    decode: (raw) => {
      const id = field(raw, 'call_id');
      return {
        call_id: typeof id === 'string' ? id : undefined,
        result: field(raw, 'result') ?? {},
      };
    },
  },
  'tools:truncate': {
    kind: 'call',
    params: '`{text, from = "head" \\| "tail", max_lines?, max_bytes?}`',
    answer: 'the truncation (snake_case)',
    section: 'tools',
    decode: truncation,
  },
  'tools:format-size': {
    kind: 'call',
    params: '`{bytes}`',
    answer: '`"12.1KB"`',
    section: 'tools',
    decode: (raw) => {
      const bytes = field(raw, 'bytes');
      return { bytes: typeof bytes === 'number' ? bytes : 0 };
    },
  },
  'tools:writable': {
    kind: 'call',
    params: '`{path, base, rw_paths}`',
    answer: 'boolean',
    section: 'tools',
    decode: writable,
  },
  'tool:execute': {
    kind: 'notification',
    params: '`{bufnr, row, ticket?}`',
    answer: '`nil` (`<M-CR>`; with `ticket`, `chat.step_ended` later)',
    section: 'tools',
    decode: atTicket,
  },
  'tool:cancel': {
    kind: 'call',
    params: '`{bufnr, row?}`',
    answer: '`{cancelled}`',
    section: 'tools',
    decode: at,
  },
  'tool:cancel-all': {
    kind: 'call',
    params: 'none',
    answer: '`{cancelled}` (how many)',
    section: 'tools',
    decode: none,
  },
  'tool:background': {
    kind: 'call',
    params: '`{bufnr, row?}`',
    answer: '`{moved}`',
    section: 'tools',
    decode: at,
  },
  'tool:list': {
    kind: 'call',
    params: 'none',
    answer: 'running tools',
    section: 'tools',
    decode: none,
  },
  'tool:why': {
    kind: 'call',
    params: '`{bufnr, row}`',
    answer: '`{text}`',
    section: 'commands',
    decode: at,
  },
  'tool:output': {
    kind: 'call',
    params: '`{bufnr, row}`',
    answer: '`{lines}` or `{message}`',
    section: 'commands',
    decode: at,
  },
  'chat:review': {
    kind: 'call',
    params: '`{bufnr, scope}` (`"last"`, `"all"` or `{first, last}`)',
    answer:
      '`{calls, git}`: calls `{tool_id, name, line, undone, files}`; `git`: paths changed during the turn',
    section: 'commands',
    decode: reviewScope,
  },
  'tool:undo': {
    kind: 'call',
    params: '`{bufnr, row}`',
    answer: '`{ok, message}`',
    section: 'commands',
    decode: at,
  },
  'tool:approve': {
    kind: 'call',
    params: '`{bufnr, row, ticket?}`',
    answer: '`nil`',
    section: 'commands',
    decode: atTicket,
  },
  'tool:reject': {
    kind: 'call',
    params: '`{bufnr, row, message?, ticket?}`',
    answer: '`nil`',
    section: 'commands',
    decode: (raw) => ({ ...atTicket(raw), message: text(field(raw, 'message')) }),
  },
  'tool:approve-always': {
    kind: 'call',
    params: '`{bufnr, row, ticket?}`',
    answer: '`{tool, command?}` or `nil`',
    section: 'commands',
    decode: atTicket,
  },
  'tool:always': {
    kind: 'call',
    params: '`{bufnr}`',
    answer: '`{lines, entries}`',
    section: 'commands',
    decode: buf,
  },
  'tool:forget-always': {
    kind: 'call',
    params: '`{bufnr, tool?}`',
    answer: '`{removed}`',
    section: 'commands',
    decode: (raw) => ({ bufnr: bufnrOf(raw), tool: text(field(raw, 'tool')) }),
  },
  'tool:yolo': {
    kind: 'call',
    params: '`{bufnr, mode?}`',
    answer: '`{yolo}`',
    section: 'commands',
    decode: (raw) => {
      const mode = field(raw, 'mode');
      return { bufnr: bufnrOf(raw), mode: mode === 'on' || mode === 'off' ? mode : 'toggle' };
    },
  },
  'tool:cancel-pending': {
    kind: 'call',
    params: '`{bufnr}`',
    answer: '`{cancelled}` (how many)',
    section: 'commands',
    decode: buf,
  },
};
