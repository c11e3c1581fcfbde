// Which tool call the cursor means (`<M-CR>`, `:Flemma tool:execute`, `tool:cancel`…), and the
// empty placeholders that get a preview line. docs/chat-format.md §7 and §8 describe what is looked up.

import type { ChatDocument, Message, ToolResultSegment, ToolUseSegment } from '../chat/ast.js';
import { type ToolUseIds, toolUseIds } from '../chat/tool-ids.js';

export interface ToolCallAt {
  id: string;
  name: string;
  input: unknown;
  /** 1-based line of the tool use header. */
  toolUseLine: number;
  /** The result answering this call (placeholder or finished), when there is one. */
  result?: ToolResultSegment;
}

export type ToolLookup = { ok: true; call: ToolCallAt } | { ok: false; error: string };

const NO_CALL_AT_CURSOR = 'No tool call at cursor position';
const NO_CALL_IN_MESSAGE = 'No tool call found in message';

function usesOf(message: Message): ToolUseSegment[] {
  return message.segments.filter((s): s is ToolUseSegment => s.kind === 'tool_use');
}

function resultsOf(message: Message): ToolResultSegment[] {
  return message.segments.filter((s): s is ToolResultSegment => s.kind === 'tool_result');
}

/** Distance from `line` to a span; 0 inside it. */
function distance(line: number, span: { startLine: number; endLine: number }): number {
  if (line < span.startLine) return span.startLine - line;
  if (line > span.endLine) return line - span.endLine;
  return 0;
}

/** The block containing `line`, else the nearest one, preferring the one above on a tie. */
function nearest<T extends { span: { startLine: number; endLine: number } }>(
  blocks: readonly T[],
  line: number,
): T | undefined {
  let best: T | undefined;
  let bestDistance = Infinity;
  for (const block of blocks) {
    const d = distance(line, block.span);
    // Blocks come in buffer order: `<` keeps the earlier (upper) block on ties.
    if (d < bestDistance) {
      best = block;
      bestDistance = d;
    }
  }
  return best;
}

function firstResultFor(doc: ChatDocument, id: string): ToolResultSegment | undefined {
  for (const message of doc.messages) {
    for (const result of resultsOf(message)) if (result.toolUseId === id) return result;
  }
  return undefined;
}

function useFor(doc: ChatDocument, ids: ToolUseIds, id: string): ToolUseSegment | undefined {
  for (const message of doc.messages) {
    if (message.role !== 'Assistant') continue;
    for (const use of usesOf(message)) if (ids.keyOf(use) === id) return use;
  }
  return undefined;
}

/** The call of `use`; a tool use that repeats an earlier id is never run (tool-ids.ts). */
function lookupOf(doc: ChatDocument, ids: ToolUseIds, use: ToolUseSegment): ToolLookup {
  const duplicate = ids.duplicateOf(use);
  if (duplicate !== undefined) {
    return {
      ok: false,
      error: `Tool use ${use.id} repeats the id of the tool use on line ${String(duplicate.firstLine)}; it is not run`,
    };
  }
  return { ok: true, call: callOf(doc, use) };
}

function callOf(doc: ChatDocument, use: ToolUseSegment): ToolCallAt {
  const call: ToolCallAt = {
    id: use.id,
    name: use.name,
    input: use.input,
    toolUseLine: use.span.startLine,
  };
  const result = firstResultFor(doc, use.id);
  if (result !== undefined) call.result = result;
  return call;
}

/** The tool call meant by a cursor on 1-based `line`. */
export function toolCallAt(doc: ChatDocument, line: number): ToolLookup {
  const index = doc.messages.findIndex((m) => line >= m.span.startLine && line <= m.span.endLine);
  const message = doc.messages[index];
  if (message === undefined) return { ok: false, error: NO_CALL_AT_CURSOR };
  const ids = toolUseIds(doc.messages);
  if (message.role === 'Assistant') {
    const use = nearest(usesOf(message), line);
    return use === undefined ? { ok: false, error: NO_CALL_IN_MESSAGE } : lookupOf(doc, ids, use);
  }
  if (message.role !== 'You') return { ok: false, error: NO_CALL_AT_CURSOR };
  const result = nearest(resultsOf(message), line);
  if (result !== undefined) {
    const use = useFor(doc, ids, result.toolUseId);
    if (use === undefined) {
      return { ok: false, error: `No tool use found for result ${result.toolUseId}` };
    }
    const found = lookupOf(doc, ids, use);
    return found.ok ? { ok: true, call: { ...found.call, result } } : found;
  }
  const previous = doc.messages[index - 1];
  const uses = previous?.role === 'Assistant' ? usesOf(previous) : [];
  const last = uses[uses.length - 1];
  return last === undefined ? { ok: false, error: NO_CALL_IN_MESSAGE } : lookupOf(doc, ids, last);
}

/** An empty placeholder and the call it answers: where a preview line goes. */
export interface EmptyPlaceholder {
  id: string;
  name: string;
  input: unknown;
  /** 1-based line of the `**Tool Result:**` header. */
  headerLine: number;
  /** 1-based line of the placeholder's opening fence. */
  fenceLine: number;
  /** 1-based first and last line of the tool use (its header to its closing fence). */
  useSpan: { startLine: number; endLine: number };
}

/** Every placeholder whose fence holds nothing but whitespace, in buffer order. */
export function emptyPlaceholders(doc: ChatDocument): EmptyPlaceholder[] {
  const ids = toolUseIds(doc.messages);
  const uses = new Map<string, ToolUseSegment>();
  for (const message of doc.messages) {
    if (message.role !== 'Assistant') continue;
    for (const use of usesOf(message)) if (!uses.has(ids.keyOf(use))) uses.set(ids.keyOf(use), use);
  }
  const out: EmptyPlaceholder[] = [];
  for (const message of doc.messages) {
    for (const result of resultsOf(message)) {
      if (result.placeholder === undefined || result.content.trim() !== '') continue;
      const use = uses.get(result.toolUseId);
      if (use === undefined) continue;
      out.push({
        id: result.toolUseId,
        name: use.name,
        input: use.input,
        headerLine: result.span.startLine,
        fenceLine: result.fence.openLine,
        useSpan: { startLine: use.span.startLine, endLine: use.span.endLine },
      });
    }
  }
  return out;
}
