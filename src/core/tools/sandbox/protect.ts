// What the sandbox keeps from the commands it runs (issue 19), as the parts of the policy a backend
// receives: the places to hide, the places inside writable paths to keep read-only, and the
// environment variables to remove. The lists come from sensitive.ts and env.ts; this module picks
// the places that exist for one buffer and puts them in the form backends get.
//
// Decisions:
// - Relative sensitive entries (`.env*`, `.vscode/tasks.json`) and git directories are looked for
//   at every depth (bounded: sensitive-places.ts) below the editor's cwd, the chat file's
//   directory and every writable path the user added: what a command can write is where a hook
//   file would matter. The shared temporary and cache directories (`/tmp`, `$TMPDIR`,
//   `$XDG_CACHE_HOME` or `~/.cache`) are looked at only at their top level: they hold other
//   programs' trees, whose walk would cost every command tens of milliseconds and reach the limit
//   on most machines (docs/tools.md, "What the sandbox keeps from commands").
// - Places are de-duplicated like rw paths (real, outermost only, sorted). A read-only place is
//   kept only inside a writable path (elsewhere the whole file system is read-only already) and
//   not inside a hidden one.
// - A session place (runtime directory, sockets) that contains a writable path is not hidden:
//   `XDG_RUNTIME_DIR=/tmp` must not take `/tmp` away from every command. The sensitive places are
//   hidden whatever they contain.

import { join } from 'node:path';

import { type ScrubRules, scrubbedNames } from './env.js';
import { type PathEnv, isUnder, normalizeRwPaths, resolveReal } from './paths.js';
import { type EditorDirs, type SensitiveEntry, sensitiveEntries } from './sensitive.js';
import { MAX_WALKED, type TopListings, sandboxPlaces, sessionPlaces } from './sensitive-places.js';

/** What the editor tells about a buffer that the protection needs. */
export interface ProtectFacts {
  cwd: string;
  filename: string | null;
  /** Neovim's stdpath() directories. */
  editor_dirs?: EditorDirs | undefined;
  /** Neovim's server addresses (`serverlist()`). */
  servers?: readonly string[] | undefined;
}

export interface ProtectOptions {
  /** `tools.sensitive_paths`, as configured. */
  sensitivePaths?: unknown;
  /** The variables the credential chain reads. */
  credentialEnv?: readonly string[] | undefined;
  /** `sandbox.policy.env_allow`. */
  envAllow: readonly string[];
  /** The user id whose tmux socket directory is hidden; defaults to the host's. */
  uid?: number | undefined;
  /** The shared directories' listings, kept across commands (`TopListings`). */
  listings?: TopListings | undefined;
}

export interface Protection {
  hidden_paths: string[];
  read_only_paths: string[];
  env_unset: string[];
  /** Problems in `tools.sensitive_paths` (the bad entries were ignored). */
  warnings: string[];
}

/** The shared temporary and cache directories (real paths), walked at their top level only. */
function sharedDirs(env: PathEnv, home: string): Set<string> {
  const dirs = ['/tmp', env['TMPDIR'], env['XDG_CACHE_HOME'] || join(home, '.cache')];
  return new Set(
    dirs.filter((dir): dir is string => dir !== undefined && dir.startsWith('/')).map(resolveReal),
  );
}

/** The directories looked at: `deep` at every depth, `top` at their top level. */
function projectDirs(
  facts: ProtectFacts,
  rwPaths: readonly string[],
  env: PathEnv,
  home: string,
): { deep: string[]; top: string[] } {
  const dirs = [facts.cwd, ...rwPaths];
  if (facts.filename !== null && facts.filename !== '') {
    dirs.push(resolveReal(facts.filename).replace(/\/[^/]*$/u, '') || '/');
  }
  const real = [...new Set(dirs.map((dir) => resolveReal(dir)))];
  const shared = sharedDirs(env, home);
  const own = new Set([resolveReal(facts.cwd)]);
  if (facts.filename !== null && facts.filename !== '') {
    own.add(resolveReal(facts.filename).replace(/\/[^/]*$/u, '') || '/');
  }
  return {
    deep: real.filter((dir) => own.has(dir) || !shared.has(dir)),
    top: real.filter((dir) => !own.has(dir) && shared.has(dir)),
  };
}

/** The hidden and read-only places and the scrubbed variables for one buffer. */
export function protection(
  facts: ProtectFacts,
  env: PathEnv,
  home: string,
  rwPaths: readonly string[],
  options: ProtectOptions,
): Protection {
  const { entries, warnings } = sensitiveEntries(options.sensitivePaths, {
    home,
    env,
    editorDirs: facts.editor_dirs,
  });
  const { truncated, ...places } = placesFor(entries, facts, env, home, rwPaths, options);
  if (truncated) {
    warnings.push(
      `the sandbox looked for sensitive files (.env*, …) among the first ${String(MAX_WALKED)} entries of the project only: files deeper in a large tree are not hidden from commands`,
    );
  }
  return { ...places, ...envFor(env, options), warnings };
}

function placesFor(
  entries: readonly SensitiveEntry[],
  facts: ProtectFacts,
  env: PathEnv,
  home: string,
  rwPaths: readonly string[],
  options: Pick<ProtectOptions, 'uid' | 'listings'>,
): { hidden_paths: string[]; read_only_paths: string[]; truncated: boolean } {
  const { deep, top } = projectDirs(facts, rwPaths, env, home);
  const places = sandboxPlaces(entries, deep, top, options.listings);
  const uid = options.uid;
  // An empty Lua list may arrive as an object.
  const servers = Array.isArray(facts.servers) ? facts.servers : [];
  const sessions = sessionPlaces(env, servers, uid ?? process.getuid?.()).filter(
    (place) => !rwPaths.some((rw) => isUnder(rw, place)),
  );
  const hidden = normalizeRwPaths([...places.hide, ...sessions]).filter((path) => path !== '/');
  const readOnly = normalizeRwPaths(places.readOnly).filter(
    (path) =>
      rwPaths.some((rw) => isUnder(path, rw)) && !hidden.some((place) => isUnder(path, place)),
  );
  return { hidden_paths: hidden, read_only_paths: readOnly, truncated: places.truncated };
}

function envFor(env: PathEnv, options: ProtectOptions): { env_unset: string[] } {
  return { env_unset: scrubbedNames(env, scrubRules(options)) };
}

/** The scrub rules of `options`. */
export function scrubRules(
  options: Pick<ProtectOptions, 'credentialEnv' | 'envAllow'>,
): ScrubRules {
  return { known: options.credentialEnv ?? [], allow: options.envAllow };
}
