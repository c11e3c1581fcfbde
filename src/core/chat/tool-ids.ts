// Tool uses that repeat an id. A `.chat` file can hold two `**Tool Use:**` blocks with one id (a
// model's mistake, a hand edit, a bad merge); a provider refuses a request that carries both, and
// a result could not tell which one it answers.
//
// Decisions (see docs/chat-format.md, "Tool uses with the same id"):
// - The first tool use (in buffer order) keeps its id. Each later one is known by a derived id,
//   `<id>_dup<n>` (n = 2 for the second, 3 for the third; a number already taken by another tool
//   use is skipped), made of the characters every provider accepts and at most 64 of them. Its
//   result is written and read under that id.
// - The derived id is all the conversation knows of it: the parser warns on its header, the tool
//   cycle never runs it but answers it with an error result (`duplicateToolIdText`), and the
//   request carries it under the derived id with that result, so that every provider gets one
//   tool use per id, each with its result.
import type { Message, ToolUseSegment } from './ast.js';
import { wireToolId } from '../provider/types.js';

export interface DuplicateToolUse {
  /** The id as written, shared with an earlier tool use. */
  id: string;
  /** 1-based line of the first tool use with that id. */
  firstLine: number;
}

export interface ToolUseIds {
  /** The id the conversation knows a tool use by: its own, or the derived one of a repeat. */
  keyOf(use: ToolUseSegment): string;
  /** Set for a tool use whose id an earlier one already has. */
  duplicateOf(use: ToolUseSegment): DuplicateToolUse | undefined;
}

const WIRE_LIMIT = 64;

function derivedId(id: string, n: number): string {
  const suffix = `_dup${String(n)}`;
  return wireToolId(id).slice(0, WIRE_LIMIT - suffix.length) + suffix;
}

/** The ids of the tool uses of `messages` (those of `@Assistant:` messages), repeats resolved. */
export function toolUseIds(messages: readonly Message[]): ToolUseIds {
  const uses: ToolUseSegment[] = [];
  for (const message of messages) {
    if (message.role !== 'Assistant') continue;
    for (const segment of message.segments) {
      if (segment.kind === 'tool_use') uses.push(segment);
    }
  }
  const first = new Map<string, ToolUseSegment>();
  let repeated = false;
  for (const use of uses) {
    if (first.has(use.id)) repeated = true;
    else first.set(use.id, use);
  }
  if (!repeated) {
    return { keyOf: (use) => use.id, duplicateOf: () => undefined };
  }
  const taken = new Set(first.keys());
  const keys = new Map<ToolUseSegment, string>();
  const duplicates = new Map<ToolUseSegment, DuplicateToolUse>();
  const seen = new Map<string, number>();
  for (const use of uses) {
    const count = (seen.get(use.id) ?? 0) + 1;
    seen.set(use.id, count);
    const original = first.get(use.id);
    if (count === 1 || original === undefined) continue;
    let n = count;
    while (taken.has(derivedId(use.id, n))) n += 1;
    const key = derivedId(use.id, n);
    taken.add(key);
    keys.set(use, key);
    duplicates.set(use, { id: use.id, firstLine: original.span.startLine });
  }
  return {
    keyOf: (use) => keys.get(use) ?? use.id,
    duplicateOf: (use) => duplicates.get(use),
  };
}

/** The parser's warning on a repeated tool use's header. */
export function duplicateToolIdWarning(duplicate: DuplicateToolUse, key: string): string {
  return `Tool use id ${duplicate.id} is already used by the tool use on line ${String(duplicate.firstLine)}; this one is not run and is answered as ${key} with an error result`;
}

/** The error result the tool cycle writes for a repeated tool use (the model reads it too). */
export function duplicateToolIdText(duplicate: DuplicateToolUse): string {
  return `Duplicate tool id ${duplicate.id}: an earlier tool call (line ${String(duplicate.firstLine)} of the chat) already has this id, so this call was not run. Call the tool again with a new id if it is still needed.`;
}
