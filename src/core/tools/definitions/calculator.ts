// The `calculator` and `calculator_async` tools, with a small hand-written arithmetic evaluator
// (no `eval`, no `Function`): the expression is tokenized, parsed into a tree by recursive
// descent, and only then evaluated, so a syntax error anywhere is reported before any arithmetic.
//
// Grammar (lowest precedence first):
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/' | '%') unary)*
//   unary   := ('-' | '+') unary | power
//   power   := primary ('**' unary)?          right-associative; -2**2 = -(2**2), 2**-1 = 0.5
//   primary := number | constant | name '(' expr (',' expr)* ')' | '(' expr ')'
// `%` is the JavaScript remainder (sign of the dividend). Positions in messages are 1-based.

import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';

export class ExpressionError extends Error {
  override readonly name = 'ExpressionError';
  constructor(
    /** `syntax`: the text is not a valid expression; `evaluation`: it is, but cannot be computed. */
    readonly kind: 'syntax' | 'evaluation',
    readonly detail: string,
    /** 0-based offset into the expression. */
    readonly offset: number,
  ) {
    super(`${detail} at position ${offset + 1}`);
  }
}

type TokenKind = 'number' | 'name' | 'op' | '(' | ')' | ',' | 'end';
interface Token {
  kind: TokenKind;
  text: string;
  offset: number;
  value?: number;
}

const MAX_LENGTH = 10_000;
const MAX_DEPTH = 200;

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const ch = source.charAt(i);
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const start = i;
    if (/[0-9.]/.test(ch)) {
      const match = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(source.slice(i));
      if (match === null) throw new ExpressionError('syntax', "Unexpected '.'", i);
      i += match[0].length;
      if (/[0-9.]/.test(source.charAt(i))) {
        throw new ExpressionError(
          'syntax',
          `Malformed number '${match[0]}${source.charAt(i)}'`,
          start,
        );
      }
      tokens.push({ kind: 'number', text: match[0], offset: start, value: Number(match[0]) });
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      while (/[A-Za-z0-9_]/.test(source.charAt(i))) i++;
      tokens.push({ kind: 'name', text: source.slice(start, i), offset: start });
      continue;
    }
    if (ch === '*' && source.charAt(i + 1) === '*') {
      tokens.push({ kind: 'op', text: '**', offset: start });
      i += 2;
      continue;
    }
    if ('+-*/%'.includes(ch)) {
      tokens.push({ kind: 'op', text: ch, offset: start });
      i++;
      continue;
    }
    if (ch === '(' || ch === ')' || ch === ',') {
      tokens.push({ kind: ch, text: ch, offset: start });
      i++;
      continue;
    }
    if (ch === '^') {
      throw new ExpressionError('syntax', "Unexpected '^' (use '**' for powers)", i);
    }
    throw new ExpressionError('syntax', `Unexpected character '${ch}'`, i);
  }
  tokens.push({ kind: 'end', text: '', offset: source.length });
  return tokens;
}

type Node =
  | { type: 'num'; value: number; offset: number }
  | { type: 'neg'; operand: Node; offset: number }
  | { type: 'bin'; op: string; left: Node; right: Node; offset: number }
  | { type: 'call'; name: string; args: Node[]; offset: number };

const CONSTANTS: Readonly<Record<string, number>> = { pi: Math.PI, e: Math.E };

interface FunctionSpec {
  min: number;
  max: number;
  fn: (...args: number[]) => number;
}

const roundHalfAwayFromZero = (x: number): number => Math.sign(x) * Math.round(Math.abs(x));

const FUNCTIONS: Readonly<Record<string, FunctionSpec>> = {
  sqrt: { min: 1, max: 1, fn: Math.sqrt },
  abs: { min: 1, max: 1, fn: Math.abs },
  floor: { min: 1, max: 1, fn: Math.floor },
  ceil: { min: 1, max: 1, fn: Math.ceil },
  round: { min: 1, max: 1, fn: roundHalfAwayFromZero },
  min: { min: 1, max: Infinity, fn: Math.min },
  max: { min: 1, max: Infinity, fn: Math.max },
  pow: { min: 2, max: 2, fn: Math.pow },
  log: { min: 1, max: 1, fn: Math.log },
  exp: { min: 1, max: 1, fn: Math.exp },
  sin: { min: 1, max: 1, fn: Math.sin },
  cos: { min: 1, max: 1, fn: Math.cos },
  tan: { min: 1, max: 1, fn: Math.tan },
};

