// The built-in search tools (ls, grep, find) against real temporary directory trees. Every grep
// backend is run for real (ripgrep and GNU grep are installed in the test environment); fd is
// not, so its path goes through a fake `run` with canned output. Timeouts and cancellation use a
// FIFO: grep blocks opening it, which gives a slow real process without any sleep.

import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, open, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  type ContextInit,
  type SandboxAccess,
  createExecutionContext,
  noSandbox,
} from '../../src/core/tools/context.js';
import {
  FIND_DEFAULT_LIMIT,
  buildFindArgv,
  chooseFindPlan,
  createFindTool,
  findTool,
  globMatcher,
  namePart,
} from '../../src/core/tools/definitions/find.js';
import {
  GREP_MAX_LINE_BYTES,
  type GrepBackend,
  buildGrepArgv,
  capLine,
  createGrepTool,
  expandBraces,
  grepTool,
  parseGrepLines,
  toExtendedRegex,
} from '../../src/core/tools/definitions/grep.js';
import {
  DEFAULT_EXCLUDES,
  type RunFn,
  createLsTool,
  excludesFrom,
  lsTool,
  onPath,
  searchArgument,
} from '../../src/core/tools/definitions/ls.js';
import { type RunOptions, type RunResult, runProcess } from '../../src/core/tools/process.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../../src/core/tools/registry.js';
import { HEAD_CUT_MARKER, type TruncateFs } from '../../src/core/tools/truncate.js';
import { RUN_OK } from '../helpers/processes.js';

// ---------------------------------------------------------------------------------------------
// Fixtures

let root: string; // the working directory of most tests
let outside: string; // a directory that is not below `root`
let scratch: string; // per-test trees that must not disturb `root`

/** Creates the files of `tree` (path → content) below `base`. */
async function plant(base: string, tree: Record<string, string>): Promise<void> {
  for (const [rel, content] of Object.entries(tree)) {
    const path = join(base, rel);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, content);
  }
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flemma-search-'));
  outside = await mkdtemp(join(tmpdir(), 'flemma-outside-'));
  scratch = await mkdtemp(join(tmpdir(), 'flemma-scratch-'));
  await plant(root, {
    'README.md': 'hello readme\n',
    'src/main.ts': 'const hello = 1;\nexport function Hello() {}\n',
    'src/util.ts': 'export const x = 2;\n// hello again\n',
    'src/deep/nested/file.ts': 'hello nested\n',
    'src/notes.txt': 'hello text\n',
    'docs/guide.md': 'say hello\n',
    'node_modules/pkg/index.js': 'hello from a dependency\n',
    '.git/config': 'hello from git\n',
    'dist/out.js': 'hello from dist\n',
    'flags.txt': 'use --verbose for more\n',
    'crlf.txt': 'hello windows\r\n',
  });
  await plant(outside, { 'far.txt': 'hello from afar\n' });
});

afterAll(async () => {
  for (const dir of [root, outside, scratch]) await rm(dir, { recursive: true, force: true });
});

const fdInstalled = (await onPath('fd')) !== undefined || (await onPath('fdfind')) !== undefined;

let toolIds = 0;

function makeCtx(cwd: string, init: Partial<ContextInit> = {}): ToolContext {
  toolIds += 1;
  return createExecutionContext(
    { bufnr: 1, cwd, timeout: 30, toolId: `toolu_${toolIds}`, ...init },
    '/nonexistent-home',
  );
}

async function exec(def: ToolDefinition, input: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  if (def.execute === undefined) throw new Error(`${def.name} has no execute`);
  return def.execute(input, ctx);
}

/** The output of a successful outcome (fails the test otherwise). */
function okText(outcome: ToolOutcome): string {
  if (!outcome.ok) throw new Error(`expected success, got error: ${outcome.error}`);
  if (typeof outcome.output !== 'string') throw new Error('expected string output');
  return outcome.output;
}

function errorOf(outcome: ToolOutcome): { error: string; partialOutput?: string | undefined } {
  if (outcome.ok) throw new Error(`expected an error, got: ${JSON.stringify(outcome.output)}`);
  return { error: outcome.error, partialOutput: outcome.partialOutput };
}

/** An in-memory place for overflow files. */
function memoryFs(): TruncateFs & { saved: Map<string, string> } {
  const saved = new Map<string, string>();
  return {
    saved,
    tmpdir: () => '/fake-tmp',
    writeFile: (path, data) => {
      saved.set(path, Buffer.from(data).toString());
      return Promise.resolve();
    },
  };
}

interface RunCall {
  argv: readonly string[];
  options: RunOptions;
}

/** A stand-in for runProcess that records its calls and answers with `result`. */
function fakeRun(result: Partial<RunResult>): RunFn & { calls: RunCall[] } {
  const calls: RunCall[] = [];
  const fn = (argv: readonly string[], options: RunOptions): Promise<RunResult> => {
    calls.push({ argv, options });
    return Promise.resolve({ ...RUN_OK, ...result });
  };
  return Object.assign(fn, { calls });
}

function sandbox(wrap: SandboxAccess['wrap_command']): SandboxAccess {
  return {
    enabled: true,
    is_path_writable: () => true,
    wrap_command: wrap,
    scrub_env: (env) => noSandbox.scrub_env(env),
  };
}

const grepInput = (pattern: string, more: Record<string, unknown> = {}) => ({
  label: 'search',
  pattern,
  path: null,
  glob: null,
  limit: null,
  ...more,
});
const findInput = (pattern: string, more: Record<string, unknown> = {}) => ({
  label: 'look',
  pattern,
  path: null,
  limit: null,
  ...more,
});
const lsInput = (path: string, more: Record<string, unknown> = {}) => ({
  label: 'list',
  path,
  max_depth: null,
  limit: null,
  ...more,
});

/** The match lines of grep output (everything before the blank line and footer). */
function matchLines(output: string): string[] {
  return output.split('\n\n')[0]?.split('\n') ?? [];
}

// ---------------------------------------------------------------------------------------------
// Definitions

