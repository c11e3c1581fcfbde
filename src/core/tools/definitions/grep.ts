// The `grep` tool: searches file contents with ripgrep when it is installed, else GNU grep with
// Perl regexes, else grep with extended regexes (Perl shorthands rewritten). The backend is
// detected once per host (its `Probes`, given to `createGrepTool`); tests pick one explicitly.
//
// Decisions:
// - The pattern is passed with `-e` and the path after `--`, so neither can be read as an option.
// - grep gets `-H` so a single-file search still prints the file name, and GNU grep (the `-P`
//   backend) gets `--null`, so a file name containing `:12:` cannot be mistaken for a line number.
// - Every exclude name is given to grep as both `--exclude-dir` and `--exclude`: names such as
//   `.git` contain a dot but are directories, and `--exclude` alone would not skip them (rg's
//   `--glob !name` covers both already).
// - grep skips a command-line directory that matches `--exclude-dir`, rg does not. So that
//   searching `node_modules` (or `build`, …) on purpose works with every backend, grep is given
//   a directory as `<dir>/.`; excludes then only apply below the searched directory, as in find.
//   A file given as the path is searched as it is: glob and excludes are for walking directories.
// - The backends are only given the file-name part of `glob` (rg would match a glob with `/`
//   against paths relative to its cwd, grep's `--include` never matches one). A glob with `/` is
//   then matched here, against the path below the searched directory, as find does.
// - Each backend stops after `limit + 1` matches per file (`-m`), which bounds the output of a
//   broad pattern while still telling "exactly limit" from "more than limit". The run then
//   completes, and the matches are sorted by path and line before the cut to `limit`, so the
//   result does not depend on rg's parallel search order.
// - Result paths are relative to the working directory (absolute when the searched path lies
//   outside it); `./` and `/./` segments are removed.
// - Each matched line is cut to GREP_MAX_LINE_BYTES bytes including the cut marker, on a
//   character boundary; a trailing `\r` (CRLF files) is dropped.
// - Exit status 2 is only a failure when nothing matched: grep and rg also return 2 when one
//   unreadable file spoils an otherwise good search, and the matches found are still useful.
// - The time limit is `tools.grep.timeout` when set, else the context's default timeout.

import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { relative, resolve as resolvePath } from 'node:path';

import { resolveAgainst } from '../context.js';
import { type RunResult, runProcess } from '../process.js';
import { type Probes, probeOnce } from '../probes.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';
import {
  HEAD_CUT_MARKER,
  MAX_BYTES,
  MAX_LINES,
  type TruncateFs,
  truncateListing,
} from '../truncate.js';
import { globMatcher, namePart } from './find.js';
import {
  type RunFn,
  compareCodeUnits,
  displayPath,
  excludesFrom,
  onPath,
  positiveInt,
  searchArgument,
  timeoutSeconds,
} from './ls.js';
import { optional, fieldsOf, searchTool, stringField, textOf } from './builtin.js';

/** Matches reported when the call gives no `limit`. */
export const GREP_DEFAULT_LIMIT = 100;
/** Longest matched line text, in UTF-8 bytes, the cut marker included. */
export const GREP_MAX_LINE_BYTES = 500;

export type GrepBackend = 'rg' | 'grep-p' | 'grep-e';

/** The best search program available (probed once per `probes`, the host's). */
export function detectGrepBackend(
  run: RunFn = runProcess,
  probes?: Probes,
): Promise<GrepBackend | null> {
  return probeOnce(probes, 'grep:backend', async (): Promise<GrepBackend | null> => {
    if ((await onPath('rg')) !== undefined) return 'rg';
    if ((await onPath('grep')) === undefined) return null;
    // GNU grep built with PCRE answers 0 or 1 here; others reject -P with status 2.
    const probe = await run(['grep', '-P', '', '/dev/null'], { cwd: '/', timeoutMs: 5000 });
    return probe.exitCode === 0 || probe.exitCode === 1 ? 'grep-p' : 'grep-e';
  });
}

const ERE_CLASSES: Readonly<Record<string, string>> = {
  d: '[0-9]',
  D: '[^0-9]',
  w: '[[:alnum:]_]',
  W: '[^[:alnum:]_]',
  s: '[[:space:]]',
  S: '[^[:space:]]',
};
// Inside a bracket expression only the positive classes can be spliced in.
const ERE_CLASSES_IN_BRACKET: Readonly<Record<string, string>> = {
  d: '0-9',
  w: '[:alnum:]_',
  s: '[:space:]',
};

