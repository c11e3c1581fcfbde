// The sensitive places (issue 19): paths that no automatic approval covers, whichever resolver
// approved the call, and that the sandbox hides from the commands it runs. The built-in list
// below, plus the globs of `tools.sensitive_paths` (which can only add to it).
//
// Decisions (see docs/approval.md, "Sensitive places"):
// - The built-in list names credentials (`~/.ssh`, `~/.gnupg`, `~/.aws`, gcloud's configuration,
//   `~/.netrc`, `~/.git-credentials`, `.env*` files, `/proc/*/environ`), Neovim's own directories
//   (`stdpath("config")`, `"data"`, `"state"`, `"cache"`: a file there runs when Neovim starts, and
//   `vim.loader` runs the byte code cached in `"cache"`), shell start-up files, and what runs code
//   in a project later (`.git/hooks`, `.git/config`, Neovim's `exrc` files).
// - `~` and `${VAR}`, `${VAR:-default}` and `$VAR` are expanded anywhere in an entry; an unset
//   variable without a default drops the entry (it names nothing). After expansion an entry that
//   starts with `/` is anchored at the root; any other entry matches at any depth, like a
//   `.gitignore` line (`.env*` matches `<anything>/.env.local`). A match covers the place and
//   everything below it. Globs are Flemma's one dialect for paths (src/core/util/glob.ts: `*`,
//   `?`, `**`, `[…]`, `{a,b}`), as in the find tool.
// - A path is judged by where it is written and by where it really leads (symlinks resolved):
//   either matching makes it sensitive. An absolute entry also matches at its own real location,
//   so a `~/.ssh` that is a symbolic link to elsewhere still counts.
// - Inside the sandbox, existing places are hidden: a directory becomes an empty read-only
//   directory, anything else reads as empty. `.git/hooks` and `.git/config` stay visible but
//   read-only instead (git must read them; writing them is how a command would run code later,
//   outside the sandbox). Relative entries are looked for in the project's directories only, one
//   level per component of the pattern (`**` is not expanded); absolute entries with globs are not
//   looked for at all (`/proc/*/environ`: the sandbox has its own /proc).
// - Besides the list, the sandbox hides the ways out of it that a process of the same user could
//   take: `$XDG_RUNTIME_DIR` (D-Bus, which can start programs outside, the Wayland and agent
//   sockets), Neovim's own server sockets (a client could make Neovim run anything), and the
//   sockets of ssh-agent, tmux and X11 in their usual places.

import { lstatSync, readdirSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';

import { isGlob, pathGlob, pathGlobSource } from '../../util/glob.js';
import { type PathEnv, resolveReal } from './paths.js';

export type SensitiveSource = 'built-in' | 'tools.sensitive_paths';

/** What the sandbox does with an existing sensitive place. */
export type SandboxTreatment = 'hide' | 'read-only';

export interface SensitiveEntry {
  /** The entry as written (`~/.ssh`, `.env*`), or `stdpath("data")` for Neovim's directories. */
  readonly label: string;
  readonly source: SensitiveSource;
  /** The expanded pattern: absolute (anchored at `/`) or relative (matching at any depth). */
  readonly pattern: string;
  readonly sandbox: SandboxTreatment;
  /** `path` (absolute, normalized) is the place or lies below it. */
  matches(path: string): boolean;
}

/** Neovim's own directories, as `stdpath()` answers them. */
export interface EditorDirs {
  config?: string;
  data?: string;
  state?: string;
  cache?: string;
}

export interface SensitiveFacts {
  home: string;
  env: PathEnv;
  editorDirs?: EditorDirs | undefined;
  /**
   * Expressions already made, by pattern: an owner that asks for every call (the host's approval
   * service) keeps one, so that each pattern's glob is read once.
   */
  compiled?: Map<string, RegExp> | undefined;
}

export const BUILTIN_SENSITIVE: readonly string[] = [
  // Credentials
  '~/.ssh',
  '~/.gnupg',
  '~/.aws',
  '~/.config/gcloud',
  '${CLOUDSDK_CONFIG}',
  '~/.netrc',
  '~/.git-credentials',
  '.env*',
  '/proc/*/environ',
  '/proc/*/task/*/environ',
  // Shell start-up files
  '~/.profile',
  '~/.bash_profile',
  '~/.bash_login',
  '~/.bashrc',
  '~/.bash_logout',
  '~/.zshenv',
  '~/.zprofile',
  '~/.zshrc',
  '~/.zlogin',
  '~/.zlogout',
  '${ZDOTDIR}',
  '${XDG_CONFIG_HOME:-~/.config}/fish',
  '~/.kshrc',
  '~/.cshrc',
  '~/.tcshrc',
  '~/.login',
  // Code that runs later in a project
  '.git/hooks',
  '.git/config',
  '.nvim.lua',
  '.nvimrc',
  '.exrc',
];

/** Kept readable (but read-only) inside the sandbox. */
const READ_ONLY_IN_SANDBOX: ReadonlySet<string> = new Set(['.git/hooks', '.git/config']);

const EDITOR_DIRS = ['config', 'data', 'state', 'cache'] as const;

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/gu;

/** An entry with `~` and variables expanded; undefined when a variable it needs is unset. */
export function expandEntry(spec: string, env: PathEnv, home: string): string | undefined {
  // Set from the replacer, which control flow analysis does not follow.
  const unset = { found: false };
  let out = spec.replace(
    VARIABLE,
    (_all, braced: string | undefined, fallback: string | undefined, plain: string | undefined) => {
      const value = env[braced ?? plain ?? ''];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined && fallback !== '') return fallback;
      unset.found = true;
      return '';
    },
  );
  if (unset.found) return undefined;
  if (out === '~') out = home;
  else if (out.startsWith('~/')) out = home + out.slice(1);
  if (out.startsWith('/')) return resolvePath(out);
  const relative = out.replace(/^(?:\.\/)+/u, '').replace(/\/+$/u, '');
  return relative === '' || relative === '.' ? undefined : relative;
}

