// The host's dispatch: a typed handler for every Lua → host action of the protocol
// (`src/editor/protocol/`), which also decodes (and checks) each action's params.
import type { SdkName } from '../core/provider/sdk.js';
import { type Host, HOST_VERSION, SOURCE_HASH } from './wiring.js';
import { defineLuaBackends } from './sandbox.js';
import { promptChatText } from '../core/tools/mcp/prompt-text.js';
import { mcpResourceLines, mcpStatusLines } from '../core/tools/mcp/status.js';
import { definition, hover } from './navigation.js';
import { cutOffEnding } from '../core/chat/recovery.js';
import { formatSizeForLua, truncateForLua, writableForLua } from './lua-tool-helpers.js';
import {
  ActionError,
  type ActionParams,
  type ActionResult,
  LUA_TO_HOST,
  type LuaToHostMethod,
} from '../editor/protocol/index.js';
import type { HostInfo } from '../editor/protocol/wire.js';
import { trace } from '../editor/trace.js';
import { nodeTruncateFs } from '../core/tools/truncate.js';
import { outputAt } from './tools/live-output.js';
import { decideChildCall, listTasks, rejectedWith, returnOf } from './tasks/commands.js';
import { runBufferFile } from '../files/command.js';
import { completeItems } from './complete.js';
import { listChats } from './chats/action.js';
import { configuredAgents } from './acp/connect.js';

export { ActionError };
export type { HostInfo };

/** The handler of one action: its params decoded, its answer what the protocol says. */
export type Action<M extends LuaToHostMethod> = (
  ctx: Host,
  params: ActionParams<M>,
) => ActionResult<M> | Promise<ActionResult<M>>;

