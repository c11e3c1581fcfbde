// `:Flemma task:return` (docs/tasks.md, "Seeing a task"): a continued child's latest answer, sent
// back to its parent as a note the parent's next send carries. The parent's `task` result stays
// what its model saw; the note says the task went on and what it answers now.
import type { ChatDocument, Message } from '../chat/ast.js';

/** The text of a reply that ends the model's turn (no tool call in it), as written. */
function finalText(message: Message): string | undefined {
  if (message.role !== 'Assistant') return undefined;
  if (message.segments.some((segment) => segment.kind === 'tool_use' || segment.kind === 'aborted'))
    return undefined;
  const text = message.segments
    .map((segment) => (segment.kind === 'text' ? segment.value : ''))
    .join('')
    .trim();
  return text === '' ? undefined : text;
}

/** The latest `@Assistant:` message that ended the model's turn: its text, as written. */
export function latestAnswer(document: ChatDocument): string | undefined {
  for (let i = document.messages.length - 1; i >= 0; i--) {
    const message = document.messages[i];
    const text = message === undefined ? undefined : finalText(message);
    if (text !== undefined) return text;
  }
  return undefined;
}

/**
 * A model's text made inert in a `@You:` message, where templates and file references are read:
 * `{{` and `{%` become `{ {` and `{ %`, and an `@` that would start a file reference gets a space
 * after it (`@ ./x`). The child's file keeps the text as the model wrote it.
 */
export function inertText(text: string): string {
  return text
    .replace(/\{(?=[{%])/g, '{ ')
    .replace(/(^|[^A-Za-z0-9])@(?=\.{0,2}\/|~\/|mcp:)/g, '$1@ ');
}

/**
 * The note's lines (without its `@You:` marker): which task went on, and its answer, made inert.
 * Its lines are the reply's as written, so a line that would read as structure keeps its escape.
 */
export function returnNote(child: string, answer: string): string[] {
  return [`The task ${child} was continued; its answer now:`, '', ...inertText(answer).split('\n')];
}
