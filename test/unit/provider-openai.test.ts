// The OpenAI Responses adapter: exact request bodies, and the real SDK streaming from the fake.
import { describe, expect, it } from 'vitest';
import { createOpenAIAdapter } from '../../src/core/provider/adapters/openai.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import {
  ProviderError,
  type EvaluatedMessage,
  type ProviderAdapter,
  type ProviderEvent,
  type ProviderRequest,
} from '../../src/core/provider/types.js';
import { fakeProviderHooks } from '../helpers/fake-provider-hooks.js';
import { helloRequest } from '../helpers/provider-request.js';
import { textPart, toolResultPart, toolUsePart, userMessage } from '../helpers/evaluated-parts.js';
import { imagePart, pdfPart, textFilePart, unsupportedPart } from '../helpers/attachment-parts.js';
import { redactedThinkingPart, thinkingPart } from '../helpers/thinking-parts.js';
import { eventsOf, expectSent, rateLimited } from '../helpers/provider-wire.js';

const KEY = 'sk-test-dummy';

const fake = fakeProviderHooks();

function adapter(maxRetries = 0): ProviderAdapter {
  return createOpenAIAdapter(
    { apiKey: KEY, baseURL: `${fake.url}/v1`, maxRetries, timeoutMs: 5000 },
    new SdkLoader(),
  );
}

/** An adapter for body tests: it never connects. */
const offline = createOpenAIAdapter({ apiKey: KEY }, new SdkLoader());

function request(overrides: Partial<ProviderRequest> = {}): ProviderRequest {
  return helloRequest('gpt-test', 1024, overrides);
}

async function run(
  events: AsyncIterable<ProviderEvent>,
): Promise<{ events: ProviderEvent[]; error?: unknown }> {
  const seen: ProviderEvent[] = [];
  try {
    for await (const event of events) seen.push(event);
    return { events: seen };
  } catch (error) {
    return { events: seen, error };
  }
}

// ---------------------------------------------------------------------------------------------
// Scripted Responses API events

let sequence = 0;

function ev(type: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  sequence += 1;
  return { type, sequence_number: sequence, ...fields };
}

function response(status: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'resp_1', object: 'response', model: 'gpt-test', status, output: [], ...extra };
}

function usage(input: number, output: number, cached = 0, reasoning = 0): object {
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + output,
  };
}

const created = (): Record<string, unknown> =>
  ev('response.created', { response: response('in_progress') });

