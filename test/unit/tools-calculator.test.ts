import { describe, expect, it, vi } from 'vitest';
import {
  ExpressionError,
  calculate,
  calculatorAsyncTool,
  calculatorTool,
  evaluateExpression,
  formatNumber,
} from '../../src/core/tools/definitions/calculator.js';
import { createExecutionContext } from '../../src/core/tools/context.js';
import type { ToolContext, ToolDefinition } from '../../src/core/tools/registry.js';
import { mulberry32 as rng } from '../helpers/random.js';

const ctx = (signal: AbortSignal = new AbortController().signal): ToolContext =>
  createExecutionContext({ bufnr: 1, cwd: '/tmp', timeout: 30, toolId: 't1', signal }, '/root');

const run = (def: ToolDefinition, input: unknown, c: ToolContext = ctx()) => {
  if (def.execute === undefined) throw new Error('no execute');
  return def.execute(input, c);
};

function errorOf(expression: string): ExpressionError {
  try {
    evaluateExpression(expression);
  } catch (err) {
    if (err instanceof ExpressionError) return err;
    throw err;
  }
  throw new Error(`no error for ${expression}`);
}

describe('evaluateExpression', () => {
  const table: [string, number][] = [
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3],
    ['100 / 10 / 5', 2],
    ['2 ** 3 ** 2', 512],
    ['(2 ** 3) ** 2', 64],
    ['-2 ** 2', -4],
    ['(-2) ** 2', 4],
    ['2 ** -1', 0.5],
    ['2 ** -1 ** 2', 0.5],
    ['-3', -3],
    ['--3', 3],
    ['+3', 3],
    ['4 - -2', 6],
    ['-(2 + 3) * 2', -10],
    ['2 * -3', -6],
    ['7 % 3', 1],
    ['-7 % 3', -1],
    ['7.5 % 2', 1.5],
    ['1 + 2 % 3 * 4', 9],
    ['0.1 + 0.2', 0.1 + 0.2],
    ['.5 + 1.', 1.5],
    ['1e3', 1000],
    ['2.5E-2', 0.025],
    ['1e+2 * 2', 200],
    ['sqrt(16)', 4],
    ['abs(-3.5)', 3.5],
    ['floor(-2.5)', -3],
    ['ceil(2.1)', 3],
    ['round(2.5)', 3],
    ['round(-2.5)', -3],
    ['min(3, 1, 2)', 1],
    ['max(3, 1, 2, -8)', 3],
    ['pow(2, 10)', 1024],
    ['log(e)', 1],
    ['exp(0)', 1],
    ['sin(0)', 0],
    ['cos(0)', 1],
    ['tan(0)', 0],
    ['pi', Math.PI],
    ['2 * pi', 2 * Math.PI],
    ['sqrt(max(9, 4) * 4) + min(1, -1)', 5],
    ['  ( ( 1 ) )  ', 1],
    ['-0', 0],
  ];
  it.each(table)('%s = %d', (expression, expected) => {
    expect(evaluateExpression(expression)).toBe(expected);
  });

  const errors: [string, 'syntax' | 'evaluation', string][] = [
    ['', 'syntax', 'Empty expression at position 1'],
    ['1 +', 'syntax', 'Unexpected end of expression at position 4'],
    ['1 + * 2', 'syntax', "Unexpected '*' at position 5"],
    [
      '(1 + 2',
      'syntax',
      "Missing ')' for the '(' at position 1; found end of expression at position 7",
    ],
    ['1 + 2)', 'syntax', "Unexpected ')' at position 6"],
    ['2 3', 'syntax', "Unexpected '3' (missing operator?) at position 3"],
    ['2 (3)', 'syntax', "Unexpected '(' (missing operator?) at position 3"],
    ['1 + foo', 'syntax', "Unknown identifier 'foo'"],
    ['1 + 2 $ 3', 'syntax', "Unexpected character '$' at position 7"],
    ['2 ^ 3', 'syntax', "Unexpected '^' (use '**' for powers) at position 3"],
    ['1.2.3', 'syntax', "Malformed number '1.2.' at position 1"],
    ['sqrt', 'syntax', "Function 'sqrt' must be called, e.g. sqrt(x) at position 1"],
    ['pi(2)', 'syntax', "'pi' is a constant, not a function at position 1"],
    ['pow(2)', 'syntax', "Function 'pow' takes 2 arguments, got 1 at position 1"],
    ['max()', 'syntax', "Function 'max' takes at least 1 argument, got 0 at position 1"],
    ['sqrt(1, 2)', 'syntax', "Function 'sqrt' takes 1 argument, got 2 at position 1"],
    ['sqrt(1', 'syntax', "Missing ')' for the call to 'sqrt' at position 1"],
    ['1 / 0', 'evaluation', 'Division by zero at position 3'],
    ['1 + 5 % (2 - 2)', 'evaluation', 'Modulo by zero at position 7'],
    ['1 / (1 - 1) + ', 'syntax', 'Unexpected end of expression'],
    ['sqrt(-1)', 'evaluation', 'The result of sqrt(-1) is not a finite number at position 1'],
    ['log(0)', 'evaluation', 'The result of log(0) is not a finite number'],
    ['10 ** 400', 'evaluation', "The result of '**' is not a finite number at position 4"],
    ['1e400', 'evaluation', 'The number is not a finite number at position 1'],
    ['constructor', 'syntax', "Unknown identifier 'constructor'"],
    ['toString(1)', 'syntax', "Unknown identifier 'toString'"],
    ['__proto__', 'syntax', "Unknown identifier '__proto__'"],
  ];
  it.each(errors)('%j fails (%s): %s', (expression, kind, message) => {
    const err = errorOf(expression);
    expect(err.kind).toBe(kind);
    expect(err.message).toContain(message);
  });

  it('reports deep nesting as an error instead of overflowing the stack', () => {
    expect(errorOf('('.repeat(1000) + '1' + ')'.repeat(1000)).message).toMatch(/nested too deeply/);
    expect(errorOf('-'.repeat(1000) + '1').message).toMatch(/nested too deeply/);
    expect(errorOf('2' + '**2'.repeat(1000)).message).toMatch(/nested too deeply/);
    expect(evaluateExpression('('.repeat(100) + '1' + ')'.repeat(100))).toBe(1);
    expect(errorOf('1+'.repeat(6000) + '1').message).toMatch(/longer than 10000 characters/);
  });
});

