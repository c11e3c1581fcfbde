// How every `.chat` construct is spelled in the buffer. The streamer, the tool cycle and the
// commands all write through these functions, so the buffer looks the same whoever wrote it and
// the parser reads back exactly what went in.
//
// Each function is pure and returns buffer lines: no line contains `\n`. Text is split on `\n`,
// a `\r` ending a line is dropped (so `\r\n` text gives the lines a file read would), and every
// other character stays in its line.
//
// Two kinds of awkward input, two policies:
// - Values the grammar cannot carry and that must not change (role names, tool names and ids,
//   thinking providers and signatures, which go back to the provider) are refused with a
//   `ChatWriteError`; altering them would break the conversation later and less visibly.
// - Free text is adjusted as little as possible where it would otherwise break the document:
//   fences grow past any backtick run in their body, thinking lines that would be read as
//   structure get the format's escape (escape.ts; removed again when the chat is sent), abort
//   messages are folded onto one line with `-->` defused. Each function says what it changes.

import type { PlaceholderStatus, ThinkingSignature } from './ast.js';
import { escapeBlock } from './escape.js';

/** A value that the `.chat` grammar cannot represent without changing it. */
export class ChatWriteError extends Error {
  override name = 'ChatWriteError';
}

const ROLE_NAME = /^[A-Za-z0-9]+$/;
const PROVIDER_NAME = /^[A-Za-z0-9]+$/;

