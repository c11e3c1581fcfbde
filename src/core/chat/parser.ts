// The `.chat` parser: text → document tree, with a diagnostic for every malformed construct.
// It never throws. `reparse` re-reads only from the last message that starts before an edit, so
// streaming into a long chat stays cheap.
import {
  type AbortedSegment,
  type ChatDocument,
  type Diagnostic,
  type DiagnosticCode,
  type Fence,
  type Frontmatter,
  type Message,
  PLACEHOLDER_STATUSES,
  type Placeholder,
  type PlaceholderStatus,
  type Segment,
  type Severity,
  type Span,
  type TextSegment,
  type ThinkingSegment,
  type ToolResultSegment,
  type ToolUseSegment,
} from './ast.js';
import { splitFileReferences } from './filerefs.js';
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
const FENCE_CLOSE = /^(`+)\s*$/;
/** Block fence opener (tool input, tool result): backticks, a tag, the rest of the line. */
export const BLOCK_FENCE_OPEN = /^(`{3,})([A-Za-z0-9:._-]*)(.*)$/;
export const TOOL_USE_HEADER = /^\*\*Tool Use:\*\*\s*`([^`]+)`\s*\(`([^)]+)`\)/;
export const TOOL_RESULT_HEADER = /^\*\*Tool Result:\*\*\s*`([^`]+)`(.*)$/;
export const SUFFIX = /^\s*\((.*)\)\s*$/;
const THINKING_SELF_CLOSING = /^<thinking\s+([A-Za-z0-9]+):signature="([^"]*)"\s*\/>$/;
const THINKING_SIGNED = /^<thinking\s+([A-Za-z0-9]+):signature="([^"]*)"\s*>$/;
const THINKING_PLAIN = /^<thinking>$/;
const THINKING_REDACTED = /^<thinking\s+redacted>$/;
const ABORTED = /^<!--\s*flemma:aborted:\s*(.*?)\s*-->$/;
const THINKING_CLOSE = /^<\/thinking>\s*$/;

const STATUS_ALIASES: Record<string, PlaceholderStatus | 'error'> = {
  pending: 'pending',
  approved: 'approved',
  approve: 'approved',
  denied: 'denied',
  deny: 'denied',
  rejected: 'rejected',
  reject: 'rejected',
  aborted: 'aborted',
  error: 'error',
};

type Sink = (severity: Severity, code: DiagnosticCode, message: string, span: Span) => void;

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
  const sink: Sink = (severity, code, message, span) => {
    diagnostics.push({ severity, code, message, span });
  };
  const frontmatter = parseFrontmatter(lines, options, sink);
  const bodyStart = frontmatter === undefined ? 0 : frontmatter.span.endLine;
  const messages = parseMessages(lines, bodyStart, sink);
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
  const sink: Sink = (severity, code, message, span) => {
    diagnostics.push({ severity, code, message, span });
  };
  const messages = previous.messages.slice(0, keep).concat(parseMessages(lines, restart - 1, sink));
  finishDocument(messages, diagnostics);
  const document: ChatDocument = {
    kind: 'document',
    messages,
    diagnostics,
    lineCount: lines.length,
  };
  if (previous.frontmatter !== undefined) document.frontmatter = previous.frontmatter;
  return document;
}

