// Buffer edits for the tool cycle, planned from the document tree and the lines it was parsed
// from. Nothing here touches an editor: every function is pure, returns plain data, and answers
// `undefined` or an empty plan (never an exception) when the tree offers nothing to do.
//
// - Phase 1: which tool uses still lack any result (`unresolvedToolUses`) and where their
//   placeholders go (`planPlaceholders`), so that results stay in tool-use order.
// - Phase 2: how the placeholders are grouped (`classifyToolBlocks`), which error text a
//   denied / rejected / aborted block becomes (`resolutionText`), and the edits that turn a
//   placeholder into a finished result (`planResult`, `planUserSuppliedResult`).
//
// Every buffer line written here comes from `writer.ts`; placeholders always use the current form (docs/chat-format.md §8)
// (bare header, ```` ```flemma:tool status=… ```` fence), while both that form and the older
// `(pending)` header suffix are read.
//
// Edits replace rows [start, end) (0-based, end exclusive) and carry `expect`, the text those rows
// hold now, so the editor refuses an edit whose rows the user changed in the meantime. A plan
// never contains a pure insertion: a new block is written together with the row just above it
// (that row is rewritten unchanged), so `expect` always names at least one row the insertion
// depends on. A plan with several edits lists them bottom to top, without overlaps: each edit's
// rows mean the same in the original buffer whether or not the edits before it were applied (or
// refused), so they can be sent in order as they are. Applying, narrowing and ordering edits is
// edit-rows.ts.

import type {
  ChatDocument,
  Message,
  PlaceholderStatus,
  ToolResultSegment,
  ToolUseSegment,
} from './ast.js';
import { type DuplicateToolUse, toolUseIds } from './tool-ids.js';
import { type Edit, bottomToTop } from './edit-rows.js';
import {
  ChatWriteError,
  type ToolResultBlock,
  placeholder,
  roleMarker,
  toolResult,
} from './writer.js';

export { type Edit, applyEdits, bottomToTop, narrowEdit } from './edit-rows.js';

/** A tool use that has no tool result (placeholder or finished) anywhere in the document. */
export interface UnresolvedToolUse {
  id: string;
  name: string;
  input: unknown;
  /** 1-based line of the `**Tool Use:**` header. */
  line: number;
  /** The assistant message ends (blank text aside) with an abort marker. */
  aborted: boolean;
  /** Index of the assistant message in `doc.messages`. */
  messageIndex: number;
  /** It repeats an earlier tool use's id; `id` is its derived id (tool-ids.ts). */
  duplicateOf?: DuplicateToolUse;
}

/** A placeholder to write: the tool use it answers and its status. */
export interface PlaceholderRequest {
  id: string;
  status: PlaceholderStatus;
  /**
   * The finished result to write in the placeholder's place, when it is already known (a tool
   * that returned before its placeholder was written): the same spot, one edit less.
   */
  result?: ToolResultBlock;
}

/** One placeholder block as Phase 2 sees it, paired with its tool use. */
export interface ToolBlock {
  id: string;
  name: string;
  input: unknown;
  /** 1-based line of the tool use header (the groups are sorted by it). */
  toolUseLine: number;
  /** 1-based line of the `**Tool Result:**` header. */
  toolResultLine: number;
  /** The placeholder's fence body as written. */
  content: string;
  /** Set when the tool use's message ends with an abort marker: that marker's message. */
  abortMessage?: string;
  /** It repeats an earlier tool use's id; `id` is its derived id (tool-ids.ts). */
  duplicateOf?: DuplicateToolUse;
}

/** Placeholder blocks grouped by what Phase 2 does with them. */
export interface ToolBlockGroups {
  /** Waiting for the user. */
  pendingEmpty: ToolBlock[];
  /** The user typed a result: it is sent as the tool's result (`planUserSuppliedResult`). */
  pendingWithContent: ToolBlock[];
  /** To execute. */
  approved: ToolBlock[];
  /** Content-overwrite protection: not executed, the user is warned. */
  approvedWithContent: ToolBlock[];
  denied: ToolBlock[];
  rejected: ToolBlock[];
  aborted: ToolBlock[];
}

/** The statuses Phase 2 resolves to an error result without running the tool. */
export type ResolvedStatus = 'denied' | 'rejected' | 'aborted';

export const DENIED_TEXT = 'The tool was denied by a policy.';
export const REJECTED_TEXT = 'This tool has been rejected by the user.';
export const ABORTED_TEXT = 'Response interrupted by the user.';

