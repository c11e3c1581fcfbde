// `:Flemma fork`, `:Flemma rewind` and `:Flemma retry` (docs/history.md), the parts that need no
// editor: which message the cursor is on, the text of a fork, the cut of a rewind (what stays,
// what leaves for the sibling file, which tool calls it undoes) and the names of the new files.
// The host (src/host/history.ts) checks the undo records, writes the files and edits the buffer.
import type { ChatDocument, Message } from './ast.js';
import { ownMessage } from './review.js';
import { markUndone } from './undone.js';
import { writesIn } from '../acp/writes.js';

/** The index of the message holding 1-based `line`, or why there is none. */
export function messageAt(doc: ChatDocument, line: number): number | string {
  const index = doc.messages.findIndex(
    (message) => line >= message.span.startLine && line <= message.span.endLine,
  );
  return index >= 0 ? index : 'put the cursor on a message of the chat';
}

/** `lines` without the blank lines at their end. */
function trimEnd(lines: readonly string[]): string[] {
  let end = lines.length;
  while (end > 0 && (lines[end - 1] ?? '').trim() === '') end -= 1;
  return lines.slice(0, end);
}

function textOf(lines: readonly string[]): string {
  return lines.join('\n') + '\n';
}

/** A new chat's text, and the 0-based row its cursor goes to. */
export interface ForkText {
  text: string;
  row: number;
}

/**
 * The fork at message `index`: every line of the chat up to the end of that message (the
 * frontmatter and anything before the first message kept). A `@You:` message ends it, with the
 * cursor on its last line (to edit and send it); after any other message an empty `@You:` is
 * added, with the cursor on its empty line, as after a reply.
 */
export function forkText(lines: readonly string[], doc: ChatDocument, index: number): ForkText {
  const message = doc.messages[index];
  if (message === undefined) throw new RangeError(`no message ${String(index)}`);
  const kept = trimEnd(lines.slice(0, message.span.endLine));
  if (message.role === 'You') return { text: textOf(kept), row: kept.length - 1 };
  const out = [...kept, '', '@You:', ''];
  return { text: textOf(out), row: out.length - 1 };
}

/** What a rewind to a message keeps and removes. */
export interface RewindCut {
  /** 0-based row of the first line that leaves the buffer (all lines from it to the end go). */
  from: number;
  /** The lines that leave the buffer, as they are. */
  removed: string[];
  /** The tool uses of the removed messages, newest first (the order they are undone in). */
  calls: { id: string; name: string }[];
}

/** The rewind to message `index` (kept with all before it), or why there is nothing to rewind. */
export function rewindCut(
  lines: readonly string[],
  doc: ChatDocument,
  index: number,
): RewindCut | string {
  const next = doc.messages[index + 1];
  if (next === undefined) return 'no message after this one: nothing to rewind';
  const from = next.span.startLine - 1;
  const calls = doc.messages
    .slice(index + 1)
    .flatMap((message) => [
      ...message.segments.flatMap((segment) =>
        segment.kind === 'tool_use'
          ? [{ id: segment.id, name: segment.name, line: segment.span.startLine }]
          : [],
      ),
      // An agent's writes (src/core/acp/writes.ts) are undone with the calls, in line order.
      ...writesIn(message),
    ])
    .sort((a, b) => b.line - a.line)
    .map(({ id, name }) => ({ id, name }));
  return { from, removed: lines.slice(from), calls };
}

/**
 * The message a retry rewinds to: the one before the last `@Assistant:` reply (its request's
 * last message). Refused when there is no reply, or when the user wrote a message after it
 * (retrying would take their words out of the chat).
 */
export function retryPoint(doc: ChatDocument): number | string {
  const last = doc.messages.findLastIndex((message) => message.role === 'Assistant');
  if (last < 0) return 'no reply to retry yet';
  if (last === 0) return 'the reply has no request before it';
  const after: Message | undefined = doc.messages.slice(last + 1).find(ownMessage);
  if (after !== undefined) {
    return `your message at line ${String(after.span.startLine)} comes after the last reply: send it, or delete it first`;
  }
  return last - 1;
}

/**
 * The sibling file of the removed part: the chat's frontmatter (so that it reads as the same
 * chat) and the removed lines, the results of the calls in `undone` marked `(undone)`.
 */
export function rewoundText(
  lines: readonly string[],
  doc: ChatDocument,
  cut: RewindCut,
  undone: ReadonlySet<string>,
): string {
  const front = doc.frontmatter === undefined ? [] : lines.slice(0, doc.frontmatter.span.endLine);
  const removed = [...cut.removed];
  for (const message of doc.messages) {
    for (const segment of message.segments) {
      if (segment.kind !== 'tool_result' || !undone.has(segment.toolUseId)) continue;
      const row = segment.span.startLine - 1 - cut.from;
      const marked = row >= 0 ? markUndone(removed[row] ?? '') : undefined;
      if (marked !== undefined) removed[row] = marked;
    }
  }
  return textOf(trimEnd([...front, ...removed]));
}

const CHAT_SUFFIX = '.chat';

/**
 * The names a file made from chat `name` (no directory) gets, in the order they are tried:
 * `notes.chat` → `notes.<tag>-1.chat`, `notes.<tag>-2.chat`, … (`tag`: `fork`, `rewound`).
 */
export function* siblingNames(name: string, tag: string): Generator<string, never> {
  const stem = name.endsWith(CHAT_SUFFIX) ? name.slice(0, -CHAT_SUFFIX.length) : name;
  for (let n = 1; ; n += 1) yield `${stem}.${tag}-${String(n)}${CHAT_SUFFIX}`;
}
