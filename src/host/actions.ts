// The host's one dispatch table: every method Lua can call, by name.
import { isLogLevel } from '../core/log.js';
import { SDK_NAMES, type SdkName } from '../core/provider/sdk.js';
import { type HostContext, HOST_VERSION, SOURCE_HASH } from './context.js';

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
    await ctx.documents.detach(bufnrOf(params));
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
    // NOTE: answered at once; the request runs on, and reports through hooks and the buffer.
    ctx.sends.send(bufnr).catch((error: unknown) => {
      ctx.logger.error(`send of buffer ${String(bufnr)} failed`, error);
      const reason = error instanceof Error ? error.message : String(error);
      ctx.lua.notify('notify', {
        level: 'error',
        message: `the send failed: ${reason} (details in ${ctx.logFile ?? 'the log'})`,
      });
    });
    return null;
  },
  /** Cancel the buffer's running request; tells the user when there is none. */
  'chat:cancel': (ctx, params) => {
    const cancelled = ctx.sends.cancel(bufnrOf(params));
    if (!cancelled) ctx.lua.notify('notify', { level: 'info', message: 'Nothing to cancel' });
    return { cancelled };
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
