// The turn gutter (`turns.*`): each exchange the user started is marked beside its rows in the
// 'statuscolumn' of chat windows, follows edits, shows a streaming reply as an open turn, and
// leaves other buffers' windows alone. Asserted on the screen of an attached UI.
import { describe, expect, it } from 'vitest';
import { MESSAGE_START, textDeltas, textDelta, endMessage } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher, type Session } from '../helpers/e2e.js';
import { toolResult, toolUse } from '../helpers/chat-lines.js';

const launch = launcher();

/** Every block open, so that each buffer line is one screen row. */
const UNFOLDED =
  'editing = { auto_close = { thinking = false, tool_use = false, tool_result = false } }';

const CONVERSATION = [
  '@System:',
  'Be brief.',
  '@You:',
  'Hello',
  '',
  '@Assistant:',
  'Hi.',
  '',
  '@You:',
  'List the files.',
  '@Assistant:',
  ...toolUse('bash', 't1', '{"command":"ls"}'),
  '',
  '@You:',
  ...toolResult('t1', ['a.txt']),
  '',
  '@Assistant:',
  'One file.',
  '',
  '@You:',
  '',
];

function session(options = '', key: string | false = false): Promise<Session> {
  return launch({
    setup: `require("flemma").setup({ ${UNFOLDED}, ${options} })`,
    ui: { width: 60, height: 40 },
    key,
  });
}

async function start(options = ''): Promise<Driver> {
  return (await session(options)).d;
}

/** The first `count` screen rows: each one's gutter (`width` cells) and the text after it. */
async function gutter(d: Driver, count: number, width = 2): Promise<string[]> {
  const screen = await d.redraw();
  return screen
    .rows()
    .slice(0, count)
    .map((row) => {
      // By character, as the screen has one per cell here.
      const cells = Array.from(row);
      return cells.slice(0, width).join('') + '|' + cells.slice(width).join('').trimEnd();
    });
}

/**
 * The marks of the first `count` rows after a plain redraw (not a full one): a row shows a new
 * mark only if Neovim or Flemma marked it for redrawing.
 */
async function shown(d: Driver, count: number): Promise<string[]> {
  await d.afterScheduled();
  await d.command('redraw');
  return d.screen
    .rows()
    .slice(0, count)
    .map((row) => row[0] ?? '');
}

