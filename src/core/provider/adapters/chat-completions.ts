// The OpenAI-compatible Chat Completions adapter (`POST <baseURL>/chat/completions`): Ollama,
// llama.cpp server, LM Studio, Moonshot and any other server speaking that dialect, through the
// official OpenAI SDK with a configurable base URL.
//
// Reasoning: servers stream it as `delta.reasoning_content` (Moonshot, DeepSeek, llama.cpp) or
// `delta.reasoning` (Ollama, OpenRouter). It comes back as one `thinking` block, signed by this
// adapter so that the next turn replays it as native reasoning (the configured field) instead of
// as foreign `<thinking>` text. The buffer's signature attribute only takes `[A-Za-z0-9]+`
// provider names and drops empty values, so the signature is the adapter's name stripped to
// those characters (`openai-compatible` → `openaicompatible`) with the field's name as its value:
// `<thinking openaicompatible:signature="reasoning_content">`. The value carries no secret; it
// only has to survive the round trip.
import type { APIError, OpenAI } from 'openai';
import type { SdkLoader, SdkModule } from '../sdk.js';
import type { Expected } from '../watchdog.js';
import { guardedClient, sdkOptions } from './client.js';
import { endpointOf, sdkFailure, shownUrl } from '../transport.js';
import { assertNever } from '../../util/never.js';
import { type ReasoningField, ReplyState } from './chat-completions-events.js';
import { ProviderError, sortKeys, wireToolId, wireToolName } from '../types.js';
import type * as P from '../types.js';

export type { ReasoningField };

export interface ChatCompletionsOptions extends P.ConnectionOptions {
  /** Adapter (and error) name; `openai-compatible` by default. */
  name?: string;
  /**
   * The field reasoning is replayed in (`reasoning_content` by default). Streams are read from
   * either field whatever this says.
   */
  reasoningField?: ReasoningField;
  /**
   * Whether tool-result messages carry the tool's `name` beside `tool_call_id`. Moonshot requires
   * it; the OpenAI dialect has no such field and some strict servers reject it, so it is off
   * unless the provider asks for it.
   */
  toolResultNames?: boolean;
}

const DEFAULT_NAME = 'openai-compatible';

/** Top-level keys moved to the end of the body, in this order (prompt-cache byte stability). */
const TRAILING_KEYS = ['tools', 'messages'];

type OpenAIModule = SdkModule<'openai'>;
type StreamParams = OpenAI.ChatCompletionCreateParamsStreaming;

/** The provider name a thinking signature of this adapter carries. */
export function signatureProvider(adapterName: string): string {
  const stripped = adapterName.replace(/[^A-Za-z0-9]/g, '');
  return stripped === '' ? 'openaicompatible' : stripped;
}

/** One configured dialect: its name, its reasoning field, and how it writes tool results. */
interface Dialect {
  name: string;
  field: ReasoningField;
  signer: string;
  names: boolean;
}

/** How the adapter reaches the server: a client for streams or JSON answers, and where. */
type Connect = (
  sdk: OpenAIModule,
  model: string,
  expect: Expected,
) => { client: OpenAI; where: Where };

export function createChatCompletionsAdapter(
  connection: ChatCompletionsOptions,
  loader: SdkLoader,
): P.ProviderAdapter {
  const name = connection.name ?? DEFAULT_NAME;
  const dialect: Dialect = {
    name,
    field: connection.reasoningField ?? 'reasoning_content',
    signer: signatureProvider(name),
    names: connection.toolResultNames === true,
  };
  const buildBody = (request: P.ProviderRequest): Record<string, unknown> =>
    buildChatBody(request, dialect);
  // The SDK's logger writes to the console; the host's stdout is the RPC channel.
  const options = { ...sdkOptions(connection), logLevel: 'off' as const };
  const spec = {
    loader,
    provider: name,
    kind: 'openai-chat',
    options: { ...options, name },
    streamIdleMs: connection.streamIdleMs,
    secrets: [connection.apiKey],
  };
  /** A client for streams, or for JSON answers (the token count): each checks its answers. */
  const connect: Connect = (sdk, model, expect) => {
    const client = guardedClient(spec, expect, (fetch) => new sdk.OpenAI({ ...options, fetch }));
    const where: Where = { name, baseURL: client.baseURL, model, sdk };
    if (connection.timeoutMs !== undefined) where.timeoutMs = connection.timeoutMs;
    return { client, where };
  };
  const stream = (
    request: P.ProviderRequest,
    signal: AbortSignal,
  ): AsyncGenerator<P.ProviderEvent> => streamReply(loader, connect, dialect, request, signal);
  const countTokens = (request: P.ProviderRequest, signal: AbortSignal): Promise<number> =>
    countTokensOf(loader, connect, dialect, request, signal);
  return name === 'moonshot'
    ? { name, buildBody, stream, countTokens }
    : { name, buildBody, stream };
}

