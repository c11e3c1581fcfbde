// A running child's state as its parent shows it (docs/tasks.md, "Seeing a task"): folded from
// the child's run events, and told on one line in the parent's `task` placeholder and in
// `:Flemma tasks` ("grep · turn 2 · 14.2k tokens · $0.0123 · explorer in notes.tasks/01-a.chat").
import { formatTokens } from '../context/meter.js';

/** A child's run events as this state reads them (the shape of the runner's `RunEvent`). */
export type ChildEvent =
  | { type: 'request'; turn: number }
  | { type: 'text'; text: string }
  | { type: 'tool_started'; id: string; name: string }
  | { type: 'tool_finished'; id: string; name: string; status: string }
  | {
      type: 'usage';
      totals: { turns: number; cost: number; inputTokens: number; outputTokens: number };
    }
  | { type: 'attention'; reason: 'approval' | 'finished' | 'failed'; tools?: string[] }
  | { type: 'written'; path: string };

export type ChildPhase = 'starting' | 'running' | 'waiting' | 'done' | 'failed';

export interface ChildState {
  phase: ChildPhase;
  /** Requests sent (the current one included). */
  turn: number;
  /** Input and output tokens of the child's completed replies. */
  tokens: number;
  /** USD of the child's completed replies. */
  cost: number;
  /** The tools running now, by call id (in the order they started). */
  tools: { id: string; name: string }[];
  /** The calls waiting for the user's approval. */
  waiting: string[];
  /** Why it failed. */
  failure?: string;
  /** The last non-blank line of text the model wrote. */
  lastText: string;
}

export function startingState(): ChildState {
  return { phase: 'starting', turn: 0, tokens: 0, cost: 0, tools: [], waiting: [], lastText: '' };
}

/** The last non-blank line of `text` (trimmed), else `previous`. */
function lastLineOf(text: string, previous: string): string {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = (lines[i] ?? '').trim();
    if (line !== '') return line;
  }
  return previous;
}

/** The state after `event` (a new object: states are values). */
export function nextState(state: ChildState, event: ChildEvent): ChildState {
  switch (event.type) {
    case 'request':
      return { ...state, phase: 'running', turn: event.turn, waiting: [] };
    case 'text':
      return { ...state, lastText: lastLineOf(event.text, state.lastText) };
    case 'tool_started':
      return {
        ...state,
        phase: 'running',
        tools: [...state.tools.filter((tool) => tool.id !== event.id), event],
        waiting: state.waiting.filter((name) => name !== event.name),
      };
    case 'tool_finished':
      return { ...state, tools: state.tools.filter((tool) => tool.id !== event.id) };
    case 'usage':
      return {
        ...state,
        turn: Math.max(state.turn, event.totals.turns),
        tokens: event.totals.inputTokens + event.totals.outputTokens,
        cost: event.totals.cost,
      };
    case 'attention':
      if (event.reason !== 'approval') return state;
      return { ...state, phase: 'waiting', waiting: event.tools ?? [] };
    case 'written':
      return state;
  }
}

/** The state once the child's run ended (`failure`: why it did not finish, if it did not). */
export function endedState(state: ChildState, failure: string | undefined): ChildState {
  const base = { ...state, tools: [], waiting: [] };
  return failure === undefined ? { ...base, phase: 'done' } : { ...base, phase: 'failed', failure };
}

export function formatCost(cost: number): string {
  return `$${cost.toFixed(cost >= 1 ? 2 : 4)}`;
}

/** Control characters and runs of blanks as one space; at most `max` characters (with `…`). */
export function oneLine(text: string, max: number): string {
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f\s]+/g, ' ').trim();
  const chars = Array.from(flat);
  return chars.length <= max ? flat : `${chars.slice(0, max - 1).join('')}…`;
}

/** What the child does now: the tool running, what waits, done, or why it failed. */
export function doingNow(state: ChildState): string {
  switch (state.phase) {
    case 'starting':
      return 'starting';
    case 'waiting':
      return `waiting for approval: ${state.waiting.join(', ') || 'a tool'}`;
    case 'done':
      return 'done';
    case 'failed':
      return `failed: ${state.failure ?? 'unknown error'}`;
    case 'running': {
      const names = [...new Set(state.tools.map((tool) => tool.name))];
      return names.length === 0 ? 'writing' : names.join(', ');
    }
  }
}

/**
 * The state on one line, at most `max` characters, what the child does now first (a narrow
 * window cuts the end): `grep · turn 2 · 14.2k tokens · $0.0123 · explorer in
 * notes.tasks/01-a.chat` (the child named when `child` is given). A child that waits says how to
 * see what waits: `waiting for approval: bash (<M-CR> shows it) · …`.
 */
export function stateLine(
  state: ChildState,
  child?: { profile: string; file: string },
  max = 160,
): string {
  const doing = doingNow(state);
  const parts = [
    state.phase === 'waiting' ? `${doing} (<M-CR> shows it)` : doing,
    `turn ${String(state.turn)}`,
    `${formatTokens(state.tokens)} tokens`,
    formatCost(state.cost),
    ...(child === undefined ? [] : [`${child.profile} in ${child.file}`]),
  ];
  return oneLine(parts.join(' · '), max);
}
