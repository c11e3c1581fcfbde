// The Anthropic Messages adapter (docs/configuration.md, "Provider and request parameters"): an evaluated prompt becomes a Messages API
// body, and the SDK's stream of raw events becomes ProviderEvents. The SDK itself is loaded only
// when the first reply streams.
import type Anthropic from '@anthropic-ai/sdk';
import type { SdkLoader, SdkModule } from '../sdk.js';
import { DEFAULT_STREAM_IDLE_MS, type Expected, globalFetch, guardFetch } from '../watchdog.js';
import { carriedError, connectError, endpointOf, lostError, timeoutError } from '../transport.js';
import { assertNever, newerThanSdk } from '../../util/never.js';
import {
  internalToolName,
  ProviderError,
  sortKeys,
  wireToolId,
  wireToolName,
  type ConnectionOptions,
  type EvaluatedMessage,
  type EvaluatedPart,
  type EvaluatedThinking,
  type EvaluatedToolResult,
  type EvaluatedToolUse,
  type ProviderAdapter,
  type ProviderEvent,
  type ProviderRequest,
  type Usage,
  errorForStatus,
  retryAfterMs,
} from '../types.js';

const PROVIDER = 'anthropic';

/** The smallest thinking budget the API accepts. */
const MIN_THINKING_BUDGET = 1024;

/** Top-level keys sent last, in this order, so that the cacheable prefix stays byte-stable. */
const TRAILING_KEYS = ['system', 'tools', 'messages'] as const;

export const TRUNCATED_WARNING = 'Response truncated – model reached max output tokens';

type Block = Record<string, unknown>;
type CacheControl = { type: 'ephemeral' } | { type: 'ephemeral'; ttl: '1h' };

function cacheControlFor(retention: ProviderRequest['cacheRetention']): CacheControl | undefined {
  switch (retention) {
    case 'short':
      return { type: 'ephemeral' };
    case 'long':
      return { type: 'ephemeral', ttl: '1h' };
    case 'none':
      return undefined;
    default:
      return assertNever(retention, 'cache retention');
  }
}

function basename(path: string): string {
  const cut = path.replace(/[\\/]+$/, '');
  return cut.slice(Math.max(cut.lastIndexOf('/'), cut.lastIndexOf('\\')) + 1);
}

function base64Source(mimeType: string, data: string): Block {
  return { data, media_type: mimeType, type: 'base64' };
}

/** A file part as a content block (never a plain text part: callers handle those). */
function fileBlock(part: Exclude<EvaluatedPart, { kind: 'text' }>, unsupported: string): Block {
  switch (part.kind) {
    case 'image':
      return { source: base64Source(part.mimeType, part.data), type: 'image' };
    case 'pdf':
      return {
        source: base64Source(part.mimeType, part.data),
        title: basename(part.filename),
        type: 'document',
      };
    case 'text_file':
      return { text: part.text, type: 'text' };
    case 'unsupported_file':
      return { text: unsupported, type: 'text' };
    default:
      return assertNever(part, 'file part');
  }
}

function toolResultBlock(result: EvaluatedToolResult): Block {
  const textOnly = result.parts.every((p) => p.kind === 'text' || p.kind === 'text_file');
  const content = textOnly
    ? result.parts.map((p) => (p.kind === 'text' || p.kind === 'text_file' ? p.text : '')).join('')
    : result.parts.map((p) =>
        p.kind === 'text'
          ? { text: p.text, type: 'text' }
          : fileBlock(p, `[binary file: ${p.filename}]`),
      );
  const id = wireToolId(result.toolUseId);
  return result.isError
    ? { content, is_error: true, tool_use_id: id, type: 'tool_result' }
    : { content, tool_use_id: id, type: 'tool_result' };
}

function userContent(parts: Extract<EvaluatedMessage, { role: 'user' }>['parts']): Block[] {
  const results: Block[] = [];
  const others: Block[] = [];
  for (const part of parts) {
    if (part.kind === 'tool_result') {
      results.push(toolResultBlock(part));
    } else if (part.kind === 'text') {
      if (part.text.trim() !== '') others.push({ text: part.text, type: 'text' });
    } else {
      others.push(fileBlock(part, `@${part.filename}`));
    }
  }
  return [...results, ...others];
}

function isNative(part: EvaluatedThinking): boolean {
  return part.signature?.provider === PROVIDER && part.signature.value !== '';
}