describe('definitions', () => {
  const schemaOf = (def: ToolDefinition) => def.inputSchema;

  // The inputs grep and find share: a label, a pattern, where to look and how many at most.
  const search = {
    label: 'string',
    limit: ['number', 'null'],
    path: ['string', 'null'],
    pattern: 'string',
  };
  it.each([
    [grepTool, { ...search, glob: ['string', 'null'] }, true],
    [findTool, search, true],
    [
      lsTool,
      { label: 'string', limit: ['number', 'null'], max_depth: ['number', 'null'], path: 'string' },
      false,
    ],
  ] as const)('%# has the specified schema and flags', (def, types, isAsync) => {
    const schema = schemaOf(def);
    const props = schema['properties'] as Record<string, { type: unknown }>;
    const actual = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, v.type]));
    expect(actual).toEqual(types);
    expect([...(schema['required'] as string[])].sort()).toEqual(Object.keys(types).sort());
    expect(schema['additionalProperties']).toBe(false);
    expect(def.strict).toBe(true);
    expect(def.async === true).toBe(isAsync);
    expect(def.canAutoApproveIfSandboxed).toBeUndefined();
  });

  it('names the tools as the host expects', () => {
    expect([grepTool.name, findTool.name, lsTool.name]).toEqual(['grep', 'find', 'ls']);
    expect(createGrepTool().name).toBe('grep');
    expect(createFindTool().name).toBe('find');
    expect(createLsTool().name).toBe('ls');
  });
});