/** Phase 1's list: tool uses with no result anywhere, in buffer order (each id once). */
export function unresolvedToolUses(doc: ChatDocument): UnresolvedToolUse[] {
  const answered = resultIds(doc);
  const ids = toolUseIds(doc.messages);
  const seen = new Set<string>();
  const out: UnresolvedToolUse[] = [];
  doc.messages.forEach((message, messageIndex) => {
    if (message.role !== 'Assistant') return;
    const aborted = abortMessageOf(message) !== undefined;
    for (const use of toolUses(message)) {
      const id = ids.keyOf(use);
      if (answered.has(id) || seen.has(id)) continue;
      seen.add(id);
      const unresolved: UnresolvedToolUse = {
        id,
        name: use.name,
        input: use.input,
        line: use.span.startLine,
        aborted,
        messageIndex,
      };
      const duplicate = ids.duplicateOf(use);
      if (duplicate !== undefined) unresolved.duplicateOf = duplicate;
      out.push(unresolved);
    }
  });
  return out;
}

/**
 * Edits that insert a placeholder (docs/chat-format.md §8) for each request, bottom to top. Ids that already
 * have a result (placeholder or finished), that no tool use carries, or that the writer cannot
 * spell are skipped; a repeated id is placed once.
 *
 * Placement (docs/chat-format.md §8): a new `@You:` after the reply's last non-blank line when no `@You:`
 * follows it; right under an `@You:` without results (above its text); after the result of the
 * closest earlier tool of the same reply; otherwise before the first result. Results answering
 * tools of other messages do not count as earlier. Placeholders sharing a spot form one edit, in
 * tool-use order, separated by blank lines; a blank line is added before text that would
 * otherwise follow the new block directly.
 */
export function planPlaceholders(
  doc: ChatDocument,
  lines: readonly string[],
  placeholders: readonly PlaceholderRequest[],
): Edit[] {
  const answered = resultIds(doc);
  const wanted = new Map<string, PlaceholderRequest>();
  for (const request of placeholders) {
    if (!answered.has(request.id) && !wanted.has(request.id)) {
      wanted.set(request.id, request);
    }
  }
  // New blocks grouped by the row they go before; blocks sharing a row stay in tool-use order.
  const insertions = new Map<number, Insertion>();
  const add = (at: number, kind: InsertionKind, block: string[]): void => {
    const insertion = insertions.get(at);
    if (insertion === undefined) insertions.set(at, { at, kind, blocks: [block] });
    else insertion.blocks.push(block);
  };
  const ids = toolUseIds(doc.messages);
  doc.messages.forEach((message, index) => {
    if (message.role !== 'Assistant' || wanted.size === 0) return;
    const uses = toolUses(message);
    const order = new Map<string, number>();
    uses.forEach((use, position) => {
      if (!order.has(ids.keyOf(use))) order.set(ids.keyOf(use), position);
    });
    const next = doc.messages[index + 1];
    const you = next?.role === 'You' ? next : undefined;
    const results = you === undefined ? [] : toolResults(you);
    uses.forEach((use, position) => {
      const id = ids.keyOf(use);
      const request = wanted.get(id);
      if (request === undefined) return;
      wanted.delete(id);
      const { result } = request;
      const block = tryWrite(() =>
        result === undefined ? placeholder(id, request.status) : toolResult({ ...result, id }),
      );
      if (block === undefined) return;
      if (you === undefined) {
        add(lastContentRow(lines, message) + 1, 'create', block);
        return;
      }
      const first = results[0];
      if (first === undefined) {
        // An empty `@You:`: right under its marker, above any text it holds.
        add(you.span.startLine, 'after', block);
        return;
      }
      const predecessor = latestPredecessor(results, order, position);
      if (predecessor !== undefined) add(predecessor.span.endLine, 'after', block);
      else add(first.span.startLine - 1, 'before', block);
    });
  });
  const edits: Edit[] = [];
  for (const insertion of insertions.values()) {
    const edit = insertionEdit(lines, insertion);
    if (edit !== undefined) edits.push(edit);
  }
  return bottomToTop(edits);
}

/**
 * The edit that replaces the placeholder of `id` (header through closing fence, current or suffix
 * form; the first one in the buffer) with the finished result. Undefined when `id` has no
 * placeholder, unless `replaceFinished` allows replacing a finished result (re-execution).
 */
export function planResult(
  doc: ChatDocument,
  lines: readonly string[],
  id: string,
  result: ToolResultBlock,
  options: { replaceFinished?: boolean } = {},
): Edit | undefined {
  const target =
    findResult(doc, id, (segment) => segment.placeholder !== undefined) ??
    (options.replaceFinished === true ? findResult(doc, id, () => true) : undefined);
  if (target === undefined) return undefined;
  return replaceBlock(lines, target, () => toolResult({ ...result, id }));
}

