// The Chat Completions stream's chunks, read into provider events (the rest of the adapter is
// chat-completions.ts).
import type { OpenAI } from 'openai';
import { randomUUID } from 'node:crypto';
import { internalToolName, type ProviderEvent, type Usage } from '../types.js';

type Chunk = OpenAI.ChatCompletionChunk;

/** The field reasoning is replayed in. */
export type ReasoningField = 'reasoning_content' | 'reasoning';

interface PendingCall {
  id: string;
  wireName: string;
  args: string;
}

/** What one reply has streamed so far; turns chunks into events. */
export class ReplyState {
  private thinking = '';
  private readonly calls: PendingCall[] = [];
  /** The call each stream index currently feeds. */
  private readonly byIndex = new Map<number, PendingCall>();
  private finishReason: string | undefined;
  private usage: Usage | undefined;
  private flushed = false;

  constructor(
    private readonly name: string,
    private readonly signer: string,
    private readonly field: ReasoningField,
  ) {}

  *take(chunk: Chunk): Generator<ProviderEvent> {
    if (chunk.usage != null) this.usage = toUsage(chunk.usage);
    for (const choice of chunk.choices) {
      if (choice.index !== 0) continue;
      const delta = choice.delta as Chunk['choices'][number]['delta'] & Record<string, unknown>;
      // Some servers send both fields with the same text: the first non-empty one counts.
      const reasoning = [delta[this.field], delta['reasoning_content'], delta['reasoning']].find(
        (value): value is string => typeof value === 'string' && value !== '',
      );
      if (reasoning !== undefined) {
        this.thinking += reasoning;
        yield { type: 'progress', phase: 'thinking', characters: this.thinking.length };
      }
      if (typeof delta.content === 'string' && delta.content !== '') {
        yield { type: 'text', text: delta.content };
      }
      const toolCalls: LooseToolCall[] = delta.tool_calls ?? [];
      for (const [position, call] of toolCalls.entries()) {
        const pending = this.callFor(call.index ?? position, call.id ?? undefined);
        if (call.function?.name) pending.wireName += call.function.name;
        if (call.function?.arguments) pending.args += call.function.arguments;
        yield {
          type: 'progress',
          phase: 'tool_input',
          characters: pending.args.length,
          toolName: internalToolName(pending.wireName),
        };
      }
      if (choice.finish_reason != null) {
        this.finishReason = choice.finish_reason;
        yield* this.flush();
      }
    }
  }

  *finish(): Generator<ProviderEvent> {
    yield* this.flush();
    if (this.usage !== undefined) yield { type: 'usage', usage: this.usage };
    if (this.finishReason === 'length') {
      yield { type: 'warning', message: 'Response truncated – model reached max output tokens' };
    } else if (this.finishReason === 'content_filter') {
      yield { type: 'warning', message: `Response stopped by the content filter of ${this.name}` };
    } else if (this.finishReason === undefined) {
      yield {
        type: 'warning',
        message: 'The stream ended without a finish reason; the reply may be incomplete',
      };
    }
    yield { type: 'done', stopReason: this.finishReason ?? 'unknown' };
  }

  private callFor(index: number, id: string | undefined): PendingCall {
    const current = this.byIndex.get(index);
    // Some servers reuse one index for calls that differ by id: a new id starts a new call.
    if (current !== undefined && (id === undefined || id === '' || id === current.id)) {
      return current;
    }
    const pending: PendingCall = {
      id: id === undefined || id === '' ? `call_${randomUUID().replace(/-/g, '')}` : id,
      wireName: '',
      args: '',
    };
    this.calls.push(pending);
    this.byIndex.set(index, pending);
    return pending;
  }

  /** Tool uses in arrival order, then the thinking block; once per reply. */
  private *flush(): Generator<ProviderEvent> {
    if (this.flushed) return;
    this.flushed = true;
    for (const call of this.calls) {
      const name = internalToolName(call.wireName);
      let input: unknown = {};
      let invalid: string | undefined;
      if (call.args.trim() !== '') {
        try {
          input = JSON.parse(call.args) as unknown;
        } catch (error) {
          invalid = error instanceof Error ? error.message : String(error);
          yield {
            type: 'warning',
            message: `Tool call '${name}' (${call.id}) had arguments that are not JSON; sent as {}`,
          };
        }
      }
      yield invalid === undefined
        ? { type: 'tool_use', id: call.id, name, input }
        : { type: 'tool_use', id: call.id, name, input, invalid };
    }
    if (this.thinking.trim() !== '') {
      yield {
        type: 'thinking',
        content: this.thinking,
        signature: { provider: this.signer, value: this.field },
      };
    }
  }
}

/** A streamed tool call as servers really send it (some omit `index` or `id`). */
interface LooseToolCall {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null };
}

function toUsage(raw: NonNullable<Chunk['usage']>): Usage {
  // Moonshot reports cached tokens at the top level of `usage`.
  const loose = raw as typeof raw & { cached_tokens?: unknown };
  const cachedRaw = raw.prompt_tokens_details?.cached_tokens ?? loose.cached_tokens;
  const cached = typeof cachedRaw === 'number' ? cachedRaw : 0;
  const usage: Usage = {
    input: Math.max(0, raw.prompt_tokens - cached),
    output: raw.completion_tokens,
  };
  const thoughts = raw.completion_tokens_details?.reasoning_tokens;
  if (typeof thoughts === 'number' && thoughts > 0) usage.thoughts = thoughts;
  if (cached > 0) usage.cacheRead = cached;
  return usage;
}