describe('formatNumber', () => {
  it.each([
    [4, '4'],
    [-12, '-12'],
    [-0, '0'],
    [0.1 + 0.2, '0.3'],
    [1 / 3, '0.333333333333333'],
    [2.5, '2.5'],
    [1e21, '1e+21'],
    [1.5e-7, '1.5e-7'],
    [123456789012, '123456789012'],
  ])('%d → %s', (value, text) => {
    expect(formatNumber(value)).toBe(text);
  });
});

// Random expressions: a tree is generated, rendered with only the parentheses the precedence
// rules require (plus some random redundant ones), and evaluated directly as a tree. The parser
// must read the text back to the same value — which checks precedence and associativity.
type T =
  | { k: 'n'; v: number; text: string }
  | { k: 'neg'; a: T }
  | { k: 'op'; op: '+' | '-' | '*' | '/' | '%' | '**'; a: T; b: T }
  | { k: 'fn'; name: 'sqrt' | 'abs' | 'max' | 'min' | 'floor'; args: T[] };

function gen(rand: () => number, depth: number): T {
  const r = rand();
  if (depth <= 0 || r < 0.25) {
    const kind = rand();
    if (kind < 0.6) {
      const v = Math.floor(rand() * 10);
      return { k: 'n', v, text: String(v) };
    }
    if (kind < 0.9) {
      const v = Math.floor(rand() * 100) / 4;
      return { k: 'n', v, text: String(v) };
    }
    const m = Math.floor(rand() * 9) + 1;
    return { k: 'n', v: m * 10, text: `${m}e1` };
  }
  if (r < 0.35) return { k: 'neg', a: gen(rand, depth - 1) };
  if (r < 0.45) {
    const names = ['sqrt', 'abs', 'max', 'min', 'floor'] as const;
    const name = names[Math.floor(rand() * names.length)] ?? 'abs';
    const count = name === 'max' || name === 'min' ? 1 + Math.floor(rand() * 3) : 1;
    return { k: 'fn', name, args: Array.from({ length: count }, () => gen(rand, depth - 1)) };
  }
  const ops = ['+', '-', '*', '/', '%', '**', '+', '-', '*'] as const;
  const op = ops[Math.floor(rand() * ops.length)] ?? '+';
  if (op === '**') {
    // Keep powers small: a modest base and a small exponent.
    return { k: 'op', op, a: gen(rand, Math.min(depth - 1, 1)), b: gen(rand, 0) };
  }
  return { k: 'op', op, a: gen(rand, depth - 1), b: gen(rand, depth - 1) };
}

