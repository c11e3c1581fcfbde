// A request to a provider, tried again the one way both the send (src/host/send/stream.ts) and
// `:Flemma compact` (src/host/compact.ts) do: a failure before any content is retried (429, 529,
// 5xx, a lost connection: up to 3 attempts, 1 s, 2 s, … apart, or as `retry-after` says), and a
// refused credential (401/403) is resolved once more and, when that gives another one, the request
// is made again without counting as an attempt. Nothing is retried after content arrived or after
// a cancel. What the user sees of it (the indicator's "retrying") goes through the ports.
import { ProviderError, type ProviderAdapter } from './types.js';
import { sleep } from '../util/sleep.js';

/** Attempts for a request that fails before any content (429, 529, 5xx, a lost connection). */
export const MAX_ATTEMPTS = 3;

/**
 * How long to wait before trying again, or undefined when the failure is final: not retryable,
 * after content arrived, after a cancel, or out of attempts. `retry-after` wins (up to a minute);
 * otherwise 1 s, 2 s, … with ±20 % jitter.
 */
export function retryDelay(
  error: unknown,
  attempt: number,
  hasContent: boolean,
  aborted: boolean,
  random: () => number = Math.random,
): number | undefined {
  if (aborted || hasContent || attempt >= MAX_ATTEMPTS) return undefined;
  if (!(error instanceof ProviderError) || !error.retryable) return undefined;
  if (error.retryAfterMs !== undefined) return Math.min(error.retryAfterMs, 60_000);
  const base = 1000 * 2 ** (attempt - 1);
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** What the loop asks of its caller. */
export interface RetryPorts {
  /** The credential resolved again; undefined when it gives nothing new. */
  reauthorize(): Promise<ProviderAdapter | undefined>;
  /** A newly resolved credential is about to be tried. */
  reauthorized?(): void;
  /** Attempt `next` starts after `wait` ms (the indicator says so). */
  retrying(next: number, wait: number, error: unknown): void;
}

/** One request to the provider, as `attempt` makes it with the adapter it is given. */
export interface RetryRequest<T> {
  adapter: ProviderAdapter;
  signal: AbortSignal;
  attempt(adapter: ProviderAdapter): Promise<T>;
  /** Content arrived (in the attempt that failed): the failure is final. */
  hasContent(): boolean;
}

function refusedCredential(error: unknown): boolean {
  return error instanceof ProviderError && error.kind === 'authentication';
}

/** Makes the request until it succeeds or fails for good (then the last error is thrown). */
export async function withRetries<T>(request: RetryRequest<T>, ports: RetryPorts): Promise<T> {
  const { signal } = request;
  let adapter = request.adapter;
  let reauthorized = false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await request.attempt(adapter);
    } catch (error) {
      if (!reauthorized && !request.hasContent() && !signal.aborted && refusedCredential(error)) {
        reauthorized = true;
        const next = await ports.reauthorize();
        if (next !== undefined) {
          ports.reauthorized?.();
          adapter = next;
          attempt -= 1;
          continue;
        }
      }
      const wait = retryDelay(error, attempt, request.hasContent(), signal.aborted);
      if (wait === undefined) throw error;
      ports.retrying(attempt + 1, wait, error);
      await sleep(wait, signal);
    }
  }
}

/**
 * The progress indicator's pace: at most one update every `intervalMs`; one held back goes out at
 * the end of the window (the latest of those pushed meanwhile), so that a stream that pauses does
 * not leave a stale count on screen. `close` drops what is held back.
 */
export class ProgressThrottle<T> {
  private last = 0;
  private latest: T | undefined;
  private trailing: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly show: (value: T) => void,
    private readonly intervalMs = 100,
  ) {}

  push(value: T): void {
    const wait = this.intervalMs - (Date.now() - this.last);
    if (wait <= 0) {
      this.send(value);
      return;
    }
    this.latest = value;
    this.trailing ??= setTimeout(() => {
      this.trailing = undefined;
      if (this.latest !== undefined) this.send(this.latest);
    }, wait);
  }

  close(): void {
    if (this.trailing !== undefined) clearTimeout(this.trailing);
    this.trailing = undefined;
    this.latest = undefined;
  }

  private send(value: T): void {
    this.last = Date.now();
    this.latest = undefined;
    this.show(value);
  }
}
