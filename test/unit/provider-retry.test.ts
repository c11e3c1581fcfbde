// The one retry/re-auth loop and the progress pace that the send and `:Flemma compact` share
// (src/core/provider/retry.ts), driven with fake adapters and attempts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ProgressThrottle, withRetries } from '../../src/core/provider/retry.js';
import { type ProviderAdapter, ProviderError } from '../../src/core/provider/types.js';

const adapter = (name: string): ProviderAdapter => ({ name }) as unknown as ProviderAdapter;
const nameOf = (a: ProviderAdapter): string => (a as unknown as { name: string }).name;
/** Retryable at once (`retry-after: 0`), so that the loop does not wait. */
const overloaded = (): ProviderError => {
  const error = new ProviderError('anthropic', 'overloaded', 'busy', 529, true);
  error.retryAfterMs = 0;
  return error;
};
const refused = (): ProviderError =>
  new ProviderError('anthropic', 'authentication', 'bad key', 401);

interface Script {
  outcomes: (Error | string)[];
  content?: boolean;
  fresh?: ProviderAdapter | undefined;
}

function run(script: Script, signal = new AbortController().signal) {
  const used: string[] = [];
  const retries: number[] = [];
  const events: string[] = [];
  const result = withRetries(
    {
      adapter: adapter('first'),
      signal,
      hasContent: () => script.content === true,
      attempt: (a) => {
        used.push(nameOf(a));
        const outcome = script.outcomes.shift() ?? 'done';
        return typeof outcome === 'string' ? Promise.resolve(outcome) : Promise.reject(outcome);
      },
    },
    {
      reauthorize: () => {
        events.push('reauthorize');
        return Promise.resolve(script.fresh);
      },
      reauthorized: () => events.push('reauthorized'),
      retrying: (next) => retries.push(next),
    },
  );
  return { result, used, retries, events };
}

describe('withRetries', () => {
  it('returns the first attempt that succeeds, after retryable failures', async () => {
    const r = run({ outcomes: [overloaded(), overloaded(), 'reply'] });
    await expect(r.result).resolves.toBe('reply');
    expect(r.retries).toEqual([2, 3]);
  });

  it('gives up after three attempts with the last error', async () => {
    const last = overloaded();
    const r = run({ outcomes: [overloaded(), overloaded(), last] });
    await expect(r.result).rejects.toBe(last);
    expect(r.used).toHaveLength(3);
  });

  it('never retries once content arrived, nor a final error', async () => {
    const r = run({ outcomes: [overloaded()], content: true });
    await expect(r.result).rejects.toBeInstanceOf(ProviderError);
    expect(r.used).toHaveLength(1);
    const final = run({ outcomes: [new Error('boom')] });
    await expect(final.result).rejects.toThrow('boom');
    expect(final.retries).toEqual([]);
  });

  it('resolves a refused credential once and tries the new one without counting it', async () => {
    const r = run({
      outcomes: [refused(), overloaded(), overloaded(), 'reply'],
      fresh: adapter('fresh'),
    });
    await expect(r.result).resolves.toBe('reply');
    expect(r.used).toEqual(['first', 'fresh', 'fresh', 'fresh']);
    expect(r.events).toEqual(['reauthorize', 'reauthorized']);
  });

  it('a credential refused again, or none new, is final', async () => {
    const again = run({ outcomes: [refused(), refused()], fresh: adapter('fresh') });
    await expect(again.result).rejects.toBeInstanceOf(ProviderError);
    expect(again.events).toEqual(['reauthorize', 'reauthorized']);
    const none = run({ outcomes: [refused()] });
    await expect(none.result).rejects.toBeInstanceOf(ProviderError);
    expect(none.used).toEqual(['first']);
  });

  it('does not retry after a cancel', async () => {
    const controller = new AbortController();
    controller.abort();
    const r = run({ outcomes: [overloaded()] }, controller.signal);
    await expect(r.result).rejects.toBeInstanceOf(ProviderError);
    expect(r.used).toHaveLength(1);
  });
});

describe('ProgressThrottle', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A throttle on fake timers, and the updates it has shown. */
  function throttled() {
    vi.useFakeTimers();
    const shown: number[] = [];
    return { shown, throttle: new ProgressThrottle<number>((n) => shown.push(n)) };
  }

  it('shows at most one update per 100 ms and the latest held back at the window end', () => {
    const { shown, throttle } = throttled();
    throttle.push(1);
    throttle.push(2);
    throttle.push(3);
    expect(shown).toEqual([1]);
    vi.advanceTimersByTime(100);
    expect(shown).toEqual([1, 3]);
    vi.advanceTimersByTime(100);
    throttle.push(4);
    expect(shown).toEqual([1, 3, 4]);
  });

  it('close drops what is held back', () => {
    const { shown, throttle } = throttled();
    throttle.push(1);
    throttle.push(2);
    throttle.close();
    vi.advanceTimersByTime(1000);
    expect(shown).toEqual([1]);
  });
});
