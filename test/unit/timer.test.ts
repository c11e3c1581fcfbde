// Delays as Node's timers take them (src/core/util/timer.ts): above 2^31−1 ms `setTimeout` fires
// after 1 ms, so every delay armed from a setting is clamped.
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, MAX_TIMER_SECONDS, secondsMs, timerMs } from '../../src/core/util/timer.js';

describe('timerMs', () => {
  it('keeps a delay within range, clamps a larger one and infinity to 2^31−1 ms', () => {
    expect(timerMs(1500)).toBe(1500);
    expect(timerMs(MAX_TIMER_MS)).toBe(2_147_483_647);
    expect(timerMs(MAX_TIMER_MS + 1)).toBe(MAX_TIMER_MS);
    expect(timerMs(999_999_999_000)).toBe(MAX_TIMER_MS);
    expect(timerMs(Number.POSITIVE_INFINITY)).toBe(MAX_TIMER_MS);
  });

  it('makes a negative delay or NaN 0', () => {
    expect(timerMs(-5)).toBe(0);
    expect(timerMs(Number.NaN)).toBe(0);
  });

  it('turns seconds into a delay a timer takes; the schema bound fits exactly', () => {
    expect(secondsMs(600)).toBe(600_000);
    expect(secondsMs(999_999_999)).toBe(MAX_TIMER_MS);
    expect(MAX_TIMER_SECONDS).toBe(2_147_483);
    expect(secondsMs(MAX_TIMER_SECONDS)).toBe(MAX_TIMER_SECONDS * 1000);
  });
});
