// Host → Lua: every method of `require("flemma.rpc").methods`, whether the host waits for it
// (request) or not (notification), and the types of its params and of Lua's answer.
import type { HookName, HookPayloads } from '../../core/hooks.js';
import type { AvailabilityAnswer } from '../../core/tools/sandbox/index.js';
import type { McpCatalog } from '../../core/tools/mcp/types.js';
import type { RequestRecord, SessionTotals } from '../../core/usage/session.js';
import type { ContextFigure } from '../../core/context/meter.js';
import type { Doc, Method } from './common.js';
import { FILES_TO_LUA, type FilesToLua } from './files.js';
import { HISTORY_TO_LUA, type HistoryToLua } from './history.js';
import { SLASH_TO_LUA, type SlashToLua } from './slash.js';
import { ACP_TO_LUA, type AcpToLua } from './acp.js';
import { ACP_FS_TO_LUA, type AcpFsToLua } from './acp-fs.js';
import type {
  ApplyBatch,
  ApplyBatchAnswer,
  ConfigAnswer,
  ContextAnswer,
  ContextParams,
  CursorParams,
  EditorFacts,
  LuaDecision,
  LuaSecretsAnswer,
  LuaTruncateFacts,
  StructurePayload,
  TemplateJob,
  TrustDiagnostic,
} from './wire.js';

/** How the host sends a method: `LuaBridge.call` (waits for the answer) or `LuaBridge.notify`. */
export type HostToLuaKind = 'request' | 'notification' | 'request or notification';

