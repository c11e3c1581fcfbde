// The one way Flemma runs git (the review's `git status`, the `find` tool's `git ls-files`):
// never with the repository's own configuration, which can name programs git starts.
//
// Decisions (docs/security.md, "What the host itself starts"):
// - A repository's config (`.git/config`, `config.worktree`, its includes, or a `commondir` file
//   pointing at another one) is not Flemma's to trust: a model's approved `write`, a sandboxed
//   command or an unpacked archive can put `core.fsmonitor`, a filter driver, a pager, a remote
//   helper for a lazy fetch, … there, and git would run them on the host. So nothing that reads
//   the index or the work tree runs against the repository's git directory. It runs against a
//   **clean git directory** Flemma makes for the run: its own `config` (the object format, and a
//   few plain facts of the repository such as `core.filemode`, copied only when they are single
//   words), `HEAD` as the commit id, and links to the repository's objects, index and
//   `info/exclude`. Git then reads no config of the repository at all — no key list to keep up to
//   date, and no race between reading the config and running git.
// - Finding the repository is `git rev-parse` on the real one: it reads the config and the refs,
//   but not the index (no fsmonitor, no filter) nor any object (no lazy fetch), and runs nothing.
//   Reading the plain facts is `git config --list`, which runs nothing either.
// - Every run, both kinds: no `GIT_*` variable of Flemma's environment (`GIT_CONFIG_COUNT`,
//   `GIT_CONFIG_PARAMETERS`, `GIT_DIR`, `GIT_EXEC_PATH`, `GIT_EXTERNAL_DIFF`, `GIT_PAGER`,
//   `GIT_SSH_COMMAND`, …), no pager, no optional locks (a status writes no index), and `-c`
//   overrides for what could still come from the user's own global config: fsmonitor off, hooks
//   at /dev/null, no untracked cache, no submodule recursion, no transport at all. A status also
//   ignores submodules, whose own configs would otherwise be read.
// - The user's system and global config are still read (they are the user's, and hold
//   `core.excludesFile`).
// - The clean directory goes where the caller says (the host: Neovim's state directory, which
//   sandboxed commands cannot see) and is removed after the run.
import { mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';

import type { RunOptions, RunResult } from './process.js';

export type GitRunFn = (argv: readonly string[], options: RunOptions) => Promise<RunResult>;

/** What `git rev-parse` says about the repository holding a directory. */
export interface GitRepository {
  /** The work tree's top directory. */
  top: string;
  /** The git directory (`.git`, or `.git/worktrees/<name>` of a linked work tree). */
  gitDir: string;
  /** The directory holding the objects and `info/exclude`. */
  commonDir: string;
  /** `sha1` or `sha256`. */
  objectFormat: string;
  /** The commit HEAD names; null before the first commit. */
  head: string | null;
  /** Plain settings of the repository the clean directory keeps (`core.filemode` → `false`). */
  settings: ReadonlyMap<string, string>;
}

/** Options before the subcommand, on every run. */
const SAFE_OPTIONS: readonly string[] = [
  '--no-pager',
  '--no-optional-locks',
  ...[
    'core.fsmonitor=false',
    'core.hooksPath=/dev/null',
    'core.untrackedCache=false',
    'submodule.recurse=false',
    'status.submoduleSummary=false',
    'protocol.allow=never',
  ].flatMap((pair) => ['-c', pair]),
];

/**
 * Settings of the repository that change what a status reports and are plain words, never a
 * command: copied into the clean directory's config.
 */
const PLAIN_SETTINGS: readonly string[] = [
  'core.filemode',
  'core.ignorecase',
  'core.symlinks',
  'core.precomposeunicode',
  'core.checkstat',
  'core.trustctime',
  'core.autocrlf',
  'core.eol',
];
const PLAIN_VALUE = /^[A-Za-z0-9_-]{1,32}$/;

/** The environment git gets: Flemma's own without any `GIT_*` variable. */
export function gitEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || name.toUpperCase().startsWith('GIT_')) continue;
    out[name] = value;
  }
  return out;
}

/** The command line of a safe git run of `args` (`['git', …options, …args]`). */
export function safeGitArgv(args: readonly string[]): string[] {
  return ['git', ...SAFE_OPTIONS, ...args];
}

/** Run options for a git run: the clean environment, nothing merged from Flemma's. */
export function gitRunOptions(options: Omit<RunOptions, 'env' | 'extendEnv'>): RunOptions {
  return { ...options, env: gitEnv(), extendEnv: false };
}