/**
 * The edit that makes the placeholder of `id` an empty one with `status` (a status the approval
 * chain gave it); undefined when `id` has no placeholder.
 */
export function planPlaceholderStatus(
  doc: ChatDocument,
  lines: readonly string[],
  id: string,
  status: PlaceholderStatus,
): Edit | undefined {
  const target = findResult(doc, id, (segment) => segment.placeholder !== undefined);
  if (target === undefined) return undefined;
  return replaceBlock(lines, target, () => placeholder(id, status));
}

/**
 * Phase 2's grouping of every placeholder that answers a tool use (the first placeholder per id),
 * each group sorted by the tool use's line. Content that is only whitespace counts as empty.
 */
export function classifyToolBlocks(doc: ChatDocument): ToolBlockGroups {
  const groups: ToolBlockGroups = {
    pendingEmpty: [],
    pendingWithContent: [],
    approved: [],
    approvedWithContent: [],
    denied: [],
    rejected: [],
    aborted: [],
  };
  const ids = toolUseIds(doc.messages);
  const uses = new Map<string, { use: ToolUseSegment; abortMessage: string | undefined }>();
  for (const message of doc.messages) {
    if (message.role !== 'Assistant') continue;
    const abortMessage = abortMessageOf(message);
    for (const use of toolUses(message)) {
      if (!uses.has(ids.keyOf(use))) uses.set(ids.keyOf(use), { use, abortMessage });
    }
  }
  const done = new Set<string>();
  for (const message of doc.messages) {
    for (const segment of message.segments) {
      if (segment.kind !== 'tool_result' || segment.placeholder === undefined) continue;
      const owner = uses.get(segment.toolUseId);
      if (owner === undefined || done.has(segment.toolUseId)) continue;
      done.add(segment.toolUseId);
      const block: ToolBlock = {
        id: segment.toolUseId,
        name: owner.use.name,
        input: owner.use.input,
        toolUseLine: owner.use.span.startLine,
        toolResultLine: segment.span.startLine,
        content: segment.content,
      };
      if (owner.abortMessage !== undefined) block.abortMessage = owner.abortMessage;
      const duplicate = ids.duplicateOf(owner.use);
      if (duplicate !== undefined) block.duplicateOf = duplicate;
      const filled = hasContent(segment.content);
      if (duplicate !== undefined && !(segment.placeholder.status === 'pending' && filled)) {
        // A repeated id never runs and never waits (tool-ids.ts); a result typed by hand is kept.
        if (segment.placeholder.status === 'rejected') groups.rejected.push(block);
        else if (segment.placeholder.status === 'aborted') groups.aborted.push(block);
        else groups.denied.push(block);
        continue;
      }
      switch (segment.placeholder.status) {
        case 'pending':
          (filled ? groups.pendingWithContent : groups.pendingEmpty).push(block);
          break;
        case 'approved':
          (filled ? groups.approvedWithContent : groups.approved).push(block);
          break;
        case 'denied':
          groups.denied.push(block);
          break;
        case 'rejected':
          groups.rejected.push(block);
          break;
        case 'aborted':
          groups.aborted.push(block);
          break;
      }
    }
  }
  for (const group of Object.values(groups) as ToolBlock[][]) {
    group.sort((a, b) => a.toolUseLine - b.toolUseLine);
  }
  return groups;
}

/** The error text a denied, rejected or aborted block is resolved to. */
export function resolutionText(
  status: ResolvedStatus,
  content: string,
  abortMessage?: string,
): string {
  switch (status) {
    case 'denied':
      return DENIED_TEXT;
    case 'rejected':
      return hasContent(content) ? content : REJECTED_TEXT;
    case 'aborted':
      return abortMessage !== undefined && abortMessage.trim() !== '' ? abortMessage : ABORTED_TEXT;
  }
}

/**
 * The warning shown when approved blocks with edited content are kept from running. Short enough
 * for an 80-column command line; docs/approval.md says the rest (a plain fence sends the text as
 * the result).
 */
export function protectionWarning(count: number): string {
  const blocks = count === 1 ? '1 approved block has' : `${String(count)} approved blocks have`;
  return `${blocks} your text: not run (plain \`\`\` sends it)`;
}

/**
 * The edit that turns a pending placeholder of `id` that holds content into an ordinary result
 * carrying that content (the `flemma:tool` fence or `(pending)` suffix goes). Undefined when
 * there is no such placeholder.
 */
