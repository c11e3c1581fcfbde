// What every action handler receives: the editor adapters and the host's own facts.
import type { Neovim } from 'neovim';
import { SdkLoader } from '../core/provider/sdk.js';
import { HookEmitter } from '../editor/hooks.js';
import { LuaBridge, rpcPortOf } from '../editor/lua.js';
import { WriteScheduler } from '../editor/writequeue.js';
import { type BufferEventsPort, DocumentStore } from '../editor/documents.js';
import type { FileLogger } from './log.js';
import { SecretsService } from './secrets.js';
import { SendController } from './send.js';
import { ToolService } from './tools.js';
import { ConfigStore } from './config.js';

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
  /** Lua's configuration, parsed once per generation. */
  readonly config: ConfigStore;
  readonly logger: FileLogger;
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
    config: new ConfigStore(),
    logger,
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
