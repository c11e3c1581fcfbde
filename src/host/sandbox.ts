// The sandbox as the executor sees it for one call: the access object tools use, and the facts a
// Lua tool's `ctx.sandbox` needs to answer without asking the host. The policy itself lives in
// src/core/tools/sandbox; this file supplies what the core cannot know on its own: Neovim's
// environment, and the backends defined in Lua.
//
// Decisions:
// - Environment variables in `rw_paths` are read from `facts.env` when the editor sends one
//   (Neovim's environment, which `:let $VAR=…` can change), else from the host's environment,
//   which the host inherited from Neovim when it started.
// - The host's one backend registry (`Host.sandboxBackends`) is used, so backends
//   registered elsewhere in the host apply.
// - A backend defined in Lua is a proxy in that registry: its `available` and `wrap` are host →
//   Lua requests (`sandbox.available`, `sandbox.wrap`). Lua sends its whole list with
//   `sandbox:define` after every change and when a host starts; proxies missing from the list are
//   removed (a replaced bwrap comes back). An unchanged proxy is left in place, so an unrelated
//   change does not throw away its cached availability.
// - A `sandbox.backend` that names no registered backend (and is not a JavaScript file) is sent
//   to Lua as a module name (`sandbox.load`): Lua `require`s it, registers what it returns, and
//   answers the backend's name, which is remembered for the next call.
// - Lua errors arrive as the text Lua gave; the core turns them into "Sandbox backend 'x' failed:
//   …" (wrap) or "not available: …" (available), so a broken backend never takes the host down.
// - The variables every provider reads (`KNOWN_ENV`) are always removed from a command's
//   environment; `tools.sensitive_paths` adds to the places the sandbox hides.

import {
  type BackendDefinition,
  type ModuleSelection,
  type SandboxBackend,
  type SandboxBackendRegistry,
  type SandboxState as CoreSandboxState,
  type SandboxFacts as CoreSandboxFacts,
  type SandboxStatus,
  resolveSandbox,
  sandboxStatus,
} from '../core/tools/sandbox/index.js';
import { TopListings } from '../core/tools/sandbox/sensitive-places.js';
import type { LuaBridge } from '../editor/lua.js';
import { KNOWN_ENV } from './buffer-settings.js';

export type SandboxState = CoreSandboxState;

export interface SandboxFacts extends CoreSandboxFacts {
  /** Neovim's environment, when the editor sends it. */
  env?: Record<string, string | undefined>;
}

export type { SandboxStatus };

/** The part of the Lua bridge the proxies need. */
export type LuaCaller = Pick<LuaBridge, 'call'>;

/** A backend as Lua describes it in `sandbox:define` (its functions stay in Neovim). */
export interface LuaBackendSpec {
  name: string;
  priority?: number;
  description?: string;
  replace?: boolean;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A spec as received, or an error text. */
function specOf(raw: unknown): LuaBackendSpec | string {
  if (!isRecord(raw) || typeof raw['name'] !== 'string' || raw['name'] === '') {
    return `a Lua sandbox backend without a name was ignored: ${JSON.stringify(raw)}`;
  }
  const spec: LuaBackendSpec = { name: raw['name'] };
  if (typeof raw['priority'] === 'number') spec.priority = raw['priority'];
  if (typeof raw['description'] === 'string') spec.description = raw['description'];
  if (raw['replace'] === true) spec.replace = true;
  return spec;
}

function sameSpec(a: LuaBackendSpec, b: LuaBackendSpec): boolean {
  return (
    a.name === b.name &&
    a.priority === b.priority &&
    a.description === b.description &&
    a.replace === b.replace
  );
}

/** The backends one Lua side defined, as proxies in a registry. */
export class LuaSandboxBackends {
  private readonly proxies = new Map<string, { spec: LuaBackendSpec; entry: SandboxBackend }>();
  /** Lua module name → the backend name it registered. */
  private readonly modules = new Map<string, string>();