async function* streamReply(
  loader: SdkLoader,
  connect: Connect,
  dialect: Dialect,
  request: P.ProviderRequest,
  signal: AbortSignal,
): AsyncGenerator<P.ProviderEvent, void, undefined> {
  // A function, so that the checks below are not narrowed away after the first one.
  const aborted = (): boolean => signal.aborted;
  const sdk = await loader.load('openai');
  if (aborted()) return;
  const { client, where } = connect(sdk, request.model, 'stream');
  const body = buildChatBody(request, dialect) as unknown as StreamParams;
  const state = new ReplyState(dialect.name, dialect.signer, dialect.field);
  let received = false;
  try {
    const chunks = await client.chat.completions.create({ ...body }, { signal });
    for await (const chunk of chunks) {
      if (aborted()) return;
      received = true;
      yield* state.take(chunk);
    }
  } catch (error) {
    if (aborted() || error instanceof sdk.APIUserAbortError) return;
    throw toProviderError(error, where, received);
  }
  // The SDK ends an aborted stream without an error.
  if (aborted()) return;
  yield* state.finish();
}

/**
 * Moonshot's `POST /v1/tokenizers/estimate-token-count` with the request's model and messages
 * (other OpenAI-compatible servers have no counting endpoint).
 */
async function countTokensOf(
  loader: SdkLoader,
  connect: Connect,
  dialect: Dialect,
  request: P.ProviderRequest,
  signal: AbortSignal,
): Promise<number> {
  const sdk = await loader.load('openai');
  const { client, where } = connect(sdk, request.model, 'json');
  const body = buildChatBody(request, dialect);
  try {
    const answer = await client.post<{ data?: { total_tokens?: number } }>(
      '/tokenizers/estimate-token-count',
      { body: { model: body['model'], messages: body['messages'] }, signal },
    );
    const total = answer.data?.total_tokens;
    if (typeof total !== 'number') {
      throw new ProviderError(dialect.name, 'stream', 'the token count answer has no total_tokens');
    }
    return total;
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    throw toProviderError(error, where, false);
  }
}

// ---------------------------------------------------------------------------------------------
// Request body

function buildChatBody(request: P.ProviderRequest, dialect: Dialect): Record<string, unknown> {
  const { name, field, signer, names } = dialect;
  const isNative = (signature: { provider: string } | undefined): boolean =>
    signature !== undefined && (signature.provider === signer || signature.provider === name);
  const messages: unknown[] = [];
  if (request.system.trim() !== '') messages.push({ role: 'system', content: request.system });
  const foreign = request.thinking?.foreign ?? 'preserve';
  for (const message of request.messages) {
    messages.push(...convertMessage(message, { field, foreign, isNative, names }));
  }
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    messages,
  };
  if (request.temperature !== undefined) body['temperature'] = request.temperature;
  if (request.tools.length > 0) {
    body['tools'] = request.tools.map((tool) => ({
      type: 'function',
      function: {
        name: wireToolName(tool.name),
        description: tool.description,
        parameters: tool.inputSchema,
        ...(tool.strict === true ? { strict: true } : {}),
      },
    }));
    body['tool_choice'] = 'auto';
  }
  return withTrailingKeys(sortKeys(body) as Record<string, unknown>);
}

interface ConvertContext {
  field: ReasoningField;
  foreign: 'preserve' | 'drop';
  isNative: (signature: { provider: string } | undefined) => boolean;
  /** Tool results name their tool (`toolResultNames`). */
  names: boolean;
}

