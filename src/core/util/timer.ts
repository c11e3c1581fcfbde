// Delays as Node's timers take them (issue 28). `setTimeout` holds a delay in a signed 32-bit
// integer of milliseconds: anything above 2^31−1 ms (about 24.8 days) — or not a number — fires
// after 1 ms instead, so `parameters.timeout = 999999999` made every request time out at once.
// The schema bounds every option that becomes a timer (lua/flemma/config/options/shared.lua);
// these clamp again wherever the host arms one from a setting, so that no value can overflow.

/** The longest delay a timer takes: 2^31−1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** The longest delay in whole seconds (2147483 s). */
export const MAX_TIMER_SECONDS = Math.floor(MAX_TIMER_MS / 1000);

/** `ms` as a timer takes it: at most `MAX_TIMER_MS` (infinity too), at least 0 (NaN too). */
export function timerMs(ms: number): number {
  if (Number.isNaN(ms) || ms <= 0) return 0;
  return Math.min(ms, MAX_TIMER_MS);
}

/** `seconds` (a setting) as a timer's milliseconds, clamped like `timerMs`. */
export function secondsMs(seconds: number): number {
  return timerMs(seconds * 1000);
}
