import { describe, expect, it } from 'vitest';
import {
  changeSummary,
  inputFor,
  lineCounts,
  proposedContent,
} from '../../src/core/tools/file-change.js';

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

describe('the input that produces what the user approved', () => {
  const before = 'alpha\nbeta\ngamma\nbeta\n';
  it('keeps an edit an edit, anchored on unique text', () => {
    const edit = { label: 'l', path: 'f', oldText: 'alpha\n', newText: 'ALPHA\n' };
    const after = 'alpha\nbeta\ngamma\nBETA\n';
    const next = inputFor('edit', edit, before, after);
    expect(next.name).toBe('edit');
    expect(next.input).toMatchObject({ label: 'l', path: 'f' });
    expect(proposedContent('edit', next.input, before)).toEqual({ ok: true, after });
    // The changed line alone (`beta`) is not unique: the old text grows to include `gamma`.
    expect(next.input['oldText']).toBe('gamma\nbeta\n');
  });

  it('becomes a write when no edit can express it', () => {
    expect(
      inputFor('edit', { label: 'l', path: 'f', oldText: 'x', newText: 'y' }, '', 'new\n'),
    ).toEqual({ name: 'write', input: { label: 'l', path: 'f', content: 'new\n' } });
    expect(inputFor('write', { path: 'f', content: 'a' }, undefined, 'b')).toEqual({
      name: 'write',
      input: { path: 'f', content: 'b' },
    });
  });
});
