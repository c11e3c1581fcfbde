// An MCP prompt's messages (`prompts/get`) as chat text: `@You:` / `@Assistant:` messages the
// user reads and edits before sending (`:Flemma mcp:prompt`, docs/mcp.md). Nothing of a prompt
// is sent by inserting it; what it holds is evaluated when the user sends, like anything typed.

import { describeContent } from './bridge.js';
import type { McpPromptMessage } from './types.js';

/** A line the chat format would read as a role marker (docs/chat-format.md §4). */
const ROLE_MARKER = /^@[A-Za-z0-9]+:[ \t]*$/;
/** What a send evaluates in a `@You:` message: templates, file or MCP references. */
const EVALUATED = /\{\{|\{%|(?:^|[^A-Za-z0-9])@(?:\.\.?\/|\/|~\/|mcp:)/m;

export interface PromptText {
  /** The lines to insert, starting with a role marker. */
  lines: string[];
  /** What the user should know (content left out, text that a send will evaluate). */
  notes: string[];
}

/**
 * The messages as chat lines. Consecutive messages of one role become one message. Text is
 * inserted as written, except a line that would start a message (`@You:`), which is indented
 * by a space. A resource the prompt embeds is inlined when it is text; one with data, and a
 * resource link, become an `@mcp:<server>:<uri>` reference in a `@You:` message (read when the
 * chat is sent) and a one-line summary in an `@Assistant:` one; an image or audio block is
 * summarised (its data never reaches the buffer).
 */
export function promptChatText(server: string, messages: readonly McpPromptMessage[]): PromptText {
  const notes = new Set<string>();
  const blocks: { role: 'You' | 'Assistant'; text: string }[] = [];
  for (const message of messages) {
    const role = message.role === 'assistant' ? 'Assistant' : 'You';
    const text = contentText(server, role, message.content, notes);
    const last = blocks.at(-1);
    if (last !== undefined && last.role === role) last.text += `\n\n${text}`;
    else blocks.push({ role, text });
  }
  const lines: string[] = [];
  for (const block of blocks) {
    if (lines.length > 0) lines.push('');
    lines.push(`@${block.role}:`);
    for (const line of block.text.split(/\r?\n/)) {
      if (ROLE_MARKER.test(line)) {
        notes.add('a line that would start a message was indented by a space');
        lines.push(` ${line}`);
      } else lines.push(line);
    }
  }
  return { lines, notes: [...notes] };
}

function contentText(
  server: string,
  role: 'You' | 'Assistant',
  content: McpPromptMessage['content'],
  notes: Set<string>,
): string {
  const reference = (uri: string): string => {
    notes.add(`@mcp:${server}:… references are read from the server when you send`);
    return `@mcp:${server}:${uri}`;
  };
  switch (content.type) {
    case 'text': {
      const text = typeof content['text'] === 'string' ? content['text'] : '';
      if (role === 'You' && EVALUATED.test(text)) {
        notes.add(
          "the prompt's text holds templates or references, which are evaluated when you send: review them",
        );
      }
      return text;
    }
    case 'resource': {
      const resource = content['resource'];
      const fields =
        typeof resource === 'object' && resource !== null
          ? (resource as Record<string, unknown>)
          : {};
      const uri = typeof fields['uri'] === 'string' ? fields['uri'] : '';
      if (typeof fields['text'] === 'string') return fields['text'];
      if (role === 'You' && uri !== '') return reference(uri);
      break;
    }
    case 'resource_link': {
      const uri = typeof content['uri'] === 'string' ? content['uri'] : '';
      if (role === 'You' && uri !== '') return reference(uri);
      break;
    }
    default:
      break;
  }
  notes.add(`${content.type} content is shown as a summary (its data is not inserted)`);
  return describeContent(content);
}
