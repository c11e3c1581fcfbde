// Where a position in a chat leads (docs/navigation.md), answered from the parsed tree for `gd`,
// `gf` and the language server: tool use ↔ tool result, `@./file` references and `include()`
// calls, and the hover text. The blocks are the tree's, plus the tool blocks the parser dropped
// with a warning (bad JSON, no fence, an unclosed fence): their header is on the screen, and a
// jump to or from them is still useful.
import type { ChatDocument, Diagnostic, DiagnosticCode, Message, TextSegment } from './ast.js';
import { splitFileReferences } from './filerefs.js';
import {
  BLOCK_FENCE_OPEN,
  SUFFIX,
  TOOL_RESULT_HEADER,
  TOOL_USE_HEADER,
  parseModeline,
} from './blocks.js';
import { referencePath } from './references.js';

/** A block `gd` and hover know, with 1-based inclusive lines. */
export interface NavigationBlock {
  kind: 'tool_use' | 'tool_result' | 'thinking';
  startLine: number;
  endLine: number;
  /** Tool use: its id; tool result: the id it answers; thinking: empty. */
  id: string;
  /** Tool use: the tool's name; otherwise empty. */
  name: string;
  /** Tool result: `done`, `error` or its placeholder status; otherwise empty. */
  status: string;
  /** Thinking: the provider that signed it, if any. */
  provider?: string;
  /** Thinking: `<thinking redacted>`. */
  redacted: boolean;
}

/** A file reference or an `include()` call on one line; columns in bytes, end exclusive. */
export interface LineReference {
  startCol: number;
  endCol: number;
  /** As written (without the `@` of a file reference). */
  raw: string;
  /** The path it names (URL-decoded for a file reference; `//abs` read as `/abs`). */
  path: string;
  include: boolean;
}

/** What `gd` (or `gf`, `filesOnly`) does from a position. */
export type DefinitionAnswer =
  /** Open this file. */
  | { path: string }
  /** Jump to this line (0-based) of the buffer. */
  | { row: number }
  /** Say this and stay. */
  | { message: string }
  /** `gf` only: there is no reference here (Neovim's own `gf` applies). */
  | null;

/** What is at a path: nothing, a directory, or a file of `size` bytes. */
export type FileProbe = (absolutePath: string) => 'missing' | 'directory' | { size: number };

/** Where the chat's references start from (the chat file's directory, or the cwd) and `~`. */
export interface NavigationPlace {
  baseDir: string;
  home: string;
  probe: FileProbe;
}

/** The diagnostics of tool blocks the parser dropped but whose header still navigates. */
const DROPPED: ReadonlySet<DiagnosticCode> = new Set<DiagnosticCode>([
  'tool-use-json',
  'tool-use-missing-fence',
  'tool-use-unclosed-fence',
  'tool-result-missing-fence',
  'tool-result-unclosed-fence',
]);

/** The status of a result from its header suffix and, when there is one, its fence opener. */
function resultStatus(rest: string, fence: { language: string; info: string } | undefined): string {
  const suffix = SUFFIX.exec(rest);
  const fromSuffix = suffix === null ? undefined : parseModeline(suffix[1] ?? '').status;
  if (fence?.language === 'flemma:tool') {
    const status = parseModeline(fence.info).status;
    return status === undefined || status === 'error' ? 'pending' : status;
  }
  return fromSuffix ?? 'done';
}

/** The fence opener after a dropped result's header (blank lines skipped), if any. */
function fenceAfter(
  lines: readonly string[],
  header: number,
  to: number,
): { language: string; info: string } | undefined {
  let i = header + 1;
  while (i <= to && (lines[i - 1] ?? '').trim() === '') i++;
  const open = i <= to ? BLOCK_FENCE_OPEN.exec(lines[i - 1] ?? '') : null;
  return open === null ? undefined : { language: open[2] ?? '', info: (open[3] ?? '').trim() };
}

/** A block for a tool header the parser dropped with `diagnostic`. */
function droppedBlock(
  lines: readonly string[],
  diagnostic: Diagnostic,
): NavigationBlock | undefined {
  const { startLine, endLine } = diagnostic.span;
  const line = lines[startLine - 1] ?? '';
  const base = { startLine, endLine, redacted: false };
  if (diagnostic.code.startsWith('tool-use-')) {
    const header = TOOL_USE_HEADER.exec(line);
    if (header === null) return undefined;
    return { ...base, kind: 'tool_use', name: header[1] ?? '', id: header[2] ?? '', status: '' };
  }
  const header = TOOL_RESULT_HEADER.exec(line);
  if (header === null) return undefined;
  const fence =
    diagnostic.code === 'tool-result-unclosed-fence'
      ? fenceAfter(lines, startLine, endLine)
      : undefined;
  return {
    ...base,
    kind: 'tool_result',
    id: header[1] ?? '',
    name: '',
    status: resultStatus(header[2] ?? '', fence),
  };
}

