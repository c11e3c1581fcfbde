// The one escape of the `.chat` format (docs/chat-format.md, "Lines that look like structure"):
// a backslash before a line that the parser would otherwise read as structure. Flemma adds it to
// every such line of text it did not author (a reply's text, thinking, a compaction summary) as
// it writes it, and removes it again when the chat becomes a request, so the model gets back
// exactly the text it wrote and no text of a model can become a message, a tool block, a thinking
// block or an abort marker. A user pastes such a line the same way: `\@You:`.
//
// The rule, on whole lines: a line that is some backslashes (none or more) followed by
// structure is escaped by one more backslash; a line that is one or more backslashes followed by
// structure loses one when read back. So `escape` then `unescape` gives every line back as it
// was, backslashes included. Structure is:
// - a role marker line (`@You:`, `@Assistant:`, any `@Word:` alone on its line);
// - a line starting with `**Tool Use:**` or `**Tool Result:**` (tool block headers), or
//   `**Agent Permission:**` (an agent's permission placeholder, src/core/acp/permissions.ts);
// - a line starting with `<thinking` or `</thinking` (thinking tags);
// - a line starting with `<!--`, spaces, `flemma:` (the abort marker and any later comment form);
// - a line starting with three backticks (a fence), when a backslash precedes it. A bare fence
//   line is escaped only where it would swallow what follows: an opener that never closes in
//   a block written whole; a reply that streams leaves its fences alone and gets a closing
//   fence instead (see {@link TextEscaper}).

