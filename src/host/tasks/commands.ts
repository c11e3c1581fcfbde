// `:Flemma tasks` and `:Flemma task:return` in the host (docs/tasks.md, "Seeing a task"): a
// chat's children from its tasks folder (their frontmatter names the parent, so a restart loses
// none) with the live state of those the host watches, and a continued child's answer as the
// note its parent gets.
import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { parseChat } from '../../core/chat/parser.js';
import { tasksDirName } from '../../core/tasks/files.js';
import {
  type TaskRow,
  listingLines,
  rowOfFile,
  rowOfRun,
  taskOrigin,
} from '../../core/tasks/listing.js';
import { latestAnswer, returnNote } from '../../core/tasks/return.js';
import { toolCallAt } from '../../core/tools/locate.js';
import type { DocumentState, DocumentStore } from '../../editor/documents.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { ChildDecision, TaskService } from './service.js';
import type { TaskBoard } from './status.js';

/** One child of `:Flemma tasks`, with its absolute path (what `<CR>` opens). */
export type TaskListing = TaskRow & { path: string };

async function chatFiles(dir: string): Promise<string[]> {
  try {
    const names = await readdir(dir);
    return names.filter((name) => name.endsWith('.chat')).sort();
  } catch {
    return [];
  }
}

/** The children of the chat in file `parent` (buffer `bufnr`), in their files' order. */
export async function listTasks(
  board: Pick<TaskBoard, 'of'>,
  parent: string,
  bufnr: number,
): Promise<{ tasks: TaskListing[]; lines: string[] }> {
  const home = dirname(parent);
  const dir = join(home, tasksDirName(basename(parent)));
  const live = board.of(bufnr);
  const tasks: TaskListing[] = [];
  for (const name of await chatFiles(dir)) {
    const path = join(dir, name);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch {
      continue;
    }
    const document = parseChat(text);
    const origin = taskOrigin(document);
    if (origin === undefined || resolve(dir, origin.parent) !== resolve(parent)) continue;
    const file = relative(home, path);
    const row = rowOfFile(file, origin, document);
    const state = live.get(file);
    tasks.push({ ...(state === undefined ? row : rowOfRun(row, state)), path });
  }
  return { tasks, lines: listingLines(basename(parent), tasks) };
}

/** What `:Flemma task:return` writes: the parent's file and the note's lines. */
export type ReturnAnswer = { parent: string; lines: string[] } | { message: string };

/** The note child `state` (in file `path`) sends back to its parent, or why it sends none. */
export function returnOf(state: Pick<DocumentState, 'document'>, path: string): ReturnAnswer {
  const origin = taskOrigin(state.document);
  if (origin === undefined) {
    return { message: 'Not a task’s chat (its frontmatter records no parent)' };
  }
  const answer = latestAnswer(state.document);
  if (answer === undefined) {
    return { message: 'The task has no answer to return yet (no reply that ends its turn)' };
  }
  const parent = resolve(dirname(path), origin.parent);
  return { parent, lines: returnNote(relative(dirname(parent), path), answer) };
}

/** A rejection, with the user's reason when they gave one. */
export function rejectedWith(reason: string | undefined): ChildDecision {
  return reason === undefined || reason.trim() === ''
    ? { status: 'rejected' }
    : { status: 'rejected', message: reason };
}

/** What a decision on a child's waiting call needs of the host. */
export interface ChildDecisionDeps {
  documents: Pick<DocumentStore, 'attach'>;
  lua: Pick<LuaBridge, 'call'>;
  tasks: Pick<TaskService, 'decideWaiting' | 'waitsInChild'>;
}

/**
 * `:Flemma tool:approve` / `tool:reject` (or the diff's `gr`) on the call `at` (its 0-based row,
 * or its id) of buffer `bufnr`: a `task` call whose child waits decides the child's waiting
 * calls, a waiting call in a child's own buffer decides that call, and the child goes on
 * (docs/tasks.md). Whether the call was one (else the buffer's own decision applies).
 */
export async function decideChildCall(
  deps: ChildDecisionDeps,
  bufnr: number,
  at: { row: number } | { id: string },
  decision: ChildDecision,
): Promise<boolean> {
  let id: string;
  if ('id' in at) id = at.id;
  else {
    const state = await deps.documents.attach(bufnr);
    const found = state === undefined ? undefined : toolCallAt(state.document, at.row + 1);
    if (found?.ok !== true) return false;
    id = found.call.id;
  }
  if (deps.tasks.decideWaiting(bufnr, id, null, decision)) return true;
  // Only for a call a child waits on is the buffer's file asked for.
  if (!deps.tasks.waitsInChild(id)) return false;
  const facts = await deps.lua.call('tools.facts', { bufnr });
  return deps.tasks.decideWaiting(bufnr, id, facts.filename, decision);
}
