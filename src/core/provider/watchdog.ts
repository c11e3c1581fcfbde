// The stream watchdog and the answer check (docs/requests.md, "Answers that are not streams"
// and "The stream watchdog"). Every adapter hands its SDK a `fetch` made by `guardFetch`, so the
// same rules hold for every provider, below the SDK and its parsing:
//
// - A stream that receives no bytes for the idle timeout fails ("stalled"). The time counted is
//   the time a read of the body waits: any bytes restart it (an SSE ping or comment is data too),
//   and time the reader is not asking for more is not counted. There is no timer per chunk: one
//   timer per response fires at most once per idle period and, when data came meanwhile, sets
//   itself again for what is left of the period.
// - A 2xx answer whose content type is not the one expected (a stream: `text/event-stream`; a
//   count: JSON) cannot be what was asked for, and fails at once; so does an HTML page of any
//   status (an API answers its errors in JSON: a page comes from something else on the way, a
//   captive portal, a proxy, a wrong base URL). The message names the endpoint's host, the status
//   and the content type, and summarises what the answer said (`summary.ts`), never quoting
//   markup. These failures are final: trying again gets the same answer.
// - Any other answer (a stream, a JSON error of any status) goes to the SDK as it came, so its
//   own error handling and the send's retries stay as they are.
//
// How a failure reaches the adapter: every SDK passes an error thrown while it reads a streamed
// body on unchanged, whereas an error thrown by `fetch` itself is wrapped differently by each
// (and, by some, classified as a timeout by its text). So a failed answer is handed to the SDK
// as a 200 response whose body fails on its first read with the ProviderError; a stall fails the
// body being read. The adapters pass a ProviderError through as it is.
import { ProviderError, errorForStatus } from './types.js';
import { mediaType, shownType, summarise } from './summary.js';
import { connectError, endpointOf, lostError, timeoutError } from './transport.js';
import { timerMs } from '../util/timer.js';

export { endpointOf } from './transport.js';

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** What an answer must be: a stream of server-sent events, or a JSON document. */
export type Expected = 'stream' | 'json';

export interface GuardOptions {
  /** The provider's name, as messages start. */
  provider: string;
  expect: Expected;
  /** How long a stream may go without a byte, in ms. */
  idleMs: number;
  /** Values never to show (the credential), should an answer echo them. */
  secrets?: readonly string[];
  /**
   * How long to wait for an answer to begin (`parameters.timeout`), in ms, for an SDK that has
   * no timeout of its own to report (`@google/genai`); the others keep their own.
   */
  timeoutMs?: number;
}

/** How every request treats a redirect: as a failure (`transport.ts` says what it means). */
const NOT_FOLLOWED: Pick<RequestInit, 'redirect'> = { redirect: 'error' };

/** The global `fetch`, looked up when called (Node's own, undici). */
export const globalFetch: Fetch = (input, init) => fetch(input, init);

/** The default of `parameters.stream_idle_timeout`, in ms. */
export const DEFAULT_STREAM_IDLE_MS = 60_000;

/** How much of an unexpected answer is read to summarise it. */
const EXCERPT_BYTES = 8192;
/** How long to wait for that much (an answer may never end); at most the idle timeout. */
const EXCERPT_WAIT_MS = 2000;

function accepts(expect: Expected, type: string): boolean {
  if (expect === 'stream') return type === 'text/event-stream';
  return type === 'application/json' || type.endsWith('+json');
}

/** `60 s`, `1.5 s`. */
function seconds(ms: number): string {
  return `${String(Math.round(ms / 100) / 10)} s`;
}

/** The failure of a stream that went quiet. */
export function stallError(provider: string, endpoint: string, idleMs: number): ProviderError {
  const error = new ProviderError(
    provider,
    'stalled',
    `stalled: no data for ${seconds(idleMs)}. If the model pauses longer than that, raise ` +
      'parameters.stream_idle_timeout.',
  );
  error.endpoint = endpoint;
  return error;
}

/** The first bytes of a body as text: until `EXCERPT_BYTES`, its end, an HTML title, or the wait. */
async function excerpt(response: Response, waitMs: number): Promise<string> {
  const body = response.body;
  if (body === null) return '';
  const reader = body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  const decoder = new TextDecoder('utf-8');
  let text = '';
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<'time'>((resolve) => {
    timer = setTimeout(() => {
      resolve('time');
    }, waitMs);
  });
  try {
    while (bytes < EXCERPT_BYTES && !/<\/title\s*>/i.test(text)) {
      const next = await Promise.race([reader.read(), timeUp]);
      if (next === 'time' || next.done) break;
      bytes += next.value.byteLength;
      text += decoder.decode(next.value, { stream: true });
    }
  } catch {
    // What arrived before the body failed is all there is.
  } finally {
    clearTimeout(timer);
    // The rest is not wanted: this also closes the connection of an answer that never ends.
    reader.cancel().catch(() => undefined);
  }
  return text.slice(0, EXCERPT_BYTES);
}

/** A 200 response whose body fails with `error` on its first read (see the header comment). */
function failing(response: Response, error: ProviderError): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.error(error);
    },
  });
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  headers.delete('content-encoding');
  return new Response(body, { status: 200, headers });
}

