// The sensitive places the sandbox treats for one command (issue 19, issue 28): which existing
// places in the project to hide and which to keep read-only, and the session sockets to hide.
//
// Decisions (see docs/approval.md, "Sensitive places", and docs/security.md):
// - Absolute entries are looked for where they name; those with globs are not looked for at all
//   (`/proc/*/environ`: the sandbox has its own /proc).
// - Relative entries (`.env*`, `.vscode/tasks.json`) are looked for at every depth below the
//   project's directories, by one walk of each: every path met is matched against every entry,
//   as the approval does. A place found is not walked into (it is covered whole). The walk does
//   not follow symbolic links to directories, does not enter `node_modules` (packages, not the
//   user's secrets) nor the inside of a git directory, and stops after `MAX_WALKED` entries or
//   `MAX_DEPTH` levels: what lies beyond is not hidden, and `truncated` says so (the sandbox warns).
// - Git: a `.git` directory, a directory shaped like one (HEAD, objects/, refs/), and the
//   directory a `.git` file's `gitdir:` line points to, keep their configuration and hooks
//   (`config`, `config.worktree`, `hooks`) read-only, in every submodule (`modules/…`) and linked
//   worktree (`worktrees/*`) and in the common directory a worktree's `commondir` names. The rest
//   of a git directory stays writable, so that `git add` and `git commit` work in the sandbox.
//   A place that does not exist when the command starts (a missing `hooks/`) is not protected.
// - Entries the sandbox leaves writable (build scripts, the `.git` entry as a whole) are not
//   looked for.
// - Besides the list, the sandbox hides the ways out of it that a process of the same user could
//   take: `$XDG_RUNTIME_DIR` (D-Bus, which can start programs outside, the Wayland and agent
//   sockets), Neovim's own server sockets (a client could make Neovim run anything), and the
//   sockets of ssh-agent, tmux and X11 in their usual places.

import { lstatSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve as resolvePath } from 'node:path';

import { isGlob } from '../../util/glob.js';
import { type PathEnv, resolveReal } from './paths.js';
import { GIT_CODE_PLACES, type SensitiveEntry, isGitDir } from './sensitive.js';

/** Entries the walk looks at before it stops. */
export const MAX_WALKED = 20_000;
/** Levels below a project directory the walk goes down. */
export const MAX_DEPTH = 24;
/** Directories the walk does not enter. */
const SKIPPED: ReadonlySet<string> = new Set(['node_modules']);

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** An entry of a directory, as the walk reads it. */
interface Child {
  name: string;
  dir: boolean;
  file: boolean;
}

function children(dir: string): Child[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).map((item) => ({
      name: item.name,
      dir: item.isDirectory(),
      file: item.isFile(),
    }));
  } catch {
    // Not a directory, or unreadable: nothing below it.
    return [];
  }
}

/** The directory a `.git` file points to (`gitdir: <path>`), when it is one. */
function pointedGitDir(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').slice(0, 4096);
  } catch {
    return undefined;
  }
  const target = /^gitdir:\s*(.+?)\s*$/mu.exec(text)?.[1];
  if (target === undefined) return undefined;
  const dir = resolvePath(dirname(file), target);
  return isGitDir(dir) ? dir : undefined;
}

/** A directory's entries are trusted to be as read only when it had not changed for this long. */
const SETTLED_NS = 2_000_000_000n;

/**
 * The entries of the shared directories (`/tmp`, the cache directory) that a look at their top
 * level cares about, kept from one command to the next while the directory is unchanged. Such a
 * directory often holds thousands of entries, matched against every sensitive entry at each
 * command: 2–3 ms of every `bash` call on a machine whose `/tmp` held 1,447. Whether it changed is
 * told by its device, inode, modification and change times (an entry added, removed or renamed
 * moves both times). A listing read while the directory had changed within `SETTLED_NS` is not
 * kept, so that a change in the same tick of a coarse clock is not missed (git's "racily clean").
 * One per host (`ResolveOptions.listings`); the project's own directories are always read again.
 */
export class TopListings {
  private readonly kept = new Map<string, { key: string; stamp: string; children: Child[] }>();

  /**
   * The entries of `dir` that `keep` keeps, and how many entries it has; `key` names what `keep`
   * depends on (the sensitive entries).
   */
  relevant(
    dir: string,
    key: string,
    keep: (child: Child) => boolean,
  ): {
    children: Child[];
    total: number;
  } {
    let stamp: string;
    let changedNs: bigint;
    try {
      const info = statSync(dir, { bigint: true });
      stamp = `${String(info.dev)}:${String(info.ino)}:${String(info.mtimeNs)}:${String(info.ctimeNs)}`;
      changedNs = info.mtimeNs > info.ctimeNs ? info.mtimeNs : info.ctimeNs;
    } catch {
      this.kept.delete(dir);
      return { children: [], total: 0 };
    }
    const held = this.kept.get(dir);
    if (held !== undefined && held.key === key && held.stamp === stamp) {
      return { children: held.children, total: held.children.length };
    }
    const readNs = BigInt(Date.now()) * 1_000_000n;
    const all = children(dir);
    const found = all.filter(keep);
    if (readNs - changedNs > SETTLED_NS && all.length <= MAX_WALKED) {
      this.kept.set(dir, { key, stamp, children: found });
    } else {
      this.kept.delete(dir);
    }
    return { children: found, total: all.length };
  }
}

