// The preview line of each empty placeholder (the call waiting for the user): what the call would
// do, in the tool's own words (`formatPreview`, or Lua's for a Lua tool). Sent to Lua when the
// buffer's placeholders or their previews change, and again for every buffer when the set of tools
// changes (a new tool may bring its own formatter).
import { emptyPlaceholders } from '../../core/tools/locate.js';
import { previewBody } from '../../core/tools/preview.js';
import type { DocumentState } from '../../editor/documents.js';
import type { HostBase } from '../base.js';
import type { ToolCatalogue } from './catalogue.js';

export class Previews {
  private readonly keys = new Map<number, string>();

  constructor(
    private readonly base: Pick<HostBase, 'lua' | 'documents'>,
    private readonly catalogue: Pick<ToolCatalogue, 'registry' | 'originOf'>,
  ) {}

  /** The previews of one buffer, sent when they changed. */
  publish(state: DocumentState): void {
    const items = emptyPlaceholders(state.document).map((slot) => {
      const def = this.catalogue.registry.get(slot.name);
      const item: Record<string, unknown> = {
        row: slot.fenceLine - 1,
        name: slot.name,
        tool_id: slot.id,
      };
      if (this.catalogue.originOf(slot.name) === 'lua') {
        item['lua'] = true;
        item['input'] = slot.input ?? {};
      }
      item['body'] = previewBody(def, slot.input, 200);
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

  /** The set of tools changed: every buffer's previews again. */
  refresh(): void {
    this.keys.clear();
    for (const state of this.base.documents.all()) this.publish(state);
  }

  forget(bufnr: number): void {
    this.keys.delete(bufnr);
  }
}
