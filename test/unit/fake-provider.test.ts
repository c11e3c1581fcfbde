// The fake provider, proven through the real Anthropic and OpenAI SDKs and through plain fetch.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { fakeProviderHooks } from '../helpers/fake-provider-hooks.js';
import { startOfMessage } from '../helpers/anthropic-script.js';
import { chatChunk, rateLimited } from '../helpers/provider-wire.js';

const KEY = 'sk-test-dummy';

const fake = fakeProviderHooks();

function anthropic(maxRetries = 0): Anthropic {
  return new Anthropic({ apiKey: KEY, baseURL: fake.url, maxRetries });
}

function openai(maxRetries = 0): OpenAI {
  return new OpenAI({ apiKey: KEY, baseURL: `${fake.url}/v1`, maxRetries });
}

const ANTHROPIC_PARAMS = {
  model: 'claude-test',
  max_tokens: 64,
  messages: [{ role: 'user' as const, content: 'Say hello' }],
};

interface ScriptedEvent {
  type: string;
  [field: string]: unknown;
}

/** The Anthropic event sequence for one text block made of `deltas`. */
function anthropicEvents(deltas: string[]): ScriptedEvent[] {
  return [
    startOfMessage({ model: 'claude-test', usage: { input_tokens: 3, output_tokens: 1 } }),
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ...deltas.map((text) => ({
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    })),
    { type: 'content_block_stop', index: 0 },
    {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: deltas.length },
    },
    { type: 'message_stop' },
  ];
}

/** The type of the SDK's next event, or undefined once the stream is over. */
async function nextType(events: AsyncIterator<{ type: string }>): Promise<string | undefined> {
  const result = await events.next();
  return result.done === true ? undefined : result.value.type;
}

function openaiChunk(delta: object, finishReason: string | null = null): object {
  return chatChunk('gpt-test', delta, finishReason);
}

describe('fake provider through the Anthropic SDK', () => {
  it('streams scripted events that the SDK assembles into text', async () => {
    const stream = anthropic().messages.stream(ANTHROPIC_PARAMS);
    const request = await fake.nextRequest();

    const sse = request.stream();
    for (const event of anthropicEvents(['Hel', 'lo, ', 'wörld'])) await sse.sse(event.type, event);
    await sse.end();

    expect(await stream.finalText()).toBe('Hello, wörld');
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/messages');
    expect(request.body).toMatchObject({
      model: 'claude-test',
      stream: true,
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    expect(request.apiKey()).toBe(KEY);
  });

  it('decodes an event split across writes, even inside multi-byte characters', async () => {
    // Records the chunk sizes the SDK reads, to show the split really reached it.
    const seen: number[] = [];
    const tap = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
      fetch(input, init).then((response) => {
        if (response.body === null) return response;
        const counter = new TransformStream<Uint8Array, Uint8Array>({
          transform: (chunk, controller) => {
            seen.push(chunk.byteLength);
            controller.enqueue(chunk);
          },
        });
        const { status, statusText, headers } = response;
        return new Response(response.body.pipeThrough(counter), { status, statusText, headers });
      });
    const client = new Anthropic({ apiKey: KEY, baseURL: fake.url, maxRetries: 0, fetch: tap });
    const stream = client.messages.stream(ANTHROPIC_PARAMS);
    const sse = (await fake.nextRequest()).stream();
    const [start, blockStart, delta, ...rest] = anthropicEvents(['café 🙂 ok']);
    await sse.sse(start?.type, start);
    await sse.sse(blockStart?.type, blockStart);

    const bytes = Buffer.from(`event: content_block_delta\ndata: ${JSON.stringify(delta)}\n\n`);
    const eAcute = bytes.indexOf(Buffer.from('é'));
    const smile = bytes.indexOf(Buffer.from('🙂'));
    const cuts = [3, 10, eAcute + 1, smile + 1, smile + 3, bytes.length - 1];
    const sizes: number[] = [];
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      sizes.push(cut - from);
      await sse.write(bytes.subarray(from, cut));
      from = cut;
    }
    for (const event of rest) await sse.sse(event.type, event);
    await sse.end();

    expect(await stream.finalText()).toBe('café 🙂 ok');
    expect(`,${seen.join(',')},`).toContain(`,${sizes.join(',')},`);
  });

  it('makes the iteration reject when the connection drops mid-stream', async () => {
    const pending = anthropic().messages.create({ ...ANTHROPIC_PARAMS, stream: true });
    const sse = (await fake.nextRequest()).stream();
    const events = (await pending)[Symbol.asyncIterator]();
    const [start, blockStart] = anthropicEvents(['never finished']);

    await sse.sse(start?.type, start);
    expect(await nextType(events)).toBe('message_start');
    await sse.sse(blockStart?.type, blockStart);
    expect(await nextType(events)).toBe('content_block_start');

    sse.drop();
    await expect(events.next()).rejects.toThrow();
    expect(await sse.closed).toBe('drop');
  });

  it('sees the connection close when the SDK aborts the stream', async () => {
    const pending = anthropic().messages.create({ ...ANTHROPIC_PARAMS, stream: true });
    const sse = (await fake.nextRequest()).stream();
    const stream = await pending;
    const events = stream[Symbol.asyncIterator]();
    const [start] = anthropicEvents([]);

    await sse.sse(start?.type, start);
    expect(await nextType(events)).toBe('message_start');

    stream.controller.abort();
    expect(await sse.closed).toBe('client');
    // Writes after the client left are swallowed rather than thrown.
    await sse.sse('ping', { type: 'ping' });
    expect((await events.next()).done).toBe(true);
  });
});

describe('fake provider through the OpenAI SDK', () => {
  it('streams chunks and [DONE] that the SDK assembles into text', async () => {
    const pending = openai().chat.completions.create({
      model: 'gpt-test',
      stream: true,
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    const request = await fake.nextRequest();
    const sse = request.stream();
    await sse.sse(undefined, openaiChunk({ role: 'assistant', content: '' }));
    for (const text of ['Hel', 'lo', ' 🙂'])
      await sse.sse(undefined, openaiChunk({ content: text }));
    await sse.sse(undefined, openaiChunk({}, 'stop'));
    await sse.sse(undefined, '[DONE]');
    await sse.end();

    let text = '';
    let finish: string | null | undefined;
    for await (const chunk of await pending) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish ??= chunk.choices[0]?.finish_reason;
    }
    expect(text).toBe('Hello 🙂');
    expect(finish).toBe('stop');
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.body).toMatchObject({ model: 'gpt-test', stream: true });
    expect(request.apiKey()).toBe(KEY);
  });

  it('lets the SDK retry a 429 with retry-after: 0', async () => {
    const pending = openai(2).chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'Again' }],
    });
    const first = await fake.nextRequest();
    await rateLimited(first);
    const second = await fake.nextRequest();
    await second.respond(200, {
      id: 'chatcmpl-fake',
      object: 'chat.completion',
      created: 0,
      model: 'gpt-test',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Done', refusal: null },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
    });

    expect((await pending).choices[0]?.message.content).toBe('Done');
    expect(fake.requests).toHaveLength(2);
    expect(second.rawBody).toBe(first.rawBody);
    expect(first.headers['x-stainless-retry-count']).toBe('0');
    expect(second.headers['x-stainless-retry-count']).toBe('1');
  });
});

