import { describe, expect, it } from 'vitest';
import { cellWidth, fitPreview, previewBody } from '../../src/core/tools/preview.js';
import {
  calculatorAsyncTool,
  calculatorTool,
} from '../../src/core/tools/definitions/calculator.js';
import type { Preview, ToolDefinition } from '../../src/core/tools/registry.js';

const tool = (formatPreview?: ToolDefinition['formatPreview']): ToolDefinition => {
  const def: ToolDefinition = {
    name: 'demo',
    description: 'demo',
    inputSchema: { type: 'object' },
  };
  if (formatPreview !== undefined) def.formatPreview = formatPreview;
  return def;
};

const returning = (preview: Preview): ToolDefinition => tool(() => preview);

describe('previewBody with a formatter', () => {
  it('uses a plain string as the whole body', () => {
    expect(previewBody(returning('$ make test'), {}, 80)).toBe('$ make test');
  });

  it('joins detail and label as `<detail>  # <label>`', () => {
    expect(previewBody(returning({ detail: '$ make test', label: 'running tests' }), {}, 80)).toBe(
      '$ make test  # running tests',
    );
  });

  it('joins a detail list with two spaces, dropping empty entries', () => {
    const def = returning({ detail: ['src/config.lua', '', '+0,50'], label: 'reading config' });
    expect(previewBody(def, {}, 80)).toBe('src/config.lua  +0,50  # reading config');
  });

  it('shows the detail alone or the label alone', () => {
    expect(previewBody(returning({ detail: ['output.txt', '(2.3KB)'] }), {}, 80)).toBe(
      'output.txt  (2.3KB)',
    );
    expect(previewBody(returning({ label: 'saving log' }), {}, 80)).toBe('saving log');
    expect(previewBody(returning({ detail: [], label: '' }), {}, 80)).toBe('');
  });

  it('passes the input and the room to the formatter', () => {
    const seen: unknown[] = [];
    const def = tool((input, maxLength) => {
      seen.push(input, maxLength);
      return 'x';
    });
    previewBody(def, { a: 1 }, 42.7);
    expect(seen).toEqual([{ a: 1 }, 42]);
  });

  it('falls back to the generic body when the formatter throws or answers nonsense', () => {
    const throwing = tool(() => {
      throw new Error('boom');
    });
    expect(previewBody(throwing, { query: 'x', label: 'look' }, 80)).toBe('query="x"  # look');
    const nonsense = tool(() => 42 as unknown as Preview);
    expect(previewBody(nonsense, { n: 1 }, 80)).toBe('n=1');
    const badLabel = tool(() => ({ detail: 'd', label: 3 }) as unknown as Preview);
    expect(previewBody(badLabel, { n: 1 }, 80)).toBe('n=1');
  });

  it('cuts a long body to the room with `…`', () => {
    expect(previewBody(returning('abcdefghij'), {}, 5)).toBe('abcd…');
    expect(previewBody(returning('abcde'), {}, 5)).toBe('abcde');
  });
});

