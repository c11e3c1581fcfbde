// Which calls `:Flemma review` covers (src/core/chat/review.ts), and how the host reads
// `git status` (src/host/undo/git.ts).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { callsInScope, startsTurn } from '../../src/core/chat/review.js';
import { changedSince, gitState, porcelainPaths } from '../../src/host/undo/git.js';
import { contentHash } from '../../src/host/undo/store.js';

const use = (name: string, id: string): string[] => [
  `**Tool Use:** \`${name}\` (\`${id}\`)`,
  '```json',
  '{}',
  '```',
];
const result = (id: string): string[] => [`**Tool Result:** \`${id}\``, '```', 'ok', '```'];

const CHAT = [
  '@You:', // 1
  'First.',
  '@Assistant:', // 3
  ...use('edit', 't1'), // 4-7
  '@You:', // 8
  ...result('t1'), // 9-12
  '@Assistant:', // 13
  ...use('write', 't2'), // 14-17
  '@You:', // 18
  ...result('t2'),
  'Second.',
  '@Assistant:', // 24
  ...use('edit', 't3'), // 25-28
  '@You:',
  ...result('t3'),
  '@Assistant:',
  ...use('write', 't4'),
];

const ids = (scope: Parameters<typeof callsInScope>[1]): string[] =>
  callsInScope(parseLines(CHAT), scope).map((call) => call.id);

describe(':Flemma review scope', () => {
  it('last: every reply since the user last wrote something besides tool results', () => {
    expect(ids({ kind: 'last' })).toEqual(['t3', 't4']);
    expect(callsInScope(parseLines(CHAT), { kind: 'last' })[0]).toEqual({
      id: 't3',
      name: 'edit',
      line: 25,
    });
  });

  it('all, and a range: the messages it touches', () => {
    expect(ids({ kind: 'all' })).toEqual(['t1', 't2', 't3', 't4']);
    expect(ids({ kind: 'range', first: 2, last: 14 })).toEqual(['t1', 't2']);
    expect(ids({ kind: 'range', first: 9, last: 9 })).toEqual([]);
  });

  it('a turn starts when the last message is the user own one', () => {
    expect(startsTurn(parseLines(['@You:', 'Hi']))).toBe(true);
    expect(startsTurn(parseLines([...CHAT.slice(0, 12)]))).toBe(false);
    expect(startsTurn(parseLines(['@You:', 'Hi', '@Assistant:', 'Hello']))).toBe(false);
  });
});

describe('git status, read by the host', () => {
  it('takes paths from porcelain -z output, skipping the source of a rename', () => {
    const out = ' M a.txt\0?? new dir/b.txt\0R  to.txt\0from.txt\0 D gone.txt\0';
    expect(porcelainPaths(out)).toEqual(['a.txt', 'new dir/b.txt', 'to.txt', 'gone.txt']);
  });

  it('a path changed during the turn is new in the list or has other content', () => {
    const start = new Map<string, string | null>([
      ['/r/dirty', 'h1'],
      ['/r/again', 'h2'],
    ]);
    const now = new Map<string, string | null>([
      ['/r/dirty', 'h1'],
      ['/r/again', 'h3'],
      ['/r/new', null],
    ]);
    expect(changedSince(start, now)).toEqual(['/r/again', '/r/new']);
  });
});

