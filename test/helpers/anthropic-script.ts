// Scripted Anthropic replies for the fake provider, in the Messages API's streaming events: text
// (in one chunk or several), thinking blocks with their signature, and `tool_use` calls.
import type { FakeRequest, FakeStream } from './fake-provider.js';
import type { OutgoingHttpHeaders } from 'node:http';

export interface ScriptedCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** One content block of a scripted reply; each text delta is a chunk of its own. */
export type ScriptedBlock =
  | { kind: 'text'; deltas: string[] }
  | { kind: 'thinking'; text: string; signature: string }
  | ({ kind: 'tool_use' } & ScriptedCall);

/**
 * A `message_start` event: message `id` of `model`, with no content yet and `usage` (12 tokens in
 * and 1 out unless given).
 */
export function startOfMessage(
  options: { id?: string; model?: string; usage?: Record<string, number> } = {},
) {
  return {
    type: 'message_start',
    message: {
      id: options.id ?? 'msg_fake',
      type: 'message',
      role: 'assistant',
      model: options.model ?? 'claude-sonnet-4-6',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: options.usage ?? { input_tokens: 12, output_tokens: 1 },
    },
  };
}

const START = startOfMessage();

const CONTENT_START: Record<ScriptedBlock['kind'], (block: ScriptedBlock) => unknown> = {
  text: () => ({ type: 'text', text: '' }),
  thinking: () => ({ type: 'thinking', thinking: '', signature: '' }),
  tool_use: (block) => {
    const call = block as ScriptedCall;
    return { type: 'tool_use', id: call.id, name: call.name, input: {} };
  },
};

function deltasOf(block: ScriptedBlock): unknown[] {
  if (block.kind === 'text') return block.deltas.map((text) => ({ type: 'text_delta', text }));
  if (block.kind === 'thinking') {
    return [
      { type: 'thinking_delta', thinking: block.text },
      { type: 'signature_delta', signature: block.signature },
    ];
  }
  return [{ type: 'input_json_delta', partial_json: JSON.stringify(block.input) }];
}

async function openBlock(s: FakeStream, index: number, block: ScriptedBlock): Promise<void> {
  const content_block = CONTENT_START[block.kind](block);
  await s.sse('content_block_start', { type: 'content_block_start', index, content_block });
}

async function sendDeltas(s: FakeStream, index: number, deltas: unknown[]): Promise<void> {
  for (const delta of deltas) {
    await s.sse('content_block_delta', { type: 'content_block_delta', index, delta });
  }
}

async function closeBlock(s: FakeStream, index: number): Promise<void> {
  await s.sse('content_block_stop', { type: 'content_block_stop', index });
}

/** Token counts a reply reports: `message_start`'s usage, and the output tokens at its end. */
export interface ScriptedUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
}

function startEvent(usage: ScriptedUsage = {}): unknown {
  const cache =
    usage.cacheRead === undefined && usage.cacheWrite === undefined
      ? {}
      : {
          cache_read_input_tokens: usage.cacheRead ?? 0,
          cache_creation_input_tokens: usage.cacheWrite ?? 0,
        };
  const tokens = { input_tokens: usage.input ?? 12, output_tokens: 1, ...cache };
  return { ...START, message: { ...START.message, usage: tokens } };
}

async function finishMessage(s: FakeStream, calls: boolean, output = 5): Promise<void> {
  await s.sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: calls ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: output },
  });
  await s.sse('message_stop', { type: 'message_stop' });
  await s.end();
}

/** Answers `request` with these blocks, in order, then ends the reply (reporting `usage`). */
export async function anthropicBlocks(
  request: FakeRequest,
  blocks: ScriptedBlock[],
  usage?: ScriptedUsage,
): Promise<void> {
  const s = request.stream();
  await s.sse('message_start', startEvent(usage));
  for (const [index, block] of blocks.entries()) {
    await openBlock(s, index, block);
    await sendDeltas(s, index, deltasOf(block));
    await closeBlock(s, index);
  }
  await finishMessage(
    s,
    blocks.some((block) => block.kind === 'tool_use'),
    usage?.output,
  );
}

/**
 * The blocks of a reply: its text (none when empty, unless `always`), then one `tool_use` block
 * per call.
 */
export function replyBlocks(
  text: string,
  calls: ScriptedCall[] = [],
  always = false,
): ScriptedBlock[] {
  const blocks: ScriptedBlock[] = text === '' && !always ? [] : [{ kind: 'text', deltas: [text] }];
  return [...blocks, ...calls.map((call): ScriptedBlock => ({ kind: 'tool_use', ...call }))];
}

