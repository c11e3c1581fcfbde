// What a pending file-changing call (`write`, `edit`) would do to its file, in lines: the `+N −M`
// its preview shows before the user approves it.
//
// Decisions:
// - `write` leaves exactly its `content`; `edit` leaves the file with its one `oldText` replaced,
//   the same splice the tool itself makes (edit.ts). An edit that would not apply (no match, several
//   matches, nothing changed, no file) has no counts: the preview says why instead, since that is
//   what the call would answer.
// - A file that does not exist counts as empty (a `write` creating it adds all its lines).
// - Lines are what a diff shows: the text split on `\n`, a final line break ending the last line
//   rather than starting an empty one. The counts come from a longest common subsequence of the
//   lines between the shared head and tail, so a moved block counts as removed and added, as in
//   `git diff --stat`. A middle too large to compare cheaply counts as all removed and all added.

import { countOccurrences } from './definitions/edit.js';
import { commonEnds } from '../util/common-ends.js';

/** What the call would leave, or why it would not apply. */
export type Proposal = { ok: true; after: string } | { ok: false; reason: string };

/** Lines added and removed. */
export interface LineCounts {
  added: number;
  removed: number;
}

/** The names of the built-in tools whose previews carry line counts. */
export const FILE_CHANGING_TOOLS: ReadonlySet<string> = new Set(['write', 'edit']);

/**
 * What `name` called with `input` would leave in a file that holds `before` now (`undefined`:
 * it does not exist). Undefined for a tool that does not change files or an input that is not
 * complete yet.
 */
export function proposedContent(
  name: string,
  input: Record<string, unknown>,
  before: string | undefined,
): Proposal | undefined {
  if (name === 'write') {
    const content = input['content'];
    return typeof content === 'string' ? { ok: true, after: content } : undefined;
  }
  if (name !== 'edit') return undefined;
  const oldText = input['oldText'];
  const newText = input['newText'];
  if (typeof oldText !== 'string' || typeof newText !== 'string') return undefined;
  if (before === undefined) return { ok: false, reason: 'file not found' };
  const count = countOccurrences(before, oldText);
  if (count === 0) return { ok: false, reason: 'text not found' };
  if (count > 1) return { ok: false, reason: `text found ${count} times` };
  const at = before.indexOf(oldText);
  const after = before.slice(0, at) + newText + before.slice(at + oldText.length);
  if (after === before) return { ok: false, reason: 'no change' };
  return { ok: true, after };
}

/** The lines of `text` as a diff counts them. */
export function linesOf(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Above this many cells of comparison, the middle counts as replaced whole. */
const MAX_CELLS = 4_000_000;

/** Lines added and removed going from `before` to `after`. */
export function lineCounts(before: string, after: string): LineCounts {
  const a = linesOf(before);
  const b = linesOf(after);
  const { head, tail } = commonEnds(a, b);
  const left = a.slice(head, a.length - tail);
  const right = b.slice(head, b.length - tail);
  if (left.length === 0 || right.length === 0 || left.length * right.length > MAX_CELLS) {
    return { added: right.length, removed: left.length };
  }
  // Longest common subsequence, one row at a time.
  let previous = new Uint32Array(right.length + 1);
  let current = new Uint32Array(right.length + 1);
  for (const line of left) {
    for (let j = 1; j <= right.length; j++) {
      current[j] =
        line === right[j - 1]
          ? (previous[j - 1] ?? 0) + 1
          : Math.max(previous[j] ?? 0, current[j - 1] ?? 0);
    }
    [previous, current] = [current, previous];
  }
  const common = previous[right.length] ?? 0;
  return { added: right.length - common, removed: left.length - common };
}

/** `+N −M`, or the reason the call would not apply. */
export function changeSummary(proposal: Proposal, before: string | undefined): string {
  if (!proposal.ok) return `(${proposal.reason})`;
  const { added, removed } = lineCounts(before ?? '', proposal.after);
  return `+${added} −${removed}`;
}

/** `text` in lines that keep their line break, so joining them gives `text` back. */
function piecesOf(text: string): string[] {
  return text === '' ? [] : text.split(/(?<=\n)/);
}

/**
 * The input that makes `name` leave exactly `after` in a file holding `before` (the user edited
 * the proposed side of a diff). A `write` gets `after` as its content. An `edit` keeps being an
 * edit: its `oldText` is the changed lines of `before` (widened by a line at a time until they
 * occur once) and its `newText` what replaces them. When no such edit exists (an empty or missing
 * file, or a change that no unique text can anchor), the call becomes a `write` of `after`.
 * Other fields (the `label`, the `path`) are kept.
 */
export function inputFor(
  name: string,
  input: Record<string, unknown>,
  before: string | undefined,
  after: string,
): { name: string; input: Record<string, unknown> } {
  const asWrite = {
    name: 'write',
    input: {
      ...(typeof input['label'] === 'string' ? { label: input['label'] } : {}),
      path: input['path'],
      content: after,
    },
  };
  if (name === 'write') return { name, input: { ...input, content: after } };
  if (before === undefined || before === '') return asWrite;
  const a = piecesOf(before);
  const b = piecesOf(after);
  let { head, tail } = commonEnds(a, b);
  for (;;) {
    const oldText = a.slice(head, a.length - tail).join('');
    const newText = b.slice(head, b.length - tail).join('');
    if (oldText !== '' && countOccurrences(before, oldText) === 1) {
      const next = { ...input, oldText, newText };
      const check = proposedContent('edit', next, before);
      return check?.ok === true && check.after === after ? { name, input: next } : asWrite;
    }
    if (head > 0) head--;
    else if (tail > 0) tail--;
    else return asWrite;
  }
}