/** Collects what one walk finds. */
class Finder {
  readonly hide: string[] = [];
  readonly readOnly: string[] = [];
  truncated = false;
  private walked = 0;
  private readonly gitDirs = new Set<string>();

  /** What a kept listing's filter depends on: the entries (`TopListings.relevant`). */
  private readonly key: string;

  constructor(
    private readonly entries: readonly SensitiveEntry[],
    private readonly listings?: TopListings,
  ) {
    this.key = entries
      .map((entry) => `${entry.label}\0${entry.pattern}\0${entry.sandbox}`)
      .join('\n');
  }

  /**
   * The entries of `dir` the walk looks at: at the top of a shared directory, only those that can
   * matter (`TopListings`), counted as all of them; all of them when the count would reach the
   * limit, so that the walk stops where it would have.
   */
  private childrenOf(dir: string, maxDepth: number): Child[] {
    if (maxDepth !== 1 || this.listings === undefined) return children(dir);
    const listed = this.listings.relevant(dir, this.key, topRelevant(this.entries));
    if (this.walked + listed.total > MAX_WALKED) return children(dir);
    this.walked += listed.total - listed.children.length;
    return listed.children;
  }

  /** The code places of a git directory, its submodules', worktrees' and common directory's. */
  gitDir(dir: string, depth = 0): void {
    const real = resolveReal(dir);
    if (this.gitDirs.has(real) || depth > MAX_DEPTH) return;
    this.gitDirs.add(real);
    for (const name of GIT_CODE_PLACES) {
      const place = join(real, name);
      if (exists(place)) this.readOnly.push(resolveReal(place));
    }
    try {
      const common = readFileSync(join(real, 'commondir'), 'utf8').trim();
      if (common !== '') this.gitDir(resolvePath(real, common), depth + 1);
    } catch {
      // Not a linked worktree's directory.
    }
    for (const group of ['modules', 'worktrees']) this.gitDirsBelow(join(real, group), depth + 1);
  }

  /** Git directories below `dir` (submodules nest their names: `modules/a/b`). */
  private gitDirsBelow(dir: string, depth: number): void {
    if (depth > MAX_DEPTH) return;
    for (const child of children(dir)) {
      if (!child.dir) continue;
      const path = join(dir, child.name);
      if (isGitDir(path)) this.gitDir(path, depth + 1);
      else this.gitDirsBelow(path, depth + 1);
    }
  }

  /**
   * Walks `root`, matching each path (relative to it) against the relative entries; `maxDepth` 1
   * looks at its top level only (without counting it as a walk that stopped early).
   */
  walk(root: string, maxDepth = MAX_DEPTH): void {
    const pending: { dir: string; depth: number }[] = [{ dir: root, depth: 0 }];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (isGitDir(next.dir)) {
        this.gitDir(next.dir);
        continue;
      }
      for (const child of this.childrenOf(next.dir, maxDepth)) {
        if (++this.walked > MAX_WALKED) {
          this.truncated = true;
          return;
        }
        const path = join(next.dir, child.name);
        const rel = relative(root, path);
        const hit = this.entries.find((entry) => entry.matches(rel));
        if (hit !== undefined) {
          (hit.sandbox === 'hide' ? this.hide : this.readOnly).push(resolveReal(path));
          continue;
        }
        if (child.name.toLowerCase() === '.git') {
          if (child.dir) this.gitDir(path);
          else if (child.file) {
            const pointed = pointedGitDir(path);
            if (pointed !== undefined) this.gitDir(pointed);
          }
          continue;
        }
        if (!child.dir || SKIPPED.has(child.name)) continue;
        if (next.depth + 1 >= maxDepth) {
          if (maxDepth === MAX_DEPTH) this.truncated = true;
          continue;
        }
        pending.push({ dir: path, depth: next.depth + 1 });
      }
    }
  }
}

/** Whether an entry named `name` at the top of a walk is matched (`rel` is its name there). */
function topRelevant(entries: readonly SensitiveEntry[]): (child: Child) => boolean {
  return (child) =>
    child.name.toLowerCase() === '.git' || entries.some((entry) => entry.matches(child.name));
}

/**
 * The existing sensitive places the sandbox treats: those to hide and those to keep read-only,
 * real paths, not yet de-duplicated. Relative entries are looked for below `dirs`, at every
 * depth, and in `topDirs` at their top level; `truncated` when a walk stopped at its limit.
 */
export function sandboxPlaces(
  entries: readonly SensitiveEntry[],
  dirs: readonly string[],
  topDirs: readonly string[] = [],
  listings?: TopListings,
): { hide: string[]; readOnly: string[]; truncated: boolean } {
  const hide: string[] = [];
  const readOnly: string[] = [];
  for (const candidate of entries) {
    if (candidate.sandbox === 'writable' || !candidate.pattern.startsWith('/')) continue;
    if (isGlob(candidate.pattern) || candidate.pattern === '/') continue;
    if (!exists(candidate.pattern)) continue;
    (candidate.sandbox === 'read-only' ? readOnly : hide).push(resolveReal(candidate.pattern));
  }
  const relativeEntries = entries.filter(
    (entry) => entry.sandbox !== 'writable' && !entry.pattern.startsWith('/'),
  );
  const finder = new Finder(relativeEntries, listings);
  for (const dir of dirs) finder.walk(dir);
  for (const dir of topDirs) finder.walk(dir, 1);
  return {
    hide: [...hide, ...finder.hide],
    readOnly: [...readOnly, ...finder.readOnly],
    truncated: finder.truncated,
  };
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