/** `compile`, through `cache` when there is one. */
function compiledOnce(pattern: string, cache: Map<string, RegExp> | undefined): RegExp {
  let regex = cache?.get(pattern);
  if (regex === undefined) {
    regex = compile(pattern);
    cache?.set(pattern, regex);
  }
  return regex;
}

/** A RegExp matching a path that is the place `pattern` names or lies below it. */
function compile(pattern: string): RegExp {
  if (pattern === '/') return /^\//u;
  if (pattern.startsWith('/')) {
    return new RegExp(`^/${pathGlobSource(pattern.slice(1))}(?:/.*)?$`);
  }
  return new RegExp(`(?:^|/)${pathGlobSource(pattern)}(?:/.*)?$`);
}

/** An absolute pattern at its real location: the part before the first glob, symlinks resolved. */
function realPattern(pattern: string): string {
  const parts = pattern.split('/');
  const firstGlob = parts.findIndex((part) => isGlob(part));
  const literal = firstGlob === -1 ? parts : parts.slice(0, firstGlob);
  const prefix = literal.join('/') || '/';
  const real = resolveReal(prefix);
  return firstGlob === -1 ? real : join(real, ...parts.slice(firstGlob));
}

function entry(
  label: string,
  pattern: string,
  source: SensitiveSource,
  sandbox: SandboxTreatment,
  cache: Map<string, RegExp> | undefined,
): SensitiveEntry {
  const written = compiledOnce(pattern, cache);
  let real: RegExp | undefined;
  if (pattern.startsWith('/')) {
    const at = realPattern(pattern);
    if (at !== pattern) real = compiledOnce(at, cache);
  }
  return {
    label,
    source,
    pattern,
    sandbox,
    matches: (path) => written.test(path) || (real?.test(path) ?? false),
  };
}

/** The list in force: the built-in entries, Neovim's directories, and `tools.sensitive_paths`. */
export function sensitiveEntries(
  user: unknown,
  facts: SensitiveFacts,
): { entries: SensitiveEntry[]; warnings: string[] } {
  const entries: SensitiveEntry[] = [];
  const warnings: string[] = [];
  for (const spec of BUILTIN_SENSITIVE) {
    const pattern = expandEntry(spec, facts.env, facts.home);
    if (pattern === undefined) continue;
    entries.push(
      entry(
        spec,
        pattern,
        'built-in',
        READ_ONLY_IN_SANDBOX.has(spec) ? 'read-only' : 'hide',
        facts.compiled,
      ),
    );
  }
  for (const name of EDITOR_DIRS) {
    const dir = facts.editorDirs?.[name];
    if (typeof dir === 'string' && dir.startsWith('/')) {
      entries.push(
        entry(`stdpath("${name}")`, resolvePath(dir), 'built-in', 'hide', facts.compiled),
      );
    }
  }
  // An empty Lua table may arrive as an object.
  const list = Array.isArray(user) ? (user as unknown[]) : [];
  if (user !== undefined && user !== null && !Array.isArray(user)) {
    if (typeof user !== 'object' || Object.keys(user).length > 0) {
      warnings.push('tools.sensitive_paths must be a list of path globs; ignored');
    }
  }
  list.forEach((item, index) => {
    if (typeof item !== 'string' || item.trim() === '') {
      warnings.push(`tools.sensitive_paths[${index + 1}] must be a non-empty string; ignored`);
      return;
    }
    const pattern = expandEntry(item.trim(), facts.env, facts.home);
    if (pattern !== undefined) {
      entries.push(entry(item.trim(), pattern, 'tools.sensitive_paths', 'hide', facts.compiled));
    }
  });
  return { entries, warnings };
}

