// An agent's `fs/write_text_file` in the reply (docs/agents.md, "Files and terminals"): each write
// Flemma served is one line of the reply, `**Agent Write:** `<id>` (written) <path>`, and its undo
// record is kept under that id. `:Flemma tool:undo` on the line puts the file back (the line then
// reads `(undone)`), `:Flemma review` lists it, and a rewind past it undoes it, as for a tool call.
//
// The line is text of the reply to the chat's grammar (like `**Agent Tool:**`): an agent could
// write one itself, which at most names a record of this chat's own, undone only by the user.
import type { ChatDocument, Message } from '../chat/ast.js';
import { toolCallAt } from '../tools/locate.js';

/** The name agent writes go by in undo messages and the review. */
export const AGENT_WRITE_NAME = 'acp:write';

const WRITE_LINE = /^\*\*Agent Write:\*\* `([^`]+)` \((written|undone)\)(.*)$/;

/** The reply's line of a write. */
export function writeLine(id: string, path: string): string {
  return `**Agent Write:** \`${id.replace(/`/g, "'")}\` (written) ${path.replace(/\s+/g, ' ')}`;
}

/** The line marked undone; undefined when it is no write line or already says so. */
export function markWriteUndone(line: string): string | undefined {
  const match = WRITE_LINE.exec(line);
  if (match === null || match[2] === 'undone') return undefined;
  return `**Agent Write:** \`${match[1] ?? ''}\` (undone)${match[3] ?? ''}`;
}

/** An agent write of the document: its record's id and its 1-based line. */
export interface AgentWrite {
  id: string;
  name: string;
  line: number;
}

/** The writes in a message's text (an assistant's reply; none elsewhere). */
export function writesIn(message: Message): AgentWrite[] {
  if (message.role !== 'Assistant') return [];
  const out: AgentWrite[] = [];
  for (const segment of message.segments) {
    if (segment.kind !== 'text') continue;
    segment.value.split('\n').forEach((text, index) => {
      const match = WRITE_LINE.exec(text);
      if (match !== null) {
        out.push({
          id: match[1] ?? '',
          name: AGENT_WRITE_NAME,
          line: segment.span.startLine + index,
        });
      }
    });
  }
  return out;
}

/** The write on 1-based `line`, if that line is one. */
export function writeAt(doc: ChatDocument, line: number): AgentWrite | undefined {
  const message = doc.messages.find(
    (candidate) => candidate.span.startLine <= line && candidate.span.endLine >= line,
  );
  return message === undefined ? undefined : writesIn(message).find((write) => write.line === line);
}

/**
 * The call `:Flemma tool:undo` on 0-based `row` means, and the row its `undone` mark goes on: a
 * an agent's write on that line (the line itself), else a tool call that ran (its result's header).
 */
export function undoTarget(
  document: ChatDocument,
  row: number,
): { ok: true; call: { id: string; name: string }; row: number } | { ok: false; message: string } {
  // The write on the line itself first: a tool call is looked up by its nearest block.
  const write = writeAt(document, row + 1);
  if (write !== undefined) return { ok: true, call: write, row: write.line - 1 };
  const found = toolCallAt(document, row + 1);
  if (!found.ok) return { ok: false, message: found.error };
  const { call } = found;
  const result = call.result;
  if (result === undefined || result.placeholder !== undefined) {
    return { ok: false, message: `${call.name} (${call.id}) has not run: nothing to undo` };
  }
  return { ok: true, call, row: result.span.startLine - 1 };
}
