// Completion's host-side logic (docs/completion.md): `.gitignore` rules, the reference and the
// frontmatter place read from the text before the cursor, the schema's items, and the directory
// listings kept until a directory or an ignore file changes.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ignoredBy, parseIgnore } from '../../src/core/complete/gitignore.js';
import { referenceQuery, resourceItems, serverItems } from '../../src/core/complete/reference.js';
import { frontmatterItems, frontmatterQuery } from '../../src/core/complete/frontmatter.js';
import { completeItems, PathLister } from '../../src/host/complete.js';
import type { CompleteRequest } from '../../src/core/complete/items.js';

const root = mkdtempSync(join(tmpdir(), 'flemma-complete-'));
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function write(path: string, text = ''): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), text);
}

describe('gitignore rules', () => {
  const rules = [
    ...parseIgnore('# comment\n\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/*.tmp\n\\#hash\n', ''),
    ...parseIgnore('local.txt\n', 'sub'),
  ];
  it.each([
    ['a.log', false, true],
    ['deep/x/a.log', false, true],
    ['keep.log', false, false],
    ['build', true, true],
    ['build', false, false],
    ['x/build', true, true],
    ['top.txt', false, true],
    ['x/top.txt', false, false],
    ['docs/a.tmp', false, true],
    ['x/docs/a.tmp', false, false],
    ['#hash', false, true],
    ['sub/local.txt', false, true],
    ['local.txt', false, false],
    ['src/main.ts', false, false],
  ])('%s (dir: %s) ignored: %s', (path, dir, expected) => {
    expect(ignoredBy(rules, path, dir)).toBe(expected);
  });
});

describe('the reference before the cursor', () => {
  it.each([
    ['see @./src/ma', { kind: 'path', typed: './src/', dir: './src/', prefix: 'ma', start: 5 }],
    ['@../a%20b/c', { kind: 'path', typed: '../a%20b/', dir: '../a b/', prefix: 'c', start: 1 }],
    ['(@~/', { kind: 'path', typed: '~/', prefix: '', start: 2 }],
    ['é @/tmp/x', { kind: 'path', typed: '/tmp/', prefix: 'x', start: 4 }],
    ['@', { kind: 'start', prefix: '', start: 1 }],
    ['x @mc', { kind: 'start', prefix: 'mc', start: 3 }],
    ['@mcp:do', { kind: 'server', prefix: 'do', start: 1 }],
    ['@mcp:docs:docs://re', { kind: 'resource', server: 'docs', prefix: 'docs://re', start: 1 }],
  ])('%s', (before, expected) => {
    expect(referenceQuery(before)).toMatchObject(expected);
  });

  it.each(['mail@./x', 'no reference', '@word', '@./a b'])('none in %s', (before) => {
    expect(referenceQuery(before)).toBeUndefined();
  });

  it('MCP servers and resources from the catalogue', () => {
    const catalog = {
      docs: { prompts: [], resources: ['docs://readme.md', 'docs://api.md'] },
      db: { prompts: [], resources: [] },
    };
    expect(serverItems(catalog, 'do').map((item) => item.word)).toEqual(['mcp:docs:']);
    expect(resourceItems(catalog, 'docs', 'docs://r').map((item) => item.word)).toEqual([
      'mcp:docs:docs://readme.md',
    ]);
  });
});