/** Every host → Lua method: its params and Lua's answer (`nil` arrives as null). */
export interface HostToLua extends FilesToLua, HistoryToLua, SlashToLua, AcpToLua, AcpFsToLua {
  'hooks.emit': Method<{ name: HookName; data: HookPayloads[HookName] }, null>;
  'buffer.apply_batch': Method<ApplyBatch, ApplyBatchAnswer>;
  'buffer.lock': Method<{ bufnr: number; owner?: string }, boolean>;
  'buffer.unlock': Method<{ bufnr: number; owner?: string }, boolean>;
  'buffer.write': Method<
    { bufnr: number; streaming?: boolean },
    { written: boolean; later?: boolean; error?: string }
  >;
  'sink.create': Method<{ name: string }, { bufnr: number; name: string }>;
  'sink.destroy': Method<{ bufnr: number }, boolean>;
  'progress.start': Method<{ bufnr: number; row: number }, boolean>;
  'progress.update': Method<
    { bufnr: number; phase: string; characters?: number; tool?: string; attempt?: number },
    boolean
  >;
  'progress.stop': Method<{ bufnr: number }, boolean>;
  'config.snapshot': Method<{ generation?: number }, ConfigAnswer>;
  'editor.context': Method<ContextParams, ContextAnswer>;
  'send.begin': Method<
    /** `row`: the `@Assistant:` line; `from`: the chat's last row, where its opening begins. */
    { bufnr: number; row: number; from: number; sink_name: string },
    { bufnr: number; name: string }
  >;
  'send.finish': Method<{ bufnr: number; sink: number }, { unlocked: boolean }>;
  'env.first': Method<{ names: string[] }, { name: string; value: string } | null>;
  'log.secrets': Method<{ values: string[] }, null>;
  'frontmatter.diagnostics': Method<{ bufnr: number; items: TrustDiagnostic[] }, null>;
  'trust.confirm': Method<{ bufnr: number; ids: string[] }, null>;
  /** The host took its held decision for a tree with a new digest (a trusted buffer records it). */
  'trust.seen': Method<{ bufnr: number; digest: string }, null>;
  'template.render': Method<
    {
      bufnr: number;
      digest: string | undefined;
      variables: Record<string, unknown>;
      jobs: TemplateJob[];
      tools: unknown[];
      /** A chat held in a file: its path and the trust its creator gave it (no buffer has it). */
      file?: { path: string; trusted: boolean };
    },
    { texts?: (string | string[])[]; error?: string; untrusted?: string }
  >;
  'secrets.resolve': Method<
    {
      name: string;
      credential: {
        kind: string;
        service: string;
        description: string;
        ttl: number | null;
        aliases: unknown[];
      };
    },
    LuaSecretsAnswer | null
  >;
  'approval.resolve': Method<ApprovalQuestion, LuaDecision | null>;
  'approval.config_decision': Method<ApprovalQuestion, LuaDecision | null>;
  /** The host's resume timer runs: an edit of the buffer cancels it (`autopilot:cancelled`). */
  'autopilot.watch': Method<{ bufnr: number; token: number }, boolean>;
  'autopilot.cancel': Method<{ bufnr: number; from_host?: boolean; quiet?: boolean }, null>;
  'tools.execute': Method<
    { call_id: string; name: string; input: unknown; ctx: Record<string, unknown> },
    null
  >;
  'tools.cancel': Method<{ call_id: string }, null>;
  'tools.require_approval': Method<
    { name: string; input: unknown; bufnr: number; tool_id: string; truncate: LuaTruncateFacts },
    { value?: unknown; error?: unknown } | null
  >;
  'tools.format_rejected': Method<{ name: string; input: unknown; reason: string }, string | null>;
  'tools.cmd_string': Method<{ name: string; input: unknown }, string | null>;
  'tools.format_cancelled': Method<{ name: string; input: unknown }, string | null>;
  'tools.facts': Method<{ bufnr: number }, EditorFacts>;
  'tools.spinner': Method<
    { bufnr: number; tool_id: string; row?: number; state: string; job_id?: number },
    null
  >;
  'tools.cursor': Method<CursorParams, null>;
  /** The last lines running calls printed (no lines: the call's view goes). */
  'tools.output': Method<{ bufnr: number; outputs: { tool_id: string; lines: string[] }[] }, null>;
  /** The step `<C-]>` started in Insert mode is over: the user has the word again. */
  /** The user's action with `ticket` is over: how it ended, and the row of a call that waits. */
  'chat.step_ended': Method<
    {
      bufnr: number;
      ticket: number;
      outcome: 'done' | 'refused' | 'waiting' | 'failed' | 'cancelled' | 'stopped';
      row?: number;
    },
    null
  >;
  'tools.previews': Method<{ bufnr: number; items: Record<string, unknown>[] }, null>;
  'sandbox.available': Method<{ name: string; settings: unknown }, AvailabilityAnswer>;
  'sandbox.wrap': Method<
    {
      name: string;
      argv: string[];
      policy: {
        rw_paths: string[];
        network: boolean;
        allow_privileged: boolean;
        hidden_paths: string[];
        read_only_paths: string[];
        env_unset: string[];
      };
      settings: unknown;
    },
    { argv?: unknown; error?: unknown } | unknown[] | null
  >;
  'sandbox.load': Method<
    { module: string },
    { name?: unknown; backend?: unknown; found?: boolean; error?: unknown } | null
  >;
  'chat.structure': Method<StructurePayload, boolean>;
  'usage.show': Method<
    {
      bufnr: number;
      request: RequestRecord;
      session: SessionTotals;
      min_cache_tokens?: number;
      /** The request's input against its model's context window (the context meter). */
      context?: ContextFigure;
    },
    null
  >;
  'usage.confirm': Method<{ bufnr: number; cost: number; limit: number; message: string }, null>;
  notify: Method<
    { message: string; level?: 'info' | 'warn' | 'error'; key?: string; report?: boolean },
    null
  >;
  'notify.retract': Method<{ key: string }, null>;
  'mcp.catalog': Method<{ servers: McpCatalog }, null>;
  'attention.signal': Method<
    { bufnr: number; reason: 'approval' | 'finished' | 'failed'; tools?: string[] },
    null
  >;
  'compact.open': Method<{ bufnr: number; path: string }, { opened: boolean; bufnr?: number }>;
  'rpc.reply': Method<
    { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string },
    null
  >;
}

/** A tool call for a Lua approval resolver (`name`: the resolver; `source`: a frontmatter's). */
export interface ApprovalQuestion {
  name?: string;
  source?: 'frontmatter';
  tool_name: string;
  input: unknown;
  ctx: { bufnr: number; tool_id: string };
}

export type HostToLuaMethod = keyof HostToLua;

export interface HostToLuaSpec extends Doc {
  readonly kind: HostToLuaKind;
}