function assistantContent(
  parts: Extract<EvaluatedMessage, { role: 'assistant' }>['parts'],
  foreign: 'preserve' | 'drop',
): Block[] {
  const thinking: Block[] = [];
  const foreignTexts: string[] = [];
  const texts: Block[] = [];
  const toolUses: Block[] = [];
  for (const part of parts) {
    switch (part.kind) {
      case 'thinking':
        if (part.redacted) {
          thinking.push({ data: part.content.trim(), type: 'redacted_thinking' });
        } else if (isNative(part)) {
          thinking.push({
            signature: part.signature?.value ?? '',
            thinking: part.content,
            type: 'thinking',
          });
        } else if (part.content.trim() !== '') {
          foreignTexts.push(part.content.trim());
        }
        break;
      case 'tool_use':
        toolUses.push(toolUseBlock(part));
        break;
      case 'text':
      case 'text_file': {
        const text = part.text.trim();
        if (text !== '') texts.push({ text, type: 'text' });
        break;
      }
      case 'image':
      case 'pdf':
      case 'unsupported_file':
        // Images, PDFs and other files cannot be part of an assistant turn.
        break;
      default:
        assertNever(part, 'assistant part');
    }
  }
  const wrapped =
    foreign === 'preserve' && foreignTexts.length > 0
      ? [{ text: `<thinking>\n${foreignTexts.join('\n\n')}\n</thinking>`, type: 'text' }]
      : [];
  return [...thinking, ...wrapped, ...texts, ...toolUses];
}

function toolUseBlock(part: EvaluatedToolUse): Block {
  return {
    id: wireToolId(part.id),
    input: part.input ?? {},
    name: wireToolName(part.name),
    type: 'tool_use',
  };
}

function thinkingFields(request: ProviderRequest): Block {
  const thinking = request.thinking;
  if (thinking === undefined) return {};
  const effort = thinking.effort !== undefined && thinking.effort !== '' ? thinking.effort : '';
  if (thinking.budget !== undefined && thinking.budget > 0) {
    let budget = Math.floor(thinking.budget);
    if (budget >= request.maxTokens) budget = request.maxTokens - 1;
    budget = Math.max(budget, MIN_THINKING_BUDGET);
    const fields: Block = { thinking: { type: 'enabled', budget_tokens: budget } };
    if (effort !== '') fields['output_config'] = { effort };
    return fields;
  }
  if (effort !== '') {
    return {
      thinking: { type: 'adaptive', display: 'summarized' },
      output_config: { effort },
    };
  }
  return {};
}

/**
 * The Messages API body for a prompt: keys sorted, then `system`, `tools`, `messages` last. The
 * blocks are built with their keys in order already, so that sorting copies little beyond what
 * came from elsewhere (tool inputs, schemas).
 */
export function buildAnthropicBody(request: ProviderRequest): Record<string, unknown> {
  const cache = cacheControlFor(request.cacheRetention);
  const foreign = request.thinking?.foreign ?? 'preserve';
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: request.maxTokens,
    stream: true,
    ...thinkingFields(request),
  };
  if (request.temperature !== undefined) body['temperature'] = request.temperature;
  if (cache !== undefined) body['cache_control'] = cache;

  if (request.system !== '') {
    body['system'] =
      cache === undefined
        ? request.system
        : [{ cache_control: cache, text: request.system, type: 'text' }];
  }

  if (request.tools.length > 0) {
    const last = request.tools.length - 1;
    body['tools'] = request.tools.map((tool, index) => {
      const wire: Block = {
        description: tool.description,
        input_schema: tool.inputSchema,
        name: wireToolName(tool.name),
      };
      return cache !== undefined && index === last ? { cache_control: cache, ...wire } : wire;
    });
    body['tool_choice'] = { type: 'auto' };
  }

  const messages: Block[] = [];
  for (const message of request.messages) {
    const content =
      message.role === 'user'
        ? userContent(message.parts)
        : assistantContent(message.parts, foreign);
    if (content.length > 0) messages.push({ content, role: message.role });
  }
  body['messages'] = messages;

  const sorted = sortKeys(body) as Record<string, unknown>;
  const ordered: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(sorted)) {
    if (!(TRAILING_KEYS as readonly string[]).includes(key)) ordered[key] = value;
  }
  for (const key of TRAILING_KEYS) {
    if (key in sorted) ordered[key] = sorted[key];
  }
  return ordered;
}

type AnthropicSdk = SdkModule<'anthropic'>;

/** The `<type> — <message>` of an API error body, when it has one. */
function apiErrorText(type: string | null, message: string | null): string | undefined {
  if (message === null || message === '') return type ?? undefined;
  return type === null ? message : `${type} — ${message}`;
}

/** Where requests go: for the messages of failures the SDK reports itself (its timeout). */
interface Where {
  endpoint: string;
  timeoutMs: number | undefined;
}

