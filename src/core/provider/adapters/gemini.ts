// The Gemini adapter (docs/configuration.md, "Provider and request parameters"), for both the Gemini API and Vertex AI through
// `@google/genai`: a prompt becomes the SDK's generateContent parameters, and the streamed
// response chunks become provider events (gemini-events.ts). The SDK is loaded lazily, so only
// its types are imported here.
import type { GenerateContentParameters, GoogleGenAI, GoogleGenAIOptions } from '@google/genai';
import type { SdkLoader, SdkModule } from '../sdk.js';
import type { Expected, Fetch } from '../watchdog.js';
import { guardedClient } from './client.js';
import { assertNever } from '../../util/never.js';
import { carriedError, connectSdk, streamSdk } from '../transport.js';
import { ChunkReader } from './gemini-events.js';
import { ProviderError, sortedCopy, wireToolName, errorForStatus } from '../types.js';
import type * as P from '../types.js';

export interface GeminiAdapterOptions {
  /** Gemini API key (Gemini API mode only). */
  apiKey?: string;
  /** OAuth access token for Vertex AI; without one, Google's default credentials are used. */
  accessToken?: string;
  /** Vertex AI project and location; the adapter is then named `vertex`. */
  vertex?: { project: string; location: string };
  baseURL?: string;
  /** Attempts for retryable failures (408, 429, 5xx) before the first byte, the SDK's own retry. */
  maxRetries?: number;
  /** How long a reply's stream may go without a byte (`parameters.stream_idle_timeout`), in ms. */
  streamIdleMs?: number;
  /** How long to wait for an answer to begin (`parameters.timeout`), in ms. */
  timeoutMs?: number;
}

type UserPart = Extract<P.EvaluatedMessage, { role: 'user' }>['parts'][number];
type AssistantPart = Extract<P.EvaluatedMessage, { role: 'assistant' }>['parts'][number];
type AuthClient = NonNullable<NonNullable<GoogleGenAIOptions['googleAuthOptions']>['authClient']>;

// The request as plain JSON: the SDK's types use enums and classes, which only exist at run time.
interface Part {
  text?: string;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  functionCall?: { name: string; args: Record<string, unknown> };
  functionResponse?: { name: string; response: Record<string, unknown> };
}

interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

interface Config {
  maxOutputTokens: number;
  systemInstruction?: { parts: Part[] };
  temperature?: number;
  thinkingConfig?: { includeThoughts: true; thinkingBudget?: number; thinkingLevel?: string };
  tools?: {
    functionDeclarations: {
      name: string;
      description: string;
      parametersJsonSchema: Record<string, unknown>;
    }[];
  }[];
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' } };
}

interface Connected {
  sdk: SdkModule<'genai'>;
  client: GoogleGenAI;
}

export function createGeminiAdapter(
  options: GeminiAdapterOptions,
  loader: SdkLoader,
): P.ProviderAdapter {
  const name = options.vertex === undefined ? 'gemini' : 'vertex';
  const clients = new Map<Expected, Promise<Connected>>();
  const spec = {
    loader,
    provider: name,
    kind: 'genai',
    options,
    streamIdleMs: options.streamIdleMs,
    secrets: [options.apiKey ?? '', options.accessToken ?? ''],
    // The SDK's own timeout ends in a bare abort: the guard keeps time instead, and says which
    // endpoint did not answer.
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  };

  /** A client for streams, or for JSON answers (the token count): each checks its answers. */
  const connect = (expect: Expected): Promise<Connected> => {
    let connected = clients.get(expect);
    if (connected === undefined) {
      connected = loader.load('genai').then((sdk) => ({
        sdk,
        // Keyed by the plain options (the access token included), not by the SDK's options,
        // which hold an auth client object.
        client: guardedClient(
          spec,
          expect,
          (fetch) => new sdk.GoogleGenAI(clientOptions(options, fetch)),
        ),
      }));
      clients.set(expect, connected);
      // A failed load may succeed on the next send.
      connected.catch(() => {
        clients.delete(expect);
      });
    }
    return connected;
  };

  return {
    name,
    buildBody: (request) => buildParams(name, request) as unknown as Record<string, unknown>,
    stream: (request, signal) => streamReply(name, () => connect('stream'), request, signal),
    countTokens: (request, signal) => countTokens(name, () => connect('json'), request, signal),
  };
}

function clientOptions(options: GeminiAdapterOptions, fetch: Fetch): GoogleGenAIOptions {
  const httpOptions: NonNullable<GoogleGenAIOptions['httpOptions']> = { fetch };
  if (options.baseURL !== undefined) httpOptions.baseUrl = options.baseURL;
  if (options.maxRetries !== undefined && options.maxRetries > 0) {
    httpOptions.retryOptions = { attempts: options.maxRetries + 1 };
  }
  if (options.vertex === undefined) {
    return {
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
      httpOptions,
    };
  }
  const result: GoogleGenAIOptions = {
    vertexai: true,
    project: options.vertex.project,
    location: options.vertex.location,
    httpOptions,
  };
  if (options.accessToken !== undefined) {
    result.googleAuthOptions = { authClient: presetTokenClient(options.accessToken) };
  }
  return result;
}