describe('previews', () => {
  const preview = (def: ToolDefinition, input: Record<string, unknown>) => {
    if (def.formatPreview === undefined) throw new Error('no preview');
    return def.formatPreview(input, 80);
  };

  it('grep: /pattern/  path  glob, each only when set', () => {
    expect(preview(grepTool, grepInput('TODO', { label: 'todos' }))).toEqual({
      label: 'todos',
      detail: ['/TODO/'],
    });
    expect(preview(grepTool, grepInput('a|b', { path: 'src', glob: '*.ts' }))).toEqual({
      label: 'search',
      detail: ['/a|b/', 'src', '*.ts'],
    });
    expect(preview(grepTool, grepInput('x', { glob: '*.lua' }))).toEqual({
      label: 'search',
      detail: ['/x/', '*.lua'],
    });
  });

  it('find: pattern  in path', () => {
    expect(preview(findTool, findInput('*.lua'))).toEqual({ label: 'look', detail: ['*.lua'] });
    expect(preview(findTool, findInput('*.lua', { path: 'lua' }))).toEqual({
      label: 'look',
      detail: ['*.lua', 'in lua'],
    });
  });

  it('ls: path, and depth only when above 1', () => {
    expect(preview(lsTool, lsInput('src'))).toEqual({ label: 'list', detail: ['src'] });
    expect(preview(lsTool, lsInput('src', { max_depth: 1 }))).toEqual({
      label: 'list',
      detail: ['src'],
    });
    expect(preview(lsTool, lsInput('src', { max_depth: 1.5 }))).toEqual({
      label: 'list',
      detail: ['src'],
    });
    expect(preview(lsTool, lsInput('.', { max_depth: 3 }))).toEqual({
      label: 'list',
      detail: ['.', 'depth=3'],
    });
    expect(preview(lsTool, lsInput('.', { max_depth: 99 }))).toEqual({
      label: 'list',
      detail: ['.', 'depth=10'],
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Helpers

describe('helpers', () => {
  it('excludesFrom: defaults when unset; an empty Lua table ([] or {}) excludes nothing', () => {
    expect(excludesFrom(undefined)).toEqual([...DEFAULT_EXCLUDES]);
    expect(excludesFrom({ cwd: 'x' })).toEqual([...DEFAULT_EXCLUDES]);
    // A whole `tools.grep = {}` may arrive as an empty array.
    expect(excludesFrom([] as unknown as Record<string, unknown>)).toEqual([...DEFAULT_EXCLUDES]);
    expect(excludesFrom({ exclude: [] })).toEqual([]);
    expect(excludesFrom({ exclude: {} })).toEqual([]);
    expect(excludesFrom({ exclude: ['a', 3, '', 'b'] })).toEqual(['a', 'b']);
    expect(DEFAULT_EXCLUDES).toEqual([
      '.git',
      'node_modules',
      '__pycache__',
      '.venv',
      'target',
      'dist',
      'build',
      'vendor',
    ]);
  });

  it('searchArgument: relative below cwd, absolute outside, ./ before a leading dash', () => {
    expect(searchArgument('/w', '/w')).toBe('.');
    expect(searchArgument('/w', '/w/src/a')).toBe('src/a');
    expect(searchArgument('/w', '/w/-odd')).toBe('./-odd');
    expect(searchArgument('/w', '/elsewhere')).toBe('/elsewhere');
  });

  it('onPath finds installed programs and nothing on an empty PATH', async () => {
    expect(await onPath('grep')).toMatch(/\/grep$/u);
    expect(await onPath('grep', '/nonexistent-dir')).toBeUndefined();
  });

  it('globMatcher: names at any depth, paths with /, ** spans directories, braces, classes', () => {
    const ts = globMatcher('*.ts');
    expect(ts('a.ts')).toBe(true);
    expect(ts('src/deep/a.ts')).toBe(true);
    expect(ts('a.tsx')).toBe(false);
    const src = globMatcher('src/**/*.ts');
    expect(src('src/a.ts')).toBe(true);
    expect(src('src/x/y/a.ts')).toBe(true);
    expect(src('lib/src/a.ts')).toBe(false);
    const braces = globMatcher('*.{md,txt}');
    expect(braces('a.md') && braces('b/c.txt')).toBe(true);
    expect(braces('a.ts')).toBe(false);
    const cls = globMatcher('file[0-9].[!j]s');
    expect(cls('file1.ts')).toBe(true);
    expect(cls('file1.js')).toBe(false);
    expect(globMatcher('./src/*.ts')('src/a.ts')).toBe(true);
  });

  it('namePart: the last segment, or * when a brace group spans a slash', () => {
    expect(namePart('src/**/*.tsx')).toBe('*.tsx');
    expect(namePart('*.lua')).toBe('*.lua');
    expect(namePart('src/{a,b/c}.ts')).toBe('*');
  });

  it('expandBraces and toExtendedRegex', () => {
    expect(expandBraces('*.{ts,tsx}')).toEqual(['*.ts', '*.tsx']);
    expect(expandBraces('{a,b}{1,2}')).toEqual(['a1', 'a2', 'b1', 'b2']);
    expect(expandBraces('plain')).toEqual(['plain']);
    expect(toExtendedRegex('\\d+\\s\\w')).toBe('[0-9]+[[:space:]][[:alnum:]_]');
    expect(toExtendedRegex('[\\d.]\\\\d')).toBe('[0-9.]\\\\d');
  });

  it('capLine keeps at most 500 bytes, marker included, on a character boundary', () => {
    expect(capLine('short')).toBe('short');
    const exact = 'a'.repeat(GREP_MAX_LINE_BYTES);
    expect(capLine(exact)).toBe(exact);
    const ascii = capLine('a'.repeat(2000));
    expect(Buffer.byteLength(ascii)).toBe(GREP_MAX_LINE_BYTES);
    expect(ascii.endsWith(HEAD_CUT_MARKER)).toBe(true);
    const wide = capLine('é'.repeat(600)); // 2 bytes each
    expect(Buffer.byteLength(wide)).toBeLessThanOrEqual(GREP_MAX_LINE_BYTES);
    expect(wide).not.toContain('\uFFFD');
    expect(wide.startsWith('éé')).toBe(true);
  });

  it('parseGrepLines reads the --null form and the plain form', () => {
    expect(parseGrepLines('a:b:12:c.txt\u00003:x:y\nsrc/m.ts:4:z\r\n')).toEqual([
      { path: 'a:b:12:c.txt', line: 3, text: 'x:y' },
      { path: 'src/m.ts', line: 4, text: 'z' },
    ]);
  });

  it('buildGrepArgv: options cannot be injected, excludes cover files and directories', () => {
    const rg = buildGrepArgv('rg', '-x', '-odd', { glob: '*.ts', excludes: ['.git'] });
    expect(rg).toEqual([
      'rg',
      '--json',
      '--no-messages',
      '--glob',
      '*.ts',
      '--glob',
      '!.git',
      '-e',
      '-x',
      '--',
      '-odd',
    ]);
    const gp = buildGrepArgv('grep-p', 'a', '.', { glob: '*.{c,h}', excludes: ['.git'] });
    expect(gp).toEqual([
      'grep',
      '-rnH',
      '--binary-files=without-match',
      '-P',
      '--null',
      '--include=*.c',
      '--include=*.h',
      '--exclude-dir=.git',
      '--exclude=.git',
      '-e',
      'a',
      '--',
      '.',
    ]);
    const ge = buildGrepArgv('grep-e', '\\d', '.', { excludes: [], maxCount: 5 });
    expect(ge).toEqual([
      'grep',
      '-rnH',
      '--binary-files=without-match',
      '-E',
      '-m',
      '5',
      '-e',
      '[0-9]',
      '--',
      '.',
    ]);
  });

  it('buildFindArgv: fd and find take the name part; find prunes excludes', () => {
    expect(buildFindArgv({ backend: 'fd', command: 'fdfind' }, 'src/*.ts', 'a', ['x'])).toEqual([
      'fdfind',
      '--type',
      'f',
      '--color',
      'never',
      '--exclude',
      'x',
      '--glob',
      '--',
      '*.ts',
      'a',
    ]);
    expect(buildFindArgv({ backend: 'find' }, '*.{a,b}', '.', ['x', 'y'])).toEqual([
      'find',
      '.',
      '-mindepth',
      '1',
      '(',
      '-name',
      'x',
      '-o',
      '-name',
      'y',
      ')',
      '-prune',
      '-o',
      '-type',
      'f',
      '-print',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// grep, once per backend

const BACKENDS: GrepBackend[] = ['rg', 'grep-p', 'grep-e'];

describe.each(BACKENDS)('grep (%s)', (backend) => {
  const tool = createGrepTool({ backend });
  const grep = (pattern: string, more: Record<string, unknown> = {}, ctx = makeCtx(root)) =>
    exec(tool, grepInput(pattern, more), ctx);

  it('lists path:line:text sorted by path and line, skipping the default excludes', async () => {
    const out = okText(await grep('hello'));
    expect(out).toBe(
      [
        'README.md:1:hello readme',
        'crlf.txt:1:hello windows',
        'docs/guide.md:1:say hello',
        'src/deep/nested/file.ts:1:hello nested',
        'src/main.ts:1:const hello = 1;',
        'src/notes.txt:1:hello text',
        'src/util.ts:2:// hello again',
        '',
        '[7 matches]',
      ].join('\n'),
    );
  });

  it('says so when nothing matches', async () => {
    expect(okText(await grep('no-such-text-anywhere'))).toBe('No matches found.');
  });

  it('stops at the limit and says so; exactly the limit is not "reached"', async () => {
    const out = okText(await grep('hello', { limit: 2 }));
    expect(out).toBe(
      'README.md:1:hello readme\ncrlf.txt:1:hello windows\n\n[2 matches, limit reached]',
    );
    expect(okText(await grep('hello', { limit: 7 }))).toMatch(/\n\n\[7 matches\]$/u);
  });

  it('counts the limit across matches within one file', async () => {
    const dir = await mkdtemp(join(scratch, 'many-'));
    await plant(dir, { 'many.txt': 'hit\n'.repeat(10) });
    const out = okText(await grep('hit', { limit: 4 }, makeCtx(dir)));
    expect(matchLines(out)).toEqual([
      'many.txt:1:hit',
      'many.txt:2:hit',
      'many.txt:3:hit',
      'many.txt:4:hit',
    ]);
    expect(out.endsWith('[4 matches, limit reached]')).toBe(true);
  });

  it('reads a pattern starting with - as the pattern', async () => {
    expect(okText(await grep('--verbose'))).toBe(
      'flags.txt:1:use --verbose for more\n\n[1 matches]',
    );
  });

  it('filters by glob: a name, braces, and a path glob with /', async () => {
    const ts = matchLines(okText(await grep('hello', { glob: '*.ts' })));
    expect(ts).toEqual([
      'src/deep/nested/file.ts:1:hello nested',
      'src/main.ts:1:const hello = 1;',
      'src/util.ts:2:// hello again',
    ]);
    const docs = matchLines(okText(await grep('hello', { glob: '*.{md,txt}' })));
    expect(docs).toEqual([
      'README.md:1:hello readme',
      'crlf.txt:1:hello windows',
      'docs/guide.md:1:say hello',
      'src/notes.txt:1:hello text',
    ]);
    const deep = matchLines(okText(await grep('hello', { glob: 'deep/**/*.ts', path: 'src' })));
    expect(deep).toEqual(['src/deep/nested/file.ts:1:hello nested']);
    const top = matchLines(okText(await grep('hello', { glob: 'src/*.ts' })));
    expect(top).toEqual(['src/main.ts:1:const hello = 1;', 'src/util.ts:2:// hello again']);
  });

  it('searches a subdirectory, keeping paths relative to the working directory', async () => {
    const lines = matchLines(okText(await grep('hello', { path: 'src/deep' })));
    expect(lines).toEqual(['src/deep/nested/file.ts:1:hello nested']);
  });

  it('searches a single file given as the path', async () => {
    expect(okText(await grep('[Hh]ello', { path: 'src/main.ts' }))).toBe(
      'src/main.ts:1:const hello = 1;\nsrc/main.ts:2:export function Hello() {}\n\n[2 matches]',
    );
  });

  it('searches an excluded directory or file when it is the path asked for', async () => {
    expect(matchLines(okText(await grep('hello', { path: 'node_modules' })))).toEqual([
      'node_modules/pkg/index.js:1:hello from a dependency',
    ]);
    const dir = await mkdtemp(join(scratch, 'build-'));
    await plant(dir, { build: 'hello build script\n' });
    expect(matchLines(okText(await grep('hello', { path: 'build' }, makeCtx(dir))))).toEqual([
      'build:1:hello build script',
    ]);
  });

  it('honours the exclude setting, including a .git directory', async () => {
    const none = makeCtx(root, { config: { exclude: [] } });
    const all = matchLines(okText(await grep('hello from', {}, none)));
    expect(all).toContain('node_modules/pkg/index.js:1:hello from a dependency');
    expect(all).toContain('dist/out.js:1:hello from dist');
    const some = makeCtx(root, { config: { exclude: ['node_modules', 'docs'] } });
    const lines = matchLines(okText(await grep('hello', {}, some)));
    expect(lines).toContain('dist/out.js:1:hello from dist');
    expect(lines.some((l) => l.startsWith('docs/') || l.startsWith('node_modules/'))).toBe(false);
    // .git is skipped by the default excludes even for grep, which does not skip hidden files.
    const dotted = matchLines(okText(await grep('hello from git')));
    expect(dotted).toEqual(['No matches found.']);
  });

  it('shows absolute paths for a directory outside the working directory', async () => {
    const expected = `${join(outside, 'far.txt')}:1:hello from afar\n\n[1 matches]`;
    expect(okText(await grep('afar', { path: outside }))).toBe(expected);
    expect(okText(await grep('afar', { path: `../${basename(outside)}` }))).toBe(expected);
  });

  it('reports a path that does not exist', async () => {
    expect(errorOf(await grep('x', { path: 'nope/missing' })).error).toBe(
      'Path not found: nope/missing',
    );
  });

  it('cuts a long matched line to 500 bytes on a character boundary', async () => {
    const dir = await mkdtemp(join(scratch, 'long-'));
    await plant(dir, { 'long.txt': `needle ${'ü'.repeat(1000)}\n` });
    const line = matchLines(okText(await grep('needle', {}, makeCtx(dir))))[0] ?? '';
    const text = line.slice('long.txt:1:'.length);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(GREP_MAX_LINE_BYTES);
    expect(Buffer.byteLength(text)).toBeGreaterThan(GREP_MAX_LINE_BYTES - 4);
    expect(text.startsWith('needle üü')).toBe(true);
    expect(text.endsWith(HEAD_CUT_MARKER)).toBe(true);
    expect(text).not.toContain('\uFFFD');
  });

  it('head-truncates a long result and saves the full text', async () => {
    const dir = await mkdtemp(join(scratch, 'big-'));
    await plant(dir, { 'big.txt': 'match\n'.repeat(2500) });
    const fs = memoryFs();
    const big = createGrepTool({ backend, fs });
    const ctx = makeCtx(dir);
    const out = okText(await exec(big, grepInput('match', { limit: 3000 }), ctx));
    const lines = out.split('\n');
    expect(lines[0]).toBe('big.txt:1:match');
    expect(lines[1999]).toBe('big.txt:2000:match');
    const savedPath = `/fake-tmp/flemma_grep_${ctx.tool_id}.txt`;
    expect(lines.slice(2000)).toEqual([
      '',
      `[Showing lines 1-2000 of 2500. Full output: ${savedPath}]`,
      '',
      '[2500 matches]',
    ]);
    expect(fs.saved.get(savedPath)?.split('\n')).toHaveLength(2500);
  });

  it('fails with the exit code and message on a broken pattern', async () => {
    const { error } = errorOf(await grep('a(', {}));
    expect(error).toMatch(/^Search failed with exit code 2\n\S/u);
  });

  it('times out a search that does not finish', async () => {
    const dir = await mkdtemp(join(scratch, 'fifo-'));
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    const ctx = makeCtx(dir, { timeout: 0.2 });
    expect(errorOf(await grep('x', { path: 'pipe' }, ctx))).toEqual({
      error: 'Search timed out after 0.2 seconds.',
      partialOutput: undefined,
    });
  });

  it('is cancelled through the context signal', async () => {
    const dir = await mkdtemp(join(scratch, 'fifo-'));
    const pipe = join(dir, 'pipe');
    execFileSync('mkfifo', [pipe]);
    const controller = new AbortController();
    const pending = grep('x', { path: 'pipe' }, makeCtx(dir, { signal: controller.signal }));
    // Opening the FIFO for writing returns once the search has opened it: it is running.
    const writer = await open(pipe, 'w');
    controller.abort();
    const outcome = await pending;
    await writer.close();
    expect(outcome).toEqual({ ok: false, error: 'Cancelled' });
  });
});

describe('grep: backend specifics', () => {
  it('rg and grep -P keep a file name containing :<digits>:', async () => {
    const dir = await mkdtemp(join(scratch, 'colon-'));
    await plant(dir, { 'odd:12:name.txt': 'hello colon\n' });
    for (const backend of ['rg', 'grep-p'] as const) {
      const out = okText(await exec(createGrepTool({ backend }), grepInput('colon'), makeCtx(dir)));
      expect(out).toBe('odd:12:name.txt:1:hello colon\n\n[1 matches]');
    }
  });

  it('grep -E understands \\d \\w \\s through the rewrite', async () => {
    const tool = createGrepTool({ backend: 'grep-e' });
    const out = okText(await exec(tool, grepInput('x = \\d;'), makeCtx(root)));
    expect(out).toBe('src/util.ts:1:export const x = 2;\n\n[1 matches]');
  });

  it('rg finds nothing in hidden directories without an exclude (its own default)', async () => {
    const tool = createGrepTool({ backend: 'rg' });
    const ctx = makeCtx(root, { config: { exclude: [] } });
    expect(okText(await exec(tool, grepInput('hello from git'), ctx))).toBe('No matches found.');
  });

  it('grep without excludes does search .git', async () => {
    const tool = createGrepTool({ backend: 'grep-p' });
    const ctx = makeCtx(root, { config: { exclude: [] } });
    expect(okText(await exec(tool, grepInput('hello from git'), ctx))).toBe(
      '.git/config:1:hello from git\n\n[1 matches]',
    );
  });
});

describe('grep: process handling (fake runner)', () => {
  const rgMatch = (path: string, line: number, text: string) =>
    JSON.stringify({
      type: 'match',
      data: { path: { text: path }, lines: { text: `${text}\n` }, line_number: line },
    });

  it('runs in ctx.cwd with the timeout from the context, or tools.grep.timeout', async () => {
    const run = fakeRun({ exitCode: 1 });
    const tool = createGrepTool({ backend: 'rg', run });
    await exec(tool, grepInput('x'), makeCtx(root, { timeout: 7 }));
    await exec(tool, grepInput('x'), makeCtx(root, { timeout: 7, config: { timeout: 3 } }));
    expect(run.calls.map((c) => [c.options.cwd, c.options.timeoutMs])).toEqual([
      [root, 7000],
      [root, 3000],
    ]);
    expect(run.calls[0]?.argv).toEqual([
      'rg',
      '--json',
      '--no-messages',
      '-m',
      '101',
      ...DEFAULT_EXCLUDES.flatMap((x) => ['--glob', `!${x}`]),
      '-e',
      'x',
      '--',
      '.',
    ]);
  });

  it('gives grep a directory as <dir>/. and a file with no excludes or glob', async () => {
    const run = fakeRun({ exitCode: 1 });
    const tool = createGrepTool({ backend: 'grep-p', run });
    await exec(tool, grepInput('x', { path: 'src' }), makeCtx(root));
    await exec(tool, grepInput('x', { path: 'src/main.ts', glob: '*.md' }), makeCtx(root));
    expect(run.calls[0]?.argv.at(-1)).toBe('src/.');
    expect(run.calls[1]?.argv).toEqual([
      'grep',
      '-rnH',
      '--binary-files=without-match',
      '-P',
      '--null',
      '-m',
      '101',
      '-e',
      'x',
      '--',
      'src/main.ts',
    ]);
  });

  it('reports a timeout with the matches found so far', async () => {
    const run = fakeRun({
      exitCode: null,
      signal: 'SIGTERM',
      timedOut: true,
      output: `${rgMatch('./b.ts', 2, 'two')}\n${rgMatch('./a.ts', 1, 'one')}\n{"type":"mat`,
    });
    const tool = createGrepTool({ backend: 'rg', run });
    expect(errorOf(await exec(tool, grepInput('x'), makeCtx(root, { timeout: 4 })))).toEqual({
      error: 'Search timed out after 4 seconds.',
      partialOutput: 'a.ts:1:one\nb.ts:2:two',
    });
  });

  it('keeps matches when the exit status is 2 (an unreadable file)', async () => {
    const run = fakeRun({ exitCode: 2, output: rgMatch('a.ts', 1, 'one'), stderr: 'denied' });
    const tool = createGrepTool({ backend: 'rg', run });
    expect(okText(await exec(tool, grepInput('x'), makeCtx(root)))).toBe(
      'a.ts:1:one\n\n[1 matches]',
    );
  });

  it('reports a program that cannot start', async () => {
    const run = fakeRun({ exitCode: null, startError: 'spawn rg ENOENT' });
    const tool = createGrepTool({ backend: 'rg', run });
    expect(errorOf(await exec(tool, grepInput('x'), makeCtx(root))).error).toBe(
      'Failed to start the search: spawn rg ENOENT',
    );
  });

  it('reports a sandbox that cannot wrap the command, and runs nothing', async () => {
    const run = fakeRun({});
    const tool = createGrepTool({ backend: 'rg', run });
    const ctx = makeCtx(root, {
      sandbox: sandbox(() => Promise.resolve({ ok: false, error: 'bwrap is not installed' })),
    });
    expect(errorOf(await exec(tool, grepInput('x'), ctx)).error).toBe(
      'Sandbox error: bwrap is not installed',
    );
    expect(run.calls).toHaveLength(0);
  });

  it('runs the argv the sandbox returns', async () => {
    const asked: string[][] = [];
    const ctx = makeCtx(root, {
      sandbox: sandbox((argv) => {
        asked.push([...argv]);
        return Promise.resolve({ ok: true, argv: ['bwrap', '--ro-bind', '/', '/', ...argv] });
      }),
    });
    const run = fakeRun({ exitCode: 1 });
    await exec(createGrepTool({ backend: 'grep-p', run }), grepInput('x'), ctx);
    expect(asked[0]?.[0]).toBe('grep');
    expect(run.calls[0]?.argv).toEqual(['bwrap', '--ro-bind', '/', '/', ...(asked[0] ?? [])]);
  });

  it('does not start when the signal is already aborted', async () => {
    const run = fakeRun({});
    const controller = new AbortController();
    controller.abort();
    const tool = createGrepTool({ backend: 'rg', run });
    const outcome = await exec(tool, grepInput('x'), makeCtx(root, { signal: controller.signal }));
    expect(outcome).toEqual({ ok: false, error: 'Cancelled' });
    expect(run.calls).toHaveLength(0);
  });

  it('refuses an empty pattern', async () => {
    expect(errorOf(await exec(grepTool, grepInput(''), makeCtx(root))).error).toBe(
      'No pattern provided',
    );
  });
});

// ---------------------------------------------------------------------------------------------
// find

let repo: string; // a git work tree

beforeAll(async () => {
  repo = await mkdtemp(join(tmpdir(), 'flemma-repo-'));
  await plant(repo, {
    'README.md': 'readme\n',
    'src/app.ts': '',
    'src/app.test.ts': '',
    'src/ui/Button.tsx': '',
    'src/ui/button.css': '',
    'lib/helper.ts': '',
    'gone.ts': '',
    'ignored.log': '',
    '.gitignore': '*.log\n',
    'node_modules/dep/index.ts': '',
    'untracked.ts': '',
  });
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: repo, stdio: 'ignore', env: { ...process.env, HOME: repo } });
  git('init', '-q');
  git('add', 'README.md', 'src', 'lib', 'gone.ts', '.gitignore');
  git('add', '-f', 'node_modules/dep/index.ts');
  // Tracked in the index but deleted from the work tree: not a file any more.
  await unlink(join(repo, 'gone.ts'));
});

afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

describe.each(['git', 'find'] as const)('find (%s)', (backend) => {
  const tool = createFindTool({ backend });
  const find = (pattern: string, more: Record<string, unknown> = {}, ctx = makeCtx(repo)) =>
    exec(tool, findInput(pattern, more), ctx);

  it('matches file names at any depth, sorted, skipping excludes', async () => {
    expect(okText(await find('*.ts'))).toBe(
      ['lib/helper.ts', 'src/app.test.ts', 'src/app.ts', 'untracked.ts'].join('\n'),
    );
  });

  it('matches paths for a pattern with /, braces and ** spanning directories', async () => {
    expect(okText(await find('src/**/*.{ts,tsx}'))).toBe(
      ['src/app.test.ts', 'src/app.ts', 'src/ui/Button.tsx'].join('\n'),
    );
    expect(okText(await find('src/*.ts'))).toBe('src/app.test.ts\nsrc/app.ts');
  });

  it('searches a subdirectory, paths still relative to the working directory', async () => {
    expect(okText(await find('*', { path: 'src/ui' }))).toBe(
      'src/ui/Button.tsx\nsrc/ui/button.css',
    );
  });

  it('finds files inside an excluded directory when it is the path asked for', async () => {
    expect(okText(await find('*.ts', { path: 'node_modules' }))).toBe('node_modules/dep/index.ts');
  });

  it('says so when nothing matches', async () => {
    expect(okText(await find('*.rs'))).toBe('No files found matching pattern.');
  });

  it('cuts the list at the limit with a note', async () => {
    expect(okText(await find('*.ts', { limit: 2 }))).toBe(
      'lib/helper.ts\nsrc/app.test.ts\n\n' +
        '[Results limited to 2 entries. Narrow your pattern for more specific results.]',
    );
    expect(okText(await find('*.ts', { limit: 4 }))).not.toContain('[Results limited');
  });

  it('reports a missing directory and a file given as the directory', async () => {
    expect(errorOf(await find('*', { path: 'missing' })).error).toBe(
      'Directory not found: missing',
    );
    expect(errorOf(await find('*', { path: 'README.md' })).error).toBe(
      'Not a directory: README.md',
    );
  });
});

describe('find: backend specifics', () => {
  it('shows absolute paths for a directory outside the working directory', async () => {
    const tool = createFindTool({ backend: 'find' });
    expect(okText(await exec(tool, findInput('*.txt', { path: outside }), makeCtx(repo)))).toBe(
      join(outside, 'far.txt'),
    );
  });

  it.runIf(!fdInstalled)('without fd: git inside a work tree, else find', async () => {
    const signal = new AbortController().signal;
    expect(await chooseFindPlan(join(repo, 'src'), runProcess, signal)).toEqual({ backend: 'git' });
    expect(await chooseFindPlan(outside, runProcess, signal)).toEqual({ backend: 'find' });
    const out = okText(await exec(findTool, findInput('*.txt', { path: outside }), makeCtx(repo)));
    expect(out).toBe(join(outside, 'far.txt'));
  });

  it('git lists untracked files but not ignored ones or deleted ones', async () => {
    const out = okText(
      await exec(createFindTool({ backend: 'git' }), findInput('*'), makeCtx(repo)),
    );
    expect(out.split('\n')).toContain('untracked.ts');
    expect(out).not.toContain('ignored.log');
    expect(out).not.toContain('gone.ts');
  });

  it('find lists every file, ignored ones included, and a directory starting with -', async () => {
    const dir = await mkdtemp(join(scratch, 'dash-'));
    await plant(dir, { '-odd/a.txt': '', '.git/HEAD': '', 'b.log': '' });
    const tool = createFindTool({ backend: 'find' });
    expect(okText(await exec(tool, findInput('*', { path: '-odd' }), makeCtx(dir)))).toBe(
      '-odd/a.txt',
    );
    expect(okText(await exec(tool, findInput('*'), makeCtx(dir)))).toBe('-odd/a.txt\nb.log');
    const all = makeCtx(dir, { config: { exclude: [] } });
    expect(okText(await exec(tool, findInput('*'), all))).toBe('-odd/a.txt\n.git/HEAD\nb.log');
  });

  it('fd: runs fd with the name part and filters its output here', async () => {
    const run = fakeRun({
      output: ['src/a.ts', 'src/b.js', 'src/deep/c.ts', 'node_modules/x/d.ts', 'lib/e.ts', ''].join(
        '\n',
      ),
    });
    const tool = createFindTool({ backend: 'fd', fdCommand: 'fdfind', run });
    const out = okText(await exec(tool, findInput('src/**/*.ts'), makeCtx(root)));
    expect(out).toBe('src/a.ts\nsrc/deep/c.ts');
    expect(run.calls[0]?.argv).toEqual([
      'fdfind',
      '--type',
      'f',
      '--color',
      'never',
      ...DEFAULT_EXCLUDES.flatMap((x) => ['--exclude', x]),
      '--glob',
      '--',
      '*.ts',
      '.',
    ]);
    expect(run.calls[0]?.options.cwd).toBe(root);
  });

  it('fd: exit status 1 without a message means no results', async () => {
    const run = fakeRun({ exitCode: 1 });
    const tool = createFindTool({ backend: 'fd', run });
    expect(okText(await exec(tool, findInput('*.zz'), makeCtx(root)))).toBe(
      'No files found matching pattern.',
    );
  });

  it('a failure with nothing found is an error: stderr, else the exit code', async () => {
    const withText = createFindTool({
      backend: 'find',
      run: fakeRun({ exitCode: 1, stderr: "find: '.': Permission denied\n" }),
    });
    expect(errorOf(await exec(withText, findInput('*'), makeCtx(root))).error).toBe(
      "find: '.': Permission denied",
    );
    const bare = createFindTool({ backend: 'find', run: fakeRun({ exitCode: 3 }) });
    expect(errorOf(await exec(bare, findInput('*'), makeCtx(root))).error).toBe(
      'Command exited with code 3',
    );
  });

  it('a failure with results still returns the results', async () => {
    const run = fakeRun({ exitCode: 1, output: './x.ts\n', stderr: 'Permission denied' });
    const tool = createFindTool({ backend: 'find', run });
    expect(okText(await exec(tool, findInput('*.ts'), makeCtx(root)))).toBe('x.ts');
  });

  it('head-truncates a huge list, names the saved file, and notes the limit', async () => {
    const paths = Array.from({ length: 2600 }, (_, i) => `f${String(i).padStart(4, '0')}.ts`);
    const fs = memoryFs();
    const tool = createFindTool({ backend: 'fd', run: fakeRun({ output: paths.join('\n') }), fs });
    const ctx = makeCtx(root);
    const out = okText(await exec(tool, findInput('*.ts', { limit: 2500 }), ctx));
    const lines = out.split('\n');
    expect(lines.slice(0, 2000)).toEqual(paths.slice(0, 2000));
    const saved = `/fake-tmp/flemma_find_${ctx.tool_id}.txt`;
    expect(lines.slice(2000)).toEqual([
      '',
      `[Showing 2000 of 2500 results (truncated). Narrow your pattern for more specific results. Full output: ${saved}]`,
      '[Results limited to 2500 entries. Narrow your pattern for more specific results.]',
    ]);
    expect(fs.saved.get(saved)?.split('\n')).toEqual(paths.slice(0, 2500));
  });

  it('defaults to 500 results', async () => {
    const paths = Array.from({ length: 501 }, (_, i) => `g${String(i).padStart(3, '0')}.ts`);
    const tool = createFindTool({ backend: 'fd', run: fakeRun({ output: paths.join('\n') }) });
    const out = okText(await exec(tool, findInput('*.ts'), makeCtx(root)));
    expect(out.split('\n\n')[0]?.split('\n')).toHaveLength(FIND_DEFAULT_LIMIT);
    expect(out).toContain(`[Results limited to ${FIND_DEFAULT_LIMIT} entries.`);
  });

  it('reports a timeout with the files found so far, using tools.find.timeout', async () => {
    const run = fakeRun({ exitCode: null, timedOut: true, output: 'b.ts\na.ts\nc.js\n' });
    const tool = createFindTool({ backend: 'find', run });
    const ctx = makeCtx(root, { timeout: 30, config: { timeout: 2 } });
    expect(errorOf(await exec(tool, findInput('*.ts'), ctx))).toEqual({
      error: 'Find timed out after 2 seconds.',
      partialOutput: 'a.ts\nb.ts',
    });
    expect(run.calls[0]?.options.timeoutMs).toBe(2000);
  });

  it('reports a cancelled run as Cancelled, and does not start when already aborted', async () => {
    const cancelled = fakeRun({ exitCode: null, cancelled: true, output: 'a.ts\n' });
    const tool = createFindTool({ backend: 'find', run: cancelled });
    expect(await exec(tool, findInput('*'), makeCtx(root))).toEqual({
      ok: false,
      error: 'Cancelled',
    });
    const run = fakeRun({});
    const controller = new AbortController();
    controller.abort();
    const ctx = makeCtx(root, { signal: controller.signal });
    const outcome = await exec(createFindTool({ backend: 'find', run }), findInput('*'), ctx);
    expect(outcome).toEqual({ ok: false, error: 'Cancelled' });
    expect(run.calls).toHaveLength(0);
  });

  it('reports a sandbox that cannot wrap the command', async () => {
    const run = fakeRun({});
    const ctx = makeCtx(root, {
      sandbox: sandbox(() => Promise.resolve({ ok: false, error: 'no backend' })),
    });
    const outcome = await exec(createFindTool({ backend: 'find', run }), findInput('*'), ctx);
    expect(errorOf(outcome).error).toBe('Sandbox error: no backend');
    expect(run.calls).toHaveLength(0);
  });
});

// ---------------------------------------------------------------------------------------------
// ls

describe('ls', () => {
  let tree: string;

  beforeAll(async () => {
    tree = await mkdtemp(join(scratch, 'ls-'));
    await plant(tree, {
      'b.txt': '',
      'A.md': '',
      'c.TXT': '',
      '.hidden': '',
      'Zeta/z1.txt': '',
      'alpha/a1.txt': '',
      'alpha/Beta/b1.txt': '',
      'alpha/Beta/deeper/d1.txt': '',
      'node_modules/pkg/index.js': '',
      '.git/HEAD': '',
    });
    await mkdir(join(tree, 'empty'));
    await symlink(join(tree, 'alpha'), join(tree, 'link-to-alpha'));
    await symlink(join(tree, 'b.txt'), join(tree, 'link-to-b'));
  });

  const ls = (path: string, more: Record<string, unknown> = {}, ctx = makeCtx(tree)) =>
    exec(lsTool, lsInput(path, more), ctx);

  it('lists directories first with /, then files, case-insensitively', async () => {
    expect(okText(await ls('.'))).toBe(
      [
        '.git/',
        'alpha/',
        'empty/',
        'link-to-alpha/',
        'node_modules/',
        'Zeta/',
        '.hidden',
        'A.md',
        'b.txt',
        'c.TXT',
        'link-to-b',
        '',
        '[11 entries]',
      ].join('\n'),
    );
  });

  it('descends to max_depth, not into excluded directories or links', async () => {
    expect(okText(await ls('.', { max_depth: 2 }))).toBe(
      [
        '.git/',
        'alpha/',
        'alpha/Beta/',
        'empty/',
        'link-to-alpha/',
        'node_modules/',
        'Zeta/',
        '.hidden',
        'A.md',
        'alpha/a1.txt',
        'b.txt',
        'c.TXT',
        'link-to-b',
        'Zeta/z1.txt',
        '',
        '[14 entries, depth=2]',
      ].join('\n'),
    );
    const deep = okText(await ls('alpha', { max_depth: 50 }));
    expect(deep).toBe(
      [
        'Beta/',
        'Beta/deeper/',
        'a1.txt',
        'Beta/b1.txt',
        'Beta/deeper/d1.txt',
        '',
        '[5 entries, depth=10]',
      ].join('\n'),
    );
  });

  it('expands excluded directories when the exclude setting is empty', async () => {
    const out = okText(await ls('.', { max_depth: 2 }, makeCtx(tree, { config: { exclude: [] } })));
    expect(out).toContain('node_modules/pkg/');
    expect(out).toContain('.git/HEAD');
  });

  it('stops at the limit, keeping the shallowest entries, and says so', async () => {
    expect(okText(await ls('.', { max_depth: 3, limit: 3 }))).toBe(
      '.git/\n.hidden\nA.md\n\n[3 entries, depth=3]\n' +
        '[Listing limited to 3 entries. Raise limit or list a subdirectory to see more.]',
    );
    expect(okText(await ls('alpha', { limit: 2 }))).toBe('Beta/\na1.txt\n\n[2 entries]');
  });

  it('lists an empty directory', async () => {
    expect(okText(await ls('empty'))).toBe('[0 entries]');
  });

  it('resolves the path against ctx.cwd, not the chat file directory', async () => {
    const ctx = makeCtx(join(tree, 'alpha'), { filename: join(tree, 'Zeta', 'chat.chat') });
    expect(okText(await ls('.', {}, ctx))).toBe('Beta/\na1.txt\n\n[2 entries]');
    expect(okText(await ls(join(tree, 'Zeta'), {}, ctx))).toBe('z1.txt\n\n[1 entries]');
  });

  it('reports a missing directory, a file, and a missing path', async () => {
    expect(errorOf(await ls('nope')).error).toBe('Directory not found: nope');
    expect(errorOf(await ls('b.txt')).error).toBe('Not a directory: b.txt');
    expect(errorOf(await exec(lsTool, lsInput(''), makeCtx(tree))).error).toBe('No path provided');
  });

  // Root can read any directory, so this one only runs as an ordinary user.
  it.skipIf(process.getuid?.() === 0)('reports a directory it cannot read', async () => {
    const dir = await mkdtemp(join(scratch, 'locked-'));
    await chmod(dir, 0o000);
    try {
      expect(errorOf(await ls(dir)).error).toMatch(/^Cannot list .*EACCES/u);
    } finally {
      await chmod(dir, 0o700);
    }
  });

  it('stops when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const outcome = await ls('.', {}, makeCtx(tree, { signal: controller.signal }));
    expect(outcome).toEqual({ ok: false, error: 'Cancelled' });
  });

  it('head-truncates a long listing and saves the full text', async () => {
    const dir = await mkdtemp(join(scratch, 'wide-'));
    await Promise.all(
      Array.from({ length: 2100 }, (_, i) =>
        writeFile(join(dir, `f${String(i).padStart(4, '0')}`), ''),
      ),
    );
    const fs = memoryFs();
    const ctx = makeCtx(dir);
    const out = okText(await exec(createLsTool({ fs }), lsInput('.', { limit: 5000 }), ctx));
    const saved = `/fake-tmp/flemma_ls_${ctx.tool_id}.txt`;
    expect(out.split('\n').slice(1998)).toEqual([
      'f1998',
      'f1999',
      '',
      `[Showing lines 1-2000 of 2100. Full output: ${saved}]`,
      '',
      '[2100 entries]',
    ]);
    expect(fs.saved.get(saved)?.split('\n')).toHaveLength(2100);
  });
});
