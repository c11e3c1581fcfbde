// Counting a request's input tokens through each provider's official SDK, against the fake
// provider: the endpoint, the body (the request's own, without its generation fields), the answer.
import { describe, expect, it } from 'vitest';
import { createAnthropicAdapter } from '../../src/core/provider/adapters/anthropic.js';
import { createChatCompletionsAdapter } from '../../src/core/provider/adapters/chat-completions.js';
import { createGeminiAdapter } from '../../src/core/provider/adapters/gemini.js';
import { createOpenAIAdapter } from '../../src/core/provider/adapters/openai.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import {
  ProviderError,
  type ProviderAdapter,
  type ProviderRequest,
} from '../../src/core/provider/types.js';
import { GOOGLE_SDK_ENV, fakeProviderHooks, sdkEnvHooks } from '../helpers/fake-provider-hooks.js';
import { vertexAt } from '../helpers/provider-wire.js';

const loader = new SdkLoader();

const fake = fakeProviderHooks('all');

sdkEnvHooks([
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  ...GOOGLE_SDK_ENV,
]);

function request(model: string): ProviderRequest {
  return {
    model,
    system: 'Be brief.',
    messages: [{ role: 'user', parts: [{ kind: 'text', text: 'Hello' }] }],
    tools: [
      {
        name: 'calculator',
        description: 'Add numbers',
        inputSchema: { type: 'object', properties: { a: { type: 'number' } } },
      },
    ],
    maxTokens: 4096,
    temperature: 0.5,
    cacheRetention: 'short',
    cacheKey: '/work/a.chat',
  };
}

/** Options that point an adapter at the fake (`path` after its URL) with `apiKey`, no retries. */
function toFake(apiKey: string, path = '') {
  return { apiKey, baseURL: `${fake.url}${path}`, maxRetries: 0 };
}

async function count(adapter: ProviderAdapter, req: ProviderRequest): Promise<number> {
  if (adapter.countTokens === undefined) throw new Error(`${adapter.name} cannot count`);
  return adapter.countTokens(req, new AbortController().signal);
}

describe('counting input tokens', () => {
  it('anthropic: POST /v1/messages/count_tokens without max_tokens, stream, temperature', async () => {
    const adapter = createAnthropicAdapter(toFake('sk-ant-test'), loader);
    const req = request('claude-sonnet-4-6');
    const counted = count(adapter, req);
    const received = await fake.nextRequest({ path: '/v1/messages/count_tokens' });
    expect(received.method).toBe('POST');
    expect(received.apiKey()).toBe('sk-ant-test');
    const expected = { ...adapter.buildBody(req) };
    delete expected['max_tokens'];
    delete expected['stream'];
    delete expected['temperature'];
    expect(received.body).toEqual(expected);
    expect(received.body).toMatchObject({ system: expect.anything() as unknown, tools: [{}] });
    await received.respond(200, { input_tokens: 1234 });
    expect(await counted).toBe(1234);
  });

  it('anthropic: a refusal is a ProviderError', async () => {
    const adapter = createAnthropicAdapter(toFake('sk-ant-test'), loader);
    const counted = count(adapter, request('claude-sonnet-4-6'));
    const received = await fake.nextRequest({ path: '/v1/messages/count_tokens' });
    await received.respond(401, {
      type: 'error',
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
    });
    const error = await counted.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).describe()).toBe(
      'anthropic: authentication — invalid x-api-key',
    );
  });

  it('openai: POST /v1/responses/input_tokens without the generation fields', async () => {
    const adapter = createOpenAIAdapter(toFake('sk-openai-test', '/v1'), loader);
    const req = request('gpt-5.4');
    req.thinking = { level: 'high', effort: 'high', foreign: 'drop' };
    const counted = count(adapter, req);
    const received = await fake.nextRequest({ path: '/v1/responses/input_tokens' });
    const body = received.body as Record<string, unknown>;
    for (const key of [
      'stream',
      'store',
      'max_output_tokens',
      'temperature',
      'include',
      'prompt_cache_key',
      'prompt_cache_retention',
    ]) {
      expect(body).not.toHaveProperty(key);
    }
    expect(body).toMatchObject({
      model: 'gpt-5.4',
      reasoning: { effort: 'high' },
      tool_choice: 'auto',
      input: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'input_text', text: 'Hello' }] },
      ],
    });
    await received.respond(200, { object: 'response.input_tokens', input_tokens: 77 });
    expect(await counted).toBe(77);
  });

  it('gemini: models.countTokens with the system instruction as a leading turn', async () => {
    const adapter = createGeminiAdapter(toFake('gemini-test'), loader);
    const counted = count(adapter, request('gemini-2.5-flash'));
    const received = await fake.nextRequest({ path: /:countTokens/ });
    expect(received.path).toBe('/v1beta/models/gemini-2.5-flash:countTokens');
    expect(received.body).toEqual({
      contents: [
        { role: 'user', parts: [{ text: 'Be brief.' }] },
        { role: 'user', parts: [{ text: 'Hello' }] },
      ],
    });
    await received.respond(200, { totalTokens: 31 });
    expect(await counted).toBe(31);
  });

  it('vertex: models.countTokens with the system instruction and tools, no generation config', async () => {
    const adapter = createGeminiAdapter(vertexAt(fake.url, 'ya29.test', 'proj', 'global'), loader);
    const counted = count(adapter, request('gemini-2.5-pro'));
    const received = await fake.nextRequest({ path: /:countTokens/ });
    expect(received.path).toBe(
      '/v1beta1/projects/proj/locations/global/publishers/google/models/gemini-2.5-pro:countTokens',
    );
    expect(received.headers['authorization']).toBe('Bearer ya29.test');
    const body = received.body as Record<string, unknown>;
    expect(body).toMatchObject({
      contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      tools: [{ functionDeclarations: [{ name: 'calculator' }] }],
    });
    expect(body).not.toHaveProperty('generationConfig');
    expect(body).not.toHaveProperty('toolConfig');
    await received.respond(200, { totalTokens: 45 });
    expect(await counted).toBe(45);
  });

  it('moonshot: POST /v1/tokenizers/estimate-token-count with the model and messages', async () => {
    const adapter = createChatCompletionsAdapter(
      { ...toFake('sk-moon', '/v1'), name: 'moonshot' },
      loader,
    );
    const counted = count(adapter, request('kimi-k2.6'));
    const received = await fake.nextRequest({ path: '/v1/tokenizers/estimate-token-count' });
    expect(received.apiKey()).toBe('sk-moon');
    expect(received.body).toEqual({
      model: 'kimi-k2.6',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
    });
    await received.respond(200, {
      code: 0,
      data: { total_tokens: 19 },
      scode: '0x0',
      status: true,
    });
    expect(await counted).toBe(19);
  });

  it('other OpenAI-compatible servers cannot count', () => {
    const adapter = createChatCompletionsAdapter(
      { apiKey: 'none', baseURL: `${fake.url}/v1`, name: 'compatible' },
      loader,
    );
    expect('countTokens' in adapter).toBe(false);
  });
});
