// Lua → host: every action the host answers, how Lua sends it, the types of its params (as the
// handler receives them) and of its answer, and the decoder that checks its params on arrival.
import { isLogLevel, type LogLevel } from '../../core/log.js';
import type { ChatDocument } from '../../core/chat/ast.js';
import type { SdkLoadReport, SdkName } from '../../core/provider/sdk.js';
import type { AlwaysEntry } from '../../core/approval/session.js';
import type { SandboxStatus } from '../../core/tools/sandbox/index.js';
import type { DefinitionAnswer } from '../../core/chat/navigation.js';
import type { ReviewCall, ReviewScope } from '../../core/chat/review.js';
import { ActionError, bufnrOf, field, type Doc, type Method } from './common.js';
import { CONVERSATION_ACTIONS, type ConversationActions } from './conversation.js';
import { MCP_ACTIONS, type McpActions } from './mcp.js';
import { type PushedState, pushedOf } from './pushed.js';
import { REVIEW_ACTIONS, type ReviewActions } from './review.js';
import type {
  DeclarativeSettings,
  HostInfo,
  LuaResolverSpec,
  LuaSecretsSpec,
  LuaToolResult,
  LuaToolSpec,
  LuaTruncateParams,
  LuaTruncation,
  LuaWritableParams,
  NavigationParams,
} from './wire.js';

/** How Lua sends an action: `vim.rpcrequest` (only `ping`), `host.call`, `host.notify`. */
export type LuaToHostKind = 'request' | 'call' | 'notification' | 'notification or call';

/** A cursor in a buffer (`row` 0-based; null when Lua sent none, or not a row). */
interface At {
  bufnr: number;
  row: number | null;
}

interface Buf {
  bufnr: number;
}

/**
 * A user's action Lua wants to hear the end of: `ticket` (a number of its own) is answered by
 * `chat.step_ended` once the user has the word again (null: no answer).
 */
interface Ticket {
  ticket: number | null;
}

/** Every Lua → host action: its params (as the handler receives them, decoded) and its answer. */
export interface LuaToHost extends ReviewActions, McpActions, ConversationActions {
  ping: Method<null, HostInfo>;
  'host:info': Method<null, HostInfo>;
  'provider:sdks': Method<
    null,
    Record<SdkName, SdkLoadReport & { package: string; version: string }>
  >;
  'log:level': Method<{ level: LogLevel }, { level: LogLevel }>;
  'buffer:attach': Method<Buf, { messages: number; tick: number } | null>;
  'buffer:detach': Method<Buf, null>;
  'buffer:trust': Method<Buf, null>;
  'buffer:tree': Method<Buf, ChatDocument | null>;
  /** `gd`, `gf` and the language server's definition. */
  'buffer:definition': Method<NavigationParams, DefinitionAnswer>;
  /** The language server's hover: Markdown, or null when there is nothing to say. */
  'buffer:hover': Method<NavigationParams, string | null>;
  'frontmatter:languages': Method<{ names: string[] }, null>;
  /** `state`: the environment and the editor's facts as they are (docs/architecture.md). */
  'chat:send': Method<Buf & Ticket & { over_limit: boolean; state?: PushedState }, null>;
  'chat:cancel': Method<Buf, { cancelled: boolean }>;
  /** `<C-]>`; `ticket`: answered by `chat.step_ended`. */
  'chat:cycle': Method<Buf & Ticket & { state?: PushedState }, null>;
  /**
   * What the host holds of a buffer's settings went stale (every buffer's without `bufnr`): the
   * configuration's generation, a trust decision, the working directory, the buffer's name.
   */
  'editor:state': Method<{ bufnr?: number; stale: boolean }, null>;
  'chat:status': Method<Buf & { verbose: boolean }, { lines: string[] }>;
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
  'tool:list': Method<
    null,
    {
      id: string;
      name: string;
      bufnr: number;
      age_ms: number;
      background: boolean;
      job_id: number | null;
    }[]
  >;
  'tool:why': Method<At, { text: string }>;
  'tool:undo': Method<At, { ok: boolean; message: string }>;
  'chat:review': Method<Buf & { scope: ReviewScope }, { calls: ReviewCall[]; git: string[] }>;
  'tool:approve': Method<At & Ticket, null>;
  'tool:reject': Method<At & Ticket & { message: string | undefined }, null>;
  'tool:approve-always': Method<At & Ticket, AlwaysEntry | null>;
  'tool:always': Method<Buf, { lines: string[]; entries: AlwaysEntry[] }>;
  'tool:forget-always': Method<Buf & { tool: string | undefined }, { removed: number }>;
  'tool:yolo': Method<Buf & { mode: 'on' | 'off' | 'toggle' }, { yolo: boolean }>;
  'tool:cancel-pending': Method<Buf, { cancelled: number }>;
  'approval:define': Method<{ resolvers: LuaResolverSpec[] }, null>;
  'autopilot:cancelled': Method<Buf & { token: number }, null>;
  'autopilot:status': Method<Buf, { lines: string[]; state: string; iteration: number }>;
  'secrets:define': Method<{ resolvers: LuaSecretsSpec[] }, null>;
  'secrets:invalidate': Method<
    { all: boolean; kind: string | undefined; service: string | undefined },
    null
  >;
  'sandbox:define': Method<{ backends: unknown[] }, null>;
  'sandbox:status': Method<Buf, SandboxStatus>;
}

