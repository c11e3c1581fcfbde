// The host's tool service: the registry (built-in tools, tools defined in Lua, tools loaded from
// JavaScript modules), readiness of asynchronous tool sources, and the executor that runs a call
// from its placeholder and writes the result in its place (behaviour §3.7–3.8), plus the
// preview lines of empty placeholders.
//
// Decisions (see docs/tools.md):
// - A running tool's placeholder keeps `status=approved` in the file, so a file saved mid-run
//   says what was about to happen and a crash leaves a block that can be run again; the spinner
//   and the preview line show that it runs.
// - `tools.max_concurrent` counts the tools running in one buffer.
// - The executor's own timeout is the tool's `timeout` setting, else the input's `timeout`
//   (seconds) when the schema has one, else `tools.default_timeout`; tools that time themselves
//   out (bash, grep, find) get a grace period so that their own message wins.

import { homedir } from 'node:os';
import { pathToFileURL } from 'node:url';
import type { ChatDocument, Message, PlaceholderStatus } from '../core/chat/ast.js';
import {
  type Edit,
  type PlaceholderRequest,
  bottomToTop,
  classifyToolBlocks,
  planPlaceholders,
  planResult,
  planUserSuppliedResult,
  protectionWarning,
  resolutionText,
  unresolvedToolUses,
} from '../core/chat/edits.js';
import { type ToolResultBlock, placeholder } from '../core/chat/writer.js';
import { type SandboxAccess, createExecutionContext } from '../core/tools/context.js';
import { emptyPlaceholders, toolCallAt } from '../core/tools/locate.js';
import { previewBody } from '../core/tools/preview.js';
import {
  type PersonalityPart,
  type ToolDefinition,
  type ToolOutcome,
  ToolRegistry,
  ToolRegistryError,
} from '../core/tools/registry.js';
import { nodeTruncateFs, truncateForResult } from '../core/tools/truncate.js';
import { loadValidator, validateInput } from '../core/tools/validate.js';
import { builtinTools } from '../core/tools/builtins.js';
import { type ToolCalling, type XmlLibrary, toolsSystemSection } from '../core/tools/xml.js';
import type { DocumentState } from '../editor/documents.js';
import type { ToolSpec } from '../core/provider/types.js';
import type { HostContext } from './context.js';
import { type ApprovalOutcome, ApprovalService, statusOf } from './approval.js';
import { type AlwaysEntry, alwaysEntryFor, describeEntry } from '../core/approval/session.js';
import { Autopilot, autopilotSettings } from './autopilot.js';
import { trace } from './trace.js';
import {
  type ContextOptions,
  type EditorContext,
  type EditorFacts,
  fetchEditorContext,
} from './editor-context.js';
import { refusedItems, trustDiagnostics } from './trust-check.js';
import { EMPTY_TRUST_DIGEST, trustDigest } from '../core/config/trust.js';
import type { ToolNames } from '../core/config/frontmatter.js';
import { type StatusInput, statusLines } from '../core/config/status.js';
import { relative } from 'node:path';
import {
  type SandboxState,
  type SandboxStatus,
  registerJsBackends,
  sandboxFor,
  sandboxStatusFor,
} from './sandbox.js';
import { expandPathVariable } from '../core/tools/sandbox/paths.js';
import { backendsFromToolModule } from '../core/tools/sandbox/modules.js';
import {
  type Tool,
  type ToolDeps,
  type ToolRegistryApi,
  collectFlynnTools,
  hasFlynnExports,
} from '../core/tools/flynn.js';
import {
  type ToolPolicy,
  effectivePolicy,
  hookConfig,
  hookMatch,
  policyErrorText,
} from '../core/tools/policy.js';
import { auditEntry } from '../core/tools/audit.js';
import { duplicateToolIdText } from '../core/chat/tool-ids.js';
import { wireToolName } from '../core/provider/types.js';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { describeProblem, loadDeclarativeDirs } from '../core/tools/declarative/index.js';
import { compose } from '../core/tools/middleware.js';
import { notAvailable } from '../core/tools/filter.js';
import { MiddlewareStack, rootsFor, withRootPaths } from './tool-extras.js';
import type { Config, ToolsConfig } from '../core/config/config.js';
import type { DeclarativeSettings, LuaToolResult, LuaToolSpec } from '../editor/protocol/wire.js';

export type { DeclarativeSettings, LuaToolSpec };

import type { McpManager } from '../core/tools/mcp/manager.js';
import { parseMcpSettings } from '../core/tools/mcp/config.js';
import { createMcpManager } from './mcp.js';

type LuaResult = LuaToolResult;

interface Running {
  id: string;
  name: string;
  bufnr: number;
  startedAt: number;
  controller: AbortController;
  background: boolean;
  jobId?: number;
  /** Set when the user cancelled (the result then says so, whatever the tool returns). */
  cancelled: boolean;
  /** The tool returned; its result is being written. It no longer takes a `max_concurrent` slot. */
  returned?: boolean;
}

/** Quiet time after a frontmatter edit before it is checked (ms). */
const FRONTMATTER_CHECK_MS = 300;

/** How long a carried editor context may stand in for asking again (ms). */
const CARRY_MS = 250;

/**
 * How long a finished tool's result may wait for its still-running neighbours, so that results
 * finishing close together are written in one batch (ms).
 */
const COALESCE_MS = 3;

/** An approved call waiting to be started. */
interface QueuedCall {
  id: string;
  name: string;
  input: unknown;
}

/** A finished tool's result waiting to be written into its buffer. */
interface PendingInjection {
  id: string;
  block: ToolResultBlock;
  replaceFinished: boolean;
  attempts: number;
  resolve: (injected: boolean) => void;
}

/** `tools` of the configuration when the user did not set a list (sorted). */
const DEFAULT_TOOL_NAMES: readonly string[] = [
  'bash',
  'edit',
  'find',
  'grep',
  'ls',
  'read',
  'write',
];

const CANCELLED_TEXT = 'User aborted tool execution.';
/** Tools that enforce their own timeout get this much longer before the executor steps in. */
const SELF_TIMED_GRACE_MS = 5000;
/** After an abort, how long a tool may take to wind down before its result is forced. */
const ABORT_GRACE_MS = 2000;

export class ToolService {
  readonly registry = new ToolRegistry();
  private readonly builtin = new Map<string, ToolDefinition>();
  private readonly origin = new Map<string, 'builtin' | 'lua' | 'js' | 'declarative'>();
  private readonly luaCalls = new Map<string, (result: LuaResult) => void>();
  private readonly running = new Map<string, Running>();
  private readonly previewKeys = new Map<number, string>();
  private luaSynced = false;
  private luaPending = 0;
  private jsPending = 0;
  private declarativePending = 0;
  /** The directories and env allowlist the declarative tools were last loaded with. */
  private declarativeKey: string | undefined;
  /** Middleware around every execution (`tools.middleware`, modules' `middleware` exports). */
  private readonly middleware: MiddlewareStack;
  private readonly loadedModules = new Set<string>();
  private readyWaiters: (() => void)[] = [];
  private bootAnnounced = false;
  private callSeq = 0;
  private jobSeq = 0;

  /** Autopilot's per-buffer state machine. */
  readonly pilot: Autopilot;
  /** The approval chain (built-in resolvers, Lua resolvers through the bridge). */
  readonly approval: ApprovalService;
  /** What the chain decided for each tool use (for `:Flemma tool:why`). */
  private readonly decisions = new Map<string, ApprovalOutcome>();
  /** MCP servers; their tools are registered as `mcp:<server>:<tool>` (docs/mcp.md). */
  readonly mcp: McpManager;
  private mcpProblems = '';

  constructor(private readonly ctx: HostContext) {
    this.pilot = new Autopilot({
      notifyLua: (method, params) => {
        ctx.lua.notify(method, params);
      },
      emit: (name, data) => ctx.hooks.emit(name, data),
      post: (name, data) => {
        ctx.hooks.post(name, data);
      },
      warn: (message) => {
        this.warn(message);
      },
      continueCycle: (bufnr) => this.cycle(bufnr, { userInitiated: false }),
    });
    this.approval = new ApprovalService(ctx, this.registry);
    this.middleware = new MiddlewareStack({
      info: (message) => {
        ctx.logger.info(message);
      },
      warn: (message) => {
        this.warn(message);
      },
      redactor: ctx.logger.redactor,
    });
    // MCP servers are an asynchronous tool source: their first discovery holds sends.
    this.mcp = createMcpManager(ctx, this.registry, () => {
      this.checkReady();
      this.refreshPreviews();
    });
    for (const def of builtinTools) {
      this.builtin.set(def.name, def);
      this.registry.register(def);
      this.origin.set(def.name, 'builtin');
    }
    ctx.documents.onParsed((state) => {
      this.publishPreviews(state);
      this.checkFrontmatterSoon(state);
    });
  }

  /** Each message's part of the trust digest, across parses (`trustDigest`). */
  readonly trustMemo = new WeakMap<Message, string>();
  private readonly frontmatterKeys = new Map<number, string>();
  private readonly frontmatterTimers = new Map<number, NodeJS.Timeout>();

  /**
   * After what the buffer's trust decides changed (its frontmatter, template code or file
   * references; or the chat opened), judge it once things are quiet, without sending, and show
   * what is wrong or refused as diagnostics on their lines (`trustDiagnostics`).
   */
  private checkFrontmatterSoon(state: DocumentState): void {
    const fm = state.document.frontmatter;
    const digest = trustDigest(state.document, this.trustMemo);
    const key =
      fm === undefined && digest === EMPTY_TRUST_DIGEST
        ? ''
        : `${String(fm?.span.startLine)}\0${digest}`;
    const previous = this.frontmatterKeys.get(state.bufnr);
    if (previous === key) return;
    this.frontmatterKeys.set(state.bufnr, key);
    clearTimeout(this.frontmatterTimers.get(state.bufnr));
    if (key === '') {
      // Gone: clear what an earlier one showed.
      if (previous !== undefined && previous !== '') {
        this.ctx.lua.notify('frontmatter.diagnostics', { bufnr: state.bufnr, items: [] });
      }
      return;
    }
    const timer = setTimeout(() => {
      this.frontmatterTimers.delete(state.bufnr);
      void this.checkFrontmatter(state.bufnr).catch((error: unknown) => {
        this.ctx.logger.warn(
          `checking the frontmatter of buffer ${String(state.bufnr)} failed`,
          error,
        );
      });
    }, FRONTMATTER_CHECK_MS);
    timer.unref();
    this.frontmatterTimers.set(state.bufnr, timer);
  }

  private async checkFrontmatter(bufnr: number): Promise<void> {
    const state = await this.ctx.documents.parsed(bufnr);
    if (state === undefined) return;
    const editor = await this.editorContext(bufnr, state.document);
    const items = trustDiagnostics(state.document, editor, (name) =>
      this.readsResultReferences(name),
    );
    this.ctx.lua.notify('frontmatter.diagnostics', { bufnr, items });
  }

  /** The buffer's trust changed (`:trust`): judge it again now. */
  recheckTrust(bufnr: number): void {
    clearTimeout(this.frontmatterTimers.get(bufnr));
    this.frontmatterTimers.delete(bufnr);
    void this.checkFrontmatter(bufnr).catch((error: unknown) => {
      this.ctx.logger.warn(`checking the trust of buffer ${String(bufnr)} failed`, error);
    });
  }

  /** Whether the results of the tool `name` have their file references read (`read`). */
  readsResultReferences(name: string): boolean {
    return this.registry.get(name)?.templateToolResult === true;
  }

