// The one way Flemma spaces its retries: the send before the first byte of a reply, the retry
// tool middleware, a declarative HTTP tool's retries, and MCP reconnects. Each says its own base,
// cap and jitter; the arithmetic is here once.

export interface Backoff {
  /** The wait after the first failure, in ms. */
  readonly baseMs: number;
  /** Each wait is this many times the one before (default 2). */
  readonly factor?: number;
  /** The longest wait, in ms (default: no limit). */
  readonly maxMs?: number;
  /**
   * Spread each wait by up to this fraction either way, at random (0.2: ±20 %; default none).
   * A spread wait is rounded to whole milliseconds.
   */
  readonly jitter?: number;
}

/**
 * The wait after the `failures`-th failure in a row (1 after the first): `baseMs × factor^(n-1)`,
 * at most `maxMs`, then spread by `jitter`. `random` is `Math.random` unless a caller (a test)
 * needs the spread to be known.
 */
export function backoffDelay(
  policy: Backoff,
  failures: number,
  random: () => number = Math.random,
): number {
  const grown = policy.baseMs * (policy.factor ?? 2) ** Math.max(0, failures - 1);
  const capped = policy.maxMs === undefined ? grown : Math.min(policy.maxMs, grown);
  const jitter = policy.jitter ?? 0;
  if (jitter === 0) return capped;
  return Math.round(capped * (1 - jitter + 2 * jitter * random()));
}
