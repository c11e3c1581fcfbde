// The approval resolver chain (docs/approval.md, "The chain"): a registry of named resolvers that
// are asked, in priority order, whether a tool call may run without asking. This module is the
// mechanism only; the built-in resolvers live in resolvers.ts and the presets in presets.ts.
//
// Decisions (docs/approval.md, "The chain"):
// - Order: priority high to low, ties by name in code-unit order (not locale order, so the order
//   does not depend on the machine). The first resolver that answers a decision wins; nothing
//   from anyone means `require_approval`, with `resolver: null`.
// - A resolver's contract is the three strings `approve`, `require_approval`, `deny`, or nothing
//   (`undefined`, or `null`, which is how a Lua `nil` arrives over RPC) to pass. Anything else,
//   booleans included, is junk: the resolver is skipped and the reason recorded. Booleans are
//   accepted only by the function form of `auto_approve` (resolvers.ts maps them before the chain
//   sees them); a resolver returning `false` would otherwise silently stop the chain.
// - A resolver that throws (or whose promise rejects: Lua resolvers are called over RPC) is
//   skipped with the error message recorded, and the chain goes on. Nothing is logged here: the
//   result carries every skip, and the caller logs them.
// - `resolve` may return a promise; resolvers are awaited one at a time, in order, and the chain
//   stops at the first decision, so lower resolvers (often RPC round trips) are not called.
// - `decide` works on the order taken when it starts: a resolver registered or unregistered while
//   an asynchronous decision is in flight affects the next decision, not that one.
// - A resolver may attach notes to its step (`note(message)`), e.g. "the auto_approve function
//   raised …", so `:Flemma tool:why` can show more than the bare decision.
// - Priorities are any finite number (Lua numbers may be fractional); names are any non-empty
//   string (module-path resolvers are named by their dotted path).
// - `get` and `getAll` return copies: an entry holds only primitives and the `resolve` function,
//   so a copy of each entry is a deep copy as far as the registry is concerned.

export type Decision = 'approve' | 'require_approval' | 'deny';

export const DECISIONS: readonly Decision[] = ['approve', 'require_approval', 'deny'];

export const DEFAULT_PRIORITY = 50;

export function isDecision(value: unknown): value is Decision {
  return value === 'approve' || value === 'require_approval' || value === 'deny';
}

/** One tool call to decide on (the Lua resolver receives `tool_name, input, {bufnr, tool_id}`). */
export interface ToolCall {
  toolName: string;
  input: unknown;
  bufnr: number;
  toolId: string;
}

/** Attaches a note to the current resolver's step of the trace. */
export type Note = (message: string) => void;

/**
 * A resolver: answers a `Decision`, or `undefined`/`null` to pass. Typed `unknown` because answers
 * from Lua (over RPC) are only known at run time; the chain validates every answer.
 */
export type ResolveFn<C> = (call: ToolCall, context: C, note: Note) => unknown;

export interface ResolverDefinition<C> {
  resolve: ResolveFn<C>;
  /** Default `DEFAULT_PRIORITY` (50). Higher runs first. */
  priority?: number;
  description?: string;
}

export interface ResolverEntry<C> {
  name: string;
  priority: number;
  description: string;
  resolve: ResolveFn<C>;
}

/** What happened at one resolver, in the order they were asked. */
export interface TraceEntry {
  resolver: string;
  priority: number;
  outcome: 'decided' | 'passed' | 'skipped';
  /** Set when `outcome` is `decided`. */
  decision?: Decision;
  /** Set when `outcome` is `skipped`: why. */
  reason?: string;
  notes: string[];
}

export interface Skipped {
  resolver: string;
  reason: string;
}

export interface ApprovalResult {
  decision: Decision;
  /** The resolver that decided; `null` when none did and the default applied. */
  resolver: string | null;
  /** Every resolver asked, in order. */
  trace: TraceEntry[];
  /** The resolvers that threw or answered junk (also in `trace`), for the caller to log. */
  skipped: Skipped[];
}

export class ApprovalChainError extends Error {
  override readonly name = 'ApprovalChainError';
}

/** `decide`'s context argument may be left out when the context type admits `undefined`. */
type ContextArg<C> = undefined extends C ? [context?: C] : [context: C];

/** Priority high to low, then name in code-unit order. */
export function compareResolvers(
  a: { name: string; priority: number },
  b: { name: string; priority: number },
): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.name === b.name) return 0;
  return a.name < b.name ? -1 : 1;
}

