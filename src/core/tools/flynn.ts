// Tools written in JavaScript or TypeScript against Flynn's `Tool` interface (docs/tools.md,
// "Flynn-style tools: the `Tool` interface"),
// and the three ways a module in `tools.modules` can hand them over: static objects, a factory
// given its dependencies, a factory returning several tools. See docs/tools.md.
//
// Decisions:
// - A module is read through these exports (on the module or on its default export):
//     tool        one Tool                              (static)
//     tools       an array of Tools                     (static)
//     default     a Tool or an array of Tools           (static)
//     createTool  (deps) => Tool | Promise<Tool>         (factory)
//     createTools (deps) => Tool[] | Promise<Tool[]>     (multi-factory)
//     setup       (registry, deps) => void | Promise     (anything else, through the registry API)
//   Several may be combined; they are applied in that order. The older `definitions` and
//   `resolve(register, done)` exports keep working (src/host/tools.ts).
// - Tools handed over this way are added with the registry contract: a name already registered
//   (a built-in, a Lua tool, another module's tool) is an error reported for that tool, and the
//   module's other tools still load. Lua tools may still replace built-ins (their own path).
// - `deps` holds the registry API, `getConfig(key)` (a copy of `tools.<key>` from the
//   configuration when the module loads, the same table `ctx.get_config()` gives a tool named
//   `key`), a logger writing to Flemma's log, and the module's path.

import type { ExecutionContext } from './context.js';
import type { ToolPolicyConfig } from './policy.js';
import type { Preview } from './registry.js';

/** What `execute` resolves to. `output` is the text the model reads; `error` when it failed. */
export interface ToolResult {
  success: boolean;
  /** A string is written as it is; an object becomes JSON in a `json` fence. */
  output: string | Record<string, unknown>;
  error?: string;
}

/** Flynn's `Tool`, with Flemma's optional extras. */
export interface Tool<Args = Record<string, unknown>> {
  /** Canonical name: letters, digits, `_`, `.`, `:` and `-` (`git.status`, `mcp:gh:issue`). */
  name: string;
  /** What the model reads to decide when to call the tool. */
  description: string;
  /** JSON Schema (an object schema) of `args`; checked with ajv before `execute` runs. */
  inputSchema: Record<string, unknown>;
  /** Runs in the host. Throwing is the same as `{ success: false, output: '', error }`. */
  execute(args: Args, ctx: ExecutionContext): Promise<ToolResult> | ToolResult;
  /** More names a tool policy may match the tool by. */
  aliases?: string[];
  /** Policy groups (`fs`, `runtime`, `web`, `memory`, or your own) the tool belongs to. */
  groups?: string[];
  /** The `conservative` autonomy level always asks before it runs. */
  dangerous?: boolean;
  /** OpenAI strict mode. */
  strict?: boolean;
  /** `false`: registered, offered only where a buffer or `tools` names it. */
  enabled?: boolean;
  /** Long-running: shown with a spinner; honour `ctx.signal`. */
  async?: boolean;
  /** The placeholder's preview line. */
  formatPreview?(args: Record<string, unknown>, maxLength: number): Preview;
  /** "Always" approvals are remembered per command (`cmdString`), not for the whole tool. */
  requireCmdApproval?: boolean;
  /** The command a call runs, as the user reads it. */
  cmdString?(args: Args): string | undefined;
  /** YOLO mode does not approve this tool. */
  neverAutoApprove?: boolean;
  /** The error the model gets when the user cancels the call. */
  formatCancelled?(args: Args): string;
}

/** The registry as JavaScript modules see it (Flynn's `ToolRegistry`). */
export interface ToolRegistryApi {
  /** Adds a tool; throws `Tool 'x' is already registered`, or on an API name collision. */
  register(tool: Tool): void;
  /** Removes a tool; `false` when there was none. */
  unregister(name: string): boolean;
  get(name: string): Tool | undefined;
  /** The tool a provider-safe name stands for (`file_read` → `file.read`). */
  getByApiName(apiName: string): Tool | undefined;
  /** Every registered tool, sorted by name. */
  list(): Tool[];
  has(name: string): boolean;
  /** The provider-safe name of a tool name. */
  apiName(name: string): string;
  /** A policy under the configuration's `tools.policy` (its fields win). */
  setPolicy(policy: ToolPolicyConfig | undefined): void;
  getPolicy(): ToolPolicyConfig | undefined;
}

export interface ToolLogger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** What a factory receives. */
export interface ToolDeps {
  registry: ToolRegistryApi;
  /** A copy of `tools.<key>` from the configuration, or undefined. */
  getConfig(key: string): Record<string, unknown> | undefined;
  log: ToolLogger;
  /** Absolute path of the module. */
  modulePath: string;
}

