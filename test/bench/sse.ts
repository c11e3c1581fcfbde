// The Anthropic streaming replies the benchmarks' fake server sends.
import { startOfMessage } from '../helpers/anthropic-script.js';

export const MESSAGE_START = startOfMessage({
  id: 'msg_bench',
  usage: { input_tokens: 10, output_tokens: 1 },
});

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The end of a message: its stop reason and output tokens, then `message_stop`. */
function messageEnd(stopReason: string, outputTokens: number): string {
  const delta = sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: outputTokens },
  });
  return delta + sse('message_stop', { type: 'message_stop' });
}

/** The start of a text reply that is never finished (for cancelling it). */
export function anthropicReplyStart(deltas: string[]): string {
  let out = sse('message_start', MESSAGE_START);
  out += sse('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  });
  for (const text of deltas) {
    out += sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    });
  }
  return out;
}

/** The Anthropic SSE text of a reply made of `deltas`. */
export function anthropicReply(deltas: string[]): string {
  let out = anthropicReplyStart(deltas);
  out += sse('content_block_stop', { type: 'content_block_stop', index: 0 });
  return out + messageEnd('end_turn', deltas.length);
}

/** A reply that asks for `calls` in parallel (stop reason `tool_use`). */
export function anthropicToolReply(calls: { id: string; name: string; input: unknown }[]): string {
  let out = sse('message_start', MESSAGE_START);
  calls.forEach((call, index) => {
    out += sse('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
    });
    out += sse('content_block_delta', {
      type: 'content_block_delta',
      index,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) },
    });
    out += sse('content_block_stop', { type: 'content_block_stop', index });
  });
  return out + messageEnd('tool_use', calls.length);
}