function lineSpan(start: number, end: number): Span {
  return { startLine: start, endLine: end };
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

interface BlockFence {
  fence: Fence;
  content: string;
}

/**
 * Read the block fence that must follow a tool header: skip blank lines after `header`, then an
 * opener and its closer. Returns the fence, `'missing'` or `'unclosed'`, and the next line index.
 */
function readBlockFence(
  lines: readonly string[],
  header: number,
  to: number,
): { result: BlockFence | 'missing' | 'unclosed'; next: number } {
  let i = header + 1;
  while (i <= to && (lines[i] ?? '').trim() === '') i++;
  const open = i <= to ? BLOCK_FENCE_OPEN.exec(lines[i] ?? '') : null;
  if (open === null) return { result: 'missing', next: header + 1 };
  const ticks = open[1] ?? '';
  for (let j = i + 1; j <= to; j++) {
    const closer = FENCE_CLOSE.exec(lines[j] ?? '');
    if (closer !== null && (closer[1] ?? '').length >= ticks.length) {
      return {
        result: {
          fence: {
            ticks,
            language: open[2] ?? '',
            info: (open[3] ?? '').trim(),
            openLine: i + 1,
            closeLine: j + 1,
          },
          content: lines.slice(i + 1, j).join('\n'),
        },
        next: j + 1,
      };
    }
  }
  return { result: 'unclosed', next: to + 1 };
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

function readAborted(
  line: string,
  i: number,
): { segment: AbortedSegment; next: number } | undefined {
  const match = ABORTED.exec(line);
  if (match === null) return undefined;
  return {
    segment: { kind: 'aborted', message: match[1] ?? '', span: lineSpan(i + 1, i + 1) },
    next: i + 1,
  };
}

function readThinking(
  lines: readonly string[],
  i: number,
  to: number,
  sink: Sink,
): { segment: ThinkingSegment; next: number } | undefined {
  const line = lines[i] ?? '';
  const selfClosing = THINKING_SELF_CLOSING.exec(line);
  if (selfClosing !== null) {
    return {
      segment: {
        kind: 'thinking',
        content: '',
        signature: { provider: selfClosing[1] ?? '', value: selfClosing[2] ?? '' },
        redacted: false,
        selfClosing: true,
        span: lineSpan(i + 1, i + 1),
      },
      next: i + 1,
    };
  }
  const signed = THINKING_SIGNED.exec(line);
  const redacted = THINKING_REDACTED.test(line);
  if (signed === null && !redacted && !THINKING_PLAIN.test(line)) return undefined;
  for (let j = i + 1; j <= to; j++) {
    if (THINKING_CLOSE.test(lines[j] ?? '')) {
      const segment: ThinkingSegment = {
        kind: 'thinking',
        content: lines.slice(i + 1, j).join('\n'),
        redacted,
        selfClosing: false,
        span: lineSpan(i + 1, j + 1),
      };
      if (signed !== null)
        segment.signature = { provider: signed[1] ?? '', value: signed[2] ?? '' };
      return { segment, next: j + 1 };
    }
  }
  // Without its closing tag the block is kept as ordinary text, never dropped.
  sink(
    'warning',
    'thinking-unclosed',
    'Unclosed <thinking> block (missing </thinking>); it is read as text',
    lineSpan(i + 1, i + 1),
  );
  return undefined;
}

function readToolUse(
  lines: readonly string[],
  i: number,
  to: number,
  sink: Sink,
): { segment?: ToolUseSegment; next: number } | undefined {
  const header = TOOL_USE_HEADER.exec(lines[i] ?? '');
  if (header === null) return undefined;
  const name = header[1] ?? '';
  const id = header[2] ?? '';
  const { result, next } = readBlockFence(lines, i, to);
  if (result === 'missing') {
    sink(
      'warning',
      'tool-use-missing-fence',
      `Tool use '${name}' (${id}) requires a fenced code block with JSON input`,
      lineSpan(i + 1, i + 1),
    );
    return { next };
  }
  if (result === 'unclosed') {
    sink(
      'warning',
      'tool-use-unclosed-fence',
      `Unclosed fenced code block in tool use '${name}' (${id}) (missing closing fence)`,
      lineSpan(i + 1, to + 1),
    );
    return { next };
  }
  const span = lineSpan(i + 1, result.fence.closeLine);
  const language = result.fence.language.toLowerCase();
  if (language !== '' && language !== 'json') {
    sink(
      'warning',
      'tool-use-json',
      `Failed to parse tool input of '${name}' (${id}): the input must be JSON, not ${result.fence.language}`,
      span,
    );
    return { next };
  }
  let input: unknown;
  try {
    input = JSON.parse(result.content === '' ? '{}' : result.content);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    sink(
      'warning',
      'tool-use-json',
      `Failed to parse tool input of '${name}' (${id}): ${reason}`,
      span,
    );
    return { next };
  }
  return { segment: { kind: 'tool_use', id, name, input, fence: result.fence, span }, next };
}

export interface Suffix {
  status?: PlaceholderStatus | 'error';
  meta?: Record<string, string>;
}

/** Words and `key=value` pairs of a header suffix or fence info string (quotes allowed). */
export function parseModeline(text: string): Suffix {
  const suffix: Suffix = {};
  const meta: Record<string, string> = {};
  let positional = 0;
  let explicit: string | undefined;
  for (const match of text.matchAll(
    /([A-Za-z0-9_]+)=("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\S*)|("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\S+)/g,
  )) {
    if (match[1] !== undefined) {
      const value = unquote(match[2] ?? '');
      if (match[1] === 'status') explicit = value;
      else meta[match[1]] = value;
    } else {
      const word = unquote(match[3] ?? '');
      const status = STATUS_ALIASES[word];
      if (suffix.status === undefined && status !== undefined) suffix.status = status;
      else meta[String(++positional)] = word;
    }
  }
  if (explicit !== undefined) {
    const status = STATUS_ALIASES[explicit];
    if (status !== undefined) suffix.status = status;
    else meta['status'] = explicit;
  }
  if (Object.keys(meta).length > 0) suffix.meta = meta;
  return suffix;
}

function unquote(value: string): string {
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) {
    return value.slice(1, -1).replace(/\\(.)/g, '$1');
  }
  return value;
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

function readToolResult(
  lines: readonly string[],
  i: number,
  to: number,
  id: string,
  rest: string,
  sink: Sink,
): { segment?: ToolResultSegment; next: number } {
  const suffixText = SUFFIX.exec(rest);
  const suffix = suffixText === null ? {} : parseModeline(suffixText[1] ?? '');
  const { result, next } = readBlockFence(lines, i, to);
  if (result === 'missing') {
    sink(
      'warning',
      'tool-result-missing-fence',
      `Tool result for ${id} requires a fenced code block`,
      lineSpan(i + 1, i + 1),
    );
    return { next };
  }
  if (result === 'unclosed') {
    sink(
      'warning',
      'tool-result-unclosed-fence',
      `Unclosed fenced code block in tool result for ${id} (missing closing fence)`,
      lineSpan(i + 1, to + 1),
    );
    return { next };
  }
  const span = lineSpan(i + 1, result.fence.closeLine);
  let placeholder: Placeholder | undefined;
  if (result.fence.language === 'flemma:tool') {
    const info = parseModeline(result.fence.info);
    let status: PlaceholderStatus = 'pending';
    if (info.status !== undefined && info.status !== 'error') status = info.status;
    else if (info.status === 'error' || info.meta?.['status'] !== undefined) {
      sink(
        'warning',
        'placeholder-status',
        `Unknown tool status in '${result.fence.info}' for ${id}; use status=${PLACEHOLDER_STATUSES.join('|')} (read as pending)`,
        lineSpan(result.fence.openLine, result.fence.openLine),
      );
    }
    placeholder = { status, form: 'fence' };
  } else if (suffix.status !== undefined && suffix.status !== 'error') {
    placeholder = { status: suffix.status, form: 'suffix' };
  }
  const segment: ToolResultSegment = {
    kind: 'tool_result',
    toolUseId: id,
    content: result.content,
    isError: suffix.status === 'error',
    fence: result.fence,
    segments: [],
    span,
  };
  if (placeholder !== undefined) segment.placeholder = placeholder;
  if (suffix.meta !== undefined) segment.meta = suffix.meta;
  if (placeholder === undefined && result.content !== '') {
    const body: TextSegment = {
      kind: 'text',
      value: result.content,
      span: lineSpan(result.fence.openLine + 1, result.fence.closeLine - 1),
    };
    segment.segments = splitFileReferences(body);
  }
  return { segment, next };
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
