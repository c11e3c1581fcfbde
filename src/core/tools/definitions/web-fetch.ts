// The `web_fetch` tool (Flynn's `web.fetch`): one HTTP request, the response as text.
//
// Decisions (see docs/tools.md):
// - Only `http:` and `https:` URLs. Methods GET (default), POST, PUT, PATCH, DELETE, HEAD;
//   `headers` a map of strings; `body` a string (sent as it is).
// - Time limit: the call's `timeout` (seconds), else `tools.web_fetch.timeout`, else the
//   context's default. The request is aborted on `ctx.signal` (cancel, executor timeout) too.
// - Size cap: at most `max_bytes` of the body are read (the call's `max_bytes`, else
//   `tools.web_fetch.max_bytes`, default 102 400); past it the download stops and the output
//   says it was cut and how much was read.
// - Output: `HTTP <status> <text>`, the content type, a blank line, the body as UTF-8. A body
//   whose type is not textual (JSON, XML, JavaScript and `text/*` are) is not decoded: its type
//   and size are reported instead. A 4xx/5xx status is a failed call whose output still holds
//   the response.
// - Node's own `fetch` (undici); no extra dependency.

import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';

export const WEB_FETCH_MAX_BYTES = 102_400;

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const positive = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;

function textual(type: string): boolean {
  const t = type.toLowerCase();
  return (
    t === '' ||
    t.startsWith('text/') ||
    /json|xml|javascript|ecmascript|yaml|csv|x-www-form-urlencoded|graphql/.test(t)
  );
}

/** Reads at most `cap` bytes of a body; `truncated` when there was more. */
async function readCapped(
  response: Response,
  cap: number,
): Promise<{ bytes: Uint8Array; truncated: boolean; read: number }> {
  const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array> | undefined;
  if (reader === undefined) return { bytes: new Uint8Array(), truncated: false, read: 0 };
  const chunks: Uint8Array[] = [];
  let read = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const room = cap - read;
    if (value.byteLength > room) {
      chunks.push(value.subarray(0, room));
      read += room;
      truncated = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    read += value.byteLength;
  }
  return { bytes: Buffer.concat(chunks), truncated, read };
}

/** A checked request: what to fetch, how, for how long and how much of it. */
interface FetchRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  timeoutSec: number;
  cap: number;
}

/** The call's arguments as a request (the tool's configuration gives the defaults), or why not. */
function requestOf(
  args: Record<string, unknown>,
  config: Record<string, unknown>,
  ctx: ToolContext,
): FetchRequest | { error: string } {
  const rawUrl = args['url'];
  if (typeof rawUrl !== 'string' || rawUrl === '') return { error: 'url is required' };
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return { error: `Not a valid URL: ${rawUrl}` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { error: `Only http and https URLs can be fetched, not ${url.protocol}` };
  }
  const method = typeof args['method'] === 'string' ? args['method'].toUpperCase() : 'GET';
  if (!(METHODS as readonly string[]).includes(method)) {
    return { error: `Unsupported method ${method} (use ${METHODS.join(', ')})` };
  }
  const headers: Record<string, string> = {};
  if (isRecord(args['headers'])) {
    for (const [key, value] of Object.entries(args['headers'])) {
      if (typeof value === 'string') headers[key] = value;
    }
  }
  const body = typeof args['body'] === 'string' ? args['body'] : undefined;
  if (body !== undefined && (method === 'GET' || method === 'HEAD')) {
    return { error: `A ${method} request cannot have a body (use POST or PUT)` };
  }
  const timeoutSec = positive(args['timeout'])
    ? args['timeout']
    : positive(config['timeout'])
      ? config['timeout']
      : ctx.timeout;
  const cap = positive(args['max_bytes'])
    ? Math.floor(args['max_bytes'])
    : positive(config['max_bytes'])
      ? Math.floor(config['max_bytes'])
      : WEB_FETCH_MAX_BYTES;
  return { url, method, headers, body, timeoutSec, cap };
}

/** The status line, the content type and the body (text, or what it is), cut at `cap`. */
async function responseText(response: Response, method: string, cap: number): Promise<string> {
  const type = response.headers.get('content-type') ?? '';
  const head = `HTTP ${String(response.status)} ${response.statusText}`.trimEnd();
  const { bytes, truncated, read } =
    method === 'HEAD'
      ? { bytes: new Uint8Array(), truncated: false, read: 0 }
      : await readCapped(response, cap);
  const lines = [head];
  if (type !== '') lines.push(`content-type: ${type}`);
  lines.push('');
  if (textual(type)) {
    lines.push(new TextDecoder('utf-8', { fatal: false }).decode(bytes));
  } else {
    lines.push(`(${type} body of ${String(read)}${truncated ? '+' : ''} bytes, not shown)`);
  }
  if (truncated) {
    lines.push(
      '',
      `[truncated: the response is larger than ${String(cap)} bytes; ${String(read)} bytes read]`,
    );
  }
  return lines.join('\n');
}

export async function webFetch(input: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  const args = isRecord(input) ? input : {};
  const request = requestOf(args, ctx.get_config() ?? {}, ctx);
  if ('error' in request) return { ok: false, error: request.error };
  const { url, method, headers, body, timeoutSec, cap } = request;
  const controller = new AbortController();
  const flags = { timedOut: false };
  const timer = setTimeout(() => {
    flags.timedOut = true;
    controller.abort();
  }, timeoutSec * 1000);
  const onAbort = (): void => {
    controller.abort();
  };
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  if (ctx.signal.aborted) controller.abort();
  try {
    const init: RequestInit = { method, headers, signal: controller.signal, redirect: 'follow' };
    if (body !== undefined) init.body = body;
    const response = await fetch(url, init);
    const output = await responseText(response, method, cap);
    if (!response.ok) {
      const head = `HTTP ${String(response.status)} ${response.statusText}`.trimEnd();
      return { ok: false, error: head, partialOutput: output };
    }
    return { ok: true, output };
  } catch (error) {
    if (flags.timedOut)
      return { ok: false, error: `Request timed out after ${String(timeoutSec)} seconds` };
    if (ctx.signal.aborted) return { ok: false, error: 'User aborted tool execution.' };
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    return {
      ok: false,
      error: `${method} ${url.href} failed: ${error instanceof Error ? error.message : String(error)}${detail}`,
    };
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
  }
}

export const webFetchTool: ToolDefinition = {
  name: 'web_fetch',
  label: 'Fetch a URL',
  aliases: ['web.fetch'],
  description:
    'Fetch a URL over HTTP(S) and return the status, content type and body as text. ' +
    'GET by default; POST/PUT/PATCH/DELETE with a string body. Large bodies are cut at max_bytes.',
  inputSchema: {
    type: 'object',
    properties: {
      url: { type: 'string', description: 'The http:// or https:// URL' },
      method: { type: 'string', enum: [...METHODS], description: 'HTTP method (default GET)' },
      headers: {
        type: 'object',
        additionalProperties: { type: 'string' },
        description: 'Request headers',
      },
      body: { type: 'string', description: 'Request body (not for GET/HEAD)' },
      timeout: { type: 'number', description: 'Seconds before the request is abandoned' },
      max_bytes: { type: 'integer', description: 'Read at most this many bytes of the body' },
    },
    required: ['url'],
    additionalProperties: false,
  },
  async: true,
  execute: webFetch,
  formatPreview: (input) => {
    const method = typeof input['method'] === 'string' ? input['method'].toUpperCase() : 'GET';
    return `${method} ${typeof input['url'] === 'string' ? input['url'] : ''}`;
  },
};
