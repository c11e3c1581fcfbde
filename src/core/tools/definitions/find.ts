// The `find` tool: lists files whose path matches a glob. Candidates come from fd (or Debian's
// fdfind) when installed, else `git ls-files` inside a work tree, else POSIX find; whichever ran,
// the final decision is made here by one glob matcher, so the backends agree on what matches.
//
// Decisions:
// - Globs are Flemma's one dialect (src/core/util/glob.ts, picomatch): `*` and `?` stay within
//   one path segment, `**` as a whole segment spans any number of directories (including none),
//   and `[...]`, `[!...]` and `{a,b}` work as in shells; dot files are not special. Matching is
//   gitignore-like: a pattern without `/` matches the file name at any depth, a pattern with `/`
//   the whole path relative to the searched directory. grep uses the same matcher for a `glob`
//   containing `/`.
// - The backends are only asked for the file-name part of the pattern (fd `--glob`, find
//   `-name`); find is not given a name containing braces, which `-name` cannot express.
// - Excludes are applied to the path below the searched directory, so asking for a path inside
//   an excluded directory (say `node_modules/foo`) still finds its files. find prunes excluded
//   directories instead of walking them and discarding the results. The same filter runs here on
//   every backend's output, which also covers files git tracks inside excluded directories.
// - git runs the one safe way (../git.ts): `ls-files` against a clean git directory made for the
//   call, so no `core.fsmonitor` or other program of the repository's config runs, and without
//   Flemma's `GIT_*` variables; finding the work tree is the same `rev-parse` the review uses.
// - git's file list is read NUL-separated, so names with unusual characters are not quoted.
//   `--cached` still lists a tracked file deleted from the work tree; such entries are dropped.
// - Results are collected in full, sorted, and only then cut to `limit`, so the cut is stable.
//   Over the limit the output ends with `[Results limited to <n> entries. …]`. When the list is
//   still over the size limits it is cut as well, the full list is saved to a temp file
//   (always, docs/tools.md "Execution"), and `[Showing <a> of <b> results (truncated). … Full output: <file>]` says so.
// - A failing exit status is only an error when nothing was found (find reports 1 when a single
//   directory was unreadable; fd reports 1 for "no results" in some versions).
// - The time limit is `tools.find.timeout` when set, else the context's default timeout.

import { stat } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve as resolvePath } from 'node:path';

import { pathExists } from '../../util/files.js';
import { pathGlob } from '../../util/glob.js';
import { resolveAgainst } from '../context.js';
import { type CleanGitDir, cleanGitDir, gitRunOptions, locateRepository } from '../git.js';
import { type RunOptions, type RunResult, runProcess } from '../process.js';
import { type Probes, probeOnce } from '../probes.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';
import { MAX_BYTES, MAX_LINES, type TruncateFs, truncateListing } from '../truncate.js';
import {
  type RunFn,
  compareCodeUnits,
  displayPath,
  escapes,
  excludesFrom,
  onPath,
  positiveInt,
  searchArgument,
  timeoutSeconds,
} from './ls.js';
import { searchTool, stringField, textOf } from './builtin.js';

/** Files reported when the call gives no `limit`. */
export const FIND_DEFAULT_LIMIT = 500;

export type FindBackend = 'fd' | 'git' | 'find';

// ---------------------------------------------------------------------------------------------
// Globs

/**
 * A predicate for paths relative to the searched directory: patterns with a `/` match the whole
 * path, others the last segment. A leading `./` or `/` in the pattern is ignored.
 */
export function globMatcher(pattern: string): (relPath: string) => boolean {
  const clean = pattern.replace(/^(?:\.\/|\/)+/u, '');
  const matches = pathGlob(clean);
  if (clean.includes('/')) return matches;
  return (relPath) => matches(relPath.slice(relPath.lastIndexOf('/') + 1));
}

/** A predicate telling whether any segment of a relative path matches one of `excludes`. */
export function excludeMatcher(excludes: readonly string[]): (relPath: string) => boolean {
  const matchers = excludes.map((name) => pathGlob(name));
  if (matchers.length === 0) return () => false;
  return (relPath) =>
    relPath.split('/').some((segment) => matchers.some((matches) => matches(segment)));
}

/**
 * The last segment of a pattern, which the backends can filter on by themselves; `*` when that
 * segment is cut out of a brace group spanning a `/` (`src/{a,b/c}.ts`).
 */
