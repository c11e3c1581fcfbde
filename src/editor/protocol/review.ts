// Lua → host actions of the review of file changes (`:Flemma tool:diff` and the decisions taken
// in its tab), kept apart from the other actions; `LuaToHost` and `LUA_TO_HOST` include them.
import { ActionError, type ActionSpecs, type Method, record } from './common.js';

/** What the diff tab shows: the file now (`before`) and what the call would leave (`after`). */
export interface DiffSpec {
  bufnr: number;
  tool_id: string;
  /** `write` or `edit`. */
  name: string;
  /** The path as the call names it. */
  path: string;
  /** Where it leads. */
  abs: string;
  /** False when the file does not exist yet (`before` is then empty). */
  exists: boolean;
  before: string;
  after: string;
  /** Why the user should look twice (the file changed on disk), or null. */
  notice: string | null;
  /**
   * A call that already ran: `before` is what the file held before it, `after` the file now;
   * the tab only shows them (nothing to approve or reject).
   */
  view_only?: boolean;
}

/** The answer to a decision taken in the diff tab. */
export type DiffAnswer =
  { status: 'approved' | 'rejected' | 'gone' } | { status: 'stale'; diff: DiffSpec };

interface Call {
  bufnr: number;
  tool_id: string;
  /** Answered by `chat.step_ended` once the call the decision ran is over (null: no answer). */
  ticket: number | null;
}

export interface ReviewActions {
  'tool:diff': Method<{ bufnr: number; row: number }, DiffSpec | null>;
  'tool:diff-approve': Method<Call & { before: string; content: string }, DiffAnswer>;
  'tool:diff-reject': Method<Call & { reason: string | undefined }, DiffAnswer>;
}

function integer(raw: unknown, key: string): number {
  const value = record(raw)[key];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new ActionError(`expected ${key} to be a number, got ${JSON.stringify(value)}`);
  }
  return value;
}

function string(raw: unknown, key: string): string {
  const value = record(raw)[key];
  if (typeof value !== 'string') {
    throw new ActionError(`expected ${key} to be a string, got ${JSON.stringify(value)}`);
  }
  return value;
}

const call = (raw: unknown): Call => {
  const ticket = record(raw)['ticket'];
  return {
    bufnr: integer(raw, 'bufnr'),
    tool_id: string(raw, 'tool_id'),
    ticket: typeof ticket === 'number' && Number.isInteger(ticket) ? ticket : null,
  };
};

export const REVIEW_ACTIONS: ActionSpecs<ReviewActions, 'call'> = {
  'tool:diff': {
    kind: 'call',
    params: '`{bufnr, row}`',
    answer: '`{bufnr, tool_id, name, path, abs, exists, before, after, notice}` or `nil`',
    section: 'commands',
    decode: (raw) => ({ bufnr: integer(raw, 'bufnr'), row: integer(raw, 'row') }),
  },
  'tool:diff-approve': {
    kind: 'call',
    params: '`{bufnr, tool_id, before, content, ticket?}`',
    answer: '`{status}` (`approved`, `gone`) or `{status = "stale", diff}`',
    section: 'commands',
    decode: (raw) => ({
      ...call(raw),
      before: string(raw, 'before'),
      content: string(raw, 'content'),
    }),
  },
  'tool:diff-reject': {
    kind: 'call',
    params: '`{bufnr, tool_id, reason?, ticket?}`',
    answer: '`{status}` (`rejected`, `gone`)',
    section: 'commands',
    decode: (raw) => {
      const reason = record(raw)['reason'];
      return { ...call(raw), reason: typeof reason === 'string' ? reason : undefined };
    },
  },
};
