// The `.chat` parser: text → document tree, with a diagnostic for every malformed construct.
// It never throws. `reparse` re-reads only from the last message that starts before an edit, so
// streaming into a long chat stays cheap.
import type {
  ChatDocument,
  Diagnostic,
  Frontmatter,
  Message,
  Segment,
  TextSegment,
} from './ast.js';
import {
  FENCE_CLOSE,
  TOOL_RESULT_HEADER,
  type Sink,
  lineSpan,
  readAborted,
  readThinking,
  readToolResult,
  readToolUse,
} from './blocks.js';
import { splitFileReferences } from './filerefs.js';
import { readSlashCommand } from './slash.js';
import { scanTemplate } from './template.js';
import { duplicateToolIdWarning, toolUseIds } from './tool-ids.js';

export interface ParseOptions {
  /** Frontmatter languages that have a parser (lower case); default `lua` and `json`. */
  frontmatterLanguages?: ReadonlySet<string>;
}

const DEFAULT_FRONTMATTER_LANGUAGES: ReadonlySet<string> = new Set(['lua', 'json']);

const ROLE_MARKER = /^@([A-Za-z0-9]+):\s*$/;
const FRONTMATTER_OPEN = /^```([A-Za-z0-9]+)\s*$/;
const FRONTMATTER_CLOSE = /^```\s*$/;
/** Message-level fence opener: 3+ backticks and no backtick after them. */
const MESSAGE_FENCE_OPEN = /^(`{3,})[^`]*$/;

/** Parse a whole text (lines separated by `\n`; a `\r` before it is dropped). */
export function parseChat(text: string, options: ParseOptions = {}): ChatDocument {
  return parseLines(splitLines(text), options);
}

export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.endsWith('\r')) lines[i] = line.slice(0, -1);
  }
  return lines;
}

/** Parse buffer lines (as `nvim_buf_get_lines` returns them). */
export function parseLines(lines: readonly string[], options: ParseOptions = {}): ChatDocument {
  const diagnostics: Diagnostic[] = [];
  const sink = sinkInto(diagnostics);
  const frontmatter = parseFrontmatter(lines, options, sink);
  const bodyStart = frontmatter === undefined ? 0 : frontmatter.span.endLine;
  return documentOf(lines, parseMessages(lines, bodyStart, sink), diagnostics, frontmatter);
}

/** A sink that keeps what it is told in `diagnostics`. */
function sinkInto(diagnostics: Diagnostic[]): Sink {
  return (severity, code, message, span) => {
    diagnostics.push({ severity, code, message, span });
  };
}

/** The document of `messages` (its document-wide diagnostics added). */
function documentOf(
  lines: readonly string[],
  messages: Message[],
  diagnostics: Diagnostic[],
  frontmatter: ChatDocument['frontmatter'],
): ChatDocument {
  finishDocument(messages, diagnostics);
  const document: ChatDocument = {
    kind: 'document',
    messages,
    diagnostics,
    lineCount: lines.length,
  };
  if (frontmatter !== undefined) document.frontmatter = frontmatter;
  return document;
}

/**
 * Parse again after the lines from `firstChangedLine` (1-based) on changed, reusing every message
 * that starts before the change. `lines` is the whole new text.
 */
export function reparse(
  previous: ChatDocument,
  lines: readonly string[],
  firstChangedLine: number,
  options: ParseOptions = {},
): ChatDocument {
  // The frontmatter decides where the body starts; an edit in or before it re-reads everything,
  // and so does a first line that could open a frontmatter not closed before.
  const frontmatterEnd = previous.frontmatter?.span.endLine ?? 0;
  if (
    firstChangedLine <= frontmatterEnd + 1 ||
    (previous.frontmatter === undefined && FRONTMATTER_OPEN.test(lines[0] ?? ''))
  ) {
    return parseLines(lines, options);
  }
  // The last message whose marker is strictly before the change: its marker line is outside any
  // fence by definition, so reading from it gives the same result as reading from the top.
  let keep = -1;
  for (let i = previous.messages.length - 1; i >= 0; i--) {
    const message = previous.messages[i];
    if (message !== undefined && message.span.startLine < firstChangedLine) {
      keep = i;
      break;
    }
  }
  if (keep < 0) return parseLines(lines, options);
  const restart = previous.messages[keep]?.span.startLine ?? 1;
  const diagnostics: Diagnostic[] = previous.diagnostics.filter(
    (diagnostic) =>
      diagnostic.code !== 'tool-result-orphaned' &&
      diagnostic.code !== 'tool-result-duplicate' &&
      diagnostic.code !== 'tool-use-duplicate-id' &&
      diagnostic.span.endLine < restart,
  );
  const sink = sinkInto(diagnostics);
  const messages = previous.messages.slice(0, keep).concat(parseMessages(lines, restart - 1, sink));
  return documentOf(lines, messages, diagnostics, previous.frontmatter);
}

