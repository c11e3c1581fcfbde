// `:Flemma compact` (docs/context.md, "Compaction"), the parts that need no editor: the prompt
// that asks the model for a summary, the name of the chat that continues a file, and the text of
// that chat. The host (src/host/compact.ts) asks the model and writes the file.
import type { ChatDocument, Message } from '../chat/ast.js';
import { escapeBlock } from '../chat/escape.js';
import type { PendingToolCall } from '../chat/prompt.js';
import type { EvaluatedMessage, ProviderRequest } from '../provider/types.js';

/**
 * What the model is asked, after the whole conversation, unless `context.compact.prompt` says
 * otherwise. Written for a coding agent's session but not only for one: what someone taking over
 * the work would need, in the order they would need it.
 */
export const DEFAULT_COMPACT_PROMPT = `This conversation is about to be moved into a new chat, because it has grown too long. The new chat will hold only your summary of it, followed by my last message if you have not answered it yet. Write that summary now, so that you (or another assistant) can carry on the work from it alone, without the earlier messages.

Do not call any tool and do not answer or carry out my last request: only summarise. Write in the language of the conversation, in plain Markdown, with these sections:

1. **Goal**: what I am trying to achieve overall, and the constraints and preferences I stated.
2. **Decisions**: what we decided and why, including approaches we tried and dropped, so that they are not tried again.
3. **Files**: every file that was read, created or changed, with its path and its state now (what was changed in it, whether that work is finished, anything left half done). Quote exact names, commands, error messages and short code where the next step depends on them.
4. **Open tasks**: what remains to be done, in order, and any question still waiting for an answer.
5. **Last request**: what I asked for most recently and how far it got.

Leave out pleasantries and anything that no longer matters. Be complete on facts and brief on words.`;

/** `context.compact.prompt` of a configuration's data, or the default prompt. */
export function compactPrompt(data: Readonly<Record<string, unknown>>): string {
  const context = data['context'];
  if (typeof context !== 'object' || context === null) return DEFAULT_COMPACT_PROMPT;
  const compact = (context as Record<string, unknown>)['compact'];
  if (typeof compact !== 'object' || compact === null) return DEFAULT_COMPACT_PROMPT;
  const prompt = (compact as Record<string, unknown>)['prompt'];
  return typeof prompt === 'string' && prompt.trim() !== '' ? prompt : DEFAULT_COMPACT_PROMPT;
}

/**
 * The request that asks for the summary: the chat's own request (its system prompt, messages,
 * tools and parameters) with the prompt as the last user text. The tools stay offered because a
 * conversation with tool calls is only valid with them (Anthropic refuses it otherwise); the
 * prompt asks the model not to call any, and a call it makes anyway is ignored.
 */
export function summaryRequest(request: ProviderRequest, prompt: string): ProviderRequest {
  const messages: EvaluatedMessage[] = [...request.messages];
  const last = messages[messages.length - 1];
  if (last?.role === 'user') {
    // Appended to the last user message rather than sent as a second one in a row.
    messages[messages.length - 1] = {
      role: 'user',
      parts: [...last.parts, { kind: 'text', text: prompt }],
    };
  } else {
    messages.push({ role: 'user', parts: [{ kind: 'text', text: prompt }] });
  }
  return { ...request, messages };
}

/** A tool call that waits for its result (approval, or a run); compaction would lose it. */
export function waitingCall(calls: readonly PendingToolCall[]): PendingToolCall | undefined {
  return calls.find((call) => !call.aborted);
}

const CHAT_SUFFIX = '.chat';
const NUMBERED = /^(.*)\.v(\d+)\.chat$/;

/**
 * The candidate names for the chat that continues `name` (a file name, no directory), in the
 * order they are tried: `notes.chat` → `notes.v2.chat`, `notes.v3.chat`, …; `notes.v2.chat` →
 * `notes.v3.chat`, … . The `v` keeps each one after the file it continues in a listing, whether
 * it sorts by bytes or by the locale's rules (`notes.2.chat` would come before `notes.chat` in
 * both: a digit sorts before the `c` of `chat`). A name not ending in `.chat` gets the suffix.
 */
export function* continuationNames(name: string): Generator<string, never> {
  const numbered = NUMBERED.exec(name);
  let stem: string;
  let next: number;
  if (numbered !== null) {
    stem = numbered[1] ?? '';
    next = Number(numbered[2]) + 1;
  } else {
    stem = name.endsWith(CHAT_SUFFIX) ? name.slice(0, -CHAT_SUFFIX.length) : name;
    next = 2;
  }
  for (;;) {
    yield `${stem}.v${String(next)}${CHAT_SUFFIX}`;
    next += 1;
  }
}