describe('git status of a repository on disk', () => {
  let base: string | undefined;
  const savedPath = process.env['PATH'];
  const added = [
    'GIT_CONFIG_COUNT',
    'GIT_CONFIG_KEY_0',
    'GIT_CONFIG_VALUE_0',
    'GIT_CONFIG_PARAMETERS',
  ];
  afterEach(() => {
    process.env['PATH'] = savedPath;
    for (const name of added) Reflect.deleteProperty(process.env, name);
    if (base !== undefined) rmSync(base, { recursive: true, force: true });
    base = undefined;
  });

  /** Where the clean git directories go (Neovim's state directory in the host). */
  const scratch = (): string => join(base ?? tmpdir(), 'state');

  const run = (root: string, ...args: string[]): string =>
    execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });

  /** A repository with one committed file, `clean.txt`. */
  function repository(...init: string[]): string {
    base = mkdtempSync(join(tmpdir(), 'flemma-git-'));
    const root = join(base, 'repo');
    mkdirSync(root);
    run(root, 'init', '-q', ...init);
    writeFileSync(join(root, 'clean.txt'), 'one\n');
    run(root, 'add', 'clean.txt');
    run(root, 'commit', '-q', '-m', 'start');
    return root;
  }

  it('lists changed and untracked files from a subdirectory, each with its content hash', async () => {
    const root = repository();
    writeFileSync(join(root, 'clean.txt'), 'two\n');
    mkdirSync(join(root, 'sub dir'));
    writeFileSync(join(root, 'sub dir', 'new.txt'), 'new\n');
    const state = await gitState(join(root, 'sub dir'), scratch());
    expect(state).toEqual(
      new Map([
        [join(root, 'clean.txt'), contentHash('two\n')],
        [join(root, 'sub dir', 'new.txt'), contentHash('new\n')],
      ]),
    );
    // The clean git directory of the run is gone again.
    expect(readdirSync(scratch())).toEqual([]);
  });

  it('works before the first commit, in a sha256 repository and in a linked work tree', async () => {
    base = mkdtempSync(join(tmpdir(), 'flemma-git-'));
    const fresh = join(base, 'fresh');
    mkdirSync(fresh);
    run(fresh, 'init', '-q');
    writeFileSync(join(fresh, 'a.txt'), 'a\n');
    expect(await gitState(fresh, scratch())).toEqual(
      new Map([[join(fresh, 'a.txt'), contentHash('a\n')]]),
    );

    const sha = join(base, 'sha');
    mkdirSync(sha);
    run(sha, 'init', '-q', '--object-format=sha256');
    writeFileSync(join(sha, 'b.txt'), 'b\n');
    run(sha, 'add', 'b.txt');
    run(sha, 'commit', '-q', '-m', 'b');
    writeFileSync(join(sha, 'b.txt'), 'bb\n');
    expect(await gitState(sha, scratch())).toEqual(
      new Map([[join(sha, 'b.txt'), contentHash('bb\n')]]),
    );

    const linked = join(base, 'linked');
    run(sha, 'worktree', 'add', '-q', linked);
    writeFileSync(join(linked, 'c.txt'), 'c\n');
    expect(await gitState(linked, scratch())).toEqual(
      new Map([[join(linked, 'c.txt'), contentHash('c\n')]]),
    );
  });

  it('runs none of the programs the repository or the environment names', async () => {
    const root = repository();
    const marker = (name: string): string => join(base ?? '', `ran-${name}`);
    const hook = (name: string): string => `touch ${marker(name)}; false`;
    // fsmonitor and a clean filter in the repository's config, a .gitattributes choosing it.
    run(root, 'config', 'core.fsmonitor', hook('fsmonitor'));
    run(root, 'config', 'filter.evil.clean', `touch ${marker('filter')}; cat`);
    run(root, 'config', 'filter.evil.required', 'true');
    writeFileSync(join(root, '.gitattributes'), '* filter=evil\n');
    // fsmonitor through a config.worktree and an include.
    run(root, 'config', 'extensions.worktreeConfig', 'true');
    run(root, 'config', '--worktree', 'core.fsmonitor', hook('worktree'));
    writeFileSync(join(base ?? '', 'included'), `[core]\n\tfsmonitor = ${hook('include')}\n`);
    run(root, 'config', 'include.path', join(base ?? '', 'included'));
    // A file whose stat no longer matches the index: git must look at its content.
    writeFileSync(join(root, 'clean.txt'), 'one\n');
    // …and the same through Flemma's environment.
    process.env['GIT_CONFIG_COUNT'] = '1';
    process.env['GIT_CONFIG_KEY_0'] = 'core.fsmonitor';
    process.env['GIT_CONFIG_VALUE_0'] = hook('environment');
    process.env['GIT_CONFIG_PARAMETERS'] = `'core.fsmonitor'='${hook('parameters')}'`;
    const state = await gitState(root, scratch());
    expect(state?.has(join(root, '.gitattributes'))).toBe(true);
    expect(readdirSync(base ?? '').filter((name) => name.startsWith('ran-'))).toEqual([]);
    // The same repository does run them with plain git (the test's own control).
    execFileSync('git', ['status', '--porcelain'], { cwd: root, stdio: 'ignore' });
    expect(
      readdirSync(base ?? '').filter((name) => name.startsWith('ran-')).length,
    ).toBeGreaterThan(0);
  });

  it('is undefined outside a repository, and when git cannot be run', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'flemma-nogit-'));
    try {
      expect(await gitState(outside, join(outside, 'state'))).toBeUndefined();
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
    const root = repository();
    process.env['PATH'] = join(root, 'no-such-bin');
    expect(await gitState(root, scratch())).toBeUndefined();
  });
});
