// The sandbox policy for one tool call: reads the merged `sandbox` configuration, expands the
// writable paths, picks a backend, and hands tools a `SandboxAccess` (plus the facts a Lua tool
// needs to answer `ctx.sandbox` on its own).
//
// Decisions:
// - `enabled`: the runtime override (`:Flemma sandbox:enable|disable`) beats the configuration;
//   the configuration the host receives already has setup and frontmatter merged, so this code
//   can only tell "override" from "config".
// - The settings arrive as whatever Lua sent. Missing keys take the documented defaults; an
//   empty Lua table may arrive as `[]` or `{}`, so both read as "empty" wherever an object or a
//   list is expected. An `rw_paths` the user emptied stays empty (nothing writable); only an
//   absent one falls back to the defaults.
// - When disabled, the access object is the permissive `noSandbox`: nothing is wrapped, every
//   path is writable, and no backend is probed.
// - When enabled, the write check holds whether or not a backend exists (docs/tools.md "The sandbox";
//   "regardless of backend availability"). An unknown `urn:` in `rw_paths` fails closed: nothing
//   is writable and commands are refused with the error, rather than guessing what was meant.
// - `sandbox.backend` may name a module instead of a backend: a JavaScript file (`.js`, `.mjs`,
//   `.cjs`) is imported here and its backend registered; any other name that no backend has is
//   handed to `ResolveOptions.loadNamed` (the host asks Lua to `require` it). Either way the
//   backend's own name is what gets resolved, and `sandbox.backends.<that name>` its settings.
// - `wrapPrefix` is derived by wrapping a sentinel argument: if the backend's command line ends
//   with the inner command unchanged, everything before it is the prefix. A backend that embeds
//   the command some other way has no prefix, and Lua tools (which can only prepend) get a
//   `wrapError` instead of silently running unsandboxed. JavaScript tools still call the
//   backend's `wrap` directly. The sentinel is printable text (no NUL), because a backend written
//   in Lua may hand its arguments to Vimscript functions, which cannot hold NUL bytes.
// - The `required` warning is returned as text; showing it once is the caller's business.

import { type SandboxAccess, type WrapResult, noSandbox } from '../context.js';
import {
  type BackendResolution,
  type BackendSettings,
  type SandboxBackend,
  type SandboxBackendRegistry,
  type SandboxPolicy,
  isAutoSelection,
  wrapCommand,
} from './backends.js';
import { createSandboxBackends } from './bwrap.js';
import {
  type SandboxFacts,
  type SandboxSettings,
  enabledFrom,
  parseSandboxSettings,
  resolvePaths,
} from './settings.js';
import {
  type ModuleSelection,
  expandModulePath,
  isJsModulePath,
  selectModuleBackend,
} from './modules.js';
import { scrubEnv } from './env.js';
import { type PathEnv, isPathWritable } from './paths.js';
import { protection, scrubRules } from './protect.js';
import type { TopListings } from './sensitive-places.js';

export interface SandboxState {
  access: SandboxAccess;
  enabled: boolean;
  /** The resolved writable paths (empty when disabled). */
  rwPaths: string[];
  /** The backend that wraps commands, when one is active. */
  backend?: string;
  /** The argv prefix that wraps a command: `[...wrapPrefix, ...argv]`. */
  wrapPrefix?: string[];
  /** Why commands cannot be wrapped (an explicit backend that is missing, a bad rw path). */
  wrapError?: string;
  /** A text to show the user once (backend `required` but none available). */
  warning?: string;
  /**
   * The backend that wraps commands is the built-in one, which applies the whole policy (hidden
   * places, read-only places, scrubbed environment); only then does the sandbox resolver approve.
   */
  builtinBackend?: boolean;
}

/**
 * Turns a selection that names no registered backend (and no JavaScript file) into one: the name
 * to use, an error to report, or undefined when it does not know the name either.
 */
export type NamedBackendLoader = (selection: string) => Promise<ModuleSelection | undefined>;

export interface ResolveOptions {
  /** The backend registry (the host's); a new one with bwrap registered when omitted. */
  registry?: SandboxBackendRegistry;
  /** Asked about unknown backend names (the host asks Lua to load them as modules). */
  loadNamed?: NamedBackendLoader;
  /** `tools.sensitive_paths`, added to the built-in sensitive places the sandbox hides. */
  sensitivePaths?: unknown;
  /** The variables the credential chain reads: always removed from a command's environment. */
  credentialEnv?: readonly string[];
  /**
   * Whether the state must carry `wrapPrefix` (a Lua tool wraps its own commands). Without it the
   * sensitive places are looked for only when a command is first wrapped: a call that runs no
   * command (`read`, `write`) costs no walk of the project.
   */
  prefix?: boolean;
  /** Told the problems found while looking for the places (a search that stopped at its limit). */
  onWarning?: (text: string) => void;
  /** The shared directories' listings, kept across commands (the host's). */
  listings?: TopListings;
}