const completed = (extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ev('response.completed', { response: response('completed', extra) });

const textDelta = (delta: string): Record<string, unknown> =>
  ev('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta });

async function send(
  sse: { sse(event: string | undefined, data: unknown): Promise<void> },
  events: Record<string, unknown>[],
): Promise<void> {
  for (const event of events) await sse.sse(event['type'] as string, event);
}

function signature(item: unknown): string {
  return Buffer.from(JSON.stringify(item)).toString('base64');
}

// ---------------------------------------------------------------------------------------------

describe('OpenAI request bodies', () => {
  it('maps the system prompt and a user text, with stable key order', () => {
    const body = offline.buildBody(
      request({
        system: 'Be brief.',
        temperature: 0.2,
        messages: [
          userMessage(
            textPart('Hello '),
            textPart('  \n'),
            textFilePart('n.txt', 'notes'),
            imagePart('a.png', 'iVBO'),
            pdfPart('/abs/d.pdf', 'JVBE'),
            unsupportedPart('/abs/x.bin'),
          ),
        ],
      }),
    );
    expect(JSON.stringify(body)).toBe(
      JSON.stringify({
        max_output_tokens: 1024,
        model: 'gpt-test',
        store: false,
        stream: true,
        temperature: 0.2,
        input: [
          { content: 'Be brief.', role: 'developer' },
          {
            content: [
              { text: 'Hello ', type: 'input_text' },
              { text: 'notes', type: 'input_text' },
              { detail: 'auto', image_url: 'data:image/png;base64,iVBO', type: 'input_image' },
              {
                file_data: 'data:application/pdf;base64,JVBE',
                filename: '/abs/d.pdf',
                type: 'input_file',
              },
              { text: '@/abs/x.bin', type: 'input_text' },
            ],
            role: 'user',
          },
        ],
      }),
    );
  });

  it('maps a turn with tool calls, a result, an error result and a synthetic result', () => {
    const messages: EvaluatedMessage[] = [
      userMessage(textPart('Look around.')),
      {
        role: 'assistant',
        parts: [
          textPart('Reading '),
          textPart('first.\n'),
          toolUsePart('call_1', 'mcp:fs:read', { path: 'a.txt' }),
          textPart('  Then listing.  '),
          toolUsePart('urn:flemma:tool:bash:2', 'bash', { cmd: 'ls' }),
          toolUsePart('call_3', 'grep'),
        ],
      },
      userMessage(
        textPart('Here you go.'),
        toolResultPart('call_1', 'mcp:fs:read', ['line 1\n', 'line 2']),
        toolResultPart('urn:flemma:tool:bash:2', 'bash', [], { isError: true }),
        toolResultPart('call_3', 'grep', 'No result provided', {
          isError: true,
          synthetic: true,
        }),
      ),
    ];
    const body = offline.buildBody(request({ messages }));
    expect(body['input']).toEqual([
      { role: 'user', content: [{ type: 'input_text', text: 'Look around.' }] },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_1_1',
        content: [{ type: 'output_text', text: 'Reading first.', annotations: [] }],
        status: 'completed',
        phase: 'commentary',
      },
      {
        type: 'function_call',
        call_id: 'call_1',
        name: 'mcp__fs__read',
        arguments: '{"path":"a.txt"}',
        status: 'completed',
      },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_1_2',
        content: [{ type: 'output_text', text: 'Then listing.', annotations: [] }],
        status: 'completed',
        phase: 'commentary',
      },
      {
        type: 'function_call',
        call_id: 'urn_flemma_tool_bash_2',
        name: 'bash',
        arguments: '{"cmd":"ls"}',
        status: 'completed',
      },
      {
        type: 'function_call',
        call_id: 'call_3',
        name: 'grep',
        arguments: '{}',
        status: 'completed',
      },
      { type: 'function_call_output', call_id: 'call_1', output: 'line 1\nline 2' },
      {
        type: 'function_call_output',
        call_id: 'urn_flemma_tool_bash_2',
        output: 'Error: Tool execution failed',
      },
      { type: 'function_call_output', call_id: 'call_3', output: 'Error: No result provided' },
      { role: 'user', content: [{ type: 'input_text', text: 'Here you go.' }] },
    ]);
    expect(body).not.toHaveProperty('tools');
    expect(body).not.toHaveProperty('tool_choice');
  });

  it('replays assistant messages with their ids and phase labels, unless the labels are off', () => {
    const messages: EvaluatedMessage[] = [
      userMessage(textPart('List the files.')),
      {
        role: 'assistant',
        parts: [textPart('Listing.'), toolUsePart('call_1', 'bash', { cmd: 'ls' })],
      },
      userMessage(toolResultPart('call_1', 'bash', 'a.txt')),
      { role: 'assistant', parts: [textPart('There is a.txt.')] },
      userMessage(textPart('Thanks.')),
    ];
    const assistantItems = (body: Record<string, unknown>): unknown[] =>
      (body['input'] as { type?: string }[]).filter((item) => item.type === 'message');
    expect(assistantItems(offline.buildBody(request({ messages })))).toEqual([
      expect.objectContaining({ id: 'msg_1_1', phase: 'commentary' }),
      expect.objectContaining({ id: 'msg_2_1', phase: 'final_answer' }),
    ]);
    const unlabelled = createOpenAIAdapter({ apiKey: KEY, phase: false }, new SdkLoader());
    const items = assistantItems(unlabelled.buildBody(request({ messages })));
    expect(items).toEqual([
      expect.objectContaining({ id: 'msg_1_1' }),
      expect.objectContaining({ id: 'msg_2_1' }),
    ]);
    expect(items.some((item) => Object.hasOwn(item as object, 'phase'))).toBe(false);
  });

  it('sends strict only for strict tools, and puts tools then input last', () => {
    const schema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };
    const body = offline.buildBody(
      request({
        tools: [
          { name: 'grep', description: 'Search', inputSchema: schema, strict: false },
          { name: 'mcp:slack:post', description: 'Post', inputSchema: schema, strict: true },
        ],
      }),
    );
    expect(body['tools']).toEqual([
      { type: 'function', name: 'grep', description: 'Search', parameters: schema },
      {
        type: 'function',
        name: 'mcp__slack__post',
        description: 'Post',
        parameters: schema,
        strict: true,
      },
    ]);
    expect(body['tool_choice']).toBe('auto');
    expect(Object.keys(body)).toEqual([
      'max_output_tokens',
      'model',
      'store',
      'stream',
      'tool_choice',
      'tools',
      'input',
    ]);
  });

  it('asks for reasoning with an effort, and handles native and foreign thinking', () => {
    const item = { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'enc' };
    const messages: EvaluatedMessage[] = [
      userMessage(textPart('Q')),
      {
        role: 'assistant',
        parts: [
          thinkingPart('mine'),
          {
            kind: 'thinking',
            content: 'native',
            redacted: false,
            signature: { provider: 'openai', value: signature(item) },
          },
          thinkingPart(' theirs ', 'anthropic', 'sig'),
          redactedThinkingPart('opaque'),
          textPart('Answer.'),
        ],
      },
    ];
    const thinking = { level: 'high' as const, effort: 'high', foreign: 'preserve' as const };
    const body = offline.buildBody(request({ messages, thinking }));
    expect(body['reasoning']).toEqual({ effort: 'high', summary: 'auto' });
    expect(body['include']).toEqual(['reasoning.encrypted_content']);
    expect(body['input']).toEqual([
      { role: 'user', content: [{ type: 'input_text', text: 'Q' }] },
      { encrypted_content: 'enc', id: 'rs_1', summary: [], type: 'reasoning' },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_1_1',
        content: [
          {
            type: 'output_text',
            text: '<thinking>\nmine\n\ntheirs\n</thinking>\n\nAnswer.',
            annotations: [],
          },
        ],
        status: 'completed',
        phase: 'final_answer',
      },
    ]);

    const dropped = offline.buildBody(
      request({ messages, thinking: { ...thinking, foreign: 'drop' } }),
    );
    expect((dropped['input'] as unknown[])[2]).toMatchObject({
      content: [{ text: 'Answer.' }],
    });
    const off = offline.buildBody(request({ messages }));
    expect(off).not.toHaveProperty('reasoning');
    expect(off).not.toHaveProperty('include');
  });

  it('sets the prompt cache key and retention unless caching is off', () => {
    const long = offline.buildBody(request({ cacheRetention: 'long', cacheKey: '/tmp/a.chat' }));
    expect(long).toMatchObject({
      prompt_cache_key: '/tmp/a.chat',
      prompt_cache_retention: '24h',
    });
    const short = offline.buildBody(request({ cacheRetention: 'short' }));
    expect(short['prompt_cache_retention']).toBe('in_memory');
    expect(short).not.toHaveProperty('prompt_cache_key');
    const none = offline.buildBody(request({ cacheRetention: 'none', cacheKey: '/tmp/a.chat' }));
    expect(none).not.toHaveProperty('prompt_cache_key');
    expect(none).not.toHaveProperty('prompt_cache_retention');
  });

  it('gives byte-identical bodies for equal requests', () => {
    const make = (schema: Record<string, unknown>): ProviderRequest =>
      request({
        system: 'S',
        tools: [{ name: 't', description: 'd', inputSchema: schema }],
        cacheRetention: 'short',
        cacheKey: 'k',
      });
    const a = offline.buildBody(make({ type: 'object', properties: { b: {}, a: {} } }));
    const b = offline.buildBody(make({ properties: { a: {}, b: {} }, type: 'object' }));
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });
});