/** The exports a module may use for Flynn-style tools. */
export interface FlynnToolModule {
  tool?: Tool;
  tools?: Tool[];
  default?: Tool | Tool[] | FlynnToolModule;
  createTool?(deps: ToolDeps): Tool | Promise<Tool>;
  createTools?(deps: ToolDeps): Tool[] | Promise<Tool[]>;
  setup?(registry: ToolRegistryApi, deps: ToolDeps): void | Promise<void>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Looks like a Tool: an object with a string `name` and a function `execute`. */
export function isTool(value: unknown): value is Tool {
  return (
    isRecord(value) && typeof value['name'] === 'string' && typeof value['execute'] === 'function'
  );
}

const EXPORTS = ['tool', 'tools', 'createTool', 'createTools', 'setup'] as const;

/** Whether the module (or its default export) uses any of the Flynn-style exports. */
export function hasFlynnExports(loaded: Record<string, unknown>): boolean {
  const def = loaded['default'];
  if (isTool(def) || (Array.isArray(def) && def.some(isTool))) return true;
  return [loaded, isRecord(def) ? def : {}].some((mod) =>
    EXPORTS.some((key) => mod[key] !== undefined),
  );
}

function pick(loaded: Record<string, unknown>, key: string): unknown {
  const direct = loaded[key];
  if (direct !== undefined) return direct;
  const def = loaded['default'];
  return isRecord(def) && !isTool(def) ? def[key] : undefined;
}

/**
 * Hands every tool of a module to `add` (static exports, then factories, then `setup`). A
 * problem with one tool is reported through `problem` and the rest go on; a factory that throws
 * is one problem.
 */
export async function collectFlynnTools(
  loaded: Record<string, unknown>,
  deps: ToolDeps,
  add: (tool: Tool) => void,
  problem: (message: string) => void,
): Promise<void> {
  const offer = (value: unknown, where: string): void => {
    const items = Array.isArray(value) ? (value as unknown[]) : [value];
    items.forEach((item, index) => {
      const label = Array.isArray(value) ? `${where}[${String(index)}]` : where;
      if (!isTool(item)) {
        problem(`${label} is not a tool (it needs a string name and an execute function)`);
        return;
      }
      try {
        add(item);
      } catch (error) {
        problem(
          `${label} ('${item.name}'): ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    });
  };
  const def = loaded['default'];
  if (isTool(def) || (Array.isArray(def) && def.some(isTool))) offer(def, 'default export');
  for (const key of ['tool', 'tools'] as const) {
    const value = pick(loaded, key);
    if (value !== undefined) offer(value, key);
  }
  for (const key of ['createTool', 'createTools'] as const) {
    const factory = pick(loaded, key);
    if (factory === undefined) continue;
    if (typeof factory !== 'function') {
      problem(`${key} must be a function`);
      continue;
    }
    let made: unknown;
    try {
      made = await (factory as (d: ToolDeps) => unknown)(deps);
    } catch (error) {
      problem(`${key}() failed: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    if (key === 'createTools' && !Array.isArray(made)) {
      problem('createTools() must return an array of tools');
      continue;
    }
    offer(made, `${key}()`);
  }
  const setup = pick(loaded, 'setup');
  if (setup !== undefined) {
    if (typeof setup !== 'function') {
      problem('setup must be a function');
    } else {
      try {
        await (setup as (r: ToolRegistryApi, d: ToolDeps) => unknown)(deps.registry, deps);
      } catch (error) {
        problem(`setup() failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }
}

/** A registry as `executeTool` needs it. */
export interface ExecutableRegistry {
  resolve(name: string): import('./registry.js').ToolDefinition | undefined;
}

/**
 * Flynn's executor contract for one call, outside the buffer: look the tool up (canonical or API
 * name), check the policy, run it, and answer a `ToolResult` whatever happens. The host's own
 * executor (src/host/tools.ts) answers with the same texts and adds approval, timeouts and the
 * buffer.
 */
export async function executeTool(
  registry: ExecutableRegistry,
  name: string,
  args: unknown,
  ctx: ExecutionContext,
  policy?: { isAllowed(tool: import('./policy.js').PolicyTool): boolean },
): Promise<ToolResult> {
  const def = registry.resolve(name);
  if (def?.execute === undefined) {
    return { success: false, output: '', error: `Tool '${name}' not found` };
  }
  if (policy !== undefined && !policy.isAllowed(def)) {
    return { success: false, output: '', error: `Tool '${name}' is not allowed by tool policy` };
  }
  try {
    const outcome = await def.execute(args, ctx);
    return outcome.ok
      ? { success: true, output: outcome.output }
      : { success: false, output: outcome.partialOutput ?? '', error: outcome.error };
  } catch (error) {
    return {
      success: false,
      output: '',
      error: error instanceof Error ? error.message : String(error),
    };
  }
}
