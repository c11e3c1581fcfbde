// `<C-]>` in Insert mode: it leaves Insert mode, runs the step, and comes back to Insert mode when
// the user has the word again (the reply finished, the placeholders are written, the tools are
// done, the chain of autopilot stopped, or the step was refused), but only in the chat's window
// and from Normal mode. The fake Anthropic server answers the sends.
import { describe, expect, it } from 'vitest';
import {
  anthropicReply,
  anthropicStream,
  type ScriptedStream,
} from '../helpers/anthropic-script.js';
import { type FakeProvider, type FakeRequest } from '../helpers/fake-provider.js';
import { type Driver } from '../helpers/driver.js';
import {
  launcher,
  openBooted,
  type Session,
  GATED_TOOL,
  ECHO_TOOL,
  STEP_WITNESS,
} from '../helpers/e2e.js';
import { callChat, toolResult } from '../helpers/chat-lines.js';

const launch = launcher();

// The test's own witness of the host's answer (`User TestStepEnded`), and the tools.
const WITNESS = STEP_WITNESS;
const TOOLS = `${ECHO_TOOL}\n${GATED_TOOL}`;

function start(options: string, chat?: { name: string; lines: string[] }): Promise<Session> {
  return launch({
    key: 'sk-ant-test-key',
    setup: `require("flemma").setup(${options})\n${TOOLS}\n${WITNESS}`,
    ...(chat === undefined ? {} : { chat }),
  });
}

interface Pressed {
  d: Driver;
  f: FakeProvider;
  buf: number;
  /** The event count before the keys. */
  seen: number;
}

/** Neovim set up with `options` and the chat `name` holding `lines`; `keys` pressed there. */
async function pressed(
  options: string,
  name: string,
  lines: string[],
  keys = 'GA<C-]>',
): Promise<Pressed> {
  const session = await start(options, { name, lines });
  const seen = session.d.eventCount;
  await session.d.press(keys);
  return { d: session.d, f: session.f, buf: session.buf, seen };
}

/** `pressed` with `GA<C-]>`, and the request it sent. */
async function sentFromInsert(
  options: string,
  name: string,
  lines: string[],
): Promise<Pressed & { request: FakeRequest }> {
  const keys = await pressed(options, name, lines);
  return { ...keys, request: await keys.f.nextRequest({ path: '/v1/messages' }) };
}

/** `sentFromInsert` on a chat asking `Hello`, answered by a stream that has sent `text` so far. */
async function streamingFromInsert(
  name: string,
  text: string,
): Promise<{ d: Driver; buf: number; seen: number; stream: ScriptedStream }> {
  const { d, buf, seen, request } = await sentFromInsert('{}', name, ['@You:', 'Hello']);
  const stream = await anthropicStream(request);
  await stream.text(text);
  return { d, buf, seen, stream };
}

async function cursor(d: Driver): Promise<[number, number]> {
  return d.lua<[number, number]>('return vim.api.nvim_win_get_cursor(0)');
}

async function stepEnded(d: Driver, after: number): Promise<boolean> {
  const event = await d.waitForEvent('TestStepEnded', { after });
  return event.data['resumed'] === true;
}

