// The Gemini/Vertex adapter, driven through the real @google/genai SDK against the fake provider.
import { describe, expect, it } from 'vitest';
import { createGeminiAdapter } from '../../src/core/provider/adapters/gemini.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import {
  ProviderError,
  stableJson,
  type ProviderAdapter,
  type ProviderEvent,
  type ProviderRequest,
} from '../../src/core/provider/types.js';
import { type FakeRequest } from '../helpers/fake-provider.js';
import { GOOGLE_SDK_ENV, fakeProviderHooks, sdkEnvHooks } from '../helpers/fake-provider-hooks.js';
import { helloRequest } from '../helpers/provider-request.js';
import { textPart, toolResultPart, toolUsePart, userMessage } from '../helpers/evaluated-parts.js';
import { imagePart, textFilePart, unsupportedPart } from '../helpers/attachment-parts.js';
import { redactedThinkingPart, thinkingPart } from '../helpers/thinking-parts.js';
import { vertexAt } from '../helpers/provider-wire.js';

const MODEL = 'gemini-3.1-pro-preview';
const GEMINI_PATH = `/v1beta/models/${MODEL}:streamGenerateContent`;
const SYNTHETIC_ID = /^urn:flemma:tool:[A-Za-z0-9_]+:[0-9a-f]+$/;

const loader = new SdkLoader();

const fake = fakeProviderHooks('all');

sdkEnvHooks(GOOGLE_SDK_ENV);

function gemini(maxRetries = 0): ProviderAdapter {
  return createGeminiAdapter({ apiKey: 'test-key', baseURL: fake.url, maxRetries }, loader);
}

function request(overrides: Partial<ProviderRequest> = {}): ProviderRequest {
  return helloRequest(MODEL, 1000, { cacheRetention: 'short', ...overrides });
}

interface Outcome {
  events: ProviderEvent[];
  error?: unknown;
}

async function collect(
  adapter: ProviderAdapter,
  req: ProviderRequest,
  signal = new AbortController().signal,
): Promise<Outcome> {
  const events: ProviderEvent[] = [];
  try {
    for await (const event of adapter.stream(req, signal)) events.push(event);
  } catch (error) {
    return { events, error };
  }
  return { events };
}

const STOP = { candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'STOP' }] };

/** Sends a request, answers it with an empty STOP reply, and returns what the fake received. */
async function capture(adapter: ProviderAdapter, req: ProviderRequest): Promise<FakeRequest> {
  const outcome = collect(adapter, req);
  const received = await fake.nextRequest();
  const stream = received.stream();
  await stream.sse(undefined, STOP);
  await stream.end();
  expect((await outcome).error).toBeUndefined();
  return received;
}

function text(parts: string): ProviderEvent {
  return { type: 'text', text: parts };
}

