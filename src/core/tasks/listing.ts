// `:Flemma tasks` (docs/tasks.md, "Seeing a task"): a chat's children, found in its tasks folder
// by what their frontmatter records (so after a restart too) and told by what their files hold,
// or by their live state while they run; one line each.
import type { ChatDocument, Message } from '../chat/ast.js';
import { type ChildState, doingNow, formatCost, oneLine } from './status.js';

/** What a child's frontmatter records of where it came from (`task` of its JSON). */
export interface TaskOrigin {
  agent: string;
  /** The parent's path relative to the child's folder. */
  parent: string;
  toolId: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `task` record of a child's JSON frontmatter, if it is a task's chat. */
export function taskOrigin(document: ChatDocument): TaskOrigin | undefined {
  const frontmatter = document.frontmatter;
  if (frontmatter === undefined || frontmatter.language.toLowerCase() !== 'json') return undefined;
  let data: unknown;
  try {
    data = JSON.parse(frontmatter.code);
  } catch {
    return undefined;
  }
  const task = isRecord(data) ? data['task'] : undefined;
  if (!isRecord(task) || typeof task['parent'] !== 'string') return undefined;
  return {
    agent: typeof task['agent'] === 'string' ? task['agent'] : '?',
    parent: task['parent'],
    toolId: typeof task['tool_id'] === 'string' ? task['tool_id'] : '',
  };
}

export type TaskRowState = 'running' | 'waiting' | 'done' | 'failed' | 'stopped';

/** One child in `:Flemma tasks`. */
export interface TaskRow {
  /** Its path relative to the parent's directory (`notes.tasks/01-find-callers.chat`). */
  file: string;
  agent: string;
  state: TaskRowState;
  turns: number;
  /** USD spent, when known (only while the host watched it run). */
  cost?: number;
  /** What it does now (live), or the last line the model wrote. */
  last: string;
}

function lastTextLine(message: Message): string {
  for (let i = message.segments.length - 1; i >= 0; i--) {
    const segment = message.segments[i];
    if (segment?.kind !== 'text') continue;
    const lines = segment.value.split('\n').filter((line) => line.trim() !== '');
    const line = lines[lines.length - 1];
    if (line !== undefined) return line.trim();
  }
  return '';
}

/** How a child's file left it: its model's turn ended, it waits for an approval, it failed… */
function fileState(messages: readonly Message[]): TaskRowState {
  const last = messages[messages.length - 1];
  if (last === undefined) return 'stopped';
  if (last.role === 'Assistant') {
    if (last.segments.some((segment) => segment.kind === 'aborted')) return 'failed';
    return last.segments.some((segment) => segment.kind === 'tool_use') ? 'stopped' : 'done';
  }
  const pending = last.segments.some(
    (segment) => segment.kind === 'tool_result' && segment.placeholder?.status === 'pending',
  );
  return pending ? 'waiting' : 'stopped';
}

/** A child's row from its file alone (no run of it is watched). */
export function rowOfFile(file: string, origin: TaskOrigin, document: ChatDocument): TaskRow {
  const replies = document.messages.filter((message) => message.role === 'Assistant');
  const lastReply = replies[replies.length - 1];
  return {
    file,
    agent: origin.agent,
    state: fileState(document.messages),
    turns: replies.length,
    last: lastReply === undefined ? '' : lastTextLine(lastReply),
  };
}

/** A child's row while the host watches its run (its file's row under it). */
export function rowOfRun(row: TaskRow, state: ChildState): TaskRow {
  const phase = state.phase === 'starting' ? 'running' : state.phase;
  const doing = doingNow(state);
  return {
    ...row,
    state: phase,
    turns: Math.max(row.turns, state.turn),
    cost: state.cost,
    last: phase === 'running' ? `${doing} · ${state.lastText}` : state.lastText || doing,
  };
}

/** The most characters of a child's last line the report shows. */
const LAST_MAX = 80;

/** The report: a head line, then one numbered line per child (`:Flemma tasks <n>` opens it). */
export function listingLines(parent: string, rows: readonly TaskRow[]): string[] {
  if (rows.length === 0) return [`${parent}: no tasks`];
  const fileWidth = Math.max(...rows.map((row) => row.file.length));
  const agentWidth = Math.max(...rows.map((row) => row.agent.length));
  const lines = rows.map((row, index) => {
    const head = [
      String(index + 1).padStart(2),
      row.state.padEnd(7),
      row.file.padEnd(fileWidth),
      row.agent.padEnd(agentWidth),
      `${String(row.turns).padStart(2)} turns`,
      (row.cost === undefined ? '' : formatCost(row.cost)).padEnd(7),
    ].join('  ');
    return `${head}  ${oneLine(row.last, LAST_MAX)}`.trimEnd();
  });
  return [`${parent}: ${String(rows.length)} task${rows.length === 1 ? '' : 's'}`, ...lines];
}