/** Two distinct arguments, so a backend that joins the command into one string is noticed. */
const SENTINEL: readonly string[] = ['flemma-sandbox-probe:inner', 'flemma-sandbox-probe:command'];

function endsWithSentinel(argv: readonly string[]): boolean {
  const tail = argv.slice(-SENTINEL.length);
  return tail.length === SENTINEL.length && tail.every((arg, i) => arg === SENTINEL[i]);
}

/**
 * The backend name `selection` stands for: itself for `auto`, `required` and registered names;
 * the exported backend's name for a JavaScript file (imported and registered on first use);
 * whatever `loadNamed` answers for anything else.
 */
export async function selectBackend(
  selection: string,
  registry: SandboxBackendRegistry,
  where: { home: string; cwd: string },
  loadNamed?: NamedBackendLoader,
): Promise<ModuleSelection> {
  if (isAutoSelection(selection) || registry.get(selection) !== undefined) {
    return { name: selection };
  }
  if (isJsModulePath(selection)) {
    return selectModuleBackend(expandModulePath(selection, where.home, where.cwd), registry);
  }
  if (loadNamed !== undefined) {
    try {
      const answer = await loadNamed(selection);
      if (answer !== undefined) return answer;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { error: `Sandbox backend '${selection}' could not be loaded: ${message}` };
    }
  }
  return { name: selection };
}

/** `resolve` for a selection that may name a module; a module that fails to load is an error. */
async function resolveSelection(
  settings: SandboxSettings,
  registry: SandboxBackendRegistry,
  where: { home: string; cwd: string },
  options: ResolveOptions,
): Promise<BackendResolution> {
  const selected = await selectBackend(settings.backend, registry, where, options.loadNamed);
  if ('error' in selected) return { kind: 'error', error: selected.error };
  return registry.resolve(selected.name, settings.backends);
}

/** The policy of a probe that asks only whether a backend wraps commands by prefix. */
function bareProbePolicy(rwPaths: string[], settings: SandboxSettings): SandboxPolicy {
  return {
    rw_paths: rwPaths,
    network: settings.network,
    allow_privileged: settings.allow_privileged,
    hidden_paths: [],
    read_only_paths: [],
    env_unset: [],
  };
}

/** The whole policy, places and all, made once for a state when first needed. */
function lazyPolicy(
  settings: SandboxSettings,
  facts: SandboxFacts,
  paths: { env: PathEnv; home: string; rwPaths: string[] },
  options: ResolveOptions,
): () => SandboxPolicy {
  let policy: SandboxPolicy | undefined;
  return () => {
    if (policy !== undefined) return policy;
    const guarded = protection(facts, paths.env, paths.home, paths.rwPaths, {
      sensitivePaths: options.sensitivePaths,
      credentialEnv: options.credentialEnv,
      envAllow: settings.env_allow,
      listings: options.listings,
    });
    for (const text of guarded.warnings) options.onWarning?.(text);
    policy = {
      rw_paths: paths.rwPaths,
      network: settings.network,
      allow_privileged: settings.allow_privileged,
      hidden_paths: guarded.hidden_paths,
      read_only_paths: guarded.read_only_paths,
      env_unset: guarded.env_unset,
    };
    return policy;
  };
}

type Active = { backend: SandboxBackend; settings: BackendSettings };

/** The backend that wraps commands, or why there is none (an error, or a warning to show). */
async function activeBackend(
  settings: SandboxSettings,
  registry: SandboxBackendRegistry,
  where: { home: string; cwd: string },
  options: ResolveOptions,
): Promise<{ active?: Active; commandError?: string; warning?: string }> {
  const resolution = await resolveSelection(settings, registry, where, options);
  if (resolution.kind === 'error') return { commandError: resolution.error };
  if (resolution.kind === 'none') {
    // `auto` runs unsandboxed without a backend, but the user asked for a sandbox: say so.
    return {
      warning:
        resolution.warning ??
        `Sandbox is enabled but no backend is available (${resolution.reason}); bash, grep and find run unsandboxed. Install bubblewrap, or set sandbox.enabled = false.`,
    };
  }
  return { active: { backend: resolution.backend, settings: resolution.settings } };
}

