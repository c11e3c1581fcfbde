// Usage and cost end to end: a fake Anthropic server reports token counts, the host prices the
// request, the usage bar shows it over the chat, `request:finished` carries the record, the
// estimate counts tokens with the provider, and the spend cap asks before sending.
import { describe, expect, it } from 'vitest';
import { anthropicBlocks, replyBlocks, type ScriptedCall } from '../helpers/anthropic-script.js';
import { launcher, type Session } from '../helpers/e2e.js';
import { type Driver } from '../helpers/driver.js';
import { type FakeProvider, type FakeRequest } from '../helpers/fake-provider.js';
import { SONNET_RECORD, usageBar as bar } from '../helpers/usage.js';

const launch = launcher();

interface Tokens {
  input: number;
  output: number;
  cacheRead?: number;
  cacheCreation?: number;
}

/**
 * claude-sonnet-4-6 ($3 in, $0.30 cache read, $3.75 cache write, $15 out per million):
 * 2000×3 + 6000×0.3 + 1000×3.75 = 11550 µ$, 410×15 = 6150 µ$, so $0.0177; 66 % of the 9000
 * input tokens came from the cache.
 */
const TOKENS: Tokens = { input: 2000, output: 410, cacheRead: 6000, cacheCreation: 1000 };

/** Streams a reply with these token counts: a text block, then tool calls if any. */
function reply(
  request: FakeRequest,
  text: string,
  tokens: Tokens = TOKENS,
  calls: ScriptedCall[] = [],
): Promise<void> {
  const { input, output, cacheRead, cacheCreation } = tokens;
  const usage = { input, output, cacheRead: cacheRead ?? 0, cacheWrite: cacheCreation ?? 0 };
  return anthropicBlocks(request, replyBlocks(text, calls, true), usage);
}

function setup(
  options: { config?: string; width?: number; lines?: string[] } = {},
): Promise<Session> {
  return launch({
    setup: `require("flemma").setup(${options.config ?? '{}'})`,
    ui: { width: options.width ?? 120, height: 30 },
    chat: { name: 'usage.chat', lines: options.lines ?? ['@You:', 'Hello'], boot: false },
  });
}

// `/ 200k (4%)`: the context meter, the input against claude-sonnet-4-6's window.
const FULL_BAR =
  ' claude-sonnet-4-6 (anthropic) │ $0.0177 66% cached ↑9k / 200k (4%) ↓410 │ Σ1 $0.0177 ↑9k ↓410 ';

