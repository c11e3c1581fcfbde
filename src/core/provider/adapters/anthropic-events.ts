// The Anthropic Messages API's raw stream events, read into provider events (the rest of the
// adapter is anthropic.ts).
import type Anthropic from '@anthropic-ai/sdk';
import { newerThanSdk } from '../../util/never.js';
import { internalToolName, ProviderError, type ProviderEvent, type Usage } from '../types.js';

const PROVIDER = 'anthropic';

export const TRUNCATED_WARNING = 'Response truncated – model reached max output tokens';

type BlockStart = Extract<Anthropic.RawMessageStreamEvent, { type: 'content_block_start' }>;
type BlockDelta = Extract<Anthropic.RawMessageStreamEvent, { type: 'content_block_delta' }>;

interface OpenBlock {
  type: string;
  /** tool_use only */
  id?: string;
  name?: string;
  json?: string;
}

/** Turns raw stream events into ProviderEvents; one per reply. */
export class EventMapper {
  private readonly blocks = new Map<number, OpenBlock>();
  private thinking = '';
  private signature = '';
  private sawThinking = false;
  private readonly redacted: string[] = [];
  private usage: Usage = { input: 0, output: 0 };
  private stopReason = 'end_turn';
  finished = false;

  *map(event: Anthropic.RawMessageStreamEvent): Generator<ProviderEvent> {
    switch (event.type) {
      case 'message_start': {
        const usage = event.message.usage;
        this.usage = { input: usage.input_tokens, output: usage.output_tokens };
        if (typeof usage.cache_read_input_tokens === 'number')
          this.usage.cacheRead = usage.cache_read_input_tokens;
        if (typeof usage.cache_creation_input_tokens === 'number')
          this.usage.cacheCreation = usage.cache_creation_input_tokens;
        break;
      }
      case 'content_block_start':
        yield* this.blockStart(event);
        break;
      case 'content_block_delta':
        yield* this.blockDelta(event);
        break;
      case 'content_block_stop': {
        const open = this.blocks.get(event.index);
        this.blocks.delete(event.index);
        if (open?.type === 'tool_use') yield* this.finishToolUse(open);
        break;
      }
      case 'message_delta':
        if (event.delta.stop_reason !== null) this.stopReason = event.delta.stop_reason;
        this.usage.output = event.usage.output_tokens;
        break;
      case 'message_stop':
        yield* this.finish();
        break;
      default:
        newerThanSdk(event);
    }
  }

  /** A block opens: text may come with it; a tool use starts its progress. */
  private *blockStart(event: BlockStart): Generator<ProviderEvent> {
    const block = event.content_block;
    switch (block.type) {
      case 'text':
        this.blocks.set(event.index, { type: 'text' });
        if (block.text !== '') yield { type: 'text', text: block.text };
        break;
      case 'thinking':
        this.blocks.set(event.index, { type: 'thinking' });
        this.sawThinking = true;
        this.thinking += block.thinking;
        this.signature += block.signature;
        // Where the thinking began: its block is written there once complete (reply.ts).
        yield { type: 'progress', phase: 'thinking', characters: this.thinking.length };
        break;
      case 'redacted_thinking':
        this.blocks.set(event.index, { type: 'redacted_thinking' });
        this.redacted.push(block.data);
        yield { type: 'progress', phase: 'thinking', characters: this.thinking.length };
        break;
      case 'tool_use': {
        const name = internalToolName(block.name);
        this.blocks.set(event.index, { type: 'tool_use', id: block.id, name, json: '' });
        yield { type: 'progress', phase: 'tool_input', characters: 0, toolName: name };
        break;
      }
      case 'server_tool_use':
      case 'web_search_tool_result':
      case 'web_fetch_tool_result':
      case 'code_execution_tool_result':
      case 'bash_code_execution_tool_result':
      case 'text_editor_code_execution_tool_result':
      case 'tool_search_tool_result':
      case 'container_upload':
        // Server tools run at Anthropic; their blocks are not part of the reply's text.
        this.blocks.set(event.index, { type: block.type });
        break;
      default:
        newerThanSdk(block);
        this.blocks.set(event.index, { type: (block as { type: string }).type });
    }
  }

  /** A block grows: text, thinking (with its progress), a signature, a tool use's input. */
  private *blockDelta(event: BlockDelta): Generator<ProviderEvent> {
    const delta = event.delta;
    switch (delta.type) {
      case 'text_delta':
        if (delta.text !== '') yield { type: 'text', text: delta.text };
        break;
      case 'thinking_delta':
        this.sawThinking = true;
        this.thinking += delta.thinking;
        yield { type: 'progress', phase: 'thinking', characters: this.thinking.length };
        break;
      case 'signature_delta':
        this.signature += delta.signature;
        break;
      case 'input_json_delta': {
        const open = this.blocks.get(event.index);
        if (open?.type !== 'tool_use') break;
        open.json = (open.json ?? '') + delta.partial_json;
        yield {
          type: 'progress',
          phase: 'tool_input',
          characters: open.json.length,
          toolName: open.name ?? '',
        };
        break;
      }
      case 'citations_delta':
        break;
      default:
        newerThanSdk(delta);
    }
  }

  private *finishToolUse(open: OpenBlock): Generator<ProviderEvent> {
    const json = (open.json ?? '').trim();
    const name = open.name ?? '';
    let input: unknown = {};
    let invalid: string | undefined;
    if (json !== '') {
      try {
        input = JSON.parse(json) as unknown;
      } catch (error) {
        invalid = error instanceof Error ? error.message : String(error);
        yield {
          type: 'warning',
          message: `Could not parse the input of tool ${name} (${open.id ?? ''}); sent as {}`,
        };
      }
    }
    yield invalid === undefined
      ? { type: 'tool_use', id: open.id ?? '', name, input }
      : { type: 'tool_use', id: open.id ?? '', name, input, invalid };
  }

  private *finish(): Generator<ProviderEvent> {
    this.finished = true;
    if (this.sawThinking && (this.thinking !== '' || this.signature !== '')) {
      yield this.signature === ''
        ? { type: 'thinking', content: this.thinking }
        : {
            type: 'thinking',
            content: this.thinking,
            signature: { provider: PROVIDER, value: this.signature },
          };
    }
    for (const data of this.redacted) yield { type: 'redacted_thinking', data };
    yield { type: 'usage', usage: { ...this.usage } };
    const reason = this.stopReason;
    if (reason === 'refusal' || reason === 'sensitive') {
      throw new ProviderError(PROVIDER, 'blocked', `Response blocked by Anthropic (${reason})`);
    }
    if (reason === 'max_tokens') yield { type: 'warning', message: TRUNCATED_WARNING };
    yield { type: 'done', stopReason: reason };
  }
}
