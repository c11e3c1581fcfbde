// A reply's stream after its last event (src/core/provider/transport.ts, `readTail`): read to its
// end, so that the connection stays open for the next request, and ended when it does not end.
// Through each provider's real SDK against the fake server, then the bound with a fake clock.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAnthropicAdapter } from '../../src/core/provider/adapters/anthropic.js';
import { createGeminiAdapter } from '../../src/core/provider/adapters/gemini.js';
import { createOpenAIAdapter } from '../../src/core/provider/adapters/openai.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import { TAIL_MS, readTail } from '../../src/core/provider/transport.js';
import type { ProviderAdapter, ProviderEvent } from '../../src/core/provider/types.js';
import { startOfMessage } from '../helpers/anthropic-script.js';
import type { FakeStream } from '../helpers/fake-provider.js';
import { fakeProviderHooks } from '../helpers/fake-provider-hooks.js';
import { responsesEvent, responsesResponse } from '../helpers/openai-script.js';
import { helloRequest } from '../helpers/provider-request.js';

const loader = new SdkLoader();
const fake = fakeProviderHooks('all');

interface Case {
  name: string;
  path: RegExp;
  make: () => ProviderAdapter;
  /** Writes a whole reply, its last event included, and leaves the response open. */
  reply: (stream: FakeStream) => Promise<void>;
}

const CASES: Case[] = [
  {
    name: 'anthropic',
    path: /^\/v1\/messages/,
    make: () => createAnthropicAdapter({ apiKey: 'k', baseURL: fake.url, maxRetries: 0 }, loader),
    reply: async (stream) => {
      await stream.sse('message_start', startOfMessage());
      await stream.sse('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 1 },
      });
      await stream.sse('message_stop', { type: 'message_stop' });
    },
  },
  {
    name: 'openai',
    path: /^\/v1\/responses/,
    make: () =>
      createOpenAIAdapter({ apiKey: 'k', baseURL: `${fake.url}/v1`, maxRetries: 0 }, loader),
    reply: async (stream) => {
      const event = responsesEvent('response.completed', {
        response: responsesResponse('completed', 'gpt-test'),
      });
      await stream.sse(String(event['type']), event);
    },
  },
  {
    name: 'gemini',
    path: /:streamGenerateContent/,
    make: () => createGeminiAdapter({ apiKey: 'k', baseURL: fake.url }, loader),
    reply: async (stream) => {
      await stream.sse(undefined, {
        candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] }, finishReason: 'STOP' }],
      });
    },
  },
];

async function events(adapter: ProviderAdapter): Promise<ProviderEvent[]> {
  const seen: ProviderEvent[] = [];
  for await (const event of adapter.stream(helloRequest('m', 100), new AbortController().signal)) {
    seen.push(event);
  }
  return seen;
}

describe.each(CASES)('after the last event of a $name reply', ({ path, make, reply }) => {
  it('the connection is kept for the next request, not closed', async () => {
    const adapter = make();
    const before = fake.connections;
    for (let turn = 0; turn < 6; turn++) {
      const outcome = events(adapter);
      const stream = (await fake.nextRequest({ path })).stream();
      await reply(stream);
      // The reply ends at its last event, before the server has ended the response.
      expect((await outcome).some((event) => event.type === 'done')).toBe(true);
      await stream.end();
      expect(await stream.closed).toBe('end');
    }
    // A request that starts before the previous response's end is read takes a second
    // connection; after that the two take turns. Cutting each response opens one per request.
    expect(fake.connections - before).toBeLessThanOrEqual(2);
  });
});

describe('the tail of a stream', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is read to its end without ending the request', async () => {
    const request = new AbortController();
    const tail = ['after the end', 'more'];
    let done = false;
    const items: AsyncIterator<string> = {
      next: () => {
        const value = tail.shift();
        if (value === undefined) done = true;
        return Promise.resolve(
          value === undefined ? { done: true, value: undefined } : { done: false, value },
        );
      },
    };
    readTail(items, request);
    await vi.waitFor(() => {
      expect(done).toBe(true);
    });
    expect(request.signal.aborted).toBe(false);
  });

  it('that does not end is ended after TAIL_MS, and a failure in it is dropped', async () => {
    vi.useFakeTimers();
    const request = new AbortController();
    const items: AsyncIterator<string> = {
      next: () =>
        new Promise((_resolve, reject) => {
          request.signal.addEventListener('abort', () => {
            reject(new Error('aborted'));
          });
        }),
    };
    readTail(items, request);
    await vi.advanceTimersByTimeAsync(TAIL_MS - 1);
    expect(request.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(request.signal.aborted).toBe(true);
  });
});
