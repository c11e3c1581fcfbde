// Splits message text into literal text, `{{ expression }}` and `{% code %}` segments.
import type { CodeSegment, ExpressionSegment, Span, TextSegment } from './ast.js';

export type TemplateSegment = TextSegment | ExpressionSegment | CodeSegment;

/** A buffer position: 1-based line, 0-based UTF-8 byte column. */
export interface BufferPosition {
  line: number;
  col: number;
}

const DOUBLE_QUOTE = 0x22;
const PERCENT = 0x25;
const SINGLE_QUOTE = 0x27;
const DASH = 0x2d;
const EQUALS = 0x3d;
const OPEN_BRACKET = 0x5b;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** UTF-8 bytes that `text[from, to)` takes beyond one per UTF-16 code unit. */
function extraUtf8Bytes(text: string, from: number, to: number): number {
  let extra = 0;
  for (let i = from; i < to; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    if (unit < 0x800) extra += 1;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < to) {
      const low = text.charCodeAt(i + 1);
      // A surrogate pair is two units and four bytes; a lone surrogate counts as U+FFFD.
      if (low >= 0xdc00 && low <= 0xdfff) i++;
      extra += 2;
    } else extra += 2;
  }
  return extra;
}

/** Number of UTF-8 bytes that `text[from, to)` occupies. */
function utf8Length(text: string, from: number, to: number): number {
  if (to - from < 256) return to - from + extraUtf8Bytes(text, from, to);
  // NOTE: long ranges are searched as a slice, so an ASCII tail past `to` is never scanned.
  const part = text.slice(from, to);
  let bytes = part.length;
  for (const run of part.matchAll(/[\u0080-\uffff]+/g)) {
    bytes += extraUtf8Bytes(part, run.index, run.index + run[0].length);
  }
  return bytes;
}

/**
 * Turns string offsets into buffer positions for text that starts at `origin`.
 * Offsets must be asked for in non-decreasing order; each character is visited once overall.
 */
export class PositionTracker {
  private offset = 0;
  private line: number;
  private col: number;
  /** Index of the first newline at or after `offset`, or -1 when there is none. */
  private nextBreak: number;

  constructor(
    private readonly text: string,
    origin: BufferPosition,
  ) {
    this.line = origin.line;
    this.col = origin.col;
    this.nextBreak = text.indexOf('\n');
  }

  /** The position of `target` (clamped to the text and to earlier requests). */
  positionAt(target: number): BufferPosition {
    const end = Math.min(Math.max(target, this.offset), this.text.length);
    let lineStart = -1;
    while (this.nextBreak !== -1 && this.nextBreak < end) {
      this.line++;
      lineStart = this.nextBreak + 1;
      this.nextBreak = this.text.indexOf('\n', lineStart);
    }
    if (lineStart === -1) this.col += utf8Length(this.text, this.offset, end);
    else this.col = utf8Length(this.text, lineStart, end);
    this.offset = end;
    return { line: this.line, col: this.col };
  }

  /** The span of `text[from, to)`; `from` must not precede the previous request. */
  spanOf(from: number, to: number): Span {
    const start = this.positionAt(from);
    const end = this.positionAt(to);
    return { startLine: start.line, startCol: start.col, endLine: end.line, endCol: end.col };
  }
}

interface Closer {
  /** Where the tag's code ends (at the closer, or at its `-` marker). */
  codeEnd: number;
  /** Just past the closing delimiter. */
  end: number;
  trimAfter: boolean;
}

/** For `[[`, `[=[`, `[==[`…, the number of `=`; undefined when `at` opens no long bracket. */
function longBracketLevel(text: string, at: number): number | undefined {
  if (text.charCodeAt(at) !== OPEN_BRACKET) return undefined;
  let i = at + 1;
  while (text.charCodeAt(i) === EQUALS) i++;
  return text.charCodeAt(i) === OPEN_BRACKET ? i - at - 1 : undefined;
}

/** Index just past the `]=…=]` that closes a long bracket of `level`, or the text length. */
function skipLongBracket(text: string, from: number, level: number): number {
  const close = `]${'='.repeat(level)}]`;
  const at = text.indexOf(close, from);
  return at === -1 ? text.length : at + close.length;
}

/**
 * The searches of one scan. They are `g` regexes, whose `lastIndex` is state, so each scan makes
 * its own (after the first `{`: most text has none) and sets `lastIndex` before every use.
 */
interface Searches {
  readonly singleQuoted: RegExp;
  readonly doubleQuoted: RegExp;
  /** The only characters that can change the scanner's state inside a tag. */
  readonly expression: RegExp;
  readonly code: RegExp;
  readonly opener: RegExp;
}

