// The OpenAI-compatible Chat Completions adapter: exact request bodies, and streams through the
// real OpenAI SDK against the fake provider.
import { describe, expect, it } from 'vitest';
import { thinking as thinkingLines } from '../../src/core/chat/writer.js';
import { createChatCompletionsAdapter } from '../../src/core/provider/adapters/chat-completions.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import {
  ProviderError,
  type ProviderAdapter,
  type ProviderEvent,
  type ProviderRequest,
} from '../../src/core/provider/types.js';
import { startFakeProvider } from '../helpers/fake-provider.js';
import { fakeProviderHooks } from '../helpers/fake-provider-hooks.js';
import { helloRequest } from '../helpers/provider-request.js';
import { textPart, toolResultPart, toolUsePart, userMessage } from '../helpers/evaluated-parts.js';
import { imagePart, pdfPart, textFilePart, unsupportedPart } from '../helpers/attachment-parts.js';
import { redactedThinkingPart, thinkingPart } from '../helpers/thinking-parts.js';
import { chatChunk, eventsOf, rateLimited } from '../helpers/provider-wire.js';

/** The JSON parser's own message for `text` (V8 words it differently from one Node to the next). */
function jsonParseError(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${text} parses`);
}

const KEY = 'sk-local-dummy';
const loader = new SdkLoader();

const fake = fakeProviderHooks();

function adapter(
  options: { maxRetries?: number; name?: string; reasoningField?: 'reasoning' } = {},
): ProviderAdapter {
  return createChatCompletionsAdapter(
    { apiKey: KEY, baseURL: `${fake.url}/v1`, maxRetries: 0, ...options },
    loader,
  );
}

function prompt(overrides: Partial<ProviderRequest> = {}): ProviderRequest {
  return helloRequest('qwen3:8b', 1024, overrides);
}

/** The fields every streamed body of `prompt()` starts with, in their order. */
const STREAMED = {
  max_tokens: 1024,
  model: 'qwen3:8b',
  stream: true,
  stream_options: { include_usage: true },
};

function chunk(delta: object, finishReason: string | null = null): object {
  return chatChunk('qwen3:8b', delta, finishReason);
}

function usageChunk(prompt: number, completion: number, extra: object = {}): object {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'qwen3:8b',
    choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, ...extra },
  };
}

interface Outcome {
  events: ProviderEvent[];
  error?: unknown;
}

/** Every event the stream yields, and the error it ends with (if any). */
async function collect(events: AsyncIterable<ProviderEvent>): Promise<Outcome> {
  const seen: ProviderEvent[] = [];
  try {
    for await (const event of events) seen.push(event);
  } catch (error) {
    return { events: seen, error };
  }
  return { events: seen };
}

const withoutProgress = (events: ProviderEvent[]): ProviderEvent[] =>
  events.filter((event) => event.type !== 'progress');

describe('chat completions request body', () => {
  it('sends the system prompt and a plain user message', () => {
    const body = adapter().buildBody(
      prompt({
        system: 'You are terse.',
        temperature: 0.2,
        messages: [
          userMessage(
            textPart('Summarise '),
            textFilePart('a.txt', 'a.txt body'),
            textPart(' please'),
          ),
        ],
      }),
    );
    expect(JSON.stringify(body)).toBe(
      JSON.stringify({
        ...STREAMED,
        temperature: 0.2,
        messages: [
          { content: 'You are terse.', role: 'system' },
          { content: 'Summarise a.txt body please', role: 'user' },
        ],
      }),
    );
  });

  it('sends tool calls, their results (errors and synthetic ones included) and tools', () => {
    const body = adapter().buildBody(
      prompt({
        messages: [
          userMessage(textPart('Weather and sum?')),
          {
            role: 'assistant',
            parts: [
              textPart('  Checking both.\n'),
              toolUsePart('call_1', 'calculator', { expr: '2+2' }),
              toolUsePart('urn:flemma:tool:now:9', 'mcp:weather:now', { city: 'Oslo' }),
              toolUsePart('call_3', 'bash', { command: 'ls' }),
            ],
          },
          userMessage(
            textPart('Thanks'),
            toolResultPart('call_1', 'calculator', ['4', '.0']),
            toolResultPart('urn:flemma:tool:now:9', 'mcp:weather:now', 'upstream timeout', {
              isError: true,
            }),
            toolResultPart('call_3', 'bash', 'No result provided', {
              isError: true,
              synthetic: true,
            }),
          ),
        ],
        tools: [
          {
            name: 'calculator',
            description: 'Adds.',
            inputSchema: { type: 'object', properties: { expr: { type: 'string' } } },
          },
          {
            name: 'mcp:weather:now',
            description: 'Weather.',
            inputSchema: { type: 'object' },
            strict: true,
          },
        ],
      }),
    );
    expect(JSON.stringify(body)).toBe(
      JSON.stringify({
        ...STREAMED,
        tool_choice: 'auto',
        tools: [
          {
            function: {
              description: 'Adds.',
              name: 'calculator',
              parameters: { properties: { expr: { type: 'string' } }, type: 'object' },
            },
            type: 'function',
          },
          {
            function: {
              description: 'Weather.',
              name: 'mcp__weather__now',
              parameters: { type: 'object' },
              strict: true,
            },
            type: 'function',
          },
        ],
        messages: [
          { content: 'Weather and sum?', role: 'user' },
          {
            content: 'Checking both.',
            role: 'assistant',
            tool_calls: [
              {
                function: { arguments: '{"expr":"2+2"}', name: 'calculator' },
                id: 'call_1',
                type: 'function',
              },
              {
                function: { arguments: '{"city":"Oslo"}', name: 'mcp__weather__now' },
                id: 'urn_flemma_tool_now_9',
                type: 'function',
              },
              {
                function: { arguments: '{"command":"ls"}', name: 'bash' },
                id: 'call_3',
                type: 'function',
              },
            ],
          },
          { content: '4.0', role: 'tool', tool_call_id: 'call_1' },
          {
            content: 'Error: upstream timeout',
            role: 'tool',
            tool_call_id: 'urn_flemma_tool_now_9',
          },
          { content: 'Error: No result provided', role: 'tool', tool_call_id: 'call_3' },
          { content: 'Thanks', role: 'user' },
        ],
      }),
    );
  });

  it('names the tool in tool messages when the provider requires it (Moonshot), encoded for the wire', () => {
    const messages: ProviderRequest['messages'] = [
      userMessage(textPart('Weather?')),
      {
        role: 'assistant',
        parts: [toolUsePart('call_1', 'mcp:weather:now')],
      },
      userMessage(toolResultPart('call_1', 'mcp:weather:now', 'Sunny')),
    ];
    const named = createChatCompletionsAdapter(
      { apiKey: KEY, name: 'moonshot', toolResultNames: true },
      loader,
    ).buildBody(prompt({ messages }));
    expect((named['messages'] as unknown[])[2]).toEqual({
      content: 'Sunny',
      name: 'mcp__weather__now',
      role: 'tool',
      tool_call_id: 'call_1',
    });
    // Other OpenAI-compatible servers get the dialect's own fields only.
    const plain = adapter().buildBody(prompt({ messages }));
    expect((plain['messages'] as unknown[])[2]).toEqual({
      content: 'Sunny',
      role: 'tool',
      tool_call_id: 'call_1',
    });
  });

  it('sends images as data URLs and names files it cannot send inline', () => {
    const body = adapter().buildBody(
      prompt({
        messages: [
          userMessage(
            textPart('Compare '),
            imagePart('shot.png', 'iVBORw0K'),
            textPart(' '),
            pdfPart('/tmp/spec.pdf', 'JVBERi0='),
            unsupportedPart('/tmp/blob.bin'),
          ),
        ],
      }),
    );
    expect(body['messages']).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare ' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
          { type: 'text', text: '@/tmp/spec.pdf' },
          { type: 'text', text: '@/tmp/blob.bin' },
        ],
      },
    ]);
  });

  it('replays its own reasoning natively and foreign thinking as text (or drops it)', () => {
    const request = (foreign: 'preserve' | 'drop'): ProviderRequest =>
      prompt({
        thinking: { level: 'high', foreign },
        messages: [
          userMessage(textPart('Hi')),
          {
            role: 'assistant',
            parts: [
              thinkingPart(' mine \n', 'openaicompatible', 'reasoning_content'),
              thinkingPart('theirs', 'anthropic', 'sig'),
              redactedThinkingPart('opaque'),
              textPart('Hello!'),
            ],
          },
          userMessage(textPart('Again')),
        ],
      });
    const assistant = (foreign: 'preserve' | 'drop'): unknown =>
      (adapter().buildBody(request(foreign))['messages'] as unknown[])[1];
    expect(assistant('preserve')).toEqual({
      role: 'assistant',
      content: '<thinking>\ntheirs\n</thinking>\n\nHello!',
      reasoning_content: 'mine',
    });
    expect(assistant('drop')).toEqual({
      role: 'assistant',
      content: 'Hello!',
      reasoning_content: 'mine',
    });
  });

  it('gives byte-identical bodies for equal prompts, and sends exactly that body', async () => {
    const schema = (flip: boolean): Record<string, unknown> =>
      flip
        ? { type: 'object', properties: { b: { type: 'number' }, a: { type: 'string' } } }
        : { properties: { a: { type: 'string' }, b: { type: 'number' } }, type: 'object' };
    const request = (flip: boolean): ProviderRequest =>
      prompt({
        system: 'S',
        tools: [{ name: 'pick', description: 'Picks.', inputSchema: schema(flip) }],
      });
    const first = JSON.stringify(adapter().buildBody(request(false)));
    expect(JSON.stringify(adapter().buildBody(request(true)))).toBe(first);

    const outcome = collect(adapter().stream(request(true), new AbortController().signal));
    const sent = await fake.nextRequest();
    const sse = sent.stream();
    await sse.sse(undefined, chunk({ content: 'ok' }, 'stop'));
    await sse.sse(undefined, '[DONE]');
    await sse.end();
    await outcome;
    expect(sent.rawBody).toBe(first);
    expect(Object.keys(JSON.parse(first) as object).slice(-2)).toEqual(['tools', 'messages']);
  });
});

describe('chat completions streaming', () => {
  it('streams text, then usage and done', async () => {
    const outcome = collect(adapter().stream(prompt(), new AbortController().signal));
    const request = await fake.nextRequest();
    const sse = request.stream();
    await sse.sse(undefined, chunk({ role: 'assistant', content: '' }));
    for (const text of ['Hel', 'lo', ' 🙂']) await sse.sse(undefined, chunk({ content: text }));
    await sse.sse(undefined, chunk({}, 'stop'));
    await sse.sse(
      undefined,
      usageChunk(120, 9, {
        prompt_tokens_details: { cached_tokens: 100 },
        completion_tokens_details: { reasoning_tokens: 0 },
      }),
    );
    await sse.sse(undefined, '[DONE]');
    await sse.end();

    const events = await eventsOf(outcome);
    expect(events).toEqual([
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
      { type: 'text', text: ' 🙂' },
      { type: 'usage', usage: { input: 20, output: 9, cacheRead: 100 } },
      { type: 'done', stopReason: 'stop' },
    ]);
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.apiKey()).toBe(KEY);
  });

  it('turns reasoning_content into progress and one signed thinking block', async () => {
    const outcome = collect(adapter().stream(prompt(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await sse.sse(undefined, chunk({ role: 'assistant', reasoning_content: 'Let me ' }));
    await sse.sse(undefined, chunk({ reasoning_content: 'think.' }));
    await sse.sse(undefined, chunk({ content: 'Four.' }));
    await sse.sse(undefined, chunk({}, 'length'));
    await sse.sse(undefined, '[DONE]');
    await sse.end();

    const { events } = await outcome;
    const signature = { provider: 'openaicompatible', value: 'reasoning_content' };
    expect(events).toEqual([
      { type: 'progress', phase: 'thinking', characters: 7 },
      { type: 'progress', phase: 'thinking', characters: 13 },
      { type: 'text', text: 'Four.' },
      { type: 'thinking', content: 'Let me think.', signature },
      { type: 'warning', message: 'Response truncated – model reached max output tokens' },
      { type: 'done', stopReason: 'length' },
    ]);
    // The buffer keeps the signature, so the next turn replays the block as reasoning_content.
    expect(thinkingLines({ content: 'Let me think.', signature })[0]).toBe(
      '<thinking openaicompatible:signature="reasoning_content">',
    );
  });

  it('reads `reasoning` too and signs with its own name', async () => {
    const ollama = adapter({ name: 'ollama', reasoningField: 'reasoning' });
    const outcome = collect(ollama.stream(prompt(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await sse.sse(undefined, chunk({ reasoning: 'Hmm.' }));
    await sse.sse(undefined, chunk({ content: 'Yes.' }, 'stop'));
    await sse.end();

    const { events } = await outcome;
    expect(withoutProgress(events)).toEqual([
      { type: 'text', text: 'Yes.' },
      { type: 'thinking', content: 'Hmm.', signature: { provider: 'ollama', value: 'reasoning' } },
      { type: 'done', stopReason: 'stop' },
    ]);
  });

  it('assembles parallel tool calls whose arguments arrive in pieces', async () => {
    const outcome = collect(adapter().stream(prompt(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    const call = (index: number, fields: object): object =>
      chunk({ tool_calls: [{ index, ...fields }] });
    await sse.sse(undefined, chunk({ role: 'assistant', content: 'Both: ' }));
    await sse.sse(
      undefined,
      call(0, {
        id: 'call_a',
        type: 'function',
        function: { name: 'mcp__weather__now', arguments: '' },
      }),
    );
    await sse.sse(undefined, call(0, { function: { arguments: '{"ci' } }));
    await sse.sse(
      undefined,
      call(1, { id: 'call_b', type: 'function', function: { name: 'calc', arguments: '{"ex' } }),
    );
    await sse.sse(
      undefined,
      chunk({
        tool_calls: [
          { index: 0, function: { arguments: 'ty":"Oslo"}' } },
          { index: 1, function: { arguments: 'pr":"2+2"}' } },
        ],
      }),
    );
    await sse.sse(
      undefined,
      call(2, { id: 'call_c', type: 'function', function: { name: 'calc', arguments: '{oops' } }),
    );
    await sse.sse(undefined, chunk({}, 'tool_calls'));
    await sse.sse(undefined, usageChunk(50, 30));
    await sse.sse(undefined, '[DONE]');
    await sse.end();

    const events = await eventsOf(outcome);
    expect(withoutProgress(events)).toEqual([
      { type: 'text', text: 'Both: ' },
      { type: 'tool_use', id: 'call_a', name: 'mcp:weather:now', input: { city: 'Oslo' } },
      { type: 'tool_use', id: 'call_b', name: 'calc', input: { expr: '2+2' } },
      {
        type: 'warning',
        message: "Tool call 'calc' (call_c) had arguments that are not JSON; sent as {}",
      },
      {
        type: 'tool_use',
        id: 'call_c',
        name: 'calc',
        input: {},
        invalid: jsonParseError('{oops'),
      },
      { type: 'usage', usage: { input: 50, output: 30 } },
      { type: 'done', stopReason: 'tool_calls' },
    ]);
    expect(events).toContainEqual({
      type: 'progress',
      phase: 'tool_input',
      characters: 15,
      toolName: 'mcp:weather:now',
    });
  });

  it('decodes an event split at awkward byte boundaries', async () => {
    const outcome = collect(adapter().stream(prompt(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    const bytes = Buffer.from(`data: ${JSON.stringify(chunk({ content: 'café 🙂' }))}\n\n`);
    const eAcute = bytes.indexOf(Buffer.from('é'));
    const smile = bytes.indexOf(Buffer.from('🙂'));
    const cuts = [2, 5, eAcute + 1, smile + 1, smile + 2, bytes.length - 1, bytes.length];
    let from = 0;
    for (const cut of cuts) {
      await sse.write(bytes.subarray(from, cut));
      from = cut;
    }
    await sse.write('data: ');
    await sse.write(`${JSON.stringify(chunk({}, 'stop'))}\n`);
    await sse.write('\ndata: [DONE]\n\n');
    await sse.end();

    const { events } = await outcome;
    expect(events).toEqual([
      { type: 'text', text: 'café 🙂' },
      { type: 'done', stopReason: 'stop' },
    ]);
  });

  it('lets the SDK retry a 429 (retry-after: 0), then streams', async () => {
    const outcome = collect(
      adapter({ maxRetries: 2 }).stream(prompt(), new AbortController().signal),
    );
    const first = await fake.nextRequest();
    await rateLimited(first, 'Slow down');
    const second = await fake.nextRequest();
    const sse = second.stream();
    await sse.sse(undefined, chunk({ content: 'Done' }, 'stop'));
    await sse.end();

    const events = await eventsOf(outcome);
    expect(events).toEqual([
      { type: 'text', text: 'Done' },
      { type: 'done', stopReason: 'stop' },
    ]);
    expect(second.rawBody).toBe(first.rawBody);
  });

  it.each([
    {
      status: 404,
      body: { error: { message: 'model "qwen3:8b" not found, try pulling it first' } },
      kind: 'not_found',
      message:
        /^model "qwen3:8b" not found, try pulling it first \(the model 'qwen3:8b' may not exist on http:\/\/127\.0\.0\.1:\d+\/v1\)$/,
      retryable: false,
    },
    {
      status: 401,
      body: { error: { message: 'Invalid API key', type: 'invalid_request_error' } },
      kind: 'authentication',
      message: /^Invalid API key$/,
      retryable: false,
    },
    {
      status: 400,
      body: { error: "'messages' must not be empty" },
      kind: 'invalid_request',
      message: /^'messages' must not be empty$/,
      retryable: false,
    },
    {
      status: 503,
      body: 'Loading model',
      kind: 'server',
      message: /^Loading model$/,
      retryable: true,
    },
  ])(
    'reports a $status error body as $kind',
    async ({ status, body, kind, message, retryable }) => {
      const outcome = collect(adapter().stream(prompt(), new AbortController().signal));
      await (await fake.nextRequest()).respondError(status, body);

      const { events, error } = await outcome;
      expect(events).toEqual([]);
      expect(error).toBeInstanceOf(ProviderError);
      const failure = error as ProviderError;
      expect(failure.provider).toBe('openai-compatible');
      expect(failure.kind).toBe(kind);
      expect(failure.status).toBe(status);
      expect(failure.retryable).toBe(retryable);
      expect(failure.message).toMatch(message);
    },
  );

  it('reports an error object inside the stream', async () => {
    const outcome = collect(adapter().stream(prompt(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await sse.sse(undefined, chunk({ content: 'Par' }));
    await sse.sse(undefined, { error: { message: 'context overflow', type: 'server_error' } });
    await sse.end();

    const { events, error } = await outcome;
    expect(events).toEqual([{ type: 'text', text: 'Par' }]);
    expect(error).toMatchObject({ kind: 'stream', message: 'context overflow', retryable: false });
  });

  it('fails with a stream error when the connection drops mid-reply', async () => {
    const outcome = collect(adapter().stream(prompt(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await sse.sse(undefined, chunk({ content: 'Half' }));
    await sse.write('data: {"id":"chatcmpl-fake","cho');
    sse.drop();

    const { events, error } = await outcome;
    expect(events).toEqual([{ type: 'text', text: 'Half' }]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'connection', retryable: false });
    expect((error as ProviderError).message).toMatch(/^the connection was lost mid-reply \(/);
  });

  it('names the host and port when nothing listens there', async () => {
    const closed = await startFakeProvider();
    await closed.close();
    const baseURL = `${closed.url}/v1`;
    const local = createChatCompletionsAdapter(
      { apiKey: KEY, baseURL, maxRetries: 0, name: 'ollama' },
      loader,
    );

    const { events, error } = await collect(local.stream(prompt(), new AbortController().signal));
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(ProviderError);
    const failure = error as ProviderError;
    expect(failure.kind).toBe('connection');
    expect(failure.retryable).toBe(true);
    expect(failure.describe()).toBe(
      `ollama (127.0.0.1:${String(closed.port)}): connection refused: nothing is listening there. Is the local server running?`,
    );
  });

  it('ends quietly when aborted mid-stream', async () => {
    const controller = new AbortController();
    const events = adapter().stream(prompt(), controller.signal)[Symbol.asyncIterator]();
    const first = events.next();
    const request = await fake.nextRequest();
    const sse = request.stream();
    await sse.sse(undefined, chunk({ content: 'Start' }));
    expect(await first).toEqual({ done: false, value: { type: 'text', text: 'Start' } });

    const next = events.next();
    controller.abort();
    expect(await next).toEqual({ done: true, value: undefined });
    expect(await sse.closed).toBe('client');
  });

  it('ends quietly when aborted before the reply starts', async () => {
    const controller = new AbortController();
    const outcome = collect(adapter().stream(prompt(), controller.signal));
    const request = await fake.nextRequest();
    controller.abort();
    expect(await outcome).toEqual({ events: [] });
    await request.respond(200, 'too late');
  });
});
