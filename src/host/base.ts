// What every service of the host may use: the editor's adapters and the host's own facts. The
// services themselves are built by the wiring (`wiring.ts`) and handed to each other as narrow
// interfaces, never through this object, so that no service imports another's module in a circle.
import type { ReferenceCache } from '../core/chat/references.js';
import type { SdkLoader } from '../core/provider/sdk.js';
import type { ProcessManager } from '../core/tools/background.js';
import type { Probes } from '../core/tools/probes.js';
import type { SandboxBackendRegistry } from '../core/tools/sandbox/index.js';
import type { SchemaValidator } from '../core/tools/validate.js';
import type { DocumentStore } from '../editor/documents.js';
import type { HookEmitter } from '../editor/hooks.js';
import type { LuaBridge } from '../editor/lua.js';
import type { WriteScheduler } from '../editor/writequeue.js';
import type { PathLister } from './complete.js';
import type { ConfigStore } from './config.js';
import type { FileLogger } from './log.js';
import type { SecretsService } from './secrets.js';
import type { Notifier } from '../core/util/notify.js';
import type { ChatLister } from './chats/lister.js';

declare const __FLEMMA_VERSION__: string;
declare const __FLEMMA_SOURCE_HASH__: string;

export const HOST_VERSION = typeof __FLEMMA_VERSION__ === 'string' ? __FLEMMA_VERSION__ : 'dev';
export const SOURCE_HASH =
  typeof __FLEMMA_SOURCE_HASH__ === 'string' ? __FLEMMA_SOURCE_HASH__ : 'dev';

export interface HostBase {
  readonly lua: LuaBridge;
  readonly hooks: HookEmitter;
  readonly writes: WriteScheduler;
  readonly sdks: SdkLoader;
  readonly documents: DocumentStore;
  readonly secrets: SecretsService;
  /** Lua's configuration, parsed once per generation. */
  readonly config: ConfigStore;
  readonly logger: FileLogger;
  /** Messages to the user (`Flemma: …`), never waiting for Neovim. */
  readonly notify: Notifier;
  // What src/core keeps for the host's lifetime (it keeps nothing in module variables; see
  // docs/architecture.md, "State"): made once by the wiring and handed to the code that uses it.
  /** Files read for `@./file` references, kept while unchanged. */
  readonly references: ReferenceCache;
  /** Directory listings for the completion of `@./` paths, kept while unchanged. */
  readonly paths: PathLister;
  /** Ajv and the tool schemas it compiled. */
  readonly validator: SchemaValidator;
  /** The sandbox backends: bwrap, those of JavaScript tool modules, Lua's proxies. */
  readonly sandboxBackends: SandboxBackendRegistry;
  /** The background processes of the `process_*` tools. */
  readonly processes: ProcessManager;
  /** Which search programs `grep` and `find` found. */
  readonly probes: Probes;
  /** What `:Flemma chats` read of each chat file, kept while the file is unchanged. */
  readonly chats: ChatLister;
  readonly startedAt: number;
  readonly logFile: string | undefined;
}

export { notifier } from './notifier.js';
