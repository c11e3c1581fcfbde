// The wiring: the one place that builds the host's services (`createHost`) and hands each the
// narrow parts of the others it needs; what a service reports to the loop it says as an event
// (`LoopEvents`) with one subscriber, here. What the action handlers receive (`Host`) is the
// editor's adapters and these services; the services themselves never see this object.
import { homedir } from 'node:os';
import type { Config } from '../core/config/config.js';
import type { Neovim } from '../editor/client.js';
import type { FrontmatterEvaluator } from '../files/api.js';
import type { Message } from '../core/chat/ast.js';
import { ReferenceCache } from '../core/chat/references.js';
import { PathLister } from './complete.js';
import { SdkLoader } from '../core/provider/sdk.js';
import { ProcessManager } from '../core/tools/background.js';
import { Probes } from '../core/tools/probes.js';
import { createSandboxBackends } from '../core/tools/sandbox/index.js';
import { SchemaValidator } from '../core/tools/validate.js';
import { type BufferEventsPort, DocumentStore, neovimLines } from '../editor/documents.js';
import { HookEmitter } from '../editor/hooks.js';
import { rpcPortOf } from '../editor/lua.js';
import { FileAdapter } from '../files/adapter.js';
import type { FileChats } from '../files/api.js';
import { FileChatRunner } from '../files/chats.js';
import { fileSettingsPort } from '../files/port.js';
import { type Headless, RoutedBridge, routedLines } from '../files/router.js';
import { WriteScheduler } from '../editor/writequeue.js';
import { ChatLister } from './chats/lister.js';
import { ApprovalService } from './approval.js';
import { ApprovalNotices } from './approval-notice.js';
import { type HostBase, notifier } from './base.js';
import { ConfigStore } from './config.js';
import type { FileLogger } from './log.js';
import { SecretsService } from './secrets.js';
import { RecoveryService } from './recovery.js';
import { RequestBuilder } from './send/request.js';
import { Streamer } from './send/stream.js';
import { type LoopEvents, SessionRegistry } from './session.js';
import { EditorStates } from './editor-state.js';
import { Emitter } from '../core/util/emitter.js';
import { ToolCatalogue } from './tools/catalogue.js';
import { ToolCommands } from './tools/commands.js';
import { DiffReview } from './tools/diff-review.js';
import { ToolExecutor } from './tools/executor.js';
import { LiveOutput } from './tools/live-output.js';
import { TaskBoard } from './tasks/status.js';
import { sandboxResolver } from './tools/prepare.js';
import { nodeTruncateFs } from '../core/tools/truncate.js';
import { LuaTools } from './tools/lua-tools.js';
import { Previews } from './tools/previews.js';
import { ResultWriter } from './tools/results.js';
import { Verdicts } from './tools/verdicts.js';
import { UndoService } from './undo/service.js';
import { TrustChecker } from './trust-check.js';
import { UsageTracker } from './usage.js';
import { createTasks } from './tasks/wire.js';
import type { TaskService } from './tasks/service.js';
import { ContextMeter } from './meter.js';
import { Compactor } from './compact.js';
import { ChatHistory } from './history.js';
import { AcpAgents } from './acp/agents.js';
import { permissionJudge } from './acp/permissions.js';
import { agentServices, servePorts } from './acp/serve.js';

export { HOST_VERSION, SOURCE_HASH } from './base.js';

export interface Host extends HostServices {
  readonly nvim: Neovim;
}

/** The host's services, with Neovim (`createHost`) or without (`createHeadlessHost`). */
export interface HostServices extends HostBase {
  /** Chats held in files, run by the same loop (docs/tasks.md, "Chats on files"). */
  readonly files: FileChats;
  /** The editor of those chats (the router brings it their buffers' methods). */
  readonly fileAdapter: FileAdapter;
  /** Every chat buffer's conversation: the loop, the send, the cancel, autopilot. */
  readonly sessions: SessionRegistry;
  readonly catalogue: ToolCatalogue;
  readonly luaTools: LuaTools;
  readonly executor: ToolExecutor;
  /** The results of calls, written in their placeholders' place. */
  readonly results: ResultWriter;
  /** What running calls print: the view under their blocks, `:Flemma tool:output`. */
  readonly liveOutput: LiveOutput;
  /** The children of `task` calls the host watches: their state lines, `:Flemma tasks`. */
  readonly taskBoard: TaskBoard;
  /** The `task` calls' children: their decisions taken from the parent or their own buffer. */
  readonly tasks: Pick<TaskService, 'decideWaiting' | 'waitsInChild'>;
  readonly commands: ToolCommands;
  readonly diffReview: DiffReview;
  readonly undo: UndoService;
  /** `:Flemma fork`, `rewind`, `retry` (docs/history.md); the last two through the session. */
  readonly history: ChatHistory;
  readonly approval: ApprovalService;
  readonly requests: RequestBuilder;
  readonly usage: UsageTracker;
  /** The context meter: the warning before a send, `:Flemma context`. */
  readonly meter: ContextMeter;
  readonly trust: TrustChecker;
  /** The records that keep streaming replies on disk (docs/context.md). */
  readonly recovery: RecoveryService;
  /** What the host holds of each buffer's settings, pushed by Lua. */
  readonly states: EditorStates;
  /**
   * The chats' ACP agents (docs/agents.md): the user's answers to their permission requests, and
   * `:checkhealth`'s look at the configured agents.
   */
  readonly agents: Pick<AcpAgents, 'answer' | 'probes'>;
  /** Forget everything kept about a buffer that went away. */
  forget(bufnr: number): void;
}

