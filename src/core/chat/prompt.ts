// Prompt assembly: document tree → provider-neutral prompt. Templates and file references stay
// typed parts (they are evaluated later, in Neovim); every tool use without a finished result
// gets a synthetic error result and a warning, so that a request is always well-formed.
import type { ChatDocument, Diagnostic, Message, Segment, Span } from './ast.js';
import { unescapeText } from './escape.js';
import { type DuplicateToolUse, type ToolUseIds, toolUseIds } from './tool-ids.js';
import { UNDONE_NOTE, isUndone } from './undone.js';

export interface TextPart {
  kind: 'text';
  text: string;
}

/** `{{ … }}` or `{% … %}`, to be evaluated before sending. */
export interface TemplatePart {
  kind: 'expression' | 'code';
  code: string;
  trimBefore: boolean;
  trimAfter: boolean;
  line: number;
}

/** `@./file` and friends, to be read (and typed by MIME) before sending. */
export interface FileReferencePart {
  kind: 'file_reference';
  path: string;
  raw: string;
  mime?: string;
  /** An MCP resource (`@mcp:<server>:<uri>`): its server; `path` is the URI. */
  server?: string;
  line: number;
}

export interface ThinkingPart {
  kind: 'thinking';
  content: string;
  redacted: boolean;
  signature?: { provider: string; value: string };
}

