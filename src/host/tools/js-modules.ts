// Tools from JavaScript and TypeScript modules (`tools.modules`; docs/tools.md, "JavaScript and
// TypeScript tools"): the `definitions` / `resolve(register, done)` form, Flynn's `tool`,
// `tools`, `createTool(s)` and `setup`, the sandbox backends and middleware a module brings along,
// and the registry as those modules see it.
import { pathToFileURL } from 'node:url';
import type { Logger } from '../../core/log.js';
import {
  type Tool,
  type ToolDeps,
  type ToolRegistryApi,
  collectFlynnTools,
  hasFlynnExports,
} from '../../core/tools/flynn.js';
import {
  type ToolDefinition,
  type ToolRegistry,
  ToolRegistryError,
} from '../../core/tools/registry.js';
import { backendsFromToolModule } from '../../core/tools/sandbox/modules.js';
import { registerJsBackends } from '../sandbox.js';
import type { MiddlewareStack } from '../tool-extras.js';
import { describeError, normalizeOutcome } from './outcome.js';
import type { Config } from '../../core/config/config.js';
import type { SandboxBackendRegistry } from '../../core/tools/sandbox/index.js';

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

export interface JsModuleDeps {
  registry: ToolRegistry;
  /** The host's sandbox backends (a module may bring its own). */
  sandboxBackends: SandboxBackendRegistry;
  middleware: MiddlewareStack;
  logger: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
  /** Record (or forget, with undefined) that a tool came from a module. */
  origin(name: string, source: 'js' | undefined): void;
  warn(message: string): void;
  /** The configuration as Lua has it now (a module's `getConfig`). */
  config(): Promise<Config>;
  /** A module finished loading (or failed): readiness and previews follow. */
  settled(): void;
  /** A module changed the set of tools. */
  changed(): void;
}

/** A definition from a JavaScript module: Lua-style snake_case names are accepted too. */
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

export class JsModules {
  /** Modules still loading: a send waits for them. */
  pending = 0;
  private readonly loaded = new Set<string>();

  constructor(private readonly deps: JsModuleDeps) {}

  /** Load a JavaScript tool module (`definitions` array, `resolve(register, done)`, or default). */
  load(path: string): void {
    if (this.loaded.has(path)) return;
    this.loaded.add(path);
    this.pending += 1;
    let finished = false;
    const done = (error?: unknown): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      this.pending -= 1;
      if (error !== undefined && error !== null) {
        this.deps.warn(`tool module ${path} failed: ${describeError(error)}`);
      }
      this.deps.settled();
    };
    const register = (nameOrDef: string | ToolDefinition, maybeDef?: ToolDefinition): void => {
      const def = typeof nameOrDef === 'string' ? { ...maybeDef, name: nameOrDef } : nameOrDef;
      try {
        this.deps.registry.register(fromJsDefinition(def));
        this.deps.origin(def.name, 'js');
      } catch (error) {
        this.deps.warn(
          `tool module ${path}: ${error instanceof Error ? error.message : String(error)}`,
        );
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
        for (const problem of registerJsBackends(this.deps.sandboxBackends, backends)) {
          this.deps.warn(`tool module ${path}: ${problem}`);
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
              this.deps.warn(`tool module ${path}: ${problem}`);
            },
          );
        }
        // Middleware a module brings along wraps every tool's execution.
        const middleware = mod['middleware'] ?? loaded['middleware'];
        if (middleware !== undefined) {
          const problem = this.deps.middleware.addFromModule(path, middleware);
          if (problem !== undefined) this.deps.warn(`tool module ${path}: ${problem}`);
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
    let tools: Readonly<Record<string, unknown>> = {};
    try {
      tools = (await this.deps.config()).tools;
    } catch (error) {
      this.deps.logger.warn(`tool module ${path}: reading the configuration failed`, error);
    }
    const logger = this.deps.logger;
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
    const registry = this.deps.registry;
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
        this.deps.origin(tool.name, 'js');
        this.deps.changed();
      },
      unregister: (name) => {
        const removed = registry.unregister(name);
        if (removed) {
          this.deps.origin(name, undefined);
          this.deps.changed();
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
}