export function namePart(pattern: string): string {
  const name = pattern.slice(pattern.lastIndexOf('/') + 1);
  const opens = name.split('{').length;
  const closes = name.split('}').length;
  return opens === closes ? name : '*';
}

// ---------------------------------------------------------------------------------------------
// Backends

/** What runs: fd under one of its names, git, or find. */
export type FindPlan = { backend: 'fd'; command: string } | { backend: 'git' | 'find' };

/** The command line for a backend; `dirArg` is the searched directory as the process sees it. */
export function buildFindArgv(
  plan: FindPlan,
  pattern: string,
  dirArg: string,
  excludes: readonly string[],
): string[] {
  const name = namePart(pattern);
  switch (plan.backend) {
    case 'fd': {
      const argv = [plan.command, '--type', 'f', '--color', 'never'];
      for (const x of excludes) argv.push('--exclude', x);
      argv.push('--glob', '--', name === '' ? '*' : name, dirArg);
      return argv;
    }
    case 'git':
      // Run in the searched directory: it lists the files below it, relative to it. Only the
      // arguments: the command line is the clean git directory's (see `executeFind`).
      return ['ls-files', '--cached', '--others', '--exclude-standard', '-z'];
    case 'find': {
      const argv = ['find', dirArg, '-mindepth', '1'];
      if (excludes.length > 0) {
        argv.push('(');
        excludes.forEach((x, i) => {
          if (i > 0) argv.push('-o');
          argv.push('-name', x);
        });
        argv.push(')', '-prune', '-o');
      }
      argv.push('-type', 'f');
      if (name !== '' && !name.includes('{')) argv.push('-name', name);
      argv.push('-print');
      return argv;
    }
  }
}

interface Installed {
  fd: string | undefined;
  git: boolean;
  find: boolean;
}
/** Which programs are on PATH (once per `probes`, the host's). */
function detectInstalled(probes: Probes | undefined): Promise<Installed> {
  return probeOnce(probes, 'find:installed', async (): Promise<Installed> => {
    let fd: string | undefined;
    if ((await onPath('fd')) !== undefined) fd = 'fd';
    else if ((await onPath('fdfind')) !== undefined) fd = 'fdfind';
    return {
      fd,
      git: (await onPath('git')) !== undefined,
      find: (await onPath('find')) !== undefined,
    };
  });
}

async function insideGitWorkTree(dir: string, run: RunFn, signal: AbortSignal): Promise<boolean> {
  return (await locateRepository(dir, run, { signal, timeoutMs: 5000 })) !== undefined;
}

/** fd when installed, else git inside a work tree, else find; null when none is available. */
export async function chooseFindPlan(
  dir: string,
  run: RunFn,
  signal: AbortSignal,
  probes?: Probes,
): Promise<FindPlan | null> {
  const have = await detectInstalled(probes);
  if (have.fd !== undefined) return { backend: 'fd', command: have.fd };
  if (have.git && (await insideGitWorkTree(dir, run, signal))) return { backend: 'git' };
  if (have.find) return { backend: 'find' };
  return null;
}

// ---------------------------------------------------------------------------------------------
// The tool

export interface FindToolOptions {
  /** Use this backend instead of detecting one (`fd` runs `fdCommand`, default `fd`). */
  backend?: FindBackend;
  fdCommand?: string;
  /** Run processes with this instead of `runProcess`. */
  run?: RunFn;
  /** Where overflowing output is saved (default: the OS temp directory). */
  fs?: TruncateFs;
  /** Remembers which programs are installed (the host's); without it every search probes. */
  probes?: Probes;
}

function splitOutput(result: RunResult, plan: FindPlan): string[] {
  const separator = plan.backend === 'git' ? '\0' : '\n';
  return result.output.split(separator).filter((line) => line !== '');
}

/** The absolute paths of a run's matching files, deduplicated (in output order). */
function matchingFiles(
  lines: readonly string[],
  processCwd: string,
  searchDir: string,
  matches: (rel: string) => boolean,
  excluded: (rel: string) => boolean,
): string[] {
  const found = new Set<string>();
  for (const line of lines) {
    const abs = resolvePath(processCwd, line);
    const rel = relative(searchDir, abs);
    if (rel === '' || escapes(rel)) continue;
    if (excluded(rel) || !matches(rel)) continue;
    found.add(abs);
  }
  return [...found];
}

