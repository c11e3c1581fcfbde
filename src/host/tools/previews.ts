// The preview line of each empty placeholder (the call waiting for the user): what the call would
// do, in the tool's own words (`formatPreview`, or Lua's for a Lua tool). Sent to Lua when the
// buffer's placeholders or their previews change, and again for every buffer when the set of tools
// changes (a new tool may bring its own formatter). A pending `write` or `edit` also shows what it
// would change in lines (`+N −M`), which `FileChanges` reads off the drawing path.
import { emptyPlaceholders } from '../../core/tools/locate.js';
import { previewBody, withPreviewDetail } from '../../core/tools/preview.js';
import type { DocumentState } from '../../editor/documents.js';
import type { EditorFacts } from '../../editor/protocol/wire.js';
import type { HostBase } from '../base.js';
import type { ToolCatalogue } from './catalogue.js';
import { FileChanges } from './file-changes.js';

export class Previews {
  private readonly keys = new Map<number, string>();
  /** The line counts of pending file changes (the diff view reads what they first saw). */
  readonly changes: FileChanges;

  constructor(
    private readonly base: Pick<HostBase, 'lua' | 'documents'>,
    private readonly catalogue: Pick<ToolCatalogue, 'registry' | 'originOf' | 'isBuiltin'>,
    /** The editor's facts the host holds of a buffer (pushed by Lua), when it holds them. */
    held?: { facts(bufnr: number): EditorFacts | undefined },
  ) {
    this.changes = new FileChanges(
      (bufnr) => {
        const facts = held?.facts(bufnr);
        return facts === undefined
          ? this.base.lua.call('tools.facts', { bufnr })
          : Promise.resolve(facts);
      },
      (bufnr) => {
        const state = this.base.documents.get(bufnr);
        if (state !== undefined) this.publish(state);
      },
    );
  }

  /** The previews of one buffer, sent when they changed. */
  publish(state: DocumentState): void {
    const slots = emptyPlaceholders(state.document);
    // A tool that says which whole file it writes (a declarative `file_write`) is counted from
    // that; `write` and `edit` only when built in (a tool of the same name from elsewhere means
    // something else).
    const calls = slots.flatMap((slot) => {
      const call = { tool_id: slot.id, name: slot.name, input: slot.input };
      const def = this.catalogue.registry.get(slot.name);
      if (def?.fileChange !== undefined) {
        const input = slot.input;
        const write =
          typeof input === 'object' && input !== null && !Array.isArray(input)
            ? def.fileChange(input as Record<string, unknown>)
            : undefined;
        return write === undefined ? [] : [{ ...call, write }];
      }
      return FileChanges.covers(slot.name) && this.catalogue.isBuiltin(slot.name) ? [call] : [];
    });
    this.changes.refresh(state.bufnr, calls);
    const items = slots.map((slot) => {
      let def = this.catalogue.registry.get(slot.name);
      const call = calls.find((item) => item.tool_id === slot.id);
      const change = call === undefined ? undefined : this.changes.summary(state.bufnr, call);
      if (change !== undefined) def = withPreviewDetail(def, change);
      const item: Record<string, unknown> = {
        row: slot.fenceLine - 1,
        name: slot.name,
        tool_id: slot.id,
      };
      if (this.catalogue.originOf(slot.name) === 'lua') {
        item['lua'] = true;
        item['input'] = slot.input ?? {};
      }
      item['body'] = this.notes.get(state.bufnr)?.get(slot.id) ?? previewBody(def, slot.input, 200);
      return item;
    });
    // The fence lines are part of the key: a block written again (its status changed) is drawn
    // again, wherever Neovim moved the old mark.
    const fences = emptyPlaceholders(state.document).map((slot) => state.lines[slot.fenceLine - 1]);
    const key = JSON.stringify([items, fences]);
    if (this.keys.get(state.bufnr) === key) return;
    this.keys.set(state.bufnr, key);
    this.base.lua.notify('tools.previews', { bufnr: state.bufnr, items });
  }

  /** What a running call says of itself instead of its preview (a `task`'s child), by buffer. */
  private readonly notes = new Map<number, Map<string, string>>();

  /** A running call's line in its placeholder's preview (undefined: its own preview again). */
  note(bufnr: number, toolId: string, text: string | undefined): void {
    this.noteAll(bufnr, [[toolId, text]]);
  }

  /** `note` for several calls of one buffer, drawn once. */
  noteAll(bufnr: number, lines: readonly (readonly [string, string | undefined])[]): void {
    const notes = this.notes.get(bufnr) ?? new Map<string, string>();
    const changed = lines.filter(([toolId, text]) => notes.get(toolId) !== text);
    if (changed.length === 0) return;
    for (const [toolId, text] of changed) {
      if (text === undefined) notes.delete(toolId);
      else notes.set(toolId, text);
    }
    if (notes.size === 0) this.notes.delete(bufnr);
    else this.notes.set(bufnr, notes);
    const state = this.base.documents.get(bufnr);
    if (state !== undefined) this.publish(state);
  }

  /** The set of tools changed: every buffer's previews again. */
  refresh(): void {
    this.keys.clear();
    for (const state of this.base.documents.all()) this.publish(state);
  }

  forget(bufnr: number): void {
    this.keys.delete(bufnr);
    this.notes.delete(bufnr);
    this.changes.forget(bufnr);
  }
}