/** A failure as a ProviderError; `started` says whether any event of the reply had arrived. */
function toProviderError(
  sdk: AnthropicSdk,
  error: unknown,
  started: boolean,
  where: Where,
): ProviderError {
  // The guard's own failures (a connection that failed, a stall, an answer that is not one)
  // arrive as they are, or as the cause of the SDK's connection error.
  const carried = carriedError(error);
  if (carried !== undefined) return carried;
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return timeoutError(PROVIDER, where.endpoint, where.timeoutMs);
  }
  if (error instanceof sdk.APIConnectionError) {
    return connectError(PROVIDER, where.endpoint, error.cause ?? error);
  }
  if (error instanceof sdk.APIError) {
    const status: unknown = error.status;
    if (typeof status !== 'number') {
      // An `event: error` inside a 200 stream.
      const text = apiErrorText(error.type, error.apiMessage) ?? error.message;
      return new ProviderError(PROVIDER, 'stream', text);
    }
    const failure = errorForStatus(PROVIDER, status, error.apiMessage ?? error.message);
    const wait = retryAfterMs(error.headers);
    if (wait !== undefined) failure.retryAfterMs = wait;
    return failure;
  }
  // Anything else while reading the body (a reset socket, `terminated`) is a lost connection.
  return lostError(PROVIDER, where.endpoint, error, started);
}

interface OpenBlock {
  type: string;
  /** tool_use only */
  id?: string;
  name?: string;
  json?: string;
}

/** Turns raw stream events into ProviderEvents; one per reply. */
class EventMapper {
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
      case 'content_block_start': {
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
            break;
          case 'redacted_thinking':
            this.blocks.set(event.index, { type: 'redacted_thinking' });
            this.redacted.push(block.data);
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
        break;
      }
      case 'content_block_delta': {
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
        break;
      }
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

/** Fields of a Messages body that only matter for generating, not for counting its tokens. */
const GENERATION_FIELDS = ['max_tokens', 'stream', 'temperature'];

export function createAnthropicAdapter(
  connection: ConnectionOptions,
  loader: SdkLoader,
): ProviderAdapter {
  const options = {
    apiKey: connection.apiKey,
    ...(connection.baseURL === undefined ? {} : { baseURL: connection.baseURL }),
    ...(connection.maxRetries === undefined ? {} : { maxRetries: connection.maxRetries }),
    ...(connection.timeoutMs === undefined ? {} : { timeout: connection.timeoutMs }),
  };
  const idleMs = connection.streamIdleMs ?? DEFAULT_STREAM_IDLE_MS;
  /** A client for streams, or for JSON answers (the token count): each checks its answers. */
  const clientOf = (sdk: AnthropicSdk, expect: Expected): Anthropic =>
    loader.client(`anthropic/${expect}`, { ...options, idleMs }, () => {
      const guard = { provider: PROVIDER, expect, idleMs, secrets: [connection.apiKey] };
      return new sdk.default({ ...options, fetch: guardFetch(globalFetch, guard) });
    });

  async function* stream(
    request: ProviderRequest,
    signal: AbortSignal,
  ): AsyncGenerator<ProviderEvent> {
    // NOTE: a function, so that the checks after each await are not narrowed away.
    const aborted = (): boolean => signal.aborted;
    if (aborted()) return;
    const body = buildAnthropicBody(request);
    const sdk = await loader.load('anthropic');
    if (aborted()) return;
    const client = clientOf(sdk, 'stream');
    const where = { endpoint: endpointOf(client.baseURL), timeoutMs: connection.timeoutMs };

    const mapper = new EventMapper();
    let started = false;
    try {
      const events = await client.messages.create(
        { ...body, stream: true } as unknown as Anthropic.MessageCreateParamsStreaming,
        { signal },
      );
      for await (const event of events) {
        started = true;
        yield* mapper.map(event);
        if (mapper.finished) break;
      }
    } catch (error) {
      if (aborted() || error instanceof sdk.APIUserAbortError) return;
      throw toProviderError(sdk, error, started, where);
    }
    if (aborted() || mapper.finished) return;
    throw new ProviderError(
      PROVIDER,
      'connection',
      'The stream ended before the reply was complete',
      undefined,
      !started,
    );
  }

  /** `POST /v1/messages/count_tokens` with the request's body. */
  async function countTokens(request: ProviderRequest, signal: AbortSignal): Promise<number> {
    const body = Object.fromEntries(
      Object.entries(buildAnthropicBody(request)).filter(
        ([key]) => !GENERATION_FIELDS.includes(key),
      ),
    );
    const sdk = await loader.load('anthropic');
    const client = clientOf(sdk, 'json');
    const where = { endpoint: endpointOf(client.baseURL), timeoutMs: connection.timeoutMs };
    try {
      const count = await client.messages.countTokens(
        body as unknown as Anthropic.MessageCountTokensParams,
        { signal },
      );
      return count.input_tokens;
    } catch (error) {
      throw toProviderError(sdk, error, false, where);
    }
  }

  return {
    name: PROVIDER,
    buildBody: buildAnthropicBody,
    stream,
    countTokens,
  };
}
