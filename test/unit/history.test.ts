// Fork, rewind and retry without an editor (docs/history.md): the message under a line, the fork's
// text, the cut of a rewind and of a retry, the sibling file's text and names
// (src/core/chat/history.ts); the undo of a rewind's calls checked as a chain and applied all or
// nothing (src/host/undo/rewind.ts).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  forkText,
  messageAt,
  retryPoint,
  rewindCut,
  rewoundText,
  siblingNames,
} from '../../src/core/chat/history.js';
import { parseLines } from '../../src/core/chat/parser.js';
import { type UndoPlan, applyUndo, planUndo } from '../../src/host/undo/rewind.js';
import type { UndoDoor } from '../../src/host/undo/service.js';
import { UNDO_DEFAULTS, UndoStore } from '../../src/host/undo/store.js';
import { toolResult, toolUse } from '../helpers/chat-lines.js';
import { testDir } from '../helpers/test-dir.js';

const dir = testDir('flemma-history-');

const CHAT = [
  '```json',
  '{}',
  '```',
  '@You:',
  'Change it.',
  '',
  '@Assistant:',
  ...toolUse('edit', 'toolu_1', '{"label":"x","path":"a.txt","oldText":"a","newText":"b"}'),
  '',
  '@You:',
  ...toolResult('toolu_1', ['ok']),
  '',
  '@Assistant:',
  'Done.',
  '',
  '@You:',
  '',
];

describe('the cuts of fork, rewind and retry', () => {
  const doc = parseLines(CHAT);

  it('finds the message under a line, and none on the frontmatter', () => {
    expect(messageAt(doc, 2)).toMatch(/put the cursor on a message/);
    expect(messageAt(doc, 5)).toBe(0);
    expect(messageAt(doc, 22)).toBe(3);
  });

  it('forks up to a message: a @You: ends it, after a reply an empty @You: follows', () => {
    expect(forkText(CHAT, doc, 0)).toEqual({ text: CHAT.slice(0, 5).join('\n') + '\n', row: 4 });
    expect(forkText(CHAT, doc, 3)).toEqual({
      text: [...CHAT.slice(0, 22), '', '@You:', ''].join('\n') + '\n',
      row: 24,
    });
  });

  it('cuts after a message, its later calls newest first; nothing after the last one', () => {
    const cut = rewindCut(CHAT, doc, 0);
    expect(cut).toEqual({
      from: 6,
      removed: CHAT.slice(6),
      calls: [{ id: 'toolu_1', name: 'edit' }],
    });
    expect(rewindCut(CHAT, doc, 4)).toMatch(/nothing to rewind/);
    if (typeof cut === 'string') throw new Error(cut);
    const text = rewoundText(CHAT, doc, cut, new Set(['toolu_1']));
    expect(text).toBe(
      [
        ...CHAT.slice(0, 3),
        ...CHAT.slice(6, 14),
        '**Tool Result:** `toolu_1` (undone)',
        ...CHAT.slice(15, 24),
      ].join('\n') + '\n',
    );
  });

  it('retries from the message before the last reply, unless the user wrote after it', () => {
    expect(retryPoint(doc)).toBe(2);
    expect(retryPoint(parseLines([...CHAT, 'One more thing.']))).toMatch(
      /line 24 comes after the last reply/,
    );
    expect(retryPoint(parseLines(['@You:', 'Hi.']))).toMatch(/no reply to retry/);
  });

  it('names the siblings after the chat', () => {
    const names = siblingNames('notes.chat', 'rewound');
    expect([names.next().value, names.next().value]).toEqual([
      'notes.rewound-1.chat',
      'notes.rewound-2.chat',
    ]);
    expect(siblingNames('plain', 'fork').next().value).toBe('plain.fork-1.chat');
  });
});

/** A door that writes where it is told, failing for `broken`. */
function door(broken?: string): UndoDoor {
  return {
    resolve: (path: string) => Promise.resolve(path),
    gate: { refusal: () => undefined },
    open_for_write: async (path: string) => {
      if (path === broken) throw new Error('disk full');
      return { handle: await open(path, 'w'), real: path };
    },
  } as unknown as UndoDoor;
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');

describe('the undo of a rewind', () => {
  it('checks a file written by two calls as a chain and restores what it held before the first', async () => {
    const store = new UndoStore(dir('undo'));
    const file = dir('chain.txt');
    const note = async (id: string, before: string | null, now: string): Promise<void> => {
      writeFileSync(file, now);
      const found =
        before === null
          ? { kind: 'absent' as const }
          : { kind: 'content' as const, content: Buffer.from(before) };
      await store.record('k', null, id, new Map([[file, found]]), UNDO_DEFAULTS);
    };
    await note('t1', 'zero', 'one');
    await note('t2', 'one', 'two');
    const calls = [
      { id: 't2', name: 'edit' },
      { id: 't1', name: 'edit' },
    ];
    const plan = await planUndo({ store, key: 'k', calls, unrecorded: () => undefined });
    expect('writes' in plan && plan.writes.get(file)).toBe(b64('zero'));
    // Changed since the newest call: refused, with the file to show.
    writeFileSync(file, 'two, and by hand');
    const refused = await planUndo({ store, key: 'k', calls, unrecorded: () => undefined });
    expect('message' in refused && refused.message).toMatch(
      /chain\.txt changed since edit \(t2\) wrote it/,
    );
    expect('message' in refused && refused.diff).toEqual({
      id: 't2',
      name: 'edit',
      path: file,
      before: b64('one'),
    });
    // A call whose record could not be written is a refusal too.
    const lost = await planUndo({
      store,
      key: 'k',
      calls: [{ id: 't9', name: 'write' }],
      unrecorded: () => 'disk full',
    });
    expect('message' in lost && lost.message).toMatch(/without an undo record \(disk full\)/);
  });

  it('puts back the files already written when one fails, and says so', async () => {
    const [a, b, c] = [dir('a.txt'), dir('b.txt'), dir('c.txt')];
    writeFileSync(a, 'a now');
    writeFileSync(b, 'b now');
    writeFileSync(c, 'c now');
    const plan: UndoPlan = {
      records: [],
      writes: new Map([
        [a, b64('a before')],
        [c, null],
        [b, b64('b before')],
      ]),
    };
    const failed = await applyUndo(door(b), plan);
    expect('failure' in failed && failed.failure).toMatch(
      /restoring .*b\.txt failed \(disk full\); the 2 file\(s\) restored before it were put back/,
    );
    expect([readFileSync(a, 'utf8'), readFileSync(b, 'utf8'), readFileSync(c, 'utf8')]).toEqual([
      'a now',
      'b now',
      'c now',
    ]);
    const done = await applyUndo(door(), plan);
    expect(readFileSync(a, 'utf8')).toBe('a before');
    expect(existsSync(c)).toBe(false);
    if (!('takeBack' in done)) throw new Error(done.failure);
    await done.takeBack();
    expect([readFileSync(a, 'utf8'), readFileSync(c, 'utf8')]).toEqual(['a now', 'c now']);
  });
});
