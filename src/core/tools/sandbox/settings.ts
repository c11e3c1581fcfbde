// The `sandbox` configuration as Lua sends it, read with the documented defaults, and the
// writable paths it names resolved for one buffer (the decisions are in index.ts).
import type { BackendSettings } from './backends.js';
import { type PathEnv, PathVariableError, resolveRwPaths } from './paths.js';
import type { ProtectFacts } from './protect.js';

export interface SandboxFacts extends ProtectFacts {
  /** The editor's working directory. */
  cwd: string;
  /** The chat file, or null for an unnamed buffer. */
  filename: string | null;
  /** The runtime override: true/false, or null when not set. */
  sandbox_override: boolean | null;
}

export interface SandboxSettings {
  enabled: boolean;
  /** `auto`, `required` or a backend name. */
  backend: string;
  rw_paths: string[];
  network: boolean;
  allow_privileged: boolean;
  /** Variables that stay in a command's environment although the scrub rules match them. */
  env_allow: string[];
  backends: Record<string, BackendSettings>;
}

/**
 * The writable paths when `rw_paths` is not set. Not the XDG data directory: Neovim runs what is in
 * `stdpath("data")/site/plugin` at its next start (issue 19).
 */
export const DEFAULT_RW_PATHS: readonly string[] = [
  'urn:flemma:cwd',
  'urn:flemma:buffer:path',
  '/tmp',
  '${TMPDIR:-/tmp}',
  '${XDG_CACHE_HOME:-~/.cache}',
];

type Table = Record<string, unknown>;

/** An object as a table; arrays (Lua's empty table) and non-objects read as empty. */
function tableOf(value: unknown): Table {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Table)
    : {};
}

function booleanOr(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

function stringList(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return (value as unknown[]).filter((item): item is string => typeof item === 'string');
}

/** The `sandbox` table as sent by Lua, with the documented defaults filled in. */
export function parseSandboxSettings(raw: unknown): SandboxSettings {
  const table = tableOf(raw);
  const policy = tableOf(table['policy']);
  const backend = table['backend'];
  const rwPaths = policy['rw_paths'];
  const backends: Record<string, BackendSettings> = {};
  for (const [name, value] of Object.entries(tableOf(table['backends']))) {
    backends[name] = tableOf(value);
  }
  return {
    enabled: booleanOr(table['enabled'], true),
    backend: typeof backend === 'string' && backend !== '' ? backend : 'auto',
    rw_paths:
      rwPaths === undefined || rwPaths === null ? [...DEFAULT_RW_PATHS] : stringList(rwPaths),
    network: booleanOr(policy['network'], true),
    allow_privileged: booleanOr(policy['allow_privileged'], false),
    env_allow: stringList(policy['env_allow']),
    backends,
  };
}

export function enabledFrom(settings: SandboxSettings, facts: SandboxFacts): boolean {
  return facts.sandbox_override ?? settings.enabled;
}

export interface RwResolution {
  paths: string[];
  error?: string;
}

export function resolvePaths(
  settings: SandboxSettings,
  facts: SandboxFacts,
  env: PathEnv,
  home: string,
): RwResolution {
  try {
    return { paths: resolveRwPaths(settings.rw_paths, facts, env, home) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const prefix =
      error instanceof PathVariableError ? 'Invalid sandbox.policy.rw_paths' : 'Sandbox paths';
    return { paths: [], error: `${prefix}: ${message}` };
  }
}
