// The Anthropic adapter: exact request bodies, and replies streamed by the real SDK from the fake.
import { describe, expect, it } from 'vitest';
import { createAnthropicAdapter } from '../../src/core/provider/adapters/anthropic.js';
import { TRUNCATED_WARNING } from '../../src/core/provider/adapters/anthropic-events.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import {
  ProviderError,
  type ProviderAdapter,
  type ProviderEvent,
  type ProviderRequest,
} from '../../src/core/provider/types.js';
import { fakeProviderHooks } from '../helpers/fake-provider-hooks.js';
import { helloRequest } from '../helpers/provider-request.js';
import { startOfMessage } from '../helpers/anthropic-script.js';
import { textPart, toolResultPart, toolUsePart, userMessage } from '../helpers/evaluated-parts.js';
import { imagePart, pdfPart, textFilePart, unsupportedPart } from '../helpers/attachment-parts.js';
import { redactedThinkingPart, thinkingPart } from '../helpers/thinking-parts.js';
import { expectSent } from '../helpers/provider-wire.js';

const KEY = 'sk-test-dummy';
const loader = new SdkLoader();

function prompt(overrides: Partial<ProviderRequest> = {}): ProviderRequest {
  return helloRequest('claude-test', 4000, overrides);
}

const offline = createAnthropicAdapter({ apiKey: KEY }, loader);