/** Answers `request` with `text` (no text block when empty) and the tool calls, then ends. */
export function anthropicReply(
  request: FakeRequest,
  text: string,
  calls: ScriptedCall[] = [],
): Promise<void> {
  return anthropicBlocks(request, replyBlocks(text, calls));
}

type Content = { type: string; [key: string]: unknown }[];

/** The request's messages as Anthropic received them. */
export function anthropicMessages(request: FakeRequest): { role: string; content: Content }[] {
  return (request.body as { messages: { role: string; content: Content }[] }).messages;
}

/** A reply the test writes piece by piece: text deltas, thinking, tool calls, then the end. */
export interface ScriptedStream {
  /** Sends a piece of the reply's text (a text block is opened when needed). */
  text(delta: string): Promise<void>;
  /** Sends a complete thinking block with its signature (closing an open text block first). */
  thinking(text: string, signature: string): Promise<void>;
  /** Sends a complete tool call (closing an open text block first). */
  toolUse(call: ScriptedCall): Promise<void>;
  /** Closes what is open and ends the reply (`tool_use` when it made calls, else `end_turn`). */
  finish(): Promise<void>;
}

/** Answers `request` with a stream the test drives (see ScriptedStream). */
export async function anthropicStream(request: FakeRequest): Promise<ScriptedStream> {
  const s = request.stream();
  await s.sse('message_start', START);
  let index = -1;
  let textOpen = false;
  let calls = 0;
  const closeText = async (): Promise<void> => {
    if (!textOpen) return;
    textOpen = false;
    await closeBlock(s, index);
  };
  const whole = async (block: ScriptedBlock): Promise<void> => {
    await closeText();
    index += 1;
    await openBlock(s, index, block);
    await sendDeltas(s, index, deltasOf(block));
    await closeBlock(s, index);
  };
  return {
    async text(delta) {
      if (!textOpen) {
        index += 1;
        textOpen = true;
        await openBlock(s, index, { kind: 'text', deltas: [] });
      }
      await sendDeltas(s, index, deltasOf({ kind: 'text', deltas: [delta] }));
    },
    thinking: (text, signature) => whole({ kind: 'thinking', text, signature }),
    async toolUse(call) {
      calls += 1;
      await whole({ kind: 'tool_use', ...call });
    },
    async finish() {
      await closeText();
      await finishMessage(s, calls > 0);
    },
  };
}

/** The content of the request's last message (the user's turn it sends). */
export function lastUserContent(request: FakeRequest): Content {
  const messages = anthropicMessages(request);
  return messages[messages.length - 1]?.content ?? [];
}

// The same events written on a stream the test opened itself (`request.stream()`), for a test
// that looks at the buffer between them.

/** The `message_start` event's payload. */
export const MESSAGE_START = START;

/** A `message_start` payload reporting these token counts. */
export const messageStart = startEvent;

/** Opens text block `index` and sends these deltas (each a chunk of its own). */
export async function textDeltas(stream: FakeStream, deltas: string[], index = 0): Promise<void> {
  await openBlock(stream, index, { kind: 'text', deltas: [] });
  await sendDeltas(stream, index, deltasOf({ kind: 'text', deltas }));
}

/** Closes block `index` and ends the message (`stop` reason, `outputTokens` of usage). */
export async function endMessage(
  stream: FakeStream,
  options: { stop?: string; outputTokens?: number; index?: number } = {},
): Promise<void> {
  await closeBlock(stream, options.index ?? 0);
  await stream.sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: options.stop ?? 'end_turn', stop_sequence: null },
    usage: { output_tokens: options.outputTokens ?? 5 },
  });
  await stream.sse('message_stop', { type: 'message_stop' });
  await stream.end();
}

/** A whole text reply on `stream`: the start, the text in one delta, the end. */
export async function textReply(stream: FakeStream, text: string): Promise<void> {
  await stream.sse('message_start', START);
  await textDeltas(stream, [text]);
  await endMessage(stream);
}

/** Sends one more text delta to the open block `index`. */
export async function textDelta(stream: FakeStream, text: string, index = 0): Promise<void> {
  await sendDeltas(stream, index, deltasOf({ kind: 'text', deltas: [text] }));
}

/** Answers `request` with an Anthropic error: its HTTP `status`, the error's `type` and `message`. */
export function anthropicError(
  request: FakeRequest,
  status: number,
  type: string,
  message: string,
  headers?: OutgoingHttpHeaders,
): Promise<void> {
  return request.respond(status, { type: 'error', error: { type, message } }, headers);
}

/** Starts the stream that answers `request`: the message's start, then text with these deltas. */
export async function streamText(request: FakeRequest, deltas: string[]): Promise<FakeStream> {
  const stream = request.stream();
  await stream.sse('message_start', START);
  await textDeltas(stream, deltas);
  return stream;
}
