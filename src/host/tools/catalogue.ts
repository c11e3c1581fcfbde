// The tool catalogue: every tool the host knows and where it came from — the built-ins, tools
// defined in Lua, JavaScript/TypeScript modules (`tools.modules`), declarative YAML/JSON files
// (`tools.declarative`) and MCP servers — whether every asynchronous source has answered (a send
// waits for that), which tools a buffer offers (its list, the policy) and how they are named.
import type { ToolNames } from '../../core/config/frontmatter.js';
import type { ToolSpec } from '../../core/provider/types.js';
import { wireToolName } from '../../core/provider/types.js';
import { describeProblem, loadDeclarativeDirs } from '../../core/tools/declarative/index.js';
import { createBuiltinTools } from '../../core/tools/builtins.js';
import { notAvailable } from '../../core/tools/filter.js';
import { parseMcpSettings } from '../../core/tools/mcp/config.js';
import type { McpManager } from '../../core/tools/mcp/manager.js';
import { type ToolPolicy, effectivePolicy } from '../../core/tools/policy.js';
import {
  type PersonalityPart,
  type ToolDefinition,
  ToolRegistry,
  toSpec,
} from '../../core/tools/registry.js';
import { type ToolCalling, type XmlLibrary, toolsSystemSection } from '../../core/tools/xml.js';
import type { HostBase } from '../base.js';
import { createMcpManager } from '../mcp.js';
import { MiddlewareStack } from '../tool-extras.js';
import type { LuaToolSpec, LuaTools } from './lua-tools.js';
import { JsModules } from './js-modules.js';
import { describeError } from './outcome.js';
import type { Config } from '../../core/config/config.js';
import type { DeclarativeSettings } from '../../editor/protocol/wire.js';

export type { DeclarativeSettings };

/** What a chat's request needs to shape a tool it offers (`addBuiltin`'s `shape`). */
export interface OfferedTo {
  data?: Readonly<Record<string, unknown>>;
  tools?: Record<string, unknown>;
  provider?: unknown;
}

/** A tool's description and schema as one chat is offered them (the `task` tool's profiles). */
export type ToolShape = (
  config: OfferedTo,
  cwd: string | undefined,
) => Pick<ToolDefinition, 'description' | 'inputSchema' | 'strict'>;

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

export class ToolCatalogue {
  readonly registry = new ToolRegistry();
  /** Middleware around every execution (`tools.middleware`, modules' `middleware` exports). */
  readonly middleware: MiddlewareStack;
  /** Tools from JavaScript and TypeScript modules (`tools.modules`). */
  private readonly modules: JsModules;
  private readonly warned = new Set<string>();