  constructor(
    private readonly lua: LuaCaller,
    private readonly registry: SandboxBackendRegistry,
  ) {}

  /** Lua's whole list (`sandbox:define`); answers the problems found, one text each. */
  define(list: readonly unknown[]): string[] {
    const problems: string[] = [];
    const wanted = new Set<string>();
    for (const raw of list) {
      const spec = specOf(raw);
      if (typeof spec === 'string') {
        problems.push(spec);
        continue;
      }
      wanted.add(spec.name);
      const error = this.add(spec);
      if (error !== undefined) problems.push(error);
    }
    for (const [name, proxy] of [...this.proxies]) {
      if (wanted.has(name)) continue;
      this.proxies.delete(name);
      if (this.registry.get(name) === proxy.entry) this.registry.unregister(name);
    }
    return problems;
  }

  /** Names of the backends currently proxied to Lua (sorted). */
  names(): string[] {
    return [...this.proxies.keys()].sort();
  }

  /** Registers (or keeps) the proxy of one Lua backend; an error text when refused. */
  private add(spec: LuaBackendSpec): string | undefined {
    const current = this.proxies.get(spec.name);
    if (
      current !== undefined &&
      sameSpec(current.spec, spec) &&
      this.registry.get(spec.name) === current.entry
    ) {
      return undefined;
    }
    try {
      const entry = this.registry.register(this.proxy(spec));
      this.proxies.set(spec.name, { spec, entry });
      return undefined;
    } catch (error) {
      return `Lua sandbox backend '${spec.name}': ${messageOf(error)}`;
    }
  }

  private proxy(spec: LuaBackendSpec): BackendDefinition {
    const { name } = spec;
    return {
      name,
      ...(spec.priority === undefined ? {} : { priority: spec.priority }),
      ...(spec.description === undefined ? {} : { description: spec.description }),
      ...(spec.replace === undefined ? {} : { replace: spec.replace }),
      available: async (settings) => {
        // The registry reads any other answer as "unavailable", saying what it got.
        return await this.lua.call('sandbox.available', { name, settings });
      },
      wrap: async (argv, policy, settings) => {
        const answer = await this.lua.call('sandbox.wrap', {
          name,
          argv: [...argv],
          policy: {
            rw_paths: [...policy.rw_paths],
            network: policy.network,
            allow_privileged: policy.allow_privileged,
            hidden_paths: [...policy.hidden_paths],
            read_only_paths: [...policy.read_only_paths],
            env_unset: [...policy.env_unset],
          },
          settings,
        });
        if (isRecord(answer) && typeof answer['error'] === 'string') {
          throw new Error(answer['error']);
        }
        // `wrapCommand` checks that this is a list of strings.
        return (isRecord(answer) ? answer['argv'] : answer) as string[];
      },
    };
  }

