// Edits of a buffer's rows, each with the text its rows hold now (`expect`), so that an edit the
// user overtook is refused rather than applied (the rules are in edits.ts): applied here as the
// editor applies them, narrowed to the rows that change, and ordered for sending.
import { commonEnds } from '../util/common-ends.js';

/** Replace rows [start, end) (0-based, end exclusive) with `lines` if they still read `expect`. */
export interface Edit {
  start: number;
  end: number;
  lines: string[];
  expect: string[];
}

/**
 * Apply edits in the order given, as the editor does: an edit whose rows do not hold `expect`
 * (or lie past the end) is skipped. Returns new lines; `lines` is not changed.
 */
export function applyEdits(lines: readonly string[], edits: readonly Edit[]): string[] {
  const out = [...lines];
  for (const edit of edits) {
    if (edit.start < 0 || edit.end < edit.start || edit.end > out.length) continue;
    const current = out.slice(edit.start, edit.end);
    if (!sameLines(current, edit.expect)) continue;
    out.splice(edit.start, edit.end - edit.start, ...edit.lines);
  }
  return out;
}

/**
 * The same edit without the rows it leaves as they are at its start and its end, so that only the
 * rows that change are replaced: Neovim moves the extmarks of replaced rows (a preview line, a
 * message mark) to the first of them, and undo restores only what changed. At least one row of
 * `expect` stays, so an insertion still names the row it depends on.
 */
export function narrowEdit(edit: Edit): Edit {
  const { expect, lines } = edit;
  let { head, tail } = commonEnds(expect, lines);
  if (head + tail >= expect.length) {
    // Nothing of `expect` would be left (an insertion, or no change): keep one row of it.
    if (tail > 0) tail--;
    else if (head > 0) head--;
  }
  if (head === 0 && tail === 0) return edit;
  return {
    start: edit.start + head,
    end: edit.end - tail,
    lines: lines.slice(head, lines.length - tail),
    expect: expect.slice(head, expect.length - tail),
  };
}

/** Edits planned against the same lines, ordered so that applying them in turn is correct. */
export function bottomToTop(edits: readonly Edit[]): Edit[] {
  return [...edits].sort((a, b) => b.start - a.start);
}

/** Whether two lists of rows read the same. */
export function sameLines(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((line, index) => line === b[index]);
}
