// Lua → host: every action the host answers, how Lua sends it, the types of its params (as the
// handler receives them) and of its answer, and the decoder that checks its params on arrival.
import { isLogLevel, type LogLevel } from '../../core/log.js';
import type { ChatDocument } from '../../core/chat/ast.js';
import type { SdkLoadReport, SdkName } from '../../core/provider/sdk.js';
import type { SandboxStatus } from '../../core/tools/sandbox/index.js';
import type { DefinitionAnswer } from '../../core/chat/navigation.js';
import { ActionError, bufnrOf, field, type Doc, type Method } from './common.js';
import { CONVERSATION_ACTIONS, type ConversationActions } from './conversation.js';
import { HISTORY_ACTIONS, type HistoryActions } from './history.js';
import { type Buf, buf, listOf, none, strings, type Ticket, ticketOf } from './decoders.js';
import { COMPLETE_ACTIONS, type CompleteActions } from './complete.js';
import { MCP_ACTIONS, type McpActions } from './mcp.js';
import { type PushedState, pushedOf } from './pushed.js';
import { REVIEW_ACTIONS, type ReviewActions } from './review.js';
import { TASK_ACTIONS, type TaskActions } from './tasks.js';
import { CHAT_ACTIONS, type ChatActions } from './chats.js';
import { ACP_ACTIONS, type AcpActions } from './acp.js';
import { TOOL_ACTIONS, type ToolActions } from './tools.js';
import type {
  HostInfo,
  LuaResolverSpec,
  LuaSecretsSpec,
  NavigationParams,
  StatusAnswer,
} from './wire.js';

/** How Lua sends an action: `vim.rpcrequest` (only `ping`), `host.call`, `host.notify`. */
export type LuaToHostKind = 'request' | 'call' | 'notification' | 'notification or call';

/** Every Lua → host action: its params (as the handler receives them, decoded) and its answer. */
export interface LuaToHost
  extends
    ToolActions,
    ReviewActions,
    McpActions,
    ConversationActions,
    TaskActions,
    HistoryActions,
    CompleteActions,
    ChatActions,
    AcpActions {
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
  'chat:send': Method<Step & { over_limit: boolean }, null>;
  'chat:cancel': Method<Buf, { cancelled: boolean }>;
  /** `<C-]>`; `ticket`: answered by `chat.step_ended`. */
  'chat:cycle': Method<Step, null>;
  /**
   * What the host holds of a buffer's settings went stale (every buffer's without `bufnr`): the
   * configuration's generation, a trust decision, the working directory, the buffer's name.
   */
  'editor:state': Method<{ bufnr?: number; stale: boolean }, null>;
  'chat:status': Method<Buf & { verbose: boolean }, StatusAnswer>;
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

/** The params of an action that starts a step of the chat: `chat:send`, `chat:cycle`. */
type Step = Buf & Ticket & { state?: PushedState };

const step = (raw: unknown): Step => ({
  bufnr: bufnrOf(raw),
  ...ticketOf(raw),
  ...pushedOf(field(raw, 'state')),
});

const token = (raw: unknown): Buf & { token: number } => {
  const value = field(raw, 'token');
  return { bufnr: bufnrOf(raw), token: typeof value === 'number' ? value : -1 };
};

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
    decode: (raw) => ({ ...step(raw), over_limit: field(raw, 'over_limit') === true }),
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
    decode: step,
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
    answer:
      '`{lines, used}` (`used`: the `provider` and `model` the buffer uses, each `{value, layer}`)',
    section: 'commands',
    decode: (raw) => ({ bufnr: bufnrOf(raw), verbose: field(raw, 'verbose') === true }),
  },
  ...TOOL_ACTIONS,
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
  ...TASK_ACTIONS,
  ...HISTORY_ACTIONS,
  ...COMPLETE_ACTIONS,
  ...CHAT_ACTIONS,
  ...ACP_ACTIONS,
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
