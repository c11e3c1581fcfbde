// The OpenAI Responses API's stream events, read into provider events (the rest of the adapter
// is openai.ts).
import type OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { newerThanSdk } from '../../util/never.js';
import { ProviderError, type ProviderEvent, type Usage, internalToolName } from '../types.js';

export const PROVIDER = 'openai';

/** A reasoning item as a native signature: base64 of its JSON (openai.ts decodes it). */
function encodeReasoning(item: unknown): string {
  return Buffer.from(JSON.stringify(item), 'utf8').toString('base64');
}

type EventOf<T extends ResponseStreamEvent['type']> = Extract<ResponseStreamEvent, { type: T }>;

interface OpenCall {
  name: string;
  characters: number;
}

/** The failure a `response.failed` or `error` event reports. */
function failure(event: EventOf<'response.failed' | 'error'>): ProviderError {
  if (event.type === 'response.failed') {
    return new ProviderError(
      PROVIDER,
      'stream',
      event.response.error?.message ?? 'Response failed',
    );
  }
  const text = event.code === null ? event.message : `${event.message} (code: ${event.code})`;
  return new ProviderError(PROVIDER, 'stream', text);
}

/** Turns response events into provider events; throws ProviderError for failure events. */
export class EventReader {
  /** Whether any event arrived (a lost connection is then no longer safe to retry). */
  started = false;
  finished = false;
  private readonly calls = new Map<number, OpenCall>();
  private toolUses = 0;
  private summary = '';
  private summaryPart: string | undefined;
  private reasoning: { item: unknown; content: string } | undefined;

  read(event: ResponseStreamEvent): ProviderEvent[] {
    this.started = true;
    switch (event.type) {
      case 'response.output_text.delta':
        return event.delta === '' ? [] : [{ type: 'text', text: event.delta }];

      case 'response.output_item.added':
        return this.itemAdded(event);
      case 'response.function_call_arguments.delta':
        return this.argumentsDelta(event);
      case 'response.reasoning_summary_text.delta':
        return this.summaryDelta(event);
      case 'response.output_item.done':
        return this.itemDone(event);
      case 'response.completed':
        return this.finish(event.response, undefined);
      case 'response.incomplete':
        return this.finish(event.response, event.response.incomplete_details?.reason ?? 'unknown');
      case 'response.failed':
      case 'error':
        throw failure(event);

      // Events that change nothing here (the text and arguments arrive as deltas above; the
      // other kinds belong to features Flemma does not ask for).
      case 'response.audio.delta':
      case 'response.audio.done':
      case 'response.audio.transcript.delta':
      case 'response.audio.transcript.done':
      case 'response.code_interpreter_call.completed':
      case 'response.code_interpreter_call.in_progress':
      case 'response.code_interpreter_call.interpreting':
      case 'response.code_interpreter_call_code.delta':
      case 'response.code_interpreter_call_code.done':
      case 'response.content_part.added':
      case 'response.content_part.done':
      case 'response.created':
      case 'response.custom_tool_call_input.delta':
      case 'response.custom_tool_call_input.done':
      case 'response.file_search_call.completed':
      case 'response.file_search_call.in_progress':
      case 'response.file_search_call.searching':
      case 'response.function_call_arguments.done':
      case 'response.image_generation_call.completed':
      case 'response.image_generation_call.generating':
      case 'response.image_generation_call.in_progress':
      case 'response.image_generation_call.partial_image':
      case 'response.in_progress':
      case 'response.mcp_call.completed':
      case 'response.mcp_call.failed':
      case 'response.mcp_call.in_progress':
      case 'response.mcp_call_arguments.delta':
      case 'response.mcp_call_arguments.done':
      case 'response.mcp_list_tools.completed':
      case 'response.mcp_list_tools.failed':
      case 'response.mcp_list_tools.in_progress':
      case 'response.output_text.annotation.added':
      case 'response.output_text.done':
      case 'response.queued':
      case 'response.reasoning_summary_part.added':
      case 'response.reasoning_summary_part.done':
      case 'response.reasoning_summary_text.done':
      case 'response.reasoning_text.delta':
      case 'response.reasoning_text.done':
      case 'response.refusal.delta':
      case 'response.refusal.done':
      case 'response.web_search_call.completed':
      case 'response.web_search_call.in_progress':
      case 'response.web_search_call.searching':
        return [];

      default:
        newerThanSdk(event);
        return [];
    }
  }