/** What the host is built on: Neovim, or what stands in for it (`flemma run`). */
export interface HostLink {
  nvim?: Neovim;
  headless?: Headless & { evaluate?: FrontmatterEvaluator };
  logger: FileLogger;
  logFile: string | undefined;
}

/** The editor's adapters and what the host keeps for its lifetime (`HostBase`). */
function createBase(link: HostLink, files: FileAdapter): HostBase {
  const { nvim, logger, logFile } = link;
  const lua = new RoutedBridge(
    files,
    nvim === undefined ? undefined : rpcPortOf(nvim),
    link.headless,
    (method, error) => {
      logger.warn(`${method} failed`, error);
      link.headless?.notify('error', error instanceof Error ? error.message : String(error));
    },
  );
  // NOTE: at run time both the job host's client and the remote-plugin host's `plugin.nvim` are
  // a NeovimClient, which follows buffer changes.
  const neovim = nvim === undefined ? undefined : neovimLines(nvim as unknown as BufferEventsPort);
  return {
    lua,
    notify: notifier({ lua }),
    hooks: new HookEmitter(lua),
    writes: new WriteScheduler(lua, { logger }),
    sdks: new SdkLoader(),
    documents: new DocumentStore(routedLines(files, neovim), lua, { logger }),
    secrets: new SecretsService(lua, logger),
    config: new ConfigStore(),
    logger,
    references: new ReferenceCache(),
    paths: new PathLister(),
    validator: new SchemaValidator(),
    sandboxBackends: createSandboxBackends(),
    processes: new ProcessManager(),
    probes: new Probes(),
    chats: new ChatLister((text) => logger.redactor.text(text)),
    startedAt: Date.now(),
    logFile,
  };
}

/** What the tool services ask of the buffers' loops (answered by the sessions). */
interface LoopQueries {
  autopilotArmed(bufnr: number): boolean;
}

/** The tools: the catalogue, approval, the results, undo and the executor. */
function createTools(
  base: HostBase,
  states: EditorStates,
  events: Emitter<LoopEvents>,
  loops: LoopQueries,
) {
  const luaTools = new LuaTools(base);
  const catalogue: ToolCatalogue = new ToolCatalogue(base, luaTools, () => {
    previews.refresh();
    // A frontmatter's tool names were judged against the set of tools: judged again.
    states.stale();
  });
  const previews: Previews = new Previews(base, catalogue, states);
  const approval = new ApprovalService(base, catalogue.registry, (call, paths, config, facts) =>
    undo.probe(call.bufnr, facts, call.toolId, paths, undo.limits(config.tools)),
  );
  const verdicts = new Verdicts({
    registry: catalogue.registry,
    logger: base.logger,
    ready: () => catalogue.isReady(),
    policyBlocks: (name, config) => catalogue.policyBlocks(name, config),
  });
  const results: ResultWriter = new ResultWriter({
    writes: base.writes,
    documents: base.documents,
    lua: base.lua,
    logger: base.logger,
    warn: (message) => {
      base.notify.warn(message);
    },
    toolsBusy: (bufnr) => executor.busy(bufnr),
  });
  const undo = new UndoService(base, results, (bufnr, doc) => states.get(bufnr, doc), states);
  const executor: ToolExecutor = new ToolExecutor({
    editor: base.lua,
    hooks: base.hooks,
    notify: base.notify,
    logger: base.logger,
    validator: base.validator,
    sandbox: sandboxResolver(base.sandboxBackends, base.lua, homedir()),
    catalogue,
    lua: luaTools,
    results,
    writes: base.writes,
    autopilotArmed: (bufnr) => loops.autopilotArmed(bufnr),
    undo,
    gate: (call, config, facts) => approval.writeGate(call, config, facts),
    truncateFs: nodeTruncateFs,
    home: homedir(),
    env: process.env,
  });
  // What running calls print: the view under their blocks, `:Flemma tool:output`.
  const liveOutput = new LiveOutput(base.lua);
  const taskBoard = new TaskBoard(base.lua, previews);
  return {
    luaTools,
    catalogue,
    previews,
    approval,
    verdicts,
    results,
    undo,
    executor,
    liveOutput,
    taskBoard,
  };
}

