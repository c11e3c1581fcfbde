// The file adapter's pieces (src/files/): a chat's lines edited as Lua's `buffer.apply_batch`
// edits a buffer, and the file written whole (a temporary file renamed over it).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileLines, joinLines, splitText } from '../../src/files/lines.js';
import { writeAtomic } from '../../src/files/atomic.js';
import { FileAdapter } from '../../src/files/adapter.js';
import { FileChatRunner } from '../../src/files/chats.js';
import type { WriteOp } from '../../src/editor/protocol/wire.js';
import { tempDirs } from '../helpers/temp.js';

const makeDir = tempDirs();

/** Lines with a copy kept by the change events alone (what the document store sees). */
function followed(initial: string[]): { text: FileLines; seen: string[] } {
  const seen = [...initial];
  const text = new FileLines(initial, (_tick, first, last, data) => {
    seen.splice(first, last - first, ...data);
  });
  return { text, seen };
}

function apply(text: FileLines, ops: WriteOp[]) {
  return text.apply({ bufnr: 1 << 30, tick: text.tick, ops });
}

describe('the lines of a chat held in a file', () => {
  it('appends at a stream anchor made at the end, and moves it past what it appends', () => {
    const { text, seen } = followed(['@You:', 'hi', '', '@Assistant:']);
    expect(apply(text, [{ op: 'append', stream: 'r', text: '\nHel' }]).status).toBe('ok');
    apply(text, [{ op: 'append', stream: 'r', text: 'lo\nworld' }]);
    expect(text.lines).toEqual(['@You:', 'hi', '', '@Assistant:', 'Hello', 'world']);
    expect(seen).toEqual(text.lines);
  });

  it('moves an anchor down when rows are inserted above it, and forgets it on close', () => {
    const { text, seen } = followed(['@Assistant:', 'a']);
    apply(text, [{ op: 'append', stream: 'r', text: 'b' }]);
    apply(text, [
      { op: 'set_lines', start: 1, end: 1, expect: null, lines: ['<thinking>', '</thinking>'] },
    ]);
    apply(text, [{ op: 'append', stream: 'r', text: 'c' }]);
    expect(text.lines).toEqual(['@Assistant:', '<thinking>', '</thinking>', 'abc']);
    apply(text, [
      { op: 'close_stream', stream: 'r' },
      { op: 'set_lines', start: 3, end: 4, expect: ['abc'], lines: ['abc', ''] },
      { op: 'append', stream: 'r', text: 'new' },
    ]);
    expect(text.lines.at(-1)).toBe('new');
    expect(seen).toEqual(text.lines);
  });

  it('refuses an edit whose rows changed (a conflict) and goes on with the next', () => {
    const { text } = followed(['one', 'two']);
    const result = apply(text, [
      { op: 'set_lines', start: 0, end: 1, expect: ['ONE'], lines: ['x'] },
      { op: 'set_lines', start: 1, end: 2, expect: ['two'], lines: ['2'] },
      { op: 'set_lines', start: 5, end: 6, expect: ['gone'], lines: ['y'] },
    ]);
    expect(result).toMatchObject({ status: 'ok', done: 3, conflicts: [1, 3], edited: false });
    expect(text.lines).toEqual(['one', '2']);
  });

  it('says an edit past the end without an expectation is an error', () => {
    const { text } = followed(['one']);
    expect(
      apply(text, [{ op: 'set_lines', start: 3, end: 4, expect: null, lines: [] }]),
    ).toMatchObject({
      status: 'error',
      done: 0,
    });
  });

  it.each([
    ['a\nb\n', ['a', 'b']],
    ['a\nb', ['a', 'b']],
    ['', ['']],
    ['\n', ['']],
  ])('reads %j as lines and writes them back with a final newline', (raw, lines) => {
    expect(splitText(raw)).toEqual(lines);
    expect(splitText(joinLines(lines))).toEqual(lines);
  });
});

describe('writing a chat file', () => {
  it('replaces it whole: a reader sees the old text or the new, and no temporary file stays', async () => {
    const dir = makeDir('flemma-atomic-');
    const path = join(dir, 'a.chat');
    const versions = Array.from(
      { length: 30 },
      (_, n) => `@You:\n${'x'.repeat(20_000 * (n + 1))}\n`,
    );
    writeFileSync(path, versions[0] ?? '');
    const seen = new Set<string>();
    const reading = { on: true };
    const reads = (async () => {
      while (reading.on) {
        seen.add(readFileSync(path, 'utf8'));
        await new Promise<void>((resolve) => {
          setImmediate(resolve);
        });
      }
    })();
    for (const version of versions) await writeAtomic(path, version);
    reading.on = false;
    await reads;
    for (const text of seen) expect(versions).toContain(text);
    expect(readFileSync(path, 'utf8')).toBe(versions.at(-1));
    expect(readdirSync(dir)).toEqual(['a.chat']);
  });
});

describe('opening a chat held in a file', () => {
  it.each([
    [{ bufnr: 3, modified: true }, false, /has unsaved changes in Neovim/],
    [{ bufnr: 3, modified: false }, true, /is busy in Neovim/],
  ])(
    'is refused while its buffer (%j, busy: %s) could lose something',
    async (shown, busy, why) => {
      const dir = makeDir('flemma-open-');
      const path = join(dir, 'job.chat');
      writeFileSync(path, '@You:\nHi.\n');
      const adapter = new FileAdapter({
        baseConfig: () => Promise.resolve({}),
        evaluate: () => Promise.resolve({ ops: [] }),
        inherited: () => undefined,
        env: {},
        failed: () => undefined,
      });
      const runner = new FileChatRunner({
        adapter,
        sessions: { busy: (bufnr: number) => busy && bufnr === 3 } as never,
        documents: {} as never,
        usage: {} as never,
        commands: {} as never,
        states: {} as never,
        forget: () => undefined,
        status: () => Promise.resolve(shown),
      });
      await expect(runner.open(path, { trust: true })).rejects.toThrow(why);
      expect(adapter.all()).toEqual([]);
      expect(readFileSync(path, 'utf8')).toBe('@You:\nHi.\n');
    },
  );
});
