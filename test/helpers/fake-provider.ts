// A fake LLM provider: an HTTP/SSE server on 127.0.0.1 that a test answers one request at a time.
import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Why a response is over: `end()`, `drop()`, or the connection went away (SDK abort, `close()`). */
export type CloseReason = 'end' | 'drop' | 'client';

/** An open SSE response; a write is sent at once, and awaiting it keeps it a chunk of its own. */
export interface FakeStream {
  /** Writes one SSE event: an optional `event:` line, then `data:` (objects as JSON). */
  sse(event: string | undefined, data: unknown): Promise<void>;
  /** Writes raw bytes, e.g. half an event or half a UTF-8 character. */
  write(raw: string | Buffer): Promise<void>;
  /** Finishes the response cleanly. */
  end(): Promise<void>;
  /** Destroys the connection mid-stream, as a lost network would. */
  drop(): void;
  /** Settles once the response is over, saying why ('client' when the SDK aborted). */
  readonly closed: Promise<CloseReason>;
}

/** One request the fake received; answer it once with `respond`, `respondError` or `stream`. */
export interface FakeRequest {
  readonly method: string;
  /** The request target, query included. */
  readonly path: string;
  /** Header names in lower case; repeated headers joined with ', '. */
  readonly headers: Readonly<Record<string, string>>;
  readonly rawBody: string;
  /** `rawBody` parsed as JSON, or undefined when it is empty or not JSON. */
  readonly body: unknown;
  /** The credential from `x-api-key`, `authorization: Bearer …` or `x-goog-api-key`. */
  apiKey(): string | undefined;
  /** Sends a complete response; objects become JSON. */
  respond(status: number, body: string | object, headers?: OutgoingHttpHeaders): Promise<void>;
  /** Same as `respond`; reads better for 4xx/5xx. */
  respondError(status: number, body: string | object, headers?: OutgoingHttpHeaders): Promise<void>;
  /** Starts a 200 SSE response (headers are sent at once). */
  stream(headers?: OutgoingHttpHeaders): FakeStream;
  /**
   * Starts a response of any status and content type (headers are sent at once) whose body is
   * written like a stream's and ends only when told: an HTML page that never ends, a JSON answer
   * where a stream was asked for.
   */
  begin(status: number, headers: OutgoingHttpHeaders): FakeStream;
}

export interface NextRequestOptions {
  /** Milliseconds before the wait fails; 10 000 by default. */
  timeout?: number;
  /** Only take a request whose path (with or without its query) equals this, or matches it. */
  path?: string | RegExp;
}

export interface FakeProvider {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  /** Every request received so far, in arrival order. */
  readonly requests: readonly FakeRequest[];
  /** The connections accepted so far (a client that keeps one open sends its requests on it). */
  readonly connections: number;
  /** The oldest request not yet taken (waiting for one if needed). */
  nextRequest(options?: NextRequestOptions): Promise<FakeRequest>;
  /** Stops the server and destroys every open connection, answered or not. */
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 10_000;

type Filter = string | RegExp | undefined;

interface Waiter {
  filter: Filter;
  resolve: (request: FakeRequest) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

function matches(filter: Filter, path: string): boolean {
  if (filter === undefined) return true;
  if (typeof filter === 'string') return path === filter || path.split('?', 1)[0] === filter;
  return filter.test(path);
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
    req.on('close', () => {
      reject(new Error('request closed before its body ended'));
    });
  });
}

function sseFrame(event: string | undefined, data: unknown): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  const lines = event === undefined ? [] : [`event: ${event}`];
  for (const line of text.split(/\r\n|\r|\n/)) lines.push(`data: ${line}`);
  return `${lines.join('\n')}\n\n`;
}

