// How each adapter makes its SDK client: the connection's settings as the SDKs take them, and
// one client per kind of answer (a stream, a JSON document), kept by the loader, whose `fetch`
// checks every answer (watchdog.ts: the idle timer, a page that is not the API, no credential
// echoed back).
import type { SdkLoader } from '../sdk.js';
import {
  DEFAULT_STREAM_IDLE_MS,
  type Expected,
  type Fetch,
  globalFetch,
  guardFetch,
} from '../watchdog.js';
import type { ConnectionOptions } from '../types.js';

/** A connection's settings as the Anthropic and OpenAI SDKs take them; an unset one is left out. */
export function sdkOptions(connection: ConnectionOptions): {
  apiKey: string;
  baseURL?: string;
  maxRetries?: number;
  timeout?: number;
} {
  return {
    apiKey: connection.apiKey,
    ...(connection.baseURL === undefined ? {} : { baseURL: connection.baseURL }),
    ...(connection.maxRetries === undefined ? {} : { maxRetries: connection.maxRetries }),
    ...(connection.timeoutMs === undefined ? {} : { timeout: connection.timeoutMs }),
  };
}

/** What an adapter's clients are made from. */
export interface ClientSpec {
  loader: SdkLoader;
  /** The provider's name, as its messages start. */
  provider: string;
  /** The loader's key for this adapter's clients (`anthropic`); the kind of answer is added. */
  kind: string;
  /** What a client is made with: another value makes another client. */
  options: object;
  /** `parameters.stream_idle_timeout` in ms, when set. */
  streamIdleMs: number | undefined;
  /** Values never to show, should an answer echo them. */
  secrets: string[];
  /** When the guard, not the SDK, keeps the request's time (Gemini: its SDK's timeout is a bare abort). */
  timeoutMs?: number;
}

/** The client for answers of `expect`, made by `make` with a guarded `fetch` the first time. */
export function guardedClient<T>(spec: ClientSpec, expect: Expected, make: (fetch: Fetch) => T): T {
  const idleMs = spec.streamIdleMs ?? DEFAULT_STREAM_IDLE_MS;
  return spec.loader.client(`${spec.kind}/${expect}`, { ...spec.options, idleMs }, () =>
    make(
      guardFetch(globalFetch, {
        provider: spec.provider,
        expect,
        idleMs,
        secrets: spec.secrets,
        ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
      }),
    ),
  );
}