/** A short rendering of an answer or error for a skip reason. */
export function describeValue(value: unknown): string {
  if (value instanceof Error) return value.message;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol' || typeof value === 'bigint') return String(value);
  try {
    // `JSON.stringify` answers `undefined` for `undefined` (its types say otherwise).
    const text = JSON.stringify(value) as string | undefined;
    return text ?? String(value);
  } catch {
    return typeof value;
  }
}

export class ApprovalChain<C = undefined> {
  readonly #entries = new Map<string, ResolverEntry<C>>();

  /** Adds a resolver; one registered under the same name is replaced. */
  register(name: string, def: ResolverDefinition<C>): void {
    if (typeof name !== 'string' || name === '') {
      throw new ApprovalChainError('an approval resolver needs a non-empty name');
    }
    if (typeof def.resolve !== 'function') {
      throw new ApprovalChainError(`approval resolver '${name}': resolve must be a function`);
    }
    const priority = def.priority ?? DEFAULT_PRIORITY;
    if (typeof priority !== 'number' || !Number.isFinite(priority)) {
      throw new ApprovalChainError(
        `approval resolver '${name}': priority must be a finite number, got ${describeValue(priority)}`,
      );
    }
    this.#entries.set(name, {
      name,
      priority,
      description: def.description ?? '',
      resolve: def.resolve,
    });
  }

  /** Removes a resolver; `false` when none had that name. */
  unregister(name: string): boolean {
    return this.#entries.delete(name);
  }

  /** A copy of the named resolver's entry. */
  get(name: string): ResolverEntry<C> | undefined {
    const entry = this.#entries.get(name);
    return entry === undefined ? undefined : { ...entry };
  }

  /** Copies of every entry, in the order `decide` asks them. */
  getAll(): ResolverEntry<C>[] {
    return [...this.#entries.values()].sort(compareResolvers).map((entry) => ({ ...entry }));
  }

  count(): number {
    return this.#entries.size;
  }

  /** Asks the resolvers in order; the first decision wins, `require_approval` if none decides. */
  async decide(call: ToolCall, ...[context]: ContextArg<C>): Promise<ApprovalResult> {
    const trace: TraceEntry[] = [];
    const skipped: Skipped[] = [];
    for (const entry of this.getAll()) {
      const step: TraceEntry = {
        resolver: entry.name,
        priority: entry.priority,
        outcome: 'passed',
        notes: [],
      };
      trace.push(step);
      const note: Note = (message) => {
        step.notes.push(message);
      };
      let answer: unknown;
      try {
        answer = await entry.resolve(call, context as C, note);
      } catch (error) {
        step.outcome = 'skipped';
        step.reason = `raised an error: ${describeValue(error)}`;
        skipped.push({ resolver: entry.name, reason: step.reason });
        continue;
      }
      if (answer === undefined || answer === null) continue;
      if (isDecision(answer)) {
        step.outcome = 'decided';
        step.decision = answer;
        return { decision: answer, resolver: entry.name, trace, skipped };
      }
      step.outcome = 'skipped';
      step.reason =
        `returned ${describeValue(answer)}; a resolver must return ` +
        `"approve", "require_approval", "deny" or nil`;
      skipped.push({ resolver: entry.name, reason: step.reason });
    }
    return { decision: 'require_approval', resolver: null, trace, skipped };
  }
}

export type PlaceholderStatus = 'approved' | 'pending' | 'denied';

/** The status of the placeholder Phase 1 writes for a decision. */
export function statusFor(decision: Decision): PlaceholderStatus {
  switch (decision) {
    case 'approve':
      return 'approved';
    case 'require_approval':
      return 'pending';
    case 'deny':
      return 'denied';
  }
}

/**
 * An approval that a guard turns into `require_approval` after every resolver of the chain; its
 * trace says why (`note`, given who had approved: a resolver's name or "the default").
 */
export function guarded(
  result: ApprovalResult,
  guard: string,
  note: (approver: string) => string,
): ApprovalResult {
  const approver = result.resolver ?? 'the default';
  return {
    decision: 'require_approval',
    resolver: guard,
    trace: [
      ...result.trace,
      {
        resolver: guard,
        priority: Number.NEGATIVE_INFINITY,
        outcome: 'decided',
        decision: 'require_approval',
        notes: [note(approver)],
      },
    ],
    skipped: result.skipped,
  };
}