  /** `ResolveOptions.loadNamed`: ask Lua to load `selection` as a Lua module. */
  readonly loadNamed = async (selection: string): Promise<ModuleSelection | undefined> => {
    const known = this.modules.get(selection);
    if (known !== undefined && this.registry.get(known) !== undefined) return { name: known };
    const answer = await this.lua.call('sandbox.load', { module: selection });
    if (!isRecord(answer)) return undefined;
    if (typeof answer['error'] === 'string') {
      return {
        error: `Sandbox backend module '${selection}' could not be loaded: ${answer['error']}`,
      };
    }
    const spec = specOf(answer['backend']);
    if (typeof spec === 'string') return undefined;
    const error = this.add(spec);
    if (error !== undefined) return { error };
    this.modules.set(selection, spec.name);
    return { name: spec.name };
  };
}

const perBridge = new WeakMap<LuaCaller, LuaSandboxBackends>();

/** The Lua backends of one bridge (one per host), in the host's registry. */
export function luaBackendsOf(
  lua: LuaCaller,
  registry: SandboxBackendRegistry,
): LuaSandboxBackends {
  let backends = perBridge.get(lua);
  if (backends === undefined) {
    backends = new LuaSandboxBackends(lua, registry);
    perBridge.set(lua, backends);
  }
  return backends;
}

/** `sandbox:define`: Lua's list of backends; answers the problems to show. */
export function defineLuaBackends(
  lua: LuaCaller,
  registry: SandboxBackendRegistry,
  list: readonly unknown[],
): string[] {
  return luaBackendsOf(lua, registry).define(list);
}

/**
 * The `sandboxBackends` a JavaScript tool module exports, registered in the host's registry;
 * answers the problems found.
 */
export function registerJsBackends(
  registry: SandboxBackendRegistry,
  list: readonly unknown[],
): string[] {
  const problems: string[] = [];
  for (const def of list) {
    try {
      registry.register(def as BackendDefinition);
    } catch (error) {
      problems.push(messageOf(error));
    }
  }
  return problems;
}

function envOf(facts: SandboxFacts): Record<string, string | undefined> {
  return facts.env ?? process.env;
}

/**
 * Resolved sandboxes by the facts object they were asked for, then by the settings object: the
 * calls a step of the tool cycle starts share both (one snapshot of the configuration, one
 * answer from the editor), so the paths are resolved and the backend chosen once per step, not
 * once per tool. A new snapshot is a new object, so nothing outlives the step that made it.
 */
const resolved = new WeakMap<SandboxFacts, WeakMap<object, Promise<SandboxState>>>();
/** The same, for states that carry `wrapPrefix` (a Lua tool's). */
const resolvedWithPrefix = new WeakMap<SandboxFacts, WeakMap<object, Promise<SandboxState>>>();

/** The shared directories' listings (`/tmp`, the cache directory), kept across commands. */
const listings = new TopListings();

/** What `sandboxFor` takes from the rest of the configuration. */
export interface SandboxExtras {
  /** `tools.sensitive_paths`. */
  sensitivePaths?: unknown;
  /** The state carries `wrapPrefix` (for a Lua tool); otherwise places are looked for lazily. */
  prefix?: boolean;
  /** Told a problem found while looking for the sensitive places. */
  onWarning?: (text: string) => void;
}

export function sandboxFor(
  settings: Record<string, unknown> | undefined,
  facts: SandboxFacts,
  home: string,
  registry: SandboxBackendRegistry,
  lua?: LuaCaller,
  extras: SandboxExtras = {},
): Promise<SandboxState> {
  const compute = (): Promise<SandboxState> =>
    resolveSandbox(settings, facts, envOf(facts), home, {
      registry,
      ...(lua === undefined ? {} : { loadNamed: luaBackendsOf(lua, registry).loadNamed }),
      sensitivePaths: extras.sensitivePaths,
      credentialEnv: KNOWN_ENV,
      prefix: extras.prefix === true,
      ...(extras.onWarning === undefined ? {} : { onWarning: extras.onWarning }),
      listings,
    });
  if (settings === undefined) return compute();
  const byFacts = extras.prefix === true ? resolvedWithPrefix : resolved;
  let bySettings = byFacts.get(facts);
  if (bySettings === undefined) {
    bySettings = new WeakMap();
    byFacts.set(facts, bySettings);
  }
  const cache = bySettings;
  let state = cache.get(settings);
  if (state === undefined) {
    state = compute();
    cache.set(settings, state);
    // A failure is not kept: the next call tries again.
    state.catch(() => cache.delete(settings));
  }
  return state;
}

/** The report behind `:Flemma sandbox:status` (`lines` is ready to show). */
export function sandboxStatusFor(
  settings: Record<string, unknown> | undefined,
  facts: SandboxFacts,
  home: string,
  registry: SandboxBackendRegistry,
  lua?: LuaCaller,
): Promise<SandboxStatus> {
  return sandboxStatus(settings, facts, envOf(facts), home, {
    registry,
    ...(lua === undefined ? {} : { loadNamed: luaBackendsOf(lua, registry).loadNamed }),
  });
}