function parseFrontmatter(
  lines: readonly string[],
  options: ParseOptions,
  sink: Sink,
): Frontmatter | undefined {
  const open = FRONTMATTER_OPEN.exec(lines[0] ?? '');
  if (open === null) return undefined;
  for (let i = 1; i < lines.length; i++) {
    if (FRONTMATTER_CLOSE.test(lines[i] ?? '')) {
      const language = open[1] ?? '';
      const known = options.frontmatterLanguages ?? DEFAULT_FRONTMATTER_LANGUAGES;
      const span = lineSpan(1, i + 1);
      if (!known.has(language.toLowerCase())) {
        sink(
          'error',
          'frontmatter-language',
          `Unsupported frontmatter language: ${language} (supported: ${[...known].sort().join(', ')})`,
          span,
        );
      }
      return { kind: 'frontmatter', language, code: lines.slice(1, i).join('\n'), span };
    }
  }
  // An opening fence that never closes is not frontmatter: the text is read as the body.
  sink(
    'warning',
    'frontmatter-unclosed',
    'The frontmatter on line 1 is not closed (add a line with ``` after it); it is ignored until it is',
    lineSpan(1, 1),
  );
  return undefined;
}

/** Split the body (from 0-based line `from`) into messages and parse each. */
function parseMessages(lines: readonly string[], from: number, sink: Sink): Message[] {
  const messages: Message[] = [];
  let fenceTicks = 0;
  let fenceLine = 0;
  let role: string | undefined;
  let start = 0;
  const close = (end: number): void => {
    if (role !== undefined) messages.push(parseMessage(lines, role, start, end, sink));
  };
  for (let i = from; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const first = line.charCodeAt(0);
    // NOTE: fences only matter inside messages: text before the first marker (for instance a
    // frontmatter that is still being typed) must not hide the messages after it.
    if (first === 96 /* ` */ && role !== undefined) {
      if (fenceTicks === 0) {
        const open = MESSAGE_FENCE_OPEN.exec(line);
        if (open !== null) {
          fenceTicks = (open[1] ?? '').length;
          fenceLine = i + 1;
        }
      } else {
        const closer = FENCE_CLOSE.exec(line);
        if (closer !== null && (closer[1] ?? '').length >= fenceTicks) fenceTicks = 0;
      }
    } else if (first === 64 /* @ */ && fenceTicks === 0) {
      const marker = ROLE_MARKER.exec(line);
      if (marker !== null) {
        close(i - 1);
        role = marker[1] ?? '';
        start = i;
      }
    }
  }
  close(lines.length - 1);
  if (fenceTicks > 0) {
    sink(
      'warning',
      'fence-unclosed',
      'Unclosed code fence: every line after it, role markers included, belongs to this message',
      lineSpan(fenceLine, fenceLine),
    );
  }
  return messages;
}

/** Parse one message: marker at 0-based `start`, content up to 0-based `end` inclusive. */
function parseMessage(
  lines: readonly string[],
  role: string,
  start: number,
  end: number,
  sink: Sink,
): Message {
  // Trailing empty lines belong to the message's span but not to its content.
  let last = end;
  while (last > start && lines[last] === '') last--;
  const segments =
    role === 'Assistant'
      ? parseAssistant(lines, start + 1, last, sink)
      : role === 'You'
        ? parseUser(lines, start + 1, last, sink)
        : templateSegments(lines, start + 1, last);
  return { kind: 'message', role, segments, span: lineSpan(start + 1, end + 1) };
}

/** Text lines [from, to] (0-based, inclusive) as a text segment, without blank edge lines. */
function textSegment(lines: readonly string[], from: number, to: number): TextSegment | undefined {
  let a = from;
  let b = to;
  while (a <= b && (lines[a] ?? '').trim() === '') a++;
  while (b >= a && (lines[b] ?? '').trim() === '') b--;
  if (a > b) return undefined;
  return { kind: 'text', value: lines.slice(a, b + 1).join('\n'), span: lineSpan(a + 1, b + 1) };
}

/** Text lines with templates and file references recognised (System, You, other roles). */
function templateSegments(
  lines: readonly string[],
  from: number,
  to: number,
): (Segment & { kind: 'text' | 'expression' | 'code' | 'file_reference' })[] {
  const text = textSegment(lines, from, to);
  if (text === undefined) return [];
  const out: (Segment & { kind: 'text' | 'expression' | 'code' | 'file_reference' })[] = [];
  for (const piece of scanTemplate(text.value, { line: text.span.startLine, col: 0 })) {
    if (piece.kind === 'text') out.push(...splitFileReferences(piece));
    else out.push(piece);
  }
  return out;
}