/**
 * Wraps the sentinel: whether the backend wraps at all, and by which prefix. Without a prefix to
 * hand out, the probe only asks whether the backend wraps: the places are left out of it and
 * looked for when a command is wrapped.
 */
async function probePrefix(
  active: Active,
  policy: SandboxPolicy,
  wantsPrefix: boolean,
): Promise<{ commandError?: string; prefixError?: string; wrapPrefix?: string[] }> {
  const probe = await wrapCommand(active.backend, SENTINEL, policy, active.settings);
  if (!probe.ok) return { commandError: probe.error };
  if (endsWithSentinel(probe.argv)) {
    return wantsPrefix ? { wrapPrefix: probe.argv.slice(0, -SENTINEL.length) } : {};
  }
  return {
    prefixError: `Sandbox backend '${active.backend.name}' does not wrap commands by prefix; Lua tools cannot use it`,
  };
}

/** Resolves the sandbox for one tool call. */
export async function resolveSandbox(
  rawSettings: unknown,
  facts: SandboxFacts,
  env: PathEnv,
  home: string,
  options: ResolveOptions = {},
): Promise<SandboxState> {
  const settings = parseSandboxSettings(rawSettings);
  if (!enabledFrom(settings, facts)) {
    return { access: noSandbox, enabled: false, rwPaths: [] };
  }
  const registry = options.registry ?? createSandboxBackends();
  const rw = resolvePaths(settings, facts, env, home);
  const rwPaths = rw.paths;
  const rules = scrubRules({ credentialEnv: options.credentialEnv, envAllow: settings.env_allow });
  const fullPolicy = lazyPolicy(settings, facts, { env, home, rwPaths }, options);
  const wantsPrefix = options.prefix !== false;

  let commandError = rw.error;
  let prefixError: string | undefined;
  let warning: string | undefined;
  let active: Active | undefined;
  let wrapPrefix: string[] | undefined;
  if (commandError === undefined) {
    ({ active, commandError, warning } = await activeBackend(
      settings,
      registry,
      { home, cwd: facts.cwd },
      options,
    ));
  }
  if (active !== undefined) {
    const probePolicy = wantsPrefix ? fullPolicy() : bareProbePolicy(rwPaths, settings);
    ({ commandError, prefixError, wrapPrefix } = await probePrefix(
      active,
      probePolicy,
      wantsPrefix,
    ));
  }

  const cwd = facts.cwd;
  const chosen = commandError === undefined ? active : undefined;
  const access: SandboxAccess = {
    enabled: true,
    is_path_writable: (path) => isPathWritable(path, rwPaths, cwd),
    wrap_command: (argv): Promise<WrapResult> => {
      if (commandError !== undefined) return Promise.resolve({ ok: false, error: commandError });
      if (chosen === undefined) return Promise.resolve({ ok: true, argv: [...argv] });
      return wrapCommand(chosen.backend, argv, fullPolicy(), chosen.settings);
    },
    // Whether or not a backend wraps the command, it does not get the secrets.
    scrub_env: (environment) => scrubEnv(environment, rules),
  };

  const wrapError = commandError ?? prefixError;
  return {
    access,
    enabled: true,
    rwPaths,
    ...(chosen === undefined ? {} : { backend: chosen.backend.name }),
    ...(wrapPrefix === undefined || commandError !== undefined ? {} : { wrapPrefix }),
    ...(wrapError === undefined ? {} : { wrapError }),
    ...(warning === undefined ? {} : { warning }),
    builtinBackend: chosen !== undefined && registry.isBuiltinInPlace(chosen.backend.name),
  };
}

// --- status -----------------------------------------------------------------------------------

export interface SandboxBackendStatus {
  name: string;
  priority: number;
  description?: string;
  available: boolean;
  error?: string;
}

/** What `:Flemma sandbox:status` shows. */
export interface SandboxStatus {
  enabled: boolean;
  /** `override` when the runtime toggle decided, else `config` (setup and frontmatter merged). */
  enabled_by: 'override' | 'config';
  /** The configured `sandbox.backend`. */
  backend_setting: string;
  /** The backend commands would be wrapped with, or null. */
  backend: string | null;
  /** Why no backend wraps commands (unsandboxed fallback, or the error an explicit one gives). */
  backend_reason?: string;
  /** Commands would be refused (explicit backend unavailable, bad rw path). */
  backend_error?: boolean;
  warning?: string;
  backends: SandboxBackendStatus[];
  rw_paths: string[];
  rw_paths_error?: string;
  network: boolean;
  allow_privileged: boolean;
  /** `sandbox.policy.env_allow`. */
  env_allow: string[];
  /** The same, as text lines for a notification. */
  lines: string[];
}