  constructor(
    private readonly ctx: Pick<
      HostBase,
      | 'config'
      | 'hooks'
      | 'logger'
      | 'lua'
      | 'notify'
      | 'secrets'
      | 'validator'
      | 'sandboxBackends'
      | 'processes'
      | 'probes'
    >,
    private readonly lua: LuaTools,
    /** The set of tools changed (previews follow). */
    private readonly changed: () => void,
  ) {
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
      this.changed();
      this.pushMcpCatalog();
    });
    this.modules = new JsModules({
      registry: this.registry,
      sandboxBackends: ctx.sandboxBackends,
      middleware: this.middleware,
      logger: ctx.logger,
      origin: (name, source) => {
        if (source === undefined) this.origin.delete(name);
        else this.origin.set(name, source);
      },
      warn: (message) => {
        this.warn(message);
      },
      config: () => this.config(),
      settled: () => {
        this.checkReady();
        this.changed();
      },
      changed: () => {
        this.changed();
      },
    });
    for (const def of createBuiltinTools(ctx)) {
      this.builtin.set(def.name, def);
      this.registry.register(def);
      this.origin.set(def.name, 'builtin');
    }
  }

  /**
   * A built-in tool the host makes after the catalogue (the `task` tool, which runs chats on
   * files); `shape` gives its description and schema per chat.
   */
  addBuiltin(def: ToolDefinition, shape?: ToolShape): void {
    this.builtin.set(def.name, def);
    this.registry.register(def);
    this.origin.set(def.name, 'builtin');
    if (shape !== undefined) this.shapes.set(def.name, shape);
    this.changed();
  }

  private readonly shapes = new Map<string, ToolShape>();

  /** A tool's source: built in, Lua, a JavaScript module or a declarative file. */
  originOf(name: string): 'builtin' | 'lua' | 'js' | 'declarative' | undefined {
    return this.origin.get(name);
  }

  /** A built-in tool (its output is already cut to size by itself). */
  isBuiltin(name: string): boolean {
    return this.builtin.has(name);
  }

  private readonly builtin = new Map<string, ToolDefinition>();

  private readonly origin = new Map<string, 'builtin' | 'lua' | 'js' | 'declarative'>();

  private luaSynced = false;

  private luaPending = 0;

  private declarativePending = 0;

  /** The directories and env allowlist the declarative tools were last loaded with. */
  private declarativeKey: string | undefined;

  private readyWaiters: (() => void)[] = [];

  private bootAnnounced = false;

  /** MCP servers; their tools are registered as `mcp:<server>:<tool>` (docs/mcp.md). */
  readonly mcp: McpManager;

  private mcpProblems = '';
  /** The MCP catalogue Lua last received (completion of prompts and resources), as JSON. */
  private mcpCatalog = '{}';

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
        this.registry.register(this.lua.proxy(spec));
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
    for (const path of jsModules) this.modules.load(path);
    if (declarative !== undefined) this.loadDeclarative(declarative);
    this.checkReady();
    this.changed();
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
      validator: this.ctx.validator,
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
        this.changed();
      });
  }

  /** All sources have answered (Lua's, JavaScript modules' and MCP servers' first discovery). */
  isReady(): boolean {
    return (
      this.luaSynced &&
      this.luaPending === 0 &&
      this.modules.pending === 0 &&
      this.declarativePending === 0 &&
      this.mcp.isReady()
    );
  }

  /**
   * The `mcp` section of the configuration (sent with Lua's tools): servers start, stop or
   * restart as it changed. Problems with it are shown once per change.
   */
  /** Lua completes prompt names and resource URIs from a copy it is sent when they change. */
  private pushMcpCatalog(): void {
    const servers = this.mcp.catalog();
    const json = JSON.stringify(servers);
    if (json === this.mcpCatalog) return;
    this.mcpCatalog = json;
    this.ctx.lua.notify('mcp.catalog', { servers });
  }

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

  /** The tool policy in force for a buffer's configuration (its provider's override included). */
  policyFor(config: { tools?: Record<string, unknown>; provider?: unknown }): ToolPolicy {
    const provider = typeof config.provider === 'string' ? config.provider : undefined;
    const policy = effectivePolicy(config.tools, provider, this.registry.getPolicy());
    for (const warning of policy.warnings) this.warnOnce(warning, warning);
    return policy;
  }

  /** Whether the policy blocks a call (by the name in the call: canonical or API name). */
  policyBlocks(name: string, config: Config): boolean {
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

  // ---------------------------------------------------------------------------------------------
  // Queries

  /**
   * The tools offered to the model. The default list (the built-in names) also takes every
   * other enabled tool; a list the user set is taken as it is. Unknown names are reported.
   */
  specsFor(list: readonly string[] | undefined, config?: OfferedTo, cwd?: string): ToolSpec[] {
    const specs = this.selectedSpecs(list);
    if (config === undefined) return specs;
    // The tool policy filters what is offered (docs/policy.md).
    const policy = this.policyFor(config);
    const allowed = policy.permissive
      ? specs
      : specs.filter((spec) => policy.isAllowed(this.registry.get(spec.name) ?? spec.name));
    return allowed.map((spec) => this.shaped(spec, config, cwd));
  }

  /** A spec as the chat is offered it: its own shape (`addBuiltin`), else as registered. */
  private shaped(spec: ToolSpec, config: OfferedTo, cwd: string | undefined): ToolSpec {
    const shape = this.shapes.get(spec.name);
    const def = this.registry.get(spec.name);
    if (shape === undefined || def === undefined || this.origin.get(spec.name) !== 'builtin') {
      return spec;
    }
    return toSpec({ ...def, ...shape(config, cwd) });
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

  /**
   * Why `name` may not run in a buffer whose `tools` list (setup or `flemma.opt.tools`) does not
   * offer it; undefined when it may (or the list is the default one, which offers everything
   * enabled and lets `<M-CR>` run the rest).
   */
  filterRefusal(name: string, config: Config): string | undefined {
    const list = config.tools.__list;
    if (list === undefined) return undefined;
    const sorted = [...list].sort();
    const isDefault =
      sorted.length === DEFAULT_TOOL_NAMES.length &&
      sorted.every((n, i) => n === DEFAULT_TOOL_NAMES[i]);
    if (isDefault) return undefined;
    return notAvailable(name, new Set(list), this.registry);
  }

  /** The configuration as Lua has it now. */
  private config(): Promise<Config> {
    return this.ctx.config.get(this.ctx.lua);
  }

  private warn(message: string): void {
    this.ctx.notify.warn(message);
  }

  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.warn(message);
  }
}
