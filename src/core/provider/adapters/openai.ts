// The OpenAI Responses API adapter (docs/configuration.md, "Provider and request parameters"): a prompt becomes a `POST /v1/responses`
// body, and the streamed response events become provider events. The SDK is loaded lazily, so
// only its types are imported here.
import type OpenAI from 'openai';
import type { ResponseCreateParamsStreaming } from 'openai/resources/responses/responses';
import type { SdkLoader, SdkModule } from '../sdk.js';
import type { Expected } from '../watchdog.js';
import { guardedClient, sdkOptions } from './client.js';
import { connectSdk, streamSdk, endpointOf, sdkFailure } from '../transport.js';
import { assertNever } from '../../util/never.js';
import { EventReader, PROVIDER } from './openai-events.js';
import { ProviderError, sortKeys, wireToolId, wireToolName } from '../types.js';
import type * as P from '../types.js';

/** Top-level keys moved to the end of the body, in this order, so the prompt prefix stays stable. */
const TRAILING_KEYS = ['tools', 'input'] as const;

type Json = Record<string, unknown>;

/** A loaded SDK, its client, and the request timeout the client was made with. */
interface Client {
  sdk: SdkModule<'openai'>;
  client: OpenAI;
  timeoutMs: number | undefined;
}
type UserPart = Extract<P.EvaluatedMessage, { role: 'user' }>['parts'][number];
type AssistantPart = Extract<P.EvaluatedMessage, { role: 'assistant' }>['parts'][number];

export interface OpenAIOptions extends P.ConnectionOptions {
  /**
   * Label each replayed assistant message with its phase (`parameters.openai.experimental.phase`,
   * on by default): `commentary` when the message also calls a tool, else `final_answer`. Newer
   * models (gpt-5.3-codex and later) answer worse when the labels of earlier turns are missing.
   */
  phase?: boolean;
}

/** How the body is built: the adapter's options that shape it. */
interface BodyOptions {
  phase: boolean;
}

export function createOpenAIAdapter(
  connection: OpenAIOptions,
  loader: SdkLoader,
): P.ProviderAdapter {
  const shape: BodyOptions = { phase: connection.phase ?? true };
  type Connected = Client;
  const clients = new Map<Expected, Promise<Connected>>();
  // The SDK logs through `console`; the host reports failures itself.
  const options = { ...sdkOptions(connection), logLevel: 'off' as const };
  const spec = {
    loader,
    provider: PROVIDER,
    kind: 'openai',
    options,
    streamIdleMs: connection.streamIdleMs,
    secrets: [connection.apiKey],
  };

  /** A client for streams, or for JSON answers (the token count): each checks its answers. */
  const connect = (expect: Expected): Promise<Connected> => {
    let client = clients.get(expect);
    if (client === undefined) {
      client = loader.load('openai').then((sdk) => ({
        sdk,
        client: guardedClient(spec, expect, (fetch) => new sdk.OpenAI({ ...options, fetch })),
        timeoutMs: connection.timeoutMs,
      }));
      clients.set(expect, client);
      // A failed load may succeed on the next send.
      client.catch(() => {
        clients.delete(expect);
      });
    }
    return client;
  };

  return {
    name: PROVIDER,
    buildBody: (request) => buildBody(request, shape),
    stream: (request, signal) => streamReply(() => connect('stream'), request, shape, signal),
    countTokens: (request, signal) =>
      countInputTokens(() => connect('json'), request, shape, signal),
  };
}

// ---------------------------------------------------------------------------------------------
// Token count

/** Fields of a Responses body that only matter for generating, not for counting its tokens. */
const GENERATION_FIELDS = [
  'stream',
  'store',
  'max_output_tokens',
  'temperature',
  'include',
  'prompt_cache_key',
  'prompt_cache_retention',
];

/** `POST /v1/responses/input_tokens` with the request's body. */
async function countInputTokens(
  connect: () => Promise<Client>,
  request: P.ProviderRequest,
  shape: BodyOptions,
  signal: AbortSignal,
): Promise<number> {
  const body = Object.fromEntries(
    Object.entries(buildBody(request, shape)).filter(([key]) => !GENERATION_FIELDS.includes(key)),
  );
  const connected = await connectSdk(PROVIDER, 'OpenAI SDK', connect);
  try {
    const count = await connected.client.responses.inputTokens.count(body, { signal });
    return count.input_tokens;
  } catch (error) {
    throw toProviderError(connected, error, false);
  }
}

