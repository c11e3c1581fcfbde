// `:Flemma switch`: another provider, model and parameters for the next request, directly or
// through a named preset, with completion.
import { describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
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

describe(':Flemma switch', () => {
  it('makes the next request an OpenAI one with that model and temperature', async () => {
    const { d, f, buf } = await setup();
    const before = d.eventCount;
    await d.command('Flemma switch openai gpt-5 temperature=0.3');
    await d.waitForEvent('FlemmaConfigUpdated', { after: before });
    await d.waitForNotification(/switched to openai gpt-5 · temperature=0\.3/);
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: /^\/v1\/responses/ });
    expect(request.apiKey()).toBe('sk-openai');
    expect(request.body).toMatchObject({ model: 'gpt-5', temperature: 0.3, stream: true });
    const finished = d.eventCount;
    await openaiReply(request, 'Hi from OpenAI.');
    await d.waitForEvent('FlemmaRequestFinished', { after: finished });
    expect((await d.lines(buf)).join('\n')).toContain('Hi from OpenAI.');
    // `key=` clears a parameter; the layer shows in the configuration's run-time log.
    await d.command('Flemma switch openai gpt-5 temperature=');
    expect(await d.lua('return require("flemma.config").get().parameters.temperature')).toBe(null);
    const log = await d.lua<{ path: string; source: string }[]>(
      'return require("flemma.config").log("runtime")',
    );
    expect(log.map((op) => op.path)).toContain('parameters.temperature');
    expect(log[0]?.source).toBe(':Flemma switch openai gpt-5 temperature=0.3');
  });

  it('switches through presets: a modeline string, and a table with auto_approve', async () => {
    const { d, f } = await setup();
    await d.command('Flemma switch $review');
    expect(
      await d.lua(
        'local c = require("flemma.config").get(); return { c.provider, c.model, c.parameters.max_tokens, c.tools.auto_approve }',
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
        'local c = require("flemma.config").get(); return { c.provider, c.model, c.parameters.thinking }',
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