/** The tool uses, tool results and thinking blocks of a chat, in line order. */
export function navigationBlocks(
  document: ChatDocument,
  lines: readonly string[],
): NavigationBlock[] {
  const blocks: NavigationBlock[] = [];
  for (const message of document.messages) {
    for (const segment of message.segments) {
      const { startLine, endLine } = segment.span;
      if (segment.kind === 'tool_use') {
        blocks.push({
          kind: 'tool_use',
          startLine,
          endLine,
          id: segment.id,
          name: segment.name,
          status: '',
          redacted: false,
        });
      } else if (segment.kind === 'tool_result') {
        blocks.push({
          kind: 'tool_result',
          startLine,
          endLine,
          id: segment.toolUseId,
          name: '',
          status: segment.placeholder?.status ?? (segment.isError ? 'error' : 'done'),
          redacted: false,
        });
      } else if (segment.kind === 'thinking') {
        const block: NavigationBlock = {
          kind: 'thinking',
          startLine,
          endLine,
          id: '',
          name: '',
          status: '',
          redacted: segment.redacted,
        };
        if (segment.signature !== undefined) block.provider = segment.signature.provider;
        blocks.push(block);
      }
    }
  }
  for (const diagnostic of document.diagnostics) {
    if (!DROPPED.has(diagnostic.code)) continue;
    const block = droppedBlock(lines, diagnostic);
    if (block !== undefined) blocks.push(block);
  }
  return blocks.sort((a, b) => a.startLine - b.startLine);
}

/** The block holding a 1-based line, if any. */
function blockAt(blocks: readonly NavigationBlock[], line: number): NavigationBlock | undefined {
  let found: NavigationBlock | undefined;
  for (const block of blocks) {
    if (block.startLine > line) break;
    if (line <= block.endLine) found = block;
  }
  return found;
}

/** The index of the message holding a 1-based line, or -1. */
function messageAt(document: ChatDocument, line: number): number {
  return document.messages.findIndex(
    (message) => message.span.startLine <= line && line <= message.span.endLine,
  );
}

/**
 * The other end of a tool block: for a use, the first result with its id after it; for a
 * result, the last use with its id before it; when there is none that way (a file edited out of
 * order), the nearest one the other way.
 */
export function partnerOf(
  blocks: readonly NavigationBlock[],
  block: NavigationBlock,
): NavigationBlock | undefined {
  const wanted = block.kind === 'tool_use' ? 'tool_result' : 'tool_use';
  let before: NavigationBlock | undefined;
  let after: NavigationBlock | undefined;
  for (const candidate of blocks) {
    if (candidate.kind !== wanted || candidate.id !== block.id) continue;
    if (candidate.startLine < block.startLine) before = candidate;
    else after ??= candidate;
  }
  return block.kind === 'tool_use' ? (after ?? before) : (before ?? after);
}

/** UTF-8 length of `text`. */
function bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