describe('the turn gutter', () => {
  it('marks each turn: a question, its tool calls and results, and the reply that ends it', async () => {
    const d = await start();
    await d.openChat('t.chat', CONVERSATION);
    const rows = await gutter(d, CONVERSATION.length);
    expect(rows.map((row) => row[0])).toEqual([
      ...[' ', ' '], // @System: is in no turn
      ...['╭', '│', '│', '│', '│', '╰'],
      ...['╭', ...Array<string>(17).fill('│'), '╰'],
      ...[' ', ' '], // the next prompt: no turn yet
    ]);
    // Two cells: the mark and the padding after it, then the text.
    expect(rows.slice(1, 4)).toEqual([
      '  |Be brief.',
      expect.stringMatching(/^╭ \|@You: ─+$/),
      '│ |Hello',
    ]);
  });

  it('shows a turn still waiting for its reply as open: ┊ inside, ╯ at its end', async () => {
    const d = await start();
    const lines = CONVERSATION.slice(0, 24).concat(['@You:', '']);
    await d.openChat('t.chat', lines);
    const marks = (await gutter(d, lines.length)).map((row) => row[0]);
    expect(marks.slice(8)).toEqual(['╭', ...Array<string>(16).fill('┊'), '╯']);
    expect(marks.slice(2, 8)).toEqual(['╭', '│', '│', '│', '│', '╰']);
  });

  it('puts the end mark on the last screen row of a last line that wraps', async () => {
    const d = await start();
    // 60 columns, two of them the gutter's: the reply's line takes three screen rows.
    const long = Array.from({ length: 24 }, (_, i) => `word${String(i)}`).join(' ');
    const buf = await d.openChat('t.chat', ['@You:', 'Hello', '@Assistant:', long]);
    expect((await gutter(d, 6)).map((row) => row[0])).toEqual(['╭', '│', '│', '│', '│', '╰']);
    // While the reply streams, the same rows with the open turn's marks.
    await d.lua(
      'require("flemma.rpc").dispatch("buffer.lock", { bufnr = (...), owner = "request" })',
      buf,
    );
    expect(await shown(d, 6)).toEqual(['╭', '┊', '┊', '┊', '┊', '╯']);
  });

  it('follows edits, also on rows the edit did not touch', async () => {
    const d = await start();
    const buf = await d.openChat('t.chat', ['@You:', 'Hello', '']);
    expect((await gutter(d, 3)).map((row) => row[0])).toEqual([' ', ' ', ' ']);
    // A reply written by hand: the question above it joins the turn.
    await d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "@Assistant:", "Hi." })');
    expect(await shown(d, 5)).toEqual(['╭', '│', '│', '│', '╰']);
    // The marker changed in place (no line added or removed): no turn, then one again.
    await d.lua('vim.api.nvim_buf_set_lines(0, 3, 4, false, { "Assistant:" })');
    expect(await shown(d, 5)).toEqual([' ', ' ', ' ', ' ', ' ']);
    await d.lua('vim.api.nvim_buf_set_lines(0, 3, 4, false, { "@Assistant:" })');
    expect(await shown(d, 5)).toEqual(['╭', '│', '│', '│', '╰']);
    // The reply removed again: no turn.
    await d.lua('vim.api.nvim_buf_set_lines(0, 3, -1, false, {})');
    expect(await shown(d, 3)).toEqual([' ', ' ', ' ']);
    // A send takes the buffer's lock before it writes anything (as the host does): the question
    // is a turn being answered at once, and no more once the lock is released.
    await d.lua(
      'require("flemma.rpc").dispatch("buffer.lock", { bufnr = (...), owner = "request" })',
      buf,
    );
    expect(await shown(d, 3)).toEqual(['╭', '┊', '╯']);
    await d.lua(
      'require("flemma.rpc").dispatch("buffer.unlock", { bufnr = (...), owner = "request" })',
      buf,
    );
    expect(await shown(d, 3)).toEqual([' ', ' ', ' ']);
  });

  it('marks a streaming reply as an open turn until it is complete', async () => {
    const { d, f: fake } = await session('', 'sk-test-key');
    await d.openChat('s.chat', ['@You:', 'Tell me.']);
    expect((await gutter(d, 2)).map((row) => row[0])).toEqual([' ', ' ']);
    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    await d.waitForEvent('FlemmaRequestSending');
    await d.afterScheduled();
    // Waiting for the first word: the question and the reply's marker are an open turn.
    expect((await gutter(d, 4)).map((row) => row[0])).toEqual(['╭', '┊', '┊', '╯']);
    const stream = request.stream();
    await stream.sse('message_start', MESSAGE_START);
    await textDeltas(stream, []);
    await textDelta(stream, 'Once\nupon\na time');
    await d.waitUntil('return vim.api.nvim_buf_get_lines(0, -2, -1, false)[1] == "a time"');
    await d.afterScheduled();
    expect((await gutter(d, 7)).map((row) => row[0])).toEqual(['╭', '┊', '┊', '┊', '┊', '┊', '╯']);
    await endMessage(stream);
    await d.waitForEvent('FlemmaRequestFinished');
    await d.afterScheduled();
    // Complete: closed marks, and the next prompt outside it.
    expect(await d.lines()).toEqual([
      '@You:',
      'Tell me.',
      '',
      '@Assistant:',
      'Once',
      'upon',
      'a time',
      '',
      '@You:',
      '',
    ]);
    expect((await gutter(d, 10)).map((row) => row[0])).toEqual([
      ...['╭', ...Array<string>(6).fill('│'), '╰'],
      ...[' ', ' '],
    ]);
  });

  it('ends the turn on a closed fold that hides its last row', async () => {
    const d = await start();
    await d.openChat('f.chat', [
      '@You:',
      'Q',
      '@Assistant:',
      'A1',
      'A2',
      '@You:',
      'Q2',
      '@Assistant:',
      'B',
    ]);
    await d.command('call cursor(4, 1)');
    await d.command('normal! zc');
    expect(await d.lua('return vim.fn.foldclosed(4)')).toBe(3);
    const rows = await gutter(d, 6);
    expect(rows.map((row) => row[0])).toEqual(['╭', '│', '╰', '╭', '│', '│']);
    expect(rows[2]).toMatch(/^╰ \|@Assistant:/);
  });

  it('draws each window from its own buffer, the current one or not', async () => {
    const d = await start();
    await d.openChat('w.chat', ['@You:', 'Hello', '@Assistant:', 'Hi.']);
    await d.command('split');
    await d.command('enew');
    const screen = await d.redraw();
    // The chat is now in the lower window, which is not the current one.
    const first = screen.find(/@You:/);
    expect(first).toBeGreaterThan(4);
    expect([0, 1, 2, 3].map((i) => screen.row(first + i)[0])).toEqual(['╭', '│', '│', '╰']);
    expect(await d.lua('return vim.wo.statuscolumn')).toBe('');
  });

  it('pads the marks as configured and uses the FlemmaTurn highlight from turns.hl', async () => {
    const d = await start('turns = { padding = { 1, 2 }, hl = "#ff0000" }');
    await d.openChat('p.chat', ['@You:', 'Hello', '@Assistant:', 'Hi.']);
    const rows = await gutter(d, 4, 4);
    expect(rows.map((row) => row.slice(0, 4))).toEqual([' ╭  ', ' │  ', ' │  ', ' ╰  ']);
    expect(d.screen.groupsAt(0, 1)).toContain('FlemmaTurn');
    expect(await d.lua('return vim.api.nvim_get_hl(0, { name = "FlemmaTurn" }).fg')).toBe(0xff0000);
  });

  it('keeps the line numbers and signs, and leaves other buffers in the window alone', async () => {
    const d = await start();
    await d.openChat('n.chat', ['@You:', 'Hello', '@Assistant:', 'Hi.']);
    await d.command('setlocal number');
    const rows = await gutter(d, 4, 4);
    expect(rows).toEqual([
      expect.stringMatching(/^ 1╭ \|@You: ─+$/),
      ' 2│ |Hello',
      expect.stringMatching(/^ 3│ \|@Assistant: ─+$/),
      ' 4╰ |Hi.',
    ]);
    // A sign goes before the number.
    await d.lua(
      'vim.api.nvim_buf_set_extmark(0, vim.api.nvim_create_namespace("test"), 1, 0, { sign_text = "S" })',
    );
    expect((await gutter(d, 2, 6))[1]).toBe('S  2│ |Hello');
    await d.command('edit other.txt');
    expect(await d.lua('return vim.wo.statuscolumn')).toBe('');
    await d.command('buffer n.chat');
    expect(await d.lua('return vim.wo.statuscolumn')).toContain('flemma.ui.turns');
  });

  it('is off with turns.enabled = false, also after setup() in an open chat window', async () => {
    const d = await start();
    await d.openChat('o.chat', ['@You:', 'Hello', '@Assistant:', 'Hi.']);
    expect((await gutter(d, 1))[0]?.[0]).toBe('╭');
    await d.lua(`require("flemma").setup({ ${UNFOLDED}, turns = { enabled = false } })`);
    expect(await d.lua('return vim.wo.statuscolumn')).toBe('');
    expect((await d.redraw()).row(0)).toMatch(/^@You: ─+$/);
    await d.openChat('o2.chat', ['@You:', 'Hello', '@Assistant:', 'Hi.']);
    expect(await d.lua('return vim.wo.statuscolumn')).toBe('');
  });
});