/** The first candidate (`continuationNames`) that `exists` does not know. */
export function continuationName(name: string, exists: (candidate: string) => boolean): string {
  for (const candidate of continuationNames(name)) {
    if (!exists(candidate)) return candidate;
  }
  throw new Error('unreachable');
}

/**
 * The summary as lines of an `@Assistant:` message that read back as plain text: a line the
 * parser would take for structure (a role marker, a tool block, a thinking tag, an abort marker,
 * a fence that never closes and would swallow the messages below) gets the format's escape, a
 * backslash before it (escape.ts), which the request removes again.
 */
export function summaryLines(summary: string): string[] {
  const lines = summary
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/\s+$/, ''));
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return escapeBlock(lines);
}

/** A message's lines as the buffer has them, without the blank lines around its content. */
function messageBody(lines: readonly string[], message: Message, skip: Set<number>): string[] {
  const body: string[] = [];
  for (let line = message.span.startLine + 1; line <= message.span.endLine; line++) {
    if (!skip.has(line)) body.push(lines[line - 1] ?? '');
  }
  while (body.length > 0 && (body[0] ?? '').trim() === '') body.shift();
  while (body.length > 0 && (body[body.length - 1] ?? '').trim() === '') body.pop();
  return body;
}

/** What of the old chat goes into the new one, verbatim. */
export interface CarriedParts {
  /** The frontmatter block, fences included (empty without one). */
  frontmatter: string[];
  /** The body of the last `@System:` message (empty without one). */
  system: string[];
  /**
   * The `@You:` messages after the last reply, each without its tool results (they answer calls
   * of the old chat, which the summary covers): the request the user has not had answered yet.
   */
  user: string[][];
}

/** The parts of the chat whose buffer holds `lines` (parsed as `document`) that compaction keeps. */
export function carriedParts(document: ChatDocument, lines: readonly string[]): CarriedParts {
  const frontmatter =
    document.frontmatter === undefined
      ? []
      : lines.slice(document.frontmatter.span.startLine - 1, document.frontmatter.span.endLine);
  const system = [...document.messages].reverse().find((message) => message.role === 'System');
  const user: string[][] = [];
  for (let i = document.messages.length - 1; i >= 0; i--) {
    const message = document.messages[i];
    if (message === undefined) continue;
    if (message.role === 'Assistant') break;
    if (message.role !== 'You') continue;
    const results = new Set<number>();
    for (const segment of message.segments) {
      if (segment.kind !== 'tool_result') continue;
      for (let line = segment.span.startLine; line <= segment.span.endLine; line++) {
        results.add(line);
      }
    }
    const body = messageBody(lines, message, results);
    if (body.some((line) => line.trim() !== '')) user.unshift(body);
  }
  return {
    frontmatter,
    system: system === undefined ? [] : messageBody(lines, system, new Set()),
    user,
  };
}

/** What the new chat says, apart from what it carries over. */
export interface CompactedChat {
  /** The file name of the chat it continues (no directory: it lies beside it). */
  from: string;
  /** The model's summary, as it arrived. */
  summary: string;
  parts: CarriedParts;
}

/**
 * The text of the chat that continues `from`: its frontmatter; a line that names `from` (in the
 * place before the first message, which is never sent: the `.chat` format's only comment); its
 * system prompt; an `@You:` message that asks for the summary and the `@Assistant:` message that
 * holds it (a reply, so that its text is never read for templates or file references); then the
 * user's unanswered messages, or an empty `@You:` for the next one. Ends with a newline.
 */
export function compactedChat({ from, summary, parts }: CompactedChat): string {
  const out: string[] = [...parts.frontmatter];
  out.push(
    `Continues ${from} (compacted with :Flemma compact; the earlier conversation is there).`,
  );
  out.push('');
  if (parts.system.length > 0) out.push('@System:', ...parts.system, '');
  out.push(
    '@You:',
    `The conversation so far is in ${from}; it grew too long to go on there. Summarise it so that the work can continue here.`,
    '',
    '@Assistant:',
    ...summaryLines(summary),
    '',
  );
  if (parts.user.length === 0) {
    out.push('@You:', '');
  } else {
    parts.user.forEach((body, index) => {
      out.push('@You:', ...body);
      if (index < parts.user.length - 1) out.push('');
    });
  }
  return out.join('\n') + '\n';
}