/**
 * If line `i` opens a code fence in message text, the index of the line after its closer (or
 * after `to` when it never closes); otherwise undefined. Structure (tool blocks, thinking) is
 * only read outside such fences, so an example in a code block stays an example.
 */
function skipTextFence(lines: readonly string[], i: number, to: number): number | undefined {
  const open = MESSAGE_FENCE_OPEN.exec(lines[i] ?? '');
  if (open === null) return undefined;
  const ticks = (open[1] ?? '').length;
  for (let j = i + 1; j <= to; j++) {
    const closer = FENCE_CLOSE.exec(lines[j] ?? '');
    if (closer !== null && (closer[1] ?? '').length >= ticks) return j + 1;
  }
  return to + 1;
}

function parseAssistant(lines: readonly string[], from: number, to: number, sink: Sink): Segment[] {
  const segments: Segment[] = [];
  let textStart = from;
  const flushText = (before: number): void => {
    const text = textSegment(lines, textStart, before - 1);
    if (text !== undefined) segments.push(text);
  };
  let i = from;
  while (i <= to) {
    const line = lines[i] ?? '';
    const first = line.charCodeAt(0);
    let consumed: { segment?: Segment; next: number } | undefined;
    if (first === 60 /* < */) {
      consumed = readThinking(lines, i, to, sink) ?? readAborted(line, i);
    } else if (first === 42 /* * */) {
      consumed = readToolUse(lines, i, to, sink);
    } else if (first === 96 /* ` */) {
      i = skipTextFence(lines, i, to) ?? i + 1;
      continue;
    }
    if (consumed === undefined) {
      i++;
      continue;
    }
    flushText(i);
    if (consumed.segment !== undefined) segments.push(consumed.segment);
    i = consumed.next;
    textStart = i;
  }
  flushText(to + 1);
  return segments;
}

function parseUser(lines: readonly string[], from: number, to: number, sink: Sink): Segment[] {
  const segments: Segment[] = [];
  let textStart = from;
  let i = from;
  while (i <= to) {
    const line = lines[i] ?? '';
    const first = line.charCodeAt(0);
    if (first === 96 /* ` */) {
      i = skipTextFence(lines, i, to) ?? i + 1;
      continue;
    }
    if (first === 47 /* / */) {
      const command = readSlashCommand(line, i + 1);
      if (command !== undefined) {
        segments.push(...templateSegments(lines, textStart, i - 1), command);
        i++;
        textStart = i;
        continue;
      }
    }
    const header = first === 42 /* * */ ? TOOL_RESULT_HEADER.exec(line) : null;
    if (header === null) {
      i++;
      continue;
    }
    segments.push(...templateSegments(lines, textStart, i - 1));
    const read = readToolResult(lines, i, to, header[1] ?? '', header[2] ?? '', sink);
    if (read.segment !== undefined) segments.push(read.segment);
    i = read.next;
    textStart = i;
  }
  segments.push(...templateSegments(lines, textStart, to));
  return segments;
}

/**
 * Document-wide checks: every tool result must answer a tool use of an earlier message (a
 * repeated tool use is answered under its derived id, see tool-ids.ts), and no two tool uses
 * share an id.
 */
function finishDocument(messages: Message[], diagnostics: Diagnostic[]): void {
  const ids = toolUseIds(messages);
  const uses = new Set<string>();
  const results = new Set<string>();
  for (const message of messages) {
    for (const segment of message.segments) {
      if (segment.kind === 'tool_use') {
        const key = ids.keyOf(segment);
        uses.add(key);
        const duplicate = ids.duplicateOf(segment);
        if (duplicate !== undefined) {
          diagnostics.push({
            severity: 'warning',
            code: 'tool-use-duplicate-id',
            message: duplicateToolIdWarning(duplicate, key),
            span: lineSpan(segment.span.startLine, segment.span.startLine),
          });
        }
      } else if (segment.kind === 'tool_result' && !uses.has(segment.toolUseId)) {
        diagnostics.push({
          severity: 'warning',
          code: 'tool-result-orphaned',
          message: `Tool result for ${segment.toolUseId} answers no tool use of an earlier @Assistant: message; it is not sent`,
          span: lineSpan(segment.span.startLine, segment.span.startLine),
        });
      } else if (segment.kind === 'tool_result') {
        if (results.has(segment.toolUseId)) {
          diagnostics.push({
            severity: 'warning',
            code: 'tool-result-duplicate',
            message: `Another result for ${segment.toolUseId} comes earlier; only the last one is sent`,
            span: lineSpan(segment.span.startLine, segment.span.startLine),
          });
        }
        results.add(segment.toolUseId);
      }
    }
  }
  diagnostics.sort((a, b) => a.span.startLine - b.span.startLine);
}