describe('<C-]> in Insert mode', () => {
  it('comes back to Insert mode on the new @You: once the reply has finished', async () => {
    const { d, f } = await start('{}');
    const buf = await d.openChat('insert.chat', ['@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete');
    const seen = d.eventCount;
    await d.press('GA');
    expect(await d.mode()).toBe('i');
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    const stream = await anthropicStream(request);
    await stream.text('Hi there.');
    await d.waitUntil(
      'return table.concat(vim.api.nvim_buf_get_lines(..., 0, -1, false), "\\n"):find("Hi there.", 1, true) ~= nil',
      { args: [buf] },
    );
    // While the reply streams the user is in Normal mode.
    expect(await d.mode()).toBe('n');
    await stream.finish();
    expect(await stepEnded(d, seen)).toBe(true);
    expect(await d.mode()).toBe('i');
    const lines = await d.lines(buf);
    expect(lines.slice(-3)).toEqual(['', '@You:', '']);
    // On the empty line under the new `@You:`, where the follow-up is typed.
    expect((await cursor(d))[0]).toBe(lines.length);
    await d.type('More.');
    expect((await d.lines(buf)).slice(-2)).toEqual(['@You:', 'More.']);
  });

  it('comes back after the reply was cancelled (<C-c>)', async () => {
    const { d, buf, seen } = await streamingFromInsert('cancel.chat', 'Partial');
    await d.waitUntil(
      'return table.concat(vim.api.nvim_buf_get_lines(..., 0, -1, false), "\\n"):find("Partial", 1, true) ~= nil',
      { args: [buf] },
    );
    // What <C-c> runs (a Ctrl-C sent with nvim_input can arrive as an interrupt that flushes the
    // typeahead instead of as a key, depending on what Neovim is doing at that instant).
    await d.command('Flemma cancel');
    expect(await stepEnded(d, seen)).toBe(true);
    expect(await d.mode()).toBe('i');
    expect(d.eventsSeen('FlemmaRequestFinished').at(-1)?.data['status']).toBe('cancelled');
  });

  it('stays in Normal mode, on the call, when the placeholders wait for approval', async () => {
    const { d, f, buf, seen } = await pressed('{ tools = { autopilot = false } }', 'pending.chat', [
      ...callChat('Echo hi.', [['echo_tool', 'toolu_01', '{"text":"hi"}']]),
      '',
      '@You:',
      '',
    ]);
    // The "Approval needed" message stays on screen: no `-- INSERT --` over it.
    expect(await stepEnded(d, seen)).toBe(false);
    expect(await d.mode()).toBe('n');
    const lines = await d.lines(buf);
    expect(lines).toContain('```flemma:tool status=pending');
    // The cursor stays where the step put it: the header of the call that waits.
    const header = lines.indexOf('**Tool Result:** `toolu_01`') + 1;
    expect((await cursor(d))[0]).toBe(header);
    expect(f.requests).toHaveLength(0);
  });

  it('answers when the approved tools are done, not before, in Normal mode on the result', async () => {
    const { d } = await start('{ tools = { autopilot = false } }');
    const buf = await openBooted(
      d,
      'tools.chat',
      callChat('Wait.', [['gated_tool', 'toolu_G']], 'approved'),
    );
    // The chat is the user's: its `approved` stands (in a file not trusted the chain judges it).
    await d.command('trust');
    const seen = d.eventCount;
    await d.press('GA<C-]>');
    await d.waitForEvent('FlemmaToolExecuting', { after: seen });
    await d.waitUntil('return _G.finish_gated ~= nil');
    expect(await d.mode()).toBe('n');
    expect(d.eventsSeen('TestStepEnded')).toHaveLength(0);
    await d.lua('_G.finish_gated("done")');
    // Autopilot is off: the results are not sent yet, and the cursor is on the result's header
    // (`tools.cursor_after_result`), where typing would change the block.
    expect(await stepEnded(d, seen)).toBe(false);
    expect(await d.mode()).toBe('n');
    const done = await d.lines(buf);
    expect((await cursor(d))[0]).toBe(done.indexOf('**Tool Result:** `toolu_G`') + 1);
    expect((await d.lines(buf)).slice(-5)).toEqual(toolResult('toolu_G', ['done']));
  });

  it('with autopilot, comes back when the chain stops, not after its first step', async () => {
    const {
      d,
      f,
      buf,
      seen,
      request: first,
    } = await sentFromInsert('{ tools = { auto_approve = { "echo_tool" } } }', 'chain.chat', [
      '@You:',
      'Echo twice.',
    ]);
    await anthropicReply(first, 'Echoing.', [
      { id: 'toolu_E', name: 'echo_tool', input: { text: 'hi' } },
    ]);
    // The tool ran by itself and autopilot sent its result: still Normal mode.
    const second = await f.nextRequest({ path: '/v1/messages' });
    await d.waitForEvent('FlemmaToolCompleted', { after: seen });
    expect(await d.mode()).toBe('n');
    expect(d.eventsSeen('TestStepEnded')).toHaveLength(0);
    await anthropicReply(second, 'Done.');
    expect(await stepEnded(d, seen)).toBe(true);
    expect(await d.mode()).toBe('i');
    const lines = await d.lines(buf);
    expect(lines.slice(-5)).toEqual(['@Assistant:', 'Done.', '', '@You:', '']);
    expect((await cursor(d))[0]).toBe(lines.length);
  });

  it('with autopilot, answers in Normal mode when the chain pauses at a call that waits', async () => {
    const { d, f, buf, seen, request } = await sentFromInsert('{}', 'pause.chat', [
      '@You:',
      'Echo.',
    ]);
    await anthropicReply(request, 'Echoing.', [
      { id: 'toolu_P', name: 'echo_tool', input: { text: 'hi' } },
    ]);
    expect(await stepEnded(d, seen)).toBe(false);
    expect(await d.mode()).toBe('n');
    const lines = await d.lines(buf);
    expect(lines).toContain('```flemma:tool status=pending');
    expect((await cursor(d))[0]).toBe(lines.indexOf('**Tool Result:** `toolu_P`') + 1);
    expect(f.requests).toHaveLength(1);
  });

  it('comes back at once when there is nothing to send, with the key mapped elsewhere', async () => {
    const { d, f, buf, seen } = await pressed(
      '{ keymaps = { insert = { send = "<C-s>" } } }',
      'nothing.chat',
      ['@You:', 'Hi.', '', '@Assistant:', 'Hello.', '', '@You:', ''],
      'GA<C-s>',
    );
    expect(await stepEnded(d, seen)).toBe(true);
    await d.waitForNotification(/Nothing to send/);
    expect(await d.mode()).toBe('i');
    expect(f.requests).toHaveLength(0);
    // Nothing changed: the cursor is where the user left Insert mode.
    expect((await cursor(d))[0]).toBe((await d.lines(buf)).length);
  });

  it('stays in Normal mode when the user went to another window meanwhile', async () => {
    const { d, buf, seen, stream } = await streamingFromInsert('moved.chat', 'Hi.');
    const chatWin = await d.lua<number>('return vim.api.nvim_get_current_win()');
    await d.command('new');
    const other = await d.lua<number>('return vim.api.nvim_get_current_win()');
    expect(other).not.toBe(chatWin);
    await stream.finish();
    expect(await stepEnded(d, seen)).toBe(false);
    expect(await d.mode()).toBe('n');
    expect(await d.lua<number>('return vim.api.nvim_get_current_win()')).toBe(other);
    expect((await d.lines(buf)).slice(-2)).toEqual(['@You:', '']);
  });

  it('stays in Visual mode when the user started it meanwhile', async () => {
    const { d, seen, stream } = await streamingFromInsert('visual.chat', 'Hi.');
    await d.press('gg');
    await d.press('v');
    expect(await d.mode()).toBe('v');
    await stream.finish();
    expect(await stepEnded(d, seen)).toBe(false);
    expect(await d.mode()).toBe('v');
  });

  it('leaves a command line being typed alone', async () => {
    const { d, buf, seen, stream } = await streamingFromInsert('cmdline.chat', 'Hi.');
    await d.press(':echo');
    expect(await d.mode()).toBe('c');
    await stream.finish();
    expect(await stepEnded(d, seen)).toBe(false);
    expect(await d.mode()).toBe('c');
    await d.press('<Esc>');
    expect(await d.mode()).toBe('n');
    expect((await d.lines(buf)).slice(-2)).toEqual(['@You:', '']);
  });

  it('from Normal mode, <C-]> stays in Normal mode', async () => {
    const { d, f } = await start('{}');
    await d.openChat('normal.chat', ['@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    await anthropicReply(request, 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished');
    await d.afterScheduled();
    expect(await d.mode()).toBe('n');
    expect(d.eventsSeen('TestStepEnded').map((event) => event.data['resumed'])).not.toContain(true);
  });
});
