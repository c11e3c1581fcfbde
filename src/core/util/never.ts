// Exhaustive switches. A `switch` over a discriminated union ends in one of these, so that a new
// member of the union fails the typecheck until it has its own case.

/** The end of a switch over a union Flemma declares: reaching it at run time is a bug. */
export function assertNever(value: never, what: string): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/**
 * The end of a switch over a union a provider's SDK declares. The typecheck still wants a case
 * for every member the SDK knows; at run time, a kind newer than the SDK (the API may be ahead of
 * it) is ignored, as the switch's other ignored kinds are.
 */
export function newerThanSdk(_value: never): void {
  // Nothing to do: see above.
}