type Tools = ReturnType<typeof createTools>;

/** The send: usage, the request builder, the context meter, the streamer, the compactor. */
function createSend(
  base: HostBase,
  memo: WeakMap<Message, string>,
  tools: Tools,
  events: Emitter<LoopEvents>,
) {
  const { catalogue, verdicts, undo } = tools;
  const usage = new UsageTracker(base, (bufnr) => {
    events.emit('loop:stopped', { bufnr });
  });
  // The chats' agents (provider `acp`): one process per chat, ended with it (docs/agents.md).
  const agents = new AcpAgents(
    base,
    permissionJudge({ ...base, approval: tools.approval }),
    agentServices(servePorts({ base, catalogue, undo })),
  );
  const requests = new RequestBuilder({ base, catalogue, memo, agents });
  const recovery = new RecoveryService(base.logger);
  const meter = new ContextMeter({ base, requests, usage });
  const streamer = new Streamer({
    recovery,
    base,
    requests,
    usage,
    meter,
    catalogue,
    verdicts,
    memo,
    replyStarted: (bufnr) => {
      undo.replyStarted(bufnr);
    },
  });
  const compactor = new Compactor({ base, requests, usage });
  return { usage, requests, recovery, meter, streamer, compactor, agents };
}

type Send = ReturnType<typeof createSend>;

/** The commands on calls and the diff view, which go on through the buffer's session. */
function createCommands(base: HostBase, tools: Tools, send: Send, sessions: SessionRegistry) {
  const { catalogue, executor, verdicts, results, approval, previews } = tools;
  const commands: ToolCommands = new ToolCommands({
    base,
    catalogue,
    executor,
    verdicts,
    results,
    approval,
    contextLines: (bufnr, config) => send.meter.statusLines(bufnr, config),
    loop: {
      context: (bufnr, document, options) => sessions.of(bufnr).settings(document, options),
      autopilot: (bufnr) => sessions.get(bufnr)?.autopilot ?? { state: 'idle', iteration: 0 },
      elision: (bufnr) => send.requests.lastElision(bufnr),
    },
  });
  const diffReview = new DiffReview({
    base,
    catalogue,
    commands,
    runCall: (bufnr, row) => sessions.of(bufnr).runCall(undefined, row),
    results,
    changes: previews.changes,
  });
  return { commands, diffReview };
}

export function createHost(nvim: Neovim, logger: FileLogger, logFile: string | undefined): Host {
  return { ...buildHost({ nvim, logger, logFile }), nvim };
}

/** The editor of chats held in files, over the host's services (made after it). */
function fileAdapter(
  link: HostLink,
  base: () => HostBase,
  states: () => EditorStates,
): FileAdapter {
  const port = fileSettingsPort(
    { neovim: link.nvim !== undefined, evaluate: link.headless?.evaluate, env: link.headless?.env },
    base,
    states,
  );
  return new FileAdapter(port);
}

