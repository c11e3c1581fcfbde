// `:Flemma tool:diff`: a pending `write` or `edit` shown as a diff before the user decides, and
// the decision taken from the diff. The host reads the file and works out what the call would
// leave; Lua draws the two sides (`lua/flemma/review/diff.lua`).
//
// Decisions (docs/tools.md, "Review"):
// - Approving applies exactly what the proposed side shows. When the user edited it, the tool
//   use's input in the chat is rewritten first (`inputFor`: a `write` gets the new content, an
//   `edit` a new `oldText`/`newText`, or becomes a `write` when no edit can express it), so the
//   chat records what really ran; then the call runs as `<M-CR>` would run it. The file is written
//   by the tool itself, under the sandbox's write policy and the call's own path: approving from
//   the diff can change what is written, never where.
// - The file is compared again when approving: if it is no longer what the left side shows, the
//   diff is answered again with the file as it is now and a notice, and nothing runs.
// - A file that changed since the host first counted the call's change (its preview) is flagged
//   when the diff opens.
import type { ChatDocument } from '../../core/chat/ast.js';
import { toolUse } from '../../core/chat/writer.js';
import { inputFor, proposedContent } from '../../core/tools/file-change.js';
import { type EmptyPlaceholder, emptyPlaceholders, toolCallAt } from '../../core/tools/locate.js';
import type { Edit } from '../../core/chat/edits.js';
import type { DocumentState } from '../../editor/documents.js';
import type { DiffAnswer, DiffSpec } from '../../editor/protocol/review.js';
import type { HostBase } from '../base.js';
import type { ToolCatalogue } from './catalogue.js';
import type { ToolCommands } from './commands.js';
import { callPath, FileChanges, fingerprint, readText } from './file-changes.js';
import type { ResultWriter } from './results.js';

export interface DiffReviewDeps {
  base: Pick<HostBase, 'lua' | 'notify' | 'documents'>;
  catalogue: Pick<ToolCatalogue, 'isBuiltin'>;
  commands: Pick<ToolCommands, 'setStatusAt'>;
  /** `<M-CR>` on the call at 0-based `row`, as the buffer's session runs it. */
  runCall(bufnr: number, row: number): Promise<unknown>;
  results: Pick<ResultWriter, 'fresh' | 'applyEdits'>;
  changes: Pick<FileChanges, 'firstSeen'>;
}

const CHANGED_SINCE_PREVIEW = 'The file changed on disk since this call was first previewed.';
const CHANGED_SINCE_DIFF =
  'The file changed on disk while the diff was open: the left side now shows it as it is. ' +
  'Review again, then approve.';

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** The edit that makes the tool use of `slot` the call `next` (its id kept). */
export function rewrittenUse(
  slot: Pick<EmptyPlaceholder, 'id' | 'useSpan'>,
  next: { name: string; input: Record<string, unknown> },
  lines: readonly string[],
): Edit {
  const start = slot.useSpan.startLine - 1;
  const end = slot.useSpan.endLine;
  return {
    start,
    end,
    lines: toolUse({ name: next.name, id: slot.id, input: next.input }),
    expect: lines.slice(start, end),
  };
}

export class DiffReview {
  /** The run of each buffer's last decision, until `settled` takes it. */
  private readonly runs = new Map<number, Promise<void>>();

  constructor(private readonly deps: DiffReviewDeps) {}

  /** The call the buffer's last decision ran is done (at once when it ran none). */
  settled(bufnr: number): Promise<void> {
    const running = this.runs.get(bufnr) ?? Promise.resolve();
    this.runs.delete(bufnr);
    return running;
  }

  /** The diff of the pending call under the cursor (0-based `row`), or a warning. */
  async open(bufnr: number, row: number): Promise<DiffSpec | null> {
    const state = await this.deps.base.documents.attach(bufnr);
    if (state === undefined) return null;
    const found = toolCallAt(state.document, row + 1);
    if (!found.ok) return this.warn(found.error);
    const slot = this.pending(state.document, found.call.id);
    if (slot === undefined) {
      const waiting = emptyPlaceholders(state.document).some((item) => item.id === found.call.id);
      return this.warn(
        waiting
          ? `Only a pending built-in write or edit can be shown as a diff (${found.call.name} cannot)`
          : `Tool ${found.call.id} is not waiting for approval`,
      );
    }
    const file = await this.fileOf(bufnr, slot);
    if (typeof file === 'string') return this.warn(file);
    const proposal = proposedContent(slot.name, file.input, file.before);
    if (proposal === undefined) return this.warn(`Tool ${slot.id} has no complete input yet`);
    if (!proposal.ok)
      return this.warn(`${slot.name} ${slot.id}: ${proposal.reason} in ${file.path}`);
    const first = this.deps.changes.firstSeen(bufnr, slot.id);
    const changed = first !== undefined && first !== fingerprint(file.before);
    return this.spec(bufnr, slot, file, proposal.after, changed ? CHANGED_SINCE_PREVIEW : null);
  }

  /** Approve the call with `content` as what it leaves, if the file still holds `before`. */
  async approve(
    bufnr: number,
    toolId: string,
    before: string,
    content: string,
  ): Promise<DiffAnswer> {
    const checked = await this.check(bufnr, toolId, before, content);
    if ('status' in checked) return checked;
    let state: DocumentState | undefined = checked.state;
    if (checked.next !== undefined) {
      // The user changed the proposal: the chat records the call that leaves what they approved.
      await this.deps.results.applyEdits(bufnr, [
        rewrittenUse(checked.slot, checked.next, state.lines),
      ]);
      state = await this.deps.results.fresh(bufnr);
    }
    const now = state === undefined ? undefined : this.pending(state.document, toolId);
    if (now === undefined) {
      this.warn(`Tool ${toolId} is not waiting for approval`);
      return { status: 'gone' };
    }
    // Not awaited: the answer closes the diff now, the call runs as any other.
    this.run(bufnr, now.fenceLine - 1);
    return { status: 'approved' };
  }