function searches(): Searches {
  return {
    singleQuoted: /['\\]/g,
    doubleQuoted: /["\\]/g,
    expression: /['"[\-{}]/g,
    code: /['"[\-%]/g,
    opener: /\{[{%]/g,
  };
}

/** Index of the next character that `stops` (one character per match) finds from `from`, or -1. */
function nextStop(stops: RegExp, text: string, from: number): number {
  stops.lastIndex = from;
  return stops.test(text) ? stops.lastIndex - 1 : -1;
}

/** Index just past the quote that closes the string opened at `at`, or the text length. */
function skipQuoted(text: string, at: number, find: Searches): number {
  const stops = text.charCodeAt(at) === SINGLE_QUOTE ? find.singleQuoted : find.doubleQuoted;
  for (
    let stop = nextStop(stops, text, at + 1);
    stop !== -1;
    stop = nextStop(stops, text, stop + 2)
  ) {
    if (text.charCodeAt(stop) !== BACKSLASH) return stop + 1;
  }
  return text.length;
}

/**
 * Finds the `}}` (expression) or `%}` (code) that closes a tag whose body starts at `from`,
 * stepping over Lua strings and comments; undefined when the tag is never closed.
 */
function findCloser(
  text: string,
  from: number,
  expression: boolean,
  find: Searches,
): Closer | undefined {
  const closeAt = (at: number): Closer => {
    const trimAfter = at - 1 >= from && text.charCodeAt(at - 1) === DASH;
    return { codeEnd: trimAfter ? at - 1 : at, end: at + 2, trimAfter };
  };
  const stops = expression ? find.expression : find.code;
  let depth = 0;
  let i = from;
  while (i < text.length) {
    i = nextStop(stops, text, i);
    if (i === -1) return undefined;
    const unit = text.charCodeAt(i);
    if (unit === SINGLE_QUOTE || unit === DOUBLE_QUOTE) {
      i = skipQuoted(text, i, find);
    } else if (unit === OPEN_BRACKET) {
      const level = longBracketLevel(text, i);
      i = level === undefined ? i + 1 : skipLongBracket(text, i + level + 2, level);
    } else if (unit === DASH) {
      if (text.charCodeAt(i + 1) !== DASH) i++;
      else {
        const level = longBracketLevel(text, i + 2);
        if (level !== undefined) i = skipLongBracket(text, i + level + 4, level);
        else {
          const lineEnd = text.indexOf('\n', i + 2);
          i = lineEnd === -1 ? text.length : lineEnd + 1;
        }
      }
    } else if (unit === OPEN_BRACE) {
      depth++;
      i++;
    } else if (unit === CLOSE_BRACE) {
      if (depth > 0) depth--;
      else if (text.charCodeAt(i + 1) === CLOSE_BRACE) return closeAt(i);
      i++;
    } else if (unit === PERCENT && text.charCodeAt(i + 1) === CLOSE_BRACE) {
      return closeAt(i);
    } else {
      i++;
    }
  }
  return undefined;
}

/** Index of the next `{{` or `{%` at or after `from`, or -1. */
function findOpener(text: string, from: number, find: Searches): number {
  find.opener.lastIndex = from;
  return find.opener.test(text) ? find.opener.lastIndex - 2 : -1;
}

/**
 * Splits `text`, which starts at `origin` in the buffer, into text, expression and code segments.
 * Text is kept exactly as written; trim markers are only recorded.
 */
export function scanTemplate(text: string, origin: BufferPosition): TemplateSegment[] {
  const segments: TemplateSegment[] = [];
  const tracker = new PositionTracker(text, origin);
  const pushText = (from: number, to: number): void => {
    if (to > from) {
      segments.push({ kind: 'text', value: text.slice(from, to), span: tracker.spanOf(from, to) });
    }
  };

  let textStart = 0;
  // NOTE: indexOf settles text without braces before any regex work is done.
  let brace = text.indexOf('{');
  if (brace === -1) {
    pushText(0, text.length);
    return segments;
  }
  const find = searches();
  brace = findOpener(text, brace, find);
  while (brace !== -1) {
    const second = text.charCodeAt(brace + 1);
    const expression = second === OPEN_BRACE;
    const trimBefore = text.charCodeAt(brace + 2) === DASH;
    const bodyStart = trimBefore ? brace + 3 : brace + 2;
    const closer = findCloser(text, bodyStart, expression, find);
    pushText(textStart, brace);
    if (closer === undefined) {
      // An opener that is never closed makes everything from it on literal text.
      textStart = brace;
      break;
    }
    const code = text.slice(bodyStart, closer.codeEnd).trim();
    const span = tracker.spanOf(brace, closer.end);
    const { trimAfter } = closer;
    segments.push(
      expression
        ? { kind: 'expression', code, trimBefore, trimAfter, span }
        : { kind: 'code', code, trimBefore, trimAfter, span },
    );
    textStart = closer.end;
    brace = findOpener(text, textStart, find);
  }
  pushText(textStart, text.length);
  return segments;
}