/** The failure of an answer that cannot be what was asked for. */
async function unexpected(
  response: Response,
  options: GuardOptions,
  endpoint: string,
  init: RequestInit | undefined,
): Promise<ProviderError> {
  const contentType = response.headers.get('content-type');
  const type = mediaType(contentType);
  const text = await excerpt(response, Math.min(EXCERPT_WAIT_MS, options.idleMs));
  // A cancel while the excerpt was read is the caller's: it goes on as an abort.
  init?.signal?.throwIfAborted();
  const said = summarise(type, text, options.secrets);
  const what = options.expect === 'stream' ? 'not a stream' : 'not a JSON answer';
  const head = `HTTP ${String(response.status)} with ${shownType(contentType)}`;
  const error = new ProviderError(
    options.provider,
    response.ok ? 'unexpected_answer' : errorForStatus(options.provider, response.status, '').kind,
    `${response.ok ? `${head}, ${what}` : head}${said === '' ? '' : `: "${said}"`}. ` +
      'Check the base URL, and any proxy or login page on the way.',
    response.status,
  );
  error.endpoint = endpoint;
  return error;
}

/**
 * Whether a chunk of a stream begins the reply: it has a line other than a comment (`: ping`).
 * Called with the stream's chunks in order, until it answers true.
 */
function replyBegins(): (chunk: Uint8Array) => boolean {
  /** Whether the next byte begins a line. */
  let lineStart = true;
  return (chunk) => {
    for (const byte of chunk) {
      const newline = byte === 0x0a || byte === 0x0d;
      if (lineStart && !newline && byte !== 0x3a) return true;
      lineStart = newline;
    }
    return false;
  };
}

/**
 * The body of a stream, failing when a read waits `idleMs` without a byte. A read that fails
 * (the connection lost) fails with `lost(error, received)` instead, `received` saying whether
 * any of the reply had come: a line of the stream other than a comment (`: ping`, which servers
 * send to keep a connection open, is not the reply; lost after only that, a request may be made
 * again).
 */
function watched(
  source: ReadableStream<Uint8Array>,
  idleMs: number,
  stalled: () => ProviderError,
  lost: (error: unknown, received: boolean) => unknown,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let received = false;
  const begins = replyBegins();
  /** When the pending read began (undefined: none is pending). */
  let waitingSince: number | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let over = false;
  let out: ReadableStreamDefaultController<Uint8Array> | undefined;
  const stop = (): void => {
    over = true;
    clearTimeout(timer);
    timer = undefined;
  };
  const arm = (ms: number): void => {
    timer = setTimeout(check, timerMs(ms));
    timer.unref();
  };
  function check(): void {
    timer = undefined;
    if (over) return;
    const waited = waitingSince === undefined ? 0 : performance.now() - waitingSince;
    if (waited < idleMs) {
      arm(idleMs - waited);
      return;
    }
    const error = stalled();
    stop();
    out?.error(error);
    // Closes the connection; the pending read ends with it.
    reader.cancel(error).catch(() => undefined);
  }
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        out = controller;
        arm(idleMs);
      },
      async pull(controller) {
        waitingSince = performance.now();
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          if (!over) {
            stop();
            controller.error(lost(error, received));
          }
          return;
        }
        waitingSince = undefined;
        if (over) return;
        if (next.done) {
          stop();
          controller.close();
        } else {
          if (!received) received = begins(next.value);
          controller.enqueue(next.value);
        }
      },
      cancel(reason) {
        stop();
        return reader.cancel(reason);
      },
    },
    // Read only when the reader asks: time it does not ask is not time the server was silent.
    { highWaterMark: 0 },
  );
}

/**
 * `base` with the answer check and, for streams, the watchdog. Only a 2xx of the expected type
 * and any non-HTML error answer get through as they are.
 */
export function guardFetch(base: Fetch, options: GuardOptions): Fetch {
  return async (input, init) => {
    const endpoint = endpointOf(input);
    const response = await answer(base, input, init, options, endpoint);
    const type = mediaType(response.headers.get('content-type'));
    const html = type === 'text/html' || type === 'application/xhtml+xml';
    if (html || (response.ok && !accepts(options.expect, type))) {
      return failing(response, await unexpected(response, options, endpoint, init));
    }
    if (!response.ok || options.expect !== 'stream' || response.body === null) return response;
    const body = watched(
      response.body,
      options.idleMs,
      () => stallError(options.provider, endpoint, options.idleMs),
      // A cancel is the caller's and goes on as it is; so does a failure already explained.
      (error, received) =>
        init?.signal?.aborted === true || error instanceof ProviderError
          ? error
          : lostError(options.provider, endpoint, error, received),
    );
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/**
 * `base`'s answer; a request that gets none fails with what went wrong and where
 * (`transport.ts`), unless the caller cancelled it (that goes on as it is: the SDK's own
 * timeout, and the user's cancel, are aborts). With `timeoutMs`, an answer that has not begun by
 * then fails as a timeout.
 */
async function answer(
  base: Fetch,
  input: string | URL | Request,
  init: RequestInit | undefined,
  options: GuardOptions,
  endpoint: string,
): Promise<Response> {
  const limit = options.timeoutMs;
  const timer = limit === undefined ? undefined : new AbortController();
  const clock =
    timer === undefined || limit === undefined
      ? undefined
      : setTimeout(() => {
          timer.abort();
        }, timerMs(limit)).unref();
  const signal =
    timer === undefined
      ? init?.signal
      : init?.signal == null
        ? timer.signal
        : AbortSignal.any([init.signal, timer.signal]);
  try {
    // Redirects are not followed (`NOT_FOLLOWED`): Node's `fetch` would send the request, key
    // headers included, on to wherever the answer points (only `authorization` is dropped for
    // another origin). Not following one also spares `fetch` a copy of the body it keeps for it.
    const own =
      signal == null ? { ...init, ...NOT_FOLLOWED } : { ...init, signal, ...NOT_FOLLOWED };
    return await base(input, own);
  } catch (error) {
    if (init?.signal?.aborted === true) throw error;
    if (timer?.signal.aborted === true && limit !== undefined) {
      throw timeoutError(options.provider, endpoint, limit);
    }
    throw connectError(options.provider, endpoint, error);
  } finally {
    clearTimeout(clock);
  }
}
