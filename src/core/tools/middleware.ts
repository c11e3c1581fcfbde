// Middleware around every tool's execution (Vega's `Use`): a middleware takes the next handler
// and returns a handler, so it can act before and after the call, change the input or the
// context, stop the call, or call it again.
//
// Decisions (see docs/tools.md, "Middleware"):
// - The first middleware in the list is the outermost (Vega pins the order before-outer →
//   before-inner → tool → after-inner → after-outer).
// - A handler always resolves to a `ToolOutcome`; a middleware or tool that throws becomes
//   `{ ok: false, error }` at the point where it threw, so outer middleware still sees a result.
// - Built-ins: `loggingMiddleware` (one record per call, through the one redactor),
//   `rateLimitMiddleware` (per tool, `wait` queues calls behind a token, `fail` refuses them),
//   `timeoutMiddleware` (aborts the call's signal and answers at once; a late result is ignored),
//   `retryMiddleware` (reruns calls whose failure is marked `retryable`, with exponential backoff).
// - Waiting (rate limit, backoff) ends early when the call's signal aborts.

import { Redactor } from '../secrets/redact.js';
import { backoffDelay } from '../util/backoff.js';
import type { ExecutionContext } from './context.js';
import type { ToolOutcome } from './registry.js';

export interface ToolCall {
  /** The tool's name as registered. */
  name: string;
  input: Record<string, unknown>;
  ctx: ExecutionContext;
}

export type ToolHandler = (call: ToolCall) => Promise<ToolOutcome>;
export type ToolMiddleware = (next: ToolHandler) => ToolHandler;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A handler that never rejects. */
function guarded(handler: ToolHandler): ToolHandler {
  return async (call) => {
    try {
      return await handler(call);
    } catch (error) {
      return { ok: false, error: messageOf(error) };
    }
  };
}

/** `handler` wrapped in `middleware`, the first one outermost. */
export function compose(middleware: readonly ToolMiddleware[], handler: ToolHandler): ToolHandler {
  let current = guarded(handler);
  for (let i = middleware.length - 1; i >= 0; i--) {
    const wrap = middleware[i];
    if (wrap !== undefined) current = guarded(wrap(current));
  }
  return current;
}

/** Resolves after `ms`, or at once when `signal` aborts (resolving `false` then). */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

// --- logging ----------------------------------------------------------------------------------

export interface ToolLogRecord {
  tool: string;
  durationMs: number;
  success: boolean;
  /** The input as it may be logged (see `Redactor.value`). */
  args: Record<string, unknown>;
  error?: string;
}

export interface LoggingOptions {
  /** More argument names to hide: case-insensitive substrings, besides the redactor's names. */
  redact?: readonly string[];
  /** The host's redactor (its known secrets); without one, only the rules apply. */
  redactor?: Redactor;
  now?: () => number;
}

/**
 * One record per call. The record goes through the one redactor (src/core/secrets/redact.ts):
 * values under secret-looking names, known secrets and key-shaped strings never reach the sink.
 */
export function loggingMiddleware(
  sink: (record: ToolLogRecord) => void,
  options: LoggingOptions = {},
): ToolMiddleware {
  const extra = options.redact ?? [];
  const redactor = options.redactor ?? new Redactor();
  const now = options.now ?? (() => performance.now());
  return (next) => async (call) => {
    const started = now();
    const outcome = await next(call);
    const record: ToolLogRecord = {
      tool: call.name,
      durationMs: Math.round(now() - started),
      success: outcome.ok,
      args: redactor.value(call.input, extra) as Record<string, unknown>,
    };
    if (!outcome.ok) record.error = redactor.text(outcome.error);
    try {
      sink(record);
    } catch {
      // A broken sink must not change the tool's result.
    }
    return outcome;
  };
}

// --- rate limit -------------------------------------------------------------------------------

export interface RateLimit {
  /** Calls allowed per `perMs` (spaced evenly: one every `perMs / calls`). */
  calls: number;
  perMs: number;
}

/** `"1/s"`, `"10/m"`, `"2/500ms"`, `"5/h"`, or `{ calls, per }` (per in seconds or a duration). */
export function parseRate(value: unknown): RateLimit {
  if (typeof value === 'string') {
    const match = /^\s*(\d+(?:\.\d+)?)\s*\/\s*(\d+(?:\.\d+)?)?\s*(ms|s|m|h)\s*$/u.exec(value);
    if (match !== null) {
      const calls = Number(match[1]);
      const count = match[2] === undefined ? 1 : Number(match[2]);
      const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[3] as 'ms' | 's' | 'm' | 'h'];
      if (calls > 0 && count > 0) return { calls, perMs: count * unit };
    }
  } else if (typeof value === 'object' && value !== null) {
    const table = value as Record<string, unknown>;
    const calls = table['calls'];
    const per = table['per'];
    if (typeof calls === 'number' && calls > 0 && typeof per === 'number' && per > 0) {
      return { calls, perMs: per * 1000 };
    }
  }
  throw new Error(
    `invalid rate ${JSON.stringify(value)}: write it as "<calls>/<unit>" (e.g. "1/s", "10/m") or { calls = 1, per = 2 }`,
  );
}

