// A Lua frontmatter read without Lua (`flemma run`, docs/cli.md): the common forms whose values
// are literals, parsed rather than run —
//   flemma.opt.a.b = <literal>              flemma.opt.a:append(<literal>)  (:prepend, :remove)
//   flemma.opt.a = flemma.opt.a - "x" + "y" name = <literal>  (a template variable)
// where a literal is a string (quoted or long brackets), a number, true, false, nil or a table of
// literals. Anything else (a call, a variable, `..`, a function, a control statement, `local`)
// needs Lua to run: the answer is an error naming the line, never a guess.
import type { ConfigOp, FrontmatterOps, OpKind } from './frontmatter.js';

interface Token {
  kind: 'name' | 'string' | 'number' | 'punct' | 'eof';
  text: string;
  value?: string | number;
  /** 1-based line of the code. */
  line: number;
}

const PUNCT: readonly string[] = [
  '==',
  '~=',
  '<=',
  '>=',
  '..',
  '::',
  '=',
  '.',
  ':',
  ',',
  ';',
  '(',
  ')',
  '{',
  '}',
  '[',
  ']',
  '+',
  '-',
  '*',
  '/',
  '%',
  '^',
  '#',
  '<',
  '>',
];
const ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '\\': '\\',
  '"': '"',
  "'": "'",
  '\n': '\n',
};

class LuaSyntax extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