/**
 * Rewrites the Perl shorthands `\d \w \s` (and `\D \W \S`) that POSIX extended regexes lack into
 * bracket expressions. An escaped backslash (`\\d`) is left alone.
 */
export function toExtendedRegex(pattern: string): string {
  let out = '';
  let inBracket = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern.charAt(i);
    if (ch === '\\' && i + 1 < pattern.length) {
      const next = pattern.charAt(i + 1);
      const table = inBracket ? ERE_CLASSES_IN_BRACKET : ERE_CLASSES;
      const replacement = Object.hasOwn(table, next) ? table[next] : undefined;
      out += replacement ?? `\\${next}`;
      i++;
      continue;
    }
    if (!inBracket && ch === '[') {
      inBracket = true;
      out += ch;
      // A `]` right after `[` or `[^` is a literal member, not the end.
      if (pattern.charAt(i + 1) === '^') out += pattern.charAt(++i);
      if (pattern.charAt(i + 1) === ']') out += pattern.charAt(++i);
      continue;
    }
    if (inBracket && ch === ']') inBracket = false;
    out += ch;
  }
  return out;
}

/**
 * The globs a brace pattern stands for (`*.{ts,tsx}` → `*.ts`, `*.tsx`), for grep's `--include`,
 * which has no braces. Nested braces expand too; unbalanced ones stay literal. At most 64 globs.
 */
export function expandBraces(glob: string): string[] {
  let open = -1;
  let depth = 0;
  const commas: number[] = [];
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i];
    if (ch === '\\') i++;
    else if (ch === '{') {
      if (depth === 0) {
        open = i;
        commas.length = 0;
      }
      depth++;
    } else if (ch === ',' && depth === 1) commas.push(i);
    else if (ch === '}' && depth > 0) {
      depth--;
      if (depth > 0) continue;
      if (commas.length === 0) continue; // `{x}` is not a choice: keep it and look further
      const bounds = [open, ...commas, i];
      const prefix = glob.slice(0, open);
      const suffix = glob.slice(i + 1);
      const out: string[] = [];
      for (let k = 0; k + 1 < bounds.length; k++) {
        const alternative = glob.slice((bounds[k] ?? 0) + 1, bounds[k + 1]);
        out.push(...expandBraces(prefix + alternative + suffix));
        if (out.length >= 64) return out.slice(0, 64);
      }
      return out;
    }
  }
  return [glob];
}

export interface GrepArgvOptions {
  /** File-name glob the backend filters on (no `/`). */
  glob?: string | undefined;
  excludes: readonly string[];
  /** Stop after this many matches in one file. */
  maxCount?: number | undefined;
}

/** The command line for a search; `searchPath` is relative to the process's cwd (or absolute). */
export function buildGrepArgv(
  backend: GrepBackend,
  pattern: string,
  searchPath: string,
  options: GrepArgvOptions,
): string[] {
  const { glob, excludes, maxCount } = options;
  const argv =
    backend === 'rg'
      ? ['rg', '--json', '--no-messages']
      : ['grep', '-rnH', '--binary-files=without-match', backend === 'grep-p' ? '-P' : '-E'];
  if (backend === 'grep-p') argv.push('--null');
  if (maxCount !== undefined) argv.push('-m', String(maxCount));
  if (backend === 'rg') {
    if (glob !== undefined) argv.push('--glob', glob);
    for (const name of excludes) argv.push('--glob', `!${name}`);
  } else {
    if (glob !== undefined) for (const one of expandBraces(glob)) argv.push(`--include=${one}`);
    for (const name of excludes) argv.push(`--exclude-dir=${name}`, `--exclude=${name}`);
  }
  argv.push('-e', backend === 'grep-e' ? toExtendedRegex(pattern) : pattern, '--', searchPath);
  return argv;
}

/**
 * The path argument for a backend: grep gets a directory as `<dir>/.` so that an exclude
 * matching the directory's own name does not skip it (see the header).
 */
export function grepSearchPath(backend: GrepBackend, arg: string, isDirectory: boolean): string {
  if (backend === 'rg' || !isDirectory || arg === '.') return arg;
  return arg.endsWith('/') ? `${arg}.` : `${arg}/.`;
}

const isContinuation = (byte: number | undefined): boolean =>
  byte !== undefined && (byte & 0xc0) === 0x80;