const NARROW = 'Narrow your pattern for more specific results.';

type Ran = { result: RunResult } | { error: string };

/** Runs `argv` through the sandbox; a start failure or a cancel is an error. */
async function runWrapped(
  argv: string[],
  ctx: ToolContext,
  run: RunFn,
  options: RunOptions,
): Promise<Ran> {
  const wrapped = await ctx.sandbox.wrap_command(argv);
  if (!wrapped.ok) return { error: `Sandbox error: ${wrapped.error}` };
  if (ctx.signal.aborted) return { error: 'Cancelled' };
  const result = await run(wrapped.argv, options);
  if (result.cancelled) return { error: 'Cancelled' };
  if (result.startError !== undefined) {
    return { error: `Failed to start ${argv[0] ?? 'find'}: ${result.startError}` };
  }
  return { result };
}

/**
 * Where the clean git directory goes. Run in the sandbox, it must be visible there (the temporary
 * directory: a command that changed it meanwhile could only make git run code in the sandbox,
 * as its own `bash` could). Run without one, it goes where no sandboxed command (of another
 * buffer, say) can write: `$XDG_RUNTIME_DIR`, which the sandbox hides.
 */
function gitScratch(ctx: ToolContext): string {
  const runtime = process.env['XDG_RUNTIME_DIR'];
  return !ctx.sandbox.enabled && runtime !== undefined && isAbsolute(runtime)
    ? join(runtime, 'flemma-find')
    : join(tmpdir(), 'flemma-find');
}

/**
 * Runs git's `args` the safe way (src/core/tools/git.ts): against a clean git directory made for
 * this run, without the repository's config or `GIT_*` variables.
 */
