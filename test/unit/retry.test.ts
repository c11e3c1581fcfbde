import { describe, expect, it } from 'vitest';
import { ProviderError, errorForStatus, retryAfterMs } from '../../src/core/provider/types.js';
import { retryDelay } from '../../src/core/provider/retry.js';

const retryable = (after?: number): ProviderError => {
  const error = new ProviderError('anthropic', 'rate_limit', 'slow down', 429, true);
  if (after !== undefined) error.retryAfterMs = after;
  return error;
};

describe('retries before the first byte', () => {
  it('back off 1 s, 2 s with ±20 % jitter, for at most 3 attempts', () => {
    expect(retryDelay(retryable(), 1, false, false, () => 0.5)).toBe(1000);
    expect(retryDelay(retryable(), 2, false, false, () => 0)).toBe(1600);
    expect(retryDelay(retryable(), 2, false, false, () => 1)).toBe(2400);
    expect(retryDelay(retryable(), 3, false, false)).toBeUndefined();
  });

  it('honour retry-after, capped at a minute', () => {
    expect(retryDelay(retryable(0), 1, false, false)).toBe(0);
    expect(retryDelay(retryable(5000), 1, false, false)).toBe(5000);
    expect(retryDelay(retryable(600_000), 1, false, false)).toBe(60_000);
  });

  it('never retry a final error, after content arrived, or after a cancel', () => {
    expect(
      retryDelay(new ProviderError('openai', 'authentication', 'bad key', 401), 1, false, false),
    ).toBeUndefined();
    expect(retryDelay(new Error('boom'), 1, false, false)).toBeUndefined();
    expect(retryDelay(retryable(), 1, true, false)).toBeUndefined();
    expect(retryDelay(retryable(), 1, false, true)).toBeUndefined();
  });

  it('read retry-after-ms, retry-after in seconds, and retry-after as a date', () => {
    const headers = (entries: Record<string, string>) => new Headers(entries);
    expect(retryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    expect(retryAfterMs(headers({ 'retry-after': '3' }))).toBe(3000);
    const now = Date.parse('2026-11-22T06:00:00Z');
    expect(retryAfterMs(headers({ 'retry-after': 'Sun, 22 Nov 2026 06:00:10 GMT' }), now)).toBe(
      10_000,
    );
    expect(retryAfterMs(headers({}))).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('errorForStatus', () => {
  it('maps every status the same way for every provider', () => {
    const table = [400, 401, 403, 404, 408, 409, 413, 418, 422, 429, 500, 503, 529, 302].map(
      (status) => {
        const error = errorForStatus('p', status, 'm');
        return [status, error.kind, error.retryable];
      },
    );
    expect(table).toEqual([
      [400, 'invalid_request', false],
      [401, 'authentication', false],
      [403, 'permission', false],
      [404, 'not_found', false],
      [408, 'timeout', true],
      [409, 'invalid_request', false],
      [413, 'invalid_request', false],
      [418, 'invalid_request', false],
      [422, 'invalid_request', false],
      [429, 'rate_limit', true],
      [500, 'server', true],
      [503, 'server', true],
      [529, 'overloaded', true],
      [302, 'unknown', false],
    ]);
    expect(errorForStatus('openai', 401, 'bad key').describe()).toBe(
      'openai: authentication — bad key',
    );
  });
});
