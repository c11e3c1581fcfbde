// Lua → host actions of tasks (`:Flemma tasks`, `:Flemma task:return`; docs/tasks.md, "Seeing a
// task"), kept apart from the other actions; `LuaToHost` and `LUA_TO_HOST` include them.
import type { TaskRowState } from '../../core/tasks/listing.js';
import { ActionError, type ActionSpecs, bufnrOf, field, type Method } from './common.js';

/** A chat buffer and its file (absolute). */
interface BufFile {
  bufnr: number;
  file: string;
}

/** One child of `:Flemma tasks`. */
export interface TaskListingRow {
  file: string;
  path: string;
  agent: string;
  state: TaskRowState;
  turns: number;
  cost?: number;
  last: string;
}

export interface TaskActions {
  /** `:Flemma tasks`: the chat's children, and the report's lines (a head line, one per child). */
  'tasks:list': Method<BufFile, { tasks: TaskListingRow[]; lines: string[] }>;
  /** `:Flemma task:return`: the parent's file and the note to add to it, or why there is none. */
  'task:return': Method<BufFile, { parent: string; lines: string[] } | { message: string }>;
}

const bufFile = (raw: unknown): BufFile => {
  const file = field(raw, 'file');
  if (typeof file !== 'string' || file === '') {
    throw new ActionError(
      `expected { bufnr, file = <the chat's file> }, got ${JSON.stringify(raw)}`,
    );
  }
  return { bufnr: bufnrOf(raw), file };
};

export const TASK_ACTIONS: ActionSpecs<TaskActions, 'call'> = {
  'tasks:list': {
    kind: 'call',
    params: '`{bufnr, file}`',
    answer: '`{tasks, lines}`: tasks `{file, path, agent, state, turns, cost?, last}`',
    section: 'commands',
    decode: bufFile,
  },
  'task:return': {
    kind: 'call',
    params: '`{bufnr, file}`',
    answer: '`{parent, lines}` or `{message}`',
    section: 'commands',
    decode: bufFile,
  },
};