describe('after a reply', () => {
  it('shows the usage bar with the reply’s tokens and cost, and the session’s', async () => {
    const { d, f, buf } = await setup();
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished');
    expect(await bar(d)).toBe(FULL_BAR);
    // Other modules read the same figures.
    expect(await d.lua('return require("flemma.usage").session()')).toEqual({
      requests: 1,
      cost: expect.closeTo(0.0177, 10) as number,
      input_tokens: 9000,
      output_tokens: 410,
    });
    expect(await d.lua('return require("flemma.usage").last(...)', buf)).toMatchObject({
      model: 'claude-sonnet-4-6',
      input_tokens: 2000,
      output_tokens: 410,
    });
    expect(await d.lua('return require("flemma.usage").last(...)', buf + 100)).toBeNull();
  });

  it('carries the request, with its prices, in request:finished', async () => {
    const { d, f, buf } = await setup();
    const before = Date.now() / 1000;
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Hi.');
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    const after = Date.now() / 1000;
    const path = await d.lua<string>(
      'return vim.uv.fs_realpath(vim.api.nvim_buf_get_name(...))',
      buf,
    );
    expect(finished.data).toEqual({
      bufnr: buf,
      status: 'completed',
      request: {
        ...SONNET_RECORD,
        filepath: path,
        bufnr: buf,
        started_at: expect.any(Number) as number,
        completed_at: expect.any(Number) as number,
        cost: expect.closeTo(0.0177, 10) as number,
      },
    });
    const request = finished.data['request'] as { started_at: number; completed_at: number };
    // Unix times in seconds, taken while the request ran.
    expect(request.started_at).toBeGreaterThanOrEqual(before);
    expect(request.completed_at).toBeGreaterThanOrEqual(request.started_at);
    expect(request.completed_at).toBeLessThanOrEqual(after);
  });

  it('adds up the session over requests, in the same bar', async () => {
    const { d, f } = await setup();
    await d.lua(`_G.usage_filetypes = 0
      vim.api.nvim_create_autocmd("FileType", { pattern = "flemma_usage", callback = function()
        _G.usage_filetypes = _G.usage_filetypes + 1
      end })`);
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'One.');
    await d.waitForEvent('FlemmaRequestFinished');
    expect(await bar(d)).toBe(FULL_BAR);
    const first = await d.lua<{ win: number; buf: number }>('return require("flemma.usage").bar()');
    const before = d.eventCount;
    // Sent again without a key typed (a key would take the bar away).
    await d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Again" })');
    await d.command('Flemma send');
    // 500×3 = 1500 µ$ and 100×15 = 1500 µ$: $0.0030; the session $0.0207 over 9.5k in, 510 out.
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Two.', { input: 500, output: 100 });
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    expect(await bar(d)).toBe(
      ' claude-sonnet-4-6 (anthropic) │ $0.0030 ↑500 / 200k (0%) ↓100 │ Σ2 $0.0207 ↑9.5k ↓510 ',
    );
    // The second request's figures replace the first's in the same window: no new buffer, and
    // no FileType (with its search of the runtimepath) per request.
    expect(await d.lua('return require("flemma.usage").bar()')).toEqual(first);
    expect(await d.lua('return _G.usage_filetypes')).toBe(1);
  });

  it('drops the less important figures in a narrow window', async () => {
    const { d, f } = await setup({ width: 40 });
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished');
    const text = await bar(d);
    expect(text).toBe(' $0.0177 ↑9k ↓410 │ Σ1 $0.0177 ');
  });

  it('goes away after ui.usage.timeout, and :Flemma usage:recall shows it again', async () => {
    const { d, f } = await setup({ config: '{ ui = { usage = { timeout = 1500 } } }' });
    await d.press(':Flemma usage:recall<CR>');
    await d.waitForNotification(/No request of this buffer has completed yet/);
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished');
    expect(await bar(d)).toBe(FULL_BAR);
    expect(await bar(d, 'gone')).toBeNull();
    await d.press(':Flemma usage:recall<CR>');
    expect(await bar(d)).toBe(FULL_BAR);
  });

  it('shows no bar when ui.usage.enabled is false, and still keeps the figures', async () => {
    const { d, f, buf } = await setup({ config: '{ ui = { usage = { enabled = false } } }' });
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished');
    expect(await bar(d, 'now')).toBeNull();
    expect(await d.lua('return require("flemma.usage").last(...).cost', buf)).toBeCloseTo(
      0.0177,
      10,
    );
  });

  it('shows tokens without a cost for a model without a price', async () => {
    const { d, f, buf } = await setup({ config: '{ model = "claude-experimental" }' });
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Hi.', {
      input: 1200,
      output: 30,
    });
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(await bar(d)).toBe(
      ' claude-experimental (anthropic) │ ↑1.2k / 200k (0%) ↓30 │ Σ1 ↑1.2k ↓30 ',
    );
    expect(finished.data['request']).not.toHaveProperty('cost');
    expect(await d.lua('return require("flemma.usage").session().cost', buf)).toBe(0);
  });
});

describe(':Flemma usage:estimate', () => {
  it('counts the next request’s input tokens with the provider and fires usage:estimated', async () => {
    const { d, f, buf } = await setup({
      lines: ['@System:', 'Be brief.', '', '@You:', 'How long is this?'],
    });
    await d.press(':Flemma usage:estimate<CR>');
    const request = await f.nextRequest({ path: '/v1/messages/count_tokens' });
    expect(request.apiKey()).toBe('sk-test-key');
    const body = request.body as Record<string, unknown>;
    expect(body).toMatchObject({
      model: 'claude-sonnet-4-6',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'How long is this?' }] }],
    });
    expect(body).not.toHaveProperty('max_tokens');
    expect(body).not.toHaveProperty('stream');
    await request.respond(200, { input_tokens: 1234 });
    const event = await d.waitForEvent('FlemmaUsageEstimated');
    expect(event.data).toEqual({
      bufnr: buf,
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      input_tokens: 1234,
    });
    // 1234×3 = 3702 µ$.
    const note = await d.waitForNotification(/Next request/);
    expect(note.message).toBe(
      'Flemma: Next request: 1,234 input tokens, ≈ $0.0037 (claude-sonnet-4-6)',
    );
    // Nothing was sent and the buffer is as it was.
    expect(f.requests.filter((r) => r.path === '/v1/messages')).toEqual([]);
    expect(await d.lines(buf)).toEqual(['@System:', 'Be brief.', '', '@You:', 'How long is this?']);
  });

  it('counts the chat so far between turns (the last @You: is empty), and says so', async () => {
    const chat = ['@You:', 'Hi.', '', '@Assistant:', 'Hello.', '', '@You:', ''];
    const { d, f } = await setup({ lines: chat });
    await d.press(':Flemma usage:estimate<CR>');
    const request = await f.nextRequest({ path: '/v1/messages/count_tokens' });
    expect((request.body as { messages: { role: string }[] }).messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
    ]);
    await request.respond(200, { input_tokens: 20 });
    const note = await d.waitForNotification(/Next request/);
    expect(note.message).toBe(
      'Flemma: Next request: 20 input tokens, ≈ $0.0001 (claude-sonnet-4-6, the chat so far)',
    );
  });

  it('reports a failed count once, without the key', async () => {
    const { d, f } = await setup();
    await d.press(':Flemma usage:estimate<CR>');
    const request = await f.nextRequest({ path: '/v1/messages/count_tokens' });
    await request.respond(401, {
      type: 'error',
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
    });
    const note = await d.waitForNotification(/usage:estimate/);
    expect(note.message).toBe(
      'Flemma: usage:estimate: anthropic: authentication — invalid x-api-key',
    );
    expect(d.notifications().some((n) => n.message.includes('sk-test-key'))).toBe(false);
    expect(d.eventsSeen('FlemmaUsageEstimated')).toEqual([]);
  });
});

