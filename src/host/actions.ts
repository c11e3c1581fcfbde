// The host's one dispatch table: every method Lua can call, by name.
import { isLogLevel } from '../core/log.js';
import { SDK_NAMES, type SdkName } from '../core/provider/sdk.js';
import { type HostContext, HOST_VERSION, SOURCE_HASH } from './context.js';
import { defineLuaBackends } from './sandbox.js';
import type { DeclarativeSettings } from './tools/catalogue.js';
import type { LuaToolSpec } from './tools/lua-tools.js';
import type { LuaResolverSpec } from './approval.js';
import type { LuaSecretsSpec } from './secrets.js';
import { mcpStatusLines } from '../core/tools/mcp/status.js';

export type Action = (ctx: HostContext, params: unknown) => unknown;

export class ActionError extends Error {
  override name = 'ActionError';
}

export interface HostInfo {
  pid: number;
  version: string;
  source_hash: string;
  node: string;
  uptime_ms: number;
  log_file: string | null;
  actions: string[];
  /** Resident memory now and its peak so far, in bytes. */
  memory: { rss: number; max_rss: number };
}

function hostInfo(ctx: HostContext): HostInfo {
  return {
    pid: process.pid,
    version: HOST_VERSION,
    source_hash: SOURCE_HASH,
    node: process.version,
    uptime_ms: Date.now() - ctx.startedAt,
    log_file: ctx.logFile ?? null,
    actions: Object.keys(actions).sort(),
    memory: { rss: process.memoryUsage().rss, max_rss: process.resourceUsage().maxRSS * 1024 },
  };
}

declare const __FLEMMA_SDK_VERSIONS__: Record<string, string> | undefined;
const SDK_VERSIONS: Record<string, string> =
  typeof __FLEMMA_SDK_VERSIONS__ === 'object' ? __FLEMMA_SDK_VERSIONS__ : {};
const SDK_PACKAGES: Record<SdkName, string> = {
  anthropic: '@anthropic-ai/sdk',
  genai: '@google/genai',
  openai: 'openai',
};

