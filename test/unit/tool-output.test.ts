// A running call's output as it comes: the tail kept of it (bounded, cleaned when shown) and the
// throttle that sends its last lines to Neovim at most once a frame per buffer.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { OutputTail, displayLine } from '../../src/core/tools/output-tail.js';
import { overflowPath } from '../../src/core/tools/truncate.js';
import { FRAME_MS, LiveOutput } from '../../src/host/tools/live-output.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();

describe('displayLine', () => {
  it.each([
    ['plain text', 'plain text'],
    ['\x1b[31mred\x1b[0m and \x1b[1;4mbold\x1b[m', 'red and bold'],
    ['title\x1b]0;pwned\x07 after', 'title after'],
    ['\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\', 'link'],
    ['bell\x07 nul\x00 del\x7f c1\x9b done', 'bell nul del c1 done'],
    ['abc\u202edcba', 'abcdcba'],
    ['10%\r50%\r100%', '100%'],
    ['windows line\r', 'windows line'],
    ['a\tb', 'a    b'],
  ])('shows %j as %j', (raw, shown) => {
    expect(displayLine(raw)).toBe(shown);
  });

  it('cuts a long line with an ellipsis', () => {
    expect(displayLine('x'.repeat(300), 10)).toBe(`${'x'.repeat(9)}…`);
  });
});

describe('OutputTail', () => {
  it('gives the last lines, leaving out blank ones at the end', () => {
    const tail = new OutputTail();
    for (const chunk of ['\none\ntw', 'o\nthree\n', '\n \r\n\t\n\n\n\n\n\n\n']) tail.push(chunk);
    expect(tail.lastLines(2)).toEqual(['two', 'three']);
    expect(tail.lastLines(5)).toEqual(['one', 'two', 'three']);
    expect(tail.lastLines(0)).toEqual([]);
  });

  it('keeps a bounded tail of a long output and says how much came before it', () => {
    const tail = new OutputTail(100, 100);
    for (let i = 0; i < 1000; i++) tail.push(`line ${String(i)}\n`);
    const { text, dropped } = tail.snapshot();
    // Whole chunks go: at least 100 bytes stay, less than one more line.
    expect(text.length).toBeGreaterThanOrEqual(100);
    expect(text.length).toBeLessThan(109);
    expect(text.startsWith('line ')).toBe(true);
    expect(text.endsWith('line 999\n')).toBe(true);
    expect(dropped + text.length).toBe(
      Array.from({ length: 1000 }, (_, i) => `line ${String(i)}\n`).join('').length,
    );
    expect(tail.lastLines(2)).toEqual(['line 998', 'line 999']);
  });

  it('shows the whole output so far, not only the end the live view reads', () => {
    const tail = new OutputTail(100);
    const lines = Array.from({ length: 1000 }, (_, i) => `line ${String(i)}\n`);
    for (const line of lines) tail.push(line);
    expect(tail.snapshot()).toEqual({ text: lines.join(''), dropped: 0 });
    expect(tail.lastLines(1)).toEqual(['line 999']);
  });

  it('keeps bytes: a character split between chunks is whole, one cut off at the start is left out', () => {
    const tail = new OutputTail(7, 7);
    const bytes = Buffer.from('aé\nüb\nc€', 'utf8');
    for (const byte of bytes) tail.push(Uint8Array.of(byte));
    // 7 of the 12 bytes kept, from the second byte of 'ü' (left out); '€' came in 3 chunks.
    expect(tail.snapshot()).toEqual({ text: 'b\nc€', dropped: 5 });
    expect(tail.lastLines(5)).toEqual(['b', 'c€']);
  });
});

describe('LiveOutput', () => {
  let sent: { method: string; params: unknown }[];
  let live: LiveOutput;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    sent = [];
    live = new LiveOutput({
      notify: (method, params) => {
        sent.push({ method, params });
      },
    });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends at most one notification per buffer per frame, with the last lines of each call', () => {
    for (let i = 1; i <= 1000; i++) {
      live.push({ bufnr: 1, id: 'a', chunk: `a${String(i)}\n`, lines: 2 });
      live.push({ bufnr: 1, id: 'b', chunk: `b${String(i)}\n`, lines: 1 });
    }
    live.push({ bufnr: 2, id: 'c', chunk: 'c\n', lines: 3 });
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(FRAME_MS);
    expect(sent).toEqual([
      {
        method: 'tools.output',
        params: {
          bufnr: 1,
          outputs: [
            { tool_id: 'a', lines: ['a999', 'a1000'] },
            { tool_id: 'b', lines: ['b1000'] },
          ],
        },
      },
      { method: 'tools.output', params: { bufnr: 2, outputs: [{ tool_id: 'c', lines: ['c'] }] } },
    ]);
    // Nothing new: nothing sent.
    vi.advanceTimersByTime(FRAME_MS * 10);
    expect(sent).toHaveLength(2);
  });

  it('clears a view that was drawn when its call stops, and sends nothing for one never drawn', () => {
    live.push({ bufnr: 1, id: 'quick', chunk: 'x\n', lines: 5 });
    live.end({ id: 'quick' });
    vi.advanceTimersByTime(FRAME_MS);
    expect(sent).toEqual([]);
    live.push({ bufnr: 1, id: 'slow', chunk: 'y\n', lines: 5 });
    vi.advanceTimersByTime(FRAME_MS);
    live.end({ id: 'slow' });
    expect(sent.at(-1)).toEqual({
      method: 'tools.output',
      params: { bufnr: 1, outputs: [{ tool_id: 'slow', lines: [] }] },
    });
  });

  it('draws nothing with 0 lines, and still keeps what the call printed for tool:output', async () => {
    live.push({ bufnr: 1, id: 'off', chunk: 'kept\n', lines: 0 });
    vi.advanceTimersByTime(FRAME_MS);
    expect(sent).toEqual([]);
    expect(await live.show({ id: 'off', name: 'bash' }, true, tmpdir())).toEqual({
      lines: ['bash (off) runs; its output so far:', '', 'kept'],
    });
  });

  it('shows the saved output of a finished call, or says that its result holds all of it', async () => {
    const dir = temp('flemma-live-');
    writeFileSync(overflowPath('bash', 'done', dir), 'one\n\x1b[1mtwo\x1b[0m\n');
    expect(await live.show({ id: 'done', name: 'bash' }, false, dir)).toEqual({
      lines: [
        `bash (done): its whole output (saved in ${overflowPath('bash', 'done', dir)}):`,
        '',
        'one',
        'two',
      ],
    });
    expect(await live.show({ id: 'short', name: 'bash' }, false, dir)).toEqual({
      message:
        'bash (short) is not running, and its result holds all of its output (none was saved)',
    });
    expect(await live.show({ id: 'quiet', name: 'bash' }, true, dir)).toEqual({
      message: 'bash (quiet) runs and has printed nothing yet',
    });
  });
});
