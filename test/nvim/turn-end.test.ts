// The turn ends where the user goes on (docs/tools.md, "Where the cursor goes"): after an action
// that ends a turn (`<C-]>`, `<M-CR>`, `:Flemma send`, approving or rejecting), from Normal or
// Insert mode, the cursor of its window is on the empty `@You:` at the end once the model's turn
// is over, or on the first call that waits; Insert mode comes back only after a normal end, so
// that an error or "Approval needed" stays on screen. The approve commands go on once nothing
// waits. The fake Anthropic server answers the sends.
import { describe, expect, it } from 'vitest';
import { anthropicMessages, anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { toolResult } from '../helpers/chat-lines.js';
import { type Session, launcher, openBooted, ECHO_TOOL, STEP_WITNESS } from '../helpers/e2e.js';
import { type FakeProvider } from '../helpers/fake-provider.js';

const launch = launcher();

// The test's witness of the host's answer (`User TestStepEnded`), and `echo_tool`.
const WITNESS = `${STEP_WITNESS}\n${ECHO_TOOL}`;

function start(options: string, ui?: { width: number; height: number }): Promise<Session> {
  return launch({
    key: 'sk-ant-test-key',
    config: options,
    lua: WITNESS,
    ...(ui === undefined ? {} : { ui }),
  });
}

function toolUse(id: string, text: string): string[] {
  return [`**Tool Use:** \`echo_tool\` (\`${id}\`)`, '', '```json', `{"text":"${text}"}`, '```'];
}

function pending(id: string): string[] {
  return [`**Tool Result:** \`${id}\``, '', '```flemma:tool status=pending', '```'];
}

/**
 * `<C-]>` from Normal mode; the model asks for `id`, which is not approved by default: autopilot
 * stops at it, waiting for approval.
 */
async function askFor(d: Driver, f: FakeProvider, id: string): Promise<void> {
  const seen = d.eventCount;
  await d.press('<C-]>');
  await anthropicReply(await f.nextRequest({ path: '/v1/messages' }), 'Echoing.', [
    { id, name: 'echo_tool', input: { text: id } },
  ]);
  expect((await stepEnded(d, seen)).outcome).toBe('waiting');
}

/**
 * `act` sends (keys or a command); the model answers `text` and the step ends done. The chat's
 * lines then.
 */
async function answered(
  { d, f, buf }: { d: Driver; f: FakeProvider; buf: number },
  act: () => Promise<void>,
  text: string,
): Promise<string[]> {
  const seen = d.eventCount;
  await act();
  await anthropicReply(await f.nextRequest({ path: '/v1/messages' }), text);
  expect((await stepEnded(d, seen)).outcome).toBe('done');
  return d.lines(buf);
}

/**
 * The chat `name` asking to echo; `askFor` the call `id`: autopilot stopped at it, and the cursor
 * is on it.
 */
async function waitingOn(
  name: string,
  id: string,
): Promise<{ d: Driver; f: FakeProvider; buf: number }> {
  const { d, f } = await start('{}');
  const buf = await openBooted(d, name, ['@You:', 'Echo.']);
  await askFor(d, f, id);
  expect(await row(d)).toBe((await d.lines(buf)).indexOf(`**Tool Result:** \`${id}\``) + 1);
  return { d, f, buf };
}

/**
 * `G<C-]>` on the chat `name` holding `lines`; while the reply (`text`) comes, the user puts the
 * cursor on line `at`. The chat's lines and the cursor's line once the step has ended.
 */
async function movedWhileReplying(
  name: string,
  lines: string[],
  at: number,
  text: string,
): Promise<{ after: string[]; cursor: number }> {
  const { d, f } = await start('{}');
  const buf = await openBooted(d, name, lines);
  const seen = d.eventCount;
  await d.press('G<C-]>');
  const request = await f.nextRequest({ path: '/v1/messages' });
  await d.command(`call cursor(${String(at)}, 1)`);
  await anthropicReply(request, text);
  await stepEnded(d, seen);
  return { after: await d.lines(buf), cursor: await row(d) };
}

/** A chat whose last reply asks for `ids`, each call waiting for approval. */
function waitingChat(ids: string[]): string[] {
  return [
    '@You:',
    'Echo.',
    '',
    '@Assistant:',
    ...ids.flatMap((id) => [...toolUse(id, id), '']),
    '@You:',
    ...ids.flatMap((id, index) => [...(index === 0 ? [] : ['']), ...pending(id)]),
  ];
}

async function row(d: Driver): Promise<number> {
  return (await d.lua<[number, number]>('return vim.api.nvim_win_get_cursor(0)'))[0];
}

async function stepEnded(d: Driver, after: number): Promise<{ resumed: boolean; outcome: string }> {
  const event = await d.waitForEvent('TestStepEnded', { after });
  return { resumed: event.data['resumed'] === true, outcome: String(event.data['outcome']) };
}

/** The user's follow-up: `A`, a question, `<C-]>` from Insert mode; the request it sends. */
async function askNext(d: Driver, f: FakeProvider, question: string): Promise<string> {
  await d.press('A');
  await d.type(question);
  await d.press('<C-]>');
  const request = await f.nextRequest({ path: '/v1/messages' });
  const last = anthropicMessages(request).at(-1);
  const content = last?.content;
  return JSON.stringify(content);
}

describe('the turn ends where the user goes on', () => {
  it('<M-CR> from Normal mode: on the empty @You: once the reply is over, and A asks the next question', async () => {
    // Autopilot stopped at the call, which waits for approval: the cursor is on it.
    const chat = await waitingOn('mcr.chat', 'toolu_A');
    const { d, f } = chat;
    const after = await answered(chat, () => d.press('<M-CR>'), 'Echoed.');
    expect(after.slice(-2)).toEqual(['@You:', '']);
    expect(await row(d)).toBe(after.length);
    expect(await d.mode()).toBe('n');
    expect(await askNext(d, f, 'And now?')).toContain('And now?');
  });

  it('<C-]> from Normal mode on the calls: on the empty @You: after the tool round', async () => {
    const { d, f } = await start('{ tools = { auto_approve = { "echo_tool" } } }');
    const buf = await d.openChat('cycle.chat', [
      '@You:',
      'Echo.',
      '',
      '@Assistant:',
      ...toolUse('toolu_B', 'b'),
      '',
    ]);
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('call cursor(5, 1)');
    const after = await answered({ d, f, buf }, () => d.press('<C-]>'), 'Done.');
    expect(after.slice(-5)).toEqual(['@Assistant:', 'Done.', '', '@You:', '']);
    expect(await row(d)).toBe(after.length);
  });

  it(':Flemma send from Normal mode: on the empty @You: under the reply', async () => {
    const { d, f } = await start('{}');
    const buf = await d.openChat('send.chat', ['@You:', 'Hello', '', 'more']);
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('call cursor(1, 1)');
    const after = await answered({ d, f, buf }, () => d.command('Flemma send'), 'Hi.');
    expect(after.slice(-2)).toEqual(['@You:', '']);
    expect(await row(d)).toBe(after.length);
  });

  it('leaves a cursor the user moved elsewhere while the reply streamed', async () => {
    const chat = ['@You:', 'Hello', '', 'more'];
    const { after, cursor } = await movedWhileReplying('moved.chat', chat, 2, 'Hi.');
    expect(after.slice(-2)).toEqual(['@You:', '']);
    expect(cursor).toBe(2);
  });

  it('leaves a cursor the user moved into an earlier tool block', async () => {
    const chat = [
      '@You:',
      'Echo.',
      '',
      '@Assistant:',
      ...toolUse('toolu_H', 'h'),
      '',
      '@You:',
      ...toolResult('toolu_H', ['echo: h']),
      '',
      '@Assistant:',
      'Echoed.',
      '',
      '@You:',
      'Again?',
    ];
    // Reading the earlier call (line 5) while the reply comes.
    const { after, cursor } = await movedWhileReplying('history.chat', chat, 5, 'Yes.');
    expect(after.slice(-2)).toEqual(['@You:', '']);
    expect(cursor).toBe(5);
  });

  it('<C-]> from Insert mode that fails: Normal mode, the error on screen', async () => {
    const { d, f } = await start('{}', { width: 100, height: 20 });
    await d.openChat('fails.chat', ['@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete');
    const seen = d.eventCount;
    await d.press('GA<C-]>');
    await (
      await f.nextRequest({ path: '/v1/messages' })
    ).respondError(400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'bad request' },
    });
    const ended = await stepEnded(d, seen);
    expect(ended).toEqual({ resumed: false, outcome: 'failed' });
    expect(await d.mode()).toBe('n');
    const screen = await d.waitForScreen((s) => /bad request/.test(s.rows().join('\n')), {
      what: 'the error',
    });
    expect(screen.rows().join('\n')).not.toContain('-- INSERT --');
  });

  it('<M-CR> in Insert mode runs the call under the cursor, and Insert comes back on the new @You:', async () => {
    const { d, f, buf } = await waitingOn('insert-mcr.chat', 'toolu_I');
    const seen = d.eventCount;
    await d.press('i');
    expect(await d.mode()).toBe('i');
    await d.press('<M-CR>');
    await d.waitForEvent('FlemmaToolCompleted', { after: seen });
    await anthropicReply(await f.nextRequest({ path: '/v1/messages' }), 'Echoed.');
    expect(await stepEnded(d, seen)).toEqual({ resumed: true, outcome: 'done' });
    expect(await d.mode()).toBe('i');
    const after = await d.lines(buf);
    expect(after.slice(-2)).toEqual(['@You:', '']);
    expect(await row(d)).toBe(after.length);
  });

  it(':Flemma tool:approve moves to the next call that waits; a rejection runs the approved ones and goes on', async () => {
    const { d, f } = await start('{}');
    const ids = ['toolu_1', 'toolu_2', 'toolu_3', 'toolu_4'];
    const buf = await d.openChat('approve.chat', waitingChat(ids));
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('trust');
    const header = async (id: string): Promise<number> =>
      (await d.lines(buf)).indexOf(`**Tool Result:** \`${id}\``) + 1;
    await d.command(`call cursor(${String(await header('toolu_1'))}, 1)`);
    for (const id of ['toolu_2', 'toolu_3', 'toolu_4']) {
      const seen = d.eventCount;
      await d.command('Flemma tool:approve');
      expect((await stepEnded(d, seen)).outcome).toBe('waiting');
      // On the next call that waits.
      expect(await row(d)).toBe(await header(id));
    }
    const seen = d.eventCount;
    await d.command('Flemma tool:reject not this one');
    // The three approved calls ran, the rejection went back with them, and the model answered.
    const request = await f.nextRequest({ path: '/v1/messages' });
    const results = JSON.stringify(anthropicMessages(request).at(-1)?.content);
    for (const id of ['toolu_1', 'toolu_2', 'toolu_3']) expect(results).toContain(`echo: ${id}`);
    expect(results).toContain('not this one');
    await anthropicReply(request, 'Three of four.');
    expect((await stepEnded(d, seen)).outcome).toBe('done');
    const after = await d.lines(buf);
    expect(after.slice(-2)).toEqual(['@You:', '']);
    expect(await row(d)).toBe(after.length);
  });

  it('ga in the diff tab: the cursor of the chat on the empty @You: once the reply is over', async () => {
    // Writes wait for approval here (`$default` would approve them).
    const { d, f } = await start('{ tools = { auto_approve = { "read" } } }');
    d.writeFile('notes.txt', 'one\n');
    const buf = await d.openChat('diff.chat', ['@You:', 'Write it.']);
    await d.waitForEvent('FlemmaBootComplete');
    let seen = d.eventCount;
    await d.press('<C-]>');
    await anthropicReply(await f.nextRequest({ path: '/v1/messages' }), 'Writing.', [
      { id: 'toolu_W', name: 'write', input: { label: 'w', path: 'notes.txt', content: 'two\n' } },
    ]);
    expect((await stepEnded(d, seen)).outcome).toBe('waiting');
    await d.press('gD');
    await d.waitUntil(
      'return #vim.api.nvim_list_tabpages() == 2 and #vim.api.nvim_tabpage_list_wins(0) == 2',
    );
    seen = d.eventCount;
    await d.command('wincmd l');
    await d.press('ga');
    await anthropicReply(await f.nextRequest({ path: '/v1/messages' }), 'Written.');
    expect((await stepEnded(d, seen)).outcome).toBe('done');
    expect(await d.lua<number>('return vim.api.nvim_get_current_buf()')).toBe(buf);
    const after = await d.lines(buf);
    expect(after.slice(-2)).toEqual(['@You:', '']);
    expect(await row(d)).toBe(after.length);
  });
});