/** Describes how the sandbox resolves for a buffer (probes backends even when disabled). */
export async function sandboxStatus(
  rawSettings: unknown,
  facts: SandboxFacts,
  env: PathEnv,
  home: string,
  options: ResolveOptions = {},
): Promise<SandboxStatus> {
  const settings = parseSandboxSettings(rawSettings);
  const registry = options.registry ?? createSandboxBackends();
  const enabled = enabledFrom(settings, facts);
  const enabledBy = facts.sandbox_override === null ? 'config' : 'override';
  const rw = resolvePaths(settings, facts, env, home);
  const resolution = await resolveSelection(settings, registry, { home, cwd: facts.cwd }, options);
  const backends: SandboxBackendStatus[] = [];
  for (const backend of registry.list()) {
    const answer = await registry.availability(backend.name, settings.backends[backend.name] ?? {});
    backends.push({
      name: backend.name,
      priority: backend.priority,
      ...(backend.description === undefined ? {} : { description: backend.description }),
      available: answer.ok,
      ...(answer.ok ? {} : { error: answer.error }),
    });
  }

  const status: SandboxStatus = {
    enabled,
    enabled_by: enabledBy,
    backend_setting: settings.backend,
    backend: resolution.kind === 'backend' ? resolution.backend.name : null,
    backends,
    rw_paths: rw.paths,
    network: settings.network,
    allow_privileged: settings.allow_privileged,
    env_allow: settings.env_allow,
    lines: [],
  };
  if (resolution.kind === 'none') {
    status.backend_reason = resolution.reason;
    if (resolution.warning !== undefined) status.warning = resolution.warning;
  } else if (resolution.kind === 'error') {
    status.backend_reason = resolution.error;
    status.backend_error = true;
  }
  if (rw.error !== undefined) status.rw_paths_error = rw.error;
  status.lines = statusLines(status);
  return status;
}

function statusLines(status: SandboxStatus): string[] {
  const lines = [
    `Sandbox: ${status.enabled ? 'enabled' : 'disabled'} (${status.enabled_by === 'override' ? 'runtime override' : 'config'})`,
  ];
  if (status.backend !== null) {
    lines.push(`Backend: ${status.backend} (setting: ${status.backend_setting})`);
  } else if (status.backend_error === true) {
    lines.push(`Backend: none; commands are refused: ${status.backend_reason ?? ''}`);
  } else {
    lines.push(`Backend: none; commands run unsandboxed: ${status.backend_reason ?? ''}`);
  }
  if (status.rw_paths_error !== undefined) {
    lines.push(`Writable paths: error: ${status.rw_paths_error}`);
  } else if (status.rw_paths.length === 0) {
    lines.push('Writable paths: none');
  } else {
    lines.push('Writable paths:', ...status.rw_paths.map((path) => `  ${path}`));
  }
  lines.push(`Network: ${status.network ? 'allowed' : 'blocked'}`);
  lines.push(`Privileged: ${status.allow_privileged ? 'allowed' : 'no (user namespace)'}`);
  lines.push(
    `Environment: keys and secrets removed${status.env_allow.length === 0 ? '' : ` (kept: ${status.env_allow.join(', ')})`}`,
  );
  if (status.backends.length > 0) {
    lines.push('Backends:');
    for (const backend of status.backends) {
      const state = backend.available ? 'available' : `unavailable: ${backend.error ?? ''}`;
      const about = backend.description === undefined ? '' : `, ${backend.description}`;
      lines.push(`  ${backend.name} (priority ${backend.priority}${about}): ${state}`);
    }
  }
  return lines;
}

export {
  type Availability,
  type AvailabilityAnswer,
  type BackendDefinition,
  type BackendResolution,
  type BackendSettings,
  type SandboxBackend,
  type SandboxPolicy,
  SandboxBackendRegistry,
  normalizeAvailability,
  wrapCommand,
} from './backends.js';
export { createBwrapBackend, createSandboxBackends } from './bwrap.js';
export {
  DEFAULT_RW_PATHS,
  type SandboxFacts,
  type SandboxSettings,
  parseSandboxSettings,
} from './settings.js';
export {
  type ModuleSelection,
  backendFromExports,
  backendsFromToolModule,
  expandModulePath,
  importBackendModule,
  isJsModulePath,
} from './modules.js';
export {
  type PathEnv,
  type PathFacts,
  PathVariableError,
  expandPathVariable,
  isPathWritable,
  resolveRwPaths,
} from './paths.js';