describe('anthropic request body', () => {
  it('maps a system prompt and a user text, with the cacheable keys last', () => {
    const body = offline.buildBody(
      prompt({ system: 'Be brief.', temperature: 0.2, maxTokens: 1000 }),
    );
    expect(body).toEqual({
      max_tokens: 1000,
      model: 'claude-test',
      stream: true,
      temperature: 0.2,
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
    });
    expect(Object.keys(body)).toEqual([
      'max_tokens',
      'model',
      'stream',
      'temperature',
      'system',
      'messages',
    ]);
  });

  it('maps tool uses and results: results first, errors flagged, ids and names encoded', () => {
    const body = offline.buildBody(
      prompt({
        messages: [
          userMessage(textPart('Run them')),
          {
            role: 'assistant',
            parts: [
              toolUsePart('toolu_01', 'bash', { command: 'ls' }),
              textPart('  Running.\n'),
              toolUsePart('urn:flemma:tool:calc:1', 'mcp:slack:post', { b: 1, a: 2 }),
              toolUsePart('toolu_03', 'read'),
            ],
          },
          userMessage(
            textPart('   \n'),
            toolResultPart('toolu_01', 'bash', ['a.txt\n', 'b.txt']),
            toolResultPart('urn:flemma:tool:calc:1', 'mcp:slack:post', 'channel not found', {
              isError: true,
            }),
            toolResultPart('toolu_03', 'read', 'No result provided', {
              isError: true,
              synthetic: true,
            }),
            textPart('Thanks'),
          ),
        ],
      }),
    );
    expect(body['messages']).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Run them' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Running.' },
          { type: 'tool_use', id: 'toolu_01', name: 'bash', input: { command: 'ls' } },
          {
            type: 'tool_use',
            id: 'urn_flemma_tool_calc_1',
            name: 'mcp__slack__post',
            input: { a: 2, b: 1 },
          },
          { type: 'tool_use', id: 'toolu_03', name: 'read', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: 'a.txt\nb.txt' },
          {
            type: 'tool_result',
            tool_use_id: 'urn_flemma_tool_calc_1',
            content: 'channel not found',
            is_error: true,
          },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_03',
            content: 'No result provided',
            is_error: true,
          },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
    expect(body).not.toHaveProperty('tools');
    expect(body).not.toHaveProperty('tool_choice');
  });

  it('maps files in a user message and in a tool result', () => {
    const body = offline.buildBody(
      prompt({
        messages: [
          userMessage(
            toolResultPart('toolu_01', 'read', [
              textPart('see:'),
              imagePart('/a/x.png', 'iVBO'),
              unsupportedPart('/a/x.bin'),
            ]),
            textPart('Look '),
            pdfPart('/d/r.pdf', 'JVBE'),
            textFilePart('/d/n.txt', 'notes'),
            unsupportedPart('/d/blob.bin'),
          ),
        ],
      }),
    );
    expect(body['messages']).toEqual([
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01',
            content: [
              { type: 'text', text: 'see:' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBO' } },
              { type: 'text', text: '[binary file: /a/x.bin]' },
            ],
          },
          { type: 'text', text: 'Look ' },
          {
            type: 'document',
            title: 'r.pdf',
            source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' },
          },
          { type: 'text', text: 'notes' },
          { type: 'text', text: '@/d/blob.bin' },
        ],
      },
    ]);
  });

  it('sends native thinking as signed blocks and wraps foreign thinking in one text', () => {
    const assistant: ProviderRequest['messages'][number] = {
      role: 'assistant',
      parts: [
        textPart('Answer.'),
        thinkingPart('openai thought'),
        thinkingPart('mine', 'anthropic', 'sig=='),
        thinkingPart('  gemini thought \n', 'vertex', 'v-sig'),
        redactedThinkingPart('ZW5j'),
        thinkingPart('   '),
      ],
    };
    const messages: ProviderRequest['messages'] = [
      userMessage(textPart('Q')),
      assistant,
      { role: 'assistant', parts: [textPart('  \n')] },
    ];
    const sent = (foreign: 'preserve' | 'drop') =>
      offline.buildBody(prompt({ messages, thinking: { level: 'high', budget: 2048, foreign } }))[
        'messages'
      ];
    const question = { role: 'user', content: [{ type: 'text', text: 'Q' }] };
    // Anthropic's own thinking goes back as it came, whatever `foreign` says.
    const own = [
      { type: 'thinking', thinking: 'mine', signature: 'sig==' },
      { type: 'redacted_thinking', data: 'ZW5j' },
    ];
    expect(sent('preserve')).toEqual([
      question,
      {
        role: 'assistant',
        content: [
          ...own,
          { type: 'text', text: '<thinking>\nopenai thought\n\ngemini thought\n</thinking>' },
          { type: 'text', text: 'Answer.' },
        ],
      },
    ]);
    expect(sent('drop')).toEqual([
      question,
      { role: 'assistant', content: [...own, { type: 'text', text: 'Answer.' }] },
    ]);
  });

  it('maps thinking budgets (clamped) and efforts', () => {
    const body = (thinking: ProviderRequest['thinking'], maxTokens = 4000): unknown => {
      const built = offline.buildBody(
        prompt(thinking === undefined ? {} : { thinking, maxTokens }),
      );
      return { thinking: built['thinking'], output_config: built['output_config'] };
    };
    expect(body({ level: 'low', budget: 2048, foreign: 'preserve' })).toEqual({
      thinking: { type: 'enabled', budget_tokens: 2048 },
      output_config: undefined,
    });
    expect(body({ level: 'high', budget: 16384, foreign: 'preserve' }, 8000)).toEqual({
      thinking: { type: 'enabled', budget_tokens: 7999 },
      output_config: undefined,
    });
    expect(body({ level: 'high', budget: 16384, foreign: 'preserve' }, 1024)).toEqual({
      thinking: { type: 'enabled', budget_tokens: 1024 },
      output_config: undefined,
    });
    expect(body({ level: 'medium', effort: 'medium', foreign: 'preserve' })).toEqual({
      thinking: { type: 'adaptive', display: 'summarized' },
      output_config: { effort: 'medium' },
    });
    expect(body(undefined)).toEqual({ thinking: undefined, output_config: undefined });
  });

  it('places cache breakpoints for short and long retention, and none without', () => {
    const tools: ProviderRequest['tools'] = [
      { name: 'bash', description: 'Run', inputSchema: { type: 'object', properties: {} } },
      { name: 'mcp:slack:post', description: 'Post', inputSchema: { type: 'object' } },
    ];
    const short = offline.buildBody(prompt({ system: 'S', tools, cacheRetention: 'short' }));
    expect(short).toEqual({
      cache_control: { type: 'ephemeral' },
      max_tokens: 4000,
      model: 'claude-test',
      stream: true,
      tool_choice: { type: 'auto' },
      system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }],
      tools: [
        {
          name: 'bash',
          description: 'Run',
          input_schema: { properties: {}, type: 'object' },
        },
        {
          name: 'mcp__slack__post',
          description: 'Post',
          input_schema: { type: 'object' },
          cache_control: { type: 'ephemeral' },
        },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
    });
    expect(Object.keys(short).slice(-3)).toEqual(['system', 'tools', 'messages']);

    const long = offline.buildBody(prompt({ system: 'S', tools, cacheRetention: 'long' }));
    const hour = { type: 'ephemeral', ttl: '1h' };
    expect(long['cache_control']).toEqual(hour);
    expect(long['system']).toEqual([{ type: 'text', text: 'S', cache_control: hour }]);
    expect((long['tools'] as unknown[])[1]).toMatchObject({ cache_control: hour });

    const none = offline.buildBody(prompt({ system: 'S', tools, cacheRetention: 'none' }));
    expect(none).not.toHaveProperty('cache_control');
    expect(none['system']).toBe('S');
    expect(JSON.stringify(none['tools'])).not.toContain('cache_control');
  });

  it('gives byte-identical JSON for the same prompt built twice', () => {
    const make = (): ProviderRequest =>
      prompt({
        system: 'S',
        cacheRetention: 'short',
        temperature: 0,
        tools: [{ name: 'z', description: 'Z', inputSchema: { type: 'object', required: [] } }],
        messages: [
          userMessage(textPart('Hi')),
          {
            role: 'assistant',
            parts: [toolUsePart('t1', 'z', { y: 1, x: { b: 2, a: 1 } })],
          },
        ],
      });
    const first = JSON.stringify(offline.buildBody(make()));
    const second = JSON.stringify(offline.buildBody(make()));
    expect(second).toBe(first);
    expect(first).toContain('"input":{"x":{"a":1,"b":2},"y":1}');
  });
});