const ROLE = /^@[A-Za-z0-9]+:\s*$/;
const PREFIXES: readonly string[] = [
  '**Tool Use:**',
  '**Tool Result:**',
  '**Agent Permission:**',
  '<thinking',
  '</thinking',
];
const COMMENT = /^<!--\s*flemma:/;
const FENCE_TICKS = '```';
/** A prefix that may still become the `<!--  flemma:` of {@link COMMENT}. */
const COMMENT_START = /^<!--\s*(\S*)$/;
const ROLE_START = /^@[A-Za-z0-9]*$/;
const FENCE_OPENER = /^(`{3,})[^`]*$/;
const FENCE_CLOSER = /^(`+)\s*$/;

/** Structure after the leading backslashes: a role marker line or a structural prefix. */
function isStructure(rest: string): boolean {
  return ROLE.test(rest) || COMMENT.test(rest) || PREFIXES.some((p) => rest.startsWith(p));
}

function backslashes(line: string): number {
  let n = 0;
  while (line.charCodeAt(n) === 92 /* \ */) n++;
  return n;
}

/** Whether a line of untrusted text gets the escape, wherever it stands. */
export function needsEscape(line: string): boolean {
  const n = backslashes(line);
  const rest = line.slice(n);
  return isStructure(rest) || (n > 0 && rest.startsWith(FENCE_TICKS));
}

/** A line with one backslash before it. */
export function escapeLine(line: string): string {
  return `\\${line}`;
}

/** Whether a line read from the buffer carries the escape (it loses one backslash when sent). */
export function isEscaped(line: string): boolean {
  const n = backslashes(line);
  if (n === 0) return false;
  const rest = line.slice(n);
  return isStructure(rest) || rest.startsWith(FENCE_TICKS);
}

/** A buffer line as the model (or the user) wrote it: one escape backslash removed. */
export function unescapeLine(line: string): string {
  return isEscaped(line) ? line.slice(1) : line;
}

/**
 * Text as it was written before the escape: each of its lines unescaped. `atLineStart`: whether
 * the text starts at the start of a buffer line (a piece after a template or a file reference on
 * the same line does not, and its first line is kept as it is).
 */
export function unescapeText(text: string, atLineStart = true): string {
  if (!text.includes('\\')) return text;
  return text
    .split('\n')
    .map((line, index) => (index === 0 && !atLineStart ? line : unescapeLine(line)))
    .join('\n');
}

/**
 * Lines of untrusted text written as a whole (thinking, a compaction summary), escaped: every
 * line {@link needsEscape} says, and a fence opener that never closes (it would swallow the
 * messages after it).
 */
export function escapeBlock(lines: readonly string[]): string[] {
  let open = 0;
  return lines.map((line, index) => {
    if (needsEscape(line)) return escapeLine(line);
    if (open > 0) {
      const closer = FENCE_CLOSER.exec(line)?.[1];
      if (closer !== undefined && closer.length >= open) open = 0;
      return line;
    }
    const opener = FENCE_OPENER.exec(line)?.[1];
    if (opener === undefined) return line;
    if (!closes(lines, index + 1, opener.length)) return escapeLine(line);
    open = opener.length;
    return line;
  });
}

function closes(lines: readonly string[], from: number, ticks: number): boolean {
  for (let i = from; i < lines.length; i++) {
    const closer = FENCE_CLOSER.exec(lines[i] ?? '')?.[1];
    if (closer !== undefined && closer.length >= ticks) return true;
  }
  return false;
}

type Decision = 'hold' | 'escape' | 'plain';

/** What to do with the start of a line seen so far (`complete`: its newline has come). */
function decide(start: string, complete: boolean): Decision {
  if (complete) return needsEscape(start) ? 'escape' : 'plain';
  const n = backslashes(start);
  const rest = start.slice(n);
  // Structure decided by a prefix is decided now; a role marker only at the end of its line.
  if (COMMENT.test(rest) || PREFIXES.some((p) => rest.startsWith(p))) return 'escape';
  if (n > 0 && rest.startsWith(FENCE_TICKS)) return 'escape';
  const comment = COMMENT_START.exec(rest)?.[1];
  const could =
    ROLE_START.test(rest) ||
    ROLE.test(rest) ||
    (comment !== undefined && 'flemma:'.startsWith(comment)) ||
    '<!--'.startsWith(rest) ||
    PREFIXES.some((p) => p.startsWith(rest)) ||
    (n > 0 && FENCE_TICKS.startsWith(rest));
  return could ? 'hold' : 'plain';
}

/**
 * The escape of a reply's text as it streams in chunks. The escape is decided at the start of
 * each line: a line start that could still become structure (`@Yo`, `**Tool`) is held back until
 * it either is structure (then written with its backslash) or cannot be (then written as it
 * is), at the latest when its line ends. Everything else passes through at once.
 *
 * It also follows the reply's code fences as the parser does: a reply whose text leaves a fence
 * open would swallow the blocks and the `@You:` that Flemma writes after it, so {@link end}
 * closes it.
 */
export class TextEscaper {
  /** The current line's start, not written yet (its escape is not decided). */
  private held = '';
  /** The current line's start has been written. */
  private decided = false;
  /** The current line as written so far. */
  private line = '';
  /** The backticks of the fence the text has open (0: none). */
  private fence = 0;

  /** Whether text is held back. */
  get holding(): boolean {
    return this.held !== '';
  }

  /** The text to write for a chunk of the reply. */
  push(text: string): string {
    let out = '';
    let at = 0;
    while (at <= text.length) {
      const newline = text.indexOf('\n', at);
      const piece = text.slice(at, newline < 0 ? text.length : newline);
      out += this.feed(piece, newline >= 0);
      if (newline < 0) break;
      out += '\n';
      this.fence = nextFence(this.fence, this.line);
      this.line = '';
      this.decided = false;
      at = newline + 1;
    }
    return out;
  }

  /**
   * What ends the text before a block, an interrupt or the reply's end (each starts on a new
   * line): what is held back, decided as a whole line, and a closing fence when the text left
   * one open. The escaper then starts afresh.
   */
  end(): string {
    const out = this.ending();
    this.held = '';
    this.decided = false;
    this.line = '';
    this.fence = 0;
    return out;
  }

  /** What {@link end} would write now, without ending anything (for the recovery record). */
  ending(): string {
    let out = '';
    let line = this.line;
    if (!this.decided && this.held !== '') {
      out = decide(this.held, true) === 'escape' ? escapeLine(this.held) : this.held;
      line += out;
    }
    const fence = nextFence(this.fence, line);
    if (fence > 0) out += (line === '' ? '' : '\n') + '`'.repeat(fence);
    return out;
  }

  private feed(piece: string, complete: boolean): string {
    if (this.decided) {
      this.line += piece;
      return piece;
    }
    this.held += piece;
    const decision = decide(this.held, complete);
    if (decision === 'hold') return '';
    const out = decision === 'escape' ? escapeLine(this.held) : this.held;
    this.held = '';
    this.decided = true;
    this.line += out;
    return out;
  }
}

/** The fence state after a whole line, as the parser's message splitter follows it. */
function nextFence(open: number, line: string): number {
  if (open === 0) return FENCE_OPENER.exec(line)?.[1]?.length ?? 0;
  const closer = FENCE_CLOSER.exec(line)?.[1];
  return closer !== undefined && closer.length >= open ? 0 : open;
}
