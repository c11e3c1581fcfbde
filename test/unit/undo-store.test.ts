// The undo store (src/host/undo/store.ts) and the `undone` mark (src/core/chat/undone.ts): what a
// record keeps, the bounds applied when one is written, and how a marked result is read and sent.
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { assemblePrompt } from '../../src/core/chat/prompt.js';
import { UNDONE_NOTE, isUndone, markUndone } from '../../src/core/chat/undone.js';
import { UNDO_GUARD, guardUndo } from '../../src/core/approval/undo-guard.js';
import { type BeforeWrite, WriteJournal } from '../../src/core/tools/context.js';
import {
  UNDO_DEFAULTS,
  UndoStore,
  chatKey,
  contentHash,
  undoLimits,
} from '../../src/host/undo/store.js';
import { testDir } from '../helpers/test-dir.js';

const dir = testDir('flemma-undo-');

const DAY = 24 * 60 * 60 * 1000;

function journal(entries: [string, BeforeWrite][]): Map<string, BeforeWrite> {
  return new Map(entries);
}

describe('the undo journal', () => {
  it('keeps the first state of each file, and skips files over max_bytes', async () => {
    const small = dir('small.txt');
    const big = dir('big.txt');
    writeFileSync(small, 'before');
    writeFileSync(big, 'x'.repeat(100));
    const j = new WriteJournal(10);
    await j.note(small);
    writeFileSync(small, 'changed by the call');
    await j.note(small);
    await j.note(big);
    await j.note(dir('missing.txt'));
    expect(j.entries.get(small)).toEqual({ kind: 'content', content: Buffer.from('before') });
    expect(j.entries.get(big)?.kind).toBe('skipped');
    expect(j.entries.get(dir('missing.txt'))).toEqual({ kind: 'absent' });
  });
});

describe('the undo store', () => {
  it('records the content before and the hash after, keyed by chat and tool id', async () => {
    const store = new UndoStore(dir('undo'));
    const file = dir('a.txt');
    writeFileSync(file, 'after');
    const key = chatKey('/p/x.chat', 1);
    await store.record(
      key,
      '/p/x.chat',
      'toolu_1',
      journal([
        [file, { kind: 'content', content: Buffer.from('before') }],
        [dir('gone.txt'), { kind: 'absent' }],
      ]),
      UNDO_DEFAULTS,
    );
    const record = await store.load(key, 'toolu_1');
    expect(record?.files).toEqual([
      { path: file, after: contentHash('after'), before: Buffer.from('before').toString('base64') },
      { path: dir('gone.txt'), after: null, before: null },
    ]);
    expect(await store.load(chatKey('/p/other.chat', 1), 'toolu_1')).toBeUndefined();
    expect(chatKey(null, 3)).not.toBe(chatKey(null, 4));
  });

  it('writes nothing for a call that opened no file', async () => {
    const store = new UndoStore(dir('undo'));
    await store.record('k', null, 't', new Map(), UNDO_DEFAULTS);
    expect(await store.load('k', 't')).toBeUndefined();
  });

  it('removes records older than max_age_days when one is written', async () => {
    const store = new UndoStore(dir('undo'));
    const now = Date.now();
    const before: [string, BeforeWrite][] = [[dir('f'), { kind: 'absent' }]];
    await store.record('k', null, 'old', journal(before), UNDO_DEFAULTS, now);
    await store.record('k', null, 'recent', journal(before), UNDO_DEFAULTS, now);
    const old = dir('undo', 'k-old.json');
    utimesSync(old, new Date(now - 20 * DAY), new Date(now - 20 * DAY));
    utimesSync(dir('undo', 'k-recent.json'), new Date(now - DAY), new Date(now - DAY));
    await store.record(
      'k',
      null,
      'new',
      journal(before),
      { ...UNDO_DEFAULTS, max_age_days: 14 },
      now,
    );
    expect(readdirSync(dir('undo')).sort()).toEqual(['k-new.json', 'k-recent.json']);
  });

  it('removes the oldest records past max_total_bytes, never the one just written', async () => {
    const store = new UndoStore(dir('undo'));
    const now = Date.now();
    const content = (n: number): [string, BeforeWrite][] => [
      [dir('f'), { kind: 'content', content: Buffer.alloc(n, 'a') }],
    ];
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      await store.record('k', null, id, journal(content(300)), UNDO_DEFAULTS, now);
      const at = new Date(now - (10 - i) * 60000);
      utimesSync(dir('undo', `k-${id}.json`), at, at);
    }
    // Room for two records of this size.
    const size = statSync(dir('undo', 'k-a.json')).size;
    const limits = { ...UNDO_DEFAULTS, max_total_bytes: 2 * size + 10 };
    await store.record('k', null, 'd', journal(content(300)), limits, now);
    expect(readdirSync(dir('undo')).sort()).toEqual(['k-c.json', 'k-d.json']);
    // A record over the total alone is still kept: the last call can always be undone.
    await store.record('k', null, 'e', journal(content(3000)), limits, now);
    expect(readdirSync(dir('undo'))).toEqual(['k-e.json']);
  });

  it('keeps everything with both bounds at 0', async () => {
    const store = new UndoStore(dir('undo'));
    const now = Date.now();
    const before: [string, BeforeWrite][] = [[dir('f'), { kind: 'absent' }]];
    await store.record('k', null, 'old', journal(before), UNDO_DEFAULTS, now);
    utimesSync(dir('undo', 'k-old.json'), new Date(0), new Date(0));
    const none = { ...UNDO_DEFAULTS, max_age_days: 0, max_total_bytes: 0 };
    await store.record('k', null, 'new', journal(before), none, now);
    expect(readdirSync(dir('undo')).sort()).toEqual(['k-new.json', 'k-old.json']);
  });

  it('keeps tool ids with odd characters inside the store directory', async () => {
    const store = new UndoStore(dir('undo'));
    await store.record(
      'k',
      null,
      '../../escape',
      journal([[dir('f'), { kind: 'absent' }]]),
      UNDO_DEFAULTS,
    );
    expect(readdirSync(dir('undo'))).toEqual(['k-______escape.json']);
    expect((await store.load('k', '../../escape'))?.tool_id).toBe('../../escape');
  });

  it('reads tools.undo with defaults for what is missing or wrong', () => {
    expect(undoLimits(undefined)).toEqual(UNDO_DEFAULTS);
    expect(undoLimits({ enabled: false, max_bytes: 5, max_age_days: -1 })).toEqual({
      ...UNDO_DEFAULTS,
      enabled: false,
      max_bytes: 5,
    });
  });
});

