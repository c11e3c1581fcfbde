// The property every scanner of chat text keeps (templates, file references): the spans of the
// segments it returns tile the text, in order, with nothing left out and nothing twice.
import { expect } from 'vitest';
import type { Span, TextSegment } from '../../src/core/chat/ast.js';

/** Where a scanned text starts in the chat: 1-based line, 0-based UTF-8 byte column. */
export interface Origin {
  line: number;
  col: number;
}

/**
 * Checks that the spans of `segments`, scanned from `text` starting at `origin`, tile the text in
 * order, and that each text segment holds the slice its span covers. `offsetOf` turns a span
 * position into a string offset (found independently of the scanner under test); `checkOther`
 * checks any other segment against its slice.
 */
export function expectSpansTile<S extends { kind: string; span: Span }>(
  text: string,
  origin: Origin,
  segments: (TextSegment | S)[],
  offsetOf: (text: string, origin: Origin, line: number, col: number) => number,
  checkOther: (slice: string, segment: Exclude<S, TextSegment>) => void,
): void {
  let cursor = 0;
  let rebuilt = '';
  for (const segment of segments) {
    const { startLine, startCol, endLine, endCol } = segment.span;
    if (startCol === undefined || endCol === undefined) throw new Error('span without columns');
    const from = offsetOf(text, origin, startLine, startCol);
    const to = offsetOf(text, origin, endLine, endCol);
    expect(from).toBe(cursor);
    expect(to).toBeGreaterThan(from);
    const slice = text.slice(from, to);
    if (segment.kind === 'text') expect(slice).toBe((segment as TextSegment).value);
    else checkOther(slice, segment as Exclude<S, TextSegment>);
    rebuilt += slice;
    cursor = to;
  }
  expect(cursor).toBe(text.length);
  expect(rebuilt).toBe(text);
}

/**
 * A random text for a scanner's property test, drawn from `random`: fewer than `maxLength` pieces
 * of `alphabet`, and the position it starts at in a chat (line 1–50, column 0–19).
 */
export function randomText(
  random: () => number,
  alphabet: string[],
  maxLength: number,
): { text: string; origin: Origin } {
  const length = Math.floor(random() * maxLength);
  let text = '';
  for (let k = 0; k < length; k++) text += alphabet[Math.floor(random() * alphabet.length)] ?? '';
  const origin = { line: 1 + Math.floor(random() * 50), col: Math.floor(random() * 20) };
  return { text, origin };
}