/** The length of a long bracket's opening (`[[`, `[==[`) at `i`, or 0. */
function longOpen(code: string, i: number): number {
  const match = /^\[(=*)\[/.exec(code.slice(i, i + 64));
  return match === null ? 0 : match[0].length;
}

function longBody(
  code: string,
  i: number,
  open: number,
  line: number,
): { text: string; end: number } {
  const close = `]${'='.repeat(open - 2)}]`;
  const end = code.indexOf(close, i + open);
  if (end < 0) throw new LuaSyntax('unfinished long string or comment', line);
  const text = code.slice(i + open, end);
  return { text: text.startsWith('\n') ? text.slice(1) : text, end: end + close.length };
}

function quoted(code: string, start: number, line: number): { value: string; end: number } {
  const quote = code[start];
  let out = '';
  let i = start + 1;
  while (i < code.length && code[i] !== quote) {
    const ch = code[i] ?? '';
    if (ch === '\n') break;
    if (ch !== '\\') {
      out += ch;
      i++;
      continue;
    }
    const next = code[i + 1] ?? '';
    const digits = /^\d{1,3}/.exec(code.slice(i + 1))?.[0];
    const hex = /^x([0-9a-fA-F]{2})/.exec(code.slice(i + 1));
    const unicode = /^u\{([0-9a-fA-F]+)\}/.exec(code.slice(i + 1));
    if (digits !== undefined)
      [out, i] = [out + String.fromCharCode(Number(digits)), i + 1 + digits.length];
    else if (hex !== null)
      [out, i] = [out + String.fromCharCode(parseInt(hex[1] ?? '0', 16)), i + 4];
    else if (unicode !== null)
      [out, i] = [
        out + String.fromCodePoint(parseInt(unicode[1] ?? '0', 16)),
        i + 2 + unicode[0].length - 1,
      ];
    else if (ESCAPES[next] !== undefined) [out, i] = [out + (ESCAPES[next] ?? ''), i + 2];
    else throw new LuaSyntax(`invalid escape \\${next} in a string`, line);
  }
  if (code[i] !== quote) throw new LuaSyntax('unfinished string', line);
  return { value: out, end: i + 1 };
}

/** Lua source as tokens (comments dropped). */
export function tokenize(code: string): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let i = 0;
  const lineAfter = (from: number, to: number): number =>
    line + (code.slice(from, to).match(/\n/g)?.length ?? 0);
  while (i < code.length) {
    const ch = code[i] ?? '';
    if (ch === '\n') [line, i] = [line + 1, i + 1];
    else if (/\s/.test(ch)) i++;
    else if (code.startsWith('--', i)) {
      const open = longOpen(code, i + 2);
      const end =
        open > 0
          ? longBody(code, i + 2, open, line).end
          : code.indexOf('\n', i) < 0
            ? code.length
            : code.indexOf('\n', i);
      [line, i] = [lineAfter(i, end), end];
    } else if (/[A-Za-z_]/.test(ch)) {
      const text = /^[A-Za-z_]\w*/.exec(code.slice(i))?.[0] ?? ch;
      tokens.push({ kind: 'name', text, line });
      i += text.length;
    } else if (/\d/.test(ch) || (ch === '.' && /\d/.test(code[i + 1] ?? ''))) {
      const text =
        /^(0[xX][0-9a-fA-F]+|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)/.exec(code.slice(i))?.[0] ?? ch;
      tokens.push({ kind: 'number', text, value: Number(text), line });
      i += text.length;
    } else if (ch === '"' || ch === "'") {
      const { value, end } = quoted(code, i, line);
      tokens.push({ kind: 'string', text: code.slice(i, end), value, line });
      i = end;
    } else if (longOpen(code, i) > 0) {
      const { text, end } = longBody(code, i, longOpen(code, i), line);
      tokens.push({ kind: 'string', text: code.slice(i, end), value: text, line });
      [line, i] = [lineAfter(i, end), end];
    } else {
      const punct = PUNCT.find((p) => code.startsWith(p, i));
      if (punct === undefined) throw new LuaSyntax(`unexpected character '${ch}'`, line);
      tokens.push({ kind: 'punct', text: punct, line });
      i += punct.length;
    }
  }
  tokens.push({ kind: 'eof', text: '<end>', line });
  return tokens;
}

const METHODS: Readonly<Record<string, OpKind>> = {
  append: 'append',
  prepend: 'prepend',
  remove: 'remove',
};
const KEYWORDS: ReadonlySet<string> = new Set([
  'and',
  'break',
  'do',
  'else',
  'elseif',
  'end',
  'for',
  'function',
  'goto',
  'if',
  'in',
  'local',
  'not',
  'or',
  'repeat',
  'return',
  'then',
  'until',
  'while',
]);

class Parser {
  private at = 0;
  /** The operations, `line` the code's line. */
  readonly ops: ConfigOp[] = [];
  readonly variables: Record<string, unknown> = {};

  constructor(private readonly tokens: Token[]) {}

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.at + offset, this.tokens.length - 1)] as Token;
  }

  private next(): Token {
    const token = this.peek();
    this.at++;
    return token;
  }

  private is(text: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token.kind !== 'string' && token.text === text;
  }

  private expect(text: string): Token {
    if (!this.is(text)) this.needsLua(this.peek());
    return this.next();
  }

  private needsLua(token: Token): never {
    const what = token.kind === 'eof' ? 'the end of the code' : `'${token.text}'`;
    throw new LuaSyntax(
      `${what} is not a literal value: flemma run reads only \`flemma.opt.<option> = <value>\`, \`:append/:prepend/:remove(<value>)\` and \`name = <value>\` with strings, numbers, booleans and tables (anything else needs Lua, which runs only in Neovim)`,
      token.line,
    );
  }

  statements(): void {
    while (this.peek().kind !== 'eof') {
      if (this.is(';')) {
        this.next();
        continue;
      }
      this.statement();
    }
  }

  /** `flemma.opt.a.b` (at `flemma`): the option's keys. */
  private optionPath(): string[] {
    this.expect('flemma');
    this.expect('.');
    this.expect('opt');
    const path: string[] = [];
    for (;;) {
      if (this.is('.') && this.peek(1).kind === 'name') {
        this.next();
        path.push(this.next().text);
      } else if (this.is('[') && this.peek(1).kind === 'string' && this.is(']', 2)) {
        this.next();
        path.push(String(this.next().value));
        this.next();
      } else return path;
    }
  }

  private statement(): void {
    const first = this.peek();
    if (first.kind === 'name' && first.text === 'flemma') {
      const path = this.optionPath();
      if (path.length === 0) this.needsLua(this.peek());
      if (this.is(':')) {
        this.next();
        const method = this.next();
        const kind = METHODS[method.text];
        if (kind === undefined) this.needsLua(method);
        this.expect('(');
        const value = this.literal();
        this.expect(')');
        for (const item of Array.isArray(value) ? value : [value])
          this.push(path, kind, item, first.line);
        return;
      }
      this.expect('=');
      this.assignOption(path, first.line);
      return;
    }
    if (first.kind === 'name' && !KEYWORDS.has(first.text) && this.is('=', 1)) {
      this.next();
      this.next();
      this.variables[first.text] = this.literal();
      return;
    }
    this.needsLua(first);
  }

  private assignOption(path: string[], line: number): void {
    if (this.is('flemma')) {
      this.optionPath();
      if (!this.is('+') && !this.is('-')) this.needsLua(this.peek());
      while (this.is('+') || this.is('-')) {
        const op: OpKind = this.next().text === '+' ? 'append' : 'remove';
        const value = this.literal();
        for (const item of Array.isArray(value) ? value : [value]) this.push(path, op, item, line);
      }
      return;
    }
    this.push(path, 'set', this.literal(), line);
  }

  private push(path: string[], op: OpKind, value: unknown, line: number): void {
    this.ops.push({ path, op, value, line });
  }

  /** A literal value: string, number, boolean, nil (null), or a table of literals. */
  literal(): unknown {
    const token = this.next();
    if (token.kind === 'string' || token.kind === 'number') return token.value;
    if (token.kind === 'punct' && token.text === '-' && this.peek().kind === 'number') {
      return -(this.next().value as number);
    }
    if (token.kind === 'name' && (token.text === 'true' || token.text === 'false')) {
      return token.text === 'true';
    }
    if (token.kind === 'name' && token.text === 'nil') return null;
    if (token.kind === 'punct' && token.text === '{') return this.table();
    return this.needsLua(token);
  }

  private table(): unknown {
    const list: unknown[] = [];
    const named: Record<string, unknown> = {};
    while (!this.is('}')) {
      if (this.peek().kind === 'name' && this.is('=', 1)) {
        const key = this.next().text;
        this.next();
        named[key] = this.literal();
      } else if (this.is('[')) {
        this.next();
        const key = this.literal();
        this.expect(']');
        this.expect('=');
        named[String(key)] = this.literal();
      } else list.push(this.literal());
      if (this.is(',') || this.is(';')) this.next();
      else if (!this.is('}')) this.needsLua(this.peek());
    }
    this.next();
    const keys = Object.keys(named);
    if (keys.length === 0) return list;
    return list.length === 0 ? named : { ...named, __list: list };
  }
}

/**
 * A Lua frontmatter (`code`; `first` is the buffer line of its first line) as the operations and
 * variables Lua would find, when it holds only literal forms; otherwise the error with its line.
 */
export function luaLiteralFrontmatter(
  code: string,
  first: number,
): FrontmatterOps | { error: string } {
  try {
    const parser = new Parser(tokenize(code));
    parser.statements();
    const ops = parser.ops.map((op) => ({ ...op, line: first + op.line - 1 }));
    return { ops, variables: parser.variables };
  } catch (error) {
    if (!(error instanceof LuaSyntax)) throw error;
    return { error: `frontmatter line ${String(first + error.line - 1)}: ${error.message}` };
  }
}
