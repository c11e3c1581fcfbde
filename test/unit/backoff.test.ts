// The one backoff helper, with the settings of each place that retries.
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/core/util/backoff.js';
import { DEFAULT_RECONNECT } from '../../src/core/tools/mcp/config.js';

describe('backoffDelay', () => {
  it('doubles from the base after each failure, up to the cap', () => {
    const middleware = { baseMs: 500, maxMs: 30_000 };
    expect([1, 2, 3, 4, 7, 8].map((n) => backoffDelay(middleware, n))).toEqual([
      500, 1000, 2000, 4000, 30_000, 30_000,
    ]);
    const reconnect = {
      baseMs: DEFAULT_RECONNECT.initialDelayMs,
      maxMs: DEFAULT_RECONNECT.maxDelayMs,
    };
    expect([1, 2, 3].map((n) => backoffDelay(reconnect, n))).toEqual([500, 1000, 2000]);
    // A declarative HTTP tool's `retry.backoff`: no cap.
    expect([1, 2, 10].map((n) => backoffDelay({ baseMs: 1000 }, n))).toEqual([1000, 2000, 512_000]);
  });

  it('takes another factor, and treats a count below one as the first failure', () => {
    expect(backoffDelay({ baseMs: 100, factor: 3 }, 3)).toBe(900);
    expect(backoffDelay({ baseMs: 100 }, 0)).toBe(100);
  });

  it('spreads by the jitter either way and rounds to whole milliseconds (the send: 1 s, ±20 %)', () => {
    const send = { baseMs: 1000, jitter: 0.2 };
    expect(backoffDelay(send, 1, () => 0.5)).toBe(1000);
    expect(backoffDelay(send, 2, () => 0)).toBe(1600);
    expect(backoffDelay(send, 2, () => 1)).toBe(2400);
    expect(backoffDelay({ baseMs: 333, jitter: 0.1 }, 1, () => 0.25)).toBe(316);
  });
});