// `include("path")` / `include('path')`, with Lua's whitespace (templates are Lua).
const INCLUDE = /include[ \t\n\v\f\r]*\([ \t\n\v\f\r]*(["'])(.*?)\1[ \t\n\v\f\r]*\)/g;

/** The file references of a line (as the host reads them when sending), then its includes. */
export function lineReferences(line: string): LineReference[] {
  const found: LineReference[] = [];
  const text: TextSegment = { kind: 'text', value: line, span: { startLine: 1, endLine: 1 } };
  for (const part of splitFileReferences(text)) {
    // An MCP reference names no file to open (`:Flemma mcp:resources` lists the server's).
    if (part.kind !== 'file_reference' || part.server !== undefined) continue;
    found.push({
      startCol: part.span.startCol ?? 0,
      endCol: part.span.endCol ?? bytes(line),
      raw: part.raw,
      path: part.path,
      include: false,
    });
  }
  for (const match of line.matchAll(INCLUDE)) {
    const path = match[2] ?? '';
    if (path === '') continue;
    const startCol = bytes(line.slice(0, match.index));
    found.push({ startCol, endCol: startCol + bytes(match[0]), raw: path, path, include: true });
  }
  return found;
}

/** The reference (file or include) under a 0-based byte column of a line. */
export function referenceAt(line: string, col: number): LineReference | undefined {
  return lineReferences(line).find((ref) => ref.startCol <= col && col < ref.endCol);
}

function label(ref: LineReference): string {
  return ref.include ? ref.raw : `@${ref.raw}`;
}

/** How a `task` result names its child's file (src/core/tasks/files.ts, `taskResult`). */
const TASK_CHAT = "The task's chat: ";

/**
 * The child's file a `task` result names on this line, when the cursor (0-based row, byte
 * column) is on it inside a tool result: a path relative to the chat's directory.
 */
function taskChatAt(
  document: ChatDocument,
  lines: readonly string[],
  row: number,
  col: number,
): string | undefined {
  const line = lines[row] ?? '';
  const at = line.lastIndexOf(TASK_CHAT);
  const start = at + TASK_CHAT.length;
  if (at < 0 || col < start) return undefined;
  const path = line.slice(start).trimEnd();
  if (!path.endsWith('.chat') || /\s/.test(path)) return undefined;
  const block = blockAt(navigationBlocks(document, lines), row + 1);
  return block?.kind === 'tool_result' ? path : undefined;
}

/** Where `gd` (or, with `filesOnly`, `gf`) leads from a 0-based row and byte column. */
export function definitionAt(
  document: ChatDocument,
  lines: readonly string[],
  row: number,
  col: number,
  place: NavigationPlace,
  filesOnly = false,
): DefinitionAnswer {
  const ref = referenceAt(lines[row] ?? '', col);
  if (ref !== undefined) {
    const path = referencePath(ref.path, place.baseDir, place.home);
    if (place.probe(path) === 'missing') return { message: `${label(ref)}: no such file: ${path}` };
    return { path };
  }
  const child = taskChatAt(document, lines, row, col);
  if (child !== undefined) {
    const path = referencePath(child, place.baseDir, place.home);
    if (place.probe(path) === 'missing') return { message: `${child}: no such file: ${path}` };
    return { path };
  }
  if (filesOnly) return null;
  const blocks = navigationBlocks(document, lines);
  const block = blockAt(blocks, row + 1);
  if (block === undefined || block.kind === 'thinking') {
    return {
      message:
        'Nothing to go to here (put the cursor on a tool use, a tool result or an @./file reference)',
    };
  }
  const other = partnerOf(blocks, block);
  if (other === undefined) {
    return {
      message:
        block.kind === 'tool_use'
          ? `No result for tool use ${block.id} (${block.name}) yet`
          : `No tool use with id ${block.id} in this chat`,
    };
  }
  return { row: other.startLine - 1 };
}

const STATUS_TEXT: Record<string, string> = {
  done: 'finished',
  error: 'finished with an error',
  pending: 'waiting for approval (pending)',
  approved: 'approved, not run yet',
  denied: 'denied',
  rejected: 'rejected',
  aborted: 'aborted',
};

/** The last line of a message that is not empty (its marker line at least), 1-based. */
function contentEnd(message: Message, lines: readonly string[]): number {
  let last = message.span.endLine;
  while (last > message.span.startLine && lines[last - 1] === '') last--;
  return last;
}

/** Markdown describing what is at a 0-based row and byte column, or null when nothing is. */
export function hoverAt(
  document: ChatDocument,
  lines: readonly string[],
  row: number,
  col: number,
  place: NavigationPlace,
): string | null {
  const ref = referenceAt(lines[row] ?? '', col);
  if (ref !== undefined) {
    const path = referencePath(ref.path, place.baseDir, place.home);
    const probed = place.probe(path);
    const what =
      probed === 'missing'
        ? 'no such file'
        : probed === 'directory'
          ? 'a directory'
          : `${String(probed.size)} bytes`;
    const shown = ref.include ? `include("${ref.raw}")` : `@${ref.raw}`;
    return `**${shown}**\n\n\`${path}\` (${what})`;
  }
  const blocks = navigationBlocks(document, lines);
  const block = blockAt(blocks, row + 1);
  const index = messageAt(document, row + 1);
  const message = document.messages[index];
  const parts: string[] = [];
  if (block?.kind === 'tool_use') {
    const result = partnerOf(blocks, block);
    parts.push(`**Tool use** \`${block.name}\` (\`${block.id}\`)`);
    parts.push(
      result === undefined
        ? 'No result yet'
        : `Result on line ${String(result.startLine)}: ${STATUS_TEXT[result.status] ?? result.status}`,
    );
  } else if (block?.kind === 'tool_result') {
    const use = partnerOf(blocks, block);
    parts.push(
      `**Tool result** for \`${use?.name ?? '?'}\` (\`${block.id}\`): ${STATUS_TEXT[block.status] ?? block.status}`,
    );
    parts.push(
      use === undefined
        ? 'No tool use with this id in the chat (the result is not sent)'
        : `Tool use on line ${String(use.startLine)}`,
    );
  } else if (block?.kind === 'thinking') {
    const kind = block.redacted
      ? 'redacted'
      : block.provider !== undefined
        ? `signed by ${block.provider}`
        : 'unsigned';
    parts.push(`**Thinking** (${kind}), lines ${String(block.startLine)}–${String(block.endLine)}`);
  } else if (message === undefined) {
    return null;
  }
  if (message !== undefined) {
    parts.push(
      `@${message.role}: message ${String(index + 1)} of ${String(document.messages.length)}, lines ${String(message.span.startLine)}–${String(contentEnd(message, lines))}`,
    );
  }
  return parts.join('\n\n');
}
