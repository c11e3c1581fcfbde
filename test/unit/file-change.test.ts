import { describe, expect, it } from 'vitest';
import { changeSummary, lineCounts, proposedContent } from '../../src/core/tools/file-change.js';

describe('file-change line counts', () => {
  it('counts lines added and removed around a shared head and tail', () => {
    expect(lineCounts('a\nb\nc\n', 'a\nB\nc\n')).toEqual({ added: 1, removed: 1 });
    expect(lineCounts('', 'x\ny\n')).toEqual({ added: 2, removed: 0 });
    expect(lineCounts('a\nb\nc\nd\n', 'b\nc\na\nd\n')).toEqual({ added: 1, removed: 1 });
    expect(lineCounts('same', 'same')).toEqual({ added: 0, removed: 0 });
  });

  it('applies an edit as the tool would, or says why it would not apply', () => {
    const edit = (oldText: string, newText: string) => ({ path: 'f', oldText, newText });
    expect(proposedContent('edit', edit('b', 'B'), 'a b c')).toEqual({ ok: true, after: 'a B c' });
    expect(proposedContent('edit', edit('$&', 'x'), 'a $& c')).toEqual({
      ok: true,
      after: 'a x c',
    });
    expect(proposedContent('edit', edit('a', 'b'), 'aa')).toEqual({
      ok: false,
      reason: 'text found 2 times',
    });
    expect(proposedContent('edit', edit('z', 'b'), undefined)).toEqual({
      ok: false,
      reason: 'file not found',
    });
    expect(proposedContent('write', { path: 'f' }, '')).toBeUndefined();
    expect(changeSummary({ ok: true, after: 'x\n' }, undefined)).toBe('+1 −0');
  });
});
