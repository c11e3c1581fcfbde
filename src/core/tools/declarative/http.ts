// The `http` implementation of a declarative tool (the decisions are in compile.ts).
import type { ToolOutcome } from '../registry.js';
import { sleep } from '../middleware.js';
import { type Backoff, backoffDelay } from '../../util/backoff.js';
import {
  DeclarativeError,
  type TemplateScope,
  type TemplateTree,
  compileTree,
  parseDuration,
  renderTree,
  templateAt,
} from './definition.js';
import type { RenderOptions, Template } from './template.js';
import {
  type CompileOptions,
  type Compiled,
  DEFAULT_TIMEOUT_MS,
  type Values,
  formatMs,
  messageOf,
  renderMap,
  stringMap,
} from './compiled.js';

const MAX_RETRY_AFTER_MS = 60_000;

export function compileHttp(
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
  options: CompileOptions,
): Compiled {
  const method = typeof impl['method'] === 'string' ? impl['method'] : 'GET';
  const url = templateAt('implementation.url', String(impl['url']), scope);
  const headers = stringMap('implementation.headers', impl['headers'], scope);
  const query = stringMap('implementation.query', impl['query'], scope);
  const rawBody = impl['body'];
  if (rawBody !== undefined && (method === 'GET' || method === 'HEAD')) {
    throw new DeclarativeError(`implementation.body: a ${method} request cannot have a body`);
  }
  const body: TemplateTree | undefined =
    rawBody === undefined ? undefined : compileTree('implementation.body', rawBody, scope);
  const timeoutMs = parseDuration(impl['timeout'], DEFAULT_TIMEOUT_MS);
  const retry = (impl['retry'] ?? {}) as { attempts?: number; backoff?: unknown };
  const attempts = retry.attempts ?? 1;
  const backoffMs = parseDuration(retry.backoff, 1000);
  const wholeUrl = url.single !== undefined;
  const urlOptions = (base: RenderOptions): RenderOptions =>
    wholeUrl ? base : { ...base, encode: encodeURIComponent };

  const buildUrl = (values: Values, opts: RenderOptions): URL => {
    let target: URL;
    const text = url.render(values, urlOptions(opts));
    try {
      target = new URL(text);
    } catch {
      throw new DeclarativeError(`invalid URL ${JSON.stringify(stripQuery(text))}`);
    }
    for (const [key, value] of renderMap(query, values, opts))
      target.searchParams.append(key, value);
    return target;
  };

  let budget = 0;
  const backoff: Backoff = { baseMs: backoffMs };
  for (let i = 0; i < attempts; i++) budget += timeoutMs + (i > 0 ? backoffDelay(backoff, i) : 0);

  return {
    async: true,
    budgetMs: budget,
    preview: (values) => {
      const target = buildUrl(values, { ...render, keepEnv: true });
      return `${method} ${target.origin}${decodeURI(target.pathname)}${target.search === '' ? '' : '?…'}`;
    },
    execute: async (values, ctx) => {
      const target = buildUrl(values, render);
      const init = requestInit(method, headers, body, values, render);
      const shown = `${method} ${stripQuery(target.href)}`;
      const send = { doFetch: options.fetch ?? fetch, target, init, shown, timeoutMs };
      return sendWithRetries(send, attempts, backoff, ctx.signal);
    },
  };
}

type Init = RequestInit & { headers: Record<string, string> };

/** The request's headers and body (a map body as JSON, unless a header says otherwise). */
function requestInit(
  method: string,
  headers: readonly [string, Template][],
  body: TemplateTree | undefined,
  values: Values,
  render: RenderOptions,
): Init {
  const init: Init = { method, headers: {} };
  for (const [key, value] of renderMap(headers, values, render)) init.headers[key] = value;
  if (body !== undefined) {
    const rendered = renderTree(body, values, render);
    if (typeof rendered === 'string') init.body = rendered;
    else {
      init.body = JSON.stringify(rendered);
      if (!Object.keys(init.headers).some((k) => k.toLowerCase() === 'content-type')) {
        init.headers['Content-Type'] = 'application/json';
      }
    }
  }
  return init;
}

interface Send {
  doFetch: typeof fetch;
  target: URL;
  init: Init;
  /** The method and the URL without its query, for messages. */
  shown: string;
  timeoutMs: number;
}

/** The outcome of one attempt, and whether another may follow (and after how long at least). */
interface Attempt {
  outcome: ToolOutcome;
  transient: boolean;
  retryAfterMs?: number;
}

/** Sends, again after a transient failure while attempts remain; a call's cancel ends it. */
async function sendWithRetries(
  send: Send,
  attempts: number,
  backoff: Backoff,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  let last: ToolOutcome = { ok: false, error: `${send.shown} was not sent` };
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (signal.aborted) return { ok: false, error: 'Cancelled' };
    const tried = await sendOnce(send, signal);
    if (tried === undefined) return { ok: false, error: 'Cancelled' };
    last = tried.outcome;
    if (!tried.transient || attempt === attempts) break;
    const wait = Math.max(backoffDelay(backoff, attempt), tried.retryAfterMs ?? 0);
    if (!(await sleep(wait, signal))) return { ok: false, error: 'Cancelled' };
  }
  return last;
}

/** One attempt (undefined: the call was cancelled). */
async function sendOnce(send: Send, callSignal: AbortSignal): Promise<Attempt | undefined> {
  const { shown, timeoutMs } = send;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([callSignal, timeout]);
  try {
    const response = await send.doFetch(send.target, { ...send.init, signal });
    const text = await response.text();
    if (response.status < 400) return { outcome: { ok: true, output: text }, transient: false };
    const attempt: Attempt = {
      transient: response.status === 429 || response.status >= 500,
      outcome: {
        ok: false,
        error: `HTTP ${String(response.status)}${response.statusText === '' ? '' : ` ${response.statusText}`} from ${shown}${text === '' ? '' : `: ${text}`}`,
      },
    };
    const wait = retryAfter(response.headers.get('retry-after'));
    if (wait !== undefined) attempt.retryAfterMs = wait;
    return attempt;
  } catch (error) {
    if (aborted(callSignal)) return undefined;
    const outcome: ToolOutcome = timeout.aborted
      ? { ok: false, error: `HTTP request timed out after ${formatMs(timeoutMs)}: ${shown}` }
      : { ok: false, error: `HTTP request failed: ${shown}: ${networkReason(error)}` };
    return { outcome, transient: true };
  }
}

/** A function, so the check is made afresh after an await. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

function stripQuery(url: string): string {
  const cut = url.indexOf('?');
  return cut === -1 ? url : `${url.slice(0, cut)}?…`;
}

function networkReason(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return cause.message;
  return messageOf(error);
}

function retryAfter(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_RETRY_AFTER_MS);
  return undefined;
}
