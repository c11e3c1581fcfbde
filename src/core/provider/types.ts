// The provider contract: what a send hands to a provider adapter, and the events an adapter
// streams back. Every adapter (Anthropic, OpenAI Responses, Gemini/Vertex, OpenAI-compatible
// Chat Completions) implements `ProviderAdapter` through its official SDK.

/** A part of an evaluated prompt: templates rendered, file references read. */
export type EvaluatedPart =
  | { kind: 'text'; text: string }
  | { kind: 'image'; mimeType: string; data: string; filename: string }
  | { kind: 'pdf'; mimeType: 'application/pdf'; data: string; filename: string }
  | { kind: 'text_file'; mimeType: string; text: string; filename: string }
  | { kind: 'unsupported_file'; filename: string };

export interface EvaluatedToolResult {
  kind: 'tool_result';
  toolUseId: string;
  /** The tool's name as the buffer has it (internal form, e.g. `mcp:slack:post`). */
  name: string;
  parts: EvaluatedPart[];
  isError: boolean;
  synthetic: boolean;
}

export interface EvaluatedThinking {
  kind: 'thinking';
  content: string;
  redacted: boolean;
  signature?: { provider: string; value: string };
}

export interface EvaluatedToolUse {
  kind: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

export type EvaluatedMessage =
  | { role: 'user'; parts: (EvaluatedPart | EvaluatedToolResult)[] }
  | { role: 'assistant'; parts: (EvaluatedPart | EvaluatedThinking | EvaluatedToolUse)[] };

/** A tool as offered to the model. */
export interface ToolSpec {
  /** Internal name (may contain `:`; adapters encode it for the wire). */
  name: string;
  description: string;
  /** JSON Schema of the input. */
  inputSchema: Record<string, unknown>;
  /** OpenAI strict mode (only OpenAI-family adapters use it). */
  strict?: boolean;
}

export type ThinkingLevel = 'minimal' | 'low' | 'medium' | 'high' | 'max';

export interface ProviderRequest {
  model: string;
  system: string;
  messages: EvaluatedMessage[];
  /** Sorted by name by the caller; adapters keep the order. */
  tools: ToolSpec[];
  maxTokens: number;
  temperature?: number;
  /** Unified thinking; `undefined` = off. Provider-specific overrides are resolved by the caller. */
  thinking?: {
    level: ThinkingLevel;
    /** Token budget for budget-based providers (Anthropic, Gemini 2.5). */
    budget?: number;
    /** Effort string for effort-based providers (OpenAI `reasoning.effort`, Gemini 3 level). */
    effort?: string;
    /** What to do with thinking signed by another provider. */
    foreign: 'preserve' | 'drop';
  };
  cacheRetention: 'short' | 'long' | 'none';
  /** A stable key for provider-side prompt caching (OpenAI `prompt_cache_key`), e.g. the file path. */
  cacheKey?: string;
}

export interface Usage {
  /** Input tokens not read from a cache. */
  input: number;
  output: number;
  thoughts?: number;
  cacheRead?: number;
  cacheCreation?: number;
}

/**
 * What an ACP agent says itself of its turn beyond the token counts (src/core/acp/usage.ts): the
 * cost then is its own, never our price table's (absent: unknown).
 */
export interface ReportedUsage {
  /** What the turn cost, in US dollars, as the agent counts it. */
  cost?: number;
  /** The tokens in its context after the turn. */
  context?: number;
  /** Its model's context window. */
  window?: number;
}

/**
 * What an adapter yields while a reply streams, in buffer order. Text arrives as deltas; thinking,
 * tool uses and redacted thinking arrive as whole blocks once complete (the caller writes them
 * with `src/core/chat/writer.ts`). `progress` events only feed the indicator.
 */
export type ProviderEvent =
  | { type: 'text'; text: string }
  | { type: 'thinking'; content: string; signature?: { provider: string; value: string } }
  | { type: 'redacted_thinking'; data: string }
  | {
      type: 'tool_use';
      id: string;
      name: string;
      input: unknown;
      /** The arguments were not JSON (`input` is then `{}`): the parser's message. */
      invalid?: string;
    }
  | { type: 'progress'; phase: 'thinking' | 'tool_input'; characters: number; toolName?: string }
  | { type: 'usage'; usage: Usage; reported?: ReportedUsage }
  | { type: 'warning'; message: string }
  /**
   * A block of the client's own, written as it is (not the model's text: no escape), e.g. an
   * agent's permission placeholder (src/core/acp/permissions.ts).
   */
  | { type: 'block'; lines: string[] }
  /** The last such block that reads `from` becomes `to` (the placeholder answered). */
  | { type: 'rewrite'; from: string[]; to: string[] }
  | { type: 'done'; stopReason: string };

/** Why a request failed, as the user should read it (`<provider>: <kind> — <message>`). */
export class ProviderError extends Error {
  override name = 'ProviderError';
  constructor(
    readonly provider: string,
    readonly kind:
      | 'authentication'
      | 'permission'
      | 'not_found'
      | 'rate_limit'
      | 'overloaded'
      | 'invalid_request'
      | 'server'
      | 'connection'
      | 'timeout'
      | 'blocked'
      | 'stream'
      | 'stalled'
      | 'unexpected_answer'
      | 'unknown',
    message: string,
    readonly status?: number,
    /** Whether trying again later may succeed (429, 529, 5xx, a connection lost before any byte). */
    readonly retryable = false,
  ) {
    super(message);
  }

  /** How long the service asked to wait before trying again (`retry-after`), if it said. */
  retryAfterMs?: number;

  /**
   * The `host:port` that answered, for failures of the answer itself (a stall, a page where a
   * stream was expected: `watchdog.ts`), whose message then says what happened on its own.
   */
  endpoint?: string;