  /** An output item starts: a function call's progress begins, a reasoning item's summary. */
  private itemAdded(event: EventOf<'response.output_item.added'>): ProviderEvent[] {
    const item = event.item;
    if (item.type === 'function_call') {
      const call = { name: internalToolName(item.name), characters: 0 };
      this.calls.set(event.output_index, call);
      return [{ type: 'progress', phase: 'tool_input', characters: 0, toolName: call.name }];
    }
    if (item.type === 'reasoning') {
      this.summary = '';
      this.summaryPart = undefined;
      // Where the reasoning began: its block is written there once complete (reply.ts).
      return [{ type: 'progress', phase: 'thinking', characters: 0 }];
    }
    return [];
  }

  private argumentsDelta(
    event: EventOf<'response.function_call_arguments.delta'>,
  ): ProviderEvent[] {
    const call = this.calls.get(event.output_index);
    if (call === undefined) return [];
    call.characters += event.delta.length;
    return [
      { type: 'progress', phase: 'tool_input', characters: call.characters, toolName: call.name },
    ];
  }

  /** Summary parts are joined by a blank line. */
  private summaryDelta(event: EventOf<'response.reasoning_summary_text.delta'>): ProviderEvent[] {
    const part = `${event.output_index}:${event.summary_index}`;
    if (this.summaryPart !== undefined && this.summaryPart !== part && this.summary !== '') {
      this.summary += '\n\n';
    }
    this.summaryPart = part;
    this.summary += event.delta;
    return [{ type: 'progress', phase: 'thinking', characters: this.summary.length }];
  }

  /** An output item ends: a function call is a tool use, a reasoning item is kept. */
  private itemDone(event: EventOf<'response.output_item.done'>): ProviderEvent[] {
    const item = event.item;
    if (item.type === 'function_call') {
      this.calls.delete(event.output_index);
      return this.toolUse(item);
    }
    if (item.type === 'reasoning') {
      const parts = (item as { summary?: { text?: string }[] }).summary ?? [];
      const fromItem = parts.map((p) => p.text ?? '').join('\n\n');
      this.reasoning = { item, content: this.summary === '' ? fromItem : this.summary };
    }
    return [];
  }

  private toolUse(item: OpenAI.Responses.ResponseFunctionToolCall): ProviderEvent[] {
    this.toolUses += 1;
    const out: ProviderEvent[] = [];
    let input: unknown = {};
    let invalid: string | undefined;
    try {
      input = JSON.parse(item.arguments === '' ? '{}' : item.arguments) as unknown;
    } catch (error) {
      invalid = error instanceof Error ? error.message : String(error);
      out.push({
        type: 'warning',
        message: `OpenAI sent unparsable arguments for tool '${internalToolName(item.name)}' (${item.call_id}); using {}`,
      });
    }
    out.push({
      type: 'tool_use',
      id: item.call_id,
      name: internalToolName(item.name),
      input,
      ...(invalid === undefined ? {} : { invalid }),
    });
    return out;
  }

  private finish(
    response: OpenAI.Responses.Response,
    incomplete: string | undefined,
  ): ProviderEvent[] {
    this.finished = true;
    const out: ProviderEvent[] = [];
    if (incomplete !== undefined) {
      out.push({
        type: 'warning',
        message: `OpenAI response was truncated (reason: ${incomplete})`,
      });
    }
    if (this.reasoning !== undefined) {
      out.push({
        type: 'thinking',
        content: this.reasoning.content,
        signature: { provider: PROVIDER, value: encodeReasoning(this.reasoning.item) },
      });
    }
    const usage = readUsage(response.usage);
    if (usage !== undefined) out.push({ type: 'usage', usage });
    out.push({ type: 'done', stopReason: stopReason(incomplete, this.toolUses > 0) });
    return out;
  }
}

/** Usage as the contract counts it: `input` excludes what the prompt cache served. */
function readUsage(raw: unknown): Usage | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const usage = raw as {
    input_tokens?: number;
    output_tokens?: number;
    input_tokens_details?: { cached_tokens?: number } | null;
    output_tokens_details?: { reasoning_tokens?: number } | null;
  };
  const cached = usage.input_tokens_details?.cached_tokens ?? 0;
  const thoughts = usage.output_tokens_details?.reasoning_tokens ?? 0;
  const result: Usage = {
    input: (usage.input_tokens ?? 0) - cached,
    output: usage.output_tokens ?? 0,
  };
  if (thoughts > 0) result.thoughts = thoughts;
  if (cached > 0) result.cacheRead = cached;
  return result;
}

/** Stop reasons in the vocabulary the other adapters share. */
function stopReason(incomplete: string | undefined, usedTools: boolean): string {
  if (incomplete === 'max_output_tokens') return 'max_tokens';
  if (incomplete !== undefined) return incomplete;
  return usedTools ? 'tool_use' : 'end_turn';
}