// NOTE: two turns of the event loop after the kernel took the bytes let a client in this same
// process read them before the next write, so each write reaches it as its own chunk.
function yieldTwice(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

function createRequest(
  req: IncomingMessage,
  res: ServerResponse,
  rawBody: string,
  describe: () => string,
): FakeRequest {
  const headers = flattenHeaders(req);
  let answered = false;
  let closeReason: CloseReason | undefined;
  const closed = new Promise<CloseReason>((resolve) => {
    res.on('close', () => {
      closeReason ??= res.writableFinished ? 'end' : 'client';
      resolve(closeReason);
    });
  });
  const gone = (): boolean => closeReason !== undefined || res.destroyed;

  const claim = (verb: string): void => {
    if (answered) throw new Error(`fake provider: ${describe()} was already answered (${verb})`);
    answered = true;
  };

  const respond = (
    status: number,
    body: string | object,
    extra: OutgoingHttpHeaders = {},
  ): Promise<void> => {
    claim('respond');
    const isText = typeof body === 'string';
    const payload = isText ? body : JSON.stringify(body);
    const contentType = isText ? 'text/plain; charset=utf-8' : 'application/json';
    const done = closed.then(() => undefined);
    if (gone()) return done;
    res.writeHead(status, {
      'content-type': contentType,
      'content-length': Buffer.byteLength(payload),
      ...lowerKeys(extra),
    });
    res.end(payload);
    return done;
  };

  const begin = (status: number, headers: OutgoingHttpHeaders, verb = 'begin'): FakeStream => {
    claim(verb);
    let finished = false;
    const guard = (verb: string): void => {
      if (finished)
        throw new Error(`fake provider: ${verb} after the stream of ${describe()} ended`);
    };
    if (!gone()) {
      res.writeHead(status, lowerKeys(headers));
      res.flushHeaders();
    }
    const send = (chunk: string | Buffer): Promise<void> => {
      // A client that already left is not the test's fault; its bytes go nowhere.
      if (gone()) return Promise.resolve();
      const written = new Promise<void>((resolve) => {
        res.write(chunk, () => {
          resolve();
        });
      });
      return Promise.race([written, closed]).then(yieldTwice);
    };
    return {
      closed,
      sse: (event, data) => {
        guard('sse()');
        return send(sseFrame(event, data));
      },
      write: (raw) => {
        guard('write()');
        return send(raw);
      },
      end: () => {
        guard('end()');
        finished = true;
        if (!gone()) res.end();
        return closed.then(() => undefined);
      },
      drop: () => {
        guard('drop()');
        finished = true;
        closeReason ??= 'drop';
        res.socket?.destroy();
        res.destroy();
      },
    };
  };

  // The body is parsed when a test first reads it, not when it arrives: a request is at the
  // server once its last byte is, and parsing a megabyte here would count in the benchmarks'
  // "request at the server" (S1) although no real client waits for it.
  let body: { value: unknown } | undefined;
  return {
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    headers,
    rawBody,
    get body(): unknown {
      body ??= { value: parseJson(rawBody) };
      return body.value;
    },
    apiKey: () => {
      const bearer = /^bearer\s+(.+)$/i.exec(headers['authorization'] ?? '')?.[1];
      return headers['x-api-key'] ?? bearer ?? headers['x-goog-api-key'];
    },
    respond,
    respondError: respond,
    stream: (extra = {}) =>
      begin(
        200,
        { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...lowerKeys(extra) },
        'stream',
      ),
    begin: (status, headers) => begin(status, headers),
  };
}

function lowerKeys(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}

/** Starts a fake provider on a random port of 127.0.0.1. */
export async function startFakeProvider(): Promise<FakeProvider> {
  const requests: FakeRequest[] = [];
  const untaken: FakeRequest[] = [];
  const waiters: Waiter[] = [];
  const sockets = new Set<Socket>();
  let accepted = 0;
  let closing: Promise<void> | undefined;

  const deliver = (request: FakeRequest): void => {
    requests.push(request);
    const index = waiters.findIndex((w) => matches(w.filter, request.path));
    const waiter = index === -1 ? undefined : waiters.splice(index, 1)[0];
    if (waiter === undefined) {
      untaken.push(request);
      return;
    }
    clearTimeout(waiter.timer);
    waiter.resolve(request);
  };

  const server = createServer({ noDelay: true }, (req, res) => {
    const label = `${req.method ?? 'GET'} ${req.url ?? '/'}`;
    readBody(req).then(
      (rawBody) => {
        deliver(createRequest(req, res, rawBody, () => label));
      },
      // The client left before its body was complete: there is nothing to answer.
      () => undefined,
    );
  });
  server.on('connection', (socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  const seen = (): string =>
    requests.length === 0 ? 'none' : requests.map((r) => `${r.method} ${r.path}`).join(', ');

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    get connections() {
      return accepted;
    },
    nextRequest: (options = {}) => {
      const filter = options.path;
      const index = untaken.findIndex((r) => matches(filter, r.path));
      const ready = index === -1 ? undefined : untaken.splice(index, 1)[0];
      if (ready !== undefined) return Promise.resolve(ready);
      if (closing !== undefined) return Promise.reject(new Error('fake provider: already closed'));
      const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
      return new Promise<FakeRequest>((resolve, reject) => {
        const waiter: Waiter = {
          filter,
          resolve,
          reject,
          timer: setTimeout(() => {
            waiters.splice(waiters.indexOf(waiter), 1);
            const what = filter === undefined ? 'request' : `request for ${String(filter)}`;
            reject(
              new Error(
                `fake provider: no ${what} within ${timeout} ms (received so far: ${seen()})`,
              ),
            );
          }, timeout),
        };
        waiters.push(waiter);
      });
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        for (const waiter of waiters.splice(0)) {
          clearTimeout(waiter.timer);
          waiter.reject(new Error('fake provider: closed while waiting for a request'));
        }
        server.close(() => {
          resolve();
        });
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