/** The host's services over Neovim or, without `link.nvim`, over what stands in for it. */
export function buildHost(link: HostLink): HostServices {
  const adapter = fileAdapter(
    link,
    () => base,
    () => states,
  );
  const base = createBase(link, adapter);
  /** Each message's part of the trust digest, kept across parses (`trustDigest`). */
  const memo = new WeakMap<Message, string>();
  /** What the services tell the sessions: one subscriber, below, where the sessions are built. */
  const events = new Emitter<LoopEvents>();
  /** Each buffer's settings, pushed by Lua (docs/architecture.md, "The message budget"). */
  const states: EditorStates = new EditorStates({
    lua: base.lua,
    config: base.config,
    memo,
    tools: () => tools.catalogue.toolNames(),
  });
  const tools: Tools = createTools(base, states, events, {
    autopilotArmed: (bufnr) => sessions.get(bufnr)?.autopilot.armed ?? false,
  });
  const send = createSend(base, memo, tools, events);
  const notices = new ApprovalNotices(base.lua);
  const history = new ChatHistory({ base, results: tools.results, undo: tools.undo });
  const sessions: SessionRegistry = new SessionRegistry({
    editor: base,
    states,
    ...tools,
    ...send,
    history,
    cancelPending: (bufnr) => commands.cancelPending(bufnr),
    notices,
    approveTask: (bufnr, id, file) => tasks.approveWaiting(bufnr, id, file),
  });
  routeLoopEvents(base, events, tools, sessions);
  const { commands, diffReview } = createCommands(base, tools, send, sessions);
  const trust = new TrustChecker({
    base,
    context: (bufnr, document) => states.get(bufnr, document),
    readsResults: (name) => tools.catalogue.readsResultReferences(name),
    memo,
  });
  follow(base, { ...tools, states, trust, notices, sessions });
  const forgetAll = (bufnr: number): void => {
    forget(bufnr, { ...tools, ...send, states, trust, notices, sessions });
  };
  const files = new FileChatRunner({
    adapter,
    sessions,
    documents: base.documents,
    usage: send.usage,
    commands,
    states,
    forget: forgetAll,
    ...(link.nvim === undefined
      ? {}
      : { status: (path: string) => base.lua.call('files.status', { path }) }),
  });
  // The `task` tool: children of a chat run as chats on files (docs/tasks.md).
  const tasks = createTasks({ base, ...tools, ...send, states, files, sessions, commands });
  return {
    ...base,
    ...tools,
    ...send,
    files,
    fileAdapter: adapter,
    sessions,
    commands,
    diffReview,
    history,
    trust,
    states,
    tasks,
    forget: forgetAll,
  };
}

/** What the services and the executor tell the sessions, to the buffer's session. */
function routeLoopEvents(
  base: HostBase,
  events: Emitter<LoopEvents>,
  tools: Pick<Tools, 'executor' | 'liveOutput'>,
  sessions: SessionRegistry,
): void {
  const settled = (bufnr: number, config: Config): void => {
    sessions
      .of(bufnr)
      .toolsDone(config)
      .catch((error: unknown) => {
        base.logger.error(`going on after the tools of buffer ${String(bufnr)} failed`, error);
        base.notify.warn(error instanceof Error ? error.message : String(error));
      });
  };
  events.subscribe({
    'tools:settled': ({ bufnr, config }) => {
      settled(bufnr, config);
    },
    'loop:stopped': ({ bufnr }) => {
      sessions.get(bufnr)?.stopped();
    },
  });
  // What the executor says goes to the buffer's session, as the loop's own events do.
  tools.executor.events.subscribe({
    settled: ({ bufnr, config }) => {
      settled(bufnr, config);
    },
    cancelled: ({ bufnr }) => {
      sessions.get(bufnr)?.stopped();
    },
    // What running calls print, to the view under their blocks.
    output: tools.liveOutput.push,
    stopped: tools.liveOutput.end,
  });
}

/** What follows the buffers' parses, the redactor and the busy state. */
function follow(
  base: HostBase,
  s: {
    states: EditorStates;
    previews: Previews;
    trust: TrustChecker;
    notices: ApprovalNotices;
    sessions: SessionRegistry;
  },
): void {
  base.documents.onParsed((state) => {
    s.states.parsed(state.bufnr, state.document);
    s.previews.publish(state);
    s.trust.parsed(state);
    s.notices.parsed(state);
  });
  // The shim's log redacts what the host learns (resolved credentials) too.
  base.logger.redactor.onChange(() => {
    base.lua.notify('log.secrets', { values: base.logger.redactor.known() });
  });
  // Marks and diagnostics wait while a buffer is busy (docs/architecture.md).
  base.documents.setBusy((bufnr) => s.sessions.busy(bufnr));
}

/** Forget everything kept about a buffer that went away. */
function forget(
  bufnr: number,
  s: Tools &
    Send & {
      states: EditorStates;
      trust: TrustChecker;
      notices: ApprovalNotices;
      sessions: SessionRegistry;
    },
): void {
  s.states.forget(bufnr);
  s.usage.forget(bufnr);
  s.meter.forget(bufnr);
  s.previews.forget(bufnr);
  s.trust.forget(bufnr);
  s.notices.forget(bufnr);
  s.requests.forget(bufnr);
  s.approval.session.clear(bufnr);
  s.undo.forget(bufnr);
  s.sessions.forget(bufnr);
  s.taskBoard.forget(bufnr);
  s.agents.forget(bufnr);
}
