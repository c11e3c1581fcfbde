// Property test of the parser: 10,000 random and mutated documents never make it throw, every
// position lies inside the document, every diagnostic sits on a real line, and re-parsing after
// an edit gives the same tree as parsing from scratch.
import { describe, expect, it } from 'vitest';
import type { ChatDocument, Span } from '../../src/core/chat/ast.js';
import { parseLines, reparse } from '../../src/core/chat/parser.js';
import { assemblePrompt } from '../../src/core/chat/prompt.js';
import { mulberry32 as random } from '../helpers/random.js';

const PIECES = [
  '@You:',
  '@Assistant:',
  '@System:',
  '@Notes:',
  '@You: inline',
  '```',
  '````',
  '```json',
  '```lua',
  '```flemma:tool status=pending',
  '```flemma:tool status=approved',
  '```flemma:tool status=nonsense',
  '**Tool Use:** `bash` (`t1`)',
  '**Tool Use:** `read` (`t2`)',
  '**Tool Result:** `t1`',
  '**Tool Result:** `t2` (error)',
  '**Tool Result:** `t1` (pending)',
  '**Tool Result:** `t9` (status=denied x=1)',
  '{"command":"ls"}',
  '{"broken": ',
  '<thinking>',
  '<thinking redacted>',
  '<thinking anthropic:signature="abc">',
  '<thinking vertex:signature="x"/>',
  '</thinking>',
  '<!-- flemma:aborted: stopped -->',
  'Hello {{ name }} and {% for i = 1, 3 do %}x{% end %}',
  'see @./file.txt, @~/notes.md; and @//etc/hosts.',
  'unclosed {{ here',
  'plain text with `backticks` and é and 🙂',
  '',
  '   ',
];

function randomDocument(next: () => number): string[] {
  const count = Math.floor(next() * 40);
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const roll = next();
    if (roll < 0.8) lines.push(PIECES[Math.floor(next() * PIECES.length)] ?? '');
    else lines.push(randomText(next));
  }
  return lines;
}

function randomText(next: () => number): string {
  const alphabet = '`@*:{}%-"\'[]=()<>!/.~;\\ abcé🙂\t';
  const chars = Array.from(alphabet);
  let out = '';
  const length = Math.floor(next() * 30);
  for (let i = 0; i < length; i++) out += chars[Math.floor(next() * chars.length)] ?? '';
  return out;
}

/** Delete, duplicate, swap or rewrite a line, or splice a piece in, a few times. */
function mutate(lines: string[], next: () => number): string[] {
  const out = [...lines];
  const edits = 1 + Math.floor(next() * 4);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(next() * (out.length + 1));
    const kind = next();
    if (kind < 0.25) out.splice(at, 1);
    else if (kind < 0.5) out.splice(at, 0, PIECES[Math.floor(next() * PIECES.length)] ?? '');
    else if (kind < 0.75 && at < out.length) out[at] = randomText(next);
    else if (at + 1 < out.length) {
      const a = out[at] ?? '';
      out[at] = out[at + 1] ?? '';
      out[at + 1] = a;
    }
  }
  return out;
}

function checkSpan(span: Span, lineCount: number, where: string): void {
  if (!(span.startLine >= 1 && span.endLine >= span.startLine && span.endLine <= lineCount)) {
    throw new Error(`${where}: span ${JSON.stringify(span)} outside 1..${String(lineCount)}`);
  }
}

function checkDocument(document: ChatDocument, lines: string[]): void {
  const lineCount = Math.max(lines.length, 1);
  if (document.frontmatter !== undefined)
    checkSpan(document.frontmatter.span, lineCount, 'frontmatter');
  for (const message of document.messages) {
    checkSpan(message.span, lineCount, 'message');
    if (!/^@[A-Za-z0-9]+:\s*$/.test(lines[message.span.startLine - 1] ?? '')) {
      throw new Error(
        `message at line ${String(message.span.startLine)} does not start on a marker`,
      );
    }
    for (const segment of message.segments) {
      checkSpan(segment.span, lineCount, segment.kind);
      if (
        segment.span.startLine < message.span.startLine ||
        segment.span.endLine > message.span.endLine
      ) {
        throw new Error(`${segment.kind} outside its message`);
      }
      if (segment.kind === 'tool_result') {
        for (const piece of segment.segments) checkSpan(piece.span, lineCount, 'result body');
      }
    }
  }
  for (const diagnostic of document.diagnostics)
    checkSpan(diagnostic.span, lineCount, diagnostic.code);
}

describe('the parser under random input', () => {
  it('handles 10,000 random and mutated documents', () => {
    const next = random(20261122);
    let previous: string[] = [];
    for (let run = 0; run < 10000; run++) {
      const lines =
        run % 2 === 0 || previous.length === 0 ? randomDocument(next) : mutate(previous, next);
      let document: ChatDocument;
      try {
        document = parseLines(lines);
        checkDocument(document, lines);
        assemblePrompt(document);
      } catch (error) {
        throw new Error(`run ${String(run)} failed on ${JSON.stringify(lines)}: ${String(error)}`);
      }
      // Append or edit at the end, as streaming and typing do, and compare with a full parse.
      const edited = mutate(lines, next);
      let firstChanged = 1;
      while (
        firstChanged <= Math.min(lines.length, edited.length) &&
        lines[firstChanged - 1] === edited[firstChanged - 1]
      ) {
        firstChanged++;
      }
      const incremental = reparse(document, edited, firstChanged);
      const full = parseLines(edited);
      if (JSON.stringify(incremental) !== JSON.stringify(full)) {
        expect({ lines, edited, firstChanged, incremental }).toEqual({
          lines,
          edited,
          firstChanged,
          incremental: full,
        });
      }
      previous = lines;
    }
  });
});