// ---------------------------------------------------------------------------------------------
// Request body

function buildBody(request: P.ProviderRequest, shape: BodyOptions): Json {
  const body: Json = {
    model: request.model,
    input: buildInput(request, shape),
    stream: true,
    store: false,
    max_output_tokens: request.maxTokens,
  };
  if (request.temperature !== undefined) body['temperature'] = request.temperature;
  if (request.tools.length > 0) {
    body['tools'] = request.tools.map((spec) => ({
      type: 'function',
      name: wireToolName(spec.name),
      description: spec.description,
      parameters: spec.inputSchema,
      ...(spec.strict === true ? { strict: true } : {}),
    }));
    body['tool_choice'] = 'auto';
  }
  const effort = request.thinking?.effort;
  if (effort !== undefined && effort !== '') {
    if (effort === 'none') {
      // Reasoning explicitly off: no summary, nothing encrypted to ask for.
      body['reasoning'] = { effort };
    } else {
      body['reasoning'] = { effort, summary: 'auto' };
      body['include'] = ['reasoning.encrypted_content'];
    }
  }
  if (request.cacheRetention !== 'none') {
    if (request.cacheKey !== undefined) body['prompt_cache_key'] = request.cacheKey;
    body['prompt_cache_retention'] = request.cacheRetention === 'long' ? '24h' : 'in_memory';
  }
  const sorted = sortKeys(body) as Json;
  for (const key of TRAILING_KEYS) {
    if (key in sorted) {
      const value = sorted[key];
      // eslint-disable-next-line @typescript-eslint/no-dynamic-delete
      delete sorted[key];
      sorted[key] = value;
    }
  }
  return sorted;
}

function buildInput(request: P.ProviderRequest, shape: BodyOptions): Json[] {
  const input: Json[] = [];
  if (request.system !== '') input.push({ role: 'developer', content: request.system });
  const preserveForeign = (request.thinking?.foreign ?? 'preserve') === 'preserve';
  let assistants = 0;
  for (const message of request.messages) {
    if (message.role === 'user') {
      pushUser(input, message.parts);
    } else {
      assistants += 1;
      pushAssistant(input, message.parts, { preserveForeign, index: assistants, ...shape });
    }
  }
  return input;
}

function pushUser(input: Json[], parts: UserPart[]): void {
  const content: Json[] = [];
  for (const part of parts) {
    if (part.kind === 'tool_result') {
      input.push({
        type: 'function_call_output',
        call_id: wireToolId(part.toolUseId),
        output: resultOutput(part),
      });
    } else {
      const item = contentItem(part);
      if (item !== undefined) content.push(item);
    }
  }
  if (content.length > 0) input.push({ role: 'user', content });
}

function dataUrl(mimeType: string, data: string): string {
  return `data:${mimeType};base64,${data}`;
}

/** The `input_*` item for a prompt part (undefined for whitespace-only text). */
function contentItem(part: P.EvaluatedPart): Json | undefined {
  switch (part.kind) {
    case 'text':
      return part.text.trim() === '' ? undefined : { type: 'input_text', text: part.text };
    case 'text_file':
      return { type: 'input_text', text: part.text };
    case 'image':
      return {
        type: 'input_image',
        image_url: dataUrl(part.mimeType, part.data),
        detail: 'auto',
      };
    case 'pdf':
      return {
        type: 'input_file',
        filename: part.filename === '' ? 'document.pdf' : part.filename,
        file_data: dataUrl(part.mimeType, part.data),
      };
    case 'unsupported_file':
      return { type: 'input_text', text: `@${part.filename}` };
    default:
      return assertNever(part, 'part');
  }
}

/** A tool result's `output`: a string when it is all text, else a list of `input_*` items. */
function resultOutput(result: P.EvaluatedToolResult): string | Json[] {
  const textOnly = result.parts.every((p) => p.kind === 'text' || p.kind === 'text_file');
  if (textOnly) {
    const text = result.parts.map((p) => (p.kind === 'unsupported_file' ? '' : textOf(p))).join('');
    if (!result.isError) return text;
    return text === '' ? 'Error: Tool execution failed' : `Error: ${text}`;
  }
  const items: Json[] = result.isError ? [{ type: 'input_text', text: 'Error:' }] : [];
  for (const part of result.parts) {
    const item = contentItem(part);
    if (item !== undefined) items.push(item);
  }
  return items;
}