export const actions: Record<string, Action> = {
  /** Instant liveness check; the only method Lua may call with a blocking `rpcrequest`. */
  ping: (ctx) => hostInfo(ctx),
  'host:info': (ctx) => hostInfo(ctx),
  /** Load every provider SDK (lazily, as a send would) and report versions and load times. */
  'provider:sdks': async (ctx) => {
    const report = await ctx.sdks.probe();
    return Object.fromEntries(
      SDK_NAMES.map((name) => {
        const pkg = SDK_PACKAGES[name];
        return [name, { ...report[name], package: pkg, version: SDK_VERSIONS[pkg] ?? 'unknown' }];
      }),
    );
  },
  /** Follow a chat buffer: keep its tree current and show its structure. */
  'buffer:attach': async (ctx, params) => {
    const state = await ctx.documents.attach(bufnrOf(params));
    return state === undefined
      ? null
      : { messages: state.document.messages.length, tick: state.tick };
  },
  'buffer:detach': async (ctx, params) => {
    const bufnr = bufnrOf(params);
    ctx.forget(bufnr);
    await ctx.documents.detach(bufnr);
    return null;
  },
  /** The parsed tree of a followed buffer, once every change received so far is parsed. */
  'buffer:tree': async (ctx, params) => {
    const state = await ctx.documents.parsed(bufnrOf(params));
    return state === undefined ? null : state.document;
  },
  /** Send the buffer's conversation and stream the reply into it (the third phase of <C-]>). */
  'chat:send': (ctx, params) => {
    const bufnr = bufnrOf(params);
    // `over_limit`: the user said yes to sending past `limits.max_session_cost`.
    const overLimit = (params as { over_limit?: unknown }).over_limit === true;
    // NOTE: answered at once; the request runs on, and reports through hooks and the buffer.
    ctx.sessions
      .of(bufnr)
      .send(undefined, { overLimit })
      .catch((error: unknown) => {
        ctx.logger.error(`send of buffer ${String(bufnr)} failed`, error);
        const reason = error instanceof Error ? error.message : String(error);
        ctx.lua.notify('notify', {
          level: 'error',
          message: `the send failed: ${reason} (details in ${ctx.logFile ?? 'the log'})`,
        });
      });
    return null;
  },
  /** `:Flemma usage:estimate`: count the next request's input tokens with the provider. */
  'usage:estimate': (ctx, params) => ctx.requests.estimate(bufnrOf(params)),
  /**
   * `<C-c>`: the buffer's running (or queued) request, else its oldest running tool; tells the
   * user when there is nothing.
   */
  'chat:cancel': async (ctx, params) => ({
    cancelled: await ctx.sessions.of(bufnrOf(params)).cancel(),
  }),
  /** `<C-]>`: placeholders, execution of approved calls, then the send. */
  'chat:cycle': (ctx, params) => {
    // A step never fails: its errors are logged by the session.
    void ctx.sessions.of(bufnrOf(params)).step(true);
    return null;
  },
  /** Lua's approval resolvers (names, priorities; the functions stay in Neovim). */
  'approval:define': (ctx, params) => {
    const list = (params as { resolvers?: unknown } | null)?.resolvers;
    ctx.approval.defineFromLua(Array.isArray(list) ? (list as LuaResolverSpec[]) : []);
    return null;
  },
  /** Lua's credential resolvers (names, priorities; the functions stay in Neovim). */
  'secrets:define': (ctx, params) => {
    const list = (params as { resolvers?: unknown } | null)?.resolvers;
    ctx.secrets.defineFromLua(Array.isArray(list) ? (list as LuaSecretsSpec[]) : []);
    return null;
  },
  /** `require("flemma.secrets").invalidate(kind, service)` / `invalidate_all()`. */
  'secrets:invalidate': (ctx, params) => {
    const p = (params ?? {}) as { kind?: unknown; service?: unknown; all?: unknown };
    if (p.all === true) ctx.secrets.invalidateAll();
    else if (typeof p.kind === 'string' && typeof p.service === 'string') {
      ctx.secrets.invalidate(p.kind, p.service);
    }
    return null;
  },
  /** Lua: a scheduled automatic continue is due (or was cancelled by an edit). */
  'autopilot:resume': (ctx, params) => {
    const p = (params ?? {}) as { bufnr?: unknown; token?: unknown };
    ctx.sessions
      .of(bufnrOf(params))
      .conversation.autopilot.resume(typeof p.token === 'number' ? p.token : -1)
      .catch((error: unknown) => {
        ctx.logger.error('autopilot resume failed', error);
      });
    return null;
  },
  'autopilot:cancelled': (ctx, params) => {
    const p = (params ?? {}) as { token?: unknown };
    ctx.sessions
      .get(bufnrOf(params))
      ?.conversation.autopilot.cancelled(typeof p.token === 'number' ? p.token : -1);
    return null;
  },
  'autopilot:status': (ctx, params) => {
    const bufnr = bufnrOf(params);
    const pilot = ctx.sessions.get(bufnr)?.conversation.autopilot;
    const state = pilot?.state ?? 'idle';
    const iteration = pilot?.iteration ?? 0;
    const lines = [
      `autopilot in buffer ${String(bufnr)}: ${state}, ${String(iteration)} consecutive tool turn(s)`,
    ];
    return { lines, state, iteration };
  },
  /** `:Flemma status [verbose]`: the buffer's settings, each with the layer that set it. */
  'chat:status': async (ctx, params) => {
    const verbose = (params as { verbose?: unknown } | null)?.verbose === true;
    return { lines: await ctx.commands.status(bufnrOf(params), verbose) };
  },
  /** `:Flemma tool:why`: the resolver that decided the call under the cursor. */
  'tool:why': async (ctx, params) => {
    const row = rowOf(params);
    const text = await ctx.commands.why(bufnrOf(params), row ?? 0);
    ctx.lua.notify('notify', { level: 'info', message: text });
    return { text };
  },
  /** `:Flemma tool:approve` / `tool:reject [message]`: rewrite the status of the block at the cursor. */
  'tool:approve': async (ctx, params) => {
    await ctx.commands.setStatusAt(bufnrOf(params), rowOf(params) ?? 0, 'approved');
    return null;
  },
  'tool:reject': async (ctx, params) => {
    const message = (params as { message?: unknown } | null)?.message;
    await ctx.commands.setStatusAt(
      bufnrOf(params),
      rowOf(params) ?? 0,
      'rejected',
      typeof message === 'string' && message !== '' ? message : undefined,
    );
    return null;
  },
  /** `:Flemma tool:approve-always`: approve the call at the cursor and remember it for the buffer. */
  'tool:approve-always': async (ctx, params) => {
    const entry = await ctx.commands.approveAlwaysAt(bufnrOf(params), rowOf(params) ?? 0);
    return entry ?? null;
  },
  /** `:Flemma tool:always`: the buffer's "always" approvals and YOLO state. */
  'tool:always': async (ctx, params) => {
    const bufnr = bufnrOf(params);
    const lines = await ctx.commands.sessionLines(bufnr);
    return { lines, entries: ctx.approval.session.list(bufnr) };
  },
  /** `:Flemma tool:forget-always [tool]`. */
  'tool:forget-always': (ctx, params) => {
    const tool = (params as { tool?: unknown } | null)?.tool;
    const removed = ctx.commands.forgetAlways(
      bufnrOf(params),
      typeof tool === 'string' && tool !== '' ? tool : undefined,
    );
    return { removed };
  },
  /** `:Flemma tool:yolo [on|off|toggle]`. */
  'tool:yolo': async (ctx, params) => {
    const mode = (params as { mode?: unknown } | null)?.mode;
    const on = await ctx.commands.setYolo(
      bufnrOf(params),
      mode === 'on' || mode === 'off' ? mode : 'toggle',
    );
    return { yolo: on };
  },
  /** `:Flemma tool:cancel-pending`: every call waiting in the buffer gets a cancelled result. */
  'tool:cancel-pending': async (ctx, params) => {
    const cancelled = await ctx.commands.cancelPending(bufnrOf(params));
    if (cancelled === 0) {
      ctx.lua.notify('notify', { level: 'info', message: 'No tool call is waiting' });
    }
    return { cancelled };
  },
  /** Frontmatter languages registered in Lua (`require("flemma.frontmatter").register_language`). */
  /** `:trust` (or `++deny`, `++remove`) changed the buffer's trust: its diagnostics again. */
  'buffer:trust': (ctx, params) => {
    ctx.trust.trustChanged(bufnrOf(params));
    return null;
  },
  'frontmatter:languages': (ctx, params) => {
    const names = (params as { names?: unknown } | null)?.names;
    ctx.documents.setFrontmatterLanguages(
      Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : [],
    );
    return null;
  },
  /** Lua's tool definitions (no functions) and how many of its async sources are still loading. */
  'tools:define': (ctx, params) => {
    const p = (params ?? {}) as {
      tools?: unknown;
      pending?: unknown;
      js_modules?: unknown;
      declarative?: unknown;
      mcp?: unknown;
    };
    // MCP servers first, so that their discovery counts as loading before Lua's tools are in.
    if (p.mcp !== undefined) ctx.catalogue.configureMcp(p.mcp);
    const tools = Array.isArray(p.tools) ? (p.tools as LuaToolSpec[]) : [];
    const pending = typeof p.pending === 'number' ? p.pending : 0;
    const modules = Array.isArray(p.js_modules)
      ? p.js_modules.filter((m): m is string => typeof m === 'string')
      : [];
    ctx.catalogue.defineFromLua(tools, pending, modules, declarativeSettings(p.declarative));
    return null;
  },
  /** Lua's sandbox backends (no functions): `{ backends = { {name, priority?, description?, replace?}, … } }`. */
  'sandbox:define': (ctx, params) => {
    const list = (params as { backends?: unknown } | null)?.backends;
    const problems = defineLuaBackends(ctx.lua, Array.isArray(list) ? (list as unknown[]) : []);
    for (const message of problems) ctx.lua.notify('notify', { level: 'warn', message });
    return null;
  },
  /** A Lua tool finished: `{ call_id, result = { success, output?, error? } }`. */
  'tools:result': (ctx, params) => {
    const p = (params ?? {}) as { call_id?: unknown; result?: unknown };
    if (typeof p.call_id === 'string') {
      ctx.luaTools.result(p.call_id, p.result ?? {});
    }
    return null;
  },
  /** `<M-CR>`: run the call under the cursor (`row` is 0-based). */
  'tool:execute': (ctx, params) => {
    const bufnr = bufnrOf(params);
    const row = rowOf(params) ?? 0;
    ctx.commands.executeAt(bufnr, row).catch((error: unknown) => {
      ctx.logger.error(`executing the tool at row ${String(row)} failed`, error);
    });
    return null;
  },
  'tool:cancel': async (ctx, params) => {
    const bufnr = bufnrOf(params);
    const cancelled = await ctx.executor.cancelAt(bufnr, rowOf(params));
    if (!cancelled) ctx.lua.notify('notify', { level: 'info', message: 'No tool is running' });
    return { cancelled };
  },
  'tool:cancel-all': (ctx) => {
    const count = ctx.executor.cancelAll();
    ctx.lua.notify('notify', {
      level: 'info',
      message: count === 0 ? 'No tool is running' : `Cancelled ${String(count)} tool(s)`,
    });
    return { cancelled: count };
  },
  'tool:list': (ctx) => ctx.executor.list(),
  /** `:Flemma mcp:status`: every configured MCP server, as lines and as data. */
  'mcp:status': (ctx) => {
    const servers = ctx.catalogue.mcp.status();
    return { lines: mcpStatusLines(servers), servers };
  },
  /** `:Flemma mcp:restart [server]`: reconnect one server, or all of them. */
  'mcp:restart': (ctx, params) => {
    const server = (params as { server?: unknown } | null)?.server;
    const names = ctx.catalogue.mcp.restart(
      typeof server === 'string' && server !== '' ? server : undefined,
    );
    ctx.lua.notify('notify', {
      level: 'info',
      message:
        names.length === 0 ? 'MCP: no server is configured' : `MCP: restarting ${names.join(', ')}`,
    });
    return { restarted: names };
  },
  'sandbox:status': (ctx, params) => ctx.commands.sandboxStatus(bufnrOf(params)),
  'tool:background': async (ctx, params) => {
    const bufnr = bufnrOf(params);
    const moved = await ctx.executor.background(bufnr, rowOf(params));
    if (!moved) {
      ctx.lua.notify('notify', {
        level: 'info',
        message: 'No running tool to move to the background',
      });
    }
    return { moved };
  },
  'log:level': (ctx, params) => {
    const level = (params as { level?: unknown } | null)?.level;
    if (!isLogLevel(level)) {
      throw new ActionError(`unknown log level ${JSON.stringify(level)}`);
    }
    ctx.logger.level = level;
    return { level };
  },
};