describe('OpenAI streaming through the SDK', () => {
  it('streams text, usage and done, sending exactly the built body', async () => {
    const req = request({ system: 'Be brief.' });
    const pending = run(adapter().stream(req, new AbortController().signal));
    const incoming = await fake.nextRequest();
    const sse = incoming.stream();
    await send(sse, [
      created(),
      textDelta('Hel'),
      textDelta('lo 🙂'),
      completed({ usage: usage(100, 20, 60, 5) }),
    ]);
    await sse.end();

    const events = await eventsOf(pending);
    expect(events).toEqual([
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo 🙂' },
      { type: 'usage', usage: { input: 40, output: 20, thoughts: 5, cacheRead: 60 } },
      { type: 'done', stopReason: 'end_turn' },
    ]);
    expectSent(incoming, '/v1/responses', KEY, offline.buildBody(req));
  });

  it('turns a reasoning summary and its encrypted item into thinking that round-trips', async () => {
    const thinking = { level: 'high' as const, effort: 'medium', foreign: 'preserve' as const };
    const req = request({ thinking });
    const pending = run(adapter().stream(req, new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    const item = {
      id: 'rs_9',
      type: 'reasoning',
      summary: [
        { type: 'summary_text', text: 'Plan.' },
        { type: 'summary_text', text: 'Check.' },
      ],
      encrypted_content: 'gAAAA-opaque',
    };
    const summary = (index: number, delta: string): Record<string, unknown> =>
      ev('response.reasoning_summary_text.delta', {
        item_id: 'rs_9',
        output_index: 0,
        summary_index: index,
        delta,
      });
    await send(sse, [
      created(),
      ev('response.output_item.added', {
        output_index: 0,
        item: { id: 'rs_9', type: 'reasoning', summary: [] },
      }),
      summary(0, 'Pl'),
      summary(0, 'an.'),
      summary(1, 'Check.'),
      ev('response.output_item.done', { output_index: 0, item }),
      ev('response.output_text.delta', {
        item_id: 'msg_1',
        output_index: 1,
        content_index: 0,
        delta: 'Done.',
      }),
      completed({ usage: usage(10, 30, 0, 25) }),
    ]);
    await sse.end();

    const events = await eventsOf(pending);
    expect(events.filter((e) => e.type === 'progress')).toEqual([
      // The reasoning item's start says where the thinking began (the layout writes it there).
      { type: 'progress', phase: 'thinking', characters: 0 },
      { type: 'progress', phase: 'thinking', characters: 2 },
      { type: 'progress', phase: 'thinking', characters: 5 },
      { type: 'progress', phase: 'thinking', characters: 13 },
    ]);
    const block = events.find((e) => e.type === 'thinking');
    expect(block).toEqual({
      type: 'thinking',
      content: 'Plan.\n\nCheck.',
      signature: { provider: 'openai', value: signature(item) },
    });
    expect(events.slice(-2)).toEqual([
      { type: 'usage', usage: { input: 10, output: 30, thoughts: 25 } },
      { type: 'done', stopReason: 'end_turn' },
    ]);

    if (block?.type !== 'thinking' || block.signature === undefined) throw new Error('no block');
    const next = offline.buildBody(
      request({
        thinking,
        messages: [
          userMessage(textPart('Hello')),
          {
            role: 'assistant',
            parts: [
              {
                kind: 'thinking',
                content: block.content,
                redacted: false,
                signature: block.signature,
              },
              textPart('Done.'),
            ],
          },
          userMessage(textPart('More')),
        ],
      }),
    );
    expect((next['input'] as unknown[])[1]).toEqual(item);
  });

  it('streams two parallel function calls as tool uses with internal names', async () => {
    const pending = run(adapter().stream(request(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    const call = (index: number, id: string, name: string, args: string): object => ({
      id: `fc_${index}`,
      type: 'function_call',
      call_id: id,
      name,
      arguments: args,
      status: 'completed',
    });
    const args = (index: number, delta: string): Record<string, unknown> =>
      ev('response.function_call_arguments.delta', {
        item_id: `fc_${index}`,
        output_index: index,
        delta,
      });
    await send(sse, [
      created(),
      ev('response.output_item.added', {
        output_index: 0,
        item: call(0, 'call_a', 'mcp__fs__read', ''),
      }),
      ev('response.output_item.added', { output_index: 1, item: call(1, 'call_b', 'bash', '') }),
      args(0, '{"path":'),
      args(1, '{"cmd":"ls"}'),
      args(0, '"a.txt"}'),
      ev('response.output_item.done', {
        output_index: 1,
        item: call(1, 'call_b', 'bash', '{"cmd":"ls"}'),
      }),
      ev('response.output_item.done', {
        output_index: 0,
        item: call(0, 'call_a', 'mcp__fs__read', '{"path":"a.txt"}'),
      }),
      completed({ usage: usage(5, 7) }),
    ]);
    await sse.end();

    const events = await eventsOf(pending);
    expect(events).toEqual([
      { type: 'progress', phase: 'tool_input', characters: 0, toolName: 'mcp:fs:read' },
      { type: 'progress', phase: 'tool_input', characters: 0, toolName: 'bash' },
      { type: 'progress', phase: 'tool_input', characters: 8, toolName: 'mcp:fs:read' },
      { type: 'progress', phase: 'tool_input', characters: 12, toolName: 'bash' },
      { type: 'progress', phase: 'tool_input', characters: 16, toolName: 'mcp:fs:read' },
      { type: 'tool_use', id: 'call_b', name: 'bash', input: { cmd: 'ls' } },
      { type: 'tool_use', id: 'call_a', name: 'mcp:fs:read', input: { path: 'a.txt' } },
      { type: 'usage', usage: { input: 5, output: 7 } },
      { type: 'done', stopReason: 'tool_use' },
    ]);
  });

  it('decodes an event split at awkward byte boundaries', async () => {
    const pending = run(adapter().stream(request(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await send(sse, [created()]);
    const delta = textDelta('café 🙂 ok');
    const bytes = Buffer.from(
      `event: response.output_text.delta\ndata: ${JSON.stringify(delta)}\n\n`,
    );
    const smile = bytes.indexOf(Buffer.from('🙂'));
    const eAcute = bytes.indexOf(Buffer.from('é'));
    let from = 0;
    for (const cut of [5, eAcute + 1, smile + 2, bytes.length - 1, bytes.length]) {
      await sse.write(bytes.subarray(from, cut));
      from = cut;
    }
    await send(sse, [completed()]);
    await sse.end();

    const events = await eventsOf(pending);
    expect(events).toEqual([
      { type: 'text', text: 'café 🙂 ok' },
      { type: 'done', stopReason: 'end_turn' },
    ]);
  });

  it('warns when the response is incomplete, and reports unparsable arguments', async () => {
    const pending = run(adapter().stream(request(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await send(sse, [
      ev('response.output_item.done', {
        output_index: 0,
        item: { type: 'function_call', call_id: 'call_x', name: 'grep', arguments: '{"q":' },
      }),
      ev('response.incomplete', {
        response: response('incomplete', { incomplete_details: { reason: 'max_output_tokens' } }),
      }),
    ]);
    await sse.end();

    const events = await eventsOf(pending);
    expect(events[0]?.type).toBe('warning');
    expect((events[0] as { message: string }).message).toContain('call_x');
    expect(events.slice(1)).toEqual([
      {
        type: 'tool_use',
        id: 'call_x',
        name: 'grep',
        input: {},
        invalid: 'Unexpected end of JSON input',
      },
      { type: 'warning', message: 'OpenAI response was truncated (reason: max_output_tokens)' },
      { type: 'done', stopReason: 'max_tokens' },
    ]);
  });

  it('lets the SDK retry a 429 with retry-after: 0, then streams', async () => {
    const pending = run(adapter(1).stream(request(), new AbortController().signal));
    const first = await fake.nextRequest();
    await rateLimited(first);
    const second = await fake.nextRequest();
    const sse = second.stream();
    await send(sse, [textDelta('ok'), completed()]);
    await sse.end();

    const events = await eventsOf(pending);
    expect(events).toEqual([
      { type: 'text', text: 'ok' },
      { type: 'done', stopReason: 'end_turn' },
    ]);
    expect(second.rawBody).toBe(first.rawBody);
    expect(second.headers['x-stainless-retry-count']).toBe('1');
  });

  it('maps HTTP failures to error kinds', async () => {
    const cases: [number, string, boolean][] = [
      [429, 'rate_limit', true],
      [401, 'authentication', false],
      [403, 'permission', false],
      [404, 'not_found', false],
      [400, 'invalid_request', false],
      [500, 'server', true],
    ];
    for (const [status, kind, retryable] of cases) {
      const pending = run(adapter(0).stream(request(), new AbortController().signal));
      await (
        await fake.nextRequest()
      ).respondError(
        status,
        { error: { message: `failed ${status}`, type: 'x', code: null } },
        { 'retry-after': '0' },
      );
      const { events, error } = await pending;
      expect(events).toEqual([]);
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ kind, status, retryable, message: `failed ${status}` });
    }
  });

  it('fails with a stream error on an error event mid-stream', async () => {
    const pending = run(adapter().stream(request(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await send(sse, [
      created(),
      textDelta('Part'),
      ev('error', { code: 'server_error', message: 'The model broke', param: null }),
    ]);
    await sse.end();

    const { events, error } = await pending;
    expect(events).toEqual([{ type: 'text', text: 'Part' }]);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).kind).toBe('stream');
    expect((error as ProviderError).describe()).toBe(
      'openai: stream — The model broke (code: server_error)',
    );
  });

  it('fails with a stream error on response.failed', async () => {
    const pending = run(adapter().stream(request(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await send(sse, [
      ev('response.failed', {
        response: response('failed', { error: { code: 'server_error', message: 'Gave up' } }),
      }),
    ]);
    await sse.end();
    const { error } = await pending;
    expect(error).toMatchObject({ kind: 'stream', message: 'Gave up' });
  });

  it('fails with a connection error when the connection drops mid-stream', async () => {
    const pending = run(adapter().stream(request(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await send(sse, [created(), textDelta('Half')]);
    sse.drop();

    const { events, error } = await pending;
    expect(events).toEqual([{ type: 'text', text: 'Half' }]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'connection', retryable: false });
    expect((error as ProviderError).message).toMatch(/^the connection was lost mid-reply \(/);
  });

  it('fails with a retryable connection error when nothing answers', async () => {
    const offlineFake = adapter();
    await fake.close();
    const { events, error } = await run(
      offlineFake.stream(request(), new AbortController().signal),
    );
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'connection', retryable: true });
  });

  it('ends quietly when aborted, closing the connection', async () => {
    const controller = new AbortController();
    const events = adapter().stream(request(), controller.signal)[Symbol.asyncIterator]();
    const first = events.next();
    const sse = (await fake.nextRequest()).stream();
    await send(sse, [created(), textDelta('Hi')]);
    expect((await first).value).toEqual({ type: 'text', text: 'Hi' });

    const second = events.next();
    controller.abort();
    expect((await second).done).toBe(true);
    expect(await sse.closed).toBe('client');
  });

  it('ends quietly when aborted before the response starts', async () => {
    const controller = new AbortController();
    const pending = run(adapter().stream(request(), controller.signal));
    const incoming = await fake.nextRequest();
    controller.abort();
    expect(await pending).toEqual({ events: [] });
    expect(await incoming.stream().closed).toBe('client');
  });
});
