// What `git status` says changed during a turn, for `:Flemma review`: `bash` and other commands
// write files Flemma cannot see, but in a git repository the files they touched show up.
//
// Decisions (docs/tools.md, "Undo and review"):
// - The state at the turn's start is every path `git status --porcelain` lists then, each with a
//   hash of its content; a path counts as changed during the turn when it is listed at review and
//   was not listed then, or its content differs. A file that was dirty before the turn and that
//   a command changed again is therefore found too.
// - Git runs in the host, never in Neovim, with a time limit; no repository (or no git) simply
//   means no such entries.
// - The state lives in the host's memory, per buffer: a restarted host knows no turn start.
// - Git runs the one safe way (src/core/tools/git.ts): against a clean git directory below the
//   scratch directory the caller gives (Neovim's state directory), never with the repository's
//   own config or Flemma's `GIT_*` variables; any failure (no git, not a repository, over time,
//   too much output) is the same "no entries".
import { stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { runProcess } from '../../core/tools/process.js';
import { cleanGitDir, gitRunOptions, locateRepository } from '../../core/tools/git.js';
import { hashFile } from '../../core/util/bounded-read.js';

/** Paths (absolute) git lists as changed, each with a hash of its content (null: no file). */
export type GitState = Map<string, string | null>;

/** Paths of `git status --porcelain -z` output, relative to the repository's top. */
export function porcelainPaths(output: string): string[] {
  const fields = output.split('\0');
  const paths: string[] = [];
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] ?? '';
    if (field.length < 4) continue;
    paths.push(field.slice(3));
    // A rename or copy is followed by its source path: the source is no file of its own now.
    if (field[0] === 'R' || field[0] === 'C') i++;
  }
  return paths;
}

/**
 * Whether `dir` or a directory above it holds `.git` (a directory, or the file of a worktree or
 * submodule). Asked before git is run, so that a project outside any repository costs a few
 * `stat` calls per turn, not a process. (`$GIT_DIR` is not followed: git gets no `GIT_*`.)
 */
async function mayBeRepository(dir: string): Promise<boolean> {
  const exists = (path: string): Promise<boolean> =>
    stat(path).then(
      () => true,
      () => false,
    );
  for (let current = resolve(dir); ; current = dirname(current)) {
    if (await exists(join(current, '.git'))) return true;
    if (dirname(current) === current) return false;
  }
}

const GIT_TIMEOUT_MS = 5000;

/**
 * The changed paths of the repository holding `dir`; undefined outside one. `scratch` is where
 * the clean git directory of the run is made (and removed again).
 */
export async function gitState(dir: string, scratch: string): Promise<GitState | undefined> {
  if (!(await mayBeRepository(dir))) return undefined;
  const repo = await locateRepository(dir, runProcess, { timeoutMs: GIT_TIMEOUT_MS });
  if (repo === undefined) return undefined;
  const clean = await cleanGitDir(repo, scratch).catch(() => undefined);
  if (clean === undefined) return undefined;
  let status: string;
  try {
    const args = [
      'status',
      '--porcelain',
      '-z',
      '--untracked-files=all',
      '--ignore-submodules=all',
    ];
    const result = await runProcess(
      clean.argv(args),
      gitRunOptions({ cwd: repo.top, timeoutMs: GIT_TIMEOUT_MS, drainMs: 50 }),
    );
    if (result.exitCode !== 0) return undefined;
    status = result.output;
  } finally {
    await clean.remove();
  }
  const state: GitState = new Map();
  for (const path of porcelainPaths(status)) {
    const abs = join(repo.top, path);
    state.set(abs, await hashFile(abs).catch(() => null));
  }
  return state;
}

/** The paths of `now` that are new since `start` or whose content changed. */
export function changedSince(start: GitState, now: GitState): string[] {
  return [...now.entries()]
    .filter(([path, hash]) => !start.has(path) || start.get(path) !== hash)
    .map(([path]) => path)
    .sort();
}
