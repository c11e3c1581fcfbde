// What both directions of the protocol share (see ./index.ts).

/** An action's params failed the protocol's checks, or the action refused them. */
export class ActionError extends Error {
  override name = 'ActionError';
}

export interface Method<P, R> {
  params: P;
  result: R;
}

/** What docs/rpc.md says about a method, and which of its sections tells more. */
export interface Doc {
  readonly params: string;
  readonly answer: string;
  /** The anchor of its section in docs/rpc.md. */
  readonly section?: string;
}

/**
 * A protocol table of Lua → host actions: for each method its documentation, its kind (of
 * `kinds`) and how its params are read.
 */
export type ActionSpecs<
  A extends { [M in keyof A]: Method<unknown, unknown> },
  K extends 'call' | 'notification' = 'call' | 'notification',
> = {
  readonly [M in keyof A]: Doc & {
    readonly kind: K;
    readonly decode: (raw: unknown) => A[M]['params'];
  };
};

/** A protocol table of host → Lua methods: for each its documentation and its kind (of `kinds`). */
export type ToLuaSpecs<T, K extends 'request' | 'notification' = 'request' | 'notification'> = {
  readonly [M in keyof T]: Doc & { readonly kind: K };
};

/** An action's params (or a part of them) as a table, or an `ActionError`. */
export function record(raw: unknown): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ActionError(`expected a table, got ${JSON.stringify(raw)}`);
  }
  return raw as Record<string, unknown>;
}

/** `raw[key]` when `raw` is a table, else undefined. */
export function field(raw: unknown, key: string): unknown {
  return typeof raw === 'object' && raw !== null
    ? (raw as Record<string, unknown>)[key]
    : undefined;
}

/** The `bufnr` of an action's params: a buffer number, or an `ActionError`. */
export function bufnrOf(raw: unknown): number {
  const bufnr = field(raw, 'bufnr');
  if (typeof bufnr !== 'number' || !Number.isInteger(bufnr) || bufnr <= 0) {
    throw new ActionError(`expected { bufnr = <buffer number> }, got ${JSON.stringify(raw)}`);
  }
  return bufnr;
}
