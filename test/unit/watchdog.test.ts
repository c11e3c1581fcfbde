// The stream watchdog and the answer check (src/core/provider/watchdog.ts, summary.ts): first
// on their own, with answers made here and a fake clock; then below each provider's real SDK,
// against the fake server.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAnthropicAdapter } from '../../src/core/provider/adapters/anthropic.js';
import { createChatCompletionsAdapter } from '../../src/core/provider/adapters/chat-completions.js';
import { createGeminiAdapter } from '../../src/core/provider/adapters/gemini.js';
import { createOpenAIAdapter } from '../../src/core/provider/adapters/openai.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import { mediaType, shownType, summarise } from '../../src/core/provider/summary.js';
import {
  ProviderError,
  type ProviderAdapter,
  type ProviderRequest,
} from '../../src/core/provider/types.js';
import { type Fetch, type GuardOptions, guardFetch } from '../../src/core/provider/watchdog.js';
import { retryDelay } from '../../src/core/provider/retry.js';
import { fakeProviderHooks } from '../helpers/fake-provider-hooks.js';
import { helloRequest } from '../helpers/provider-request.js';

const encoder = new TextEncoder();

/** Every test of the enclosing block runs on fake timers. */
function useFakeClock(): void {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** An answer whose body the test writes (`push`, `end`), and whether it was cancelled. */
function answer(status: number, headers: Record<string, string>) {
  let body!: ReadableStreamDefaultController<Uint8Array>;
  const state = { cancelled: undefined as unknown };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        body = controller;
      },
      cancel(reason) {
        state.cancelled = reason ?? 'cancelled';
      },
    },
    { highWaterMark: 0 },
  );
  return {
    state,
    response: new Response(stream, { status, headers }),
    push: (text: string) => {
      body.enqueue(encoder.encode(text));
    },
    end: () => {
      body.close();
    },
  };
}

const STREAM = { 'content-type': 'text/event-stream' };
const options: GuardOptions = {
  provider: 'anthropic',
  expect: 'stream',
  idleMs: 1000,
  secrets: ['sk-secret-key-1234'],
};

/** The guard over a fetch that answers `response`. */
function guarded(response: Response, over: Partial<GuardOptions> = {}): Fetch {
  return guardFetch(() => Promise.resolve(response), { ...options, ...over });
}

function readerOf(response: Response): ReadableStreamDefaultReader<Uint8Array> {
  if (response.body === null) throw new Error('no body');
  return response.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error: unknown = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof ProviderError)) throw new Error(`not a ProviderError: ${String(error)}`);
  return error;
}

describe('the summary of an unexpected answer', () => {
  it('is an HTML page’s title, with entities decoded and no markup', () => {
    expect(
      summarise(
        'text/html',
        '<html><head><title>\n  Sign in &amp; go &#8212; &lt;now&gt; &#x263A;</title></head>',
      ),
    ).toBe('Sign in & go — <now> ☺');
  });

  it('is the first words of a page without a title, scripts, styles and comments left out', () => {
    const page =
      '<!doctype html><html><head><style>p{}</style><script>alert("<b>")</script></head>' +
      '<body><!-- hidden --><h1>Access denied</h1><p>Your request was blocked.</p><div class="';
    expect(summarise('', page)).toBe('Access denied Your request was blocked.');
  });

  it('is one short line of printable text, without the credential', () => {
    const long = `${'word '.repeat(40)}end`;
    const said = summarise('text/plain', long);
    expect(said.length).toBeLessThanOrEqual(100);
    expect(said.endsWith('…')).toBe(true);
    expect(summarise('application/json', 'a\u001b[31mred\u0007\n\nline\u202e')).toBe(
      'a [31mred line',
    );
    expect(summarise('text/plain', 'key=sk-secret-key-1234!', ['sk-secret-key-1234'])).toBe(
      'key=[redacted]!',
    );
    expect(summarise('text/html', '<html><body>   </body></html>')).toBe('');
  });

  it('names content types by their media type only', () => {
    expect(mediaType('Text/Event-Stream; charset=utf-8')).toBe('text/event-stream');
    expect(shownType('text/html; charset="<b>"')).toBe('content type text/html');
    expect(shownType('text/x<script>')).toBe('content type text/xscript');
    expect(shownType(null)).toBe('no content type');
  });
});