describe('the frontmatter place and its items', () => {
  const names = { tools: ['bash', 'read', 'write'], presets: ['$default', '$readonly'] };
  const words = (lang: string, lines: string[], before: string): string[] => {
    const q = frontmatterQuery(lang, lines, before);
    return q === undefined ? [] : frontmatterItems(q, names).map((item) => item.word);
  };

  it('Lua: names at any depth, shortcuts at the top, values of a choice', () => {
    expect(words('lua', [], 'flemma.opt.thin')).toEqual(['thinking']);
    expect(words('lua', [], 'flemma.opt.tools.auto_approve_')).toEqual(['auto_approve_sandboxed']);
    expect(words('lua', [], 'flemma.opt.thinking = "')).toEqual(
      expect.arrayContaining(['low', 'medium', 'high']),
    );
    expect(words('lua', [], 'flemma.opt.parameters.thinking = "hi')).toEqual(['high']);
    expect(words('lua', [], 'flemma.opt.sandbox.enabled = ')).toEqual(['true', 'false']);
    expect(words('lua', [], 'flemma.opt.tools.autonomy = ')).toContain('"standard"');
    expect(words('lua', [], 'local x = "')).toEqual([]);
  });

  it('Lua: tools and presets in approval lists, tools in tool lists', () => {
    expect(words('lua', [], 'flemma.opt.tools.auto_approve = { "read", "')).toEqual([
      '$default',
      '$readonly',
      'bash',
      'read',
      'write',
    ]);
    expect(words('lua', [], 'flemma.opt.tools.auto_approve:append("$')).toEqual([
      '$default',
      '$readonly',
    ]);
    expect(words('lua', [], "flemma.opt.tools:remove('b")).toEqual(['bash']);
    expect(words('lua', [], 'flemma.opt.tools = flemma.opt.tools - "w')).toEqual(['write']);
    expect(words('lua', [], 'flemma.opt.tools.hooks.confirm = { "')).toEqual([
      'bash',
      'read',
      'write',
    ]);
  });

  it('JSON: "flemma" at the top, options under it, list operators, values', () => {
    expect(words('json', ['{'], '  "fl')).toEqual(['flemma']);
    expect(words('json', ['{ "flemma": {'], '  "sand')).toEqual(['sandbox']);
    expect(words('json', ['{ "flemma": { "sandbox": {'], '"ena')).toEqual(['enabled']);
    expect(words('json', ['{ "x": 1, "flemma": {'], '"thinking": "me')).toEqual(['medium']);
    expect(words('json', ['{ "flemma": { "tools": { "$remove": ['], '"ba')).toEqual(['bash']);
    expect(words('json', ['{ "other": {'], '"th')).toEqual([]);
  });

  it('YAML: keys by indentation, values and list items', () => {
    expect(words('yaml', [], 'fl')).toEqual(['flemma']);
    expect(words('yaml', ['flemma:'], '  prov')).toEqual(['provider']);
    expect(words('yaml', ['flemma:', '  parameters:'], '    thinking: me')).toEqual(['medium']);
    expect(words('yaml', ['flemma:', '  tools:', '    auto_approve:'], '      - $r')).toEqual([
      '$readonly',
    ]);
    expect(words('yaml', ['flemma:', '  tools:'], '    $remove: [bash, r')).toEqual(['read']);
  });
});

describe('directory listings', () => {
  const request = (line: string, dir: string): CompleteRequest => ({
    where: 'reference',
    line,
    col: Buffer.byteLength(line),
    dir,
    lang: '',
    lines: [],
  });
  const sources = (paths: PathLister) => ({
    paths,
    mcp: () => ({}),
    tools: () => [],
    presets: () => undefined,
  });

  it('keeps a listing until the directory or an ignore file changes', async () => {
    write('repo/.git/HEAD', 'ref: refs/heads/main\n');
    write('repo/.gitignore', '*.log\n');
    write('repo/app/a.ts');
    write('repo/app/b.log');
    const lister = new PathLister();
    const dir = join(root, 'repo/app');
    expect(await lister.list(dir)).toEqual([{ name: 'a.ts', dir: false }]);
    write('repo/app/c.ts');
    // A file added changes the directory's time; make it differ even on a coarse clock.
    utimesSync(dir, new Date(), new Date(Date.now() + 5000));
    expect((await lister.list(dir)).map((entry) => entry.name)).toEqual(['a.ts', 'c.ts']);
    write('repo/.gitignore', '*.log\nc.ts\n');
    utimesSync(join(root, 'repo/.gitignore'), new Date(), new Date(Date.now() + 10000));
    expect((await lister.list(dir)).map((entry) => entry.name)).toEqual(['a.ts']);
  });

  it('answers the page of a path with its start column; a name with a space is escaped', async () => {
    write('plain/my file.md');
    write('plain/sub/x.md');
    write('plain/z_');
    const answer = await completeItems(
      sources(new PathLister()),
      request('see @./', join(root, 'plain')),
    );
    expect(answer).toEqual({
      items: [
        { word: './my%20file.md', abbr: 'my%20file.md', kind: 'file' },
        { word: './sub/', abbr: 'sub/', kind: 'dir' },
        // The parser would leave a trailing `_` to the sentence.
        { word: './z%5F', abbr: 'z%5F', kind: 'file' },
      ],
      start: 5,
      incomplete: false,
    });
  });

  it('cuts a large directory to one page and says so', async () => {
    for (let i = 0; i < 250; i++) write(`many/f${String(i).padStart(3, '0')}.txt`);
    const answer = await completeItems(
      sources(new PathLister()),
      request('@./f', join(root, 'many')),
    );
    expect(answer.items).toHaveLength(200);
    expect(answer.incomplete).toBe(true);
    expect(answer.items[0]?.word).toBe('./f000.txt');
  });
});
