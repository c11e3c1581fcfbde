// The providers a send can use: their adapters, where their credentials come from, and what
// each needs before it can send. Credentials are resolved by the caller (`src/host/secrets.ts`).
import { createAnthropicAdapter } from '../core/provider/adapters/anthropic.js';
import { createChatCompletionsAdapter } from '../core/provider/adapters/chat-completions.js';
import { createDemoAdapter } from '../core/provider/adapters/demo.js';
import { createGeminiAdapter } from '../core/provider/adapters/gemini.js';
import { createOpenAIAdapter } from '../core/provider/adapters/openai.js';
import type { SdkLoader } from '../core/provider/sdk.js';
import type { CredentialSpec } from '../core/secrets/chain.js';
import type { ProviderAdapter } from '../core/provider/types.js';

/** A provider's own parameters (`parameters.<provider>`), as the configuration has them. */
export type ProviderParameters = Record<string, unknown> & {
  base_url?: string;
  project_id?: string;
  location?: string;
  api_key_env?: string;
};

export interface ConnectionInput {
  /** The credential (empty when the provider needs none). */
  credential: string;
  baseURL: string | undefined;
  parameters: ProviderParameters;
  maxRetries: number;
  timeoutMs: number;
  /** `parameters.stream_idle_timeout` (the provider's own value first), in ms. */
  streamIdleMs: number;
}

export interface ProviderEntry {
  /** The credential the provider needs (none: it sends without). */
  credential(parameters: ProviderParameters): CredentialSpec | undefined;
  /** Whether a send may go out without a credential (local servers). */
  credentialOptional?: boolean;
  /** The SDK's standard base-URL variable, honoured when `base_url` is not set. */
  baseUrlEnv?: string;
  defaultModel?: string;
  /** What is missing before a send can go out, as a sentence for the user; undefined when ready. */
  missing?(input: {
    parameters: ProviderParameters;
    baseURL: string | undefined;
  }): string | undefined;
  create(input: ConnectionInput, loader: SdkLoader): ProviderAdapter;
}

function connection(input: ConnectionInput): {
  apiKey: string;
  maxRetries: number;
  timeoutMs: number;
  streamIdleMs: number;
  baseURL?: string;
} {
  const base = {
    apiKey: input.credential,
    maxRetries: input.maxRetries,
    timeoutMs: input.timeoutMs,
    streamIdleMs: input.streamIdleMs,
  };
  return input.baseURL === undefined ? base : { ...base, baseURL: input.baseURL };
}

/** `parameters.openai.experimental.phase`: on unless set to false. */
function phaseLabels(parameters: ProviderParameters): boolean {
  const experimental = parameters['experimental'];
  if (experimental === null || typeof experimental !== 'object') return true;
  return (experimental as Record<string, unknown>)['phase'] !== false;
}

export const PROVIDERS: Record<string, ProviderEntry> = {
  anthropic: {
    credential: () => ({ kind: 'api_key', service: 'anthropic', description: 'Anthropic API key' }),
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    defaultModel: 'claude-sonnet-4-6',
    create: (input, loader) => createAnthropicAdapter(connection(input), loader),
  },
  openai: {
    credential: () => ({ kind: 'api_key', service: 'openai', description: 'OpenAI API key' }),
    baseUrlEnv: 'OPENAI_BASE_URL',
    defaultModel: 'gpt-5.4',
    create: (input, loader) =>
      createOpenAIAdapter({ ...connection(input), phase: phaseLabels(input.parameters) }, loader),
  },
  gemini: {
    credential: () => ({
      kind: 'api_key',
      service: 'gemini',
      description: 'Gemini API key',
      aliases: ['GOOGLE_API_KEY'],
    }),
    baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
    defaultModel: 'gemini-3.1-pro-preview',
    create: (input, loader) =>
      createGeminiAdapter(
        {
          apiKey: input.credential,
          maxRetries: input.maxRetries,
          streamIdleMs: input.streamIdleMs,
          timeoutMs: input.timeoutMs,
          ...(input.baseURL === undefined ? {} : { baseURL: input.baseURL }),
        },
        loader,
      ),
  },
  vertex: {
    credential: () => ({
      kind: 'access_token',
      service: 'vertex',
      description: 'Vertex AI access token',
      // An hour, refreshed a little before it runs out.
      ttl: 3600,
      ttlScale: 0.925,
      aliases: ['VERTEX_AI_ACCESS_TOKEN'],
    }),
    baseUrlEnv: 'GOOGLE_VERTEX_BASE_URL',
    defaultModel: 'gemini-3.1-pro-preview',
    missing: ({ parameters }) =>
      typeof parameters.project_id === 'string' && parameters.project_id !== ''
        ? undefined
        : 'set parameters.vertex.project_id (your Google Cloud project) in setup() or the frontmatter',
    create: (input, loader) => {
      const vertex = {
        project: String(input.parameters.project_id),
        location:
          typeof input.parameters.location === 'string' ? input.parameters.location : 'global',
      };
      const base = {
        accessToken: input.credential,
        vertex,
        maxRetries: input.maxRetries,
        streamIdleMs: input.streamIdleMs,
        timeoutMs: input.timeoutMs,
      };
      return createGeminiAdapter(
        input.baseURL === undefined ? base : { ...base, baseURL: input.baseURL },
        loader,
      );
    },
  },
  moonshot: {
    credential: () => ({ kind: 'api_key', service: 'moonshot', description: 'Moonshot API key' }),
    defaultModel: 'kimi-k2.6',
    create: (input, loader) =>
      createChatCompletionsAdapter(
        {
          ...connection(input),
          baseURL: input.baseURL ?? 'https://api.moonshot.ai/v1',
          name: 'moonshot',
          // Moonshot rejects a tool message without the tool's name.
          toolResultNames: true,
        },
        loader,
      ),
  },
  /** Offline and scripted (`npm run demo`); `parameters.demo.delay_ms` sets the pace. */
  demo: {
    credential: () => undefined,
    credentialOptional: true,
    defaultModel: 'demo',
    create: (input) => {
      const delay = input.parameters['delay_ms'];
      return createDemoAdapter(typeof delay === 'number' ? { delayMs: delay } : {});
    },
  },
  openai_compatible: {
    credential: (parameters) => ({
      kind: 'api_key',
      service: 'openai_compatible',
      description: 'OpenAI-compatible server key',
      ...(typeof parameters.api_key_env === 'string' ? { aliases: [parameters.api_key_env] } : {}),
    }),
    credentialOptional: true,
    missing: ({ baseURL }) =>
      baseURL === undefined
        ? 'set parameters.openai_compatible.base_url (e.g. "http://127.0.0.1:11434/v1" for Ollama)'
        : undefined,
    create: (input, loader) =>
      createChatCompletionsAdapter(
        // Local servers take any key; the SDK insists on one.
        {
          ...connection(input),
          apiKey: input.credential === '' ? 'none' : input.credential,
          name: 'compatible',
        },
        loader,
      ),
  },
};