function hostInfo(ctx: Host): HostInfo {
  return {
    pid: process.pid,
    version: HOST_VERSION,
    source_hash: SOURCE_HASH,
    node: process.version,
    uptime_ms: Date.now() - ctx.startedAt,
    log_file: ctx.logFile ?? null,
    actions: Object.keys(actions).sort(),
    memory: { rss: process.memoryUsage().rss, max_rss: process.resourceUsage().maxRSS * 1024 },
    busy: ctx.sessions.any((session) => session.busy) || ctx.executor.list().length > 0,
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

/** What an action that runs on does when it fails: logged, and said to the user. */
function failed(ctx: Host, what: string): (error: unknown) => void {
  return (error) => {
    ctx.logger.error(`${what} failed`, error);
    ctx.notify.error(`${what} failed: ${error instanceof Error ? error.message : String(error)}`);
  };
}

/** The handler of an action that answers nothing (`nil`): Lua only tells the host something. */
function told<P>(run: (ctx: Host, params: P) => void): (ctx: Host, params: P) => null {
  return (ctx, params) => {
    run(ctx, params);
    return null;
  };
}

export const actions: { readonly [M in LuaToHostMethod]: Action<M> } = {
  /** Instant liveness check; the only method Lua may call with a blocking `rpcrequest`. */
  ping: (ctx) => hostInfo(ctx),
  'host:info': (ctx) => hostInfo(ctx),
  /** Load every provider SDK (lazily, as a send would) and report versions and load times. */
  'provider:sdks': async (ctx) => {
    const report = await ctx.sdks.probe();
    const entry = (name: SdkName): ActionResult<'provider:sdks'>[SdkName] => {
      const pkg = SDK_PACKAGES[name];
      return { ...report[name], package: pkg, version: SDK_VERSIONS[pkg] ?? 'unknown' };
    };
    return { anthropic: entry('anthropic'), genai: entry('genai'), openai: entry('openai') };
  },
  /** Follow a chat buffer: keep its tree current and show its structure. */
  'buffer:attach': async (ctx, { bufnr }) => {
    const state = await ctx.documents.attach(bufnr);
    return state === undefined
      ? null
      : { messages: state.document.messages.length, tick: state.tick };
  },
  'buffer:detach': async (ctx, { bufnr }) => {
    ctx.forget(bufnr);
    await ctx.documents.detach(bufnr);
    return null;
  },
  /** The parsed tree of a followed buffer, once every change received so far is parsed. */
  'buffer:tree': async (ctx, { bufnr }) => {
    const state = await ctx.documents.parsed(bufnr);
    return state === undefined ? null : state.document;
  },
  /**
   * `gd`, `gf` and the language server's definition: `{bufnr, row, col, file, cwd, files_only?}`
   * → `{path}`, `{row}`, `{message}`, or null (`gf`: no reference there).
   */
  'buffer:definition': (ctx, params) => definition(ctx.documents, params),
  /** The language server's hover: the same params → Markdown, or null. */
  'buffer:hover': (ctx, params) => hover(ctx.documents, params),
  /** Send the buffer's conversation and stream the reply into it (the third phase of <C-]>). */
  'chat:send': told((ctx, { bufnr, over_limit, ticket, state }) => {
    // `over_limit`: the user said yes to sending past `limits.max_session_cost`.
    // NOTE: answered at once; the request runs on, and reports through hooks and the buffer.
    const session = ctx.sessions.of(bufnr);
    void session.act(ticket ?? undefined, () =>
      session.sendPushed(state, { overLimit: over_limit }).catch((error: unknown) => {
        ctx.logger.error(`send of buffer ${String(bufnr)} failed`, error);
        const reason = error instanceof Error ? error.message : String(error);
        ctx.notify.error(`the send failed: ${reason} (details in ${ctx.logFile ?? 'the log'})`);
      }),
    );
  }),
  /**
   * `:Flemma compact`: the chat's model summarises it into a new file beside it, which Lua then
   * opens. Answered at once; `<C-c>` cancels it like a request.
   */
  'chat:compact': told((ctx, { bufnr, file, modified }) => {
    ctx.sessions
      .of(bufnr)
      .compact({ file, modified })
      .catch((error: unknown) => {
        ctx.logger.error(`compact of buffer ${String(bufnr)} failed`, error);
        const reason = error instanceof Error ? error.message : String(error);
        ctx.notify.error(`compact failed: ${reason}`);
      });
  }),
  /** `:Flemma fork` (docs/history.md): a new chat up to the message at `row`, opened. */
  'chat:fork': told((ctx, { bufnr, file, row }) => {
    ctx.history.fork(bufnr, file, row).catch(failed(ctx, 'fork'));
  }),
  /** `:Flemma rewind`: the buffer's session checks and undoes; the outcome is told. */
  'chat:rewind': told((ctx, { bufnr, file, row }) => {
    ctx.sessions.of(bufnr).rewind(file, { row }).catch(failed(ctx, 'rewind'));
  }),
  /** `:Flemma retry`: the last reply rewound, then the request sent again. */
  'chat:retry': told((ctx, { bufnr, file, ticket, state }) => {
    const session = ctx.sessions.of(bufnr);
    if (state !== undefined) ctx.states.pushed(bufnr, state);
    session.rewind(file, 'retry', ticket ?? undefined).catch(failed(ctx, 'retry'));
  }),
  /** `:Flemma run`: the buffer's file runs as a chat held in a file (src/files/command.ts). */
  'chat:run-file': told((ctx, { bufnr, file }) => {
    runBufferFile(ctx, bufnr, file).catch((error: unknown) => {
      ctx.notify.error(`run: ${error instanceof Error ? error.message : String(error)}`);
    });
  }),
  'chat:cancel-file': told((ctx, { file }) => {
    const chat = ctx.files.find(file);
    if (chat !== undefined) void ctx.files.cancel(chat);
  }),
  /** `:Flemma usage:estimate`: count the next request's input tokens with the provider. */
  'usage:estimate': (ctx, { bufnr }) => ctx.requests.estimate(bufnr),
  /** `:Flemma context`: the next request's estimate against the model's window (nothing sent). */
  'chat:context': (ctx, { bufnr }) => ctx.meter.report(bufnr),
  /** `:Flemma tasks`: the chat's children, from its tasks folder and the runs the host watches. */
  'tasks:list': (ctx, { bufnr, file }) => listTasks(ctx.taskBoard, file, bufnr),
  /** `:Flemma chats`: the chats of the directories and the project, newest first. */
  'chats:list': (ctx, params) => listChats(ctx, params),
  /** The chat picker's preview: the last exchange of a chat. */
  'chats:preview': async (ctx, { path }) => ({ lines: await ctx.chats.preview(path) }),
  /** `:Flemma task:return`: the note a continued child sends its parent. */
  'task:return': async (ctx, { bufnr, file }) => {
    const state = await ctx.documents.attach(bufnr);
    if (state === undefined) return { message: 'Not a chat buffer' };
    if (ctx.sessions.busy(bufnr)) return { message: 'The task is still running' };
    return returnOf(state, file);
  },
  /** Lua marks a reply its host stopped in (the previous host's crash): the same end as a record's. */
  'chat:cut-off': (_ctx, { content }) => ({ ending: cutOffEnding(content) }),
  /**
   * `<C-c>`: the buffer's running (or queued) request, else its oldest running tool; tells the
   * user when there is nothing.
   */
  'chat:cancel': async (ctx, { bufnr }) => ({
    cancelled: await ctx.sessions.of(bufnr).cancel(),
  }),
  /** `<C-]>`: placeholders, execution of approved calls, then the send. */
  'chat:cycle': told((ctx, { bufnr, ticket, state }) => {
    // A step never fails: its errors are logged by the session.
    void ctx.sessions.of(bufnr).step(true, ticket ?? undefined, state);
  }),
  /** Lua's approval resolvers (names, priorities; the functions stay in Neovim). */
  'approval:define': told((ctx, { resolvers }) => {
    ctx.approval.defineFromLua(resolvers);
  }),
  /** Lua's credential resolvers (names, priorities; the functions stay in Neovim). */
  'secrets:define': told((ctx, { resolvers }) => {
    ctx.secrets.defineFromLua(resolvers);
  }),
  /** `require("flemma.secrets").invalidate(kind, service)` / `invalidate_all()`. */
  'secrets:invalidate': told((ctx, { all, kind, service }) => {
    if (all) ctx.secrets.invalidateAll();
    else if (kind !== undefined && service !== undefined) ctx.secrets.invalidate(kind, service);
  }),
  /** Lua: an edit (or `<C-c>`) cancelled the automatic continue the host's timer waits for. */
  'autopilot:cancelled': told((ctx, { bufnr, token }) => {
    ctx.sessions.get(bufnr)?.autopilotCancelled(token);
  }),
  'autopilot:status': (ctx, { bufnr }) => {
    const { state, iteration } = ctx.sessions.get(bufnr)?.autopilot ?? {
      state: 'idle',
      iteration: 0,
    };
    const lines = [
      `autopilot in buffer ${String(bufnr)}: ${state}, ${String(iteration)} consecutive tool turn(s)`,
    ];
    return { lines, state, iteration };
  },
  /** Lua: what the host holds of a buffer's settings (or every buffer's) is stale. */
  'editor:state': (ctx, { bufnr, stale }) => {
    if (stale) ctx.states.stale(bufnr);
    return null;
  },
  /** `:Flemma status [verbose]`: the buffer's settings, each with the layer that set it. */
  'chat:status': (ctx, { bufnr, verbose }) => ctx.commands.status(bufnr, verbose),
  /** `:Flemma tool:why`: the resolver that decided the call under the cursor. */
  'tool:why': async (ctx, { bufnr, row }) => {
    const text = await ctx.commands.why(bufnr, row ?? 0);
    ctx.notify.info(text, { key: 'tool:why', report: true });
    return { text };
  },
  /** `:Flemma tool:output`: what the call under the cursor printed (so far). */
  'tool:output': async (ctx, { bufnr, row }) => {
    const answer = await outputAt(ctx, bufnr, row ?? 0, nodeTruncateFs.tmpdir());
    if ('message' in answer) ctx.notify.info(answer.message);
    return answer;
  },
  /** `:Flemma review`: the calls of a turn, a range or the chat that changed files. */
  'chat:review': (ctx, { bufnr, scope }) => ctx.undo.review(bufnr, scope),
  /** `:Flemma tool:undo`: put back the files the call under the cursor changed. */
  'tool:undo': async (ctx, { bufnr, row }) => {
    const answer = await ctx.undo.undoAt(bufnr, row ?? 0);
    ctx.notify[answer.ok ? 'info' : 'warn'](answer.message);
    return answer;
  },
  /**
   * `:Flemma tool:approve` / `tool:reject [message]`: rewrite the status of the block at the
   * cursor; once nothing waits, the loop goes on (`ChatSession.decided`).
   */
  'tool:approve': async (ctx, { bufnr, row, ticket }) => {
    // A `task` call whose child waits (or a child's waiting call): the child decides it.
    if (await decideChildCall(ctx, bufnr, { row: row ?? 0 }, { status: 'approved' })) return null;
    await ctx.sessions
      .of(bufnr)
      .decide(ticket ?? undefined, () => ctx.commands.setStatusAt(bufnr, row ?? 0, 'approved'));
    return null;
  },
  'tool:reject': async (ctx, { bufnr, row, message, ticket }) => {
    if (await decideChildCall(ctx, bufnr, { row: row ?? 0 }, rejectedWith(message))) return null;
    await ctx.sessions
      .of(bufnr)
      .decide(ticket ?? undefined, () =>
        ctx.commands.setStatusAt(bufnr, row ?? 0, 'rejected', message),
      );
    return null;
  },
  /** `:Flemma tool:diff` and the decisions of its tab (docs/tools.md, "Review"). */
  'tool:diff': async (ctx, { bufnr, row }) => {
    // A call that ran shows what its file held before it; a pending one, what it would leave.
    const ran = await ctx.undo.diffAt(bufnr, row);
    if (typeof ran === 'string') {
      ctx.notify.warn(ran);
      return null;
    }
    return ran ?? ctx.diffReview.open(bufnr, row);
  },
  // The answer closes the diff at once; `ticket` is answered once the call it ran is over.
  'tool:diff-approve': async (ctx, { bufnr, tool_id, before, content, ticket }) => {
    // A task's child waiting on the call: the child runs it, as the proposed side leaves it.
    const child = ctx.tasks.waitsInChild(tool_id)
      ? await ctx.diffReview.approveElsewhere(bufnr, tool_id, { before, content }, (use) =>
          decideChildCall(
            ctx,
            bufnr,
            { id: tool_id },
            { status: 'approved', ...(use === undefined ? {} : { use }) },
          ),
        )
      : undefined;
    if (child !== undefined) return child;
    return ctx.sessions.of(bufnr).fromDiff(
      ticket ?? undefined,
      () => ctx.diffReview.approve(bufnr, tool_id, before, content),
      () => ctx.diffReview.settled(bufnr),
    );
  },
  'tool:diff-reject': async (ctx, { bufnr, tool_id, reason, ticket }) => {
    if (await decideChildCall(ctx, bufnr, { id: tool_id }, rejectedWith(reason))) {
      return { status: 'rejected' as const };
    }
    return ctx.sessions.of(bufnr).fromDiff(
      ticket ?? undefined,
      () => ctx.diffReview.reject(bufnr, tool_id, reason),
      () => ctx.diffReview.settled(bufnr),
    );
  },
  /** `:Flemma tool:approve-always`: approve the call at the cursor and remember it for the buffer. */
  'tool:approve-always': async (ctx, { bufnr, row, ticket }) => {
    const entry = await ctx.sessions
      .of(bufnr)
      .decide(ticket ?? undefined, () => ctx.commands.approveAlwaysAt(bufnr, row ?? 0));
    return entry ?? null;
  },
  /** `:Flemma tool:always`: the buffer's "always" approvals and YOLO state. */
  'tool:always': async (ctx, { bufnr }) => {
    const lines = await ctx.commands.sessionLines(bufnr);
    return { lines, entries: ctx.approval.session.list(bufnr) };
  },
  /** `:Flemma tool:forget-always [tool]`. */
  'tool:forget-always': (ctx, { bufnr, tool }) => ({
    removed: ctx.commands.forgetAlways(bufnr, tool),
  }),
  /** `:Flemma tool:yolo [on|off|toggle]`. */
  'tool:yolo': async (ctx, { bufnr, mode }) => ({ yolo: await ctx.commands.setYolo(bufnr, mode) }),
  /** `:Flemma tool:cancel-pending`: every call waiting in the buffer gets a cancelled result. */
  'tool:cancel-pending': async (ctx, { bufnr }) => {
    const cancelled = await ctx.sessions.of(bufnr).cancelPending();
    if (cancelled === 0) {
      ctx.notify.info('No tool call is waiting');
    }
    return { cancelled };
  },
  /** `:trust` (or `++deny`, `++remove`) changed the buffer's trust: its diagnostics again. */
  'buffer:trust': told((ctx, { bufnr }) => {
    ctx.trust.trustChanged(bufnr);
  }),
  /** Frontmatter languages registered in Lua (`require("flemma.frontmatter").register_language`). */
  'frontmatter:languages': told((ctx, { names }) => {
    ctx.documents.setFrontmatterLanguages(names);
  }),
  /** Lua's tool definitions (no functions) and how many of its async sources are still loading. */
  'tools:define': told((ctx, params) => {
    // MCP servers first, so that their discovery counts as loading before Lua's tools are in.
    if ('mcp' in params) ctx.catalogue.configureMcp(params.mcp);
    ctx.catalogue.defineFromLua(
      params.tools,
      params.pending,
      params.js_modules,
      params.declarative,
    );
  }),
  /** Lua's sandbox backends (no functions): `{ backends = { {name, priority?, description?, replace?}, … } }`. */
  'sandbox:define': told((ctx, { backends }) => {
    const problems = defineLuaBackends(ctx.lua, ctx.sandboxBackends, backends);
    for (const message of problems) ctx.notify.warn(message);
  }),
  /** A Lua tool's `ctx.truncate.truncate_head/tail`: `{text, from, max_lines?, max_bytes?}`. */
  'tools:truncate': (_ctx, params) => truncateForLua(params),
  /** A Lua tool's `ctx.truncate.format_size`: `{bytes}` → `"12.1KB"`. */
  'tools:format-size': (_ctx, params) => formatSizeForLua(params),
  /** A Lua tool's `ctx.sandbox.is_path_writable`: `{path, base, rw_paths}` → boolean. */
  'tools:writable': (_ctx, params) => writableForLua(params),
  /** A Lua tool finished: `{ call_id, result = { success, output?, error? } }`. */
  'tools:result': told((ctx, { call_id, result }) => {
    if (call_id !== undefined) ctx.luaTools.result(call_id, result);
  }),
  /** `<M-CR>`: run the call under the cursor (`row` is 0-based). */
  'tool:execute': told((ctx, params) => {
    const { bufnr } = params;
    const row = params.row ?? 0;
    // A step of the buffer's loop: it never fails (its errors are logged by the session).
    void ctx.sessions.of(bufnr).runCall(params.ticket ?? undefined, row);
  }),
  'tool:cancel': async (ctx, { bufnr, row }) => {
    const cancelled = await ctx.executor.cancelAt(bufnr, row);
    if (!cancelled) ctx.notify.info('No tool is running');
    return { cancelled };
  },
  'tool:cancel-all': (ctx) => {
    const count = ctx.executor.cancelAll();
    ctx.notify.info(count === 0 ? 'No tool is running' : `Cancelled ${String(count)} tool(s)`);
    return { cancelled: count };
  },
  'tool:list': (ctx) => ctx.executor.list(),
  /** `:Flemma mcp:status`: every configured MCP server, as lines and as data. */
  'mcp:status': (ctx) => {
    const servers = ctx.catalogue.mcp.status();
    return { lines: mcpStatusLines(servers), servers };
  },
  /** `:Flemma mcp:restart [server]`: reconnect one server, or all of them. */
  'mcp:restart': (ctx, { server }) => {
    const names = ctx.catalogue.mcp.restart(server);
    ctx.notify.info(
      names.length === 0 ? 'MCP: no server is configured' : `MCP: restarting ${names.join(', ')}`,
    );
    return { restarted: names };
  },
  /** `:Flemma mcp:resources [server]`: the resources (and templates) of one server, or all. */
  'mcp:resources': async (ctx, { server }) => {
    const servers = await ctx.catalogue.mcp.resourceListing(server);
    return { lines: mcpResourceLines(servers), servers };
  },
  /** `:Flemma mcp:prompt <server> <name> [key=value…]`: the prompt as chat text (Lua inserts it). */
  'mcp:prompt': async (ctx, { server, name, args }) => {
    const messages = await ctx.catalogue.mcp.getPrompt(
      server,
      name,
      args,
      new AbortController().signal,
    );
    return promptChatText(server, messages);
  },
  'sandbox:status': (ctx, { bufnr }) => ctx.commands.sandboxStatus(bufnr),
  /** The user's answer to a permission request of the buffer's agent (`acp.permission`). */
  'acp:answer': told((ctx, { bufnr, id, answer }) => {
    ctx.agents.answer(bufnr, id, answer);
  }),
  /** `:checkhealth flemma`: the agents of the user's `setup()` only (never a chat file's). */
  'acp:probe': async (ctx, { names }) => ({
    agents: await ctx.agents.probes.report(
      configuredAgents(await ctx.config.get(ctx.lua)).values(),
      names,
    ),
  }),
  'tool:background': async (ctx, { bufnr, row }) => {
    const moved = await ctx.executor.background(bufnr, row);
    if (!moved) {
      ctx.notify.info('No running tool to move to the background');
    }
    return { moved };
  },
  /** Completion in a chat buffer (docs/completion.md): the items for the cursor's place. */
  'complete:items': (ctx, params) =>
    completeItems(
      {
        paths: ctx.paths,
        mcp: () => ctx.catalogue.mcp.catalog(),
        tools: () => ctx.catalogue.registry.list().map((def) => def.name),
        presets: () => {
          const tools = ctx.config.held()?.config.data['tools'];
          return typeof tools === 'object' && tools !== null
            ? (tools as Record<string, unknown>)['presets']
            : undefined;
        },
      },
      params,
    ),
  'log:level': (ctx, { level }) => {
    ctx.logger.level = level;
    return { level };
  },
};

function isAction(method: string): method is LuaToHostMethod {
  return Object.prototype.hasOwnProperty.call(LUA_TO_HOST, method);
}

/** One action: its params decoded by the protocol, then its handler. */
function run<M extends LuaToHostMethod>(
  ctx: Host,
  method: M,
  raw: unknown,
): ActionResult<M> | Promise<ActionResult<M>> {
  const params = LUA_TO_HOST[method].decode(raw);
  trace(`wire:in ${method}`);
  return actions[method](ctx, params);
}

/** Run an action by name; unknown names are an error that says what exists. */
export async function dispatch(ctx: Host, method: string, params: unknown): Promise<unknown> {
  if (!isAction(method)) {
    throw new ActionError(
      `unknown method '${method}' (known: ${Object.keys(actions).sort().join(', ')})`,
    );
  }
  return await run(ctx, method, params);
}