export interface ToolUsePart {
  kind: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

export interface ToolResultPart {
  kind: 'tool_result';
  toolUseId: string;
  /** The name of the tool use it answers. */
  name: string;
  parts: (TextPart | FileReferencePart)[];
  isError: boolean;
  /** Made up by the assembly for a tool use that has no finished result. */
  synthetic: boolean;
}

export type ContentPart = TextPart | TemplatePart | FileReferencePart;
export type UserPart = ContentPart | ToolResultPart;
export type AssistantPart = TextPart | ThinkingPart | ToolUsePart;

export type PromptMessage =
  | { role: 'user'; parts: UserPart[]; line: number }
  | { role: 'assistant'; parts: AssistantPart[]; line: number };

export interface PendingToolCall {
  id: string;
  name: string;
  /** Line of the `**Tool Use:**` header. */
  line: number;
  /** The reply that holds it was interrupted (it ends with an abort marker). */
  aborted: boolean;
  /** It repeats an earlier tool use's id; `id` is its derived id (tool-ids.ts). */
  duplicateOf?: DuplicateToolUse;
}

export interface Prompt {
  /** Parts of the last `@System:` message (empty when there is none). */
  system: ContentPart[];
  messages: PromptMessage[];
  /** Tool uses that have no finished result, in buffer order. */
  pendingToolCalls: PendingToolCall[];
  diagnostics: Diagnostic[];
}

export const NO_RESULT_TEXT = 'No result provided';

/**
 * A message's segment as a part. `escaped`: its text is message text, which the format's escape
 * (escape.ts) may mark on lines that look like structure; the part carries the text as written
 * (a piece after a template or reference on its line starts no line). A tool result's body is
 * never escaped (its fence holds any line) and is taken as it stands.
 */
function contentPart(segment: Segment, escaped = true): ContentPart | undefined {
  switch (segment.kind) {
    case 'text':
      if (!escaped) return { kind: 'text', text: segment.value };
      return {
        kind: 'text',
        text: unescapeText(segment.value, (segment.span.startCol ?? 0) === 0),
      };
    case 'expression':
    case 'code':
      return {
        kind: segment.kind,
        code: segment.code,
        trimBefore: segment.trimBefore,
        trimAfter: segment.trimAfter,
        line: segment.span.startLine,
      };
    case 'file_reference': {
      const part: FileReferencePart = {
        kind: 'file_reference',
        path: segment.path,
        raw: segment.raw,
        line: segment.span.startLine,
      };
      if (segment.mime !== undefined) part.mime = segment.mime;
      if (segment.server !== undefined) part.server = segment.server;
      return part;
    }
    default:
      return undefined;
  }
}

function isBlankText(part: { kind: string; text?: string }): boolean {
  return part.kind === 'text' && (part.text ?? '').trim() === '';
}

/** The assistant parts of a message; abort markers become a note or vanish (see below). */
function assistantParts(message: Message, ids: ToolUseIds): AssistantPart[] {
  const hasToolUse = message.segments.some((segment) => segment.kind === 'tool_use');
  const parts: AssistantPart[] = [];
  for (const segment of message.segments) {
    switch (segment.kind) {
      case 'text':
        // The model's text as it wrote it: the escape of lines that look like structure removed.
        parts.push({ kind: 'text', text: unescapeText(segment.value) });
        break;
      case 'thinking': {
        const part: ThinkingPart = {
          kind: 'thinking',
          // Byte for byte what the provider sent (its signature vouches for it).
          content: unescapeText(segment.content),
          redacted: segment.redacted,
        };
        if (segment.signature !== undefined) part.signature = { ...segment.signature };
        parts.push(part);
        break;
      }
      case 'tool_use':
        parts.push({
          kind: 'tool_use',
          id: ids.keyOf(segment),
          name: segment.name,
          input: segment.input,
        });
        break;
      case 'aborted':
        // The model should know its reply was cut off; with tool uses the synthetic error
        // results already say so.
        if (!hasToolUse) parts.push({ kind: 'text', text: `<!-- ${segment.message} -->` });
        break;
      default:
        break;
    }
  }
  while (parts.length > 0 && isBlankText(parts[parts.length - 1] as { kind: string })) parts.pop();
  return parts;
}

function endsAborted(message: Message): boolean {
  for (let i = message.segments.length - 1; i >= 0; i--) {
    const segment = message.segments[i];
    if (segment === undefined) continue;
    if (segment.kind === 'text' && segment.value.trim() === '') continue;
    return segment.kind === 'aborted';
  }
  return false;
}

function span(line: number): Span {
  return { startLine: line, endLine: line };
}

/** The tool uses of a document (their name and order) and the result that answers each. */
interface Answers {
  ids: ToolUseIds;
  uses: Map<string, { name: string; order: number }>;
  answer: Map<string, Segment>;
}

/**
 * Which result answers each tool use: the last finished one that comes after the use. A result
 * before its use, or for an id no tool use has, answers nothing (the parser warns). A tool use
 * that repeats an earlier one's id is known by its derived id (tool-ids.ts).
 */
function answersOf(document: ChatDocument): Answers {
  const ids = toolUseIds(document.messages);
  const uses = new Map<string, { name: string; order: number }>();
  const answer = new Map<string, Segment>();
  for (const message of document.messages) {
    for (const segment of message.segments) {
      if (message.role === 'Assistant' && segment.kind === 'tool_use') {
        const key = ids.keyOf(segment);
        if (!uses.has(key)) uses.set(key, { name: segment.name, order: uses.size });
      } else if (
        message.role === 'You' &&
        segment.kind === 'tool_result' &&
        segment.placeholder === undefined &&
        uses.has(segment.toolUseId)
      ) {
        answer.set(segment.toolUseId, segment);
      }
    }
  }
  return { ids, uses, answer };
}

/** The prompt being assembled, with the synthetic results owed to the next user message. */
interface Assembly extends Answers {
  diagnostics: Diagnostic[];
  messages: PromptMessage[];
  pendingToolCalls: PendingToolCall[];
  owed: ToolResultPart[];
  /** The text each rewriting slash command stands for, by line (docs/slash-commands.md). */
  slashTexts?: ReadonlyMap<number, string>;
}

/** A user message's parts: every tool result first (the owed ones too), in tool-use order. */
function userParts(assembly: Assembly, parts: UserPart[]): UserPart[] {
  const orderOf = (id: string): number => assembly.uses.get(id)?.order ?? Number.MAX_SAFE_INTEGER;
  const results = [...assembly.owed, ...parts.filter((part) => part.kind === 'tool_result')].sort(
    (a, b) => orderOf(a.toolUseId) - orderOf(b.toolUseId),
  );
  assembly.owed = [];
  return [...results, ...parts.filter((part) => part.kind !== 'tool_result')];
}

/** A tool use without a finished result: pending, warned about, and owed a synthetic error. */
function oweResult(
  assembly: Assembly,
  segment: Extract<Segment, { kind: 'tool_use' }>,
  aborted: boolean,
): void {
  const key = assembly.ids.keyOf(segment);
  const call: PendingToolCall = {
    id: key,
    name: segment.name,
    line: segment.span.startLine,
    aborted,
  };
  const duplicate = assembly.ids.duplicateOf(segment);
  if (duplicate !== undefined) call.duplicateOf = duplicate;
  assembly.pendingToolCalls.push(call);
  assembly.diagnostics.push({
    severity: 'warning',
    code: 'tool-use-unresolved',
    message: `Tool call '${segment.name}' (${key}) has no result; '${NO_RESULT_TEXT}' is sent as its error result`,
    span: span(segment.span.startLine),
  });
  assembly.owed.push({
    kind: 'tool_result',
    toolUseId: key,
    name: segment.name,
    parts: [{ kind: 'text', text: NO_RESULT_TEXT }],
    isError: true,
    synthetic: true,
  });
}

/** An `@Assistant:` message: the owed results go first, its unanswered tool uses are owed. */
function addAssistant(assembly: Assembly, message: Message): void {
  if (assembly.owed.length > 0) {
    assembly.messages.push({
      role: 'user',
      parts: userParts(assembly, []),
      line: message.span.startLine,
    });
  }
  const parts = assistantParts(message, assembly.ids);
  const aborted = endsAborted(message);
  for (const segment of message.segments) {
    if (segment.kind !== 'tool_use') continue;
    if (assembly.answer.has(assembly.ids.keyOf(segment))) continue;
    oweResult(assembly, segment, aborted);
  }
  if (parts.length > 0) {
    assembly.messages.push({ role: 'assistant', parts, line: message.span.startLine });
  }
}

/** The part of a tool result that answers its use. */
function resultPart(
  assembly: Assembly,
  segment: Extract<Segment, { kind: 'tool_result' }>,
): ToolResultPart {
  return {
    kind: 'tool_result',
    toolUseId: segment.toolUseId,
    name: assembly.uses.get(segment.toolUseId)?.name ?? '',
    parts: [
      ...segment.segments.flatMap((piece) => {
        const part = contentPart(piece, false);
        return part !== undefined && (part.kind === 'text' || part.kind === 'file_reference')
          ? [part]
          : [];
      }),
      ...(isUndone(segment.meta) ? [{ kind: 'text' as const, text: `\n\n${UNDONE_NOTE}` }] : []),
    ],
    isError: segment.isError,
    synthetic: false,
  };
}

/**
 * A slash command's line in the text sent: the text a rewrite made of it, or nothing (its line
 * is left out). Answers whether the text after it starts on a line of its own.
 */
function slashPart(
  assembly: Assembly,
  parts: UserPart[],
  segment: Extract<Segment, { kind: 'slash_command' }>,
): boolean {
  const text = assembly.slashTexts?.get(segment.span.startLine);
  const content = parts.some((part) => part.kind !== 'tool_result');
  if (text === undefined || text === '') return content;
  parts.push({ kind: 'text', text: `${content ? '\n' : ''}${text}` });
  return true;
}

/** A `@You:` message: its answering results and its content, trailing blank text dropped. */
function addUser(assembly: Assembly, message: Message): void {
  const parts: UserPart[] = [];
  let breakBefore = false;
  for (const segment of message.segments) {
    if (segment.kind === 'tool_result') {
      if (assembly.answer.get(segment.toolUseId) !== segment) continue;
      parts.push(resultPart(assembly, segment));
    } else if (segment.kind === 'slash_command') {
      breakBefore = slashPart(assembly, parts, segment) || breakBefore;
    } else {
      if (breakBefore) parts.push({ kind: 'text', text: '\n' });
      breakBefore = false;
      const part = contentPart(segment);
      if (part !== undefined) parts.push(part);
    }
  }
  while (parts.length > 0 && isBlankText(parts[parts.length - 1] as { kind: string })) {
    parts.pop();
  }
  const ordered = userParts(assembly, parts);
  if (ordered.length > 0) {
    assembly.messages.push({ role: 'user', parts: ordered, line: message.span.startLine });
  }
}

/**
 * Build the prompt of a document. `slashTexts`: the text each rewriting slash command's line
 * stands for (by line); every other slash command's line is left out.
 */
export function assemblePrompt(
  document: ChatDocument,
  slashTexts?: ReadonlyMap<number, string>,
): Prompt {
  const assembly: Assembly = {
    ...answersOf(document),
    diagnostics: [],
    messages: [],
    pendingToolCalls: [],
    owed: [],
  };
  if (slashTexts !== undefined) assembly.slashTexts = slashTexts;
  let system: ContentPart[] = [];
  for (const message of document.messages) {
    if (message.role === 'System') {
      system = message.segments.flatMap((segment) => contentPart(segment) ?? []);
    } else if (message.role === 'Assistant') {
      addAssistant(assembly, message);
    } else if (message.role === 'You') {
      addUser(assembly, message);
    }
    // Other roles are kept in the document but never sent.
  }
  const { messages, pendingToolCalls, diagnostics } = assembly;
  if (assembly.owed.length > 0) {
    messages.push({ role: 'user', parts: userParts(assembly, []), line: document.lineCount });
  }
  return { system, messages, pendingToolCalls, diagnostics };
}

/**
 * A `@You:` message that holds only whitespace (and slash commands whose line sends nothing:
 * `slashTexts` has the lines that do).
 */
function isBlankMessage(message: Message, slashTexts?: ReadonlyMap<number, string>): boolean {
  return message.segments.every(
    (segment) =>
      (segment.kind === 'text' && segment.value.trim() === '') ||
      (segment.kind === 'slash_command' && (slashTexts?.get(segment.span.startLine) ?? '') === ''),
  );
}

/**
 * Whether a send of `document` (whose prompt is `prompt`) would bring the model nothing new: the
 * chat ends with one or more `@You:` messages that hold only whitespace after a reply, and no
 * tool call waits for its result (an unanswered call sends its error result, which is new).
 * Sending would only repeat the conversation, so the user is told instead (docs/chat-format.md).
 */
export function nothingNewToSend(
  document: ChatDocument,
  prompt: Prompt,
  slashTexts?: ReadonlyMap<number, string>,
): boolean {
  if (prompt.pendingToolCalls.length > 0) return false;
  let blank = 0;
  for (let i = document.messages.length - 1; i >= 0; i--) {
    const message = document.messages[i];
    if (message === undefined) continue;
    if (message.role === 'Assistant') return blank > 0;
    if (message.role === 'You') {
      if (!isBlankMessage(message, slashTexts)) return false;
      blank += 1;
    } else if (message.role === 'System') {
      // A system prompt changed after the reply is something new.
      return false;
    }
    // Other roles are never sent.
  }
  return false;
}