/** The first entry that any of `paths` (absolute: as written, and real) falls under. */
export function findSensitive(
  paths: readonly string[],
  entries: readonly SensitiveEntry[],
): SensitiveEntry | undefined {
  return entries.find((candidate) => paths.some((path) => candidate.matches(path)));
}

/** `~/.ssh (built in)`: an entry as messages name it. */
export function describeSensitive(entry: SensitiveEntry): string {
  return `${entry.label} (${entry.source === 'built-in' ? 'built in' : 'tools.sensitive_paths'})`;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The existing paths below `dir` that a relative pattern names, one level per component. */
function expandBelow(dir: string, pattern: string): string[] {
  const parts = pattern.split('/');
  if (parts.includes('**')) return [];
  let current = [dir];
  for (const part of parts) {
    const next: string[] = [];
    for (const base of current) {
      if (!isGlob(part)) {
        next.push(join(base, part));
        continue;
      }
      const matches = pathGlob(part);
      let names: string[] = [];
      try {
        names = readdirSync(base);
      } catch {
        // Not a directory, or unreadable: nothing below it.
      }
      for (const name of names) if (matches(name)) next.push(join(base, name));
    }
    current = next;
  }
  return current.filter(exists);
}

/**
 * The existing sensitive places the sandbox treats: those to hide and those to keep read-only,
 * real paths, not yet de-duplicated. Relative entries are looked for below `dirs`.
 */
export function sandboxPlaces(
  entries: readonly SensitiveEntry[],
  dirs: readonly string[],
): { hide: string[]; readOnly: string[] } {
  const hide: string[] = [];
  const readOnly: string[] = [];
  for (const candidate of entries) {
    const found: string[] = [];
    if (candidate.pattern.startsWith('/')) {
      if (isGlob(candidate.pattern) || candidate.pattern === '/') continue;
      if (exists(candidate.pattern)) found.push(resolveReal(candidate.pattern));
    } else {
      for (const dir of dirs) found.push(...expandBelow(dir, candidate.pattern).map(resolveReal));
    }
    (candidate.sandbox === 'read-only' ? readOnly : hide).push(...found);
  }
  return { hide, readOnly };
}

/**
 * The sockets and directories through which a process of the same user could act outside the
 * sandbox: `$XDG_RUNTIME_DIR`, Neovim's servers (`servers`: `serverlist()`), and the sockets named
 * by `SSH_AUTH_SOCK`, `TMUX`, `NVIM`, `NVIM_LISTEN_ADDRESS` and `DBUS_SESSION_BUS_ADDRESS`, plus
 * the usual directories of tmux and X11 sockets. Existing ones only, real paths.
 */
export function sessionPlaces(
  env: PathEnv,
  servers: readonly string[],
  uid: number | undefined,
): string[] {
  const candidates: string[] = [];
  const add = (value: string | undefined): void => {
    if (value !== undefined && value.startsWith('/')) candidates.push(value);
  };
  add(env['XDG_RUNTIME_DIR']);
  for (const server of servers) add(server);
  add(env['SSH_AUTH_SOCK']);
  add(env['NVIM']);
  add(env['NVIM_LISTEN_ADDRESS']);
  add(env['TMUX']?.split(',')[0]);
  for (const part of (env['DBUS_SESSION_BUS_ADDRESS'] ?? '').split(';')) {
    add(/(?:^|,)path=([^,]+)/u.exec(part.replace(/^unix:/u, ''))?.[1]);
  }
  if (uid !== undefined) add(join(env['TMUX_TMPDIR'] || '/tmp', `tmux-${String(uid)}`));
  add('/tmp/.X11-unix');
  // A socket's own directory may be shared (`/tmp`); the socket itself is what gets hidden.
  return candidates
    .map((path) => resolvePath(path))
    .filter((path) => path !== '/' && dirname(path) !== path && exists(path))
    .map(resolveReal);
}
