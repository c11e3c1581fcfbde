// Which calls `:Flemma review` covers (src/core/chat/review.ts), and how the host reads
// `git status` (src/host/undo/git.ts).
import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { callsInScope, startsTurn } from '../../src/core/chat/review.js';
import { changedSince, porcelainPaths } from '../../src/host/undo/git.js';

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
