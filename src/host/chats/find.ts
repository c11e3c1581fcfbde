// Where `:Flemma chats` looks for chats (docs/picker.md): the `.chat` files under the chat
// directories (walked; hidden directories skipped) and in the current project — the files git
// lists in the work tree holding the working directory (tracked and untracked, `.gitignore`
// honoured), or, outside a repository, the working directory walked a few levels deep. The
// children of `task` calls (`<chat>.tasks/`) are left out unless asked for.
//
// git runs the one safe way (src/core/tools/git.ts): `ls-files` against a clean git directory
// made below Neovim's state directory, never with the repository's own config.
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  type GitRepository,
  cleanGitDir,
  gitRunOptions,
  locateRepository,
} from '../../core/tools/git.js';
import { runProcess } from '../../core/tools/process.js';

/** Where to look. */
export interface ChatSources {
  /** Directories walked for `.chat` files (missing ones are skipped). */
  dirs: readonly string[];
  /** The working directory: its project is searched; absent: no project. */
  cwd?: string;
  /** Include the children of `task` calls (files under a `*.tasks/` directory). */
  children: boolean;
  /** Neovim's state directory (where git's clean directory is made); absent: no git run. */
  state?: string;
  /** Neovim's cache directory (where the index of what was read is kept); absent: no index. */
  cache?: string;
}

/** How deep the chat directories are walked. */
const DIR_DEPTH = 8;
/** How deep a working directory outside any repository is walked. */
const LOOSE_DEPTH = 3;
const GIT_TIMEOUT_MS = 5000;
/** Directories a walk never enters (besides hidden ones). */
const SKIPPED = new Set(['node_modules']);

const isChat = (name: string): boolean => name.endsWith('.chat');
const isTasks = (name: string): boolean => name.endsWith('.tasks');

/** Whether a path relative to its root lies under a `*.tasks/` directory. */
function underTasks(relPath: string): boolean {
  return relPath.split('/').slice(0, -1).some(isTasks);
}

/** The `.chat` files below `dir`, at most `depth` directories down. */
async function walk(dir: string, depth: number, children: boolean, out: string[]): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  const below: Promise<void>[] = [];
  for (const entry of entries) {
    const name = entry.name;
    if (entry.isDirectory()) {
      if (depth <= 0 || name.startsWith('.') || SKIPPED.has(name)) continue;
      if (!children && isTasks(name)) continue;
      below.push(walk(join(dir, name), depth - 1, children, out));
    } else if ((entry.isFile() || entry.isSymbolicLink()) && isChat(name)) {
      out.push(join(dir, name));
    }
  }
  await Promise.all(below);
}

/** Whether `dir` or a directory above it holds `.git` (a process is started only then). */
async function mayBeRepository(dir: string): Promise<boolean> {
  for (let current = resolve(dir); ; current = dirname(current)) {
    if (
      await stat(join(current, '.git')).then(
        () => true,
        () => false,
      )
    )
      return true;
    if (dirname(current) === current) return false;
  }
}

/**
 * The repositories found so far, by working directory. `ls-files` needs only where the work tree
 * and its git directory are, which stay: a second listing starts one git process, not three.
 * (Only repositories are kept: a directory that becomes one is found at the next listing.)
 */
export type RepositoryCache = Map<string, GitRepository>;

async function repositoryOf(
  cwd: string,
  repos: RepositoryCache,
): Promise<GitRepository | undefined> {
  const kept = repos.get(cwd);
  if (kept !== undefined) return kept;
  if (!(await mayBeRepository(cwd))) return undefined;
  const repo = await locateRepository(cwd, runProcess, { timeoutMs: GIT_TIMEOUT_MS });
  if (repo !== undefined) repos.set(cwd, repo);
  return repo;
}

/** The `.chat` files git lists in the repository holding `cwd`; undefined outside one. */
async function gitChats(
  cwd: string,
  state: string,
  children: boolean,
  repos: RepositoryCache,
): Promise<string[] | undefined> {
  const repo = await repositoryOf(cwd, repos);
  if (repo === undefined) return undefined;
  const clean = await cleanGitDir(repo, join(state, 'flemma', 'git')).catch(() => undefined);
  if (clean === undefined) return undefined;
  try {
    const args = ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', '*.chat'];
    const result = await runProcess(
      clean.argv(args),
      gitRunOptions({ cwd: repo.top, timeoutMs: GIT_TIMEOUT_MS, drainMs: 50 }),
    );
    if (result.exitCode !== 0) {
      // Gone or moved: found again next time.
      repos.delete(cwd);
      return undefined;
    }
    const names = new Set(result.output.split('\0').filter((name) => isChat(name)));
    return [...names]
      .filter((name) => children || !underTasks(name))
      .map((name) => join(repo.top, name));
  } finally {
    await clean.remove();
  }
}

/** The chat files under the chat directories of `sources` (absolute paths, in no order). */
export async function chatsInDirs(sources: ChatSources): Promise<string[]> {
  const found: string[] = [];
  await Promise.all(sources.dirs.map((dir) => walk(dir, DIR_DEPTH, sources.children, found)));
  return found.map((path) => resolve(path));
}

/** The chat files of the project of `sources` (none without a working directory). */
export async function chatsInProject(
  sources: ChatSources,
  repos: RepositoryCache,
): Promise<string[]> {
  if (sources.cwd === undefined) return [];
  const listed =
    sources.state === undefined
      ? undefined
      : await gitChats(sources.cwd, sources.state, sources.children, repos);
  if (listed !== undefined) return listed.map((path) => resolve(path));
  const found: string[] = [];
  await walk(sources.cwd, LOOSE_DEPTH, sources.children, found);
  return found.map((path) => resolve(path));
}
