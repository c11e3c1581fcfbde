// The context meter end to end (docs/context.md, "The context meter"): after a reply from a fake
// Anthropic server, the usage bar, `:Flemma status` and the statusline show the reply's input
// tokens against the model's window; `:Flemma context` estimates the next request without sending
// it; a send whose request nears the window warns first (once per crossing), and one below it
// does not.
import { describe, expect, it } from 'vitest';
import { anthropicBlocks, replyBlocks } from '../helpers/anthropic-script.js';
import { type Driver, type Notification } from '../helpers/driver.js';
import { launcher, type Session } from '../helpers/e2e.js';
import { type FakeProvider, type FakeRequest } from '../helpers/fake-provider.js';
import { usageBar } from '../helpers/usage.js';

const launch = launcher();

/** Streams a text reply whose usage reports these input tokens (uncached, cache read, cache write). */
function reply(
  request: FakeRequest,
  text: string,
  input = { uncached: 2000, cacheRead: 6000, cacheWrite: 1000 },
): Promise<void> {
  const { uncached, cacheRead, cacheWrite } = input;
  const usage = { input: uncached, cacheRead, cacheWrite, output: 410 };
  return anthropicBlocks(request, replyBlocks(text, [], true), usage);
}

function setup(
  options: { config?: string; lines?: string[]; width?: number } = {},
): Promise<Session> {
  return launch({
    setup: `require("flemma").setup(${options.config ?? '{}'})`,
    ui: { width: options.width ?? 120, height: 30 },
    chat: { name: 'context.chat', lines: options.lines ?? ['@You:', 'Hello'], boot: false },
  });
}

/** The text of the usage bar, once it shows. */
async function bar(d: Driver): Promise<string> {
  return (await usageBar(d)) ?? '';
}

/** The lines of a report buffer (`flemma://status`, `flemma://context`), once it is shown. */
async function report(d: Driver, name: string): Promise<string[]> {
  await d.waitUntil(
    `local buf = vim.fn.bufnr(...) return buf ~= -1 and vim.fn.bufwinid(buf) ~= -1`,
    { args: [name] },
  );
  return d.lua<string[]>(
    'return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)',
    name,
  );
}

/** Send from the chat (its window current) and answer with a reply of these input tokens. */
async function sendAndReply(
  d: Driver,
  f: FakeProvider,
  input?: { uncached: number; cacheRead: number; cacheWrite: number },
): Promise<FakeRequest> {
  const before = d.eventCount;
  await d.press('<C-]>');
  const request = await f.nextRequest({ path: '/v1/messages' });
  await reply(request, 'Hi.', input);
  await d.waitForEvent('FlemmaRequestFinished', { after: before });
  return request;
}

/** Write a new `@You:` message at the end of the chat (normal mode after). */
async function ask(d: Driver, text: string): Promise<void> {
  await d.press('GA');
  await d.type(text);
  await d.press('<Esc>');
}

/**
 * `:Flemma status` reports the last request's context as `figure` of claude-sonnet-4-6's window
 * (the model it went to), and the `window` line.
 */
async function statusShows(d: Driver, figure: string, window: string): Promise<void> {
  await d.press(':Flemma status<CR>');
  const lines = await report(d, 'flemma://status');
  expect(lines).toContain(
    `context: last request ${figure} of claude-sonnet-4-6's window (as the provider counted its input)`,
  );
  expect(lines).toContain(window);
}

