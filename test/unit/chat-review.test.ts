// Which calls `:Flemma review` covers (src/core/chat/review.ts), and how the host reads
// `git status` (src/host/undo/git.ts).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
  let dir: string | undefined;
  const savedPath = process.env['PATH'];
  afterEach(() => {
    process.env['PATH'] = savedPath;
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  /** A repository with one committed file, `clean.txt`. */
  function repository(): string {
    const root = mkdtempSync(join(tmpdir(), 'flemma-git-'));
    dir = root;
    const git = (...args: string[]): void => {
      execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], {
        cwd: root,
        stdio: 'ignore',
      });
    };
    git('init', '-q');
    writeFileSync(join(root, 'clean.txt'), 'one\n');
    git('add', 'clean.txt');
    git('commit', '-q', '-m', 'start');
    return root;
  }

  it('lists changed and untracked files from a subdirectory, each with its content hash', async () => {
    const root = repository();
    writeFileSync(join(root, 'clean.txt'), 'two\n');
    mkdirSync(join(root, 'sub dir'));
    writeFileSync(join(root, 'sub dir', 'new.txt'), 'new\n');
    const state = await gitState(join(root, 'sub dir'));
    expect(state).toEqual(
      new Map([
        [join(root, 'clean.txt'), contentHash('two\n')],
        [join(root, 'sub dir', 'new.txt'), contentHash('new\n')],
      ]),
    );
  });

  it('is undefined outside a repository, and when git cannot be run', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'flemma-nogit-'));
    try {
      expect(await gitState(outside)).toBeUndefined();
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
    const root = repository();
    process.env['PATH'] = join(root, 'no-such-bin');
    expect(await gitState(root)).toBeUndefined();
  });
});