describe('fake provider plumbing', () => {
  it('delivers every write to the client as its own chunk', async () => {
    const pending = fetch(`${fake.url}/chunks`);
    const sse = (await fake.nextRequest()).stream();
    const response = await pending;
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('cache-control')).toBe('no-cache');

    const body = response.body;
    if (body === null) throw new Error('no body');
    // NOTE: read while writing, as an SDK does; fetch merges chunks nobody has pulled yet.
    const sizes: number[] = [];
    const read = (async () => {
      for await (const chunk of body) sizes.push((chunk as Uint8Array).byteLength);
    })();

    const pieces = [Buffer.from('ab'), Buffer.from([0xc3]), Buffer.from([0xa9]), Buffer.from('cd')];
    for (const piece of pieces) await sse.write(piece);
    await sse.end();
    await read;
    expect(sizes).toEqual([2, 1, 1, 2]);
  });

  it('hands out requests that arrived before the wait, in order and by path', async () => {
    const send = (path: string, headers: Record<string, string>): Promise<Response> =>
      fetch(`${fake.url}${path}`, { method: 'POST', headers, body: '{"n":1}' });
    const replies = [
      send('/a', { 'X-Api-Key': 'k-header' }),
      send('/b?alt=sse', { 'x-goog-api-key': 'k-goog' }),
      send('/c', { authorization: 'Bearer k-bearer' }),
    ];
    const b = await fake.nextRequest({ path: '/b' });
    const c = await fake.nextRequest({ path: /^\/c/ });
    const a = await fake.nextRequest();
    expect([a.path, b.path, c.path]).toEqual(['/a', '/b?alt=sse', '/c']);
    expect([a.apiKey(), b.apiKey(), c.apiKey()]).toEqual(['k-header', 'k-goog', 'k-bearer']);
    expect(a.body).toEqual({ n: 1 });

    await a.respond(200, { ok: true });
    await b.respond(201, 'plain');
    await c.respondError(500, { error: 'boom' }, { 'X-Extra': 'yes' });
    expect(() => a.stream()).toThrow(/already answered/);
    const [ra, rb, rc] = await Promise.all(replies);
    expect(await ra?.json()).toEqual({ ok: true });
    expect(await rb?.text()).toBe('plain');
    expect(rc?.status).toBe(500);
    expect(rc?.headers.get('x-extra')).toBe('yes');
  });

  it('rejects a wait that times out, naming what it saw', async () => {
    await expect(fake.nextRequest({ timeout: 20, path: '/nothing' })).rejects.toThrow(
      /no request for \/nothing within 20 ms \(received so far: none\)/,
    );
  });

  it('closes promptly with an unanswered request and a pending wait', async () => {
    const outcome = anthropic()
      .messages.create(ANTHROPIC_PARAMS)
      .then(
        () => 'answered',
        () => 'failed',
      );
    await fake.nextRequest();
    const waiting = fake.nextRequest();

    // The request stays unanswered (the SDK would wait minutes): close() must not wait for it.
    await fake.close();
    await expect(waiting).rejects.toThrow(/closed/);
    expect(await outcome).toBe('failed');
  });
});