describe('previewBody, generic', () => {
  it('lists scalars as key="value", sorted, numbers and booleans bare, null as null', () => {
    const input = { zeta: 'z', alpha: 2, beta: true, gamma: null, delta: -1.5 };
    expect(previewBody(undefined, input, 200)).toBe(
      'alpha=2, beta=true, delta=-1.5, gamma=null, zeta="z"',
    );
  });

  it('puts tables after scalars: objects by their first two keys, arrays by count', () => {
    const input = {
      opts: { b: 1, a: 2 },
      big: { d: 1, c: 2, b: 3, a: 4 },
      empty: {},
      list: [1, 2, 3],
      one: ['x'],
      none: [],
      name: 'n',
    };
    expect(previewBody(undefined, input, 200)).toBe(
      'name="n", big={a, b, +2 more}, empty={}, list=[3 items], none=[0 items], one=[1 item], opts={a, b}',
    );
  });

  it('uses a string label as the label, not as a listed key', () => {
    expect(previewBody(undefined, { path: 'a.txt', label: 'reading' }, 200)).toBe(
      'path="a.txt"  # reading',
    );
    expect(previewBody(undefined, { label: 'only a label' }, 200)).toBe('only a label');
    // A label that is not a string is an ordinary value.
    expect(previewBody(undefined, { label: 7, x: 'y' }, 200)).toBe('label=7, x="y"');
  });

  it('escapes newlines, tabs and quotes so the body is one line', () => {
    const body = previewBody(undefined, { cmd: 'a\nb\tc "q"', 'k\ney': 1, label: 'l\n2' }, 200);
    expect(body).toBe('cmd="a\\nb\\tc \\"q\\"", k\\ney=1  # l\\n2');
    expect(body).not.toMatch(/[\n\t]/);
  });

  it('is empty for an empty or non-object input', () => {
    expect(previewBody(undefined, {}, 80)).toBe('');
    expect(previewBody(undefined, undefined, 80)).toBe('');
    expect(previewBody(undefined, ['a'], 80)).toBe('');
    expect(previewBody(tool(), 'text', 80)).toBe('');
  });

  it('sorts keys in code-unit order', () => {
    expect(previewBody(undefined, { b: 1, B: 2, a: 3, _: 4 }, 80)).toBe('B=2, _=4, a=3, b=1');
  });

  it('stays small and fitted for a huge value', () => {
    const body = previewBody(undefined, { content: 'x'.repeat(5_000_000), path: 'p' }, 60);
    expect(body.endsWith('…')).toBe(true);
    expect(cellWidth(body)).toBe(60);
    expect(body.startsWith('path="p", content="xxx')).toBe(false); // scalars sorted: content first
    expect(body.startsWith('content="xxx')).toBe(true);
  });

  it('does not split a surrogate pair when a long value is clipped', () => {
    const body = previewBody(undefined, { s: '😀'.repeat(100) }, 20);
    expect(body).not.toMatch(/\\ud83d/i);
    expect(cellWidth(body)).toBeLessThanOrEqual(20);
  });

  it('uses no limit for a NaN or infinite room', () => {
    const long = 'y'.repeat(500);
    expect(previewBody(undefined, { v: long }, Infinity)).toBe(`v="${long}"`);
    expect(previewBody(undefined, { v: long }, NaN)).toBe(`v="${long}"`);
  });
});

describe('fitPreview', () => {
  it('joins name and body, or shows the name alone for an empty body', () => {
    expect(fitPreview('bash', '$ ls', 80)).toBe('bash: $ ls');
    expect(fitPreview('bash', '', 80)).toBe('bash');
  });

  it('cuts to the width with a trailing …', () => {
    const line = fitPreview('read', 'src/config.lua  +0,50  # reading config', 20);
    expect(line).toBe('read: src/config.lu…');
    expect(cellWidth(line)).toBe(20);
    expect(fitPreview('read', 'abc', 9)).toBe('read: abc');
    expect(fitPreview('read', 'abcd', 9)).toBe('read: ab…');
  });

  it('counts East Asian wide characters as two cells', () => {
    expect(cellWidth('日本語')).toBe(6);
    expect(cellWidth('e\u0301')).toBe(1);
    expect(cellWidth('😀a')).toBe(3);
    // `t: ` is 3 cells; 7 cells leave 3 for the body before `…`: one wide char fits, not two.
    expect(fitPreview('t', '日本語', 7)).toBe('t: 日…');
    expect(cellWidth(fitPreview('t', '日本語', 8))).toBe(8);
    expect(fitPreview('t', '日本語', 9)).toBe('t: 日本語');
  });

  it('never returns more cells than asked', () => {
    for (let width = 0; width < 30; width++) {
      const line = fitPreview('grep', '/x/  src  *.ts  # 検索 😀', width);
      expect(cellWidth(line)).toBeLessThanOrEqual(width);
    }
    expect(fitPreview('x', 'y', 0)).toBe('');
    expect(fitPreview('x', 'y', 1)).toBe('…');
  });

  it('shows line breaks as ↵ and tabs as a space', () => {
    expect(fitPreview('t', 'a\nb\r\nc\td', 80)).toBe('t: a↵b↵c d');
  });
});

describe('calculator previews', () => {
  it('calculator shows the expression', () => {
    expect(previewBody(calculatorTool, { expression: '2 + 2' }, 80)).toBe('2 + 2');
    expect(
      fitPreview('calculator', previewBody(calculatorTool, { expression: '2 + 2' }, 80), 80),
    ).toBe('calculator: 2 + 2');
  });

  it('calculator_async shows the expression and the delay (default 1000ms)', () => {
    expect(previewBody(calculatorAsyncTool, { expression: 'sqrt(16)', delay: 500 }, 80)).toBe(
      'sqrt(16)  # 500ms',
    );
    expect(previewBody(calculatorAsyncTool, { expression: 'sqrt(16)' }, 80)).toBe(
      'sqrt(16)  # 1000ms',
    );
    expect(previewBody(calculatorAsyncTool, { expression: '1', delay: null }, 80)).toBe(
      '1  # 1000ms',
    );
  });
});