function rowOf(params: unknown): number | null {
  const row = (params as { row?: unknown } | null)?.row;
  return typeof row === 'number' && Number.isInteger(row) && row >= 0 ? row : null;
}

function bufnrOf(params: unknown): number {
  const bufnr = (params as { bufnr?: unknown } | null)?.bufnr;
  if (typeof bufnr !== 'number' || !Number.isInteger(bufnr) || bufnr <= 0) {
    throw new ActionError(`expected { bufnr = <buffer number> }, got ${JSON.stringify(params)}`);
  }
  return bufnr;
}

/** Run an action by name; unknown names are an error that says what exists. */
export async function dispatch(
  ctx: HostContext,
  method: string,
  params: unknown,
): Promise<unknown> {
  const action = Object.prototype.hasOwnProperty.call(actions, method)
    ? actions[method]
    : undefined;
  if (action === undefined) {
    throw new ActionError(
      `unknown method '${method}' (known: ${Object.keys(actions).sort().join(', ')})`,
    );
  }
  return await action(ctx, params);
}

/** `declarative = { dirs = { { path, optional? } }, env = { … } }` from `tools:define`. */
function declarativeSettings(raw: unknown): DeclarativeSettings | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const table = raw as { dirs?: unknown; env?: unknown };
  const dirs: DeclarativeSettings['dirs'] = [];
  for (const item of Array.isArray(table.dirs) ? (table.dirs as unknown[]) : []) {
    const entry = item as { path?: unknown; optional?: unknown } | null;
    if (typeof entry?.path !== 'string' || entry.path === '') continue;
    dirs.push(
      entry.optional === true ? { path: entry.path, optional: true } : { path: entry.path },
    );
  }
  const env = Array.isArray(table.env)
    ? (table.env as unknown[]).filter((n): n is string => typeof n === 'string')
    : [];
  return { dirs, env };
}