describe('the answer check', () => {
  it('passes a stream, whatever its parameters, with its bytes as they came', async () => {
    const reply = answer(200, { 'content-type': 'Text/Event-Stream; charset=utf-8' });
    reply.push('data: one\n\n');
    reply.push(': ping\n\n');
    reply.end();
    const response = await guarded(reply.response)('http://127.0.0.1:9/v1/messages');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('data: one\n\n: ping\n\n');
  });

  it('fails a 200 HTML page at once: host, status, content type and title, not retried', async () => {
    const page = answer(200, { 'content-type': 'text/html; charset=utf-8' });
    // The page never ends: its title is enough.
    page.push('<html><head><title>Captive portal</title>');
    const response = await guarded(page.response)('http://10.0.0.1:8080/v1/messages?key=x');
    // The SDK sees a body that fails on its first read, which it passes on as it is.
    const error = await failure(response.text());
    expect(error.kind).toBe('unexpected_answer');
    expect(error.status).toBe(200);
    expect(error.describe()).toBe(
      'anthropic (10.0.0.1:8080): HTTP 200 with content type text/html, not a stream: "Captive portal". Check the base URL, and any proxy or login page on the way.',
    );
    expect(retryDelay(error, 1, false, false)).toBeUndefined();
    expect(page.state.cancelled).toBeDefined();
  });

  it('fails a JSON answer where a stream was asked for, and passes it where JSON was', async () => {
    const json = () => {
      const reply = answer(200, { 'content-type': 'application/json' });
      reply.push('{"echo":"sk-secret-key-1234"}');
      reply.end();
      return reply.response;
    };
    const error = await failure((await guarded(json())('http://h/x')).text());
    expect(error.message).toBe(
      'HTTP 200 with content type application/json, not a stream: "{"echo":"[redacted]"}". Check the base URL, and any proxy or login page on the way.',
    );
    const counted = await guarded(json(), { expect: 'json' })('http://h/x');
    expect(await counted.json()).toEqual({ echo: 'sk-secret-key-1234' });
    const stream = answer(200, STREAM);
    stream.end();
    const wrong = await guarded(stream.response, { expect: 'json' })('http://h/x');
    expect((await failure(wrong.text())).message).toMatch(
      /^HTTP 200 with content type text\/event-stream, not a JSON answer\. /,
    );
  });

  it('hands an API’s JSON error of any status to the SDK as it came', async () => {
    for (const status of [400, 429, 503]) {
      const reply = answer(status, { 'content-type': 'application/json' });
      const response = await guarded(reply.response)('http://h/x');
      expect(response).toBe(reply.response);
    }
  });

  it('fails an HTML error page of any status, kind by status, not retried', async () => {
    const page = answer(503, { 'content-type': 'text/html' });
    page.push('<h1>503 Service Temporarily Unavailable</h1>');
    page.end();
    const error = await failure((await guarded(page.response)('https://api.example.com/')).text());
    expect(error.kind).toBe('server');
    expect(error.status).toBe(503);
    expect(error.retryable).toBe(false);
    expect(error.describe()).toBe(
      'anthropic (api.example.com:443): HTTP 503 with content type text/html: "503 Service Temporarily Unavailable". Check the base URL, and any proxy or login page on the way.',
    );
  });

  describe('with a fake clock', () => {
    useFakeClock();

    it('waits at most 2 s (or the idle timeout) for a page that says nothing', async () => {
      const page = answer(200, { 'content-type': 'text/html' });
      page.push('<html><body><p>Please');
      let settled = false;
      const pending = guarded(page.response, { idleMs: 60_000 })('http://h/x').finally(() => {
        settled = true;
      });
      await vi.advanceTimersByTimeAsync(1999);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const error = await failure((await pending).text());
      expect(error.message).toMatch(
        /^HTTP 200 with content type text\/html, not a stream: "Please"/,
      );
      const silent = guarded(answer(200, { 'content-type': 'text/html' }).response, {
        idleMs: 500,
      })('http://h/x');
      await vi.advanceTimersByTimeAsync(500);
      expect((await failure((await silent).text())).message).toMatch(
        /^HTTP 200 with content type text\/html, not a stream\. /,
      );
      expect(vi.getTimerCount()).toBe(0);
    });

    it('goes on as an abort when the request is cancelled while the page is read', async () => {
      const controller = new AbortController();
      const page = answer(200, { 'content-type': 'text/html' });
      const outcome = guarded(page.response)('http://h/x', { signal: controller.signal }).then(
        () => undefined,
        (error: unknown) => error,
      );
      controller.abort();
      await vi.advanceTimersByTimeAsync(2000);
      expect(await outcome).toMatchObject({ name: 'AbortError' });
    });
  });
});

