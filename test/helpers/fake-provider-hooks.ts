// The fake provider of a unit test file: started and closed by the file's hooks.
import { afterAll, afterEach, beforeAll, beforeEach, vi } from 'vitest';
import { type FakeProvider, startFakeProvider } from './fake-provider.js';

/**
 * A fake provider started before each test (`'each'`, the default) or once for the file
 * (`'all'`), and closed after. Call it at the top level of the file; the object it returns
 * stands for the one running.
 */
export function fakeProviderHooks(scope: 'each' | 'all' = 'each'): FakeProvider {
  let current: FakeProvider | undefined;
  (scope === 'each' ? beforeEach : beforeAll)(async () => {
    current = await startFakeProvider();
  });
  (scope === 'each' ? afterEach : afterAll)(async () => {
    await current?.close();
    current = undefined;
  });
  return new Proxy({} as FakeProvider, {
    get(_target, key) {
      if (current === undefined) throw new Error('the fake provider runs only in a test');
      const value: unknown = Reflect.get(current, key);
      return typeof value === 'function' ? (value as () => unknown).bind(current) : value;
    },
  });
}

/** What Google's SDK reads from the environment (keys, endpoints, Vertex AI's project). */
export const GOOGLE_SDK_ENV = [
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_GEMINI_BASE_URL',
  'GOOGLE_VERTEX_BASE_URL',
  'GOOGLE_CLOUD_PROJECT',
  'GOOGLE_CLOUD_LOCATION',
  'GOOGLE_GENAI_USE_VERTEXAI',
  'GOOGLE_APPLICATION_CREDENTIALS',
];

/**
 * The SDKs read these names from the environment; the tests pass everything explicitly, so each
 * test runs with them unset (and no metadata server looked for), restored after.
 */
export function sdkEnvHooks(names: readonly string[]): void {
  beforeEach(() => {
    for (const name of names) vi.stubEnv(name, undefined);
    vi.stubEnv('METADATA_SERVER_DETECTION', 'none');
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });
}
