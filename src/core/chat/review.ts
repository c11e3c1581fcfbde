// Which tool calls `:Flemma review` looks at (docs/tools.md, "Undo and review").
//
// Decision: "the last reply" is the last turn: every assistant message after the user's last own
// message (a `@You:` message with something besides tool results). With autopilot a turn is many
// replies, and the user reviews what happened since they last wrote, not only the final answer.
import type { ChatDocument, Message } from './ast.js';
import { writesIn } from '../acp/writes.js';

export type ReviewScope =
  | { kind: 'last' }
  | { kind: 'all' }
  /** 1-based lines, both included: the messages that overlap them. */
  | { kind: 'range'; first: number; last: number };

export interface ReviewedCall {
  id: string;
  name: string;
  /** 1-based line of the tool use's header. */
  line: number;
}

/** One file a reviewed call changed: what it held before, for the editor to diff. */
export interface ReviewFile {
  path: string;
  /** The content before (UTF-8 text); null: the call created the file. */
  before: string | null;
  /** Why the content before was not kept (then `before` is null). */
  skipped?: string;
}

export interface ReviewCall {
  tool_id: string;
  name: string;
  /** 1-based line of its tool use. */
  line: number;
  undone: boolean;
  files: ReviewFile[];
}

/** A `@You:` message the user wrote: something besides tool results and blank text. */
export function ownMessage(message: Message): boolean {
  if (message.role !== 'You') return false;
  return message.segments.some(
    (segment) =>
      segment.kind !== 'tool_result' && !(segment.kind === 'text' && segment.value.trim() === ''),
  );
}

/** The document ends with the user's own message: sending it starts a turn. */
export function startsTurn(doc: ChatDocument): boolean {
  const last = doc.messages.findLast((message) => message.role !== 'Notes');
  return last !== undefined && ownMessage(last);
}

/** The tool uses of the messages in `scope`, in document order. */
export function callsInScope(doc: ChatDocument, scope: ReviewScope): ReviewedCall[] {
  let messages = doc.messages;
  if (scope.kind === 'last') {
    const start = messages.findLastIndex(ownMessage);
    messages = messages.slice(start + 1);
  } else if (scope.kind === 'range') {
    messages = messages.filter(
      (message) => message.span.startLine <= scope.last && message.span.endLine >= scope.first,
    );
  }
  const calls: ReviewedCall[] = [];
  for (const message of messages) {
    if (message.role !== 'Assistant') continue;
    for (const segment of message.segments) {
      if (segment.kind === 'tool_use') {
        calls.push({ id: segment.id, name: segment.name, line: segment.span.startLine });
      }
    }
    // An agent's writes (src/core/acp/writes.ts), in the order of the lines.
    calls.push(...writesIn(message));
  }
  calls.sort((a, b) => a.line - b.line);
  return calls;
}