async function runGit(
  args: string[],
  ctx: ToolContext,
  run: RunFn,
  options: RunOptions & { cwd: string },
): Promise<Ran> {
  const located = { signal: ctx.signal, timeoutMs: 5000 };
  const repo = await locateRepository(options.cwd, run, located);
  if (repo === undefined) return { error: `Not a git work tree: ${options.cwd}` };
  let clean: CleanGitDir;
  try {
    clean = await cleanGitDir(repo, gitScratch(ctx));
  } catch (error) {
    return {
      error: `Failed to start git: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  try {
    return await runWrapped(clean.argv(args), ctx, run, gitRunOptions(options));
  } finally {
    await clean.remove();
  }
}

/** The directory to search: the working directory, or `path` when it is one. */
async function searchDirOf(
  ctx: ToolContext,
  pathInput: string | undefined,
): Promise<{ dir: string } | { error: string }> {
  if (pathInput === undefined) return { dir: ctx.cwd };
  const dir = resolveAgainst(ctx.cwd, pathInput, homedir());
  try {
    if (!(await stat(dir)).isDirectory()) return { error: `Not a directory: ${pathInput}` };
  } catch {
    return { error: `Directory not found: ${pathInput}` };
  }
  return { dir };
}

/** The backend the options fix, or the one found for the directory. */
async function planOf(
  options: FindToolOptions,
  searchDir: string,
  run: RunFn,
  signal: AbortSignal,
): Promise<FindPlan | null> {
  if (options.backend === 'fd') return { backend: 'fd', command: options.fdCommand ?? 'fd' };
  if (options.backend !== undefined) return { backend: options.backend };
  return chooseFindPlan(searchDir, run, signal, options.probes);
}

/** The outcome of a search that found nothing: fine, or the program's failure. */
function nothingFound(result: RunResult, plan: FindPlan): ToolOutcome {
  const stderr = result.stderr.trim();
  const fdFoundNothing = plan.backend === 'fd' && result.exitCode === 1 && stderr === '';
  if (result.exitCode === 0 || fdFoundNothing) {
    return { ok: true, output: 'No files found matching pattern.' };
  }
  if (stderr !== '') return { ok: false, error: stderr };
  return {
    ok: false,
    error:
      result.exitCode === null
        ? 'Command was terminated by a signal'
        : `Command exited with code ${result.exitCode}`,
  };
}

/** The paths found, at most `limit`, cut to the output limit, with notes saying so. */
async function listing(
  results: readonly string[],
  limit: number,
  ctx: ToolContext,
  options: FindToolOptions,
): Promise<ToolOutcome> {
  const limited = results.length > limit;
  const text = (limited ? results.slice(0, limit) : results).join('\n');
  const cut = await truncateListing(text, 'find', ctx.tool_id, options.fs);
  const notes: string[] = [];
  if (cut.truncated) {
    const where =
      cut.fullOutputPath === null
        ? ' Full output could not be saved.'
        : ` Full output: ${cut.fullOutputPath}`;
    const { shownLines, totalLines } = cut.details;
    notes.push(`[Showing ${shownLines} of ${totalLines} results (truncated). ${NARROW}${where}]`);
  }
  if (limited) notes.push(`[Results limited to ${limit} entries. ${NARROW}]`);
  const body = cut.truncated ? cut.details.content : text;
  return { ok: true, output: notes.length === 0 ? body : `${body}\n\n${notes.join('\n')}` };
}

async function executeFind(
  pattern: string,
  fields: Record<string, unknown>,
  ctx: ToolContext,
  options: FindToolOptions,
): Promise<ToolOutcome> {
  const run = options.run ?? runProcess;
  const searched = await searchDirOf(ctx, stringField(fields, 'path'));
  if ('error' in searched) return { ok: false, error: searched.error };
  const searchDir = searched.dir;
  const plan = await planOf(options, searchDir, run, ctx.signal);
  if (plan === null) {
    return { ok: false, error: 'No file-finding program available (install fd, git or find)' };
  }

  const excludes = excludesFrom(ctx.get_config());
  const dirArg = searchArgument(ctx.cwd, searchDir);
  const seconds = timeoutSeconds(ctx);
  const processCwd = plan.backend === 'git' ? searchDir : ctx.cwd;
  const runOptions = { cwd: processCwd, signal: ctx.signal, timeoutMs: seconds * 1000 };
  const ran = await (plan.backend === 'git'
    ? runGit(buildFindArgv(plan, pattern, dirArg, excludes), ctx, run, runOptions)
    : runWrapped(buildFindArgv(plan, pattern, dirArg, excludes), ctx, run, runOptions));
  if ('error' in ran) return { ok: false, error: ran.error };
  const result = ran.result;

  let files = matchingFiles(
    splitOutput(result, plan),
    processCwd,
    searchDir,
    globMatcher(pattern),
    excludeMatcher(excludes),
  );
  if (plan.backend === 'git') {
    const present = await Promise.all(files.map(pathExists));
    files = files.filter((_, i) => present[i] === true);
  }
  const results = files.map((abs) => displayPath(ctx.cwd, abs)).sort(compareCodeUnits);

  if (result.timedOut) {
    const error = `Find timed out after ${seconds} seconds.`;
    return results.length === 0
      ? { ok: false, error }
      : { ok: false, error, partialOutput: results.join('\n') };
  }
  if (results.length === 0) return nothingFound(result, plan);
  return listing(results, positiveInt(fields['limit'], FIND_DEFAULT_LIMIT), ctx, options);
}

/** A find tool; `findTool` detects its backend on each call, tests can fix one. */
export function createFindTool(options: FindToolOptions = {}): ToolDefinition {
  return searchTool({
    name: 'find',
    description:
      'Find files by glob pattern (fd, git ls-files or find, whichever is available). A ' +
      'pattern without "/" matches file names at any depth ("*.lua"); one with "/" matches the ' +
      'path below the searched directory ("src/**/*.tsx", where ** spans directories). Braces ' +
      '("*.{ts,tsx}") and [abc] classes work. Returns sorted paths relative to the working ' +
      `directory, one per line, at most limit (default ${FIND_DEFAULT_LIMIT}); the output is cut ` +
      `at ${MAX_LINES} lines or ${MAX_BYTES / 1024}KB. Commonly ignored directories such as ` +
      'node_modules and .git are skipped.',
    why: 'are looking, e.g. "locate the test files"',
    pattern: 'Glob to match, e.g. "*.lua" or "src/**/*.tsx".',
    path: 'Directory to search (default: the working directory).',
    limit: `The most paths to return (default ${FIND_DEFAULT_LIMIT}).`,
    label: 'Find files',
    execute: (pattern, fields, ctx) => executeFind(pattern, fields, ctx, options),
    detail: (input) => {
      const detail = [textOf(input, 'pattern')];
      const path = input['path'];
      if (typeof path === 'string' && path !== '') detail.push(`in ${path}`);
      return detail;
    },
  });
}

export const findTool: ToolDefinition = createFindTool();
