// How many tokens a reply may have (`max_tokens`, docs/configuration.md "The output limit"): the
// output limits of the models Flemma knows, and the rule that turns `parameters.max_tokens` into
// the number a request carries.
//
// A number is sent as it is. A percentage ("50%", the default) is a share of the model's output
// limit: half of it by default, which leaves a long reply room while a reply that runs away
// still stops well before the model's own end. The limits are the providers' published maximum
// output per request (the same sources as `src/core/usage/pricing.json`, checked November 2026).
// A model that is not in the table gets its provider's floor: the smallest limit among that
// provider's current models, so that whatever the model is (a newer one has a larger limit),
// the request is not refused for asking too much (every provider answers 400 to a `max_tokens`
// above the model's limit). A provider with no table (an OpenAI-compatible server, whose models
// and limits are anyone's) gets 8192, which nearly every server accepts.
import { lookupModel } from '../util/model-id.js';

interface ProviderLimits {
  /** For a model of this provider that is not in `models`. */
  floor: number;
  /** Output limits by model id; dated and tagged ids find their family (`lookupModel`). */
  models: Readonly<Record<string, number>>;
}

const CLAUDE: ProviderLimits = {
  // Claude Opus 4 and 4.1: 32000; every later Claude model allows more.
  floor: 32_000,
  models: {
    'claude-opus-4-7': 128_000,
    'claude-opus-4-6': 128_000,
    'claude-sonnet-4-6': 128_000,
    'claude-opus-4-5': 64_000,
    'claude-sonnet-4-5': 64_000,
    'claude-haiku-4-5': 64_000,
    'claude-opus-4-1': 32_000,
    'claude-opus-4': 32_000,
    'claude-opus-4-0': 32_000,
    'claude-sonnet-4': 64_000,
    'claude-sonnet-4-0': 64_000,
  },
};

const GPT: ProviderLimits = {
  // GPT-4o: 16384, the smallest of the current models (GPT-4.1 32768, GPT-5 and o-series more).
  floor: 16_384,
  models: {
    'gpt-5.5': 128_000,
    'gpt-5.5-pro': 128_000,
    'gpt-5.4': 128_000,
    'gpt-5.4-pro': 128_000,
    'gpt-5.4-mini': 128_000,
    'gpt-5.4-nano': 128_000,
    'gpt-5.3-codex': 128_000,
    'gpt-5.3-codex-spark': 32_000,
    'gpt-5.3-chat-latest': 16_384,
    'gpt-5.2': 128_000,
    'gpt-5.2-pro': 128_000,
    'gpt-5.2-chat-latest': 16_384,
    'gpt-5.1': 128_000,
    'gpt-5.1-chat-latest': 16_384,
    'gpt-5': 128_000,
    'gpt-5-mini': 128_000,
    'gpt-5-nano': 128_000,
    'gpt-5-pro': 272_000,
    'gpt-5-chat-latest': 16_384,
    'gpt-4.1': 32_768,
    'gpt-4.1-mini': 32_768,
    'gpt-4.1-nano': 32_768,
    'gpt-4o': 16_384,
    'gpt-4o-2024-05-13': 4_096,
    'gpt-4o-mini': 16_384,
    o1: 100_000,
    o3: 100_000,
    'o3-pro': 100_000,
    'o3-mini': 100_000,
    'o4-mini': 100_000,
  },
};

const GEMINI: ProviderLimits = {
  // Every Gemini model since 2.5: 65536.
  floor: 65_536,
  models: {
    'gemini-3.5-flash': 65_536,
    'gemini-3.1-pro-preview': 65_536,
    'gemini-3.1-flash-lite-preview': 65_536,
    'gemini-3-pro-preview': 65_536,
    'gemini-3-flash-preview': 65_536,
    'gemini-2.5-pro': 65_536,
    'gemini-2.5-flash': 65_536,
    'gemini-2.5-flash-lite': 65_536,
    'gemini-2.0-flash': 8_192,
    'gemini-2.0-flash-lite': 8_192,
  },
};

const KIMI: ProviderLimits = {
  // Every Kimi K2 model: 65536 (the moonshot-v1 models share one window between input and
  // output, so theirs is the window).
  floor: 65_536,
  models: {
    'kimi-k2.6': 65_536,
    'kimi-k2.5': 65_536,
    'kimi-k2-thinking': 65_536,
    'kimi-k2-thinking-turbo': 65_536,
    'kimi-k2-turbo-preview': 65_536,
    'kimi-k2-0905-preview': 65_536,
    'kimi-k2-0711-preview': 65_536,
    'moonshot-v1-8k': 8_192,
    'moonshot-v1-32k': 32_768,
    'moonshot-v1-128k': 131_072,
  },
};

const LIMITS: Readonly<Record<string, ProviderLimits>> = {
  anthropic: CLAUDE,
  openai: GPT,
  gemini: GEMINI,
  vertex: GEMINI,
  moonshot: KIMI,
};

/** The limit assumed for a provider with no table (OpenAI-compatible servers). */
export const UNKNOWN_PROVIDER_LIMIT = 8_192;

/** The `max_tokens` that applies when none is set. */
export const DEFAULT_MAX_TOKENS = '50%';

/** The least a percentage gives (a tiny share would end every reply at once). */
const MIN_SHARE = 1_024;

/** Where an output limit comes from. */
export type LimitSource = 'model' | 'provider floor' | 'default';

/** The output limit of `model` of `provider`, and where it comes from. */
export function outputLimit(
  provider: string,
  model: string,
): { tokens: number; source: LimitSource } {
  const own = Object.prototype.hasOwnProperty.call(LIMITS, provider) ? LIMITS[provider] : undefined;
  if (own === undefined) return { tokens: UNKNOWN_PROVIDER_LIMIT, source: 'default' };
  const tokens = lookupModel(own.models, model);
  return tokens === undefined
    ? { tokens: own.floor, source: 'provider floor' }
    : { tokens, source: 'model' };
}

/**
 * The `max_tokens` of a request: a number as it is (the user's explicit value always wins), a
 * percentage of the model's output limit (at least 1024, at most the limit), the default half
 * when unset.
 */
export function resolveMaxTokens(
  value: number | string | undefined,
  provider: string,
  model: string,
): number {
  if (typeof value === 'number') return value;
  // The configuration admits nothing but "N%" as a string; anything else counts as the default.
  const percent = /^(\d+)%$/.exec(value ?? DEFAULT_MAX_TOKENS);
  const share = percent === null ? 50 : Number(percent[1]);
  const limit = outputLimit(provider, model).tokens;
  return Math.min(limit, Math.max(MIN_SHARE, Math.floor((limit * share) / 100)));
}
