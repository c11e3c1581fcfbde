// Failures of the connection itself, said in plain words with where they happened
// (docs/requests.md, "When the connection fails"): `anthropic (127.0.0.1:8080): connection
// refused: nothing is listening there`. Node's `fetch` reports every one of them as
// `TypeError: fetch failed` with the real cause (a system error code) somewhere below; the SDKs
// then wrap that once more (`Connection error.`). The guard below the SDKs (`watchdog.ts`) turns
// the cause into a ProviderError that names the endpoint, the adapters find it under the SDK's
// wrapper (`carriedError`), and the user reads what failed and where.
//
// Where is `host:port`, never the path or the query (which may hold a key) nor any user info.
import { ProviderError, errorForStatus, waitingAsAsked } from './types.js';

/** `host:port` of a URL, the port spelled out (`api.anthropic.com:443`). */
export function endpointOf(input: string | URL | Request): string {
  try {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const url = new URL(href);
    const port = url.port !== '' ? url.port : url.protocol === 'http:' ? '80' : '443';
    return `${url.hostname}:${port}`;
  } catch {
    return 'unknown host';
  }
}

/** A URL without its user info and query, for messages that need its path (`http://h:1/v1`). */
export function shownUrl(href: string): string {
  try {
    const url = new URL(href);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return 'an invalid URL';
  }
}

function isLoopback(endpoint: string): boolean {
  const host = endpoint.replace(/:\d+$/, '');
  return host === 'localhost' || host === '[::1]' || /^127\./.test(host);
}

/** The first system error code under `error` (its causes, and the errors of an AggregateError). */
export function causeCode(error: unknown): string | undefined {
  const queue: unknown[] = [error];
  for (let seen = 0; queue.length > 0 && seen < 12; seen++) {
    const next = queue.shift();
    if (!(next instanceof Error)) continue;
    const code = (next as Error & { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    const inner = (next as Error & { errors?: unknown }).errors;
    if (Array.isArray(inner)) queue.push(...(inner as unknown[]));
    queue.push(next.cause);
  }
  return undefined;
}

/** The innermost message under `error` (the system's own words, e.g. `other side closed`). */
function innermost(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 6; depth++) {
    if (e.message.trim() !== '') message = e.message.trim().split('\n')[0] ?? message;
    e = e.cause;
  }
  return message;
}

interface Reading {
  kind: 'connection' | 'timeout';
  message: string;
  /** Whether trying again may help (a certificate or a name that does not exist will not). */
  retryable: boolean;
}

const TLS_REASONS: Readonly<Record<string, string>> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: "the server's certificate is self-signed, and not trusted",
  SELF_SIGNED_CERT_IN_CHAIN:
    "the server's certificate chain ends in a self-signed certificate that is not trusted",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    "the server's certificate is not signed by an authority this machine trusts (a proxy that inspects TLS? its CA goes in NODE_EXTRA_CA_CERTS)",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    "the server's certificate is not signed by an authority this machine trusts (a proxy that inspects TLS? its CA goes in NODE_EXTRA_CA_CERTS)",
  UNABLE_TO_GET_ISSUER_CERT: "the issuer of the server's certificate is unknown here",
  CERT_HAS_EXPIRED: "the server's certificate has expired",
  CERT_NOT_YET_VALID: "the server's certificate is not valid yet (is this machine's clock right?)",
  ERR_TLS_CERT_ALTNAME_INVALID: "the server's certificate is for another host name",
  ERR_SSL_WRONG_VERSION_NUMBER:
    'the server does not speak TLS there (an http:// address written as https://?)',
};

const connection = (message: string, retryable = true): Reading => ({
  kind: 'connection',
  message,
  retryable,
});
const timeout = (message: string): Reading => ({ kind: 'timeout', message, retryable: true });