export type LuaToHostMethod = keyof LuaToHost;
export type ActionParams<M extends LuaToHostMethod> = LuaToHost[M]['params'];
export type ActionResult<M extends LuaToHostMethod> = LuaToHost[M]['result'];

export interface LuaToHostSpec<M extends LuaToHostMethod> extends Doc {
  readonly kind: LuaToHostKind;
  /** Checks and normalises what arrived; throws `ActionError` when it cannot be used. */
  readonly decode: (raw: unknown) => ActionParams<M>;
}

function rowOf(raw: unknown): number | null {
  const row = field(raw, 'row');
  return typeof row === 'number' && Number.isInteger(row) && row >= 0 ? row : null;
}

/** A non-empty string, else undefined. */
function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function strings(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((item): item is string => typeof item === 'string')
    : [];
}

/** A list as Lua sent it (its items are checked where they are used). */
function listOf<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

const none = (): null => null;
const buf = (raw: unknown): Buf => ({ bufnr: bufnrOf(raw) });
const at = (raw: unknown): At => ({ bufnr: bufnrOf(raw), row: rowOf(raw) });
/** `ticket` of an action Lua wants to hear the end of (`chat.step_ended`), else null. */
function ticketOf(raw: unknown): Ticket {
  const ticket = field(raw, 'ticket');
  return { ticket: typeof ticket === 'number' && Number.isInteger(ticket) ? ticket : null };
}
const atTicket = (raw: unknown): At & Ticket => ({ ...at(raw), ...ticketOf(raw) });
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
const token = (raw: unknown): Buf & { token: number } => {
  const value = field(raw, 'token');
  return { bufnr: bufnrOf(raw), token: typeof value === 'number' ? value : -1 };
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

function isCount(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min;
}

/** `{bufnr, row, col, file, cwd, files_only?}` of `buffer:definition` and `buffer:hover`. */
function navigation(raw: unknown): NavigationParams {
  const [bufnr, row, col, file, cwd] = ['bufnr', 'row', 'col', 'file', 'cwd'].map((key) =>
    field(raw, key),
  );
  if (
    !isCount(bufnr, 1) ||
    !isCount(row, 0) ||
    !isCount(col, 0) ||
    typeof file !== 'string' ||
    typeof cwd !== 'string'
  ) {
    throw new ActionError(`expected { bufnr, row, col, file, cwd }, got ${JSON.stringify(raw)}`);
  }
  return { bufnr, row, col, file, cwd, files_only: field(raw, 'files_only') === true };
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

/** Every Lua → host action: how Lua sends it, what the docs say, and its params' decoder. */
export const LUA_TO_HOST: { readonly [M in LuaToHostMethod]: LuaToHostSpec<M> } = {
  ping: { kind: 'request', params: 'ignored', answer: '`HostInfo`', section: 'ping', decode: none },
  'host:info': {
    kind: 'call',
    params: 'ignored',
    answer: '`HostInfo`',
    section: 'hostinfo',
    decode: none,
  },
  'provider:sdks': {
    kind: 'call',
    params: 'ignored',
    answer: 'SDK load report',
    section: 'providersdks',
    decode: none,
  },
  'log:level': {
    kind: 'notification or call',
    params: '`{level}`',
    answer: '`{level}`',
    section: 'loglevel',
    decode: (raw) => {
      const level = field(raw, 'level');
      if (!isLogLevel(level)) throw new ActionError(`unknown log level ${JSON.stringify(level)}`);
      return { level };
    },
  },
  'buffer:attach': {
    kind: 'notification or call',
    params: '`{bufnr}`',
    answer: '`{messages, tick}` or `nil`',
    section: 'bufferattach',
    decode: buf,
  },
  'buffer:detach': {
    kind: 'notification',
    params: '`{bufnr}`',
    answer: '`nil`',
    section: 'bufferdetach',
    decode: buf,
  },
  'buffer:trust': {
    kind: 'notification',
    params: '`{bufnr}`',
    answer: "`nil` (`:trust` changed the buffer's trust: its diagnostics are judged again)",
    section: 'frontmatter-and-templates',
    decode: buf,
  },
  'buffer:tree': {
    kind: 'call',
    params: '`{bufnr}`',
    answer: 'the parsed document or `nil`',
    section: 'buffertree',
    decode: buf,
  },
  'buffer:definition': {
    kind: 'call',
    params: '`{bufnr, row, col, file, cwd, files_only?}`',
    answer: '`{path}`, `{row}`, `{message}` or `nil`',
    section: 'navigation',
    decode: navigation,
  },
  'buffer:hover': {
    kind: 'call',
    params: '`{bufnr, row, col, file, cwd}`',
    answer: 'Markdown or `nil`',
    section: 'navigation',
    decode: navigation,
  },
  'frontmatter:languages': {
    kind: 'notification',
    params: '`{names}`',
    answer: '`nil`',
    section: 'frontmatter-and-templates',
    decode: (raw) => ({ names: strings(field(raw, 'names')) }),
  },
  'chat:send': {
    kind: 'notification',
    params: '`{bufnr, over_limit?, ticket?, state?}`',
    answer: '`nil` (the request runs on; with `ticket`, `chat.step_ended` later)',
    section: 'chatsend',
    decode: (raw) => ({
      bufnr: bufnrOf(raw),
      over_limit: field(raw, 'over_limit') === true,
      ...ticketOf(raw),
      ...pushedOf(field(raw, 'state')),
    }),
  },
  'chat:cancel': {
    kind: 'notification',
    params: '`{bufnr}`',
    answer: '`{cancelled}`',
    section: 'chatcancel',
    decode: buf,
  },
  'chat:cycle': {
    kind: 'notification',
    params: '`{bufnr, ticket?, state?}`',
    answer: '`nil` (`<C-]>`; with `ticket`, `chat.step_ended` later)',
    section: 'tools',
    decode: (raw) => ({
      bufnr: bufnrOf(raw),
      ...ticketOf(raw),
      ...pushedOf(field(raw, 'state')),
    }),
  },
  'editor:state': {
    kind: 'notification',
    params: '`{bufnr?, stale}`',
    answer: "`nil` (the host asks `editor.context` when it next needs the buffer's settings)",
    section: 'pushed-state',
    decode: (raw) => {
      const bufnr = field(raw, 'bufnr');
      return {
        ...(bufnr === undefined || bufnr === null ? {} : { bufnr: bufnrOf(raw) }),
        stale: field(raw, 'stale') === true,
      };
    },
  },
  'chat:status': {
    kind: 'call',
    params: '`{bufnr, verbose?}`',
    answer: '`{lines}`',
    section: 'commands',
    decode: (raw) => ({ bufnr: bufnrOf(raw), verbose: field(raw, 'verbose') === true }),
  },
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
  'approval:define': {
    kind: 'notification',
    params: '`{resolvers = {{name, priority?, description?}, …}}`',
    answer: '`nil`',
    section: 'approval-and-autopilot',
    decode: (raw) => ({ resolvers: listOf<LuaResolverSpec>(field(raw, 'resolvers')) }),
  },
  'autopilot:cancelled': {
    kind: 'notification',
    params: '`{bufnr, token}`',
    answer: '`nil`',
    section: 'approval-and-autopilot',
    decode: token,
  },
  'autopilot:status': {
    kind: 'call',
    params: '`{bufnr}`',
    answer: '`{lines, state, iteration}`',
    section: 'approval-and-autopilot',
    decode: buf,
  },
  'secrets:define': {
    kind: 'notification',
    params: '`{resolvers = {{name, priority}, …}}`',
    answer: '`nil`',
    section: 'credentials',
    decode: (raw) => ({ resolvers: listOf<LuaSecretsSpec>(field(raw, 'resolvers')) }),
  },
  'secrets:invalidate': {
    kind: 'notification',
    params: '`{kind, service}` or `{all = true}`',
    answer: '`nil`',
    section: 'credentials',
    decode: (raw) => {
      const kind = field(raw, 'kind');
      const service = field(raw, 'service');
      return {
        all: field(raw, 'all') === true,
        kind: typeof kind === 'string' ? kind : undefined,
        service: typeof service === 'string' ? service : undefined,
      };
    },
  },
  'sandbox:define': {
    kind: 'notification',
    params: '`{backends = {{name, priority, description?, replace?}, …}}`',
    answer: '`nil`',
    section: 'sandbox-backends',
    decode: (raw) => ({ backends: listOf<unknown>(field(raw, 'backends')) }),
  },
  'sandbox:status': {
    kind: 'call',
    params: '`{bufnr}`',
    answer: '`{lines, …}`',
    section: 'tools',
    decode: buf,
  },
  ...REVIEW_ACTIONS,
  ...MCP_ACTIONS,
  ...CONVERSATION_ACTIONS,
};

/**
 * The one Lua → host message that is not an action: an asynchronous request (`host.call`),
 * `[id, method, params]`, answered with `rpc.reply`.
 */
export const CALL = 'call';

export const CALL_DOC: Doc = {
  params: '`id, method, params`',
  answer: 'a later `rpc.reply`',
  section: 'call-asynchronous-requests',
};
