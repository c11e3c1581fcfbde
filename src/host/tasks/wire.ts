// The `task` tool in the host: the service that runs its children over the chats on files, and
// the tool registered in the catalogue, offered with the chat's profiles.
import { taskTool, taskToolShape } from '../../core/tools/definitions/task.js';
import type { FileChats } from '../../files/api.js';
import type { HostBase } from '../base.js';
import { waitingBlocks } from '../approval-notice.js';
import type { EditorStates } from '../editor-state.js';
import type { SessionRegistry } from '../session.js';
import type { ToolCommands } from '../tools/commands.js';
import type { ToolCatalogue } from '../tools/catalogue.js';
import { FileChanges } from '../tools/file-changes.js';
import { rewrittenUse } from '../tools/diff-review.js';
import type { ResultWriter } from '../tools/results.js';
import { emptyPlaceholders } from '../../core/tools/locate.js';
import type { UsageTracker } from '../usage.js';
import { type ChildUse, TaskService } from './service.js';
import type { TaskBoard } from './status.js';

export interface TaskWiring {
  base: Pick<HostBase, 'documents' | 'logger' | 'lua'>;
  catalogue: Pick<ToolCatalogue, 'addBuiltin' | 'specsFor' | 'isBuiltin'>;
  states: Pick<EditorStates, 'get'>;
  usage: Pick<UsageTracker, 'session'>;
  files: Pick<FileChats, 'open' | 'run' | 'close'>;
  /** The children's state lines in their calls' previews, and the listing (`Host.taskBoard`). */
  taskBoard: Pick<TaskBoard, 'progress' | 'ended'>;
  sessions: Pick<SessionRegistry, 'of'>;
  commands: Pick<ToolCommands, 'setStatusAt'>;
  results: Pick<ResultWriter, 'fresh' | 'applyEdits'>;
}

/** The tool use `id` of chat `child` made `use`, as the user changed it in its diff. */
async function changedUse(s: TaskWiring, child: number, id: string, use: ChildUse): Promise<void> {
  const state = await s.results.fresh(child);
  const slot =
    state === undefined ? undefined : emptyPlaceholders(state.document).find((p) => p.id === id);
  if (state === undefined || slot === undefined) return;
  await s.results.applyEdits(child, [rewrittenUse(slot, use, state.lines)]);
}

/** The task service, its tool registered in the catalogue. */
export function createTasks(s: TaskWiring): TaskService {
  const service = new TaskService({
    files: s.files,
    parent: async (bufnr) => {
      const state = await s.base.documents.attach(bufnr);
      return state === undefined ? undefined : s.states.get(bufnr, state.document);
    },
    offered: (config, cwd) =>
      s.catalogue.specsFor(config.tools.__list, config, cwd).map((spec) => spec.name),
    spent: () => s.usage.session.totals().cost,
    logger: s.base.logger,
    progress: s.taskBoard.progress,
    ended: s.taskBoard.ended,
    decide: async (child, ids, decision) => {
      const state = await s.base.documents.attach(child);
      if (state === undefined) return;
      const message = decision.status === 'rejected' ? decision.message : undefined;
      // Each waiting call as the user decides it in a buffer (`:Flemma tool:approve`, `reject`);
      // the task's run goes on with the child afterwards, so the decision itself does not.
      for (const block of waitingBlocks(state.document)) {
        if (!ids.includes(block.id)) continue;
        if (decision.status === 'approved' && decision.use !== undefined) {
          await changedUse(s, child, block.id, decision.use);
        }
        await s.sessions
          .of(child)
          .decide(
            undefined,
            () => s.commands.setStatusAt(child, block.toolUseLine - 1, decision.status, message),
            false,
          );
      }
    },
    show: (parent, path, calls) => {
      // Lua opens the file beside the parent at the first waiting call, and its diff when the
      // built-in review covers it (a pending `write` or `edit`).
      const diff = (name: string): boolean =>
        FileChanges.covers(name) && s.catalogue.isBuiltin(name);
      s.base.lua.notify('tasks.show', {
        parent,
        path,
        calls: calls.map((call) => ({ id: call.id, diff: diff(call.name) })),
      });
    },
  });
  s.catalogue.addBuiltin(
    taskTool((input, ctx) => service.run(input, ctx)),
    (config, cwd) => taskToolShape(service.profiles({ data: config.data ?? {} }, cwd).profiles),
  );
  return service;
}