const has = (table: object, key: string): boolean => Object.hasOwn(table, key);

function describe(token: Token): string {
  return token.kind === 'end' ? 'end of expression' : `'${token.text}'`;
}

class Parser {
  #pos = 0;
  #depth = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): Node {
    const node = this.#expr();
    const next = this.#peek();
    if (next.kind !== 'end') {
      const hint = next.kind === '(' || next.kind === 'number' || next.kind === 'name';
      throw new ExpressionError(
        'syntax',
        `Unexpected ${describe(next)}${hint ? ' (missing operator?)' : ''}`,
        next.offset,
      );
    }
    return node;
  }

  #peek(): Token {
    // The token list always ends with an 'end' token, and #pos never moves past it.
    return this.tokens[this.#pos] ?? { kind: 'end', text: '', offset: 0 };
  }

  #next(): Token {
    const token = this.#peek();
    if (token.kind !== 'end') this.#pos++;
    return token;
  }

  #isOp(...ops: string[]): boolean {
    const token = this.#peek();
    return token.kind === 'op' && ops.includes(token.text);
  }

  #enter(offset: number): void {
    if (++this.#depth > MAX_DEPTH) {
      throw new ExpressionError('syntax', 'Expression is nested too deeply', offset);
    }
  }

  #expr(): Node {
    let left = this.#term();
    while (this.#isOp('+', '-')) {
      const op = this.#next();
      left = { type: 'bin', op: op.text, left, right: this.#term(), offset: op.offset };
    }
    return left;
  }

  #term(): Node {
    let left = this.#unary();
    while (this.#isOp('*', '/', '%')) {
      const op = this.#next();
      left = { type: 'bin', op: op.text, left, right: this.#unary(), offset: op.offset };
    }
    return left;
  }

  #unary(): Node {
    if (this.#isOp('-', '+')) {
      const op = this.#next();
      this.#enter(op.offset);
      const operand = this.#unary();
      this.#depth--;
      return op.text === '-' ? { type: 'neg', operand, offset: op.offset } : operand;
    }
    return this.#power();
  }

  #power(): Node {
    const base = this.#primary();
    if (!this.#isOp('**')) return base;
    const op = this.#next();
    this.#enter(op.offset);
    const exponent = this.#unary();
    this.#depth--;
    return { type: 'bin', op: '**', left: base, right: exponent, offset: op.offset };
  }

  #primary(): Node {
    const token = this.#next();
    switch (token.kind) {
      case 'number':
        return { type: 'num', value: token.value ?? Number(token.text), offset: token.offset };
      case '(': {
        this.#enter(token.offset);
        const inner = this.#expr();
        this.#depth--;
        this.#expect(')', `Missing ')' for the '(' at position ${token.offset + 1}`);
        return inner;
      }
      case 'name':
        return this.#name(token);
      default:
        throw new ExpressionError(
          'syntax',
          token.kind === 'end' ? 'Unexpected end of expression' : `Unexpected ${describe(token)}`,
          token.offset,
        );
    }
  }

  #name(token: Token): Node {
    const name = token.text;
    const called = this.#peek().kind === '(';
    if (has(CONSTANTS, name)) {
      if (called)
        throw new ExpressionError(
          'syntax',
          `'${name}' is a constant, not a function`,
          token.offset,
        );
      return { type: 'num', value: CONSTANTS[name] ?? NaN, offset: token.offset };
    }
    const spec = has(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
    if (spec === undefined) {
      throw new ExpressionError(
        'syntax',
        `Unknown identifier '${name}' (known: ${[...Object.keys(FUNCTIONS), ...Object.keys(CONSTANTS)].join(', ')})`,
        token.offset,
      );
    }
    if (!called) {
      throw new ExpressionError(
        'syntax',
        `Function '${name}' must be called, e.g. ${name}(x)`,
        token.offset,
      );
    }
    const open = this.#next();
    this.#enter(open.offset);
    const args: Node[] = [];
    if (this.#peek().kind !== ')') {
      args.push(this.#expr());
      while (this.#peek().kind === ',') {
        this.#next();
        args.push(this.#expr());
      }
    }
    this.#depth--;
    this.#expect(')', `Missing ')' for the call to '${name}' at position ${token.offset + 1}`);
    if (args.length < spec.min || args.length > spec.max) {
      const wanted =
        spec.min === spec.max
          ? `${spec.min} argument${spec.min === 1 ? '' : 's'}`
          : `at least ${spec.min} argument${spec.min === 1 ? '' : 's'}`;
      throw new ExpressionError(
        'syntax',
        `Function '${name}' takes ${wanted}, got ${args.length}`,
        token.offset,
      );
    }
    return { type: 'call', name, args, offset: token.offset };
  }

  #expect(kind: TokenKind, message: string): void {
    const token = this.#peek();
    if (token.kind !== kind) {
      throw new ExpressionError('syntax', `${message}; found ${describe(token)}`, token.offset);
    }
    this.#next();
  }
}

