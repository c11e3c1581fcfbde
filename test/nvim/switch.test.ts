// `:Flemma switch`: another provider, model and parameters for the next request, directly or
// through a named preset, with completion.
import { describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { jsonChat } from '../helpers/chat-lines.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeProvider, type FakeRequest } from '../helpers/fake-provider.js';
import { responsesEvent, responsesResponse } from '../helpers/openai-script.js';

const launch = launcher();

const event = responsesEvent;
const response = (status: string): Record<string, unknown> => responsesResponse(status, 'gpt-5');

/** A short OpenAI Responses stream. */
async function openaiReply(request: FakeRequest, text: string): Promise<void> {
  const stream = request.stream();
  for (const e of [
    event('response.created', { response: response('in_progress') }),
    event('response.output_text.delta', {
      item_id: 'm',
      output_index: 0,
      content_index: 0,
      delta: text,
    }),
    event('response.completed', { response: response('completed') }),
  ]) {
    await stream.sse(e['type'] as string, e);
  }
  await stream.end();
}

const PRESETS = `presets = {
  ["$fast"] = "anthropic claude-haiku-4-5 thinking=minimal",
  ["$review"] = { provider = "openai", model = "gpt-5", max_tokens = 1234, auto_approve = { "read" } },
}`;

async function setup(): Promise<{ d: Driver; f: FakeProvider; buf: number }> {
  const { d: driver, f: fake } = await launch({
    key: 'sk-ant',
    env: (fake) => ({ OPENAI_API_KEY: 'sk-openai', OPENAI_BASE_URL: `${fake.url}/v1` }),
    setup: `require("flemma").setup({ ${PRESETS} })`,
  });
  const buf = await driver.openChat('switch.chat', ['@You:', 'Hello']);
  return { d: driver, f: fake, buf };
}

/** Send from chat `bufnr` (made current) and answer as its provider; the request. */
async function sendFrom(d: Driver, f: FakeProvider, bufnr: number): Promise<FakeRequest> {
  await d.command(`buffer ${String(bufnr)}`);
  const before = d.eventCount;
  await d.press('<C-]>');
  const request = await f.nextRequest({ path: /^\/v1\/(messages|responses)$/ });
  if (request.path === '/v1/messages') await anthropicReply(request, 'From Anthropic.');
  else await openaiReply(request, 'From OpenAI.');
  await d.waitForEvent('FlemmaRequestFinished', { after: before });
  return request;
}

/** The lines of `:Flemma status` for the current buffer (the report closed again). */
async function status(d: Driver): Promise<string[]> {
  await d.command('Flemma status');
  await d.waitUntil(`return vim.fn.bufwinid(vim.fn.bufnr("flemma://status")) ~= -1`);
  const lines = await d.lua<string[]>(
    'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://status"), 0, -1, false)',
  );
  await d.command('bwipeout flemma://status');
  return lines;
}

describe('a switch belongs to its chat', () => {
  it('changes the current chat only, kept across :e; another chat keeps its own; :Flemma status says where it came from', async () => {
    const { d, f, buf } = await setup();
    const other = await d.openChat('other.chat', ['@You:', 'Hi']);
    await d.command(`buffer ${String(buf)}`);
    await d.command('Flemma switch openai gpt-5');
    expect((await d.waitForNotification(/switched/)).message).toBe(
      'Flemma: switched this chat to openai gpt-5',
    );
    // Kept when the chat is read again.
    await d.command('edit');
    const openai = await sendFrom(d, f, buf);
    expect(openai.body).toMatchObject({ model: 'gpt-5' });
    expect(await status(d)).toEqual(
      expect.arrayContaining([
        'provider: "openai"  (this chat (:Flemma switch openai gpt-5))',
        'model: "gpt-5"  (this chat (:Flemma switch openai gpt-5))',
      ]),
    );
    const anthropic = await sendFrom(d, f, other);
    expect(anthropic.body).toMatchObject({ model: 'claude-sonnet-4-6' });
    expect(await status(d)).toContain('provider: "anthropic"  (default)');
    expect(await d.lua('return require("flemma.statusline").get(...)', buf)).toMatch(/^gpt-5 /);
  });

  it('under the chat’s frontmatter, which still wins for what it sets', async () => {
    const { d, f } = await setup();
    const buf = await d.openChat(
      'pinned.chat',
      jsonChat('{ "flemma": { "model": "claude-haiku-4-5" } }', ['@You:', 'Hello']),
    );
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('Flemma switch anthropic claude-opus-4-6 temperature=0.2');
    // The switch says that the frontmatter keeps the model (behaviour.md: "This buffer uses …").
    expect((await d.waitForNotification(/switched/)).message).toBe(
      "Flemma: switched this chat to anthropic claude-opus-4-6 · temperature=0.2; this buffer uses 'claude-haiku-4-5' (frontmatter line 2)",
    );
    const request = await sendFrom(d, f, buf);
    expect(request.body).toMatchObject({ model: 'claude-haiku-4-5', temperature: 0.2 });
  });

  it.each(['switch!', 'switch global'])(
    ':Flemma %s changes every chat, over a chat’s own switch, and says so',
    async (how) => {
      const { d, f, buf } = await setup();
      const other = await d.openChat('other.chat', ['@You:', 'Hi']);
      await d.command('Flemma switch anthropic claude-haiku-4-5');
      await d.command(`Flemma ${how} openai gpt-5`);
      expect((await d.waitForNotification(/switched every/)).message).toBe(
        'Flemma: switched every chat to openai gpt-5',
      );
      for (const chat of [buf, other]) {
        expect((await sendFrom(d, f, chat)).body).toMatchObject({ model: 'gpt-5' });
      }
      expect(await status(d)).toContain(
        'provider: "openai"  (runtime (:Flemma switch! openai gpt-5))',
      );
    },
  );
});

describe(':Flemma switch', () => {
  it('makes the next request an OpenAI one with that model and temperature', async () => {
    const { d, f, buf } = await setup();
    const before = d.eventCount;
    await d.command('Flemma switch openai gpt-5 temperature=0.3');
    await d.waitForEvent('FlemmaConfigUpdated', { after: before });
    await d.waitForNotification(/switched this chat to openai gpt-5 · temperature=0\.3/);
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: /^\/v1\/responses/ });
    expect(request.apiKey()).toBe('sk-openai');
    expect(request.body).toMatchObject({ model: 'gpt-5', temperature: 0.3, stream: true });
    const finished = d.eventCount;
    await openaiReply(request, 'Hi from OpenAI.');
    await d.waitForEvent('FlemmaRequestFinished', { after: finished });
    expect((await d.lines(buf)).join('\n')).toContain('Hi from OpenAI.');
    // `key=` clears a parameter; the layer shows where the chat's options came from.
    await d.command('Flemma switch openai gpt-5 temperature=');
    expect(await d.lua('return require("flemma.config").get(0).parameters.temperature')).toBe(null);
    const origins = await d.lua<Record<string, string>>(
      'return require("flemma.config").origins(vim.api.nvim_get_current_buf())',
    );
    expect(origins['parameters.temperature']).toBe(
      'this chat (:Flemma switch openai gpt-5 temperature=)',
    );
    expect(origins['provider']).toBe(origins['parameters.temperature']);
  });

  it('switches through presets: a modeline string, and a table with auto_approve', async () => {
    const { d, f } = await setup();
    await d.command('Flemma switch $review');
    expect(
      await d.lua(
        'local c = require("flemma.config").get(0); return { c.provider, c.model, c.parameters.max_tokens, c.tools.auto_approve }',
      ),
    ).toEqual(['openai', 'gpt-5', 1234, ['read']]);
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: /^\/v1\/responses/ });
    expect(request.body).toMatchObject({ model: 'gpt-5', max_output_tokens: 1234 });
    const finished = d.eventCount;
    await openaiReply(request, 'Reviewed.');
    await d.waitForEvent('FlemmaRequestFinished', { after: finished });

    await d.command('Flemma switch $fast');
    expect(
      await d.lua(
        'local c = require("flemma.config").get(0); return { c.provider, c.model, c.parameters.thinking }',
      ),
    ).toEqual(['anthropic', 'claude-haiku-4-5', 'minimal']);
    await d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Again, quickly." })');
    await d.press('<C-]>');
    const fast = await f.nextRequest({ path: '/v1/messages' });
    expect(fast.apiKey()).toBe('sk-ant');
    expect(fast.body).toMatchObject({ model: 'claude-haiku-4-5' });
    await fast.respond(500, { type: 'error', error: { type: 'api_error', message: 'stop here' } });
  });

  it('completes providers, presets, models and parameter keys; explains mistakes', async () => {
    const { d } = await setup();
    const complete = (line: string): Promise<string[]> =>
      d.lua<string[]>(`return vim.fn.getcompletion(..., "cmdline")`, line);
    expect(await complete('Flemma switch op')).toEqual(['openai', 'openai_compatible']);
    expect(await complete('Flemma switch $')).toEqual(['$fast', '$review']);
    const models = await complete('Flemma switch openai ');
    expect(models).toContain('gpt-5');
    expect(models).toContain('temperature=');
    expect(await complete('Flemma switch vertex gemini-2.5-pro pro')).toEqual(['project_id=']);
    // Each key once (a provider has its own `max_tokens`, `temperature`, `thinking` too).
    const keys = models.filter((item) => item.endsWith('='));
    expect(keys).toEqual([...new Set(keys)]);
    expect(keys).toEqual(expect.arrayContaining(['max_tokens=', 'temperature=', 'thinking=']));
    // Every chat: `global`, or the bang.
    expect(await complete('Flemma switch gl')).toEqual(['global']);
    expect(await complete('Flemma switch global op')).toEqual(['openai', 'openai_compatible']);
    expect(await complete('Flemma switch! op')).toEqual(['openai', 'openai_compatible']);
    // Typed as a user would (an error from :Flemma is a message, not an exception).
    await d.press(':Flemma switch opena<CR>');
    await d.waitForNotification(/unknown provider 'opena', did you mean 'openai'\?/);
    await d.press(':Flemma switch openai gpt-5 temprature=1<CR>');
    await d.waitForNotification(
      /unknown parameter 'temprature' for openai \(did you mean 'temperature'\?\)/,
    );
    await d.press(':Flemma switch $nope<CR>');
    await d.waitForNotification(/unknown preset '\$nope' \(presets: \$fast, \$review\)/);
    // Nothing changed.
    expect(await d.lua('return require("flemma.config").get().provider')).toBe('anthropic');
  });
});