/** What the system error codes that mean the same wherever they happen say. */
const READINGS: Readonly<Record<string, Reading>> = {
  ENOTFOUND: connection(
    'host not found: the name does not resolve (DNS). Check the base URL and the network.',
    false,
  ),
  EAI_AGAIN: connection('the name could not be resolved for now (DNS did not answer)'),
  // NOTE: worded without "timed out": the Anthropic and OpenAI SDKs take an error whose text
  // says so for their own timeout and drop it, with this message.
  UND_ERR_CONNECT_TIMEOUT: timeout(
    'could not connect in time: the host did not answer the connection',
  ),
  ETIMEDOUT: timeout('could not connect in time: the host did not answer the connection'),
  UND_ERR_HEADERS_TIMEOUT: timeout(
    'no answer in time: the connection was made, the answer never began',
  ),
  ECONNRESET: connection('the connection was reset'),
  UND_ERR_SOCKET: connection('the server closed the connection before answering'),
  EPIPE: connection('the server closed the connection before answering'),
  EHOSTUNREACH: connection('the host is unreachable'),
  ENETUNREACH: connection('the network is unreachable'),
  ENETDOWN: connection('the network is unreachable'),
};

/** What a failed connection attempt means, from its system error code. */
function reading(code: string | undefined, error: unknown, endpoint: string): Reading {
  const tls = code === undefined ? undefined : TLS_REASONS[code];
  if (tls !== undefined) return connection(`TLS failed: ${tls}`, false);
  if (code === 'ECONNREFUSED') {
    return connection(
      isLoopback(endpoint)
        ? 'connection refused: nothing is listening there. Is the local server running?'
        : 'connection refused: nothing is listening there',
    );
  }
  const known = code === undefined ? undefined : READINGS[code];
  if (known !== undefined) return { ...known };
  if (code === undefined && innermost(error) === 'unexpected redirect') {
    // The guard asks `fetch` not to follow redirects (watchdog.ts).
    return connection(
      'the server answered with a redirect, which is not followed (it would take the request and its key elsewhere): set the base URL to the address it points to',
      false,
    );
  }
  if (code !== undefined && /^(ERR_SSL_|ERR_TLS_|CERT_|EPROTO$)/.test(code)) {
    return connection(`TLS failed: ${innermost(error)}`, false);
  }
  return connection(`could not connect: ${innermost(error)}`);
}

/**
 * A transport failure at `endpoint`, with the error that caused it kept for the log (not
 * enumerable: the message is what the user reads).
 */
function failedAt(
  endpoint: string,
  failure: ProviderError,
  caused?: { by: unknown },
): ProviderError {
  failure.endpoint = endpoint;
  if (caused !== undefined) {
    Object.defineProperty(failure, 'cause', { value: caused.by, enumerable: false });
  }
  return failure;
}

/** The failure of a request that got no answer at all (`fetch` itself failed). */
export function connectError(provider: string, endpoint: string, error: unknown): ProviderError {
  const read = reading(causeCode(error), error, endpoint);
  const failure = new ProviderError(provider, read.kind, read.message, undefined, read.retryable);
  return failedAt(endpoint, failure, { by: error });
}

/** The failure of an answer whose body broke off; `received`: some of it had arrived. */
export function lostError(
  provider: string,
  endpoint: string,
  error: unknown,
  received: boolean,
): ProviderError {
  const code = causeCode(error);
  const why =
    code === 'ECONNRESET'
      ? 'it was reset'
      : code === 'UND_ERR_SOCKET' || /other side closed|terminated/.test(innermost(error))
        ? 'the server closed it'
        : innermost(error);
  const lost = `the connection was lost ${received ? 'mid-reply' : 'before the reply began'}`;
  const failure = new ProviderError(
    provider,
    'connection',
    `${lost} (${why})`,
    undefined,
    !received,
  );
  return failedAt(endpoint, failure, { by: error });
}

/** The failure of a request that got no answer within `timeoutMs` (`parameters.timeout`). */
export function timeoutError(
  provider: string,
  endpoint: string,
  timeoutMs: number | undefined,
): ProviderError {
  const within =
    timeoutMs === undefined ? 'in time' : `within ${String(Math.round(timeoutMs / 100) / 10)} s`;
  const message = `no answer ${within} (parameters.timeout)`;
  return failedAt(endpoint, new ProviderError(provider, 'timeout', message, undefined, true));
}