  /** The one line a notification shows. */
  describe(): string {
    if (this.endpoint !== undefined) return `${this.provider} (${this.endpoint}): ${this.message}`;
    return `${this.provider}: ${this.kind.replace(/_/g, ' ')} — ${this.message}`;
  }
}

/** A chat's messages' wire form, kept across its requests (`MessageWireCache`, wire-cache.ts). */
export interface MessageSerialiser {
  /** The JSON of each message in UTF-8 (`encode` makes one, '' for a message left out). */
  serialise(
    variant: string,
    messages: readonly EvaluatedMessage[],
    encode: (message: EvaluatedMessage) => string,
  ): Buffer[];
}

export interface ProviderAdapter {
  readonly name: string;
  /** The request body for a prompt (deterministic: the same prompt gives byte-identical JSON). */
  buildBody(request: ProviderRequest): Record<string, unknown>;
  /**
   * Send and stream the reply. Abort with `signal`; failures throw ProviderError. `cache`: the
   * chat's messages as last sent, for an adapter that serialises only what changed.
   */
  stream(
    request: ProviderRequest,
    signal: AbortSignal,
    cache?: MessageSerialiser,
  ): AsyncIterable<ProviderEvent>;
  /**
   * The input tokens this request would use, from the provider's token-counting endpoint (the
   * request's body without its generation fields). Absent when the provider has no such endpoint.
   * Failures throw ProviderError.
   */
  countTokens?(request: ProviderRequest, signal: AbortSignal): Promise<number>;
}

/** How an adapter reaches its service: explicit values win over the SDKs' environment variables. */
export interface ConnectionOptions {
  apiKey: string;
  baseURL?: string;
  /** Attempts for retryable failures before the first byte (the SDK's own retry). */
  maxRetries?: number;
  timeoutMs?: number;
  /** How long a reply's stream may go without a byte (`parameters.stream_idle_timeout`), in ms. */
  streamIdleMs?: number;
}

/**
 * The error for an HTTP status, the same for every provider: 400/409/413/422 and any other 4xx
 * invalid request, 401 authentication, 403 permission, 404 not found, 408 timeout, 429 rate
 * limit, 529 overloaded, 5xx server; the last four are worth retrying.
 */
export function errorForStatus(provider: string, status: number, message: string): ProviderError {
  const of = (kind: ProviderError['kind'], retryable = false): ProviderError =>
    new ProviderError(provider, kind, message, status, retryable);
  switch (status) {
    case 401:
      return of('authentication');
    case 403:
      return of('permission');
    case 404:
      return of('not_found');
    case 408:
      return of('timeout', true);
    case 429:
      return of('rate_limit', true);
    case 529:
      return of('overloaded', true);
    default:
      if (status >= 500) return of('server', true);
      if (status >= 400) return of('invalid_request');
      return of('unknown');
  }
}

/**
 * The wait a response asks for: `retry-after-ms`, else `retry-after` in seconds or as an HTTP
 * date. `headers` is anything with a `get(name)` (the SDKs' fetch `Headers`).
 */
export function retryAfterMs(headers: unknown, now: number = Date.now()): number | undefined {
  if (headers === null || typeof headers !== 'object' || !('get' in headers)) return undefined;
  const get = (headers as { get(name: string): string | null }).get.bind(headers);
  const ms = Number(get('retry-after-ms'));
  if (get('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return ms;
  const value = get('retry-after');
  if (value === null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** `failure`, with the wait the answer's `headers` ask for (`retryAfterMs`) when they ask one. */
export function waitingAsAsked(failure: ProviderError, headers: unknown): ProviderError {
  const wait = retryAfterMs(headers);
  if (wait !== undefined) failure.retryAfterMs = wait;
  return failure;
}

/** Tool names on the wire: `:` is not allowed by every provider, so it travels as `__`. */
export function wireToolName(name: string): string {
  return name.replace(/:/g, '__');
}

export function internalToolName(wire: string): string {
  return wire.replace(/__/g, ':');
}

/** Tool ids on the wire (Anthropic, OpenAI): `[A-Za-z0-9_-]`, at most 64 characters. */
export function wireToolId(id: string): string {
  return id
    .replace(/[^A-Za-z0-9_-]/g, '_')
    .slice(0, 64)
    .replace(/_+$/, '');
}

/** JSON with every object's keys sorted, so that equal requests are byte-identical. */
export function stableJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

/**
 * `value` with every object's keys in sorted order. Parts that are in order already are shared,
 * not copied (a request body is built anew for each send, and copying all of it was the host's
 * largest allocation), so the result must not be changed in place below its top level; see
 * `sortedCopy` for a value handed to code that may.
 */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      const sorted = sortKeys(item);
      if (out === undefined && sorted !== item) out = value.slice(0, index);
      if (out !== undefined) out.push(sorted);
    }
    return out ?? value;
  }
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let inOrder = true;
  for (let index = 1; index < keys.length; index++) {
    if ((keys[index - 1] as string) > (keys[index] as string)) {
      inOrder = false;
      keys.sort();
      break;
    }
  }
  let out: Record<string, unknown> | undefined = inOrder ? undefined : {};
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index] as string;
    const item = record[key];
    const sorted = sortKeys(item);
    if (out === undefined && sorted !== item) {
      out = {};
      for (let before = 0; before < index; before++) {
        const earlier = keys[before] as string;
        out[earlier] = record[earlier];
      }
    }
    if (out !== undefined) out[key] = sorted;
  }
  return out ?? value;
}

/** Like `sortKeys`, but every object and array of the result is a new one. */
export function sortedCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedCopy);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      out[key] = sortedCopy((value as Record<string, unknown>)[key]);
    }
    return out;
  }
  return value;
}
