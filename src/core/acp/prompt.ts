// What an agent's `session/prompt` carries: the chat's last `@You:` message (docs/agents.md). The
// agent keeps its own history in its session, so earlier turns are not sent again (but see
// `transcriptPrompt` for a session that starts over). Text goes as text; a file the message
// references (`@./notes.md`) as an embedded resource with its text, or an image when the agent
// takes images; what it cannot take is named in a line of text.
import type { ContentBlock, PromptCapabilities } from '@agentclientprotocol/sdk';
import { createHash } from 'node:crypto';
import {
  type EvaluatedMessage,
  type EvaluatedPart,
  type ProviderRequest,
  stableJson,
} from '../provider/types.js';
import { pathToFileURL } from 'node:url';
import { isAbsolute, resolve } from 'node:path';

/** The file's URI: its absolute path (against `cwd`) as a `file:` URL. */
function fileUri(filename: string, cwd: string): string {
  return pathToFileURL(isAbsolute(filename) ? filename : resolve(cwd, filename)).href;
}

function partBlock(part: EvaluatedPart, caps: PromptCapabilities, cwd: string): ContentBlock {
  switch (part.kind) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'text_file':
      return caps.embeddedContext === true
        ? {
            type: 'resource',
            resource: {
              uri: fileUri(part.filename, cwd),
              mimeType: part.mimeType,
              text: part.text,
            },
          }
        : { type: 'text', text: `${part.filename}:\n${part.text}` };
    case 'image':
      return caps.image === true
        ? { type: 'image', mimeType: part.mimeType, data: part.data }
        : { type: 'resource_link', name: part.filename, uri: fileUri(part.filename, cwd) };
    case 'pdf':
    case 'unsupported_file':
      return { type: 'resource_link', name: part.filename, uri: fileUri(part.filename, cwd) };
  }
}

/** The last user message of a request, if the request ends with one. */
function lastUser(
  request: ProviderRequest,
): Extract<EvaluatedMessage, { role: 'user' }> | undefined {
  const last = request.messages[request.messages.length - 1];
  return last?.role === 'user' ? last : undefined;
}

/** The prompt of a turn: the chat's last `@You:` message, its tool results left out. */
export function promptBlocks(
  request: ProviderRequest,
  caps: PromptCapabilities,
  cwd: string,
): ContentBlock[] {
  const message = lastUser(request);
  if (message === undefined) return [];
  return message.parts.flatMap((part) =>
    part.kind === 'tool_result' ? [] : [partBlock(part, caps, cwd)],
  );
}

/** A message's text as a transcript shows it. */
function messageText(message: EvaluatedMessage): string {
  return message.parts
    .map((part) => {
      if (part.kind === 'text' || part.kind === 'text_file') return part.text;
      if (part.kind === 'thinking' || part.kind === 'tool_use' || part.kind === 'tool_result')
        return '';
      return `[${part.filename}]`;
    })
    .join('')
    .trim();
}

/**
 * The prompt of a session that starts over on a chat with earlier turns (the agent cannot load its
 * old session): the transcript so far as context, then the last message.
 */
export function transcriptPrompt(
  request: ProviderRequest,
  caps: PromptCapabilities,
  cwd: string,
): ContentBlock[] {
  const last = promptBlocks(request, caps, cwd);
  const earlier = request.messages.slice(0, -1);
  if (earlier.length === 0) return last;
  const transcript = earlier
    .map((message) => `${message.role === 'user' ? 'User' : 'Assistant'}: ${messageText(message)}`)
    .join('\n\n');
  const intro =
    'This conversation started in an earlier session that is no longer available. Its transcript, for context:\n\n';
  return [{ type: 'text', text: `${intro}${transcript}\n\nThe new message follows.` }, ...last];
}

/** Where a chat's agent session stands: its id, and the conversation it was last prompted with. */
export interface SessionMark {
  sessionId: string;
  /** The messages of the request that prompted it last (its prompt the last of them). */
  count: number;
  /** Their digest (`transcriptDigest`). */
  digest: string;
}

/** A digest of messages, equal for equal messages. */
export function transcriptDigest(messages: readonly EvaluatedMessage[]): string {
  return createHash('sha256').update(stableJson(messages)).digest('hex');
}

/**
 * Whether a request goes on from the session's last turn: it holds more messages, and those the
 * session was prompted with are unchanged (an edit of an earlier turn means the agent's session
 * no longer matches the chat).
 */
export function continues(request: ProviderRequest, mark: SessionMark): boolean {
  return (
    request.messages.length > mark.count &&
    transcriptDigest(request.messages.slice(0, mark.count)) === mark.digest
  );
}

/** The mark of a session prompted with `request`. */
export function markOf(sessionId: string, request: ProviderRequest): SessionMark {
  return {
    sessionId,
    count: request.messages.length,
    digest: transcriptDigest(request.messages),
  };
}
