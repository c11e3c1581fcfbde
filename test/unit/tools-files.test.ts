// The read, write and edit tools against real files in a temp directory laid out as
//   <root>/home/project/chat.chat   the chat file (its directory is where paths resolve)
//   <root>/cwd                      the working directory, deliberately elsewhere
//   <root>/home                     the home directory used for `@~/` references
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { TextSegment } from '../../src/core/chat/ast.js';
import { splitFileReferences } from '../../src/core/chat/filerefs.js';
import {
  type ContextInit,
  type SandboxAccess,
  createExecutionContext,
  noSandbox,
} from '../../src/core/tools/context.js';
import { editTool } from '../../src/core/tools/definitions/edit.js';
import {
  createReadTool,
  encodeReferencePath,
  fileReference,
  isTextMime,
  readTool,
} from '../../src/core/tools/definitions/read.js';
import { writeTool } from '../../src/core/tools/definitions/write.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../../src/core/tools/registry.js';
import type { TruncateFs } from '../../src/core/tools/truncate.js';

let root: string;
let home: string;
let project: string;
let cwd: string;
let overflowDir: string;
let read: ToolDefinition;

beforeEach(async () => {
  root = realpathSync(await mkdtemp(join(tmpdir(), 'flemma-files-')));
  home = join(root, 'home');
  project = join(home, 'project');
  cwd = join(root, 'cwd');
  overflowDir = join(root, 'overflow');
  for (const d of [project, cwd, overflowDir]) await mkdir(d, { recursive: true });
  const truncateFs: TruncateFs = {
    writeFile: (path, data) => writeFile(path, data, 'utf8'),
    tmpdir: () => overflowDir,
  };
  read = createReadTool({ home, truncateFs });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function context(extra: Partial<ContextInit> = {}): ToolContext {
  const init: ContextInit = {
    bufnr: 1,
    cwd,
    timeout: 30,
    toolId: 'toolu_f1',
    filename: join(project, 'chat.chat'),
  };
  Object.assign(init, extra);
  return createExecutionContext(init, home);
}

/** A context for a chat that was never saved (no file name). */
function unsavedContext(): ToolContext {
  return createExecutionContext({ bufnr: 1, cwd, timeout: 30, toolId: 'toolu_f1' }, home);
}

function run(def: ToolDefinition, input: unknown, ctx = context()): Promise<ToolOutcome> {
  if (def.execute === undefined) throw new Error(`${def.name} has no execute`);
  return def.execute(input, ctx);
}

/** The text of a successful outcome; fails the test for anything else. */
/** The outcome of a call refused with `error`. */
function refused(error: string): ToolOutcome {
  return { ok: false, error };
}

function outputOf(outcome: ToolOutcome): string {
  if (!outcome.ok || typeof outcome.output !== 'string') {
    throw new Error(`expected text output, got ${JSON.stringify(outcome)}`);
  }
  return outcome.output;
}

const readCall = (path: unknown, offset: unknown = null, limit: unknown = null) => ({
  label: 'test',
  path,
  offset,
  limit,
});

/** A sandbox that is enabled and lets only paths below `writable` be written. */
function sandboxAllowing(writable: string, enabled = true): SandboxAccess {
  return {
    enabled,
    is_path_writable: (path) => path === writable || path.startsWith(`${writable}/`),
    wrap_command: (argv) => Promise.resolve({ ok: true, argv: [...argv] }),
    scrub_env: (env) => noSandbox.scrub_env(env),
  };
}

/** A strict schema that takes no other keys and requires exactly `required` (sorted). */
function expectStrictSchema(def: ToolDefinition, required: string[]): void {
  expect(def.strict).toBe(true);
  expect(def.inputSchema['additionalProperties']).toBe(false);
  expect([...(def.inputSchema['required'] as string[])].sort()).toEqual(required);
}

const numbered = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`);

/** What the chat parser reads back from a reference the tool wrote. */
function parsedReference(reference: string) {
  const segment: TextSegment = {
    kind: 'text',
    value: `see ${reference} here`,
    span: { startLine: 1, endLine: 1, startCol: 0, endCol: 0 },
  };
  return splitFileReferences(segment).find((part) => part.kind === 'file_reference');
}

describe('read: text files', () => {
  it('returns the lines of a file next to the chat file', async () => {
    await writeFile(join(project, 'notes.txt'), 'alpha\nbeta\n\ngamma\n');
    await writeFile(join(cwd, 'notes.txt'), 'the wrong file\n');
    expect(await run(read, readCall('notes.txt'))).toEqual({
      ok: true,
      output: 'alpha\nbeta\n\ngamma',
    });
  });

  it('resolves against the working directory for an unsaved chat, and takes absolute paths', async () => {
    await writeFile(join(cwd, 'notes.txt'), 'from cwd');
    expect(await run(read, readCall('notes.txt'), unsavedContext())).toEqual({
      ok: true,
      output: 'from cwd',
    });
    expect(await run(read, readCall(join(cwd, 'notes.txt')))).toEqual({
      ok: true,
      output: 'from cwd',
    });
  });

  it('applies a 1-based offset and a limit, and says where to continue', async () => {
    await writeFile(join(project, 'ten.txt'), `${numbered(1, 10).join('\n')}\n`);
    expect(await run(read, readCall('ten.txt', 3, 2))).toEqual({
      ok: true,
      output: 'line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]',
    });
    expect(await run(read, readCall('ten.txt', 9))).toEqual({
      ok: true,
      output: 'line 9\nline 10',
    });
    expect(await run(read, readCall('ten.txt', 10, 5))).toEqual({ ok: true, output: 'line 10' });
    expect(await run(read, readCall('ten.txt', null, 1))).toEqual({
      ok: true,
      output: 'line 1\n\n[9 more lines in file. Use offset=2 to continue.]',
    });
    // Offsets below 1 read from the start; fractions are rounded down.
    expect(await run(read, readCall('ten.txt', 0, 1.9))).toEqual(
      await run(read, readCall('ten.txt', 1, 1)),
    );
  });

  it('refuses an offset beyond the end of the file', async () => {
    await writeFile(join(project, 'ten.txt'), `${numbered(1, 10).join('\n')}\n`);
    expect(await run(read, readCall('ten.txt', 11))).toEqual(
      refused('Offset 11 is beyond end of file (10 lines total)'),
    );
  });

  it('reads an empty file as (empty file)', async () => {
    await writeFile(join(project, 'empty.txt'), '');
    expect(await run(read, readCall('empty.txt'))).toEqual({ ok: true, output: '(empty file)' });
    expect(await run(read, readCall('empty.txt', 2))).toEqual(
      refused('Offset 2 is beyond end of file (0 lines total)'),
    );
  });

  it('keeps the start of a long file, numbers the notice in file lines, and saves the rest', async () => {
    await writeFile(join(project, 'long.txt'), `${numbered(1, 3000).join('\n')}\n`);
    const saved = join(overflowDir, 'flemma_read_toolu_long.txt');
    /** What read shows of lines `first` to `last` of the 3000, with the notice under them. */
    const shown = (first: number, last: number): ToolOutcome => ({
      ok: true,
      output:
        `${numbered(first, last).join('\n')}\n\n` +
        `[Showing lines ${first}-${last} of 3000. Full output: ${saved}]\n` +
        `[${3000 - last} more lines in file. Use offset=${last + 1} to continue.]`,
    });

    const whole = await run(read, readCall('long.txt'), context({ toolId: 'toolu_long' }));
    expect(whole).toEqual(shown(1, 2000));
    expect(await readFile(saved, 'utf8')).toBe(numbered(1, 3000).join('\n'));

    const later = await run(read, readCall('long.txt', 501), context({ toolId: 'toolu_long' }));
    expect(later).toEqual(shown(501, 2500));
  });

  it('reads JSON, SVG and files without a known extension as text', async () => {
    await writeFile(join(project, 'data.json'), '{"a": 1}\n');
    await writeFile(join(project, 'logo.svg'), '<svg/>\n');
    await writeFile(join(project, 'Makefile'), 'all:\n\ttrue\n');
    expect(await run(read, readCall('data.json'))).toEqual({ ok: true, output: '{"a": 1}' });
    expect(await run(read, readCall('logo.svg'))).toEqual({ ok: true, output: '<svg/>' });
    expect(await run(read, readCall('Makefile'))).toEqual({ ok: true, output: 'all:\n\ttrue' });
  });

  it('reports missing paths and files', async () => {
    expect(await run(read, readCall('nope.txt'))).toEqual(refused('File not found: nope.txt'));
    for (const path of ['', null, 3]) {
      expect(await run(read, readCall(path))).toEqual({ ok: false, error: 'No path provided' });
    }
    const dirResult = await run(read, readCall('.'));
    expect(dirResult.ok).toBe(false);
  });
});

describe('read: binary files', () => {
  it('returns a reference relative to the chat file, decided by extension', async () => {
    await mkdir(join(project, 'img'));
    // The content is irrelevant when the extension is known.
    await writeFile(join(project, 'img', 'shot.png'), 'not really a png');
    expect(await run(read, readCall('img/shot.png'))).toEqual({
      ok: true,
      output: '@./img/shot.png;type=image/png',
    });
    await writeFile(join(project, 'paper.PDF'), '%PDF-1.4');
    expect(await run(read, readCall('paper.PDF'))).toEqual({
      ok: true,
      output: '@./paper.PDF;type=application/pdf',
    });
  });

  it('sniffs files with an unknown extension for NUL bytes in their first 8 KB', async () => {
    await writeFile(join(project, 'blob.dat'), Buffer.from([0x41, 0x00, 0x42]));
    expect(await run(read, readCall('blob.dat'))).toEqual({
      ok: true,
      output: '@./blob.dat;type=application/octet-stream',
    });
    const late = Buffer.concat([Buffer.alloc(8192, 0x61), Buffer.from([0])]);
    await writeFile(join(project, 'late.dat'), late);
    const output = outputOf(await run(read, readCall('late.dat')));
    expect(output.startsWith('aaaa')).toBe(true);
  });

  it('uses @~/ outside the chat directory but inside home, and @// elsewhere', async () => {
    await mkdir(join(home, 'pics'));
    await writeFile(join(home, 'pics', 'cat.jpg'), 'x');
    await writeFile(join(cwd, 'dog.gif'), 'x');
    expect(await run(read, readCall('~/pics/cat.jpg'))).toEqual({
      ok: true,
      output: '@~/pics/cat.jpg;type=image/jpeg',
    });
    expect(await run(read, readCall(join(cwd, 'dog.gif')))).toEqual({
      ok: true,
      output: `@/${cwd}/dog.gif;type=image/gif`,
    });
  });

  it('never makes a relative reference for an unsaved chat', async () => {
    await writeFile(join(cwd, 'dog.gif'), 'x');
    expect(await run(read, readCall('dog.gif'), unsavedContext())).toEqual({
      ok: true,
      output: `@/${cwd}/dog.gif;type=image/gif`,
    });
  });

  it('percent-encodes characters the chat parser would stop at or decode', async () => {
    const name = 'a b#1%?;+\u00a0x.png';
    await writeFile(join(project, name), 'x');
    const result = await run(read, readCall(name));
    expect(result).toEqual({
      ok: true,
      output: '@./a%20b%231%25%3F%3B%2B%C2%A0x.png;type=image/png',
    });
    const parsed = parsedReference(outputOf(result));
    expect(parsed).toMatchObject({ path: `./${name}`, mime: 'image/png' });
  });

  it('writes references the parser reads back to the same file', () => {
    const cases: [string, string | undefined][] = [
      [join(project, 'sub dir', 'x y.webp'), project],
      [join(home, 'a;b', 'c.png'), project],
      ['/opt/some where/z.zip', project],
      ['/opt/z.zip', undefined],
    ];
    for (const [abs, chatDir] of cases) {
      const parsed = parsedReference(fileReference(abs, 'image/png', chatDir, home));
      expect(parsed?.kind).toBe('file_reference');
      if (parsed?.kind !== 'file_reference') continue;
      const path = parsed.path;
      const back = path.startsWith('./')
        ? join(chatDir ?? '', path)
        : path.startsWith('~/')
          ? join(home, path.slice(2))
          : path;
      expect(back).toBe(abs);
    }
    expect(encodeReferencePath('plain/path.png')).toBe('plain/path.png');
  });

  it('classifies MIME types as text or binary', () => {
    for (const mime of [
      'text/plain',
      'text/x-lua',
      'application/json',
      'application/javascript',
      'application/typescript',
      'image/svg+xml',
      'application/yaml',
      'application/toml',
      'application/sql',
    ]) {
      expect(isTextMime(mime)).toBe(true);
    }
    for (const mime of ['image/png', 'application/pdf', 'application/zip', 'font/woff2']) {
      expect(isTextMime(mime)).toBe(false);
    }
  });
});

describe('read: definition', () => {
  it('has the wire schema of the built-in', () => {
    expect(readTool.name).toBe('read');
    expect(readTool.strict).toBe(true);
    expect(readTool.async).toBeUndefined();
    const schema = readTool.inputSchema;
    expect(schema['additionalProperties']).toBe(false);
    expect([...(schema['required'] as string[])].sort()).toEqual([
      'label',
      'limit',
      'offset',
      'path',
    ]);
    const props = schema['properties'] as Record<string, Record<string, unknown>>;
    expect(props['path']?.['type']).toBe('string');
    expect(props['label']?.['type']).toBe('string');
    expect(props['offset']?.['type']).toEqual(['number', 'null']);
    expect(props['limit']?.['type']).toEqual(['number', 'null']);
  });

  it('previews the path and the range only when one is given', () => {
    const preview = (input: Record<string, unknown>) => readTool.formatPreview?.(input, 80);
    expect(preview({ path: 'config.lua', offset: 100, limit: 50, label: 'tail' })).toEqual({
      detail: ['config.lua', '+100,50'],
      label: 'tail',
    });
    expect(preview({ path: 'config.lua', offset: null, limit: 50 })).toEqual({
      detail: ['config.lua', '+0,50'],
      label: undefined,
    });
    expect(preview({ path: 'config.lua', offset: 7, limit: null })).toEqual({
      detail: ['config.lua', '+7'],
      label: undefined,
    });
    expect(preview({ path: 'config.lua', offset: null, limit: null, label: 'l' })).toEqual({
      detail: ['config.lua'],
      label: 'l',
    });
  });
});

const writeCall = (path: unknown, content: unknown) => ({ label: 'test', path, content });

describe('write', () => {
  it('creates missing parent directories and counts UTF-8 bytes', async () => {
    const result = await run(writeTool, writeCall('a/b/c.txt', 'héllo'));
    expect(result).toEqual({ ok: true, output: 'Successfully wrote 6 bytes to a/b/c.txt' });
    expect(await readFile(join(project, 'a', 'b', 'c.txt'), 'utf8')).toBe('héllo');
  });

  it('overwrites an existing file, and accepts empty content', async () => {
    const file = join(project, 'x.txt');
    await writeFile(file, 'old content');
    expect(await run(writeTool, writeCall('x.txt', 'new'))).toEqual({
      ok: true,
      output: 'Successfully wrote 3 bytes to x.txt',
    });
    expect(await readFile(file, 'utf8')).toBe('new');
    expect(await run(writeTool, writeCall('x.txt', ''))).toEqual({
      ok: true,
      output: 'Successfully wrote 0 bytes to x.txt',
    });
    expect((await stat(file)).size).toBe(0);
  });

  it('refuses missing content or path', async () => {
    for (const content of [undefined, null, 5]) {
      expect(await run(writeTool, writeCall('x.txt', content))).toEqual(
        refused('No content provided'),
      );
    }
    expect(await run(writeTool, writeCall('', 'x'))).toEqual(refused('No path provided'));
  });

  it('refuses paths outside the sandbox and writes inside it', async () => {
    const allowed = join(project, 'out');
    const ctx = context({ sandbox: sandboxAllowing(allowed) });
    expect(await run(writeTool, writeCall('secret.txt', 'x'), ctx)).toEqual(
      refused('Sandbox: write denied – path is outside writable directories: secret.txt'),
    );
    await expect(stat(join(project, 'secret.txt'))).rejects.toThrow();
    expect(await run(writeTool, writeCall('out/ok.txt', 'x'), ctx)).toMatchObject({ ok: true });
    expect(await readFile(join(allowed, 'ok.txt'), 'utf8')).toBe('x');
  });

  it('ignores the write policy while the sandbox is disabled', async () => {
    const ctx = context({ sandbox: sandboxAllowing(join(root, 'elsewhere'), false) });
    expect(await run(writeTool, writeCall('free.txt', 'x'), ctx)).toMatchObject({ ok: true });
  });

  it('reports a file that cannot be written', async () => {
    await writeFile(join(project, 'plain'), 'a file, not a directory');
    const result = await run(writeTool, writeCall('plain/child.txt', 'x'));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(/^Cannot write file: \S/);
    const onDir = await run(writeTool, writeCall('.', 'x'));
    expect(onDir.ok).toBe(false);
    if (!onDir.ok) expect(onDir.error).toMatch(/^Cannot write file: \S/);
  });

  it('has the wire schema of the built-in and previews path and size', () => {
    expectStrictSchema(writeTool, ['content', 'label', 'path']);
    const preview = (input: Record<string, unknown>) => writeTool.formatPreview?.(input, 80);
    expect(preview({ path: 'out.txt', content: 'x'.repeat(2355), label: 'log' })).toEqual({
      detail: ['out.txt', '(2.3KB)'],
      label: 'log',
    });
    expect(preview({ path: 'é.txt', content: 'é'.repeat(300) })).toEqual({
      detail: ['é.txt', '(600B)'],
      label: undefined,
    });
  });
});

const editCall = (path: unknown, oldText: unknown, newText: unknown) => ({
  label: 'test',
  path,
  oldText,
  newText,
});

/** The edit tool's outcome on code.ts, replacing `oldText` with `newText` (in `ctx` if given). */
const editCode = (oldText: unknown, newText: unknown, ctx?: ToolContext): Promise<ToolOutcome> =>
  run(editTool, editCall('code.ts', oldText, newText), ctx);

describe('edit', () => {
  let file: string;
  beforeEach(async () => {
    file = join(project, 'code.ts');
    await writeFile(file, 'const a = 1;\nconst b = 2;\nconst c = 1;\n');
  });

  it('replaces a unique piece of text, keeping $ patterns literal', async () => {
    expect(await editCode('b = 2', 'b = "$&$1"')).toEqual({
      ok: true,
      output: 'Successfully replaced text in code.ts.',
    });
    expect(await readFile(file, 'utf8')).toBe('const a = 1;\nconst b = "$&$1";\nconst c = 1;\n');
  });

  it('deletes with an empty newText, across lines', async () => {
    expect(await editCode('const b = 2;\n', '')).toMatchObject({
      ok: true,
    });
    expect(await readFile(file, 'utf8')).toBe('const a = 1;\nconst c = 1;\n');
  });

  it('refuses text that is not in the file', async () => {
    expect(await editCode('const  b', 'x')).toEqual(
      refused(
        'Could not find the exact text in code.ts. The old text must match exactly including ' +
          'all whitespace and newlines.',
      ),
    );
  });

  it('refuses text that occurs more than once, counting overlaps', async () => {
    expect(await editCode('= 1;', '= 3;')).toEqual(
      refused(
        'Found 2 occurrences of the text in code.ts. The text must be unique. Please provide ' +
          'more context to make it unique.',
      ),
    );
    await writeFile(file, 'xaaay');
    const overlapping = await editCode('aa', 'b');
    expect(overlapping.ok).toBe(false);
    if (!overlapping.ok) expect(overlapping.error).toMatch(/^Found 2 occurrences/);
    expect(await readFile(file, 'utf8')).toBe('xaaay');
  });

  it('refuses an edit that changes nothing', async () => {
    expect(await editCode('b = 2', 'b = 2')).toEqual(
      refused('No changes made to code.ts. The replacement produced identical content.'),
    );
  });

  it('refuses missing fields and files', async () => {
    expect(await editCode('', 'x')).toEqual(refused('No oldText provided'));
    expect(await editCode('b = 2', null)).toEqual(refused('No newText provided'));
    expect(await run(editTool, editCall(undefined, 'a', 'b'))).toEqual(refused('No path provided'));
    expect(await run(editTool, editCall('missing.ts', 'a', 'b'))).toEqual(
      refused('File not found: missing.ts'),
    );
    expect(await readFile(file, 'utf8')).toBe('const a = 1;\nconst b = 2;\nconst c = 1;\n');
  });

  it('refuses paths outside the sandbox', async () => {
    const ctx = context({ sandbox: sandboxAllowing(join(project, 'out')) });
    expect(await editCode('b = 2', 'b = 3', ctx)).toEqual(
      refused('Sandbox: edit denied – path is outside writable directories: code.ts'),
    );
    expect(await readFile(file, 'utf8')).toBe('const a = 1;\nconst b = 2;\nconst c = 1;\n');
    const open = context({ sandbox: sandboxAllowing(project) });
    expect(await editCode('b = 2', 'b = 3', open)).toMatchObject({
      ok: true,
    });
  });

  it('has the wire schema of the built-in and previews the path', () => {
    expectStrictSchema(editTool, ['label', 'newText', 'oldText', 'path']);
    expect(editTool.formatPreview?.({ path: 'config.lua', label: 'fix typo' }, 80)).toEqual({
      detail: ['config.lua'],
      label: 'fix typo',
    });
  });
});