/** `text` cut to at most `maxBytes` UTF-8 bytes (marker included) on a character boundary. */
export function capLine(text: string, maxBytes: number = GREP_MAX_LINE_BYTES): string {
  // One UTF-16 code unit is at most 3 UTF-8 bytes: short strings need no encoding.
  if (text.length * 3 <= maxBytes) return text;
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes - Buffer.byteLength(HEAD_CUT_MARKER));
  while (end > 0 && isContinuation(buf[end])) end--;
  return buf.subarray(0, end).toString('utf8') + HEAD_CUT_MARKER;
}

export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

/** Drops the line terminator: `\n`, `\r\n`, or the `\r` grep leaves from a CRLF line. */
function stripEol(text: string): string {
  return text.replace(/\r?\n?$/u, '');
}

/** rg's JSON text fields hold `text`, or `bytes` (base64) when the data is not valid UTF-8. */
function jsonText(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  if (typeof record['text'] === 'string') return record['text'];
  if (typeof record['bytes'] === 'string') {
    return Buffer.from(record['bytes'], 'base64').toString('utf8');
  }
  return undefined;
}

/** The `match` records of `rg --json` output; other records and broken lines are skipped. */
export function parseRgJson(output: string): GrepMatch[] {
  const matches: GrepMatch[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    const { type, data } = fieldsOf(record);
    if (type !== 'match') continue;
    const fields = fieldsOf(data);
    const lineNumber = fields['line_number'];
    matches.push({
      path: jsonText(fields['path']) ?? '?',
      line: typeof lineNumber === 'number' ? lineNumber : 0,
      text: stripEol(jsonText(fields['lines']) ?? ''),
    });
  }
  return matches;
}

/**
 * Lines of `grep -nH`: `path\0line:text` with `--null`, else `path:line:text`, where the first
 * `:<digits>:` ends the path.
 */
export function parseGrepLines(output: string): GrepMatch[] {
  const matches: GrepMatch[] = [];
  for (const raw of output.split('\n')) {
    const nul = raw.indexOf('\0');
    const groups =
      nul >= 0
        ? /^(?<line>\d+):(?<text>.*)$/su.exec(raw.slice(nul + 1))?.groups
        : /^(?<path>.*?):(?<line>\d+):(?<text>.*)$/su.exec(raw)?.groups;
    if (groups === undefined) continue;
    matches.push({
      path: nul >= 0 ? raw.slice(0, nul) : (groups['path'] ?? ''),
      line: Number(groups['line']),
      text: stripEol(groups['text'] ?? ''),
    });
  }
  return matches;
}

function formatMatches(matches: readonly GrepMatch[]): string {
  return matches.map((m) => `${m.path}:${m.line}:${capLine(m.text)}`).join('\n');
}

export interface GrepToolOptions {
  /** Use this backend instead of detecting one. */
  backend?: GrepBackend;
  /** Run processes with this instead of `runProcess`. */
  run?: RunFn;
  /** Where overflowing output is saved (default: the OS temp directory). */
  fs?: TruncateFs;
  /** Remembers which program was found (the host's); without it every search probes. */
  probes?: Probes;
}

function describeFailure(result: RunResult): string {
  const stderr = result.stderr.trim();
  const code = result.exitCode === null ? 'a signal' : `exit code ${result.exitCode}`;
  return `Search failed with ${code}${stderr === '' ? '' : `\n${stderr}`}`;
}

/**
 * The matches in a program's output, sorted by path and line, their paths as shown. A glob with
 * `/` is matched here, against the path below the searched directory.
 */
function matchesOf(
  backend: GrepBackend,
  output: string,
  cwd: string,
  target: string,
  glob: string | undefined,
): GrepMatch[] {
  const pathFilter = glob?.includes('/') === true ? globMatcher(glob) : undefined;
  const all: GrepMatch[] = [];
  const parsed = backend === 'rg' ? parseRgJson(output) : parseGrepLines(output);
  for (const match of parsed) {
    const abs = resolvePath(cwd, match.path);
    if (pathFilter !== undefined && !pathFilter(relative(target, abs))) continue;
    all.push({ ...match, path: displayPath(cwd, abs) });
  }
  return all.sort((a, b) => compareCodeUnits(a.path, b.path) || a.line - b.line);
}