describe('the meter after a reply', () => {
  it('shows all the input the provider counted against the model’s window, in the bar, :Flemma status and the statusline', async () => {
    const { d, f, buf } = await setup();
    // 2000 uncached + 6000 read from the cache + 1000 written to it: 9000 of claude-sonnet-4-6's 200k.
    await sendAndReply(d, f);
    expect(await bar(d)).toBe(
      ' claude-sonnet-4-6 (anthropic) │ $0.0177 66% cached ↑9k / 200k (4%) ↓410 │ Σ1 $0.0177 ↑9k ↓410 ',
    );
    expect(await d.lua('return require("flemma.usage").context(...)', buf)).toEqual({
      tokens: 9000,
      window: 200_000,
      source: 'model',
      percent: 4,
      text: '9k / 200k (4%)',
      warn: false,
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
    });
    // Per buffer: another chat has no figure.
    const other = await d.openChat('other.chat', ['@You:', 'Hi']);
    expect(await d.lua('return require("flemma.usage").context(...)', other)).toBeNull();
    await d.command(`buffer ${String(buf)}`);
    // The default statusline format ends with the meter.
    expect(await d.lua('return require("flemma.statusline").get(...)', buf)).toBe(
      'claude-sonnet-4-6 (high) · 1 req $0.02 · 9k / 200k (4%)',
    );
    await statusShows(
      d,
      '9k / 200k (4%)',
      '  window of claude-sonnet-4-6: 200k (from the model table)',
    );
  });

  it('follows context.window, colours the bar past warn_at, and stays with the model the request went to', async () => {
    const { d, f, buf } = await setup({ config: '{ context = { window = 10000 } }' });
    await sendAndReply(d, f);
    expect(await bar(d)).toContain('↑9k / 10k (90%)');
    const marks = await d.lua<string[]>(
      `
      local usage = require("flemma.usage").bar(...)
      local ns = vim.api.nvim_get_namespaces()["flemma.usage"]
      local out = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(usage.buf, ns, 0, -1, { details = true })) do
        table.insert(out, m[4].hl_group)
      end
      return out`,
      buf,
    );
    expect(marks).toContain('FlemmaUsageContextHigh');
    // Another model for the next requests: the figure is still the last request's, against the
    // window of the model it went to; the status says the window of the model in use now.
    await d.press(':Flemma switch anthropic claude-opus-4-6<CR>');
    await d.waitUntil('return require("flemma.config").get(0).model == "claude-opus-4-6"');
    expect(await d.lua('return require("flemma.usage").context(...).model', buf)).toBe(
      'claude-sonnet-4-6',
    );
    await statusShows(
      d,
      '9k / 10k (90%)',
      '  window of claude-opus-4-6: 10k (from context.window)',
    );
    expect(await d.lua('return require("flemma.statusline").get(...)', buf)).toMatch(
      / · 9k \/ 10k \(90%\)$/,
    );
  });
});

describe(':Flemma context', () => {
  const CHAT = [
    '@System:',
    'Be brief.',
    '',
    '@You:',
    'What is 15 * 7, and 2 + 2?',
    '',
    '@Assistant:',
    '**Tool Use:** `calculator` (`toolu_01`)',
    '',
    '```json',
    '{"expression": "15 * 7"}',
    '```',
    '',
    '**Tool Use:** `calculator` (`toolu_02`)',
    '',
    '```json',
    '{"expression": "2 + 2"}',
    '```',
    '',
    '@You:',
    '**Tool Result:** `toolu_01`',
    '',
    '```',
    '105',
    '```',
    '',
    '**Tool Result:** `toolu_02`',
    '',
    '```',
    `4 ${'and a long explanation '.repeat(300)}`,
    '```',
    '',
    'Thanks.',
  ];

  it('estimates the next request against the window, with what it is made of, and sends nothing', async () => {
    const { d, f, buf } = await setup({ lines: CHAT });
    await d.press(':Flemma context<CR>');
    const lines = await report(d, 'flemma://context');
    expect(lines[0]).toMatch(
      /^Next request ≈ \d+(\.\d)?k \/ 200k \(\d+%\) tokens, claude-sonnet-4-6 \(anthropic\)$/,
    );
    expect(lines[1]).toBe('  window: 200k from the model table');
    expect(lines.some((line) => /^ {2}system prompt +\d/.test(line))).toBe(true);
    expect(lines.some((line) => /^ {2}tool definitions +\S+ {2}\d+ tools?$/.test(line))).toBe(true);
    expect(lines.some((line) => /^ {2}messages +\S+ {2}3 messages$/.test(line))).toBe(true);
    // The largest tool results first, with their tool and where they are in the chat.
    const largest = lines.indexOf('Largest tool results:');
    expect(largest).toBeGreaterThan(0);
    expect(lines[largest + 1]).toMatch(/^ +2k {2}calculator {2}line 27 {2}toolu_02$/);
    expect(lines[largest + 2]).toMatch(/^ +\d+ {2}calculator {2}line 21 {2}toolu_01$/);
    expect(lines.at(-1)).toBe('count: :Flemma usage:estimate. Nothing was sent.');
    // Nothing went out, nothing in the chat changed.
    expect(f.requests).toEqual([]);
    expect(await d.lines(buf)).toEqual(CHAT);
    expect(await d.lua('return vim.bo[...].modified', buf)).toBe(false);
  });

  it.each([
    [
      'between turns (the last @You: is empty), the chat so far',
      ['@You:', 'What is 15 * 7?', '', '@Assistant:', '105.', '', '@You:', ''],
      'Between turns: the chat so far, without the empty @You: message at its end.',
      2,
    ],
    [
      'before the first message, the system prompt and tools',
      ['@System:', 'Be brief.', '', '@You:', ''],
      'No message yet: the system prompt and the tools only.',
      0,
    ],
  ])('answers %s, and says so', async (_what, chat, note, messages) => {
    const { d, f, buf } = await setup({ lines: chat });
    await d.press(':Flemma context<CR>');
    const lines = await report(d, 'flemma://context');
    expect(lines[0]).toMatch(/^Next request ≈ \S+ \/ 200k \(\d+%\) tokens, claude-sonnet-4-6/);
    expect(lines[2]).toBe(note);
    const count = `${String(messages)} message${messages === 1 ? '' : 's'}`;
    expect(lines.some((line) => new RegExp(`^ {2}messages +\\S+ {2}${count}$`).test(line))).toBe(
      true,
    );
    expect(d.notifications().filter((n) => /Nothing to send/.test(n.message))).toEqual([]);
    expect(f.requests).toEqual([]);
    expect(await d.lines(buf)).toEqual(chat);
  });
});