/** Backticks one longer than the longest backtick run in `content`, at least three. */
export function fenceFor(content: string): string {
  let longest = 0;
  for (const run of content.matchAll(/`+/g)) longest = Math.max(longest, run[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/** `@Role:`; the role must be letters and digits. */
export function roleMarker(role: string): string[] {
  if (!ROLE_NAME.test(role)) throw new ChatWriteError(`Invalid role name: ${JSON.stringify(role)}`);
  return [`@${role}:`];
}

/**
 * Assistant text, verbatim (as a stream writes it, after the escape of escape.ts, which the
 * stream applies as it goes: reply.ts); empty text gives no lines.
 */
export function assistantText(text: string): string[] {
  return bodyLines(text);
}

/** Arguments of {@link toolUse}. */
export interface ToolUseBlock {
  name: string;
  id: string;
  /** Written as compact JSON; `undefined` (or anything JSON cannot encode) is written as `{}`. */
  input: unknown;
}

/** `**Tool Use:** \`name\` (\`id\`)`, a blank line, then the input as compact JSON in a `json` fence. */
export function toolUse({ name, id, input }: ToolUseBlock): string[] {
  checkToolName(name);
  checkToolId(id);
  const json = encodeJson(input) ?? '{}';
  const fence = fenceFor(json);
  return [`**Tool Use:** \`${name}\` (\`${id}\`)`, '', `${fence}json`, json, fence];
}

/**
 * A placeholder in its current form (docs/chat-format.md §8): bare result header, blank line, a fence opened with
 * `flemma:tool status=<status>`, the content lines (if any), the closing fence.
 */
export function placeholder(id: string, status: PlaceholderStatus, content = ''): string[] {
  checkToolId(id);
  const fence = fenceFor(content);
  return [
    resultHeader(id, false),
    '',
    `${fence}flemma:tool status=${status}`,
    ...bodyLines(content),
    fence,
  ];
}

/** Arguments of {@link toolResult}. */
export interface ToolResultBlock {
  id: string;
  /**
   * Success: a string is written as-is; `undefined`/`null` as an empty body; a number or boolean
   * as its text; anything else as compact JSON in a `json` fence.
   * Error: the error message, rendered the same way (no `json` tag); empty means `Unknown error`.
   */
  output: unknown;
  isError: boolean;
  /** With `isError`: what the tool printed before failing, appended under `Partial output:`. */
  partialOutput?: unknown;
}

/** A finished result: header (` (error)` when failed), blank line, fenced body. */
export function toolResult({ id, output, isError, partialOutput }: ToolResultBlock): string[] {
  checkToolId(id);
  let content: string;
  let tag = '';
  if (isError) {
    const message = renderOutput(output).text;
    const partial = renderOutput(partialOutput).text;
    content = message === '' ? 'Unknown error' : message;
    if (partial !== '') content += `\n\nPartial output:\n${partial}`;
  } else {
    const rendered = renderOutput(output);
    content = rendered.text;
    if (rendered.json) tag = 'json';
  }
  const fence = fenceFor(content);
  return [resultHeader(id, isError), '', `${fence}${tag}`, ...bodyLines(content), fence];
}

/** Arguments of {@link thinking}. */
export interface ThinkingBlock {
  /** The reasoning text (or, when `redacted`, the opaque data); written trimmed. */
  content: string;
  /** An empty `value` counts as no signature. Not allowed together with `redacted`. */
  signature?: ThinkingSignature;
  redacted?: boolean;
}

/**
 * A thinking block: `<thinking provider:signature="…">`, `<thinking>` or `<thinking redacted>`,
 * the trimmed content, `</thinking>`. A signature with no content gives the opening line directly
 * followed by `</thinking>`; no content and no signature give no lines at all.
 *
 * Content lines the parser would read as structure (a `</thinking>` that would end the block, a
 * role marker that would end the message, a fence opener that never closes and would hide the
 * next role markers, …) get the format's escape, a backslash before the line (escape.ts); the
 * request removes it again, so the provider gets back the exact text its signature vouches for.
 */
export function thinking({ content, signature, redacted = false }: ThinkingBlock): string[] {
  const text = content.trim();
  const signed = signature !== undefined && signature.value !== '';
  if (redacted && signed) {
    throw new ChatWriteError('A redacted thinking block cannot carry a signature');
  }
  if (text === '' && !signed) return [];
  const opener = redacted
    ? '<thinking redacted>'
    : signed
      ? `<thinking ${signatureAttribute(signature)}>`
      : '<thinking>';
  return [opener, ...escapeBlock(bodyLines(text)), '</thinking>'];
}

/** `<thinking provider:signature="…"/>`: a signature with no thinking text. */
export function selfClosingThinking(signature: ThinkingSignature): string[] {
  return [`<thinking ${signatureAttribute(signature)}/>`];
}

/**
 * `<!-- flemma:aborted: message -->`. The message is trimmed, line breaks (with the whitespace
 * around them) become one space, and every `-->` becomes `-- >` so the comment ends only where
 * the writer ends it. An empty message gives `<!-- flemma:aborted: -->`.
 */
export function abortedMarker(message: string): string[] {
  const folded = message
    .replace(/\s*[\r\n]+\s*/g, ' ')
    .replaceAll('-->', '-- >')
    .trim();
  return [folded === '' ? '<!-- flemma:aborted: -->' : `<!-- flemma:aborted: ${folded} -->`];
}

/**
 * What goes before a block (tool use, thinking) appended to a reply whose text so far is
 * `contentSoFar`: nothing for an empty reply, `\n` after a newline, `\n\n` otherwise.
 */
export function blockPrefix(contentSoFar: string): string {
  if (contentSoFar.trim() === '') return '';
  return contentSoFar.endsWith('\n') ? '\n' : '\n\n';
}

/**
 * What goes before a redacted thinking block: nothing for an empty reply or after a newline,
 * `\n` otherwise (it sits directly under what precedes it).
 */
export function redactedPrefix(contentSoFar: string): string {
  if (contentSoFar.trim() === '' || contentSoFar.endsWith('\n')) return '';
  return '\n';
}

/**
 * A block as a stream chunk: the prefix for `contentSoFar`, the lines, a final newline; `''` for
 * a block with no lines. Redacted thinking blocks use {@link redactedPrefix}.
 */
export function blockChunk(contentSoFar: string, block: readonly string[]): string {
  if (block.length === 0) return '';
  const prefix =
    block[0] === '<thinking redacted>' ? redactedPrefix(contentSoFar) : blockPrefix(contentSoFar);
  return `${prefix}${block.join('\n')}\n`;
}

// Split on `\n`, dropping a `\r` that ends a line (`\r\n` text), as the parser does for text.
function bodyLines(content: string): string[] {
  if (content === '') return [];
  return content.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
}

function resultHeader(id: string, isError: boolean): string {
  return `**Tool Result:** \`${id}\`${isError ? ' (error)' : ''}`;
}

// A name sits between backticks in the header; an id between backticks and before a `)`.
function checkToolName(name: string): void {
  if (name === '' || /[`\r\n]/.test(name)) {
    throw new ChatWriteError(`Tool name cannot be written: ${JSON.stringify(name)}`);
  }
}

function checkToolId(id: string): void {
  if (id === '' || /[`)\r\n]/.test(id)) {
    throw new ChatWriteError(`Tool id cannot be written: ${JSON.stringify(id)}`);
  }
}

// The parser reads `provider:signature="value"` with a value free of `"`; no escape exists, so a
// value that does not fit is refused (a changed signature would fail at the provider anyway).
function signatureAttribute({ provider, value }: ThinkingSignature): string {
  if (!PROVIDER_NAME.test(provider)) {
    throw new ChatWriteError(`Invalid thinking provider: ${JSON.stringify(provider)}`);
  }
  if (/["\r\n]/.test(value)) {
    throw new ChatWriteError('A thinking signature cannot contain `"` or a line break');
  }
  return `${provider}:signature="${value}"`;
}

function encodeJson(value: unknown): string | undefined {
  // JSON.stringify answers undefined for undefined, functions and symbols (its type says string).
  const json: string | undefined = JSON.stringify(value);
  return json;
}

function renderOutput(value: unknown): { text: string; json: boolean } {
  switch (typeof value) {
    case 'string':
      return { text: value, json: false };
    case 'undefined':
      return { text: '', json: false };
    case 'number':
    case 'boolean':
    case 'bigint':
      return { text: value.toString(), json: false };
    default: {
      if (value === null) return { text: '', json: false };
      const json = encodeJson(value);
      return json === undefined ? { text: '', json: false } : { text: json, json: true };
    }
  }
}
