// The wiring: the one place that builds the host's services and hands each the narrow parts of
// the others it needs. What the action handlers receive (`HostContext`) is the editor's adapters
// and these services; the services themselves never see this object.
import type { Neovim } from '../editor/client.js';
import type { Message } from '../core/chat/ast.js';
import { ReferenceCache } from '../core/chat/references.js';
import { SdkLoader } from '../core/provider/sdk.js';
import { ProcessManager } from '../core/tools/background.js';
import { Probes } from '../core/tools/probes.js';
import { createSandboxBackends } from '../core/tools/sandbox/index.js';
import { SchemaValidator } from '../core/tools/validate.js';
import { type BufferEventsPort, DocumentStore } from '../editor/documents.js';
import { HookEmitter } from '../editor/hooks.js';
import { LuaBridge, rpcPortOf } from '../editor/lua.js';
import { WriteScheduler } from '../editor/writequeue.js';
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
import { LuaTools } from './tools/lua-tools.js';
import { Previews } from './tools/previews.js';
import { ResultWriter } from './tools/results.js';
import { Verdicts } from './tools/verdicts.js';
import { UndoService } from './undo/service.js';
import { TrustChecker } from './trust-check.js';
import { UsageTracker } from './usage.js';
import { ContextMeter } from './meter.js';
import { Compactor } from './compact.js';

export { HOST_VERSION, SOURCE_HASH } from './base.js';

export interface HostContext extends HostBase {
  readonly nvim: Neovim;
  /** Every chat buffer's conversation: the loop, the send, the cancel, autopilot. */
  readonly sessions: SessionRegistry;
  readonly catalogue: ToolCatalogue;
  readonly luaTools: LuaTools;
  readonly executor: ToolExecutor;
  readonly commands: ToolCommands;
  readonly diffReview: DiffReview;
  readonly undo: UndoService;
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
  /** Forget everything kept about a buffer that went away. */
  forget(bufnr: number): void;
}