async function executeGrep(
  pattern: string,
  fields: Record<string, unknown>,
  ctx: ToolContext,
  options: GrepToolOptions,
): Promise<ToolOutcome> {
  const run = options.run ?? runProcess;

  const pathInput = stringField(fields, 'path');
  const target = pathInput === undefined ? ctx.cwd : resolveAgainst(ctx.cwd, pathInput, homedir());
  let isDirectory = true;
  if (pathInput !== undefined) {
    try {
      isDirectory = (await stat(target)).isDirectory();
    } catch {
      return { ok: false, error: `Path not found: ${pathInput}` };
    }
  }

  const backend = options.backend ?? (await detectGrepBackend(run, options.probes));
  if (backend === null) {
    return { ok: false, error: 'No search program available (install ripgrep or grep)' };
  }

  const limit = positiveInt(fields['limit'], GREP_DEFAULT_LIMIT);
  const glob = isDirectory ? stringField(fields, 'glob') : undefined;
  const searchPath = grepSearchPath(backend, searchArgument(ctx.cwd, target), isDirectory);
  const argv = buildGrepArgv(backend, pattern, searchPath, {
    glob: glob === undefined ? undefined : namePart(glob),
    excludes: isDirectory ? excludesFrom(ctx.get_config()) : [],
    maxCount: limit + 1,
  });
  const wrapped = await ctx.sandbox.wrap_command(argv);
  if (!wrapped.ok) return { ok: false, error: `Sandbox error: ${wrapped.error}` };
  if (ctx.signal.aborted) return { ok: false, error: 'Cancelled' };

  const seconds = timeoutSeconds(ctx);
  const result = await run(wrapped.argv, {
    cwd: ctx.cwd,
    signal: ctx.signal,
    timeoutMs: seconds * 1000,
  });
  if (result.cancelled) return { ok: false, error: 'Cancelled' };
  if (result.startError !== undefined) {
    return { ok: false, error: `Failed to start the search: ${result.startError}` };
  }

  const all = matchesOf(backend, result.output, ctx.cwd, target, glob);
  const limitReached = all.length > limit;
  const matches = limitReached ? all.slice(0, limit) : all;

  if (result.timedOut) {
    const error = `Search timed out after ${seconds} seconds.`;
    return matches.length === 0
      ? { ok: false, error }
      : { ok: false, error, partialOutput: formatMatches(matches) };
  }
  if (matches.length === 0) {
    if (result.exitCode === 0 || result.exitCode === 1) {
      return { ok: true, output: 'No matches found.' };
    }
    return { ok: false, error: describeFailure(result) };
  }

  const body = await truncateListing(formatMatches(matches), 'grep', ctx.tool_id, options.fs);
  const footer = `[${matches.length} matches${limitReached ? ', limit reached' : ''}]`;
  return { ok: true, output: `${body.text}\n\n${footer}` };
}

/**
 * A grep tool; `grepTool` detects its backend on each call, tests can fix one and stand in for
 * processes.
 */
export function createGrepTool(options: GrepToolOptions = {}): ToolDefinition {
  return searchTool({
    name: 'grep',
    description:
      'Search the contents of files for a regular expression (ripgrep when installed, else ' +
      'grep; with plain POSIX grep, \\d \\w \\s are translated for you). Prints one ' +
      '`path:line:text` line per match, paths relative to the working directory, each text ' +
      `cut at ${GREP_MAX_LINE_BYTES} bytes. Stops after limit matches (default ` +
      `${GREP_DEFAULT_LIMIT}); the output is cut at ${MAX_LINES} lines or ${MAX_BYTES / 1024}KB. ` +
      'Commonly ignored directories such as node_modules and .git are skipped.',
    why: 'are searching, e.g. "find callers of init"',
    pattern: 'The regular expression to look for.',
    path: 'Directory or file to search (default: the working directory).',
    filters: {
      glob: optional(
        'string',
        'Only search files matching this glob, e.g. "*.ts", "*.{c,h}" or "src/**/*.lua" ' +
          '(a glob with / matches the path below the searched directory).',
      ),
    },
    limit: `The most matches to report (default ${GREP_DEFAULT_LIMIT}).`,
    label: 'Search file contents',
    execute: (pattern, fields, ctx) => executeGrep(pattern, fields, ctx, options),
    detail: (input) => {
      const pattern = textOf(input, 'pattern');
      const detail = [`/${pattern}/`];
      for (const key of ['path', 'glob']) {
        const value = input[key];
        if (typeof value === 'string' && value !== '') detail.push(value);
      }
      return detail;
    },
  });
}

export const grepTool: ToolDefinition = createGrepTool();