/**
 * The ProviderError an SDK carries as the cause of its own error (`APIConnectionError`), or the
 * error itself when it is one.
 */
export function carriedError(error: unknown): ProviderError | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 6; depth++) {
    if (e instanceof ProviderError) return e;
    e = e.cause;
  }
  return undefined;
}

/** The connection errors of a Stainless-generated SDK (Anthropic's, OpenAI's). */
export interface StainlessErrors {
  APIConnectionTimeoutError: abstract new (...args: never[]) => Error;
  APIConnectionError: abstract new (...args: never[]) => Error;
}

/**
 * The failure of a request a Stainless SDK got no answer to: the guard's own failure (a connection
 * that failed, a stall, an answer that is not one), which arrives as it is or as the cause of the
 * SDK's connection error, a timeout, or a failed connection; undefined for any other error.
 */
export function unansweredError(
  sdk: StainlessErrors,
  error: unknown,
  where: { provider: string; endpoint: string; timeoutMs: number | undefined },
): ProviderError | undefined {
  const carried = carriedError(error);
  if (carried !== undefined) return carried;
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return timeoutError(where.provider, where.endpoint, where.timeoutMs);
  }
  if (error instanceof sdk.APIConnectionError) {
    const cause = (error as { cause?: unknown }).cause;
    return connectError(where.provider, where.endpoint, cause ?? error);
  }
  return undefined;
}

/** `connect()`, whose failure is the provider's error: "the <sdk> failed to load: …". */
export async function connectSdk<T>(
  provider: string,
  sdk: string,
  connect: () => Promise<T>,
): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new ProviderError(provider, 'unknown', `the ${sdk} failed to load: ${why}`);
  }
}

/** Turns an SDK's stream items into events; says whether anything arrived and the end came. */
export interface StreamReader<T, E> {
  read(item: T): Iterable<E>;
  readonly started: boolean;
  readonly finished: boolean;
}

/** How an adapter streams a reply through its SDK (`streamSdk`). */
export interface SdkStream<C, T, E> {
  provider: string;
  /** The SDK's name, for a failure to load it (`connectSdk`). */
  sdk: string;
  connect: () => Promise<C>;
  /** Opens the reply's stream with the connected SDK, its request ended by `signal`. */
  open: (connected: C, signal: AbortSignal) => Promise<AsyncIterable<T>>;
  reader: StreamReader<T, E>;
  /** A failure as the provider's error (a ProviderError passes as it is). */
  toError: (connected: C, error: unknown, started: boolean) => Error;
  /** What a stream that stops before its end says. */
  early: string;
}

/** How long the rest of a finished reply's stream may take to end before its request is aborted. */
export const TAIL_MS = 2000;

/**
 * A request's own abort, which the caller's `signal` also aborts: `readTail` may end the request
 * without cancelling the send.
 */
export function requestAbort(signal: AbortSignal): AbortController {
  const request = new AbortController();
  if (signal.aborted) request.abort(signal.reason);
  else {
    signal.addEventListener(
      'abort',
      () => {
        request.abort(signal.reason);
      },
      { once: true },
    );
  }
  return request;
}

/**
 * The rest of a reply's stream once its last event is in (`message_stop`, a completed response),
 * read to its end in the background. Leaving an SDK's iterator early makes the SDK abort its
 * request, and `fetch` then closes the connection instead of keeping it for the next request: the
 * follow-up of a tool loop would open a new one (a new TLS handshake, against a real endpoint).
 * What comes after the end is ignored, a failure is dropped, and a stream still open after
 * `TAIL_MS` is aborted (`request`).
 */
export function readTail(items: AsyncIterator<unknown>, request: AbortController): void {
  const timer = setTimeout(() => {
    request.abort();
  }, TAIL_MS);
  timer.unref();
  void (async () => {
    try {
      while (!(await items.next()).done) {
        // Nothing follows the end that the reply needs.
      }
    } catch {
      // The reply is complete: how the stream's tail went does not matter.
    } finally {
      clearTimeout(timer);
    }
  })();
}