export function createContext(
  nvim: Neovim,
  logger: FileLogger,
  logFile: string | undefined,
): HostContext {
  const lua = new LuaBridge(rpcPortOf(nvim));
  const base: HostBase = {
    lua,
    notify: notifier({ lua }),
    hooks: new HookEmitter(lua),
    writes: new WriteScheduler(lua, { logger }),
    sdks: new SdkLoader(),
    // NOTE: at run time both the job host's client and the remote-plugin host's `plugin.nvim` are
    // a NeovimClient, which follows buffer changes.
    documents: new DocumentStore(nvim as unknown as BufferEventsPort, lua, { logger }),
    secrets: new SecretsService(lua, logger),
    config: new ConfigStore(),
    logger,
    references: new ReferenceCache(),
    validator: new SchemaValidator(),
    sandboxBackends: createSandboxBackends(),
    processes: new ProcessManager(),
    probes: new Probes(),
    startedAt: Date.now(),
    logFile,
  };
  /** Each message's part of the trust digest, kept across parses (`trustDigest`). */
  const memo = new WeakMap<Message, string>();
  const luaTools = new LuaTools(base);
  /** What the services tell the sessions: one subscriber, below, where the sessions are built. */
  const events = new Emitter<LoopEvents>();
  /** Each buffer's settings, pushed by Lua (docs/architecture.md, "The message budget"). */
  const states: EditorStates = new EditorStates({
    lua,
    config: base.config,
    memo,
    tools: () => catalogue.toolNames(),
  });
  // The services below reach the sessions (made last: they need the services) through closures.
  const catalogue: ToolCatalogue = new ToolCatalogue(base, luaTools, () => {
    previews.refresh();
  });
  const previews: Previews = new Previews(base, catalogue, states);
  const approval = new ApprovalService(base, catalogue.registry, (call, paths, config, facts) =>
    undo.probe(call.bufnr, facts, call.toolId, paths, undo.limits(config.tools)),
  );
  const verdicts = new Verdicts({
    registry: catalogue.registry,
    logger,
    ready: () => catalogue.isReady(),
    policyBlocks: (name, config) => catalogue.policyBlocks(name, config),
  });
  const results: ResultWriter = new ResultWriter({
    writes: base.writes,
    documents: base.documents,
    lua,
    logger,
    warn: (message) => {
      lua.notify('notify', { level: 'warn', message });
    },
    toolsBusy: (bufnr) => executor.busy(bufnr),
    autopilotArmed: (bufnr) => sessions.get(bufnr)?.autopilot.armed ?? false,
  });
  const undo = new UndoService(base, results, (bufnr, document) => states.get(bufnr, document), states);
  const executor: ToolExecutor = new ToolExecutor({
    base,
    catalogue,
    lua: luaTools,
    results,
    undo,
    gate: (call, config, facts) => approval.writeGate(call, config, facts),
    // The executor's reports to the loop, as events (`LoopEvents`).
    loop: {
      requestRunning: (bufnr) => sessions.get(bufnr)?.requestRunning ?? false,
      toolsDone: (bufnr, config) => {
        events.emit('tools:settled', { bufnr, config });
        return Promise.resolve();
      },
      stopped: (bufnr) => {
        events.emit('loop:stopped', { bufnr });
      },
      context: () => Promise.resolve(undefined),
      carry: () => undefined,
    },
  });
  const usage = new UsageTracker(base, (bufnr) => {
    events.emit('loop:stopped', { bufnr });
  });
  const requests = new RequestBuilder({ base, catalogue, memo });
  const recovery = new RecoveryService(logger);
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
  const commands: ToolCommands = new ToolCommands({
    base,
    catalogue,
    executor,
    verdicts,
    results,
    approval,
    contextLines: (bufnr, config) => meter.statusLines(bufnr, config),
    loop: {
      context: (bufnr, document, options) => states.get(bufnr, document, options),
      rearmIfPaused: (bufnr, settings) => {
        sessions.of(bufnr).rearmIfPaused(settings);
      },
      toolsFinished: (bufnr, settings) => sessions.of(bufnr).resolved(settings),
      autopilot: (bufnr) => sessions.get(bufnr)?.autopilot ?? { state: 'idle', iteration: 0 },
      elision: (bufnr) => requests.lastElision(bufnr),
    },
  });
  const diffReview = new DiffReview({
    base,
    catalogue,
    commands,
    results,
    changes: previews.changes,
  });
  const notices = new ApprovalNotices(lua);
  const sessions: SessionRegistry = new SessionRegistry({
    editor: base,
    states,
    executor,
    results,
    verdicts,
    approval,
    streamer,
    compactor: new Compactor({ base, requests, usage }),
    usage,
    cancelPending: (bufnr) => commands.cancelPending(bufnr),
    notices,
    undo,
    recovery,
  });
  events.subscribe({
    'tools:settled': ({ bufnr, config }) => {
      void sessions.of(bufnr).toolsDone(config);
    },
    'loop:stopped': ({ bufnr }) => {
      sessions.get(bufnr)?.stopped();
    },
  });
  const trust = new TrustChecker({
    base,
    context: (bufnr, document) => states.get(bufnr, document),
    readsResults: (name) => catalogue.readsResultReferences(name),
    memo,
  });
  base.documents.onParsed((state) => {
    previews.publish(state);
    trust.parsed(state);
    notices.parsed(state);
  });
  // The shim's log redacts what the host learns (resolved credentials) too.
  logger.redactor.onChange(() => {
    lua.notify('log.secrets', { values: logger.redactor.known() });
  });
  // Marks and diagnostics wait while a buffer is busy (docs/architecture.md).
  base.documents.setBusy((bufnr) => sessions.busy(bufnr));
  return {
    ...base,
    nvim,
    sessions,
    catalogue,
    luaTools,
    executor,
    commands,
    diffReview,
    undo,
    approval,
    requests,
    usage,
    meter,
    trust,
    recovery,
    states,
    forget: (bufnr) => {
      states.forget(bufnr);
      usage.forget(bufnr);
      meter.forget(bufnr);
      previews.forget(bufnr);
      trust.forget(bufnr);
      notices.forget(bufnr);
      requests.forget(bufnr);
      approval.session.clear(bufnr);
      undo.forget(bufnr);
      sessions.forget(bufnr);
    },
  };
}