export function planUserSuppliedResult(
  doc: ChatDocument,
  lines: readonly string[],
  id: string,
): Edit | undefined {
  const target = findResult(doc, id, (segment) => segment.placeholder !== undefined);
  if (target?.placeholder?.status !== 'pending' || !hasContent(target.content)) return undefined;
  const content = target.content;
  return replaceBlock(lines, target, () => toolResult({ id, output: content, isError: false }));
}

type InsertionKind = 'create' | 'after' | 'before';

interface Insertion {
  /** 0-based row the new lines go before. */
  at: number;
  /**
   * `create`: a new `@You:` message with the blocks; `after`: each block preceded by a blank
   * line; `before` (ahead of the first existing result): each block followed by a blank line.
   */
  kind: InsertionKind;
  blocks: string[][];
}

function insertionEdit(lines: readonly string[], insertion: Insertion): Edit | undefined {
  const anchorRow = insertion.at - 1;
  const anchor = lines[anchorRow];
  if (anchor === undefined) return undefined;
  const added: string[] = [];
  if (insertion.kind === 'create') {
    const marker = tryWrite(() => roleMarker('You'));
    if (marker === undefined) return undefined;
    added.push('', ...marker);
  }
  for (const block of insertion.blocks) {
    if (insertion.kind === 'before') added.push(...block, '');
    else added.push('', ...block);
  }
  // Keep a blank line between the new blocks and text that follows directly.
  const below = lines[insertion.at];
  if (insertion.kind !== 'before' && below !== undefined && below.trim() !== '') added.push('');
  return { start: anchorRow, end: insertion.at, lines: [anchor, ...added], expect: [anchor] };
}

function replaceBlock(
  lines: readonly string[],
  segment: ToolResultSegment,
  write: () => string[],
): Edit | undefined {
  const start = segment.span.startLine - 1;
  const end = segment.span.endLine;
  if (start < 0 || end > lines.length) return undefined;
  const written = tryWrite(write);
  if (written === undefined) return undefined;
  return { start, end, lines: written, expect: lines.slice(start, end) };
}

/** Of the results in the `@You:` message, the one answering the closest earlier tool use. */
function latestPredecessor(
  results: readonly ToolResultSegment[],
  order: ReadonlyMap<string, number>,
  position: number,
): ToolResultSegment | undefined {
  let best: ToolResultSegment | undefined;
  let bestPosition = -1;
  for (const result of results) {
    const resultPosition = order.get(result.toolUseId);
    if (resultPosition === undefined || resultPosition >= position) continue;
    // `>=`: for a repeated id the later block in the buffer wins.
    if (resultPosition >= bestPosition) {
      best = result;
      bestPosition = resultPosition;
    }
  }
  return best;
}

/** 0-based row of the message's last non-blank line (its marker when it has none). */
function lastContentRow(lines: readonly string[], message: Message): number {
  let row = message.span.endLine - 1;
  const marker = message.span.startLine - 1;
  while (row > marker && (lines[row] ?? '').trim() === '') row--;
  return row;
}

function findResult(
  doc: ChatDocument,
  id: string,
  accept: (segment: ToolResultSegment) => boolean,
): ToolResultSegment | undefined {
  for (const message of doc.messages) {
    for (const segment of message.segments) {
      if (segment.kind === 'tool_result' && segment.toolUseId === id && accept(segment)) {
        return segment;
      }
    }
  }
  return undefined;
}

function resultIds(doc: ChatDocument): Set<string> {
  const ids = new Set<string>();
  for (const message of doc.messages) {
    for (const segment of message.segments) {
      if (segment.kind === 'tool_result') ids.add(segment.toolUseId);
    }
  }
  return ids;
}

function toolUses(message: Message): ToolUseSegment[] {
  return message.segments.filter((segment) => segment.kind === 'tool_use');
}

function toolResults(message: Message): ToolResultSegment[] {
  return message.segments.filter((segment) => segment.kind === 'tool_result');
}

/** The abort marker's message when the message ends with one (blank text aside). */
function abortMessageOf(message: Message): string | undefined {
  for (let i = message.segments.length - 1; i >= 0; i--) {
    const segment = message.segments[i];
    if (segment === undefined) continue;
    if (segment.kind === 'aborted') return segment.message;
    if (segment.kind !== 'text' || segment.value.trim() !== '') return undefined;
  }
  return undefined;
}

function hasContent(content: string): boolean {
  return content.trim() !== '';
}

// The writer refuses ids it cannot spell (a backtick, say); such a block is left unplanned.
function tryWrite(write: () => string[]): string[] | undefined {
  try {
    return write();
  } catch (error) {
    if (error instanceof ChatWriteError) return undefined;
    throw error;
  }
}