// ---------------------------------------------------------------------------------------------
// Streaming through the real SDK

const fake = fakeProviderHooks();

function adapter(maxRetries = 0): ProviderAdapter {
  return createAnthropicAdapter({ apiKey: KEY, baseURL: fake.url, maxRetries }, loader);
}

interface Scripted {
  type: string;
  [field: string]: unknown;
}

function messageStart(usage: Record<string, number> = {}): Scripted {
  return startOfMessage({
    model: 'claude-test',
    usage: { input_tokens: 12, output_tokens: 1, ...usage },
  });
}

function messageEnd(stopReason: string, outputTokens = 9): Scripted[] {
  return [
    {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: outputTokens },
    },
    { type: 'message_stop' },
  ];
}

function start(index: number, block: object): Scripted {
  return { type: 'content_block_start', index, content_block: block };
}

function delta(index: number, d: object): Scripted {
  return { type: 'content_block_delta', index, delta: d };
}

function stop(index: number): Scripted {
  return { type: 'content_block_stop', index };
}

function textBlock(index: number, pieces: string[]): Scripted[] {
  return [
    start(index, { type: 'text', text: '' }),
    ...pieces.map((text) => delta(index, { type: 'text_delta', text })),
    stop(index),
  ];
}

async function collect(events: AsyncIterable<ProviderEvent>): Promise<ProviderEvent[]> {
  const out: ProviderEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** Streams `request` and answers it with `script`, returning every event the adapter yielded. */
async function run(script: Scripted[], request = prompt()): Promise<ProviderEvent[]> {
  const pending = collect(adapter().stream(request, new AbortController().signal));
  // The caller awaits it; this only keeps an early failure from counting as unhandled meanwhile.
  pending.catch(() => undefined);
  const sse = (await fake.nextRequest()).stream();
  for (const event of script) await sse.sse(event.type, event);
  await sse.end();
  return pending;
}

const withoutProgress = (events: ProviderEvent[]): ProviderEvent[] =>
  events.filter((e) => e.type !== 'progress');

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ProviderError))
    throw new Error(`expected a ProviderError, got ${String(error)}`);
  return error;
}