const PREC = { '+': 1, '-': 1, '*': 2, '/': 2, '%': 2 } as const;
function prec(t: T): number {
  if (t.k === 'neg') return 3;
  if (t.k === 'op') return t.op === '**' ? 4 : PREC[t.op];
  return 5;
}

function render(t: T, rand: () => number): string {
  const wrap = (s: string, needed: boolean): string => (needed || rand() < 0.05 ? `(${s})` : s);
  switch (t.k) {
    case 'n':
      return t.text;
    case 'fn':
      return `${t.name}(${t.args.map((a) => render(a, rand)).join(', ')})`;
    case 'neg':
      return `-${wrap(render(t.a, rand), prec(t.a) < 3)}`;
    case 'op': {
      const p = prec(t);
      if (t.op === '**') {
        return `${wrap(render(t.a, rand), prec(t.a) <= 4)} ** ${wrap(render(t.b, rand), prec(t.b) < 3)}`;
      }
      return `${wrap(render(t.a, rand), prec(t.a) < p)} ${t.op} ${wrap(render(t.b, rand), prec(t.b) <= p)}`;
    }
  }
}

/** Tree evaluation with the same failure rules: zero divisors and non-finite values fail. */
function reference(t: T): number | 'error' {
  const ok = (v: number): number | 'error' => (Number.isFinite(v) ? v : 'error');
  switch (t.k) {
    case 'n':
      return t.v;
    case 'neg': {
      const a = reference(t.a);
      return a === 'error' ? a : -a;
    }
    case 'fn': {
      const args = t.args.map(reference);
      const nums: number[] = [];
      for (const a of args) {
        if (a === 'error') return 'error';
        nums.push(a);
      }
      const [x = NaN] = nums;
      switch (t.name) {
        case 'sqrt':
          return ok(Math.sqrt(x));
        case 'abs':
          return ok(Math.abs(x));
        case 'floor':
          return ok(Math.floor(x));
        case 'max':
          return ok(Math.max(...nums));
        case 'min':
          return ok(Math.min(...nums));
      }
      return 'error';
    }
    case 'op': {
      const a = reference(t.a);
      const b = reference(t.b);
      if (a === 'error' || b === 'error') return 'error';
      switch (t.op) {
        case '+':
          return ok(a + b);
        case '-':
          return ok(a - b);
        case '*':
          return ok(a * b);
        case '/':
          return b === 0 ? 'error' : ok(a / b);
        case '%':
          return b === 0 ? 'error' : ok(a % b);
        case '**':
          return ok(a ** b);
      }
    }
  }
}

