// The "Approval needed" message of a buffer whose loop waits for the user, and taking it back
// once nothing it named still waits: the calls were approved, rejected, run (`<M-CR>`) or their
// placeholders deleted. Checked after each parse of a buffer that has such a message on screen.
import type { ChatDocument } from '../core/chat/ast.js';
import { type ToolBlock, classifyToolBlocks } from '../core/chat/edits.js';
import type { DocumentState } from '../editor/documents.js';
import type { LuaBridge } from '../editor/lua.js';
import type { Notifier } from '../core/util/notify.js';
import { notifier, retractNotice } from './notifier.js';

/** The blocks that wait for the user: empty pending ones, and approved ones the user wrote into. */
export function waitingBlocks(document: ChatDocument): ToolBlock[] {
  const groups = classifyToolBlocks(document);
  return [...groups.pendingEmpty, ...groups.approvedWithContent].sort(
    (a, b) => a.toolUseLine - b.toolUseLine,
  );
}

/**
 * The message for the blocks that wait. Short, so that it fits an 80-column command line without
 * a hit-enter prompt, unless a call waits for a reason the user must read (`reasonOf`: its undo
 * record cannot be written), which follows on a line of its own.
 */
export function approvalMessage(
  waiting: readonly Pick<ToolBlock, 'name' | 'id'>[],
  reasonOf: (id: string) => string | undefined = () => undefined,
): string {
  const names = [...new Set(waiting.map((block) => block.name))].join(', ');
  const head =
    waiting.length === 1
      ? `Approval needed: ${names} (<M-CR> runs it)`
      : `Approval needed: ${String(waiting.length)} calls (${names})`;
  const reasons = waiting.flatMap((block) => {
    const reason = reasonOf(block.id);
    return reason === undefined ? [] : [`${block.name} (${block.id}): ${reason}`];
  });
  return [head, ...reasons].join('\n');
}

export class ApprovalNotices {
  /** Buffer → the ids its message named that may still wait. */
  private readonly shown = new Map<number, Set<string>>();

  private readonly notify: Notifier;

  constructor(private readonly lua: Pick<LuaBridge, 'notify'>) {
    this.notify = notifier({ lua });
  }

  private static key(bufnr: number): string {
    return `approval:${String(bufnr)}`;
  }

  /** Say what waits in the buffer (it replaces the buffer's earlier message). */
  show(
    bufnr: number,
    waiting: readonly ToolBlock[],
    reasonOf?: (id: string) => string | undefined,
  ): void {
    if (waiting.length === 0) return;
    this.shown.set(bufnr, new Set(waiting.map((block) => block.id)));
    const message = approvalMessage(waiting, reasonOf);
    this.notify[message.includes('\n') ? 'warn' : 'info'](message, {
      key: ApprovalNotices.key(bufnr),
    });
  }

  /** The buffer was parsed: when none of the calls the message named still waits, it goes. */
  parsed(state: DocumentState): void {
    const ids = this.shown.get(state.bufnr);
    if (ids === undefined) return;
    if (waitingBlocks(state.document).some((block) => ids.has(block.id))) return;
    this.shown.delete(state.bufnr);
    retractNotice(this.lua, ApprovalNotices.key(state.bufnr));
  }

  forget(bufnr: number): void {
    this.shown.delete(bufnr);
  }
}