describe('the undone mark', () => {
  it('is added to a result header once, after an existing suffix', () => {
    expect(markUndone('**Tool Result:** `t1`')).toBe('**Tool Result:** `t1` (undone)');
    expect(markUndone('**Tool Result:** `t1` (error)')).toBe(
      '**Tool Result:** `t1` (error undone)',
    );
    expect(markUndone('**Tool Result:** `t1` (undone)')).toBeUndefined();
    expect(markUndone('**Tool Use:** `write` (`t1`)')).toBeUndefined();
  });

  it('is kept by the parser, and the model gets the result as written plus a note', () => {
    const doc = parseLines([
      '@You:',
      'Go.',
      '@Assistant:',
      '**Tool Use:** `write` (`t1`)',
      '```json',
      '{"path":"a","content":"x"}',
      '```',
      '@You:',
      '**Tool Result:** `t1` (error undone)',
      '```',
      'Wrote a',
      '```',
    ]);
    const result = doc.messages[2]?.segments.find((s) => s.kind === 'tool_result');
    expect(result?.kind === 'tool_result' && result.isError).toBe(true);
    expect(result?.kind === 'tool_result' && isUndone(result.meta)).toBe(true);
    const sent = assemblePrompt(doc).messages[2];
    expect(sent?.parts[0]).toMatchObject({
      kind: 'tool_result',
      isError: true,
      parts: [
        { kind: 'text', text: 'Wrote a' },
        { kind: 'text', text: `\n\n${UNDONE_NOTE}` },
      ],
    });
  });
});

describe('the probe before a write (a record that cannot be written makes the call ask)', () => {
  it('writes a record of the same size and removes it again', async () => {
    const store = new UndoStore(dir('undo'));
    const file = dir('a.txt');
    writeFileSync(file, 'before');
    await store.probe('chat', null, 'toolu_1', journal([[file, { kind: 'absent' }]]));
    expect(readdirSync(dir('undo'))).toEqual([]);
  });

  it('throws what writing it threw', async () => {
    // The store's directory is a regular file: nothing can be written under it.
    const blocked = dir('blocked');
    writeFileSync(blocked, '');
    const store = new UndoStore(join(blocked, 'undo'));
    await expect(
      store.probe('chat', null, 'toolu_1', journal([[dir('a'), { kind: 'absent' }]])),
    ).rejects.toThrow(/EEXIST|ENOTDIR/);
  });
});

describe('the undo guard', () => {
  const approved = {
    decision: 'approve' as const,
    resolver: 'urn:flemma:approval:config',
    trace: [],
    skipped: [],
  };

  it('turns an approval into a question with the reason, after every resolver', () => {
    const guarded = guardUndo(approved, 'ENOSPC: no space left on device', 'write');
    expect(guarded.decision).toBe('require_approval');
    expect(guarded.resolver).toBe(UNDO_GUARD);
    expect(guarded.trace.at(-1)?.notes).toEqual([
      'write: no undo record: ENOSPC: no space left on device; approve to write without undo (urn:flemma:approval:config had approved it)',
    ]);
  });

  it('leaves a decision alone when the record can be written, or when it did not approve', () => {
    expect(guardUndo(approved, undefined, 'write')).toBe(approved);
    const denied = { ...approved, decision: 'deny' as const };
    expect(guardUndo(denied, 'ENOSPC', 'write')).toBe(denied);
  });
});