describe('random expressions against a tree-evaluated reference', () => {
  it('agrees on 600 random expressions', () => {
    const rand = rng(20240601);
    let errorsSeen = 0;
    for (let i = 0; i < 600; i++) {
      const tree = gen(rand, 1 + Math.floor(rand() * 5));
      const text = render(tree, rand);
      const expected = reference(tree);
      let actual: number | 'error';
      try {
        actual = evaluateExpression(text);
      } catch (err) {
        if (!(err instanceof ExpressionError) || err.kind !== 'evaluation') throw err;
        actual = 'error';
      }
      if (expected === 'error') errorsSeen++;
      const normalized = expected === 'error' || expected !== 0 ? expected : 0;
      expect({ text, value: actual }).toEqual({ text, value: normalized });
    }
    // The generator exercises the error paths too, but mostly produces values.
    expect(errorsSeen).toBeGreaterThan(0);
    expect(errorsSeen).toBeLessThan(300);
  });
});

describe('calculator tools', () => {
  it('calculator returns the formatted result or a prefixed error', async () => {
    await expect(run(calculatorTool, { expression: '2 + 2' })).resolves.toEqual({
      ok: true,
      output: '4',
    });
    await expect(run(calculatorTool, { expression: '0.1 + 0.2', label: 'x' })).resolves.toEqual({
      ok: true,
      output: '0.3',
    });
    await expect(run(calculatorTool, { expression: '1 / 0' })).resolves.toEqual({
      ok: false,
      error: 'Evaluation failed: Division by zero at position 3',
    });
    await expect(run(calculatorTool, { expression: '1 +' })).resolves.toEqual({
      ok: false,
      error: 'Invalid expression: Unexpected end of expression at position 4',
    });
    await expect(run(calculatorTool, {})).resolves.toEqual({
      ok: false,
      error: 'No expression provided',
    });
    expect(calculate('10 / 4')).toEqual({ ok: true, output: '2.5' });
  });

  it('declares a closed schema and is enabled; the async one is disabled', () => {
    expect(calculatorTool.inputSchema['additionalProperties']).toBe(false);
    expect(calculatorTool.inputSchema['required']).toEqual(['expression']);
    expect(calculatorTool.enabled).not.toBe(false);
    expect(calculatorAsyncTool.enabled).toBe(false);
    expect(calculatorAsyncTool.inputSchema['additionalProperties']).toBe(false);
  });

  it('calculator_async resolves after its delay', async () => {
    // A fake clock: the answer comes when the delay is over, not before.
    vi.useFakeTimers();
    try {
      let answer: unknown;
      void run(calculatorAsyncTool, { expression: 'sqrt(16)', delay: 30 }).then((outcome) => {
        answer = outcome;
      });
      await vi.advanceTimersByTimeAsync(29);
      expect(answer).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(answer).toEqual({ ok: true, output: '4' });
    } finally {
      vi.useRealTimers();
    }
    await expect(run(calculatorAsyncTool, { expression: '1 +', delay: 0 })).resolves.toEqual({
      ok: false,
      error: 'Invalid expression: Unexpected end of expression at position 4',
    });
  });

  it('calculator_async honours the abort signal', async () => {
    // A fake clock: only the abort can end the 5 s wait.
    vi.useFakeTimers();
    try {
      const controller = new AbortController();
      const pending = run(
        calculatorAsyncTool,
        { expression: '1 + 1', delay: 5000 },
        ctx(controller.signal),
      );
      // Aborted while it waits.
      await vi.advanceTimersByTimeAsync(10);
      controller.abort();
      await expect(pending).resolves.toEqual({ ok: false, error: 'Cancelled' });
    } finally {
      vi.useRealTimers();
    }

    const already = new AbortController();
    already.abort();
    await expect(
      run(calculatorAsyncTool, { expression: '1', delay: 5000 }, ctx(already.signal)),
    ).resolves.toEqual({ ok: false, error: 'Cancelled' });
  });
});