/** Every host → Lua method: how the host sends it and what the docs say. */
export const HOST_TO_LUA = {
  'hooks.emit': {
    kind: 'request or notification',
    params: '`{name, data}`',
    answer: '`nil`',
    section: 'hooksemit',
  },
  'buffer.apply_batch': {
    kind: 'request',
    params: 'list of batches, or `{batches, after}`',
    answer: 'list of results, or `{results, after}`',
    section: 'bufferapply_batch',
  },
  'buffer.lock': {
    kind: 'notification',
    params: '`{bufnr, owner?}`',
    answer: 'boolean',
    section: 'bufferlock',
  },
  'buffer.unlock': {
    kind: 'notification',
    params: '`{bufnr, owner?}`',
    answer: 'boolean',
    section: 'bufferunlock',
  },
  'buffer.write': {
    kind: 'request',
    params: '`{bufnr, streaming?}`',
    answer: '`{written, later?, error?}`',
    section: 'bufferwrite',
  },
  'sink.create': {
    kind: 'request',
    params: '`{name}`',
    answer: '`{bufnr, name}`',
    section: 'chatsend',
  },
  'sink.destroy': { kind: 'request', params: '`{bufnr}`', answer: 'boolean', section: 'chatsend' },
  'progress.start': {
    kind: 'request',
    params: '`{bufnr, row}`',
    answer: 'boolean',
    section: 'progress',
  },
  'progress.update': {
    kind: 'notification',
    params: '`{bufnr, phase, characters?, tool?, attempt?}`',
    answer: 'boolean',
    section: 'progress',
  },
  'progress.stop': { kind: 'request', params: '`{bufnr}`', answer: 'boolean', section: 'progress' },
  'config.snapshot': {
    kind: 'request',
    params: '`{generation?}`',
    answer: '`{generation, config?}`',
    section: 'configsnapshot',
  },
  'editor.context': {
    kind: 'request',
    params: '`{bufnr, names, generation?, digest?, frontmatter?}`',
    answer: '`{generation, config?, facts, env, trust, switched?, frontmatter?}`',
    section: 'editorcontext',
  },
  'send.begin': {
    kind: 'request',
    params: '`{bufnr, row, from, sink_name}`',
    answer: '`{bufnr, name}` (the sink)',
    section: 'chatsend',
  },
  'send.finish': {
    kind: 'request',
    params: '`{bufnr, sink}`',
    answer: '`{unlocked}`',
    section: 'chatsend',
  },
  'env.first': {
    kind: 'request',
    params: '`{names}`',
    answer: '`{name, value}` or `nil`',
    section: 'envfirst',
  },
  'log.secrets': {
    kind: 'notification',
    params: '`{values}`',
    answer: '`nil`',
    section: 'logsecrets',
  },
  'frontmatter.diagnostics': {
    kind: 'notification',
    params: '`{bufnr, items}`',
    answer: '`nil`',
    section: 'frontmatter-and-templates',
  },
  'trust.confirm': {
    kind: 'notification',
    params: '`{bufnr, ids}`',
    answer: '`nil`',
    section: 'frontmatter-and-templates',
  },
  'trust.seen': {
    kind: 'notification',
    params: '`{bufnr, digest}`',
    answer: '`nil` (a trusted buffer records the digest)',
    section: 'frontmatter-and-templates',
  },
  'template.render': {
    kind: 'request',
    params: '`{bufnr, digest?, variables, jobs, tools, file?}`',
    answer: '`{texts}`, `{error}` (with the buffer line) or `{untrusted}`',
    section: 'frontmatter-and-templates',
  },
  'secrets.resolve': {
    kind: 'request',
    params: '`{name, credential}`',
    answer: '`{supported, value?, ttl?, diagnostics}` or `{error, diagnostics}`',
    section: 'credentials',
  },
  'approval.resolve': {
    kind: 'request',
    params: '`{name, tool_name, input, ctx}`',
    answer: '`{decision}` or `{error}`',
    section: 'approval-and-autopilot',
  },
  'approval.config_decision': {
    kind: 'request',
    params: '`{source?, tool_name, input, ctx}`',
    answer: '`{decision}` or `{error}`',
    section: 'approval-and-autopilot',
  },
  'autopilot.watch': {
    kind: 'notification',
    params: '`{bufnr, token}`',
    answer: 'boolean (an edit sends `autopilot:cancelled`)',
    section: 'approval-and-autopilot',
  },
  'autopilot.cancel': {
    kind: 'notification',
    params: '`{bufnr, from_host?, quiet?}`',
    answer: '`nil`',
    section: 'approval-and-autopilot',
  },
  'tools.execute': {
    kind: 'notification',
    params: '`{call_id, name, input, ctx}`',
    answer: 'later `tools:result`',
    section: 'tools',
  },
  'tools.cancel': {
    kind: 'notification',
    params: '`{call_id}`',
    answer: '`nil`',
    section: 'tools',
  },
  'tools.require_approval': {
    kind: 'request',
    params: '`{name, input, bufnr, tool_id, truncate}`',
    answer: '`{value}` or `{error}`',
    section: 'tools',
  },
  'tools.format_rejected': {
    kind: 'request',
    params: '`{name, input, reason}`',
    answer: 'text or `nil`',
    section: 'tools',
  },
  'tools.cmd_string': {
    kind: 'request',
    params: '`{name, input}`',
    answer: 'text or `nil`',
    section: 'tools',
  },
  'tools.format_cancelled': {
    kind: 'request',
    params: '`{name, input}`',
    answer: 'text or `nil`',
    section: 'tools',
  },
  'tools.facts': {
    kind: 'request',
    params: '`{bufnr}`',
    answer: '`{cwd, filename, sandbox_override, editor_dirs, servers}`',
    section: 'tools',
  },
  'tools.spinner': {
    kind: 'notification',
    params: '`{bufnr, tool_id, row?, state, job_id?}`',
    answer: '`nil`',
    section: 'tools',
  },
  'tools.cursor': {
    kind: 'notification',
    params: '`{bufnr, row}` or `{bufnr, tool_id, mode}`',
    answer: '`nil`',
    section: 'tools',
  },
  'tools.output': {
    kind: 'notification',
    params: '`{bufnr, outputs = {{tool_id, lines}, …}}`',
    answer: '`nil`',
    section: 'tools',
  },
  'chat.step_ended': {
    kind: 'notification',
    params: '`{bufnr, ticket, outcome, row?}`',
    answer: '`nil`',
    section: 'tools',
  },
  'tools.previews': {
    kind: 'notification',
    params: '`{bufnr, items}`',
    answer: '`nil`',
    section: 'tools',
  },
  'sandbox.available': {
    kind: 'request',
    params: '`{name, settings}`',
    answer: '`{ok, error?}`',
    section: 'sandbox-backends',
  },
  'sandbox.wrap': {
    kind: 'request',
    params: '`{name, argv, policy, settings}`',
    answer: '`{argv}` or `{error}`',
    section: 'sandbox-backends',
  },
  'sandbox.load': {
    kind: 'request',
    params: '`{module}`',
    answer: '`{name, backend}`, `{found = false}` or `{error}`',
    section: 'sandbox-backends',
  },
  'chat.structure': {
    kind: 'request',
    params: '`{bufnr, tick, markers, diagnostics}`',
    answer: 'boolean',
    section: 'chatstructure',
  },
  'usage.show': {
    kind: 'notification',
    params: '`{bufnr, request, session, min_cache_tokens?, context?}`',
    answer: '`nil`',
    section: 'usage',
  },
  'usage.confirm': {
    kind: 'notification',
    params: '`{bufnr, cost, limit, message}`',
    answer: '`nil` (a yes sends `chat:send` with `over_limit`)',
    section: 'usage',
  },
  notify: {
    kind: 'notification',
    params: '`{message, level?, key?, report?}`',
    answer: '`nil`',
    section: 'notify',
  },
  'notify.retract': {
    kind: 'notification',
    params: '`{key}`',
    answer: '`nil`',
    section: 'notifyretract',
  },
  'mcp.catalog': {
    kind: 'notification',
    params: "`{servers}` (each connected server's `{prompts, resources}`)",
    answer: '`nil`',
    section: 'mcpcatalog',
  },
  'attention.signal': {
    kind: 'notification',
    params: '`{bufnr, reason, tools?}`',
    answer: '`nil`',
    section: 'attentionsignal',
  },
  'compact.open': {
    kind: 'request',
    params: '`{bufnr, path}`',
    answer: '`{opened, bufnr?}`',
    section: 'chatcompact',
  },
  'rpc.reply': {
    kind: 'notification',
    params: '`{id, ok, result?, error?}`',
    answer: '`nil`',
    section: 'rpcreply',
  },
  ...FILES_TO_LUA,
  ...HISTORY_TO_LUA,
  ...SLASH_TO_LUA,
  ...ACP_TO_LUA,
  ...ACP_FS_TO_LUA,
} as const satisfies { readonly [M in HostToLuaMethod]: HostToLuaSpec };

type KindOf<M extends HostToLuaMethod> = (typeof HOST_TO_LUA)[M]['kind'];

/** The methods the host may call and wait for. */
export type LuaRequest = {
  [M in HostToLuaMethod]: KindOf<M> extends 'notification' ? never : M;
}[HostToLuaMethod];

/** The methods the host may send without waiting. */
export type LuaNotification = {
  [M in HostToLuaMethod]: KindOf<M> extends 'request' ? never : M;
}[HostToLuaMethod];

export type LuaParams<M extends HostToLuaMethod> = HostToLua[M]['params'];
export type LuaAnswer<M extends HostToLuaMethod> = HostToLua[M]['result'];
