// What every action handler receives: the editor adapters and the host's own facts.
import type { Neovim } from 'neovim';
import { ReferenceCache } from '../core/chat/references.js';
import { SdkLoader } from '../core/provider/sdk.js';
import { ProcessManager } from '../core/tools/background.js';
import { Probes } from '../core/tools/probes.js';
import { type SandboxBackendRegistry, createSandboxBackends } from '../core/tools/sandbox/index.js';
import { SchemaValidator } from '../core/tools/validate.js';
import { HookEmitter } from '../editor/hooks.js';
import { LuaBridge, rpcPortOf } from '../editor/lua.js';
import { WriteScheduler } from '../editor/writequeue.js';
import { type BufferEventsPort, DocumentStore } from '../editor/documents.js';
import type { FileLogger } from './log.js';
import { SecretsService } from './secrets.js';
import { SendController } from './send.js';
import { ToolService } from './tools.js';

declare const __FLEMMA_VERSION__: string;
declare const __FLEMMA_SOURCE_HASH__: string;

export const HOST_VERSION = typeof __FLEMMA_VERSION__ === 'string' ? __FLEMMA_VERSION__ : 'dev';
export const SOURCE_HASH =
  typeof __FLEMMA_SOURCE_HASH__ === 'string' ? __FLEMMA_SOURCE_HASH__ : 'dev';

export interface HostContext {
  readonly nvim: Neovim;
  readonly lua: LuaBridge;
  readonly hooks: HookEmitter;
  readonly writes: WriteScheduler;
  readonly sdks: SdkLoader;
  readonly documents: DocumentStore;
  readonly sends: SendController;
  readonly tools: ToolService;
  readonly secrets: SecretsService;
  readonly logger: FileLogger;
  // What src/core keeps for the host's lifetime (it keeps nothing in module variables; see
  // docs/architecture.md, "State"): made here, once, and handed to the code that uses it.
  /** Files read for `@./file` references, kept while unchanged. */
  readonly references: ReferenceCache;
  /** Ajv and the tool schemas it compiled. */
  readonly validator: SchemaValidator;
  /** The sandbox backends: bwrap, those of JavaScript tool modules, Lua's proxies. */
  readonly sandboxBackends: SandboxBackendRegistry;
  /** The background processes of the `process_*` tools. */
  readonly processes: ProcessManager;
  /** Which search programs `grep` and `find` found. */
  readonly probes: Probes;
  readonly startedAt: number;
  readonly logFile: string | undefined;
}

export function createContext(
  nvim: Neovim,
  logger: FileLogger,
  logFile: string | undefined,
): HostContext {
  const lua = new LuaBridge(rpcPortOf(nvim));
  const ctx = {
    nvim,
    lua,
    hooks: new HookEmitter(lua),
    writes: new WriteScheduler(lua, { logger }),
    sdks: new SdkLoader(),
    // NOTE: at run time both the job host's client and the remote-plugin host's `plugin.nvim` are
    // a NeovimClient, which follows buffer changes.
    documents: new DocumentStore(nvim as unknown as BufferEventsPort, lua, { logger }),
    secrets: new SecretsService(lua, logger),
    logger,
    references: new ReferenceCache(),
    validator: new SchemaValidator(),
    sandboxBackends: createSandboxBackends(),
    processes: new ProcessManager(),
    probes: new Probes(),
    startedAt: Date.now(),
    logFile,
  };
  // The send controller and the tool service need the rest of the context (and each other).
  const full: HostContext = {
    ...ctx,
    sends: undefined as unknown as SendController,
    tools: undefined as unknown as ToolService,
  };
  (full as { sends: SendController }).sends = new SendController(full);
  (full as { tools: ToolService }).tools = new ToolService(full);
  // The shim's log redacts what the host learns (resolved credentials) too.
  logger.redactor.onChange(() => {
    lua.notify('log.secrets', { values: logger.redactor.known() });
  });
  // Marks and diagnostics wait while a buffer is busy (docs/architecture.md).
  full.documents.setBusy(
    (bufnr) =>
      full.sends.isRunning(bufnr) || full.tools.isRunning(bufnr) || full.tools.pilot.isArmed(bufnr),
  );
  return full;
}