/**
 * An auth client holding one access token. google-auth-library asks its client for nothing but
 * request headers, so this stands in for an `OAuth2Client` without loading the library at start-up
 * (it is only reachable as a dependency of the SDK).
 */
function presetTokenClient(token: string): AuthClient {
  const client = {
    getRequestHeaders: (): Promise<Headers> =>
      Promise.resolve(new Headers({ authorization: `Bearer ${token}` })),
  };
  return client as unknown as AuthClient;
}

// ---------------------------------------------------------------------------------------------
// Request

/** The SDK's generateContent parameters, keys sorted so that equal prompts are byte-identical. */
function buildParams(provider: string, request: P.ProviderRequest): GenerateContentParameters {
  const config: Config = { maxOutputTokens: request.maxTokens };
  if (request.system.trim() !== '')
    config.systemInstruction = { parts: [{ text: request.system }] };
  if (request.temperature !== undefined) config.temperature = request.temperature;
  const thinking = request.thinking;
  if (thinking !== undefined) {
    const thinkingConfig: NonNullable<Config['thinkingConfig']> = { includeThoughts: true };
    // A model with an effort map takes a level; the caller only resolves one for such models.
    if (thinking.effort !== undefined && thinking.effort !== '') {
      thinkingConfig.thinkingLevel = thinking.effort.toUpperCase();
    } else if (thinking.budget !== undefined) {
      thinkingConfig.thinkingBudget = thinking.budget;
    }
    config.thinkingConfig = thinkingConfig;
  }
  if (request.tools.length > 0) {
    config.tools = [
      {
        functionDeclarations: request.tools.map((spec) => ({
          name: wireToolName(spec.name),
          description: spec.description,
          parametersJsonSchema: spec.inputSchema,
        })),
      },
    ];
    config.toolConfig = {
      functionCallingConfig: { mode: 'AUTO' },
    };
  }
  const preserveForeign = (thinking?.foreign ?? 'preserve') === 'preserve';
  const contents: Content[] = request.messages.map((message) =>
    message.role === 'user'
      ? { role: 'user', parts: userParts(message.parts) }
      : { role: 'model', parts: modelParts(provider, message.parts, preserveForeign) },
  );
  // A copy: the SDK is handed this object and may change it.
  return sortedCopy({ model: request.model, contents, config }) as GenerateContentParameters;
}

function isToolResult(part: UserPart): part is P.EvaluatedToolResult {
  return part.kind === 'tool_result';
}

function userParts(parts: UserPart[]): Part[] {
  const out: Part[] = [];
  for (const result of parts.filter(isToolResult)) {
    const text = result.parts.map(partText).join('');
    out.push({
      functionResponse: {
        name: result.name,
        response: result.isError ? { error: text } : { output: text },
      },
    });
    for (const part of result.parts) {
      if (part.kind === 'image' || part.kind === 'pdf') out.push(inlineData(part));
    }
  }
  for (const part of parts) {
    if (isToolResult(part)) continue;
    if (part.kind === 'text') {
      if (part.text.trim() !== '') out.push({ text: part.text });
    } else if (part.kind === 'image' || part.kind === 'pdf') {
      out.push(inlineData(part));
    } else {
      out.push({ text: partText(part) });
    }
  }
  return out.length === 0 ? [{ text: '' }] : out;
}

/** The text a part contributes to a tool result (images and PDFs travel as their own parts). */
function partText(part: P.EvaluatedPart): string {
  switch (part.kind) {
    case 'text':
    case 'text_file':
      return part.text;
    case 'unsupported_file':
      return `@${part.filename}`;
    case 'image':
    case 'pdf':
      return '';
    default:
      return assertNever(part, 'part');
  }
}

function inlineData(part: Extract<P.EvaluatedPart, { kind: 'image' | 'pdf' }>): Part {
  return { inlineData: { mimeType: part.mimeType, data: part.data } };
}

