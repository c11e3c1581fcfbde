// The send, end to end: a chat buffer, <C-]>, the real Anthropic SDK in the host talking to a
// fake server on 127.0.0.1, and the reply streamed into the buffer.
import { readFileSync } from 'node:fs';
import { anthropicError, endMessage as finish, streamText } from '../helpers/anthropic-script.js';
import { describe, expect, it } from 'vitest';
import { answered, launcher, type Session, waitForLastLine } from '../helpers/e2e.js';
import { toolResult, toolUse } from '../helpers/chat-lines.js';
import { type Driver } from '../helpers/driver.js';
import {
  type FakeProvider,
  type FakeRequest,
  startFakeProvider,
} from '../helpers/fake-provider.js';

const launch = launcher();

async function setup(lines: string[]): Promise<Session> {
  const session = await launch();
  session.buf = await session.d.openChat('send.chat', lines);
  return session;
}

/** `<C-]>` on `send.chat` holding `lines`; the session's parts and the request it sent. */
async function sent(
  lines: string[],
): Promise<{ d: Driver; f: FakeProvider; buf: number; request: FakeRequest }> {
  const session = await setup(lines);
  const request = await session.send();
  return { d: session.d, f: session.f, buf: session.buf, request };
}

describe('sending a chat', () => {
  it('shows the whole character count while a stream pauses', async () => {
    const { d, request, buf } = await sent(['@You:', 'Hello']);
    // Deltas close together: the label's updates are paced to one per 100 ms.
    const stream = await streamText(request, ['one ', 'two ', 'three ', 'four']);
    // The stream now pauses; the count of every delta so far must reach the screen.
    const shown = await d.lua<boolean>(
      `local buf = ...
      local ns = vim.api.nvim_create_namespace("flemma.progress")
      return vim.wait(10000, function()
        for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
          for _, chunk in ipairs(mark[4].virt_text or {}) do
            if chunk[1]:find("18 characters", 1, true) then return true end
          end
        end
        return false
      end, 10)`,
      buf,
    );
    expect(shown).toBe(true);
    await finish(stream);
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('streams the reply under @Assistant: and appends the next @You: prompt', async () => {
    const { d, request, buf } = await sent(['@System:', 'Be brief.', '', '@You:', 'Hello']);
    expect(request.apiKey()).toBe('sk-test-key');
    expect(request.body).toMatchObject({
      model: 'claude-sonnet-4-6',
      stream: true,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      // The default thinking level (high) on an adaptive model: adaptive thinking, effort high.
      thinking: { type: 'adaptive' },
      output_config: { effort: 'high' },
    });
    await d.waitForEvent('FlemmaRequestSending');
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(false);
    await finish(await streamText(request, ['Hi', ' there', '!\nHow can I help?']));
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    // The session's record of the request comes along (test/nvim/usage.test.ts has the details).
    expect(finished.data).toEqual({
      bufnr: buf,
      status: 'completed',
      request: expect.objectContaining({
        model: 'claude-sonnet-4-6',
        input_tokens: 12,
        output_tokens: 5,
      }) as unknown,
    });
    expect(await d.lines(buf)).toEqual([
      '@System:',
      'Be brief.',
      '',
      '@You:',
      'Hello',
      '',
      '@Assistant:',
      'Hi there!',
      'How can I help?',
      '',
      '@You:',
      '',
    ]);
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(true);
    expect(await d.extmarks('flemma.progress', buf)).toEqual([]);
  });

  it('cancels with <C-c>: keeps what arrived, marks the reply interrupted, unlocks', async () => {
    const { d, f, buf } = await setup(['@You:', 'Tell me a long story']);
    await d.command('Flemma send');
    const stream = await streamText(await f.nextRequest({ path: '/v1/messages' }), [
      'Once upon',
      ' a time',
    ]);
    // Wait until the text is in the buffer, then cancel as a user would.
    await waitForLastLine(d, buf, 'Once upon a time');
    await d.press('<C-c>');
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'cancelled' });
    await stream.closed;
    expect(await d.lines(buf)).toEqual([
      '@You:',
      'Tell me a long story',
      '',
      '@Assistant:',
      'Once upon a time',
      '',
      '<!-- flemma:aborted: Response interrupted by the user. -->',
      '',
      '@You:',
      '',
    ]);
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(true);
  });

  it('reports a failed request once and leaves the buffer as it was', async () => {
    const { d, request, buf } = await sent(['@You:', 'Hello']);
    await anthropicError(request, 401, 'authentication_error', 'invalid x-api-key');
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const errors = d.notifications().filter((note) => note.level === 4);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/^Flemma: anthropic: authentication — /);
    expect(errors[0]?.message).not.toContain('sk-test-key');
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(true);
  });

  it('says which variable to set when there is no API key', async () => {
    const { d: driver } = await launch({ key: false });
    await driver.openChat('nokey.chat', ['@You:', 'Hello']);
    await driver.press('<C-]>');
    const note = await driver.waitForNotification(/no credential for the Anthropic API key/);
    expect(note.message).toContain('$ANTHROPIC_API_KEY');
    // Every resolver asked says why it could not help.
    expect(note.message).toContain('environment: ANTHROPIC_API_KEY not set');
    expect(note.message).toMatch(/secret_tool: /);
    expect(note.message).toContain('keychain: only on macOS');
    expect(note.message).toContain('gcloud: only for access tokens');
    expect(await driver.lines()).toEqual(['@You:', 'Hello']);
  });

  it('keeps a reply cut by a lost connection, marked as interrupted, and says why', async () => {
    const { d, f, request, buf } = await sent(['@You:', 'Hello']);
    const stream = await streamText(request, ['Half an ans']);
    await waitForLastLine(d, buf, 'Half an ans');
    stream.drop();
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const lines = await d.lines(buf);
    expect(lines.slice(0, 5)).toEqual(['@You:', 'Hello', '', '@Assistant:', 'Half an ans']);
    expect(lines[6]).toBe(
      `<!-- flemma:aborted: Response interrupted: anthropic (127.0.0.1:${String(f.port)}): the connection was lost mid-reply (the server closed it) -->`,
    );
    expect(lines.slice(7)).toEqual(['', '@You:', '']);
    expect(d.eventsSeen('FlemmaConversationIdle')).toEqual([]);
  });

  it('names the host and port when nothing listens there, and leaves the buffer as it was', async () => {
    const closed = await startFakeProvider();
    await closed.close();
    const { d: driver } = await launch({
      key: false,
      env: { ANTHROPIC_API_KEY: 'sk-test-key', ANTHROPIC_BASE_URL: closed.url },
    });
    const buf = await driver.openChat('refused.chat', ['@You:', 'Hello']);
    await driver.press('<C-]>');
    // Tried again twice (a server may be starting), then one message.
    const finished = await driver.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const errors = driver.notifications().filter((note) => note.level === 4);
    expect(errors.map((note) => note.message)).toEqual([
      `Flemma: anthropic (127.0.0.1:${String(closed.port)}): connection refused: nothing is listening there. Is the local server running?`,
    ]);
    expect(await driver.lines(buf)).toEqual(['@You:', 'Hello']);
  });

  it('fires conversation:idle after a completed reply', async () => {
    const { d, request, buf } = await sent(['@You:', 'Hi']);
    await finish(await streamText(request, ['Hello.']));
    const idle = await d.waitForEvent('FlemmaConversationIdle');
    expect(idle.data).toEqual({ bufnr: buf });
  });

  it('accepts a send made as soon as the previous one finished', async () => {
    const { d, f, buf } = await setup(['@You:', 'First']);
    await d.lua(
      `local bufnr = ...
      require("flemma.hooks").on("request:finished", function()
        if not _G.sent_again then
          _G.sent_again = true
          vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { "Second" })
          require("flemma.chat").send(bufnr)
        end
      end)`,
      buf,
    );
    await d.press('<C-]>');
    await finish(await streamText(await f.nextRequest({ path: '/v1/messages' }), ['One.']));
    const second = await f.nextRequest({ path: '/v1/messages' });
    expect(second.rawBody).toContain('Second');
    expect(d.notifications().filter((n) => /already in progress/.test(n.message))).toEqual([]);
    await anthropicError(second, 500, 'api_error', 'stop here');
  });

  it('replays a second turn: signed thinking to its provider, the tool use and its result', async () => {
    const { d, request } = await sent([
      '@You:',
      'What is 15 * 7?',
      '',
      '@Assistant:',
      'Let me calculate.',
      '',
      ...toolUse('calculator', 'toolu_01A', '{"expression":"15 * 7"}'),
      '',
      '<thinking anthropic:signature="EqQBsig">',
      'A product; use the calculator.',
      '</thinking>',
      '',
      '@You:',
      ...toolResult('toolu_01A', ['105']),
      '',
      'Thanks!',
    ]);
    expect((request.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'What is 15 * 7?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'A product; use the calculator.', signature: 'EqQBsig' },
          { type: 'text', text: 'Let me calculate.' },
          {
            type: 'tool_use',
            id: 'toolu_01A',
            name: 'calculator',
            input: { expression: '15 * 7' },
          },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01A', content: '105' },
          { type: 'text', text: 'Thanks!' },
        ],
      },
    ]);
    // Not retryable, so that the request ends here.
    await anthropicError(request, 400, 'invalid_request_error', 'enough');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('retries a 429 (honouring retry-after) and then streams the reply', async () => {
    const { d, f, request, buf } = await sent(['@You:', 'Hello']);
    await anthropicError(request, 429, 'rate_limit_error', 'slow down', { 'retry-after': '0' });
    await finish(await streamText(await f.nextRequest({ path: '/v1/messages' }), ['Made it.']));
    await answered(d, buf, 'Hello', 'Made it.');
    expect(d.notifications().filter((n) => n.level === 4)).toEqual([]);
  });

  it('gives up after 3 attempts with one error, and the buffer as it was', async () => {
    const { d, f, buf } = await setup(['@You:', 'Hello']);
    await d.press('<C-]>');
    for (let attempt = 1; attempt <= 3; attempt++) {
      const request = await f.nextRequest({ path: '/v1/messages' });
      await anthropicError(request, 529, 'overloaded_error', 'Overloaded', { 'retry-after': '0' });
    }
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    expect(f.requests).toHaveLength(3);
    const errors = d.notifications().filter((n) => n.level === 4);
    expect(errors.map((n) => n.message)).toEqual(['Flemma: anthropic: overloaded — Overloaded']);
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
  });

  it('writes the stream into a hidden sink buffer, with sink:created and sink:destroyed', async () => {
    const { d, f } = await setup(['@You:', 'Hello']);
    await d.lua(`
      _G.sink_lines = nil
      _G.sink_order = {}
      vim.api.nvim_create_autocmd("User", { pattern = "FlemmaSinkDestroyed", callback = function(ev)
        _G.sink_lines = vim.api.nvim_buf_get_lines(ev.data.bufnr, 0, -1, false)
        _G.sink_listed = vim.bo[ev.data.bufnr].buflisted
        table.insert(_G.sink_order, ev.match)
      end })
      vim.api.nvim_create_autocmd("User", { pattern = "FlemmaRequestFinished", callback = function(ev)
        table.insert(_G.sink_order, ev.match)
      end })`);
    await d.press('<C-]>');
    const created = await d.waitForEvent('FlemmaSinkCreated');
    expect(String(created.data['name'])).toMatch(/^flemma:\/\/sink\/request\/\d+#\d+$/);
    await finish(await streamText(await f.nextRequest({ path: '/v1/messages' }), ['Hi', '!']));
    const destroyed = await d.waitForEvent('FlemmaSinkDestroyed');
    expect(destroyed.data['bufnr']).toBe(created.data['bufnr']);
    await d.waitForEvent('FlemmaRequestFinished');
    const lines = await d.lua<string[]>('return _G.sink_lines');
    const events = lines
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { type: string });
    // Consecutive text deltas share a line.
    expect(events).toContainEqual({ type: 'text', text: 'Hi!' });
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end_turn' });
    expect(await d.lua('return _G.sink_listed')).toBe(false);
    expect(await d.lua('return _G.sink_order')).toEqual([
      'FlemmaSinkDestroyed',
      'FlemmaRequestFinished',
    ]);
    expect(await d.lua('return vim.api.nvim_buf_is_valid(...)', created.data['bufnr'])).toBe(false);
  });

  it('never writes the API key to the log, the buffer or a message, even when a request fails', async () => {
    const session = await setup(['@You:', 'Hello']);
    const { d, buf } = session;
    await d.command('Flemma log:level debug');
    const request = await session.send();
    expect(request.apiKey()).toBe('sk-test-key');
    await anthropicError(request, 401, 'authentication_error', 'invalid x-api-key');
    await d.waitForEvent('FlemmaRequestFinished');
    const log = readFileSync(await d.lua<string>('return require("flemma.log").path()'), 'utf8');
    expect(log).toContain('send failed');
    expect(log).not.toContain('sk-test-key');
    expect((await d.lines(buf)).join('\n')).not.toContain('sk-test-key');
    expect(d.notifications().some((n) => n.message.includes('sk-test-key'))).toBe(false);
  });
});
