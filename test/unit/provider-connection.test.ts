// A connection that fails says what failed and where, the same for every provider: the host and
// port it tried, the cause in plain words, and never the key or the path. Each adapter goes
// through its real SDK to the fake server (or to a closed port, a name that does not resolve,
// TLS spoken to a server that speaks none).
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
import { startFakeProvider } from '../helpers/fake-provider.js';
import { fakeProviderHooks } from '../helpers/fake-provider-hooks.js';
import { helloRequest } from '../helpers/provider-request.js';

const KEY = 'sk-connection-test-key';
const loader = new SdkLoader();

interface Setup {
  timeoutMs?: number;
}

/** Each provider's adapter for a base URL (a server root; each adds its own path). */
const PROVIDERS: [string, (root: string, setup: Setup) => ProviderAdapter][] = [
  [
    'anthropic',
    (root, setup) =>
      createAnthropicAdapter({ apiKey: KEY, baseURL: root, maxRetries: 0, ...setup }, loader),
  ],
  [
    'openai',
    (root, setup) =>
      createOpenAIAdapter({ apiKey: KEY, baseURL: `${root}/v1`, maxRetries: 0, ...setup }, loader),
  ],
  [
    'gemini',
    (root, setup) => createGeminiAdapter({ apiKey: KEY, baseURL: root, ...setup }, loader),
  ],
  [
    'vertex',
    (root, setup) =>
      createGeminiAdapter(
        {
          accessToken: KEY,
          vertex: { project: 'p', location: 'us-central1' },
          baseURL: root,
          ...setup,
        },
        loader,
      ),
  ],
  [
    'moonshot',
    (root, setup) =>
      createChatCompletionsAdapter(
        { apiKey: KEY, baseURL: `${root}/v1`, maxRetries: 0, name: 'moonshot', ...setup },
        loader,
      ),
  ],
];

function prompt(): ProviderRequest {
  return helloRequest('some-model', 100);
}

async function failure(adapter: ProviderAdapter): Promise<ProviderError> {
  try {
    for await (const event of adapter.stream(prompt(), new AbortController().signal)) {
      throw new Error(`unexpected event ${JSON.stringify(event)}`);
    }
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error('the stream ended without failing');
}

const fake = fakeProviderHooks();

describe.each(PROVIDERS)('%s, when the connection fails', (name, make) => {
  it('says the connection was refused, and where', async () => {
    const closed = await startFakeProvider();
    await closed.close();
    const error = await failure(make(closed.url, {}));
    expect(error.describe()).toBe(
      `${name} (127.0.0.1:${String(closed.port)}): connection refused: nothing is listening there. Is the local server running?`,
    );
    expect([error.kind, error.retryable]).toEqual(['connection', true]);
  });

  it('says the name does not resolve, and which', async () => {
    const error = await failure(make('https://flemma-test-host.invalid', {}));
    // A resolver answers "no such name"; with none reachable at all, the lookup fails for now.
    expect(error.describe()).toMatch(
      new RegExp(
        `^${name} \\(flemma-test-host\\.invalid:443\\): (host not found: the name does not resolve \\(DNS\\)|the name could not be resolved for now)`,
      ),
    );
  });

  it('says TLS failed, and why, when the server speaks no TLS', async () => {
    const error = await failure(make(fake.url.replace('http:', 'https:'), {}));
    expect(error.describe()).toBe(
      `${name} (127.0.0.1:${String(fake.port)}): TLS failed: the server does not speak TLS there (an http:// address written as https://?)`,
    );
    expect(error.retryable).toBe(false);
  });

  it('says no answer came in time, and from where', async () => {
    const pending = failure(make(fake.url, { timeoutMs: 300 }));
    // The request arrives and is never answered.
    await fake.nextRequest();
    const error = await pending;
    expect(error.describe()).toBe(
      `${name} (127.0.0.1:${String(fake.port)}): no answer within 0.3 s (parameters.timeout)`,
    );
    expect([error.kind, error.retryable]).toEqual(['timeout', true]);
  });

  it('says the connection was lost before the reply began, and may be tried again', async () => {
    const pending = failure(make(fake.url, {}));
    const request = await fake.nextRequest();
    // Headers and a keep-alive comment, then the connection goes before any event.
    const stream = request.stream();
    await stream.write(': ping\n\n');
    stream.drop();
    const error = await pending;
    expect(error.describe()).toBe(
      `${name} (127.0.0.1:${String(fake.port)}): the connection was lost before the reply began (the server closed it)`,
    );
    expect([error.kind, error.retryable]).toEqual(['connection', true]);
  });

  it('never shows the key or the path', async () => {
    const closed = await startFakeProvider();
    await closed.close();
    const said = (await failure(make(`${closed.url}/secret-path?key=${KEY}`, {}))).describe();
    expect(said).not.toContain(KEY);
    expect(said).not.toContain('secret-path');
  });
});