describe('the spend cap (limits.max_session_cost)', () => {
  /** `vim.ui.select` answers `answer` and remembers the question. */
  const STUB_SELECT = `
    _G.asked = {}
    vim.ui.select = function(items, opts, on_choice)
      table.insert(_G.asked, { items = items, prompt = opts.prompt })
      on_choice(_G.answer)
    end`;

  /** `<C-]>`, answered `One.` (what the session has spent grows); then the user types `More`. */
  async function overTheCap(d: Driver, f: FakeProvider): Promise<void> {
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'One.');
    await d.waitForEvent('FlemmaRequestFinished');
    await d.press('GA');
    await d.type('More');
  }

  it('asks before a send once the session reached it; yes sends', async () => {
    const { d, f } = await setup({ config: '{ limits = { max_session_cost = 0.01 } }' });
    await d.lua(`${STUB_SELECT}
    _G.answer = "Send anyway"`);
    await overTheCap(d, f);
    await d.press('<Esc><C-]>');
    const second = await f.nextRequest({ path: '/v1/messages' });
    expect(await d.lua('return _G.asked')).toEqual([
      {
        items: ['Send anyway', 'Do not send'],
        prompt: 'Flemma: session cost $0.0177 ≥ max_session_cost $0.0100. Send anyway?',
      },
    ]);
    const before = d.eventCount;
    await reply(second, 'Two.', { input: 10, output: 10 });
    const finished = await d.waitForEvent('FlemmaRequestFinished', { after: before });
    expect(finished.data['status']).toBe('completed');
  });

  it('sends nothing when the user says no (:Flemma send too)', async () => {
    const { d, f, buf } = await setup({ config: '{ limits = { max_session_cost = 0.01 } }' });
    await d.lua(`${STUB_SELECT}
    _G.answer = "Do not send"`);
    await overTheCap(d, f);
    await d.press('<Esc>');
    await d.command('Flemma send');
    await d.waitForNotification(/Not sent \(limits\.max_session_cost\)/);
    expect(await d.lua('return #_G.asked')).toBe(1);
    expect(f.requests).toHaveLength(1);
    expect((await d.lines(buf)).slice(-2)).toEqual(['@You:', 'More']);
  });

  it('stops autopilot, with a warning saying why', async () => {
    const { d, f, buf } = await setup({ config: '{ limits = { max_session_cost = 0.01 } }' });
    d.writeFile('notes.txt', 'remember the milk\n');
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Reading.', TOKENS, [
      { id: 'toolu_1', name: 'read', input: { label: 'n', path: 'notes.txt' } },
    ]);
    const warning = await d.waitForNotification(/Autopilot stopped/);
    expect(warning.message).toBe(
      'Flemma: Autopilot stopped: session cost $0.0177 ≥ max_session_cost $0.0100',
    );
    expect(f.requests).toHaveLength(1);
    expect(d.eventsSeen('FlemmaToolExecuting')).toEqual([]);
    expect((await d.lines(buf)).some((line) => line.startsWith('**Tool Result:**'))).toBe(false);
  });

  it('does not ask below the cap', async () => {
    const { d, f } = await setup({ config: '{ limits = { max_session_cost = 1 } }' });
    await d.lua(STUB_SELECT);
    await overTheCap(d, f);
    await d.press('<Esc><C-]>');
    await f.nextRequest({ path: '/v1/messages' });
    expect(await d.lua('return #_G.asked')).toBe(0);
  });
});