  // ---------------------------------------------------------------------------------------------
  // Registry and readiness

  /** Lua's full set of tools (sent at host start and after every change). */
  defineFromLua(
    tools: readonly LuaToolSpec[],
    pending: number,
    jsModules: readonly string[],
    declarative?: DeclarativeSettings,
  ): void {
    const wanted = new Set<string>();
    for (const spec of tools) {
      wanted.add(spec.name);
      try {
        this.registry.register(this.luaProxy(spec));
        this.origin.set(spec.name, 'lua');
      } catch (error) {
        this.warn(error instanceof Error ? error.message : String(error));
      }
    }
    // A Lua tool that went away: a built-in of the same name comes back.
    for (const [name, origin] of this.origin) {
      if (origin !== 'lua' || wanted.has(name)) continue;
      const builtin = this.builtin.get(name);
      if (builtin === undefined) {
        this.registry.unregister(name);
        this.origin.delete(name);
      } else {
        this.registry.register(builtin);
        this.origin.set(name, 'builtin');
      }
    }
    this.luaPending = pending;
    this.luaSynced = true;
    for (const path of jsModules) this.loadModule(path);
    if (declarative !== undefined) this.loadDeclarative(declarative);
    this.checkReady();
    this.refreshPreviews();
  }

  /**
   * Loads the declarative tools (YAML/JSON files) of `tools.declarative`: again whenever the
   * directories or the env allowlist change, replacing the earlier set. Each bad file is
   * reported with its path; the others load. Sends wait for the loading like for other sources.
   */
  private loadDeclarative(settings: DeclarativeSettings): void {
    const key = JSON.stringify(settings);
    if (key === this.declarativeKey) return;
    this.declarativeKey = key;
    this.declarativePending += 1;
    // A `builtin` alias names a built-in, Lua or JavaScript tool.
    const lookup = (name: string): ToolDefinition | undefined =>
      this.origin.get(name) === 'declarative' ? undefined : this.registry.get(name);
    void loadDeclarativeDirs(settings.dirs, {
      allowEnv: settings.env,
      lookup,
      suggest: (name) => this.registry.suggest(name),
      isTaken: (name) => {
        const origin = this.origin.get(name);
        if (origin === undefined || origin === 'declarative') return undefined;
        const kind =
          origin === 'builtin'
            ? 'a built-in tool'
            : `a ${origin === 'lua' ? 'Lua' : 'JavaScript'} tool`;
        return `the name '${name}' is already taken by ${kind}`;
      },
    })
      .then((result) => {
        if (key !== this.declarativeKey) return;
        for (const [name, origin] of [...this.origin]) {
          if (origin === 'declarative' && !result.files.has(name)) {
            this.registry.unregister(name);
            this.origin.delete(name);
          }
        }
        for (const def of result.tools) {
          try {
            this.registry.register(def);
            this.origin.set(def.name, 'declarative');
          } catch (error) {
            this.warn(
              `Declarative tool ${result.files.get(def.name) ?? def.name}: ${describeError(error)}`,
            );
          }
        }
        for (const problem of result.problems) this.warn(describeProblem(problem));
      })
      .catch((error: unknown) => {
        this.warn(`Loading declarative tools failed: ${describeError(error)}`);
      })
      .finally(() => {
        this.declarativePending -= 1;
        this.checkReady();
        this.refreshPreviews();
      });
  }

  /** Previews depend on the set of tools (a new tool may bring its own formatter). */
  private refreshPreviews(): void {
    this.previewKeys.clear();
    for (const state of this.ctx.documents.all()) this.publishPreviews(state);
  }

  /** All sources have answered (Lua's, JavaScript modules' and MCP servers' first discovery). */
  isReady(): boolean {
    return (
      this.luaSynced &&
      this.luaPending === 0 &&
      this.jsPending === 0 &&
      this.declarativePending === 0 &&
      this.mcp.isReady()
    );
  }

  /**
   * The `mcp` section of the configuration (sent with Lua's tools): servers start, stop or
   * restart as it changed. Problems with it are shown once per change.
   */
  configureMcp(raw: unknown): void {
    const settings = parseMcpSettings(raw);
    const problems = settings.problems.join('\n');
    if (problems !== this.mcpProblems) {
      this.mcpProblems = problems;
      for (const problem of settings.problems) this.warn(problem);
    }
    this.mcp.configure(settings);
  }

  /** Resolves when ready, or `false` when `signal` aborts first. */
  whenReady(signal: AbortSignal): Promise<boolean> {
    if (this.isReady()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const onAbort = (): void => {
        resolve(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.readyWaiters.push(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(!signal.aborted);
      });
    });
  }

  private checkReady(): void {
    if (!this.isReady()) return;
    const waiters = this.readyWaiters;
    this.readyWaiters = [];
    for (const waiter of waiters) waiter();
    if (!this.bootAnnounced) {
      this.bootAnnounced = true;
      this.ctx.hooks.emit('boot:complete', {}).catch(() => undefined);
    }
  }