export interface RateLimitOptions {
  /** Tool name → its rate (`"1/s"` or `RateLimit`). Tools not listed are not limited. */
  limits: Readonly<Record<string, string | RateLimit>>;
  /** `wait` (default): a call waits for its turn. `fail`: a call over the rate is refused. */
  mode?: 'wait' | 'fail';
  now?: () => number;
}

export function rateLimitMiddleware(options: RateLimitOptions): ToolMiddleware {
  const mode = options.mode ?? 'wait';
  const now = options.now ?? (() => performance.now());
  const limits = new Map<string, RateLimit>();
  for (const [name, rate] of Object.entries(options.limits)) {
    limits.set(name, typeof rate === 'string' ? parseRate(rate) : rate);
  }
  /** Tool → the earliest time the next call may start. */
  const nextSlot = new Map<string, number>();
  return (next) => async (call) => {
    const limit = limits.get(call.name);
    if (limit === undefined) return next(call);
    const interval = limit.perMs / limit.calls;
    const at = now();
    const slot = Math.max(at, nextSlot.get(call.name) ?? at);
    if (slot > at && mode === 'fail') {
      const seconds = ((slot - at) / 1000).toFixed(1);
      return {
        ok: false,
        error: `Tool ${call.name} is rate limited (${String(limit.calls)} per ${String(limit.perMs / 1000)}s); try again in ${seconds}s`,
      };
    }
    nextSlot.set(call.name, slot + interval);
    if (slot > at && !(await sleep(slot - at, call.ctx.signal))) {
      return {
        ok: false,
        error: `Tool ${call.name} was cancelled while waiting for its rate limit`,
      };
    }
    return next(call);
  };
}

// --- timeout ----------------------------------------------------------------------------------

/**
 * Bounds a call: after `ms` (or `ms(name)`; 0 or undefined = no bound) its signal aborts and the
 * call answers `Tool timed out after …`; whatever the tool returns later is ignored.
 */
export function timeoutMiddleware(
  ms: number | ((tool: string) => number | undefined),
): ToolMiddleware {
  return (next) => async (call) => {
    const limit = typeof ms === 'function' ? ms(call.name) : ms;
    if (limit === undefined || limit <= 0) return next(call);
    const controller = new AbortController();
    const parent = call.ctx.signal;
    const onParentAbort = (): void => {
      controller.abort(parent.reason);
    };
    if (parent.aborted) controller.abort(parent.reason);
    else parent.addEventListener('abort', onParentAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<ToolOutcome>((resolve) => {
      timer = setTimeout(() => {
        const text = `Tool timed out after ${formatMs(limit)}`;
        controller.abort(new Error(text));
        resolve({ ok: false, error: text });
      }, limit);
    });
    const ctx: ExecutionContext = { ...call.ctx, signal: controller.signal };
    try {
      return await Promise.race([next({ ...call, ctx }), timedOut]);
    } finally {
      clearTimeout(timer);
      parent.removeEventListener('abort', onParentAbort);
    }
  };
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${String(ms / 1000)}s` : `${String(ms)}ms`;
}

// --- retry ------------------------------------------------------------------------------------

export interface RetryOptions {
  /** Attempts in all, the first included (default 3). */
  attempts?: number;
  /** The wait before the second attempt, in ms (default 500); it doubles after each attempt. */
  backoffMs?: number;
  /** The longest wait between two attempts, in ms (default 30 s). */
  maxBackoffMs?: number;
}

export function retryMiddleware(options: RetryOptions = {}): ToolMiddleware {
  const attempts = Math.max(1, Math.floor(options.attempts ?? 3));
  const backoff = Math.max(0, options.backoffMs ?? 500);
  const maxBackoff = options.maxBackoffMs ?? 30_000;
  return (next) => async (call) => {
    let outcome = await next(call);
    for (let attempt = 1; attempt < attempts; attempt++) {
      if (outcome.ok || outcome.retryable !== true || call.ctx.signal.aborted) return outcome;
      const wait = backoffDelay({ baseMs: backoff, maxMs: maxBackoff }, attempt);
      if (!(await sleep(wait, call.ctx.signal))) return outcome;
      outcome = await next(call);
    }
    return outcome;
  };
}
