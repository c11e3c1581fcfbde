// The Anthropic Messages adapter (docs/configuration.md, "Provider and request parameters"): an
// evaluated prompt becomes a Messages API body, and the SDK's stream of raw events becomes
// ProviderEvents (anthropic-events.ts). The SDK itself is loaded only when the first reply streams.
import type Anthropic from '@anthropic-ai/sdk';
import type { SdkLoader, SdkModule } from '../sdk.js';
import type { Expected } from '../watchdog.js';
import { guardedClient, sdkOptions } from './client.js';
import { endpointOf, readUntilFinished, sdkFailure } from '../transport.js';
import { assertNever } from '../../util/never.js';
import { EventMapper } from './anthropic-events.js';
import { ProviderError, sortKeys, wireToolId, wireToolName } from '../types.js';
import type * as P from '../types.js';

const PROVIDER = 'anthropic';

/** The smallest thinking budget the API accepts. */
const MIN_THINKING_BUDGET = 1024;

/** Top-level keys sent last, in this order, so that the cacheable prefix stays byte-stable. */
const TRAILING_KEYS = ['system', 'tools', 'messages'] as const;

type Block = Record<string, unknown>;
type CacheControl = { type: 'ephemeral' } | { type: 'ephemeral'; ttl: '1h' };

function cacheControlFor(retention: P.ProviderRequest['cacheRetention']): CacheControl | undefined {
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
function fileBlock(part: Exclude<P.EvaluatedPart, { kind: 'text' }>, unsupported: string): Block {
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

function toolResultBlock(result: P.EvaluatedToolResult): Block {
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

function userContent(parts: Extract<P.EvaluatedMessage, { role: 'user' }>['parts']): Block[] {
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

function isNative(part: P.EvaluatedThinking): boolean {
  return part.signature?.provider === PROVIDER && part.signature.value !== '';
}

function assistantContent(
  parts: Extract<P.EvaluatedMessage, { role: 'assistant' }>['parts'],
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

function toolUseBlock(part: P.EvaluatedToolUse): Block {
  return {
    id: wireToolId(part.id),
    input: part.input ?? {},
    name: wireToolName(part.name),
    type: 'tool_use',
  };
}

function thinkingFields(request: P.ProviderRequest): Block {
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

/** A message as the API takes it; undefined when it has nothing to send. */
function messageBlock(
  message: P.EvaluatedMessage,
  foreign: 'preserve' | 'drop',
): Block | undefined {
  const content =
    message.role === 'user' ? userContent(message.parts) : assistantContent(message.parts, foreign);
  return content.length > 0 ? { content, role: message.role } : undefined;
}

/**
 * The Messages API body for a prompt: keys sorted, then `system`, `tools`, `messages` last. The
 * blocks are built with their keys in order already, so that sorting copies little beyond what
 * came from elsewhere (tool inputs, schemas).
 */
export function buildAnthropicBody(request: P.ProviderRequest): Record<string, unknown> {
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

  body['messages'] = request.messages.flatMap((message) => messageBlock(message, foreign) ?? []);

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

/**
 * The body as UTF-8 JSON, the same bytes as `JSON.stringify(buildAnthropicBody(request))`; with a
 * chat's `cache`, the messages unchanged since its last request are not built, serialised and
 * encoded again (their bytes are kept: wire-cache.ts).
 */
export function serialiseAnthropicBody(
  request: P.ProviderRequest,
  cache: P.MessageSerialiser | undefined,
): Buffer {
  if (cache === undefined) return Buffer.from(JSON.stringify(buildAnthropicBody(request)));
  const foreign = request.thinking?.foreign ?? 'preserve';
  // `messages` is the body's last key: its empty array ends the JSON (`"messages":[]}`).
  const head = JSON.stringify(buildAnthropicBody({ ...request, messages: [] }));
  const messages = cache.serialise(`${PROVIDER}\0${foreign}`, request.messages, (message) => {
    const block = messageBlock(message, foreign);
    return block === undefined ? '' : JSON.stringify(sortKeys(block));
  });
  const comma = Buffer.from(',');
  const chunks: Uint8Array[] = [Buffer.from(head.slice(0, -2))];
  for (const json of messages) {
    if (json.length === 0) continue;
    if (chunks.length > 1) chunks.push(comma);
    chunks.push(json);
  }
  chunks.push(Buffer.from(']}'));
  return Buffer.concat(chunks);
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
  // Anything else while reading the body (a reset socket, `terminated`) is a lost connection.
  return sdkFailure(sdk, error, {
    provider: PROVIDER,
    ...where,
    received: started,
    message: (apiError) => {
      const { status, type, apiMessage } = apiError;
      // No status: an `event: error` inside a 200 stream, whose type says what it was.
      if (typeof status !== 'number') return apiErrorText(type, apiMessage) ?? apiError.message;
      return apiMessage ?? apiError.message;
    },
    inStream: (message) => new ProviderError(PROVIDER, 'stream', message),
  });
}

/** Fields of a Messages body that only matter for generating, not for counting its tokens. */
const GENERATION_FIELDS = ['max_tokens', 'stream', 'temperature'];

/** How the adapter reaches the API: a client for streams or JSON answers, and where it points. */
interface Clients {
  loader: SdkLoader;
  connection: P.ConnectionOptions;
  clientOf: (sdk: AnthropicSdk, expect: Expected) => Anthropic;
}

export function createAnthropicAdapter(
  connection: P.ConnectionOptions,
  loader: SdkLoader,
): P.ProviderAdapter {
  const options = sdkOptions(connection);
  const spec = {
    loader,
    provider: PROVIDER,
    kind: 'anthropic',
    options,
    streamIdleMs: connection.streamIdleMs,
    secrets: [connection.apiKey],
  };
  /** A client for streams, or for JSON answers (the token count): each checks its answers. */
  const clientOf = (sdk: AnthropicSdk, expect: Expected): Anthropic =>
    guardedClient(spec, expect, (fetch) => new sdk.default({ ...options, fetch }));
  const clients: Clients = { loader, connection, clientOf };
  return {
    name: PROVIDER,
    buildBody: buildAnthropicBody,
    stream: (request, signal, cache) => streamReply(clients, request, signal, cache),
    countTokens: (request, signal) => countTokens(clients, request, signal),
  };
}

async function* streamReply(
  { loader, connection, clientOf }: Clients,
  request: P.ProviderRequest,
  signal: AbortSignal,
  cache: P.MessageSerialiser | undefined,
): AsyncGenerator<P.ProviderEvent> {
  // NOTE: a function, so that the checks after each await are not narrowed away.
  const aborted = (): boolean => signal.aborted;
  if (aborted()) return;
  const body = serialiseAnthropicBody(request, cache);
  const sdk = await loader.load('anthropic');
  if (aborted()) return;
  const client = clientOf(sdk, 'stream');
  const where = { endpoint: endpointOf(client.baseURL), timeoutMs: connection.timeoutMs };

  const mapper = new EventMapper();
  let started = false;
  try {
    // `messages.create` with the body already serialised: what it would send, without its
    // `JSON.stringify` of the whole (a megabyte for a long chat) and `fetch`'s encoding of it.
    const open = (ending: AbortSignal) =>
      client.post<AsyncIterable<Anthropic.RawMessageStreamEvent>>('/v1/messages', {
        body,
        headers: { 'content-type': 'application/json' },
        stream: true,
        signal: ending,
      });
    const reader = {
      read: (event: Anthropic.RawMessageStreamEvent) => {
        started = true;
        return mapper.map(event);
      },
      get finished() {
        return mapper.finished;
      },
    };
    yield* readUntilFinished(signal, open, reader);
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
async function countTokens(
  { loader, connection, clientOf }: Clients,
  request: P.ProviderRequest,
  signal: AbortSignal,
): Promise<number> {
  const body = Object.fromEntries(
    Object.entries(buildAnthropicBody(request)).filter(([key]) => !GENERATION_FIELDS.includes(key)),
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