function finite(value: number, what: string, offset: number): number {
  if (!Number.isFinite(value)) {
    throw new ExpressionError('evaluation', `${what} is not a finite number`, offset);
  }
  return value;
}

function evaluate(node: Node): number {
  switch (node.type) {
    case 'num':
      return finite(node.value, 'The number', node.offset);
    case 'neg':
      return -evaluate(node.operand);
    case 'call': {
      const args = node.args.map(evaluate);
      const spec = FUNCTIONS[node.name];
      if (spec === undefined)
        throw new ExpressionError('evaluation', `Unknown function '${node.name}'`, node.offset);
      return finite(
        spec.fn(...args),
        `The result of ${node.name}(${args.map(formatNumber).join(', ')})`,
        node.offset,
      );
    }
    case 'bin': {
      const a = evaluate(node.left);
      const b = evaluate(node.right);
      switch (node.op) {
        case '+':
          return finite(a + b, "The result of '+'", node.offset);
        case '-':
          return finite(a - b, "The result of '-'", node.offset);
        case '*':
          return finite(a * b, "The result of '*'", node.offset);
        case '/':
          if (b === 0) throw new ExpressionError('evaluation', 'Division by zero', node.offset);
          return finite(a / b, "The result of '/'", node.offset);
        case '%':
          if (b === 0) throw new ExpressionError('evaluation', 'Modulo by zero', node.offset);
          return finite(a % b, "The result of '%'", node.offset);
        case '**':
          return finite(a ** b, "The result of '**'", node.offset);
        default:
          throw new ExpressionError('evaluation', `Unknown operator '${node.op}'`, node.offset);
      }
    }
  }
}

/** Evaluates an arithmetic expression. Throws `ExpressionError` (with a 1-based position). */
export function evaluateExpression(expression: string): number {
  if (expression.length > MAX_LENGTH) {
    throw new ExpressionError(
      'syntax',
      `Expression is longer than ${MAX_LENGTH} characters`,
      MAX_LENGTH,
    );
  }
  if (expression.trim() === '') throw new ExpressionError('syntax', 'Empty expression', 0);
  const value = evaluate(new Parser(tokenize(expression)).parse());
  return value === 0 ? 0 : value; // no "-0"
}

/** Integers without a fraction; other numbers to 15 significant digits, trailing zeros trimmed. */
export function formatNumber(value: number): string {
  if (Object.is(value, -0)) return '0';
  if (Number.isInteger(value) || !Number.isFinite(value)) return String(value);
  return String(Number(value.toPrecision(15)));
}