describe('request bodies', () => {
  it('sends the system prompt and the user parts', async () => {
    const received = await capture(
      gemini(),
      request({
        system: 'You are terse.',
        messages: [
          userMessage(
            textPart('Look at '),
            textPart('  \n '),
            textFilePart('a.txt', 'notes'),
            imagePart('b.png', 'aW1n'),
            unsupportedPart('c.bin'),
          ),
        ],
      }),
    );
    expect(received.method).toBe('POST');
    expect(received.path).toBe(`${GEMINI_PATH}?alt=sse`);
    expect(received.apiKey()).toBe('test-key');
    expect(received.body).toEqual({
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'Look at ' },
            { text: 'notes' },
            { inlineData: { mimeType: 'image/png', data: 'aW1n' } },
            { text: '@c.bin' },
          ],
        },
      ],
      systemInstruction: { parts: [{ text: 'You are terse.' }] },
      generationConfig: { maxOutputTokens: 1000 },
    });
  });

  it('sends tool calls, results and error results', async () => {
    const received = await capture(
      gemini(),
      request({
        tools: [
          {
            name: 'calculator',
            description: 'Evaluates arithmetic.',
            inputSchema: { type: 'object', properties: { expression: { type: 'string' } } },
          },
          {
            name: 'mcp:slack:post',
            description: 'Posts to Slack.',
            inputSchema: { type: 'object' },
          },
        ],
        messages: [
          userMessage(textPart('Compute and post.')),
          {
            role: 'assistant',
            parts: [
              textPart('\nOn it.\n'),
              toolUsePart('urn:flemma:tool:calculator:1', 'calculator', { expression: '15 * 7' }),
              toolUsePart('urn:flemma:tool:mcp__slack__post:2', 'mcp:slack:post', { text: 'hi' }),
            ],
          },
          userMessage(
            textPart('Here you go.'),
            toolResultPart('urn:flemma:tool:calculator:1', 'calculator', '105'),
            toolResultPart(
              'urn:flemma:tool:mcp__slack__post:2',
              'mcp:slack:post',
              'channel not found',
              { isError: true },
            ),
          ),
        ],
      }),
    );
    expect(received.body).toEqual({
      contents: [
        { role: 'user', parts: [{ text: 'Compute and post.' }] },
        {
          role: 'model',
          parts: [
            { text: 'On it.' },
            { functionCall: { name: 'calculator', args: { expression: '15 * 7' } } },
            { functionCall: { name: 'mcp__slack__post', args: { text: 'hi' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'calculator', response: { output: '105' } } },
            {
              functionResponse: {
                name: 'mcp:slack:post',
                response: { error: 'channel not found' },
              },
            },
            { text: 'Here you go.' },
          ],
        },
      ],
      tools: [
        {
          functionDeclarations: [
            {
              name: 'calculator',
              description: 'Evaluates arithmetic.',
              parametersJsonSchema: {
                type: 'object',
                properties: { expression: { type: 'string' } },
              },
            },
            {
              name: 'mcp__slack__post',
              description: 'Posts to Slack.',
              parametersJsonSchema: { type: 'object' },
            },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
      generationConfig: { maxOutputTokens: 1000 },
    });
  });

  it('places the native thought signature and preserves foreign thinking first', async () => {
    const signed = (value: string) =>
      ({
        kind: 'thinking',
        content: '',
        redacted: false,
        signature: { provider: 'gemini', value },
      }) as const;
    const received = await capture(
      gemini(),
      request({
        thinking: { level: 'high', budget: 2048, foreign: 'preserve' },
        messages: [
          userMessage(textPart('Go.')),
          {
            role: 'assistant',
            parts: [
              textPart('Calling.'),
              toolUsePart('a', 'calculator'),
              toolUsePart('b', 'calculator', { x: 1 }),
              signed('SIG1'),
            ],
          },
          userMessage(textPart('Next.')),
          {
            role: 'assistant',
            parts: [
              thinkingPart(' Claude pondered. ', 'anthropic', 'EqQ'),
              thinkingPart('Unsigned musing.'),
              redactedThinkingPart('opaque'),
              textPart('Plain answer.'),
              signed('SIG2'),
            ],
          },
          userMessage(textPart('Again.')),
          { role: 'assistant', parts: [signed('SIG3')] },
        ],
      }),
    );
    const body = received.body as { contents: unknown[] };
    expect(body.contents.filter((_, index) => index % 2 === 1)).toEqual([
      {
        role: 'model',
        parts: [
          { text: 'Calling.' },
          { functionCall: { name: 'calculator', args: {} }, thoughtSignature: 'SIG1' },
          { functionCall: { name: 'calculator', args: { x: 1 } } },
        ],
      },
      {
        role: 'model',
        parts: [
          { text: '<thinking>\nClaude pondered.\n\nUnsigned musing.\n</thinking>' },
          { text: 'Plain answer.', thoughtSignature: 'SIG2' },
        ],
      },
      { role: 'model', parts: [{ text: '', thoughtSignature: 'SIG3' }] },
    ]);

    // `drop` leaves foreign thinking out; a Vertex adapter treats Gemini signatures as foreign.
    const dropped = gemini().buildBody(
      request({
        thinking: { level: 'high', budget: 2048, foreign: 'drop' },
        messages: [
          {
            role: 'assistant',
            parts: [thinkingPart('Foreign.'), signed('S')],
          },
        ],
      }),
    );
    expect(dropped['contents']).toEqual([
      { role: 'model', parts: [{ text: '', thoughtSignature: 'S' }] },
    ]);
    const vertex = createGeminiAdapter({ vertex: { project: 'p', location: 'global' } }, loader);
    const crossed = vertex.buildBody(
      request({
        messages: [
          {
            role: 'assistant',
            parts: [{ ...signed('S'), content: 'Gemini thought.' }, textPart('Done.')],
          },
        ],
      }),
    );
    expect(crossed['contents']).toEqual([
      {
        role: 'model',
        parts: [{ text: '<thinking>\nGemini thought.\n</thinking>' }, { text: 'Done.' }],
      },
    ]);
  });

  it('maps a thinking budget and a thinking level', async () => {
    const budget = await capture(
      gemini(),
      request({
        temperature: 0.5,
        thinking: { level: 'medium', budget: 8192, foreign: 'preserve' },
      }),
    );
    expect((budget.body as Record<string, unknown>)['generationConfig']).toEqual({
      maxOutputTokens: 1000,
      temperature: 0.5,
      thinkingConfig: { includeThoughts: true, thinkingBudget: 8192 },
    });
    const level = await capture(
      gemini(),
      request({
        thinking: { level: 'high', budget: 16384, effort: 'HIGH', foreign: 'preserve' },
      }),
    );
    expect((level.body as Record<string, unknown>)['generationConfig']).toEqual({
      maxOutputTokens: 1000,
      thinkingConfig: { includeThoughts: true, thinkingLevel: 'HIGH' },
    });
  });

  it('sends byte-identical bodies for equal requests', async () => {
    const make = (flip: boolean): ProviderRequest =>
      request({
        system: 'S',
        tools: [
          {
            name: 'calculator',
            description: 'd',
            inputSchema: flip
              ? { properties: { b: { type: 'string' }, a: { type: 'number' } }, type: 'object' }
              : { type: 'object', properties: { a: { type: 'number' }, b: { type: 'string' } } },
          },
        ],
        messages: [
          userMessage(textPart('Hi')),
          {
            role: 'assistant',
            parts: [toolUsePart('x', 'calculator', flip ? { b: '2', a: 1 } : { a: 1, b: '2' })],
          },
        ],
        thinking: { level: 'low', budget: 2048, foreign: 'preserve' },
      });
    const adapter = gemini();
    expect(stableJson(adapter.buildBody(make(true)))).toBe(
      stableJson(adapter.buildBody(make(false))),
    );
    expect(JSON.stringify(adapter.buildBody(make(true)))).toBe(
      JSON.stringify(adapter.buildBody(make(false))),
    );
    const first = await capture(adapter, make(false));
    const second = await capture(adapter, make(true));
    expect(second.rawBody).toBe(first.rawBody);
  });
});

describe('streaming', () => {
  it('streams text and reports usage', async () => {
    const outcome = collect(gemini(), request());
    const stream = (await fake.nextRequest()).stream();
    const chunk = (parts: object[], extra: object = {}) => ({
      candidates: [{ content: { role: 'model', parts }, ...extra }],
    });
    await stream.sse(undefined, chunk([{ text: 'Hel' }]));
    await stream.sse(undefined, chunk([{ text: ' \n' }]));
    await stream.sse(undefined, {
      ...chunk([{ text: 'lo!' }], { finishReason: 'STOP' }),
      usageMetadata: {
        promptTokenCount: 120,
        cachedContentTokenCount: 100,
        candidatesTokenCount: 7,
        totalTokenCount: 127,
      },
    });
    await stream.end();
    expect(await outcome).toEqual({
      events: [
        text('Hel'),
        text('lo!'),
        { type: 'usage', usage: { input: 20, output: 7, cacheRead: 100 } },
        { type: 'done', stopReason: 'end_turn' },
      ],
    });
  });

  it('accumulates thoughts and keeps the last non-empty signature', async () => {
    const outcome = collect(
      gemini(),
      request({ thinking: { level: 'high', budget: 1024, foreign: 'preserve' } }),
    );
    const stream = (await fake.nextRequest()).stream();
    const parts = (...list: object[]) => ({
      candidates: [{ content: { role: 'model', parts: list } }],
    });
    await stream.sse(undefined, parts({ text: 'Let me think', thought: true }));
    await stream.sse(
      undefined,
      parts({ text: ' harder.', thought: true, thoughtSignature: 'U0lH' }),
    );
    await stream.sse(undefined, parts({ text: 'Answer.', thoughtSignature: '' }));
    await stream.sse(undefined, {
      candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, thoughtsTokenCount: 9 },
    });
    await stream.end();
    expect(await outcome).toEqual({
      events: [
        { type: 'progress', phase: 'thinking', characters: 12 },
        { type: 'progress', phase: 'thinking', characters: 20 },
        text('Answer.'),
        {
          type: 'thinking',
          content: 'Let me think harder.',
          signature: { provider: 'gemini', value: 'U0lH' },
        },
        { type: 'usage', usage: { input: 5, output: 2, thoughts: 9 } },
        { type: 'done', stopReason: 'end_turn' },
      ],
    });
  });

  it('emits two function calls from one chunk at once', async () => {
    const outcome = collect(gemini(), request());
    const stream = (await fake.nextRequest()).stream();
    await stream.sse(undefined, {
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              {
                functionCall: { name: 'mcp__slack__post', args: { text: 'hi' } },
                thoughtSignature: 'Rk4=',
              },
              { functionCall: { name: 'calculator', args: { expression: '1+1' }, id: 'call-7' } },
            ],
          },
          finishReason: 'STOP',
        },
      ],
    });
    await stream.end();
    const { events, error } = await outcome;
    expect(error).toBeUndefined();
    const first = events[0];
    expect(first).toMatchObject({
      type: 'tool_use',
      name: 'mcp:slack:post',
      input: { text: 'hi' },
    });
    expect(first?.type === 'tool_use' ? first.id : '').toMatch(SYNTHETIC_ID);
    expect(first?.type === 'tool_use' ? first.id : '').toMatch(
      /^urn:flemma:tool:mcp__slack__post:/,
    );
    expect(events.slice(1)).toEqual([
      { type: 'tool_use', id: 'call-7', name: 'calculator', input: { expression: '1+1' } },
      { type: 'thinking', content: '', signature: { provider: 'gemini', value: 'Rk4=' } },
      { type: 'done', stopReason: 'tool_use' },
    ]);
  });

  it('reassembles chunks split at awkward byte boundaries', async () => {
    const outcome = collect(gemini(), request());
    const stream = (await fake.nextRequest()).stream();
    const frame = (data: object) => Buffer.from(`data: ${JSON.stringify(data)}\r\n\r\n`, 'utf8');
    const bytes = Buffer.concat([
      frame({ candidates: [{ content: { role: 'model', parts: [{ text: 'héllo 🌍' }] } }] }),
      frame({
        candidates: [
          { content: { role: 'model', parts: [{ text: ' ünd' }] }, finishReason: 'STOP' },
        ],
      }),
    ]);
    const emoji = bytes.indexOf(Buffer.from('🌍', 'utf8'));
    const accent = bytes.indexOf(Buffer.from('é', 'utf8'));
    const secondFrame = bytes.indexOf('data:', 10);
    // Cuts inside `data:`, inside two multi-byte characters, and between `\r\n` and `\r\n`.
    const cuts = [3, accent + 1, emoji + 2, secondFrame - 2, secondFrame + 2, bytes.length];
    let from = 0;
    for (const cut of cuts) {
      await stream.write(bytes.subarray(from, cut));
      from = cut;
    }
    await stream.end();
    expect(await outcome).toEqual({
      events: [text('héllo 🌍'), text(' ünd'), { type: 'done', stopReason: 'end_turn' }],
    });
  });

  it('warns on MAX_TOKENS and fails on a blocked reply', async () => {
    const truncated = collect(gemini(), request());
    let stream = (await fake.nextRequest()).stream();
    await stream.sse(undefined, {
      candidates: [
        { content: { role: 'model', parts: [{ text: 'Partial' }] }, finishReason: 'MAX_TOKENS' },
      ],
    });
    await stream.end();
    const { events } = await truncated;
    expect(events.map((event) => event.type)).toEqual(['text', 'warning', 'done']);
    expect(events[2]).toEqual({ type: 'done', stopReason: 'max_tokens' });

    const blocked = collect(gemini(), request());
    stream = (await fake.nextRequest()).stream();
    await stream.sse(undefined, { candidates: [{ finishReason: 'SAFETY' }] });
    await stream.end();
    const { error } = await blocked;
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).kind).toBe('blocked');
    expect((error as ProviderError).describe()).toBe(
      'gemini: blocked — Response blocked by Gemini (SAFETY)',
    );
  });

  it.each([
    [401, 'UNAUTHENTICATED', 'authentication', false],
    [403, 'PERMISSION_DENIED', 'permission', false],
    [404, 'NOT_FOUND', 'not_found', false],
    [400, 'INVALID_ARGUMENT', 'invalid_request', false],
    [429, 'RESOURCE_EXHAUSTED', 'rate_limit', true],
    [503, 'UNAVAILABLE', 'server', true],
  ] as const)('maps HTTP %i to %s', async (status, code, kind, retryable) => {
    const outcome = collect(gemini(), request());
    await (
      await fake.nextRequest()
    ).respondError(status, { error: { code: status, message: 'Nope.', status: code } });
    const { events, error } = await outcome;
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind, status, retryable, message: `Nope. (Status: ${code})` });
  });

  it('retries a 429 before the first byte when asked to', async () => {
    const outcome = collect(gemini(1), request());
    await (
      await fake.nextRequest()
    ).respondError(429, {
      error: { code: 429, message: 'Slow down.', status: 'RESOURCE_EXHAUSTED' },
    });
    const stream = (await fake.nextRequest()).stream();
    await stream.sse(undefined, {
      candidates: [
        { content: { role: 'model', parts: [{ text: 'Made it.' }] }, finishReason: 'STOP' },
      ],
    });
    await stream.end();
    expect(await outcome).toEqual({
      events: [text('Made it.'), { type: 'done', stopReason: 'end_turn' }],
    });
  }, 15_000);

  it('reports a dropped connection', async () => {
    const outcome = collect(gemini(), request());
    const stream = (await fake.nextRequest()).stream();
    await stream.sse(undefined, {
      candidates: [{ content: { role: 'model', parts: [{ text: 'Half' }] } }],
    });
    stream.drop();
    const { events, error } = await outcome;
    expect(events).toEqual([text('Half')]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'connection', retryable: false });
  });

  it('ends quietly when aborted mid-stream', async () => {
    const controller = new AbortController();
    const events: ProviderEvent[] = [];
    const iterator = gemini().stream(request(), controller.signal)[Symbol.asyncIterator]();
    const next = iterator.next();
    const stream = (await fake.nextRequest()).stream();
    await stream.sse(undefined, {
      candidates: [{ content: { role: 'model', parts: [{ text: 'One' }] } }],
    });
    const first = await next;
    if (first.done !== true) events.push(first.value);
    const pending = iterator.next();
    controller.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(events).toEqual([text('One')]);
    expect(await stream.closed).toBe('client');
  });
});

describe('Vertex AI mode', () => {
  it('calls the project path with the preset bearer token', async () => {
    const adapter = createGeminiAdapter(
      vertexAt(fake.url, 'ya29.preset', 'my-proj', 'us-central1'),
      loader,
    );
    expect(adapter.name).toBe('vertex');
    const outcome = collect(adapter, request({ system: 'Be brief.' }));
    const received = await fake.nextRequest();
    expect(received.path).toBe(
      `/v1beta1/projects/my-proj/locations/us-central1/publishers/google/models/${MODEL}:streamGenerateContent?alt=sse`,
    );
    expect(received.headers['authorization']).toBe('Bearer ya29.preset');
    expect(received.headers['x-goog-api-key']).toBeUndefined();
    expect(received.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { maxOutputTokens: 1000 },
    });
    const stream = received.stream();
    await stream.sse(undefined, {
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'Hi.', thoughtSignature: 'VlRY' }] },
          finishReason: 'STOP',
        },
      ],
    });
    await stream.end();
    expect(await outcome).toEqual({
      events: [
        text('Hi.'),
        { type: 'thinking', content: '', signature: { provider: 'vertex', value: 'VlRY' } },
        { type: 'done', stopReason: 'end_turn' },
      ],
    });
  });
});
