// The `web_fetch` built-in against a real HTTP server on 127.0.0.1: GET and POST with headers and
// a body, a 4xx answer, the time limit and cancellation (against a page that never answers by
// itself), the size cap and refused URLs.
import { type IncomingMessage, type ServerResponse, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createExecutionContext } from '../../src/core/tools/context.js';
import { webFetch } from '../../src/core/tools/definitions/web-fetch.js';

let server: Server;
let base: string;
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] =
  [];

/** The answers of `/slow`, held open until the test that asked is over. */
const held: ServerResponse[] = [];

function handle(req: IncomingMessage, res: ServerResponse, body: string): void {
  seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
  if (req.url === '/slow') {
    // Never answers by itself: only the call's time limit or its cancellation ends the call.
    held.push(res);
    return;
  }
  if (req.url === '/big') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('y'.repeat(50_000));
    return;
  }
  if (req.url === '/missing') {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('no such page');
    return;
  }
  if (req.url === '/image') {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(Buffer.alloc(300));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ method: req.method, body }));
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      handle(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
});

afterEach(() => {
  for (const res of held.splice(0)) res.end('late');
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
});

function ctx(options: { config?: Record<string, unknown>; signal?: AbortSignal } = {}) {
  return createExecutionContext(
    { bufnr: 1, cwd: '/tmp', timeout: 30, toolId: 'toolu_w', ...options },
    '/home/nobody',
  );
}

describe('web_fetch', () => {
  it('GETs a URL: status, content type and body', async () => {
    expect(await webFetch({ url: `${base}/hello` }, ctx())).toEqual({
      ok: true,
      output: 'HTTP 200 OK\ncontent-type: application/json\n\n{"method":"GET","body":""}',
    });
  });

  it('POSTs a body with headers', async () => {
    const result = await webFetch(
      {
        url: `${base}/items`,
        method: 'post',
        headers: { 'content-type': 'application/json', 'x-token': 't1' },
        body: '{"name":"a"}',
      },
      ctx(),
    );
    expect(result).toEqual({
      ok: true,
      output:
        'HTTP 200 OK\ncontent-type: application/json\n\n{"method":"POST","body":"{\\"name\\":\\"a\\"}"}',
    });
    const request = seen.find((r) => r.url === '/items');
    expect(request?.headers['x-token']).toBe('t1');
    expect(request?.body).toBe('{"name":"a"}');
  });

  it('an error status fails the call and keeps the response', async () => {
    expect(await webFetch({ url: `${base}/missing` }, ctx())).toEqual({
      ok: false,
      error: 'HTTP 404 Not Found',
      partialOutput: 'HTTP 404 Not Found\ncontent-type: text/plain\n\nno such page',
    });
  });

  it('gives up after the time limit', async () => {
    expect(await webFetch({ url: `${base}/slow`, timeout: 0.2 }, ctx())).toEqual({
      ok: false,
      error: 'Request timed out after 0.2 seconds',
    });
  });

  it('reads at most max_bytes (the call, else tools.web_fetch.max_bytes) and says so', async () => {
    const cut = await webFetch({ url: `${base}/big`, max_bytes: 1000 }, ctx());
    expect(cut.ok).toBe(true);
    const output = cut.ok && typeof cut.output === 'string' ? cut.output : '';
    expect(output).toContain(
      '[truncated: the response is larger than 1000 bytes; 1000 bytes read]',
    );
    expect(output.split('\n')[3]).toBe('y'.repeat(1000));
    const configured = await webFetch({ url: `${base}/big` }, ctx({ config: { max_bytes: 10 } }));
    expect(
      configured.ok && typeof configured.output === 'string' ? configured.output : '',
    ).toContain('larger than 10 bytes; 10 bytes read');
  });

  it('describes a binary body instead of decoding it', async () => {
    expect(await webFetch({ url: `${base}/image` }, ctx())).toEqual({
      ok: true,
      output: 'HTTP 200 OK\ncontent-type: image/png\n\n(image/png body of 300 bytes, not shown)',
    });
  });

  it('stops when the call is cancelled', async () => {
    const controller = new AbortController();
    const pending = webFetch({ url: `${base}/slow` }, ctx({ signal: controller.signal }));
    controller.abort();
    expect(await pending).toEqual({ ok: false, error: 'User aborted tool execution.' });
  });

  it('refuses other schemes, bad URLs and a body on GET', async () => {
    expect(await webFetch({ url: 'file:///etc/passwd' }, ctx())).toEqual({
      ok: false,
      error: 'Only http and https URLs can be fetched, not file:',
    });
    expect(await webFetch({ url: 'not a url' }, ctx())).toEqual({
      ok: false,
      error: 'Not a valid URL: not a url',
    });
    expect(await webFetch({ url: `${base}/x`, body: 'b' }, ctx())).toEqual({
      ok: false,
      error: 'A GET request cannot have a body (use POST or PUT)',
    });
  });
});
