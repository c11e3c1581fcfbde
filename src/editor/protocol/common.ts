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
