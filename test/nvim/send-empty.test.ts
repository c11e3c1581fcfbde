// Sending nothing new: `<C-]>` (or `:Flemma send`) on a chat whose last `@You:` holds only
// whitespace says so and sends nothing, leaving the buffer as it was; the tool loop is not held
// up by an empty `@You:` (a call still gets its placeholder, runs, and its result goes back).
import { describe, expect, it } from 'vitest';
import { anthropicMessages } from '../helpers/anthropic-script.js';
import { callChat } from '../helpers/chat-lines.js';
import { ECHO_TOOL, launcher, type Session } from '../helpers/e2e.js';

const launch = launcher();

/** Neovim with `echo_tool` and these `tools` options; the chat `name` holding `lines`, booted. */
function start(name: string, lines: string[], tools = '{}'): Promise<Session> {
  return launch({
    key: 'sk-ant-test-key',
    config: `{ tools = ${tools} }`,
    lua: ECHO_TOOL,
    chat: { name, lines },
  });
}

const NOTHING = /^Flemma: Nothing to send: the last @You: message is empty$/;

const ANSWERED = ['@You:', 'Hi.', '', '@Assistant:', 'Hello.', ''];

describe('an empty trailing @You:', () => {
  it.each([
    ['<C-]>', ['@You:', '']],
    ['<C-]>', ['@You:', '   ', '\t', '']],
    [':Flemma send', ['@You:']],
  ])('%s says there is nothing to send and leaves the buffer (%j)', async (how, tail) => {
    const { d, f, buf } = await start('empty.chat', [...ANSWERED, ...tail]);
    const before = await d.lines(buf);
    if (how === '<C-]>') await d.press('<C-]>');
    else await d.command('Flemma send');
    const note = await d.waitForNotification(/Nothing to send/);
    expect(note.message).toMatch(NOTHING);
    expect(note.level).toBe(2);
    expect(f.requests).toHaveLength(0);
    expect(d.eventsSeen('FlemmaRequestSending')).toHaveLength(0);
    expect(await d.lines(buf)).toEqual(before);
    expect(await d.lua('return vim.bo.modifiable')).toBe(true);
  });

  it('two empty @You: messages after the reply: nothing new either', async () => {
    const { d, f } = await start('two.chat', [...ANSWERED, '@You:', '', '@You:', ' ']);
    await d.press('<C-]>');
    expect((await d.waitForNotification(/Nothing to send/)).message).toMatch(NOTHING);
    expect(f.requests).toHaveLength(0);
  });

  it('a question under it is sent as usual', async () => {
    const session = await start('asked.chat', [...ANSWERED, '@You:', 'And now?']);
    const request = await session.send();
    expect(anthropicMessages(request).at(-1)?.content).toEqual([
      { type: 'text', text: 'And now?' },
    ]);
    await session.replyAndWait('Now this.');
  });

  it('does not hold up the tool loop: the call runs and its result goes back', async () => {
    const session = await start(
      'loop.chat',
      [...callChat('Echo.', [['echo_tool', 'toolu_E', '{"text":"x"}']]), '', '@You:', '  '],
      '{ auto_approve = { "echo_tool" } }',
    );
    const { d, buf } = session;
    // Approved by the configuration, run, and sent back by autopilot.
    const request = await session.send();
    expect(anthropicMessages(request).at(-1)?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_E', content: 'echo: x' },
    ]);
    await session.replyAndWait('Done.');
    expect((await d.lines(buf)).slice(-4)).toEqual(['Done.', '', '@You:', '']);
    expect(d.notifications().filter((note) => /Nothing to send/.test(note.message))).toEqual([]);
  });

  it(':Flemma send after an unanswered call sends its error result', async () => {
    const session = await start('unanswered.chat', [
      ...callChat('Echo.', [['echo_tool', 'toolu_U', '{"text":"x"}']]),
      '',
      '@You:',
      '',
    ]);
    await session.d.command('Flemma send');
    const request = await session.request();
    const last = anthropicMessages(request).at(-1)?.content ?? [];
    expect(last[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_U', is_error: true });
    await session.replyAndWait('Ok.');
  });
});