describe('the stream watchdog', () => {
  useFakeClock();

  it('fails a read that waits the idle timeout without a byte, and closes the answer', async () => {
    const reply = answer(200, STREAM);
    const reader = readerOf(await guarded(reply.response)('http://127.0.0.1:8080/v1/messages'));
    reply.push('data: first\n\n');
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    const next = reader.read();
    const outcome = next.then(
      () => 'read',
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(999);
    expect(reply.state.cancelled).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).kind).toBe('stalled');
    expect((error as ProviderError).describe()).toBe(
      'anthropic (127.0.0.1:8080): stalled: no data for 1 s. If the model pauses longer than that, raise parameters.stream_idle_timeout.',
    );
    expect(retryDelay(error, 1, false, false)).toBeUndefined();
    expect(reply.state.cancelled).toBe(error);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('counts any bytes (a ping, a comment) as data', async () => {
    const reply = answer(200, STREAM);
    const reader = readerOf(await guarded(reply.response)('http://h/x'));
    // 20 s of keep-alives, one every 900 ms, then the end.
    for (let i = 0; i < 22; i++) {
      const read = reader.read();
      await vi.advanceTimersByTimeAsync(900);
      reply.push(': ping\n\n');
      expect((await read).done).toBe(false);
    }
    const last = reader.read();
    reply.end();
    expect((await last).done).toBe(true);
    expect(reply.state.cancelled).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('sets its timer about once per idle period, not once per chunk', async () => {
    const reply = answer(200, STREAM);
    const timers = vi.spyOn(globalThis, 'setTimeout');
    const reader = readerOf(await guarded(reply.response)('http://h/x'));
    // 10 s of chunks, one every 50 ms.
    for (let i = 0; i < 200; i++) {
      const read = reader.read();
      await vi.advanceTimersByTimeAsync(50);
      reply.push('data: {}\n\n');
      await read;
    }
    expect(timers.mock.calls.length).toBeLessThanOrEqual(12);
    timers.mockRestore();
    await reader.cancel();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('does not count time in which nobody reads', async () => {
    const reply = answer(200, STREAM);
    const reader = readerOf(await guarded(reply.response)('http://h/x'));
    await vi.advanceTimersByTimeAsync(5000);
    const read = reader.read();
    await vi.advanceTimersByTimeAsync(900);
    reply.push('data: late\n\n');
    expect((await read).done).toBe(false);
    expect(reply.state.cancelled).toBeUndefined();
    await reader.cancel();
    expect(reply.state.cancelled).toBeDefined();
    expect(vi.getTimerCount()).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Below each SDK

const loader = new SdkLoader();

const fake = fakeProviderHooks('all');

beforeEach(() => {
  vi.stubEnv('METADATA_SERVER_DETECTION', 'none');
});

afterEach(() => {
  vi.unstubAllEnvs();
});

const REQUEST: ProviderRequest = helloRequest('m', 100);

const IDLE_MS = 300;

const ADAPTERS: { name: string; path: RegExp; make: () => ProviderAdapter }[] = [
  {
    name: 'anthropic',
    path: /^\/v1\/messages/,
    make: () =>
      createAnthropicAdapter(
        { apiKey: 'k', baseURL: fake.url, maxRetries: 0, streamIdleMs: IDLE_MS },
        loader,
      ),
  },
  {
    name: 'openai',
    path: /^\/v1\/responses/,
    make: () =>
      createOpenAIAdapter(
        { apiKey: 'k', baseURL: `${fake.url}/v1`, maxRetries: 0, streamIdleMs: IDLE_MS },
        loader,
      ),
  },
  {
    name: 'openai-compatible',
    path: /^\/v1\/chat\/completions/,
    make: () =>
      createChatCompletionsAdapter(
        { apiKey: 'k', baseURL: `${fake.url}/v1`, maxRetries: 0, streamIdleMs: IDLE_MS },
        loader,
      ),
  },
  {
    name: 'gemini',
    path: /:streamGenerateContent/,
    make: () =>
      createGeminiAdapter({ apiKey: 'k', baseURL: fake.url, streamIdleMs: IDLE_MS }, loader),
  },
  {
    name: 'vertex',
    path: /:streamGenerateContent/,
    make: () =>
      createGeminiAdapter(
        {
          accessToken: 'ya29.t',
          vertex: { project: 'p', location: 'global' },
          baseURL: fake.url,
          streamIdleMs: IDLE_MS,
        },
        loader,
      ),
  },
];

async function drain(adapter: ProviderAdapter): Promise<void> {
  for await (const event of adapter.stream(REQUEST, new AbortController().signal)) {
    expect(event).toBeDefined();
  }
}

describe.each(ADAPTERS)('through the $name SDK', ({ name, path, make }) => {
  it('a stream that goes quiet after its headers fails as stalled, and its connection closes', async () => {
    const outcome = failure(drain(make()));
    const stream = (await fake.nextRequest({ path })).stream();
    await stream.write(': hello\n\n');
    const error = await outcome;
    expect(error.kind).toBe('stalled');
    expect(error.describe()).toBe(
      `${name} (127.0.0.1:${String(fake.port)}): stalled: no data for 0.3 s. If the model pauses longer than that, raise parameters.stream_idle_timeout.`,
    );
    expect(await stream.closed).toBe('client');
  });

  it('an HTML page fails at once as not a stream', async () => {
    const outcome = failure(drain(make()));
    const page = (await fake.nextRequest({ path })).begin(200, { 'content-type': 'text/html' });
    await page.write('<title>Login</title>');
    const error = await outcome;
    expect(error.kind).toBe('unexpected_answer');
    expect(error.message).toMatch(/^HTTP 200 with content type text\/html, not a stream: "Login"/);
    expect(await page.closed).toBe('client');
  });

  it('a redirect is not followed: it fails, final, and nothing reaches where it points', async () => {
    const outcome = failure(drain(make()));
    const request = await fake.nextRequest({ path });
    const before = fake.requests.length;
    await request.respond(307, '', { location: `${fake.url}/elsewhere` });
    const error = await outcome;
    expect(error.kind).toBe('connection');
    expect(error.retryable).toBe(false);
    expect(error.describe()).toBe(
      `${name} (127.0.0.1:${String(fake.port)}): the server answered with a redirect, which is not followed (it would take the request and its key elsewhere): set the base URL to the address it points to`,
    );
    expect(fake.requests.slice(before).map((next) => next.path)).toEqual([]);
  });
});
