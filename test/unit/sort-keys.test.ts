// Request bodies go out with every object's keys in sorted order (equal requests, equal bytes).
import { describe, expect, it } from 'vitest';
import { sortKeys, sortedCopy, stableJson } from '../../src/core/provider/types.js';

describe('sortKeys', () => {
  it('orders the keys of every object, at every depth and inside arrays', () => {
    const value = { b: 1, a: { d: [{ z: 1, y: 2 }, 3], c: null } };
    expect(JSON.stringify(sortKeys(value))).toBe('{"a":{"c":null,"d":[{"y":2,"z":1},3]},"b":1}');
    expect(stableJson(value)).toBe(JSON.stringify(sortKeys(value)));
  });

  it('shares what is in order already and leaves its input alone', () => {
    const ordered = { id: 'x', input: { label: 'l', path: 'p' }, name: 'read' };
    const list = [ordered, 'text'];
    expect(sortKeys(ordered)).toBe(ordered);
    expect(sortKeys(list)).toBe(list);
    const mixed = { type: 'tool_use', input: ordered.input, id: 'x' };
    const sorted = sortKeys(mixed) as Record<string, unknown>;
    expect(sorted).not.toBe(mixed);
    expect(Object.keys(sorted)).toEqual(['id', 'input', 'type']);
    expect(sorted['input']).toBe(ordered.input);
    expect(Object.keys(mixed)).toEqual(['type', 'input', 'id']);
    // An ordered parent of an unordered child is copied, the siblings shared.
    const parent = { a: ordered, b: { y: 1, x: 2 } };
    const out = sortKeys(parent) as Record<string, unknown>;
    expect(out).not.toBe(parent);
    expect(out['a']).toBe(ordered);
    expect(Object.keys(out['b'] as object)).toEqual(['x', 'y']);
    expect(Object.keys(parent.b)).toEqual(['y', 'x']);
  });

  it('sortedCopy gives the same order in new objects only', () => {
    const ordered = { a: [{ b: 1 }], c: 2 };
    const copy = sortedCopy(ordered) as typeof ordered;
    expect(copy).toEqual(ordered);
    expect(copy).not.toBe(ordered);
    expect(copy.a).not.toBe(ordered.a);
    expect(copy.a[0]).not.toBe(ordered.a[0]);
  });
});
