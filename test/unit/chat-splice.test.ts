// Templates the host fills without Lua (src/core/chat/splice.ts): every tag a string variable's
// name, or nothing is filled.
import { describe, expect, it } from 'vitest';
import type { TemplateSegment } from '../../src/core/chat/render.js';
import { spliceVariables } from '../../src/core/chat/splice.js';

const text = (value: string): TemplateSegment => ({ kind: 'text', text: value });
const tag = (code: string): TemplateSegment => ({ kind: 'expression', code, line: 1 });

describe('spliceVariables', () => {
  const variables = { name: 'Ana', empty: '', count: 3, list: ['a'], flag: true };

  it('fills every job when each tag names a string variable', () => {
    expect(
      spliceVariables(
        [
          [text('Hello '), tag(' name '), text('!')],
          [tag('name'), tag('empty'), text(' and more')],
          [text('no tags here')],
        ],
        variables,
      ),
    ).toEqual(['Hello Ana!', 'Ana and more', 'no tags here']);
  });

  it.each([
    ['a statement', { kind: 'code' as const, code: 'x = 1', line: 1 }],
    ['an expression', tag('name:upper()')],
    ['a field', tag('name.len')],
    ['an unknown name', tag('nobody')],
    ['a number', tag('count')],
    ['a list', tag('list')],
    ['a boolean', tag('flag')],
    ['a keyword', tag('nil')],
    ['an inherited name', tag('constructor')],
    ['a literal', tag('"text"')],
  ])('leaves the whole prompt to Lua when a tag is %s', (_, segment) => {
    expect(spliceVariables([[text('Hello '), tag('name')], [segment]], variables)).toBeUndefined();
  });

  it('leaves a keyword to Lua even when the variables hold it', () => {
    expect(spliceVariables([[tag('end')]], { end: 'x' })).toBeUndefined();
  });
});