function modelParts(provider: string, parts: AssistantPart[], preserveForeign: boolean): Part[] {
  const foreign: string[] = [];
  let text = '';
  let signature: string | undefined;
  const calls: Part[] = [];
  for (const part of parts) {
    if (part.kind === 'text') {
      text += part.text;
    } else if (part.kind === 'thinking') {
      if (part.signature?.provider === provider) {
        if (part.signature.value !== '') signature = part.signature.value;
      } else if (!part.redacted && part.content.trim() !== '') {
        foreign.push(part.content.trim());
      }
    } else if (part.kind === 'tool_use') {
      calls.push({ functionCall: { name: wireToolName(part.name), args: toArgs(part.input) } });
    }
  }
  const out: Part[] = [];
  if (preserveForeign && foreign.length > 0) {
    out.push({ text: `<thinking>\n${foreign.join('\n\n')}\n</thinking>` });
  }
  const trimmed = text.trim();
  const textPart: Part | undefined = trimmed === '' ? undefined : { text: trimmed };
  if (textPart !== undefined) out.push(textPart);
  out.push(...calls);
  if (signature !== undefined) {
    const carrier = calls[0] ?? textPart;
    if (carrier === undefined) out.push({ text: '', thoughtSignature: signature });
    else carrier.thoughtSignature = signature;
  }
  return out.length === 0 ? [{ text: '' }] : out;
}

function toArgs(input: unknown): Record<string, unknown> {
  return input !== null && typeof input === 'object' && !Array.isArray(input)
    ? (input as Record<string, unknown>)
    : {};
}

// ---------------------------------------------------------------------------------------------
// Streaming

async function* streamReply(
  provider: string,
  connect: () => Promise<Connected>,
  request: P.ProviderRequest,
  signal: AbortSignal,
): AsyncGenerator<P.ProviderEvent> {
  const params = buildParams(provider, request);
  yield* streamSdk(
    {
      provider,
      sdk: 'Google Gen AI SDK',
      connect,
      open: ({ client }, ended) =>
        client.models.generateContentStream({
          ...params,
          config: {
            ...params.config,
            abortSignal: ended,
            // The SDK would otherwise resume interrupted streams on its own.
            automaticContinuation: false,
          },
        }),
      reader: new ChunkReader(provider),
      toError: ({ sdk }, error, started) => toProviderError(provider, sdk, error, started),
      early: 'the stream ended without a finish reason',
    },
    signal,
  );
}

/**
 * `models.countTokens` with the request's contents; on Vertex AI also its system instruction and
 * tools (the generation config and the tool config are left out).
 */
async function countTokens(
  provider: string,
  connect: () => Promise<Connected>,
  request: P.ProviderRequest,
  signal: AbortSignal,
): Promise<number> {
  const params = buildParams(provider, request);
  const config = (params.config ?? {}) as Config;
  const { sdk, client } = await connectSdk(provider, 'Google Gen AI SDK', connect);
  let contents = params.contents as Content[];
  const countConfig: Record<string, unknown> = { abortSignal: signal };
  if (provider === 'vertex') {
    if (config.systemInstruction !== undefined) {
      countConfig['systemInstruction'] = config.systemInstruction;
    }
    if (config.tools !== undefined) countConfig['tools'] = config.tools;
  } else if (config.systemInstruction !== undefined) {
    // NOTE: the Gemini API's count, as the SDK offers it, takes contents only: the system
    // instruction is counted as a leading turn, and tool declarations are not counted.
    contents = [{ role: 'user', parts: config.systemInstruction.parts }, ...contents];
  }
  try {
    const result = await client.models.countTokens({
      model: request.model,
      contents,
      config: countConfig,
    });
    return result.totalTokens ?? 0;
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    throw toProviderError(provider, sdk, error, false);
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The service's message from an SDK error, whose message is the error body as JSON (possibly
 * after a `got status: …. ` prefix): `message (Status: STATUS)`.
 */
function apiMessage(message: string): string {
  const start = message.indexOf('{');
  if (start === -1) return message;
  try {
    const parsed = JSON.parse(message.slice(start)) as unknown;
    const body = (Array.isArray(parsed) ? (parsed[0] as unknown) : parsed) as
      { error?: { message?: unknown; status?: unknown } } | undefined;
    const detail = body?.error?.message;
    if (typeof detail !== 'string' || detail === '') return message;
    const status = body?.error?.status;
    return typeof status === 'string' && status !== '' ? `${detail} (Status: ${status})` : detail;
  } catch {
    return message;
  }
}

function toProviderError(
  provider: string,
  sdk: SdkModule<'genai'>,
  error: unknown,
  started: boolean,
): ProviderError {
  // The guard's own failures (a connection that failed, a stall, an answer that is not one).
  const carried = carriedError(error);
  if (carried !== undefined) return carried;
  if (error instanceof sdk.ApiError) {
    const status = error.status;
    const message = apiMessage(error.message);
    return errorForStatus(provider, status, message);
  }
  const message = describe(error);
  if (/Incomplete JSON segment|exception parsing stream chunk/.test(message)) {
    return new ProviderError(provider, 'stream', `unreadable stream: ${message}`);
  }
  // Anything else is the transport failing: refused, reset, or dropped mid-stream.
  const cause = (error as { cause?: unknown } | null)?.cause;
  const detail = cause === undefined ? message : `${message} (${describe(cause)})`;
  return new ProviderError(
    provider,
    'connection',
    `connection lost: ${detail}`,
    undefined,
    !started,
  );
}