/**
 * The events `reader` makes of the stream `open` opens (its request ended by the signal it is
 * given), until `reader.finished`: the rest of the stream is then read in the background
 * (`readTail`). Leaving before that (a cancel, a failure, the consumer stopping) ends the request.
 */
export async function* readUntilFinished<T, E>(
  signal: AbortSignal,
  open: (ending: AbortSignal) => Promise<AsyncIterable<T>>,
  reader: Pick<StreamReader<T, E>, 'read' | 'finished'>,
): AsyncGenerator<E> {
  const ending = requestAbort(signal);
  let reading = true;
  try {
    const items = (await open(ending.signal))[Symbol.asyncIterator]();
    for (let next = await items.next(); !next.done; next = await items.next()) {
      if (signal.aborted) return;
      yield* reader.read(next.value);
      if (reader.finished) {
        reading = false;
        readTail(items, ending);
        return;
      }
    }
    reading = false;
  } finally {
    if (reading) ending.abort();
  }
}

/**
 * The events `stream.reader` makes of the stream the connected SDK opens, until it finishes
 * (`readUntilFinished`). A cancel (`signal`) ends it quietly, before the SDK loads or while it
 * streams; a failure is `toError(connected, error, started)` (a ProviderError passes as it is);
 * a stream that stops before its end is the provider's "stream" error, saying `early`.
 */
export async function* streamSdk<C, T, E>(
  stream: SdkStream<C, T, E>,
  signal: AbortSignal,
): AsyncGenerator<E> {
  // A function, so that the checks below are not narrowed away: the signal changes under awaits.
  const aborted = (): boolean => signal.aborted;
  if (aborted()) return;
  const connected = await connectSdk(stream.provider, stream.sdk, stream.connect);
  const { reader } = stream;
  try {
    yield* readUntilFinished(signal, (ending) => stream.open(connected, ending), reader);
  } catch (error) {
    if (aborted()) return;
    if (error instanceof ProviderError) throw error;
    throw stream.toError(connected, error, reader.started);
  }
  if (aborted() || reader.finished) return;
  throw new ProviderError(stream.provider, 'stream', stream.early);
}

/** An API error of a Stainless SDK (Anthropic, OpenAI): an answer with a status, or an error event. */
export interface StainlessApiError extends Error {
  status?: unknown;
  headers?: unknown;
}

/** How an adapter reads its SDK's failures into a ProviderError (`sdkFailure`). */
export interface FailureReading<E extends StainlessApiError> {
  provider: string;
  endpoint: string;
  timeoutMs: number | undefined;
  /** Some of the reply had arrived. */
  received: boolean;
  /** The text of an API error: the service's own message when it gave one. */
  message: (error: E) => string;
  /** An error event inside the stream (an API error without a status). */
  inStream: (message: string) => ProviderError;
  /** The text for a status, where the adapter adds to the service's message. */
  forStatus?: (status: number, message: string) => string;
  /** A chunk that is not JSON, where the SDK reports it as a SyntaxError. */
  unreadable?: (error: SyntaxError) => ProviderError;
}

/**
 * A Stainless SDK's failure as a ProviderError: no answer (`unansweredError`), an API error (its
 * status's kind, with the wait its headers ask for), an unreadable chunk, else the connection
 * lost while the body was read.
 */
export function sdkFailure<E extends StainlessApiError>(
  sdk: StainlessErrors & { APIError: abstract new (...args: never[]) => E },
  error: unknown,
  reading: FailureReading<E>,
): ProviderError {
  const unanswered = unansweredError(sdk, error, reading);
  if (unanswered !== undefined) return unanswered;
  if (error instanceof sdk.APIError) {
    const message = reading.message(error);
    const status = error.status;
    const failure =
      typeof status === 'number'
        ? errorForStatus(reading.provider, status, reading.forStatus?.(status, message) ?? message)
        : reading.inStream(message);
    return waitingAsAsked(failure, error.headers);
  }
  if (error instanceof SyntaxError && reading.unreadable !== undefined) {
    return reading.unreadable(error);
  }
  if (error instanceof Error)
    return lostError(reading.provider, reading.endpoint, error, reading.received);
  return new ProviderError(reading.provider, 'unknown', String(error));
}
