// The blocks inside a message that the parser reads as structure: tool uses, tool results (and
// their placeholders), thinking blocks and aborted-reply markers, each with the block fence that
// carries it. The parser (parser.ts) finds where a block may start; these read it, and report
// what is malformed to the parser's diagnostics.
import {
  type AbortedSegment,
  type DiagnosticCode,
  type Fence,
  PLACEHOLDER_STATUSES,
  type Placeholder,
  type PlaceholderStatus,
  type Severity,
  type Span,
  type TextSegment,
  type ThinkingSegment,
  type ToolResultSegment,
  type ToolUseSegment,
} from './ast.js';
import { splitFileReferences } from './filerefs.js';

/** A fence closer: backticks only (at least as many as its opener had). */
export const FENCE_CLOSE = /^(`+)\s*$/;
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

/** Where a reader reports what is malformed (the parser's diagnostics). */
export type Sink = (severity: Severity, code: DiagnosticCode, message: string, span: Span) => void;

/** A span of 1-based lines, both included. */
export function lineSpan(start: number, end: number): Span {
  return { startLine: start, endLine: end };
}

interface BlockFence {
  fence: Fence;
  content: string;
}

/**
 * Read the block fence that must follow a tool header: skip blank lines after `header`, then an
 * opener and its closer. Returns the fence, `'missing'` or `'unclosed'`, and the next line index.
 */
export function readBlockFence(
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

export function readAborted(
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

export function readThinking(
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

/**
 * The block fence after a tool header (`readBlockFence`), or, when it is missing or not closed,
 * undefined after the warning (`<code>-missing-fence`, `<code>-unclosed-fence`) with its message.
 */
function fencedBlock(
  lines: readonly string[],
  i: number,
  to: number,
  sink: Sink,
  warn: { code: 'tool-use' | 'tool-result'; missing: string; unclosed: string },
): { result?: BlockFence; next: number } {
  const { result, next } = readBlockFence(lines, i, to);
  if (result === 'missing') {
    sink('warning', `${warn.code}-missing-fence`, warn.missing, lineSpan(i + 1, i + 1));
    return { next };
  }
  if (result === 'unclosed') {
    sink('warning', `${warn.code}-unclosed-fence`, warn.unclosed, lineSpan(i + 1, to + 1));
    return { next };
  }
  return { result, next };
}

export function readToolUse(
  lines: readonly string[],
  i: number,
  to: number,
  sink: Sink,
): { segment?: ToolUseSegment; next: number } | undefined {
  const header = TOOL_USE_HEADER.exec(lines[i] ?? '');
  if (header === null) return undefined;
  const name = header[1] ?? '';
  const id = header[2] ?? '';
  const { result, next } = fencedBlock(lines, i, to, sink, {
    code: 'tool-use',
    missing: `Tool use '${name}' (${id}) requires a fenced code block with JSON input`,
    unclosed: `Unclosed fenced code block in tool use '${name}' (${id}) (missing closing fence)`,
  });
  if (result === undefined) return { next };
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

export function readToolResult(
  lines: readonly string[],
  i: number,
  to: number,
  id: string,
  rest: string,
  sink: Sink,
): { segment?: ToolResultSegment; next: number } {
  const suffixText = SUFFIX.exec(rest);
  const suffix = suffixText === null ? {} : parseModeline(suffixText[1] ?? '');
  const { result, next } = fencedBlock(lines, i, to, sink, {
    code: 'tool-result',
    missing: `Tool result for ${id} requires a fenced code block`,
    unclosed: `Unclosed fenced code block in tool result for ${id} (missing closing fence)`,
  });
  if (result === undefined) return { next };
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