function textOf(part: P.EvaluatedPart): string {
  return part.kind === 'text' || part.kind === 'text_file' ? part.text : '';
}

/**
 * The items of an assistant message: its reasoning items first, then its text and tool calls in
 * order. Each text becomes a message item with an id of its own (`msg_<message>_<item>`, counted
 * from 1 over the request's assistant messages) and, with `phase`, its phase label, as Flemma
 * replays them: the service reads them as the earlier outputs they stand for.
 */
function pushAssistant(
  input: Json[],
  parts: AssistantPart[],
  options: BodyOptions & { preserveForeign: boolean; index: number },
): void {
  const { preserveForeign } = options;
  const phase = parts.some((part) => part.kind === 'tool_use') ? 'commentary' : 'final_answer';
  let items = 0;
  const foreign: string[] = [];
  for (const part of parts) {
    if (part.kind !== 'thinking') continue;
    if (part.signature?.provider === PROVIDER) {
      // Native: the signature is the reasoning item itself. An undecodable one is dropped.
      const item = decodeReasoning(part.signature.value);
      if (item !== undefined) input.push(item);
      continue;
    }
    if (part.redacted || part.content.trim() === '') continue;
    foreign.push(part.content.trim());
  }

  let text =
    preserveForeign && foreign.length > 0
      ? `<thinking>\n${foreign.join('\n\n')}\n</thinking>\n\n`
      : '';
  const flush = (): void => {
    const trimmed = text.trim();
    text = '';
    if (trimmed === '') return;
    items += 1;
    input.push({
      type: 'message',
      role: 'assistant',
      id: `msg_${String(options.index)}_${String(items)}`,
      content: [{ type: 'output_text', text: trimmed, annotations: [] }],
      status: 'completed',
      ...(options.phase ? { phase } : {}),
    });
  };
  for (const part of parts) {
    if (part.kind === 'text' || part.kind === 'text_file') {
      text += part.text;
    } else if (part.kind === 'tool_use') {
      flush();
      input.push({
        type: 'function_call',
        call_id: wireToolId(part.id),
        name: wireToolName(part.name),
        arguments: JSON.stringify(part.input ?? {}),
        status: 'completed',
      });
    }
  }
  flush();
}

/** The reasoning item a native signature carries: base64 of its JSON. */
function decodeReasoning(signature: string): Json | undefined {
  try {
    const item = JSON.parse(Buffer.from(signature, 'base64').toString('utf8')) as unknown;
    if (item !== null && typeof item === 'object' && !Array.isArray(item)) return item as Json;
  } catch {
    // Not a signature this adapter wrote.
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Streaming

async function* streamReply(
  connect: () => Promise<Client>,
  request: P.ProviderRequest,
  shape: BodyOptions,
  signal: AbortSignal,
): AsyncGenerator<P.ProviderEvent> {
  const body = buildBody(request, shape);
  yield* streamSdk(
    {
      provider: PROVIDER,
      sdk: 'OpenAI SDK',
      connect,
      open: ({ client }, ended) =>
        client.responses.create(
          { ...body, stream: true } as unknown as ResponseCreateParamsStreaming,
          { signal: ended },
        ),
      reader: new EventReader(),
      toError: toProviderError,
      early: 'the stream ended before the response completed',
    },
    signal,
  );
}

// ---------------------------------------------------------------------------------------------
// Errors

/** The service's own message when the error body has one, else the SDK's. */
function apiMessage(error: { message: string; error: unknown }): string {
  const body = error.error as { message?: unknown } | undefined;
  return typeof body?.message === 'string' && body.message !== '' ? body.message : error.message;
}

function toProviderError(connected: Client, error: unknown, started: boolean): ProviderError {
  // Anything but an answer is the transport failing, e.g. the connection dropping mid-stream.
  return sdkFailure(connected.sdk, error, {
    provider: PROVIDER,
    endpoint: endpointOf(connected.client.baseURL),
    timeoutMs: connected.timeoutMs,
    received: started,
    message: apiMessage,
    // No status: the error arrived inside the stream.
    inStream: (message) => new ProviderError(PROVIDER, 'stream', message),
    unreadable: (syntax) =>
      new ProviderError(PROVIDER, 'stream', `unreadable event: ${syntax.message}`),
  });
}