describe('context.window in a frontmatter', () => {
  it('applies to that chat only', async () => {
    const { d, f, buf } = await setup({
      lines: ['```json', '{ "flemma": { "context": { "window": 20000 } } }', '```', '@You:', 'Hi'],
    });
    await d.press(':Flemma context<CR>');
    const lines = await report(d, 'flemma://context');
    expect(lines[0]).toMatch(/ \/ 20k \(\d+%\) tokens, claude-sonnet-4-6 \(anthropic\)$/);
    expect(lines[1]).toBe('  window: 20k from context.window');
    await d.command('close');
    await d.command(`buffer ${String(buf)}`);
    await sendAndReply(d, f);
    expect(await bar(d)).toContain('↑9k / 20k (45%)');
    const other = await d.openChat('plain.chat', ['@You:', 'Hi']);
    await sendAndReply(d, f);
    expect(await d.lua('return require("flemma.usage").context(...).text', other)).toBe(
      '9k / 200k (4%)',
    );
  });
});

describe('the warning before a send', () => {
  /** About 100k tokens of text (3.5 bytes a token). */
  const LONG = ['@You:', 'x'.repeat(350_000)];
  const WARNING = /Context ≈/;
  /** Wide enough for the whole warning on the command line (a narrower one shortens it). */
  const WIDTH = 180;

  /** The long chat sent with a context window of `window` tokens; the warning it gave. */
  async function warned(
    window: number,
  ): Promise<{ d: Driver; f: FakeProvider; note: Notification }> {
    const { d, f } = await setup({
      config: `{ context = { window = ${String(window)} } }`,
      lines: LONG,
      width: WIDTH,
    });
    await sendAndReply(d, f);
    return { d, f, note: await d.waitForNotification(WARNING) };
  }

  it('warns at warn_at with the figures and what to do, once per crossing, and the send still goes', async () => {
    const { d, f, note } = await warned(110000);
    expect(note.message).toMatch(
      /^Flemma: Context ≈ 10\d(\.\d)?k \/ 110k \(9\d%\) of claude-sonnet-4-6's window\. Make room: :Flemma compact, or context\.budget\.$/,
    );
    // A second send that stays past the share does not repeat it.
    await ask(d, 'More.');
    await sendAndReply(d, f);
    expect(d.notifications().filter((n) => WARNING.test(n.message))).toHaveLength(1);
  });

  it('says the provider will likely refuse a request over the window', async () => {
    const { note } = await warned(50000);
    expect(note.message).toMatch(
      /^Flemma: Context ≈ 10\d(\.\d)?k \/ 50k \(2\d\d%\) of claude-sonnet-4-6's window: the provider will likely refuse it\. Make room: :Flemma compact, or context\.budget\.$/,
    );
  });

  it('says nothing below warn_at', async () => {
    const { d, f } = await setup({ lines: LONG });
    await sendAndReply(d, f);
    expect(d.notifications().filter((n) => WARNING.test(n.message))).toEqual([]);
  });
});
