// Scripted Anthropic replies for the fake provider: a text block, then one `tool_use` block per
// call, in the Messages API's streaming events.
import type { FakeRequest } from './fake-provider.js';

export interface ScriptedCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

const START = {
  type: 'message_start',
  message: {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-6',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 1 },
  },
};

/** Answers `request` with `text` (no text block when empty) and the tool calls, then ends. */
export async function anthropicReply(
  request: FakeRequest,
  text: string,
  calls: ScriptedCall[] = [],
): Promise<void> {
  const s = request.stream();
  await s.sse('message_start', START);
  const first = text === '' ? 0 : 1;
  if (text !== '') {
    await s.sse('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    });
    await s.sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    });
    await s.sse('content_block_stop', { type: 'content_block_stop', index: 0 });
  }
  for (const [i, call] of calls.entries()) {
    const index = i + first;
    await s.sse('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
    });
    await s.sse('content_block_delta', {
      type: 'content_block_delta',
      index,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) },
    });
    await s.sse('content_block_stop', { type: 'content_block_stop', index });
  }
  await s.sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: 5 },
  });
  await s.sse('message_stop', { type: 'message_stop' });
  await s.end();
}

type Content = { type: string; [key: string]: unknown }[];

/** The request's messages as Anthropic received them. */
export function anthropicMessages(request: FakeRequest): { role: string; content: Content }[] {
  return (request.body as { messages: { role: string; content: Content }[] }).messages;
}

/** A reply the test writes piece by piece: text deltas, complete tool calls, then the end. */
export interface ScriptedStream {
  /** Sends a piece of the reply's text (a text block is opened when needed). */
  text(delta: string): Promise<void>;
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
    await s.sse('content_block_stop', { type: 'content_block_stop', index });
  };
  return {
    async text(delta) {
      if (!textOpen) {
        index += 1;
        textOpen = true;
        await s.sse('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'text', text: '' },
        });
      }
      await s.sse('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'text_delta', text: delta },
      });
    },
    async toolUse(call) {
      await closeText();
      index += 1;
      calls += 1;
      await s.sse('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
      });
      await s.sse('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) },
      });
      await s.sse('content_block_stop', { type: 'content_block_stop', index });
    },
    async finish() {
      await closeText();
      await s.sse('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: calls > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: 5 },
      });
      await s.sse('message_stop', { type: 'message_stop' });
      await s.end();
    },
  };
}