/** The repository holding `dir`, as rev-parse sees it; undefined outside one (or no git). */
export async function locateRepository(
  dir: string,
  run: GitRunFn,
  options: { signal?: AbortSignal; timeoutMs: number },
): Promise<GitRepository | undefined> {
  const common = { cwd: dir, timeoutMs: options.timeoutMs, drainMs: 50 };
  const runOptions = gitRunOptions(
    options.signal === undefined ? common : { ...common, signal: options.signal },
  );
  // Exit 1 with four lines: HEAD does not name a commit yet.
  const parsed = await run(
    safeGitArgv([
      'rev-parse',
      '--show-toplevel',
      '--absolute-git-dir',
      '--git-common-dir',
      '--show-object-format',
      '--verify',
      '--quiet',
      'HEAD',
    ]),
    runOptions,
  );
  if (parsed.exitCode !== 0 && parsed.exitCode !== 1) return undefined;
  const [top, gitDir, commonRel, objectFormat, head] = parsed.output.split('\n');
  if (!top || !gitDir || !commonRel || !objectFormat || !/^[a-z0-9]+$/.test(objectFormat)) {
    return undefined;
  }
  const listed = await run(safeGitArgv(['config', '--null', '--list']), runOptions);
  const settings = new Map<string, string>();
  if (listed.exitCode === 0) {
    for (const entry of listed.output.split('\0')) {
      const cut = entry.indexOf('\n');
      if (cut < 0) continue;
      const key = entry.slice(0, cut).toLowerCase();
      const value = entry.slice(cut + 1);
      if (PLAIN_SETTINGS.includes(key) && PLAIN_VALUE.test(value)) settings.set(key, value);
    }
  }
  return {
    top,
    gitDir,
    commonDir: isAbsolute(commonRel) ? commonRel : resolve(dir, commonRel),
    objectFormat,
    head: head !== undefined && /^[0-9a-f]{40,64}$/.test(head) ? head : null,
    settings,
  };
}

/** A clean git directory for one repository; `remove` when the run is over. */
export interface CleanGitDir {
  /** The command line of `args` against the clean directory and the repository's work tree. */
  argv(args: readonly string[]): string[];
  remove(): Promise<void>;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function configText(repo: GitRepository): string {
  const lines = ['[core]', '\trepositoryformatversion = 1', '\tbare = false'];
  const extensions: string[] = [];
  for (const [key, value] of repo.settings) lines.push(`\t${key.slice('core.'.length)} = ${value}`);
  if (repo.objectFormat !== 'sha1') extensions.push(`\tobjectformat = ${repo.objectFormat}`);
  if (extensions.length > 0) lines.push('[extensions]', ...extensions);
  return `${lines.join('\n')}\n`;
}

/** Makes a clean git directory for `repo` below `parent` (created, mode 0700, when missing). */
export async function cleanGitDir(repo: GitRepository, parent: string): Promise<CleanGitDir> {
  await mkdir(parent, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(parent, 'git-'));
  const remove = (): Promise<void> => rm(dir, { recursive: true, force: true });
  try {
    await writeFile(join(dir, 'config'), configText(repo), { mode: 0o600 });
    // A commit id: the branch's refs are not needed, only what HEAD holds now.
    await writeFile(
      join(dir, 'HEAD'),
      repo.head === null ? 'ref: refs/heads/none\n' : `${repo.head}\n`,
    );
    await mkdir(join(dir, 'refs'));
    await mkdir(join(dir, 'info'));
    await symlink(join(repo.commonDir, 'objects'), join(dir, 'objects'));
    const exclude = join(repo.commonDir, 'info', 'exclude');
    if (await exists(exclude)) await symlink(exclude, join(dir, 'info', 'exclude'));
    // The index, and the shared index a split index names, are read where they are; anything git
    // would write lands in the clean directory (it writes through a lock file and a rename).
    const names = await readdir(repo.gitDir).catch(() => [] as string[]);
    for (const name of names) {
      if (name === 'index' || name.startsWith('sharedindex.')) {
        await symlink(join(repo.gitDir, name), join(dir, name));
      }
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return {
    argv: (args) => safeGitArgv([`--git-dir=${dir}`, `--work-tree=${repo.top}`, ...args]),
    remove,
  };
}