/** Runs an expression for a tool: the outcome the model sees. */
export function calculate(expression: string): ToolOutcome {
  try {
    return { ok: true, output: formatNumber(evaluateExpression(expression)) };
  } catch (err) {
    if (err instanceof ExpressionError) {
      const prefix = err.kind === 'syntax' ? 'Invalid expression' : 'Evaluation failed';
      return { ok: false, error: `${prefix}: ${err.message}` };
    }
    return {
      ok: false,
      error: `Evaluation failed: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
}

function expressionOf(input: unknown): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const expression = (input as Record<string, unknown>)['expression'];
  return typeof expression === 'string' ? expression : undefined;
}

const EXPRESSION_DESCRIPTION =
  'Arithmetic expression: numbers (e.g. 2, 0.5, 1e-3), + - * / % ** (power, right-associative), ' +
  'parentheses, functions sqrt abs floor ceil round min max pow log (natural) exp sin cos tan ' +
  '(radians), constants pi and e.';

export const calculatorTool: ToolDefinition = {
  name: 'calculator',
  description:
    'Evaluate an arithmetic expression exactly and return the result as a number. Use it instead of doing arithmetic in your head.',
  inputSchema: {
    type: 'object',
    properties: {
      expression: { type: 'string', description: EXPRESSION_DESCRIPTION },
      label: { type: 'string', description: 'Optional short note on what is being computed.' },
    },
    required: ['expression'],
    additionalProperties: false,
  },
  label: 'Calculator',
  // The preview is the expression itself: `calculator: 2 + 2`.
  formatPreview: (input) => expressionOf(input) ?? '',
  execute: (input: unknown): Promise<ToolOutcome> => {
    const expression = expressionOf(input);
    if (expression === undefined) {
      return Promise.resolve({ ok: false, error: 'No expression provided' });
    }
    return Promise.resolve(calculate(expression));
  },
};

/** Default delay of `calculator_async`, in milliseconds. */
export const DEFAULT_ASYNC_DELAY_MS = 1000;
const MAX_ASYNC_DELAY_MS = 60_000;

function delayOf(input: unknown): number {
  if (typeof input !== 'object' || input === null) return DEFAULT_ASYNC_DELAY_MS;
  const delay = (input as Record<string, unknown>)['delay'];
  if (typeof delay !== 'number' || !Number.isFinite(delay)) return DEFAULT_ASYNC_DELAY_MS;
  return Math.min(Math.max(0, delay), MAX_ASYNC_DELAY_MS);
}

const CANCELLED: ToolOutcome = { ok: false, error: 'Cancelled' };

export const calculatorAsyncTool: ToolDefinition = {
  name: 'calculator_async',
  description:
    'Like calculator, but answers after a delay (for exercising asynchronous tool execution).',
  inputSchema: {
    type: 'object',
    properties: {
      expression: { type: 'string', description: EXPRESSION_DESCRIPTION },
      delay: {
        type: ['number', 'null'],
        description: `Delay in milliseconds before answering (default ${DEFAULT_ASYNC_DELAY_MS}).`,
      },
      label: { type: 'string', description: 'Optional short note on what is being computed.' },
    },
    required: ['expression'],
    additionalProperties: false,
  },
  label: 'Calculator (async)',
  enabled: false,
  // `calculator_async: sqrt(16)  # 500ms`: the expression, and the delay it will wait.
  formatPreview: (input) => ({ detail: [expressionOf(input) ?? ''], label: `${delayOf(input)}ms` }),
  execute: (input: unknown, ctx: ToolContext): Promise<ToolOutcome> => {
    const expression = expressionOf(input);
    if (expression === undefined) {
      return Promise.resolve({ ok: false, error: 'No expression provided' });
    }
    const { signal } = ctx;
    if (signal.aborted) return Promise.resolve(CANCELLED);
    return new Promise<ToolOutcome>((resolve) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve(CANCELLED);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(calculate(expression));
      }, delayOf(input));
      signal.addEventListener('abort', onAbort, { once: true });
    });
  },
};

/** Both calculator tools, for registering as one module. */
export const calculatorTools: readonly ToolDefinition[] = [calculatorTool, calculatorAsyncTool];