describe('anthropic streaming', () => {
  it('streams text deltas, then usage and done; the body is what buildBody gives', async () => {
    const request = prompt({ system: 'S' });
    const pending = collect(adapter().stream(request, new AbortController().signal));
    const http = await fake.nextRequest();
    const sse = http.stream();
    const script = [
      messageStart({ cache_read_input_tokens: 100, cache_creation_input_tokens: 7 }),
      { type: 'ping' },
      ...textBlock(0, ['Hel', 'lo ', 'wörld']),
      ...messageEnd('end_turn'),
    ];
    for (const event of script) await sse.sse(event.type, event);
    await sse.end();

    expect(await pending).toEqual([
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo ' },
      { type: 'text', text: 'wörld' },
      { type: 'usage', usage: { input: 12, output: 9, cacheRead: 100, cacheCreation: 7 } },
      { type: 'done', stopReason: 'end_turn' },
    ]);
    expectSent(http, '/v1/messages', KEY, offline.buildBody(request));
  });

  it('accumulates thinking and its signature into one block at the end', async () => {
    const events = await run([
      messageStart(),
      start(0, { type: 'thinking', thinking: '', signature: '' }),
      delta(0, { type: 'thinking_delta', thinking: 'Let me ' }),
      delta(0, { type: 'thinking_delta', thinking: 'think.' }),
      delta(0, { type: 'signature_delta', signature: 'EqQB' }),
      delta(0, { type: 'signature_delta', signature: 'Ck==' }),
      stop(0),
      start(1, { type: 'redacted_thinking', data: 'b3BhcXVl' }),
      stop(1),
      ...textBlock(2, ['Answer']),
      ...messageEnd('max_tokens'),
    ]);
    expect(events).toEqual([
      // Each thinking block's start says where the thinking began (the layout writes it there).
      { type: 'progress', phase: 'thinking', characters: 0 },
      { type: 'progress', phase: 'thinking', characters: 7 },
      { type: 'progress', phase: 'thinking', characters: 13 },
      { type: 'progress', phase: 'thinking', characters: 13 },
      { type: 'text', text: 'Answer' },
      {
        type: 'thinking',
        content: 'Let me think.',
        signature: { provider: 'anthropic', value: 'EqQBCk==' },
      },
      { type: 'redacted_thinking', data: 'b3BhcXVl' },
      { type: 'usage', usage: { input: 12, output: 9 } },
      { type: 'warning', message: TRUNCATED_WARNING },
      { type: 'done', stopReason: 'max_tokens' },
    ]);
  });

  it('yields two parallel tool uses with parsed input and internal names', async () => {
    const events = await run([
      messageStart(),
      ...textBlock(0, ['Checking.']),
      start(1, { type: 'tool_use', id: 'toolu_A', name: 'mcp__slack__post', input: {} }),
      delta(1, { type: 'input_json_delta', partial_json: '' }),
      delta(1, { type: 'input_json_delta', partial_json: '{"text": "hi' }),
      delta(1, { type: 'input_json_delta', partial_json: '"}' }),
      stop(1),
      start(2, { type: 'tool_use', id: 'toolu_B', name: 'bash', input: {} }),
      delta(2, { type: 'input_json_delta', partial_json: '{"command": ' }),
      stop(2),
      ...messageEnd('tool_use'),
    ]);
    expect(events.filter((e) => e.type === 'progress')).toContainEqual({
      type: 'progress',
      phase: 'tool_input',
      characters: 14,
      toolName: 'mcp:slack:post',
    });
    expect(withoutProgress(events)).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_A', name: 'mcp:slack:post', input: { text: 'hi' } },
      { type: 'warning', message: expect.stringContaining('bash') as unknown as string },
      {
        type: 'tool_use',
        id: 'toolu_B',
        name: 'bash',
        input: {},
        invalid: 'Unexpected end of JSON input',
      },
      { type: 'usage', usage: { input: 12, output: 9 } },
      { type: 'done', stopReason: 'tool_use' },
    ]);
  });

  it('decodes an event split at awkward byte boundaries', async () => {
    const pending = collect(adapter().stream(prompt(), new AbortController().signal));
    const sse = (await fake.nextRequest()).stream();
    await sse.sse('message_start', messageStart());
    const [blockStart, textDelta, blockStop] = textBlock(0, ['café 🙂 ok']);
    await sse.sse(blockStart?.type, blockStart);
    const bytes = Buffer.from(`event: content_block_delta\ndata: ${JSON.stringify(textDelta)}\n\n`);
    const smile = bytes.indexOf(Buffer.from('🙂'));
    const cuts = [5, bytes.indexOf(Buffer.from('é')) + 1, smile + 2, bytes.length - 1];
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      await sse.write(bytes.subarray(from, cut));
      from = cut;
    }
    for (const event of [blockStop, ...messageEnd('end_turn')]) await sse.sse(event?.type, event);
    await sse.end();
    expect(withoutProgress(await pending)).toEqual([
      { type: 'text', text: 'café 🙂 ok' },
      { type: 'usage', usage: { input: 12, output: 9 } },
      { type: 'done', stopReason: 'end_turn' },
    ]);
  });

  it('lets the SDK retry a 429 before the reply starts', async () => {
    const pending = collect(
      createAnthropicAdapter({ apiKey: KEY, baseURL: fake.url, maxRetries: 2 }, loader).stream(
        prompt(),
        new AbortController().signal,
      ),
    );
    const first = await fake.nextRequest();
    // NOTE: the SDK treats a zero wait as "no hint" and backs off ~0.5 s; 1 ms keeps it instant.
    await first.respondError(
      429,
      { type: 'error', error: { type: 'rate_limit_error', message: 'Slow down' } },
      { 'retry-after-ms': '1' },
    );
    const sse = (await fake.nextRequest({ timeout: 2000 })).stream();
    for (const event of [messageStart(), ...textBlock(0, ['ok']), ...messageEnd('end_turn')])
      await sse.sse(event.type, event);
    await sse.end();
    expect(withoutProgress(await pending)).toEqual([
      { type: 'text', text: 'ok' },
      { type: 'usage', usage: { input: 12, output: 9 } },
      { type: 'done', stopReason: 'end_turn' },
    ]);
    expect(fake.requests).toHaveLength(2);
  });

  it('maps HTTP errors to kinds once retries are spent', async () => {
    const cases: [number, ProviderError['kind'], boolean][] = [
      [401, 'authentication', false],
      [429, 'rate_limit', true],
      [529, 'overloaded', true],
      [400, 'invalid_request', false],
    ];
    for (const [status, kind, retryable] of cases) {
      const pending = failure(collect(adapter().stream(prompt(), new AbortController().signal)));
      const http = await fake.nextRequest();
      await http.respondError(status, {
        type: 'error',
        error: { type: 'some_error', message: `boom ${status}` },
      });
      const error = await pending;
      expect([error.kind, error.status, error.retryable, error.message]).toEqual([
        kind,
        status,
        retryable,
        `boom ${status}`,
      ]);
    }
  });

  it('fails with a stream error on an error event mid-stream', async () => {
    const pending = adapter().stream(prompt(), new AbortController().signal);
    const seen: ProviderEvent[] = [];
    const outcome = failure(
      (async () => {
        for await (const event of pending) seen.push(event);
      })(),
    );
    const sse = (await fake.nextRequest()).stream();
    for (const event of [messageStart(), ...textBlock(0, ['Partial'])])
      await sse.sse(event.type, event);
    await sse.sse('error', {
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
    await sse.end();
    const error = await outcome;
    expect(error.kind).toBe('stream');
    expect(error.describe()).toBe('anthropic: stream — overloaded_error — Overloaded');
    expect(seen).toEqual([{ type: 'text', text: 'Partial' }]);
  });

  it('fails with a non-retryable connection error when the connection drops mid-reply', async () => {
    const events = adapter().stream(prompt(), new AbortController().signal)[Symbol.asyncIterator]();
    const first = events.next();
    const sse = (await fake.nextRequest()).stream();
    for (const event of [messageStart(), ...textBlock(0, ['Half'])].slice(0, 3))
      await sse.sse(event.type, event);
    expect(await first).toEqual({ done: false, value: { type: 'text', text: 'Half' } });
    sse.drop();
    const error = await failure(events.next());
    expect([error.kind, error.retryable]).toEqual(['connection', false]);
    expect(error.describe()).toMatch(
      /^anthropic \(127\.0\.0\.1:\d+\): the connection was lost mid-reply \(the server closed it\)$/,
    );
    expect(await sse.closed).toBe('drop');
  });

  it('fails with a retryable connection error when nothing answers', async () => {
    const refused = adapter();
    await fake.close();
    const error = await failure(collect(refused.stream(prompt(), new AbortController().signal)));
    expect([error.kind, error.retryable]).toEqual(['connection', true]);
  });

  it('ends quietly when aborted, and the connection closes', async () => {
    const controller = new AbortController();
    const events = adapter().stream(prompt(), controller.signal)[Symbol.asyncIterator]();
    const first = events.next();
    const sse = (await fake.nextRequest()).stream();
    for (const event of [messageStart(), ...textBlock(0, ['Hi'])].slice(0, 3))
      await sse.sse(event.type, event);
    expect(await first).toEqual({ done: false, value: { type: 'text', text: 'Hi' } });
    const next = events.next();
    controller.abort();
    expect(await sse.closed).toBe('client');
    expect(await next).toEqual({ done: true, value: undefined });
  });

  it('fails as blocked on a refusal', async () => {
    const error = await failure(
      run([messageStart(), ...textBlock(0, ['I']), ...messageEnd('refusal')]),
    );
    expect(error.describe()).toBe('anthropic: blocked — Response blocked by Anthropic (refusal)');
  });
});