  /** Load a JavaScript tool module (`definitions` array, `resolve(register, done)`, or default). */
  private loadModule(path: string): void {
    if (this.loadedModules.has(path)) return;
    this.loadedModules.add(path);
    this.jsPending += 1;
    let finished = false;
    const done = (error?: unknown): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      this.jsPending -= 1;
      if (error !== undefined && error !== null) {
        this.warn(`tool module ${path} failed: ${describeError(error)}`);
      }
      this.checkReady();
      this.refreshPreviews();
    };
    const register = (nameOrDef: string | ToolDefinition, maybeDef?: ToolDefinition): void => {
      const def = typeof nameOrDef === 'string' ? { ...maybeDef, name: nameOrDef } : nameOrDef;
      try {
        this.registry.register(fromJsDefinition(def));
        this.origin.set(def.name, 'js');
      } catch (error) {
        this.warn(`tool module ${path}: ${error instanceof Error ? error.message : String(error)}`);
      }
    };
    const timer = setTimeout(() => {
      done(new Error('timed out waiting for its tools'));
    }, 30_000);
    import(pathToFileURL(path).href)
      .then(async (loaded: Record<string, unknown>) => {
        const mod = (loaded['default'] ?? loaded) as Record<string, unknown>;
        const definitions = mod['definitions'] ?? loaded['definitions'];
        const resolver = mod['resolve'] ?? loaded['resolve'];
        // Sandbox backends a tool module brings along are registered before its tools.
        const backends = backendsFromToolModule(loaded);
        for (const problem of registerJsBackends(backends)) {
          this.warn(`tool module ${path}: ${problem}`);
        }
        // Flynn-style exports (tool, tools, createTool, createTools, setup; docs/tools.md).
        const flynn = hasFlynnExports(loaded);
        if (flynn) {
          const deps = await this.moduleDeps(path);
          await collectFlynnTools(
            loaded,
            deps,
            (tool) => {
              deps.registry.register(tool);
            },
            (problem) => {
              this.warn(`tool module ${path}: ${problem}`);
            },
          );
        }
        // Middleware a module brings along wraps every tool's execution.
        const middleware = mod['middleware'] ?? loaded['middleware'];
        if (middleware !== undefined) {
          const problem = this.middleware.addFromModule(path, middleware);
          if (problem !== undefined) this.warn(`tool module ${path}: ${problem}`);
        }
        if (Array.isArray(definitions)) {
          for (const def of definitions) register(def as ToolDefinition);
          done();
        } else if (typeof resolver === 'function') {
          await (resolver as (r: typeof register, d: typeof done) => unknown)(register, done);
        } else if (backends.length > 0 || flynn || middleware !== undefined) {
          done();
        } else {
          done(
            new Error(
              'exports none of `tool`, `tools`, `createTool`, `createTools`, `setup`, `definitions`, `resolve`, `sandboxBackends` or `middleware`',
            ),
          );
        }
      })
      .catch((error: unknown) => {
        done(error);
      });
  }

  /** What a module's factories and `setup` receive (docs/tools.md, "JavaScript and TypeScript tools"). */
  private async moduleDeps(path: string): Promise<ToolDeps> {
    let tools: Record<string, unknown> = {};
    try {
      tools = (await this.config()).tools;
    } catch (error) {
      this.ctx.logger.warn(`tool module ${path}: reading the configuration failed`, error);
    }
    const logger = this.ctx.logger;
    const prefix = `tool module ${path}: `;
    return {
      registry: this.registryApi(),
      getConfig: (key) => {
        const value = asRecord(tools[key]);
        return value === undefined ? undefined : structuredClone(value);
      },
      log: {
        debug: (message) => {
          logger.debug(prefix + message);
        },
        info: (message) => {
          logger.info(prefix + message);
        },
        warn: (message) => {
          logger.warn(prefix + message);
        },
        error: (message) => {
          logger.error(prefix + message);
        },
      },
      modulePath: path,
    };
  }

  /** The registry as JavaScript modules see it (Flynn's contract: a duplicate name is an error). */
  registryApi(): ToolRegistryApi {
    const registry = this.registry;
    const view = (def: ToolDefinition | undefined): Tool | undefined => {
      if (def === undefined) return undefined;
      const run = def.execute;
      const tool: Tool = {
        name: def.name,
        description: def.description,
        inputSchema: structuredClone(def.inputSchema),
        execute: async (args, ctx) => {
          if (run === undefined) {
            return { success: false, output: '', error: `Tool '${def.name}' cannot be executed` };
          }
          const outcome = await run(args, ctx);
          return outcome.ok
            ? { success: true, output: outcome.output }
            : { success: false, output: outcome.partialOutput ?? '', error: outcome.error };
        },
      };
      if (def.aliases !== undefined) tool.aliases = [...def.aliases];
      if (def.groups !== undefined) tool.groups = [...def.groups];
      if (def.dangerous !== undefined) tool.dangerous = def.dangerous;
      if (def.enabled !== undefined) tool.enabled = def.enabled;
      return tool;
    };
    return {
      register: (tool) => {
        registry.add(fromJsDefinition(tool as unknown as Record<string, unknown>));
        this.origin.set(tool.name, 'js');
        this.refreshPreviews();
      },
      unregister: (name) => {
        const removed = registry.unregister(name);
        if (removed) {
          this.origin.delete(name);
          this.refreshPreviews();
        }
        return removed;
      },
      get: (name) => view(registry.get(name)),
      getByApiName: (api) => view(registry.getByApiName(api)),
      list: () => registry.list().map((def) => view(def) as Tool),
      has: (name) => registry.has(name),
      apiName: (name) => registry.apiName(name),
      setPolicy: (policy) => {
        registry.setPolicy(policy);
      },
      getPolicy: () => registry.getPolicy(),
    };
  }

  /** The tool policy in force for a buffer's configuration (its provider's override included). */
  policyFor(config: Pick<Config, 'tools' | 'provider'>): ToolPolicy {
    const policy = effectivePolicy(config.tools, config.provider, this.registry.getPolicy());
    for (const warning of policy.warnings) this.warnOnce(warning, warning);
    return policy;
  }

  /** Whether the policy blocks a call (by the name in the call: canonical or API name). */
  private policyBlocks(name: string, config: Config): boolean {
    const policy = this.policyFor(config);
    if (policy.permissive) return false;
    return !policy.isAllowed(this.registry.resolve(name) ?? name);
  }

  /**
   * A tool name from a provider's reply as the buffer shows it: the canonical name. Adapters turn
   * `__` back into `:`; the API name is that again with `:` as `__`.
   */
  fromWire(name: string): string {
    if (this.registry.has(name)) return name;
    const def = this.registry.getByApiName(wireToolName(name)) ?? this.registry.getByApiName(name);
    return def?.name ?? name;
  }

  /** One audit entry for a call the `log` hook names: the host log, and `tools.hooks.audit_file`. */
  private async audit(
    config: Config,
    fields: Parameters<typeof auditEntry>[0],
    def: ToolDefinition,
  ): Promise<void> {
    const raw = config.tools['hooks'];
    const match = hookMatch(def, hookConfig(raw));
    if (!match.matched || match.action !== 'log') return;
    const entry = auditEntry(fields, this.ctx.logger.redactor);
    const line = JSON.stringify(entry);
    this.ctx.logger.info(`audit ${line}`);
    const file = asRecord(raw)?.['audit_file'];
    if (typeof file !== 'string' || file === '') return;
    const path = file === '~' || file.startsWith('~/') ? homedir() + file.slice(1) : file;
    try {
      await mkdir(dirname(path), { recursive: true });
      await appendFile(path, line + '\n', 'utf8');
    } catch (error) {
      this.warnOnce(
        `audit:${path}`,
        `Could not write the tool audit file ${path}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  private luaProxy(spec: LuaToolSpec): ToolDefinition {
    const schema = Array.isArray(spec.input_schema) ? {} : spec.input_schema;
    const def: ToolDefinition = {
      name: spec.name,
      description: spec.description,
      inputSchema: normalizeLuaSchema(schema) as Record<string, unknown>,
      async: spec.async === true,
      canAutoApproveIfSandboxed: (spec.capabilities ?? []).includes(
        'can_auto_approve_if_sandboxed',
      ),
      templateToolResult: (spec.capabilities ?? []).includes('template_tool_result'),
    };
    if (spec.strict !== undefined) def.strict = spec.strict;
    if (spec.enabled !== undefined) def.enabled = spec.enabled;
    if (spec.label !== undefined) def.label = spec.label;
    if (spec.personalities !== undefined && !Array.isArray(spec.personalities)) {
      def.personalities = spec.personalities;
    }
    if (spec.has_execute === true) {
      def.execute = (input, execCtx) => this.runLua(spec.name, input, execCtx);
    }
    this.luaExtras(spec, def);
    return def;
  }

  /** A Lua tool's system prompt, approval default and rejection text (CodeCompanion tools). */
  private luaExtras(spec: LuaToolSpec, def: ToolDefinition): void {
    if (typeof spec.system_prompt === 'string' && spec.system_prompt.trim() !== '') {
      def.systemPrompt = spec.system_prompt;
    }
    if (typeof spec.require_approval === 'boolean') def.requireApproval = spec.require_approval;
    if (spec.require_approval === 'function') {
      def.requireApproval = async (input, call) => {
        const answer = await this.ctx.lua.call('tools.require_approval', {
          name: spec.name,
          input: input ?? {},
          bufnr: call.bufnr,
          tool_id: call.toolId,
        });
        if (typeof answer?.error === 'string') throw new Error(answer.error);
        return answer?.value ?? undefined;
      };
    }
    this.luaSessionExtras(spec, def);
    if (spec.has_rejected === true) {
      def.formatRejected = async (reason, input) =>
        this.ctx.lua.call('tools.format_rejected', {
          name: spec.name,
          input: input ?? {},
          reason,
        });
    }
  }

  /** A Lua tool's per-command approval, YOLO opt-out, command string and cancellation text. */
  private luaSessionExtras(spec: LuaToolSpec, def: ToolDefinition): void {
    if (spec.require_cmd_approval === true) def.requireCmdApproval = true;
    if (spec.never_auto_approve === true) def.neverAutoApprove = true;
    if (spec.has_cmd_string === true) {
      def.cmdString = (input) =>
        this.ctx.lua.call('tools.cmd_string', { name: spec.name, input: input ?? {} });
    }
    if (spec.has_cancelled === true) {
      def.formatCancelled = (input) =>
        this.ctx.lua.call('tools.format_cancelled', { name: spec.name, input: input ?? {} });
    }
  }

  /**
   * The error text of a cancelled call: the tool's own formatter when it has one, else
   * `The user cancelled the execution of the <name> tool` (CodeCompanion's wording).
   */
  private async cancellationText(
    bufnr: number,
    id: string,
    name: string,
    input: unknown,
  ): Promise<string> {
    const format = this.registry.resolve(name)?.formatCancelled;
    if (format !== undefined) {
      try {
        const text = await format(input, { bufnr, toolId: id });
        if (typeof text === 'string' && text !== '') return text;
      } catch (error) {
        this.ctx.logger.warn(`formatting the cancellation of ${name} (${id}) failed`, error);
      }
    }
    return `The user cancelled the execution of the ${name} tool`;
  }

  /**
   * The error text of a rejected call: the tool's own rejection formatter when it has one (its
   * `reason` is what the user typed into the block), else the default (`resolutionText`).
   */
  private async rejectionText(
    bufnr: number,
    id: string,
    name: string,
    input: unknown,
    content: string,
  ): Promise<string> {
    const format = this.registry.get(name)?.formatRejected;
    if (format !== undefined) {
      try {
        const text = await format(content.trim(), input, { bufnr, toolId: id });
        if (typeof text === 'string' && text !== '') return text;
      } catch (error) {
        this.ctx.logger.warn(`formatting the rejection of ${name} (${id}) failed`, error);
      }
    }
    return resolutionText('rejected', content);
  }

  /** Error texts for calls that cannot run at all, by tool id (written by Phase 2). */
  private readonly preresolved = new Map<string, string>();
  /** Calls whose arguments did not parse, by tool id: the tool's name and the parser's message. */
  private readonly invalidInput = new Map<string, { name: string; reason: string }>();

  /** A reply's tool call came with arguments that are not JSON (the send says so). */
  markInvalidInput(id: string, name: string, reason: string): void {
    this.invalidInput.set(id, { name, reason });
  }

  /**
   * The error result of a call that cannot run, or undefined: arguments that did not parse
   * (CodeCompanion's `You made an error in calling the X tool: "…"`), or a tool that does not exist
   * (``Tool `foo` not found. The available tools are: …``; only once every tool source answered).
   */
  private earlyResolution(id: string, name: string): string | undefined {
    const invalid = this.invalidInput.get(id);
    if (invalid !== undefined) {
      this.invalidInput.delete(id);
      return `You made an error in calling the ${invalid.name} tool: "${invalid.reason}"`;
    }
    if (this.registry.resolve(name) !== undefined || !this.isReady()) return undefined;
    return notFoundText(
      name,
      this.registry
        .list()
        .filter((def) => def.enabled !== false)
        .map((def) => def.name),
    );
  }

  /** Lua → host: the result of a Lua tool's execution. */
  luaResult(callId: string, result: LuaResult): void {
    const settle = this.luaCalls.get(callId);
    if (settle === undefined) return;
    this.luaCalls.delete(callId);
    settle(result);
  }

  private luaContext = new Map<string, Record<string, unknown>>();

  private runLua(
    name: string,
    input: unknown,
    execCtx: Parameters<NonNullable<ToolDefinition['execute']>>[1],
  ): Promise<ToolOutcome> {
    const callId = String(++this.callSeq);
    const extra = this.luaContext.get(execCtx.tool_id) ?? {};
    return new Promise<ToolOutcome>((resolve) => {
      const onAbort = (): void => {
        this.luaCalls.delete(callId);
        this.ctx.lua.notify('tools.cancel', { call_id: callId });
        resolve({ ok: false, error: CANCELLED_TEXT });
      };
      execCtx.signal.addEventListener('abort', onAbort, { once: true });
      this.luaCalls.set(callId, (result) => {
        execCtx.signal.removeEventListener('abort', onAbort);
        resolve(outcomeOf(result));
      });
      this.ctx.lua.notify('tools.execute', {
        call_id: callId,
        name,
        input: input ?? {},
        ctx: {
          bufnr: execCtx.bufnr,
          cwd: execCtx.cwd,
          timeout: execCtx.timeout,
          tool_id: execCtx.tool_id,
          ...extra,
        },
      });
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Queries

  /**
   * The tools offered to the model. The default list (the built-in names) also takes every
   * other enabled tool; a list the user set is taken as it is. Unknown names are reported.
   */
  specsFor(
    list: readonly string[] | undefined,
    config?: Pick<Config, 'tools' | 'provider'>,
  ): ToolSpec[] {
    const specs = this.selectedSpecs(list);
    if (config === undefined) return specs;
    // The tool policy filters what is offered (docs/policy.md).
    const policy = this.policyFor(config);
    if (policy.permissive) return specs;
    return specs.filter((spec) => policy.isAllowed(this.registry.get(spec.name) ?? spec.name));
  }

  private selectedSpecs(list: readonly string[] | undefined): ToolSpec[] {
    const names = list === undefined ? [...DEFAULT_TOOL_NAMES] : [...list];
    const isDefault =
      list === undefined ||
      (names.length === DEFAULT_TOOL_NAMES.length &&
        [...names].sort().every((name, i) => name === DEFAULT_TOOL_NAMES[i]));
    const wanted = new Set<string>();
    for (const name of names) {
      if (this.registry.has(name)) {
        wanted.add(name);
        continue;
      }
      if (DEFAULT_TOOL_NAMES.includes(name) && !this.registry.has(name)) continue;
      const guess = this.registry.suggest(name);
      this.warn(
        `Unknown tool '${name}' in tools${guess === undefined ? '' : ` (did you mean '${guess}'?)`}`,
      );
    }
    if (isDefault) {
      for (const def of this.registry.list()) if (def.enabled !== false) wanted.add(def.name);
    }
    return this.registry.specs([...wanted]);
  }

  /**
   * The system prompt section for the tools offered (see `toolsSystemSection`): the tools' own
   * `systemPrompt`s, or in XML tool calling the format and every tool's description.
   */
  systemSection(specs: readonly ToolSpec[], mode: ToolCalling, xml?: XmlLibrary): string {
    const tools = specs.map((spec) => ({
      name: spec.name,
      description: spec.description,
      inputSchema: spec.inputSchema,
      systemPrompt: this.registry.get(spec.name)?.systemPrompt,
    }));
    return toolsSystemSection(tools, mode, xml?.XMLBuilder);
  }

  /** Running tools of a buffer that count against `tools.max_concurrent`. */
  private slotsUsed(bufnr: number): number {
    return this.runningIn(bufnr).filter((run) => run.returned !== true).length;
  }

  runningIn(bufnr: number, options: { includeBackground?: boolean } = {}): Running[] {
    return [...this.running.values()].filter(
      (run) => run.bufnr === bufnr && (options.includeBackground === true || !run.background),
    );
  }

  isRunning(bufnr: number): boolean {
    return this.runningIn(bufnr, { includeBackground: true }).length > 0;
  }

  list(): {
    id: string;
    name: string;
    bufnr: number;
    age_ms: number;
    background: boolean;
    job_id: number | null;
  }[] {
    const now = Date.now();
    return [...this.running.values()]
      .sort((a, b) => a.startedAt - b.startedAt)
      .map((run) => ({
        id: run.id,
        name: run.name,
        bufnr: run.bufnr,
        age_ms: now - run.startedAt,
        background: run.background,
        job_id: run.jobId ?? null,
      }));
  }

  // ---------------------------------------------------------------------------------------------
  // Commands

  /** `<M-CR>` / `:Flemma tool:execute`: the call under the cursor (0-based `row`). */
  async executeAt(bufnr: number, row: number): Promise<void> {
    const state = await this.ctx.documents.attach(bufnr);
    if (state === undefined) return;
    const found = toolCallAt(state.document, row + 1);
    if (!found.ok) {
      this.warn(found.error);
      return;
    }
    const { call } = found;
    const editor = await this.editorContext(bufnr, state.document);
    if (editor.problem !== undefined) {
      this.ctx.lua.notify('notify', { level: 'error', message: editor.problem });
      return;
    }
    const config = editor.config;
    const settings = autopilotSettings(config.tools);
    // A paused autopilot goes on once this tool is done.
    this.pilot.rearmIfPaused(bufnr, settings);
    const status = call.result?.placeholder?.status;
    if (status === 'rejected' || status === 'denied' || status === 'aborted') {
      const text =
        status === 'rejected'
          ? await this.rejectionText(
              bufnr,
              call.id,
              call.name,
              call.input,
              call.result?.content ?? '',
            )
          : (this.preresolved.get(call.id) ?? resolutionText(status, call.result?.content ?? ''));
      await this.inject(bufnr, call.id, { ok: false, error: text }, false);
      await this.pilot.toolsComplete(bufnr, settings);
      return;
    }
    await this.execute(bufnr, call.id, call.name, call.input, config, {
      replaceFinished: call.result !== undefined && call.result.placeholder === undefined,
      facts: editor.facts,
    });
  }

  /**
   * `<C-]>` and each automatic step of autopilot: the three phases of the seed.
   * Phase 1 gives every tool use without a result a placeholder whose status the approval chain
   * decides (`aborted` for calls in an interrupted reply) and stops at the first `pending` one;
   * when it wrote only approved/denied/aborted ones, Phase 2 follows on the next tick. Phase 2
   * runs approved tools (up to `tools.max_concurrent`), resolves denied/rejected/aborted ones
   * into error results, turns a pending block the user filled into their result, and stops at
   * an empty pending one. Phase 3 sends once every call has a result.
   */
  cycle(
    bufnr: number,
    options: { userInitiated: boolean } = { userInitiated: true },
  ): Promise<void> {
    // One step at a time per buffer: a <C-]> pressed while autopilot's step runs waits for it,
    // and then sees the placeholders that step wrote.
    const previous = this.cycles.get(bufnr) ?? Promise.resolve();
    const next = previous.then(
      () => this.cycleStep(bufnr, options),
      () => this.cycleStep(bufnr, options),
    );
    const settled = next.catch(() => undefined);
    this.cycles.set(bufnr, settled);
    void settled.then(() => {
      if (this.cycles.get(bufnr) === settled) this.cycles.delete(bufnr);
    });
    return next;
  }

  private readonly cycles = new Map<number, Promise<unknown>>();

  private async cycleStep(bufnr: number, options: { userInitiated: boolean }): Promise<void> {
    trace('cycle:start');
    const user = options.userInitiated;
    if (this.ctx.sends.isRunning(bufnr)) {
      if (user) this.warn('A request is already in progress. Use <C-c> to cancel it first.');
      return;
    }
    if ((await this.ctx.documents.attach(bufnr)) === undefined) return;
    let state = await this.fresh(bufnr);
    trace('cycle:fresh');
    if (state === undefined) return;
    // An automatic step starts from the context its trigger brought along (the end of a reply, the
    // last tool's return), when that is fresh; a step the user asked for always asks.
    const carried = this.takeCarried(bufnr);
    const editor =
      (user ? undefined : carried) ?? (await this.editorContext(bufnr, state.document));
    if (editor.problem !== undefined) {
      this.ctx.lua.notify('notify', { level: 'error', message: editor.problem });
      this.pilot.disarm(bufnr);
      return;
    }
    const config = editor.config;
    const settings = autopilotSettings(config.tools);

    // Phase 1: placeholders with the chain's decisions.
    const unresolved = unresolvedToolUses(state.document);
    let dispatched = false;
    if (unresolved.length > 0) {
      const requests: { id: string; status: PlaceholderStatus }[] = [];
      for (const use of unresolved) {
        if (use.aborted) {
          requests.push({ id: use.id, status: 'aborted' });
          continue;
        }
        if (use.duplicateOf !== undefined) {
          // Never run: Phase 2 writes the duplicate-id error result (tool-ids.ts).
          this.decisions.set(use.id, { decision: 'deny', resolver: null, trace: [], skipped: [] });
          requests.push({ id: use.id, status: 'denied' });
          continue;
        }
        const early = this.earlyResolution(use.id, use.name);
        if (early !== undefined) {
          // Nothing to approve: a tool that does not exist, or arguments that were not JSON.
          // Phase 2 writes the text as the call's error result.
          this.preresolved.set(use.id, early);
          this.decisions.set(use.id, { decision: 'deny', resolver: null, trace: [], skipped: [] });
          requests.push({ id: use.id, status: 'denied' });
          continue;
        }
        const decided = await this.approval.decide(
          { bufnr, toolId: use.id, toolName: use.name, input: use.input },
          config,
          editor.approval,
          editor.facts,
        );
        this.decisions.set(use.id, decided);
        requests.push({ id: use.id, status: statusOf(decided.decision) });
      }
      trace('cycle:decided');
      if (requests.some((request) => request.status === 'pending')) {
        await this.applyEdits(bufnr, planPlaceholders(state.document, state.lines, requests));
        const parsed = await this.fresh(bufnr);
        if (parsed !== undefined) await this.waitForUser(bufnr, parsed);
        this.pilot.pause(bufnr);
        return;
      }
      // Only approved/denied/aborted: the approved calls start now, and Phase 2 resolves the
      // others on the next tick (an undo boundary between the two).
      const approvedNow = unresolved.filter((use, index) => requests[index]?.status === 'approved');
      if (approvedNow.length > 0) {
        this.pilot.arm(bufnr, settings);
        dispatched = true;
        await this.placeWhileRunning(bufnr, state, requests, () => {
          this.dispatch(bufnr, approvedNow, config, editor.facts, user);
        });
      } else {
        await this.applyEdits(bufnr, planPlaceholders(state.document, state.lines, requests));
      }
      trace('cycle:placed');
      // Every call approved and started: nothing is left for Phase 2, and the step ends here
      // (autopilot's next step waits for it).
      if (requests.every((request) => request.status === 'approved')) return;
      await new Promise<void>((resolve) => setImmediate(resolve));
      state = await this.fresh(bufnr);
      if (state === undefined) return;
    }

    // Phase 2.
    trace('cycle:phase2');
    const groups = classifyToolBlocks(state.document);
    const edits: Edit[] = [];
    for (const block of groups.pendingWithContent) {
      const edit = planUserSuppliedResult(state.document, state.lines, block.id);
      if (edit !== undefined) edits.push(edit);
    }
    let resolved = 0;
    for (const [status, blocks] of [
      ['denied', groups.denied],
      ['rejected', groups.rejected],
      ['aborted', groups.aborted],
    ] as const) {
      for (const block of blocks) {
        const text =
          status === 'rejected'
            ? await this.rejectionText(bufnr, block.id, block.name, block.input, block.content)
            : status === 'denied'
              ? block.duplicateOf !== undefined
                ? duplicateToolIdText(block.duplicateOf)
                : this.policyBlocks(block.name, config)
                  ? policyErrorText(block.name)
                  : (this.preresolved.get(block.id) ?? resolutionText(status, block.content))
              : resolutionText(status, block.content, block.abortMessage);
        const edit = planResult(state.document, state.lines, block.id, {
          id: block.id,
          output: text,
          isError: true,
        });
        if (edit !== undefined) {
          edits.push(edit);
          resolved += 1;
        }
      }
    }
    if (edits.length > 0) {
      await this.applyEdits(bufnr, bottomToTop(edits));
    }
    if (groups.approvedWithContent.length > 0) {
      this.warn(protectionWarning(groups.approvedWithContent.length));
    }
    if (dispatched) {
      // Phase 1 started the approved calls; they report through their results (and autopilot
      // goes on when the last one is in).
      return;
    }
    if (groups.approved.length > 0) {
      this.pilot.arm(bufnr, settings);
      this.dispatch(
        bufnr,
        groups.approved.map((block) => ({ id: block.id, name: block.name, input: block.input })),
        config,
        editor.facts,
        user,
      );
      return;
    }
    if (groups.pendingEmpty.length > 0 || groups.approvedWithContent.length > 0) {
      const latest = await this.fresh(bufnr);
      if (latest !== undefined) await this.waitForUser(bufnr, latest);
      this.pilot.pause(bufnr);
      return;
    }
    if (resolved > 0 || groups.pendingWithContent.length > 0) {
      // Error results (and results the user typed) are in; autopilot sends them on the next step,
      // a user's <C-]> sends them now.
      if (!user) {
        this.pilot.arm(bufnr, settings);
        await this.pilot.toolsComplete(bufnr, settings);
        return;
      }
    }
    if (this.isRunning(bufnr)) {
      if (user) this.warn('Cannot send while tool execution is in progress.');
      this.pilot.settle(bufnr);
      return;
    }
    // Phase 3.
    trace('cycle:phase3');
    await this.ctx.sends.send(bufnr, editor, { userInitiated: user });
  }

  /**
   * The cycle stopped for the user: the cursor goes to the first empty pending (or edited
   * approved) block, a notification says what waits, and `approval:needed` fires so that a
   * statusline or another window can tell.
   */
  private async waitForUser(bufnr: number, state: DocumentState): Promise<void> {
    const groups = classifyToolBlocks(state.document);
    const waiting = [...groups.pendingEmpty, ...groups.approvedWithContent].sort(
      (a, b) => a.toolUseLine - b.toolUseLine,
    );
    const first = waiting[0];
    if (first === undefined) return;
    this.ctx.lua.notify('tools.cursor', { bufnr, row: first.toolResultLine - 1 });
    // Short, so that it fits the command line without a hit-enter prompt.
    const names = [...new Set(waiting.map((block) => block.name))].join(', ');
    this.info(
      waiting.length === 1
        ? `Approval needed: ${names} (<M-CR> runs it)`
        : `Approval needed: ${String(waiting.length)} calls (${names})`,
    );
    await this.ctx.hooks.emit('approval:needed', {
      bufnr,
      tool_ids: waiting.map((block) => block.id),
      tool_names: waiting.map((block) => block.name),
    });
  }

  /** A reply finished: autopilot counts the turn and goes on when it asked for tools. */
  async responseComplete(bufnr: number, config?: Config): Promise<void> {
    trace('response:complete');
    const state = await this.fresh(bufnr);
    trace('response:fresh');
    if (state === undefined) return;
    const last = [...state.document.messages].reverse().find((m) => m.role === 'Assistant');
    const hasToolUse =
      last !== undefined && last.segments.some((segment) => segment.kind === 'tool_use');
    const settings = autopilotSettings((config ?? (await this.config())).tools);
    await this.pilot.responseComplete(bufnr, hasToolUse, settings);
  }

  /**
   * `:Flemma tool:approve` / `tool:reject [message]`: rewrite the status of the placeholder of
   * the call under the cursor (a call without one gets one). A rejection message replaces the
   * block's content. A finished result is left alone.
   */
  async setStatusAt(
    bufnr: number,
    row: number,
    status: 'approved' | 'rejected',
    message?: string,
  ): Promise<void> {
    const state = await this.ctx.documents.attach(bufnr);
    if (state === undefined) return;
    const found = toolCallAt(state.document, row + 1);
    if (!found.ok) {
      this.warn(found.error);
      return;
    }
    const { call } = found;
    const result = call.result;
    if (result === undefined) {
      await this.applyEdits(
        bufnr,
        planPlaceholders(state.document, state.lines, [{ id: call.id, status }]),
      );
      if (message !== undefined) await this.setStatusAt(bufnr, row, status, message);
      return;
    }
    if (result.placeholder === undefined) {
      this.warn(`Tool ${call.id} has already completed`);
      return;
    }
    const start = result.span.startLine - 1;
    const end = result.span.endLine;
    const content = status === 'rejected' && message !== undefined ? message : result.content;
    await this.applyEdits(bufnr, [
      {
        start,
        end,
        lines: placeholder(call.id, status, content),
        expect: state.lines.slice(start, end),
      },
    ]);
  }

  // ---------------------------------------------------------------------------------------------
  // Session approvals and cancelling what waits (CodeCompanion's always / YOLO / cancel)

  /** The "always" key of a call (the tool, or the tool and its command string). */
  private alwaysEntry(
    bufnr: number,
    call: { id: string; name: string; input: unknown },
  ): Promise<AlwaysEntry> {
    return alwaysEntryFor(
      { bufnr, toolId: call.id, toolName: call.name, input: call.input },
      (name) => this.registry.resolve(name),
    );
  }

  /**
   * `:Flemma tool:approve-always`: approve the call under the cursor and remember "always" for
   * its tool (or its tool and command) in this buffer; other calls waiting in the buffer that the
   * same approval covers are approved too.
   */
  async approveAlwaysAt(bufnr: number, row: number): Promise<AlwaysEntry | undefined> {
    const state = await this.fresh(bufnr);
    if (state === undefined) return undefined;
    const found = toolCallAt(state.document, row + 1);
    if (!found.ok) {
      this.warn(found.error);
      return undefined;
    }
    const { call } = found;
    if (call.result !== undefined && call.result.placeholder === undefined) {
      this.warn(`Tool ${call.id} has already completed`);
      return undefined;
    }
    let entry: AlwaysEntry;
    try {
      entry = await this.alwaysEntry(bufnr, call);
    } catch (error) {
      this.warn(
        `Cannot approve ${call.name} always: its command string failed (${describeError(error)})`,
      );
      return undefined;
    }
    this.approval.session.remember(bufnr, entry);
    const others: string[] = [];
    for (const block of classifyToolBlocks(state.document).pendingEmpty) {
      if (block.id === call.id) continue;
      try {
        const other = await this.alwaysEntry(bufnr, block);
        if (other.tool === entry.tool && other.command === entry.command) others.push(block.id);
      } catch {
        // A call whose command string cannot be computed stays pending.
      }
    }
    await this.setStatusAt(bufnr, row, 'approved');
    for (const id of others) {
      const latest = await this.fresh(bufnr);
      const block =
        latest === undefined
          ? undefined
          : classifyToolBlocks(latest.document).pendingEmpty.find((b) => b.id === id);
      if (block !== undefined) await this.setStatusAt(bufnr, block.toolUseLine - 1, 'approved');
    }
    const more = others.length > 0 ? ` (and ${String(others.length)} more waiting call(s))` : '';
    this.info(`Approved always in this buffer: ${describeEntry(entry)}${more}`);
    return entry;
  }

  /** `:Flemma tool:always`: what is approved "always" in the buffer, and whether YOLO is on. */
  async sessionLines(bufnr: number): Promise<string[]> {
    const entries = this.approval.session.list(bufnr);
    const tools = await this.bufferTools(bufnr);
    const lines = [
      entries.length === 0
        ? 'Nothing is approved "always" in this buffer'
        : `Approved "always" in this buffer: ${entries.map(describeEntry).join(', ')}`,
    ];
    lines.push(`YOLO mode: ${this.yoloState(bufnr, tools)}`);
    return lines;
  }

  /** The buffer's effective `tools` options (its frontmatter applied). */
  private async bufferTools(bufnr: number): Promise<ToolsConfig> {
    const state = await this.fresh(bufnr);
    const config =
      state === undefined
        ? await this.config()
        : (await this.editorContext(bufnr, state.document)).config;
    return config.tools;
  }

  /** `on`/`off`, with where it comes from. */
  private yoloState(bufnr: number, tools: ToolsConfig): string {
    const toggled = this.approval.session.yolo(bufnr);
    if (toggled !== undefined) return `${toggled ? 'on' : 'off'} (:Flemma tool:yolo)`;
    return tools.yolo ? 'on (tools.yolo)' : 'off';
  }

  /** `:Flemma tool:forget-always [tool]`: forget the buffer's "always" approvals. */
  forgetAlways(bufnr: number, tool?: string): number {
    const removed = this.approval.session.forget(bufnr, tool);
    this.info(
      removed === 0
        ? `Nothing to forget${tool === undefined ? '' : ` for ${tool}`}`
        : `Forgot ${String(removed)} "always" approval(s)`,
    );
    return removed;
  }

  /** `:Flemma tool:yolo [on|off|toggle]`: the buffer's YOLO toggle for this session. */
  async setYolo(bufnr: number, mode: 'on' | 'off' | 'toggle'): Promise<boolean> {
    let on: boolean;
    if (mode === 'toggle') {
      const current = this.approval.session.yolo(bufnr) ?? (await this.bufferTools(bufnr)).yolo;
      on = !current;
    } else {
      on = mode === 'on';
    }
    this.approval.session.setYolo(bufnr, on);
    this.info(
      on
        ? 'YOLO mode on in this buffer: new tool calls run without asking (except bash and other neverAutoApprove tools)'
        : 'YOLO mode off in this buffer',
    );
    return on;
  }

  /**
   * `:Flemma tool:cancel-pending` (and `<C-c>` when nothing runs): every call waiting in the
   * buffer — pending, or approved but held back by a pending one — gets the error result
   * `The user cancelled the execution of the <name> tool`; none of them runs. Autopilot then
   * goes on as after a rejection. Returns how many were cancelled.
   */
  async cancelPending(bufnr: number): Promise<number> {
    const state = await this.fresh(bufnr);
    if (state === undefined) return 0;
    const groups = classifyToolBlocks(state.document);
    // Approved calls wait only while nothing runs in the buffer (else they are queued for a slot).
    const idle = !this.isRunning(bufnr) && !this.draining.has(bufnr);
    const blocks = [
      ...groups.pendingEmpty,
      ...(idle ? [...groups.approved, ...groups.approvedWithContent] : []),
    ].filter((block) => !this.running.has(block.id));
    if (blocks.length === 0) return 0;
    const edits: Edit[] = [];
    for (const block of blocks) {
      const text = await this.cancellationText(bufnr, block.id, block.name, block.input);
      const edit = planResult(state.document, state.lines, block.id, {
        id: block.id,
        output: text,
        isError: true,
      });
      if (edit !== undefined) edits.push(edit);
    }
    if (edits.length === 0) return 0;
    await this.applyEdits(bufnr, bottomToTop(edits));
    this.info(`Cancelled ${String(edits.length)} waiting tool call(s)`);
    const settings = autopilotSettings(await this.bufferTools(bufnr));
    this.pilot.rearmIfPaused(bufnr, settings);
    await this.pilot.toolsComplete(bufnr, settings);
    return edits.length;
  }

  /** `:Flemma tool:why`: which resolver decided the status of the call under the cursor. */
  async why(bufnr: number, row: number): Promise<string> {
    const state = await this.ctx.documents.attach(bufnr);
    if (state === undefined) return 'Not a chat buffer';
    const found = toolCallAt(state.document, row + 1);
    if (!found.ok) return found.error;
    const { call } = found;
    const recorded = this.decisions.get(call.id);
    let decided = recorded;
    if (decided === undefined) {
      const editor = await this.editorContext(bufnr, state.document);
      if (editor.problem !== undefined) return editor.problem;
      decided = await this.approval.decide(
        { bufnr, toolId: call.id, toolName: call.name, input: call.input },
        editor.config,
        editor.approval,
        editor.facts,
      );
    }
    const by = decided.resolver === null ? 'no resolver decided (the default)' : decided.resolver;
    const lines = [
      `${call.name} (${call.id}): ${decided.decision}${recorded === undefined ? ' (as the policy decides now)' : ''} — ${by}`,
    ];
    for (const skipped of decided.skipped)
      lines.push(`  skipped ${skipped.resolver}: ${skipped.reason}`);
    // The deciding step's notes as they are; the notes of the resolvers that passed (a list that
    // does not cover a path outside the project, say) with their names.
    for (const entry of decided.trace) {
      const prefix = entry.outcome === 'decided' ? '' : `${entry.resolver}: `;
      for (const note of entry.notes) lines.push(`  ${prefix}${note}`);
    }
    return lines.join('\n');
  }

  /** `:Flemma tool:cancel`: the call at the cursor, else the oldest running one in the buffer. */
  async cancelAt(bufnr: number, row: number | null): Promise<boolean> {
    let target: Running | undefined;
    if (row !== null) {
      const state = await this.fresh(bufnr);
      const found = state === undefined ? undefined : toolCallAt(state.document, row + 1);
      if (found?.ok === true) target = this.running.get(found.call.id);
    }
    target ??= this.oldest(bufnr);
    if (target === undefined) return false;
    this.cancelRun(target);
    return true;
  }

  /** Cancel the buffer's oldest running tool (the second choice of `<C-c>`). */
  cancelOldest(bufnr: number): boolean {
    const run = this.oldest(bufnr);
    if (run === undefined) return false;
    this.cancelRun(run);
    return true;
  }

  cancelAll(): number {
    const runs = [...this.running.values()];
    // Calls still waiting for a slot are not started either.
    for (const run of runs) this.draining.delete(run.bufnr);
    for (const run of runs) this.cancelRun(run);
    for (const run of runs) this.pilot.disarm(run.bufnr);
    return runs.length;
  }

  private cancelRun(run: Running): void {
    run.cancelled = true;
    this.pilot.disarm(run.bufnr);
    run.controller.abort(new Error(CANCELLED_TEXT));
  }

  private oldest(bufnr: number): Running | undefined {
    return this.runningIn(bufnr, { includeBackground: true }).sort(
      (a, b) => a.startedAt - b.startedAt,
    )[0];
  }

  /** `:Flemma tool:background`: move the call at the cursor (or the oldest) to the background. */
  async background(bufnr: number, row: number | null): Promise<boolean> {
    let target: Running | undefined;
    if (row !== null) {
      const state = await this.fresh(bufnr);
      const found = state === undefined ? undefined : toolCallAt(state.document, row + 1);
      if (found?.ok === true) target = this.running.get(found.call.id);
    }
    target ??= this.runningIn(bufnr).sort((a, b) => a.startedAt - b.startedAt)[0];
    if (target === undefined || target.background) return false;
    await this.toBackground(target);
    return true;
  }

  private async toBackground(run: Running): Promise<void> {
    if (run.background || !this.running.has(run.id)) return;
    run.background = true;
    run.jobId = ++this.jobSeq;
    this.ctx.lua.notify('tools.spinner', {
      bufnr: run.bufnr,
      tool_id: run.id,
      state: 'background',
      job_id: run.jobId,
    });
    this.unlockIfIdle(run.bufnr);
    await this.ctx.hooks.emit('job:submitted', {
      bufnr: run.bufnr,
      job_id: String(run.jobId),
      tool_id: run.id,
      tool_name: run.name,
      active_count: this.backgroundCount(),
    });
  }

  private backgroundCount(): number {
    return [...this.running.values()].filter((run) => run.background).length;
  }

  // ---------------------------------------------------------------------------------------------
  // Execution

  private config(): Promise<Config> {
    return this.ctx.config.get(this.ctx.lua);
  }

  /**
   * The tools sent with a request as personalities see them (sorted by name): a default snippet
   * (the description's first sentence) and what each tool says per personality.
   */
  personalityTools(
    specs: readonly ToolSpec[],
  ): { name: string; snippet: string; personalities: Record<string, PersonalityPart> }[] {
    return [...specs]
      .map((spec) => {
        const sentence = /^[^.\n]*\.?/u.exec(spec.description)?.[0] ?? spec.description;
        return {
          name: spec.name,
          snippet: sentence.trim(),
          personalities: this.registry.get(spec.name)?.personalities ?? {},
        };
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** The tools a buffer's `flemma.opt.tools` may name, and where it starts from. */
  toolNames(): ToolNames {
    return {
      enabled: this.registry
        .list()
        .filter((def) => def.enabled !== false)
        .map((def) => def.name),
      has: (name) => this.registry.has(name),
      suggest: (name) => this.registry.suggest(name),
    };
  }

  private readonly carried = new Map<number, { context: EditorContext; at: number }>();

  /**
   * Keep the editor's context of a buffer for the next automatic step (the send asked for it as
   * it finished). Used only within `CARRY_MS`: past that, the step asks again.
   */
  carry(bufnr: number, context: EditorContext): void {
    this.carried.set(bufnr, { context, at: performance.now() });
  }

  private takeCarried(bufnr: number): EditorContext | undefined {
    const entry = this.carried.get(bufnr);
    this.carried.delete(bufnr);
    if (entry === undefined || performance.now() - entry.at > CARRY_MS) return undefined;
    return entry.context;
  }

  /** The editor's answer about a buffer, its frontmatter applied (see `fetchEditorContext`). */
  editorContext(
    bufnr: number,
    document: ChatDocument,
    options: ContextOptions = {},
  ): Promise<EditorContext> {
    return fetchEditorContext(this.ctx.lua, bufnr, document, this.toolNames(), {
      ...options,
      memo: this.trustMemo,
      config: this.ctx.config,
    });
  }

  /** Run one call and write its result in place of its placeholder. */
  async execute(
    bufnr: number,
    id: string,
    name: string,
    input: unknown,
    config: Config,
    options: {
      replaceFinished: boolean;
      facts?: EditorFacts;
      /** The caller found the call's placeholder: the tool need not wait for a fresh parse. */
      placeholder?: boolean;
    },
  ): Promise<void> {
    const { ctx } = this;
    if (ctx.sends.isRunning(bufnr)) {
      this.warn('Cannot execute tool while API request is in flight');
      return;
    }
    if (this.running.has(id)) {
      this.warn(`Tool ${id} is already running`);
      return;
    }
    // A `.chat` file may name a tool by its API name (`file_read`) as well as its own name.
    const def = this.registry.resolve(name);
    if (def === undefined) {
      const guess = this.registry.suggest(name);
      this.warn(`Unknown tool: ${name}${guess === undefined ? '' : ` (did you mean '${guess}'?)`}`);
      return;
    }
    if (def.execute === undefined) {
      this.warn(`Tool ${name} cannot be executed: it has no execute function`);
      return;
    }
    const tools = config.tools;
    // The buffer's tool list does not offer it, or the policy blocks it (checked again here,
    // whatever approved the call): the model gets an error, nothing runs.
    const refusal =
      this.filterRefusal(name, config) ??
      (this.policyBlocks(name, config) ? policyErrorText(name) : undefined);
    if (refusal !== undefined) {
      // It took no slot, but a throttled call may have waited for this one's turn (once the
      // dispatch that started this one is done).
      queueMicrotask(() => {
        this.startQueued(bufnr, config, options.facts);
      });
      await this.inject(bufnr, id, { ok: false, error: refusal }, options.replaceFinished);
      ctx.hooks.post('tool:completed', { bufnr, tool_name: name, tool_id: id, status: 'error' });
      await this.afterTools(bufnr, tools);
      return;
    }
    const run: Running = {
      id,
      name,
      bufnr,
      startedAt: Date.now(),
      controller: new AbortController(),
      background: false,
      cancelled: false,
    };
    this.running.set(id, run);
    let backgroundTimer: NodeJS.Timeout | undefined;
    try {
      // The lock is per owner, not per tool; a notification still reaches Neovim before the
      // tool's writes.
      ctx.lua.notify('buffer.lock', { bufnr, owner: 'tools' });
      const spin = (row: number | undefined): void => {
        if (!tools.show_spinner || row === undefined) return;
        if (this.running.get(id) !== run || run.returned === true) return;
        ctx.lua.notify('tools.spinner', { bufnr, tool_id: id, row, state: 'running' });
      };
      if (options.placeholder === true) {
        // Its row is known once the results written before it are parsed; the tool does not
        // wait for that (its neighbours' results are being written meanwhile).
        void (this.holds.get(bufnr) ?? Promise.resolve())
          .then(() => this.fresh(bufnr))
          .then(
            (state) => {
              spin(state === undefined ? undefined : resultHeaderRow(state.document, id));
            },
            () => undefined,
          );
      } else {
        spin(await this.ensurePlaceholder(bufnr, id));
      }
      const facts = options.facts ?? (await ctx.lua.call('tools.facts', { bufnr }));
      const toolConfig = asRecord(tools[def.name]);
      const cwd = this.toolCwd(toolConfig, facts);
      const roots = rootsFor(config.sandbox, facts, process.env, homedir());
      const sandboxConfig =
        roots === undefined ? config.sandbox : withRootPaths(config.sandbox, roots);
      const sandbox = await sandboxFor(sandboxConfig, facts, homedir(), ctx.lua, {
        sensitivePaths: tools.sensitive_paths,
      });
      if (sandbox.warning !== undefined) this.warnOnce('sandbox', sandbox.warning);
      this.luaContext.set(id, luaSandboxFacts(sandbox));
      const timeoutSec = tools.default_timeout;
      const execCtx = createExecutionContext(
        {
          bufnr,
          cwd,
          timeout: timeoutSec,
          toolId: id,
          filename: facts.filename ?? undefined,
          sandbox: sandbox.access,
          config: toolConfig,
          signal: run.controller.signal,
          roots: sandbox.enabled ? roots : undefined,
        },
        homedir(),
      );
      // Not awaited: the event keeps its place on the channel, and the tool need not wait for
      // every listener before it starts.
      ctx.hooks.post('tool:executing', { bufnr, tool_name: name, tool_id: id });
      const backgroundAfter = tools.background_after;
      if (typeof backgroundAfter === 'number' && backgroundAfter > 0) {
        backgroundTimer = setTimeout(() => {
          void this.toBackground(run);
        }, backgroundAfter * 1000);
      }
      const invokedAt = performance.now();
      let outcome = await this.invoke(def, input, execCtx, run, toolConfig, timeoutSec, tools);
      clearTimeout(backgroundTimer);
      await this.audit(
        config,
        {
          tool: def.name,
          id,
          bufnr,
          args: input,
          success: outcome.ok,
          durationMs: performance.now() - invokedAt,
          error: outcome.ok ? undefined : outcome.error,
        },
        def,
      );
      if (outcome.ok && typeof outcome.output === 'string' && !this.builtin.has(name)) {
        const cut = await truncateForResult(
          outcome.output,
          { source: name, id, mode: 'head' },
          nodeTruncateFs,
        );
        outcome = { ok: true, output: cut.text };
      }
      trace(`tool:done ${id}`);
      // The slot frees as the tool returns: a throttled call starts while this result is written.
      run.returned = true;
      this.startQueued(bufnr, config, facts);
      // The buffer's last tool: ask the editor for the next step's context while the result is
      // written (the buffer stays locked until then, so the frontmatter cannot change).
      const document = ctx.documents.get(bufnr)?.document;
      const prefetch =
        this.slotsUsed(bufnr) === 0 && !this.draining.has(bufnr) && document !== undefined
          ? this.editorContext(bufnr, document).catch(() => undefined)
          : undefined;
      const injected = await this.inject(bufnr, id, outcome, options.replaceFinished);
      trace(`tool:injected ${id}`);
      if (tools.show_spinner) {
        ctx.lua.notify('tools.spinner', {
          bufnr,
          tool_id: id,
          state: outcome.ok ? 'success' : 'error',
        });
      }
      const wasBackground = run.background;
      this.running.delete(id);
      this.luaContext.delete(id);
      this.unlockIfIdle(bufnr);
      // The cursor moves before the event, so a listener sees the buffer as the user will.
      if (injected) await this.moveCursor(bufnr, id, tools.cursor_after_result);
      // Events keep their order on the channel; the executor does not wait for the listeners.
      ctx.hooks.post('tool:completed', {
        bufnr,
        tool_name: name,
        tool_id: id,
        status: outcome.ok ? 'success' : 'error',
      });
      if (wasBackground && run.jobId !== undefined) {
        ctx.hooks.post('job:completed', {
          bufnr,
          job_id: String(run.jobId),
          tool_id: id,
          tool_name: name,
          success: outcome.ok,
          active_count: this.backgroundCount(),
        });
      }
      const next = await prefetch;
      if (next !== undefined && this.runningIn(bufnr).length === 0) this.carry(bufnr, next);
      await this.afterTools(bufnr, tools);
    } catch (error) {
      clearTimeout(backgroundTimer);
      ctx.logger.error(`executing ${name} (${id}) failed`, error);
      this.warn(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      if (this.running.get(id) === run) {
        this.running.delete(id);
        this.luaContext.delete(id);
        ctx.lua.notify('tools.spinner', { bufnr, tool_id: id, state: 'clear' });
        this.unlockIfIdle(bufnr);
      }
    }
  }

  /**
   * Approved calls of a buffer throttled by `tools.max_concurrent`, waiting for a slot. The
   * list is taken when they are dispatched, not from a later parse: the buffer is locked while
   * tools run, and a parse may still lag behind the placeholders or the results written since.
   */
  private readonly draining = new Map<number, QueuedCall[]>();

  /**
   * Start approved calls: as many as `tools.max_concurrent` leaves room for, the rest as slots
   * free up (`startQueued`). Started, not awaited: the tools report through their results.
   */
  private dispatch(
    bufnr: number,
    calls: readonly QueuedCall[],
    config: Config,
    facts: EditorFacts | undefined,
    user: boolean,
  ): void {
    const queued = new Set((this.draining.get(bufnr) ?? []).map((call) => call.id));
    const waiting = calls.filter((call) => !this.running.has(call.id) && !queued.has(call.id));
    const limit = config.tools.max_concurrent;
    const free = limit === 0 ? waiting.length : limit - this.slotsUsed(bufnr);
    const now = waiting.slice(0, Math.max(0, free));
    const later = waiting.slice(now.length);
    if (later.length > 0) {
      this.draining.set(bufnr, [...(this.draining.get(bufnr) ?? []), ...later]);
      if (user) {
        this.info(`Executing ${now.length}/${waiting.length} tools (max_concurrent=${limit})`);
      }
    }
    for (const call of now) this.startCall(bufnr, call, config, facts);
  }

  private startCall(
    bufnr: number,
    call: QueuedCall,
    config: Config,
    facts: EditorFacts | undefined,
  ): void {
    void this.execute(bufnr, call.id, call.name, call.input, config, {
      replaceFinished: false,
      placeholder: true,
      ...(facts === undefined ? {} : { facts }),
    });
  }

  /** A slot freed up: start the next approved calls of a throttled buffer. */
  private startQueued(bufnr: number, config: Config, facts?: EditorFacts): void {
    const queue = this.draining.get(bufnr);
    if (queue === undefined) return;
    const limit = config.tools.max_concurrent;
    let free = limit === 0 ? queue.length : limit - this.slotsUsed(bufnr);
    while (free > 0) {
      const call = queue.shift();
      if (call === undefined) break;
      free -= 1;
      this.startCall(bufnr, call, config, facts);
    }
    if (queue.length === 0) this.draining.delete(bufnr);
  }

  /** When the last running tool of a buffer finishes (a background job too), autopilot goes on. */
  private async afterTools(bufnr: number, tools: ToolsConfig): Promise<void> {
    if (this.runningIn(bufnr).length > 0) return;
    await this.pilot.toolsComplete(bufnr, autopilotSettings(tools));
  }

  /** Validate, run with timeout and cancellation, and normalise whatever comes back. */
  private async invoke(
    def: ToolDefinition,
    input: unknown,
    execCtx: ReturnType<typeof createExecutionContext>,
    run: Running,
    toolConfig: Record<string, unknown> | undefined,
    defaultTimeout: number,
    tools: Readonly<Record<string, unknown>> = {},
  ): Promise<ToolOutcome> {
    await loadValidator();
    const validation = validateInput(def, input);
    if (!validation.ok) return { ok: false, error: validation.message };
    const inner = def.execute;
    if (inner === undefined) return { ok: false, error: `Tool ${def.name} cannot be executed` };
    // The middleware stack (tools.middleware, modules' middleware) around the tool itself; the
    // executor's timeout and cancellation below bound all of it.
    let stack: ReturnType<MiddlewareStack['chain']>;
    try {
      stack = this.middleware.chain(tools['middleware']);
    } catch (error) {
      return { ok: false, error: describeError(error) };
    }
    const handler = compose(stack, (call) => inner(call.input, call.ctx));
    const execute = (value: unknown, context: typeof execCtx): Promise<ToolOutcome> =>
      handler({ name: def.name, input: asRecord(value) ?? {}, ctx: context });
    const timeoutSec = timeoutFor(def, input, toolConfig, defaultTimeout);
    const selfTimed = this.builtin.get(def.name) === def && def.async === true;
    const limitMs = timeoutSec * 1000 + (selfTimed ? SELF_TIMED_GRACE_MS : 0);
    const flags = { timedOut: false };
    const timer = setTimeout(() => {
      if (run.background) return;
      flags.timedOut = true;
      run.controller.abort(new Error(`Tool timed out after ${timeoutSec} seconds.`));
    }, limitMs);
    if (run.controller.signal.aborted) {
      // Cancelled while it was being prepared: it does not start.
      clearTimeout(timer);
      return { ok: false, error: abortText(run, flags.timedOut, timeoutSec) };
    }
    const aborted = new Promise<ToolOutcome>((resolve) => {
      run.controller.signal.addEventListener(
        'abort',
        () => {
          // A tool that ignores its signal still gets a result, a little later.
          setTimeout(() => {
            resolve({ ok: false, error: abortText(run, flags.timedOut, timeoutSec) });
          }, ABORT_GRACE_MS).unref();
        },
        { once: true },
      );
    });
    try {
      const settled: Promise<ToolOutcome> = Promise.resolve()
        .then(() => execute(input, execCtx))
        .then(
          (value) => normalizeOutcome(value),
          (error: unknown): ToolOutcome => ({ ok: false, error: describeError(error) }),
        );
      const result = await Promise.race([settled, aborted]);
      // Both flags are set by callbacks while the tool runs.
      const stopped: boolean = run.cancelled || flags.timedOut;
      if (stopped) {
        const partial = result.ok ? renderPartial(result.output) : result.partialOutput;
        const error = abortText(run, flags.timedOut, timeoutSec);
        // A tool that reported its own timeout or cancellation keeps its wording.
        if (!result.ok && (result.error.includes('timed out') || result.error === CANCELLED_TEXT)) {
          return result;
        }
        return partial === undefined || partial === ''
          ? { ok: false, error }
          : { ok: false, error, partialOutput: partial };
      }
      return result;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Why `name` may not run in a buffer whose `tools` list (setup or `flemma.opt.tools`) does not
   * offer it; undefined when it may (or the list is the default one, which offers everything
   * enabled and lets `<M-CR>` run the rest).
   */
  private filterRefusal(name: string, config: Config): string | undefined {
    const list = config.tools.__list;
    if (list === undefined) return undefined;
    const sorted = [...list].sort();
    const isDefault =
      sorted.length === DEFAULT_TOOL_NAMES.length &&
      sorted.every((n, i) => n === DEFAULT_TOOL_NAMES[i]);
    if (isDefault) return undefined;
    return notAvailable(name, new Set(list), this.registry);
  }

  /** `tools.<name>.cwd` expanded like a sandbox path (§7.3); Neovim's cwd when it expands to nothing. */
  private toolCwd(toolConfig: Record<string, unknown> | undefined, facts: EditorFacts): string {
    const setting = toolConfig?.['cwd'];
    if (typeof setting !== 'string' || setting === '') return facts.cwd;
    try {
      return expandPathVariable(setting, facts, process.env, homedir()) ?? facts.cwd;
    } catch (error) {
      this.warnOnce(`cwd:${setting}`, error instanceof Error ? error.message : String(error));
      return facts.cwd;
    }
  }

  /** A warning shown once per host (the sandbox's "no backend", a bad setting). */
  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.warn(message);
  }

  private readonly warned = new Set<string>();

  /** `:Flemma sandbox:status` for a buffer. */
  async sandboxStatus(bufnr: number): Promise<SandboxStatus> {
    const config = await this.config();
    const facts = await this.ctx.lua.call('tools.facts', { bufnr });
    return sandboxStatusFor(config.sandbox, facts, homedir(), this.ctx.lua);
  }

  /** `:Flemma status [verbose]`: the buffer's resolved settings and where each came from. */
  async status(bufnr: number, verbose: boolean): Promise<string[]> {
    const state = await this.ctx.documents.attach(bufnr);
    if (state === undefined) return [`Buffer ${String(bufnr)} is not a chat buffer`];
    const editor = await this.editorContext(bufnr, state.document, { origins: true });
    const config = editor.config;
    const sandbox = await sandboxStatusFor(config.sandbox, editor.facts, homedir(), this.ctx.lua);
    const filename = editor.facts.filename;
    const input: StatusInput = {
      bufnr,
      name: filename === null ? '' : relative(editor.facts.cwd, filename) || filename,
      config: config.data,
      origins: editor.origins ?? {},
      ops: editor.ops,
      tools: this.specsFor(config.tools.__list, config).map((spec) => spec.name),
      resolvers: this.approval.resolvers(config),
      sandbox: !sandbox.enabled
        ? 'disabled'
        : sandbox.backend === null
          ? `enabled, no backend (${sandbox.backend_reason ?? 'none available'})`
          : `enabled, backend ${sandbox.backend}`,
      autopilot: { state: this.pilot.state(bufnr), iteration: this.pilot.iteration(bufnr) },
      trust: editor.trust,
      refused: refusedItems(state.document, editor, (name) => this.readsResultReferences(name)),
      verbose,
    };
    if (editor.problem !== undefined) input.problem = editor.problem;
    return statusLines(input);
  }

  private unlockIfIdle(bufnr: number): void {
    if (this.runningIn(bufnr).length > 0) return;
    this.ctx.lua.notify('buffer.unlock', { bufnr, owner: 'tools' });
  }

  /** Make sure `id` has a result block; returns the 0-based row of its header. */
  private async ensurePlaceholder(bufnr: number, id: string): Promise<number | undefined> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const state = await this.fresh(bufnr);
      if (state === undefined) return undefined;
      const row = resultHeaderRow(state.document, id);
      if (row !== undefined) return row;
      const edits = planPlaceholders(state.document, state.lines, [{ id, status: 'approved' }]);
      if (edits.length === 0) return undefined;
      await this.applyEdits(bufnr, edits);
    }
    return undefined;
  }

  /**
   * Replace the placeholder (or, for a re-run, the finished result) of `id` with `outcome`.
   * Resolves with whether the result is in the buffer.
   */
  private inject(
    bufnr: number,
    id: string,
    outcome: ToolOutcome,
    replaceFinished: boolean,
  ): Promise<boolean> {
    const block: ToolResultBlock = outcome.ok
      ? { id, output: outcome.output, isError: false }
      : { id, output: outcome.error, isError: true, partialOutput: outcome.partialOutput };
    return new Promise((resolve) => {
      const queue = this.injections.get(bufnr) ?? [];
      queue.push({ id, block, replaceFinished, attempts: 0, resolve });
      this.injections.set(bufnr, queue);
      if (!this.injecting.has(bufnr)) void this.drainInjections(bufnr);
    });
  }

  private readonly injections = new Map<number, PendingInjection[]>();
  private readonly injecting = new Set<number>();

  /**
   * Writes queued results. Results that finish while others are being written go out together:
   * planned against one parse, applied bottom to top in a single batch, each refused if its
   * block changed meanwhile (then planned again, up to five times).
   */
  private async drainInjections(bufnr: number): Promise<void> {
    this.injecting.add(bufnr);
    try {
      const writer = this.ctx.writes.buffer(bufnr);
      for (;;) {
        await this.holds.get(bufnr);
        await this.resultsSettle(bufnr);
        const taken = this.injections.get(bufnr) ?? [];
        if (taken.length === 0) break;
        this.injections.delete(bufnr);
        const state = await this.fresh(bufnr);
        if (state === undefined) {
          for (const item of taken) item.resolve(false);
          continue;
        }
        const planned: { item: PendingInjection; edit: Edit }[] = [];
        const missing: PendingInjection[] = [];
        for (const item of taken) {
          const edit = planResult(state.document, state.lines, item.id, item.block, {
            replaceFinished: item.replaceFinished,
          });
          if (edit === undefined) missing.push(item);
          else planned.push({ item, edit });
        }
        const retry: PendingInjection[] = [];
        const again = (item: PendingInjection): void => {
          if (item.attempts < 5) {
            retry.push(item);
            return;
          }
          this.warn(
            `Could not write the result of ${item.id}: its block kept changing. Run it again with <M-CR>.`,
          );
          item.resolve(false);
        };
        if (missing.length > 0) {
          // A placeholder is gone (deleted while the tool ran): put it back, then plan again.
          const edits = planPlaceholders(
            state.document,
            state.lines,
            missing.map((item) => ({ id: item.id, status: 'approved' as const })),
          );
          for (const item of missing) {
            if (edits.length === 0) {
              again({ ...item, attempts: 5 });
            } else {
              item.attempts += 1;
              again(item);
            }
          }
          await this.applyEdits(bufnr, edits);
          // The other results are planned again against the buffer with the placeholders back.
          for (const { item } of planned) retry.push(item);
        } else {
          const sorted = [...planned].sort((a, b) => b.edit.start - a.edit.start);
          const outcomes = await Promise.all(
            sorted.map(({ edit }) =>
              writer.setLines(edit.start, edit.end, edit.lines, edit.expect),
            ),
          );
          sorted.forEach(({ item }, index) => {
            const outcome = outcomes[index];
            if (outcome === 'applied') item.resolve(true);
            else if (outcome === 'gone') item.resolve(false);
            else {
              item.attempts += 1;
              again(item);
            }
          });
        }
        if (retry.length > 0) {
          this.injections.set(bufnr, retry.concat(this.injections.get(bufnr) ?? []));
        }
      }
    } catch (error) {
      this.ctx.logger.error(`writing tool results into buffer ${String(bufnr)} failed`, error);
      for (const item of this.injections.get(bufnr) ?? []) item.resolve(false);
      this.injections.delete(bufnr);
    } finally {
      this.injecting.delete(bufnr);
    }
  }

  /** Buffers whose placeholders Phase 1 holds back while their tools start (see below). */
  private readonly holds = new Map<number, Promise<void>>();

  /**
   * Phase 1 of a step whose calls were all approved (or denied): the tools start at once, and
   * the placeholders are written when they have returned, or after `COALESCE_MS` — a call whose
   * result is in by then gets its result written in its placeholder's place, in the same
   * batch, so a loop of quick tools costs one round trip to Neovim instead of two. Slower calls
   * get their placeholders as before, and their results follow. Results and spinners wait for
   * the hold to end.
   */
  private async placeWhileRunning(
    bufnr: number,
    state: DocumentState,
    requests: PlaceholderRequest[],
    start: () => void,
  ): Promise<void> {
    let release = (): void => undefined;
    this.holds.set(
      bufnr,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    let ready: PendingInjection[] = [];
    try {
      start();
      await this.resultsSettle(bufnr);
      trace('hold:settled');
      const queue = this.injections.get(bufnr) ?? [];
      const ids = new Set(requests.map((request) => request.id));
      ready = queue.filter((item) => ids.has(item.id) && !item.replaceFinished);
      const rest = queue.filter((item) => !ready.includes(item));
      if (rest.length > 0) this.injections.set(bufnr, rest);
      else this.injections.delete(bufnr);
    } finally {
      const known = new Map(ready.map((item) => [item.id, item.block]));
      const planned = requests.map((request) => {
        const result = known.get(request.id);
        return result === undefined ? request : { ...request, result };
      });
      const writer = this.ctx.writes.buffer(bufnr);
      const outcomes = planPlaceholders(state.document, state.lines, planned).map((edit) =>
        writer.setLines(edit.start, edit.end, edit.lines, edit.expect),
      );
      // The step waits for this write: it goes now, not on the next tick.
      this.ctx.writes.sendNow();
      this.holds.delete(bufnr);
      release();
      trace('hold:planned');
      const written = (await Promise.all(outcomes)).every((outcome) => outcome === 'applied');
      trace('hold:written');
      if (written) {
        for (const item of ready) item.resolve(true);
      } else if (ready.length > 0) {
        // Something refused the batch: the results go the usual way (placeholders put back
        // where they are missing, then the results).
        this.injections.set(bufnr, [...ready, ...(this.injections.get(bufnr) ?? [])]);
        if (!this.injecting.has(bufnr)) void this.drainInjections(bufnr);
      }
    }
  }

  /**
   * While other tools of the buffer are still running (or waiting for a slot), give them a
   * moment to return, so that results finishing close together go out as one write: every
   * batch is a round trip to Neovim and a fresh parse. A slow neighbour holds a result back for
   * at most `COALESCE_MS`.
   */
  private async resultsSettle(bufnr: number): Promise<void> {
    const until = performance.now() + COALESCE_MS;
    while ((this.slotsUsed(bufnr) > 0 || this.draining.has(bufnr)) && performance.now() < until) {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * The document once it includes every write queued to the buffer so far (a tool may return
   * before its placeholder, queued just before it started, is in).
   */
  private async fresh(bufnr: number): Promise<DocumentState | undefined> {
    const writer = this.ctx.writes.buffer(bufnr);
    await writer.flushed();
    return this.ctx.documents.parsedAt(bufnr, writer.tick);
  }

  private async applyEdits(bufnr: number, edits: readonly Edit[]): Promise<void> {
    const writer = this.ctx.writes.buffer(bufnr);
    const results = edits.map((edit) =>
      writer.setLines(edit.start, edit.end, edit.lines, edit.expect),
    );
    await Promise.all(results);
  }

  private async moveCursor(bufnr: number, id: string, mode: string): Promise<void> {
    if (mode === 'stay' || this.pilot.isArmed(bufnr)) return;
    const state = await this.fresh(bufnr);
    if (state === undefined) return;
    const row = resultHeaderRow(state.document, id);
    if (row === undefined) return;
    if (mode === 'next') {
      const message = state.document.messages.find(
        (m) => row + 1 >= m.span.startLine && row + 1 <= m.span.endLine,
      );
      if (message === undefined) return;
      this.ctx.lua.notify('tools.cursor', {
        bufnr,
        row: Math.min(message.span.endLine, state.lines.length - 1),
      });
      return;
    }
    this.ctx.lua.notify('tools.cursor', { bufnr, row });
  }

  // ---------------------------------------------------------------------------------------------
  // Previews

  private publishPreviews(state: DocumentState): void {
    const items = emptyPlaceholders(state.document).map((slot) => {
      const def = this.registry.get(slot.name);
      const item: Record<string, unknown> = {
        row: slot.fenceLine - 1,
        name: slot.name,
        tool_id: slot.id,
      };
      if (this.origin.get(slot.name) === 'lua') {
        item['lua'] = true;
        item['input'] = slot.input ?? {};
      }
      item['body'] = previewBody(def, slot.input, 200);
      return item;
    });
    const key = JSON.stringify(items);
    if (this.previewKeys.get(state.bufnr) === key) return;
    this.previewKeys.set(state.bufnr, key);
    this.ctx.lua.notify('tools.previews', { bufnr: state.bufnr, items });
  }

  forget(bufnr: number): void {
    this.previewKeys.delete(bufnr);
    this.frontmatterKeys.delete(bufnr);
    clearTimeout(this.frontmatterTimers.get(bufnr));
    this.frontmatterTimers.delete(bufnr);
    this.approval.session.clear(bufnr);
  }

  // ---------------------------------------------------------------------------------------------

  private warn(message: string): void {
    this.ctx.lua.notify('notify', { level: 'warn', message });
  }

  private info(message: string): void {
    this.ctx.lua.notify('notify', { level: 'info', message });
  }
}

/** CodeCompanion's answer to a call of a tool that does not exist. */
export function notFoundText(name: string, available: readonly string[]): string {
  if (available.length === 0) return `Tool \`${name}\` not found. No tools available`;
  const list = [...available]
    .sort()
    .map((tool) => `\`${tool}\``)
    .join(', ');
  return `Tool \`${name}\` not found. The available tools are: ${list}`;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function resultHeaderRow(doc: ChatDocument, id: string): number | undefined {
  for (const message of doc.messages) {
    for (const segment of message.segments) {
      if (segment.kind === 'tool_result' && segment.toolUseId === id) {
        return segment.span.startLine - 1;
      }
    }
  }
  return undefined;
}

function timeoutFor(
  def: ToolDefinition,
  input: unknown,
  toolConfig: Record<string, unknown> | undefined,
  fallback: number,
): number {
  const configured = toolConfig?.['timeout'];
  if (typeof configured === 'number' && configured > 0) return configured;
  const properties = asRecord(def.inputSchema['properties']);
  const fromInput = asRecord(input)?.['timeout'];
  if (properties?.['timeout'] !== undefined && typeof fromInput === 'number' && fromInput > 0) {
    return fromInput;
  }
  // A tool that knows how long it may take (a declarative tool's timeout and retries).
  if (typeof def.timeoutSeconds === 'number' && def.timeoutSeconds > fallback) {
    return def.timeoutSeconds;
  }
  return fallback;
}

function abortText(run: Running, timedOut: boolean, timeoutSec: number): string {
  if (timedOut && !run.cancelled) return `Tool timed out after ${timeoutSec} seconds.`;
  return CANCELLED_TEXT;
}

function renderPartial(output: string | Record<string, unknown>): string {
  return typeof output === 'string' ? output : JSON.stringify(output);
}

/** Text for a thrown value or a scalar: an Error's message, else the value as text or JSON. */
function describeError(value: unknown): string {
  if (value instanceof Error) return value.message;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  if (typeof value !== 'object') return Object.prototype.toString.call(value);
  try {
    return JSON.stringify(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** Accepts the seed's `{ success, output, error }` as well as the internal `{ ok, … }`. */
export function normalizeOutcome(value: unknown): ToolOutcome {
  if (value === undefined || value === null) return { ok: false, error: 'Tool returned no result' };
  const record = asRecord(value);
  if (record === undefined) return { ok: true, output: describeError(value) };
  if (typeof record['ok'] === 'boolean') return value as ToolOutcome;
  return outcomeOf(record);
}

function outcomeOf(result: LuaResult): ToolOutcome {
  const output = result.output;
  const rendered: string | Record<string, unknown> | undefined =
    output === undefined || output === null
      ? undefined
      : typeof output === 'string'
        ? output
        : typeof output === 'object'
          ? (output as Record<string, unknown>)
          : describeError(output);
  if (result.success === true) return { ok: true, output: rendered ?? '' };
  const error =
    typeof result.error === 'string' && result.error !== '' ? result.error : 'Unknown error';
  if (result.success !== false && result.error === undefined && rendered !== undefined) {
    return { ok: true, output: rendered };
  }
  const partial = rendered === undefined ? undefined : renderPartial(rendered);
  const failed: ToolOutcome =
    partial === undefined || partial === ''
      ? { ok: false, error }
      : { ok: false, error, partialOutput: partial };
  // A tool may mark its failure as transient (`retryable = true`) for the retry middleware.
  if ((result as { retryable?: unknown }).retryable === true) return { ...failed, retryable: true };
  return failed;
}

/** Lua sends `{}` for empty tables as arrays; a schema's maps must be objects. */
function normalizeLuaSchema(node: unknown, key?: string): unknown {
  if (Array.isArray(node)) {
    if (node.length === 0 && (key === 'properties' || key === undefined)) return {};
    return node.map((item) => normalizeLuaSchema(item));
  }
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    out[k] = normalizeLuaSchema(v, k === 'properties' ? 'properties' : 'value');
  }
  return out;
}

/** A definition from a JavaScript module: seed-style snake_case names are accepted too. */
function fromJsDefinition(raw: Record<string, unknown>): ToolDefinition {
  const def = { ...raw } as Record<string, unknown>;
  if (def['inputSchema'] === undefined && def['input_schema'] !== undefined) {
    def['inputSchema'] = def['input_schema'];
  }
  if (def['formatPreview'] === undefined && typeof def['format_preview'] === 'function') {
    def['formatPreview'] = def['format_preview'];
  }
  const execute = def['execute'];
  if (typeof execute === 'function') {
    def['execute'] = async (input: unknown, ctx: unknown) =>
      normalizeOutcome(await (execute as (i: unknown, c: unknown) => unknown)(input, ctx));
  }
  if (typeof def['name'] !== 'string')
    throw new ToolRegistryError('a tool definition needs a name');
  return def as unknown as ToolDefinition;
}

/** What a Lua tool's `ctx.sandbox` needs to answer without asking the host. */
function luaSandboxFacts(sandbox: SandboxState): Record<string, unknown> {
  return {
    sandbox: {
      enabled: sandbox.enabled,
      rw_paths: sandbox.rwPaths,
      wrap_prefix: sandbox.wrapPrefix ?? null,
      wrap_error: sandbox.wrapError ?? null,
    },
  };
}

export type { SandboxAccess };