function convertMessage(message: P.EvaluatedMessage, context: ConvertContext): unknown[] {
  if (message.role === 'user') {
    const out: unknown[] = [];
    const rest: P.EvaluatedPart[] = [];
    for (const part of message.parts) {
      if (part.kind === 'tool_result') {
        out.push({
          role: 'tool',
          tool_call_id: wireToolId(part.toolUseId),
          ...(context.names ? { name: wireToolName(part.name) } : {}),
          content: toolResultContent(part),
        });
      } else {
        rest.push(part);
      }
    }
    const content = userContent(rest);
    if (content !== undefined) out.push({ role: 'user', content });
    return out;
  }

  let text = '';
  const native: string[] = [];
  const foreign: string[] = [];
  const calls: unknown[] = [];
  for (const part of message.parts) {
    switch (part.kind) {
      case 'thinking': {
        const content = part.content.trim();
        if (part.redacted || content === '') break;
        if (context.isNative(part.signature)) native.push(content);
        else foreign.push(content);
        break;
      }
      case 'tool_use':
        calls.push({
          id: wireToolId(part.id),
          type: 'function',
          function: { name: wireToolName(part.name), arguments: JSON.stringify(part.input ?? {}) },
        });
        break;
      case 'text':
      case 'text_file':
      case 'image':
      case 'pdf':
      case 'unsupported_file':
        text += partText(part);
        break;
      default:
        assertNever(part, 'assistant part');
    }
  }
  const pieces: string[] = [];
  if (foreign.length > 0 && context.foreign === 'preserve') {
    pieces.push(`<thinking>\n${foreign.join('\n\n')}\n</thinking>`);
  }
  if (text.trim() !== '') pieces.push(text.trim());
  if (pieces.length === 0 && calls.length === 0 && native.length === 0) return [];
  const assistant: Record<string, unknown> = {
    role: 'assistant',
    content: pieces.length === 0 ? null : pieces.join('\n\n'),
  };
  if (calls.length > 0) assistant['tool_calls'] = calls;
  if (native.length > 0) assistant[context.field] = native.join('\n\n');
  return [assistant];
}

/** A part as plain text; files that cannot travel inline are named as `@<filename>`. */
function partText(part: P.EvaluatedPart): string {
  switch (part.kind) {
    case 'text':
    case 'text_file':
      return part.text;
    case 'image':
    case 'pdf':
    case 'unsupported_file':
      return `@${part.filename}`;
    default:
      return assertNever(part, 'part');
  }
}

function toolResultContent(result: P.EvaluatedToolResult): string {
  const text = result.parts.map(partText).join('');
  if (!result.isError) return text;
  return text === '' ? 'Error: Tool execution failed' : `Error: ${text}`;
}

/** A string when the message is only text, else text and image parts; undefined when empty. */
function userContent(parts: P.EvaluatedPart[]): string | unknown[] | undefined {
  if (!parts.some((part) => part.kind === 'image')) {
    const text = parts.map(partText).join('');
    return text.trim() === '' ? undefined : text;
  }
  const out: unknown[] = [];
  for (const part of parts) {
    if (part.kind === 'image') {
      out.push({
        type: 'image_url',
        image_url: { url: `data:${part.mimeType};base64,${part.data}` },
      });
    } else {
      const text = partText(part);
      if (text.trim() !== '') out.push({ type: 'text', text });
    }
  }
  return out;
}

function withTrailingKeys(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (!TRAILING_KEYS.includes(key)) out[key] = value;
  }
  for (const key of TRAILING_KEYS) {
    if (key in body) out[key] = body[key];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Errors

interface Where {
  name: string;
  baseURL: string;
  model: string;
  sdk: OpenAIModule;
  timeoutMs?: number;
}

function toProviderError(error: unknown, where: Where, received: boolean): ProviderError {
  const { name, baseURL, model, sdk } = where;
  return sdkFailure(sdk, error, {
    provider: name,
    endpoint: endpointOf(baseURL),
    timeoutMs: where.timeoutMs,
    received,
    message: apiErrorMessage,
    // An error object inside the stream (`data: {"error": …}`).
    inStream: (message) => new ProviderError(name, 'stream', message, undefined, !received),
    // A 404 from a compatible server usually means the model is not there.
    forStatus: (status, message) =>
      status === 404
        ? `${message} (the model '${model}' may not exist on ${shownUrl(baseURL)})`
        : message,
    // A chunk that is not JSON: the stream itself is broken.
    unreadable: (syntax) => {
      const broke = received ? 'the reply broke off' : 'the stream failed before any data';
      return new ProviderError(
        name,
        'stream',
        `${broke}: ${describeCauses(syntax)}`,
        undefined,
        !received,
      );
    },
  });
}

function apiErrorMessage(error: APIError): string {
  const body: unknown = error.error;
  if (typeof body === 'string' && body.trim() !== '') return body;
  if (body !== null && typeof body === 'object') {
    const message = (body as Record<string, unknown>)['message'];
    if (typeof message === 'string' && message.trim() !== '') return message;
  }
  // The SDK's own message starts with the status (`404 …`).
  return error.message.replace(/^\d{3}\s+/, '');
}

/** `message (cause message, …)`, skipping causes that repeat their parent. */
function describeCauses(error: Error): string {
  const seen: string[] = [];
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e.message !== '' && !seen.includes(e.message)) seen.push(e.message);
    e = e.cause;
  }
  const [first = error.name, ...rest] = seen;
  return rest.length === 0 ? first : `${first} (${rest.join(', ')})`;
}
