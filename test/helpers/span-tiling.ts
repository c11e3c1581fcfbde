// The property every scanner of chat text keeps (templates, file references): the spans of the
// segments it returns tile the text, in order, with nothing left out and nothing twice.
import { expect } from 'vitest';
import type { Span } from '../../src/core/chat/ast.js';

/**
 * Checks that the spans of `segments` tile `text` in order. `offsetOf` turns a span position
 * into a string offset (found independently of the scanner under test); `checkSlice` checks
 * each segment against the slice of the text its span covers.
 */
export function expectSpansTile<S extends { span: Span }>(
  text: string,
  segments: S[],
  offsetOf: (line: number, col: number) => number,
  checkSlice: (slice: string, segment: S) => void,
): void {
  let cursor = 0;
  let rebuilt = '';
  for (const segment of segments) {
    const { startLine, startCol, endLine, endCol } = segment.span;
    if (startCol === undefined || endCol === undefined) throw new Error('span without columns');
    const from = offsetOf(startLine, startCol);
    const to = offsetOf(endLine, endCol);
    expect(from).toBe(cursor);
    expect(to).toBeGreaterThan(from);
    const slice = text.slice(from, to);
    checkSlice(slice, segment);
    rebuilt += slice;
    cursor = to;
  }
  expect(cursor).toBe(text.length);
  expect(rebuilt).toBe(text);
}
