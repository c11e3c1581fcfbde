// The sensitive places (issue 19): paths that no automatic approval covers, whichever resolver
// approved the call, and that the sandbox hides from the commands it runs. The built-in list
// below, plus the globs of `tools.sensitive_paths` (which can only add to it).
//
// Decisions (see docs/approval.md, "Sensitive places"):
// - The built-in list names credentials (`~/.ssh`, `~/.gnupg`, `~/.aws`, gcloud's configuration,
//   `~/.netrc`, `~/.git-credentials`, `.env*` files, `/proc/*/environ`), Neovim's own directories
//   (`stdpath("config")`, `"data"`, `"state"`, `"cache"`: a file there runs when Neovim starts, and
//   `vim.loader` runs the byte code cached in `"cache"`), shell start-up files, and what runs code
//   in a project later (issue 28): all of `.git`, Neovim's `exrc` files, editors' and hook
//   managers' files that run code (`.lazy.lua`, `.vscode/tasks.json`, `.husky`, …), and build and
//   package scripts (`Makefile`, `package.json`, `Cargo.toml`, `build.rs`, …). The project's
//   code places match in any case (`.GIT`, `makefile`: one place on a case-insensitive disk).
// - Some entries are sensitive for writes only (`writeOnly`): reading a Makefile or a
//   package.json is ordinary; writing one is how code gets run later.
// - A directory shaped like a git directory (`HEAD` with `objects/` and `refs/`, or `commondir`)
//   and everything in it counts as `.git` whatever its name: that is where a worktree's or a
//   submodule's `.git` file (`gitdir: …`) points.
// - `~` and `${VAR}`, `${VAR:-default}` and `$VAR` are expanded anywhere in an entry; an unset
//   variable without a default drops the entry (it names nothing). After expansion an entry that
//   starts with `/` is anchored at the root; any other entry matches at any depth, like a
//   `.gitignore` line (`.env*` matches `<anything>/.env.local`). A match covers the place and
//   everything below it. Globs are Flemma's one dialect for paths (src/core/util/glob.ts: `*`,
//   `?`, `**`, `[…]`, `{a,b}`), as in the find tool.
// - A path is judged by where it is written and by where it really leads (symlinks resolved):
//   either matching makes it sensitive. An absolute entry also matches at its own real location,
//   so a `~/.ssh` that is a symbolic link to elsewhere still counts.
// - Inside the sandbox (sensitive-places.ts), existing places are hidden: a directory becomes an
//   empty read-only directory, anything else reads as empty. What runs code later without the
//   user asking stays visible but read-only instead (git's configuration and hooks, the editors'
//   task and settings files: tools must read them; writing them is how a command would run code
//   later, outside the sandbox). Build scripts stay writable: the user runs them on purpose, like
//   any source file, and `npm install` must be able to rewrite package.json.

import { lstatSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';

import { statIfAny } from '../../util/files.js';
import { isGlob, pathGlobSource } from '../../util/glob.js';
import { PathExpansionError, expandPath } from '../../util/expand-path.js';
import { type PathEnv, resolveReal } from './paths.js';

export type SensitiveSource = 'built-in' | 'tools.sensitive_paths';

/**
 * What the sandbox does with an existing sensitive place: hide it, keep it visible but read-only,
 * or leave it writable (a build script, which the user runs on purpose like any source file).
 */
export type SandboxTreatment = 'hide' | 'read-only' | 'writable';

export interface SensitiveEntry {
  /** The entry as written (`~/.ssh`, `.env*`), or `stdpath("data")` for Neovim's directories. */
  readonly label: string;
  readonly source: SensitiveSource;
  /** The expanded pattern: absolute (anchored at `/`) or relative (matching at any depth). */
  readonly pattern: string;
  readonly sandbox: SandboxTreatment;
  /** Only a write is sensitive (reading a Makefile asks nothing); else reading is too. */
  readonly writeOnly: boolean;
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

/** One built-in entry and what it means. */
interface Builtin {
  spec: string;
  sandbox?: SandboxTreatment;
  /** Only a write is sensitive. */
  writeOnly?: boolean;
}

/** The project's places that run code later, which any spelling of the name reaches. */
const PROJECT_CODE: readonly Builtin[] = [
  // Git: all of it (config, config.worktree, hooks, modules/*/config, worktrees/*, info/, …).
  // Inside the sandbox it stays writable (git commit must work there), except what runs code:
  // its configuration and hooks are kept read-only (see sensitive-places.ts).
  { spec: '.git', sandbox: 'writable' },
  // Neovim's exrc files and other editors' and tools' configurations that run code when the
  // project is opened or a commit is made, without the user asking.
  { spec: '.nvim.lua' },
  { spec: '.nvimrc' },
  { spec: '.exrc' },
  { spec: '.lazy.lua', sandbox: 'read-only', writeOnly: true },
  { spec: '.vscode/tasks.json', sandbox: 'read-only', writeOnly: true },
  { spec: '.vscode/settings.json', sandbox: 'read-only', writeOnly: true },
  { spec: '.vscode/launch.json', sandbox: 'read-only', writeOnly: true },
  { spec: '*.code-workspace', sandbox: 'read-only', writeOnly: true },
  { spec: '.idea', sandbox: 'read-only', writeOnly: true },
  { spec: '.husky', sandbox: 'read-only', writeOnly: true },
  { spec: '.pre-commit-config.yaml', sandbox: 'read-only', writeOnly: true },
  { spec: '{.,}lefthook{,-local}.{yml,yaml}', sandbox: 'read-only', writeOnly: true },
  // Build and package scripts: they run when the user builds, on purpose, like any source file;
  // a sandboxed command may write them (`npm install` rewrites package.json), a tool's write asks.
  ...[
    'Makefile',
    'GNUmakefile',
    '*.mk',
    'package.json',
    '.npmrc',
    '.yarnrc{,.yml}',
    'pyproject.toml',
    'setup.py',
    'setup.cfg',
    'conftest.py',
    'noxfile.py',
    'tox.ini',
    'build.rs',
    'Cargo.toml',
    '.cargo/config{,.toml}',
    'CMakeLists.txt',
    'meson.build',
    'build.gradle{,.kts}',
    'settings.gradle{,.kts}',
    'pom.xml',
    'Rakefile',
    'Gemfile',
    'justfile',
    'Taskfile.{yml,yaml}',
    '.github/workflows',
  ].map((spec): Builtin => ({ spec, sandbox: 'writable', writeOnly: true })),
];

/** The built-in list, as `:help`, docs/approval.md and docs/security.md give it. */
export const BUILTIN_SENSITIVE: readonly Builtin[] = [
  // Credentials
  ...[
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
  ].map((spec): Builtin => ({ spec })),
  // Code that runs later in a project
  ...PROJECT_CODE,
];

/** The places below a git directory that run code, kept read-only inside the sandbox. */
export const GIT_CODE_PLACES: readonly string[] = ['config', 'config.worktree', 'hooks'];

/** What messages call a directory found to be a git directory by its shape. */
export const GIT_DIR_LABEL = 'a git directory (HEAD, objects/ and refs/)';

const EDITOR_DIRS = ['config', 'data', 'state', 'cache'] as const;

/**
 * An entry with variables and `~` expanded; undefined when a variable it needs is unset, or its
 * `~user` names no user (nothing of theirs to hide).
 */
export function expandEntry(spec: string, env: PathEnv, home: string): string | undefined {
  let out: string | undefined;
  try {
    out = expandPath(spec, env, home);
  } catch (error) {
    if (error instanceof PathExpansionError) return undefined;
    throw error;
  }
  if (out === undefined) return undefined;
  if (out.startsWith('/')) return resolvePath(out);
  const relative = out.replace(/^(?:\.\/)+/u, '').replace(/\/+$/u, '');
  return relative === '' || relative === '.' ? undefined : relative;
}

/** `compile`, through `cache` when there is one. */
function compiledOnce(
  pattern: string,
  caseless: boolean,
  cache: Map<string, RegExp> | undefined,
): RegExp {
  const key = caseless ? `i:${pattern}` : pattern;
  let regex = cache?.get(key);
  if (regex === undefined) {
    regex = compile(pattern, caseless);
    cache?.set(key, regex);
  }
  return regex;
}

/** A RegExp matching a path that is the place `pattern` names or lies below it. */
function compile(pattern: string, caseless: boolean): RegExp {
  if (pattern === '/') return /^\//u;
  const flags = caseless ? 'i' : '';
  if (pattern.startsWith('/')) {
    return new RegExp(`^/${pathGlobSource(pattern.slice(1))}(?:/.*)?$`, flags);
  }
  return new RegExp(`(?:^|/)${pathGlobSource(pattern)}(?:/.*)?$`, flags);
}

/**
 * Whether each place looked at is a symbolic link (`true`), something else (`false`), or cannot
 * be seen (`undefined`): one list of entries looks at `~` once, not once per entry.
 */
type LinkLooks = Map<string, boolean | undefined>;

function isLink(path: string, looks: LinkLooks): boolean | undefined {
  if (looks.has(path)) return looks.get(path);
  let link: boolean | undefined;
  try {
    link = lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink();
  } catch {
    link = undefined;
  }
  looks.set(path, link);
  return link;
}

/**
 * `prefix` (absolute, normalized) with symlinks resolved. Looked at now, on every list made: a
 * link created since the last one still counts. Most places are not there or are plain: their
 * components are looked at one by one (no link before the first one missing means the place is
 * where it is written), and only a place reached through a link is resolved in full.
 */
function realPrefix(prefix: string, looks: LinkLooks): string {
  let at = '';
  for (const part of prefix.split('/')) {
    if (part === '') continue;
    at = `${at}/${part}`;
    const link = isLink(at, looks);
    if (link === undefined) return prefix;
    if (link) return resolveReal(prefix);
  }
  return prefix;
}

/** An absolute pattern at its real location: the part before the first glob, symlinks resolved. */
function realPattern(pattern: string, looks: LinkLooks): string {
  const parts = pattern.split('/');
  const firstGlob = parts.findIndex((part) => isGlob(part));
  const literal = firstGlob === -1 ? parts : parts.slice(0, firstGlob);
  const prefix = literal.join('/') || '/';
  const real = realPrefix(prefix, looks);
  return firstGlob === -1 ? real : join(real, ...parts.slice(firstGlob));
}

interface EntryOptions {
  sandbox: SandboxTreatment;
  writeOnly?: boolean | undefined;
  /**
   * Any spelling of the name matches (`.GIT`, `makefile`): on a file system that ignores case
   * (macOS, a casefolded directory) they are the same place.
   */
  caseless?: boolean;
}

function entry(
  label: string,
  pattern: string,
  source: SensitiveSource,
  options: EntryOptions,
  cache: Map<string, RegExp> | undefined,
  looks: LinkLooks,
): SensitiveEntry {
  const caseless = options.caseless === true;
  const written = compiledOnce(pattern, caseless, cache);
  let real: RegExp | undefined;
  if (pattern.startsWith('/')) {
    const at = realPattern(pattern, looks);
    if (at !== pattern) real = compiledOnce(at, caseless, cache);
  }
  return {
    label,
    source,
    pattern,
    sandbox: options.sandbox,
    writeOnly: options.writeOnly === true,
    matches: (path) => written.test(path) || (real?.test(path) ?? false),
  };
}

const PROJECT_SPECS: ReadonlySet<string> = new Set(PROJECT_CODE.map((item) => item.spec));

/** The list in force: the built-in entries, Neovim's directories, and `tools.sensitive_paths`. */
export function sensitiveEntries(
  user: unknown,
  facts: SensitiveFacts,
): { entries: SensitiveEntry[]; warnings: string[] } {
  const entries: SensitiveEntry[] = [];
  const warnings: string[] = [];
  const looks: LinkLooks = new Map();
  for (const item of BUILTIN_SENSITIVE) {
    const pattern = expandEntry(item.spec, facts.env, facts.home);
    if (pattern === undefined) continue;
    const options = {
      sandbox: item.sandbox ?? 'hide',
      writeOnly: item.writeOnly,
      caseless: PROJECT_SPECS.has(item.spec),
    };
    entries.push(entry(item.spec, pattern, 'built-in', options, facts.compiled, looks));
  }
  for (const name of EDITOR_DIRS) {
    const dir = facts.editorDirs?.[name];
    if (typeof dir === 'string' && dir.startsWith('/')) {
      const path = resolvePath(dir);
      const options = { sandbox: 'hide' as const };
      entries.push(entry(`stdpath("${name}")`, path, 'built-in', options, facts.compiled, looks));
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
      const options = { sandbox: 'hide' as const };
      const source = 'tools.sensitive_paths';
      entries.push(entry(item.trim(), pattern, source, options, facts.compiled, looks));
    }
  });
  return { entries, warnings };
}

function isDir(path: string): boolean {
  return statIfAny(path)?.isDirectory() === true;
}

function isFile(path: string): boolean {
  return statIfAny(path)?.isFile() === true;
}

/**
 * Whether `dir` has the shape of a git directory, whatever its name: `HEAD` with `objects/` and
 * `refs/` (a repository, a bare one, a submodule's), or `HEAD` with `commondir` (a linked
 * worktree's). This is how a directory that a `gitdir:` file points to is recognised.
 */
export function isGitDir(dir: string): boolean {
  if (!isFile(join(dir, 'HEAD'))) return false;
  if (isFile(join(dir, 'commondir'))) return true;
  return isDir(join(dir, 'objects')) && isDir(join(dir, 'refs'));
}

/** The git directory `path` (absolute) is in or is, by shape; undefined when none. */
export function gitDirAbove(path: string): string | undefined {
  let dir = resolvePath(path);
  for (;;) {
    if (isGitDir(dir)) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The entry that stands for a git directory recognised by its shape. */
const GIT_DIR_ENTRY: SensitiveEntry = {
  label: GIT_DIR_LABEL,
  source: 'built-in',
  pattern: '.git',
  sandbox: 'writable',
  writeOnly: false,
  matches: (path) => gitDirAbove(path) !== undefined,
};

/**
 * The first entry that any of `paths` (absolute: as written, and real) falls under; a directory
 * shaped like a git directory and everything in it counts as `.git`. Entries that only a write
 * makes sensitive (build scripts) count with `write`.
 */
export function findSensitive(
  paths: readonly string[],
  entries: readonly SensitiveEntry[],
  options: { write?: boolean } = {},
): SensitiveEntry | undefined {
  const write = options.write === true;
  const named = entries.find(
    (candidate) => (write || !candidate.writeOnly) && paths.some((path) => candidate.matches(path)),
  );
  if (named !== undefined) return named;
  return paths.some((path) => GIT_DIR_ENTRY.matches(path)) ? GIT_DIR_ENTRY : undefined;
}

/** `~/.ssh (built in)`: an entry as messages name it. */
export function describeSensitive(entry: SensitiveEntry): string {
  return `${entry.label} (${entry.source === 'built-in' ? 'built in' : 'tools.sensitive_paths'})`;
}