  /**
   * Approve, as `approve` checks it, a call that another chat runs: a `task`'s child waiting in
   * this buffer's file. `decide` hands it the call as the proposed side leaves it (`use`: its
   * new name and input when the user changed the proposal); undefined when the call is not one.
   */
  async approveElsewhere(
    bufnr: number,
    toolId: string,
    proposal: { before: string; content: string },
    decide: (use: { name: string; input: Record<string, unknown> } | undefined) => Promise<boolean>,
  ): Promise<DiffAnswer | undefined> {
    const checked = await this.check(bufnr, toolId, proposal.before, proposal.content);
    if ('status' in checked) return checked;
    return (await decide(checked.next)) ? { status: 'approved' } : undefined;
  }

  /**
   * The pending call `toolId` and what approving `content` makes of it (`next`: its new name and
   * input when the user changed the proposal), or the answer when it cannot be approved.
   */
  private async check(
    bufnr: number,
    toolId: string,
    before: string,
    content: string,
  ): Promise<
    | DiffAnswer
    | {
        state: DocumentState;
        slot: EmptyPlaceholder;
        next: { name: string; input: Record<string, unknown> } | undefined;
      }
  > {
    const state = await this.deps.results.fresh(bufnr);
    const slot = state === undefined ? undefined : this.pending(state.document, toolId);
    if (state === undefined || slot === undefined) {
      this.warn(`Tool ${toolId} is not waiting for approval`);
      return { status: 'gone' };
    }
    const file = await this.fileOf(bufnr, slot);
    if (typeof file === 'string') {
      this.warn(file);
      return { status: 'gone' };
    }
    if ((file.before ?? '') !== before) {
      return {
        status: 'stale',
        diff: this.spec(bufnr, slot, file, content, CHANGED_SINCE_DIFF),
      };
    }
    const planned = proposedContent(slot.name, file.input, file.before);
    const same = planned?.ok === true && planned.after === content;
    return {
      state,
      slot,
      next: same ? undefined : inputFor(slot.name, file.input, file.before, content),
    };
  }

  /** Reject the call, with the user's reason when they gave one. */
  async reject(bufnr: number, toolId: string, reason: string | undefined): Promise<DiffAnswer> {
    const state = await this.deps.results.fresh(bufnr);
    const slot = state === undefined ? undefined : this.pending(state.document, toolId);
    if (slot === undefined) {
      this.warn(`Tool ${toolId} is not waiting for approval`);
      return { status: 'gone' };
    }
    const message = reason === undefined || reason.trim() === '' ? undefined : reason;
    await this.deps.commands.setStatusAt(bufnr, slot.fenceLine - 1, 'rejected', message);
    const after = await this.deps.results.fresh(bufnr);
    const header =
      after?.document === undefined ? undefined : this.resultRow(after.document, toolId);
    if (header !== undefined) this.run(bufnr, header);
    return { status: 'rejected' };
  }

  // ---------------------------------------------------------------------------------------------

  /** The empty placeholder of a built-in `write` or `edit` call `id`. */
  private pending(
    document: ChatDocument,
    id: string,
  ): ReturnType<typeof emptyPlaceholders>[0] | undefined {
    const slot = emptyPlaceholders(document).find((item) => item.id === id);
    if (slot === undefined) return undefined;
    return FileChanges.covers(slot.name) && this.deps.catalogue.isBuiltin(slot.name)
      ? slot
      : undefined;
  }

  /** 0-based row of the result header of `id` (a placeholder with a reason is no longer empty). */
  private resultRow(document: ChatDocument, id: string): number | undefined {
    for (const message of document.messages) {
      for (const segment of message.segments) {
        if (segment.kind === 'tool_result' && segment.toolUseId === id) {
          return segment.span.startLine - 1;
        }
      }
    }
    return undefined;
  }

  private async fileOf(
    bufnr: number,
    slot: { id: string; name: string; input: unknown },
  ): Promise<
    | { input: Record<string, unknown>; path: string; abs: string; before: string | undefined }
    | string
  > {
    const input = asRecord(slot.input);
    const path = input?.['path'];
    if (input === undefined || typeof path !== 'string' || path === '') {
      return `Tool ${slot.id} names no file`;
    }
    const facts = await this.deps.base.lua.call('tools.facts', { bufnr });
    const abs = callPath(facts, path);
    const read = await readText(abs, path);
    if (!read.ok) return `Cannot show ${path} as a diff: ${read.error}`;
    return { input, path, abs, before: read.text };
  }

  private spec(
    bufnr: number,
    slot: { id: string; name: string },
    file: { path: string; abs: string; before: string | undefined },
    after: string,
    notice: string | null,
  ): DiffSpec {
    return {
      bufnr,
      tool_id: slot.id,
      name: slot.name,
      path: file.path,
      abs: file.abs,
      exists: file.before !== undefined,
      before: file.before ?? '',
      after,
      notice,
    };
  }

  private run(bufnr: number, row: number): void {
    const running = this.deps.runCall(bufnr, row).then(
      () => undefined,
      (error: unknown) => {
        this.warn(`Cannot run the call: ${error instanceof Error ? error.message : String(error)}`);
      },
    );
    this.runs.set(bufnr, running);
  }

  private warn(message: string): null {
    this.deps.base.notify.warn(message);
    return null;
  }
}
