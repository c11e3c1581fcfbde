// How many tokens a request may hold in all (the model's context window: the input, the
// thinking and the reply together), for the context meter and a budget given as a share of the
// window (docs/context.md). The same sources as `limits.ts` (the providers' model pages, checked
// November 2026). A model not in the table gets its provider's floor, the smallest window among
// the provider's current models, so the meter warns early rather than late; a provider with no
// table (an OpenAI-compatible server) gets `UNKNOWN_PROVIDER_WINDOW`. `context.window` in the
// configuration overrides all of this for a model the table does not know or knows wrong (a
// Claude model with the 1M-token beta, a local server's own window).
import { lookupModel } from '../util/model-id.js';

interface ProviderWindows {
  /** For a model of this provider that is not in `models`. */
  floor: number;
  /** Windows by model id; dated and tagged ids find their family (`lookupModel`). */
  models: Readonly<Record<string, number>>;
}

const CLAUDE: ProviderWindows = {
  // Every Claude model since Claude 3: 200k tokens (Sonnet 4 and later offer 1M behind a beta
  // header Flemma does not send). The current ones are listed, so that the meter can say the
  // window is the model's own and not a guess.
  floor: 200_000,
  models: Object.fromEntries(
    [
      'claude-opus-4-7',
      'claude-opus-4-6',
      'claude-sonnet-4-6',
      'claude-opus-4-5',
      'claude-sonnet-4-5',
      'claude-haiku-4-5',
      'claude-opus-4-1',
      'claude-opus-4',
      'claude-opus-4-0',
      'claude-sonnet-4',
      'claude-sonnet-4-0',
    ].map((id) => [id, 200_000]),
  ),
};

const GPT: ProviderWindows = {
  // GPT-4o: 128k, the smallest of the current models.
  floor: 128_000,
  models: {
    'gpt-5.5': 1_050_000,
    'gpt-5.5-pro': 1_050_000,
    'gpt-5.4': 1_050_000,
    'gpt-5.4-pro': 1_050_000,
    'gpt-5.4-mini': 400_000,
    'gpt-5.4-nano': 400_000,
    'gpt-5.3-codex': 400_000,
    'gpt-5.3-codex-spark': 128_000,
    'gpt-5.3-chat-latest': 128_000,
    'gpt-5.2': 400_000,
    'gpt-5.2-pro': 400_000,
    'gpt-5.2-chat-latest': 128_000,
    'gpt-5.1': 400_000,
    'gpt-5.1-chat-latest': 128_000,
    'gpt-5': 400_000,
    'gpt-5-mini': 400_000,
    'gpt-5-nano': 400_000,
    'gpt-5-pro': 400_000,
    'gpt-5-chat-latest': 128_000,
    'gpt-4.1': 1_047_576,
    'gpt-4.1-mini': 1_047_576,
    'gpt-4.1-nano': 1_047_576,
    'gpt-4o': 128_000,
    'gpt-4o-mini': 128_000,
    o1: 200_000,
    o3: 200_000,
    'o3-pro': 200_000,
    'o3-mini': 200_000,
    'o4-mini': 200_000,
  },
};

const GEMINI: ProviderWindows = {
  // Every Gemini model since 1.5 Pro: 1,048,576 tokens.
  floor: 1_048_576,
  models: Object.fromEntries(
    [
      'gemini-3.5-flash',
      'gemini-3.1-pro-preview',
      'gemini-3.1-flash-lite-preview',
      'gemini-3-pro-preview',
      'gemini-3-flash-preview',
      'gemini-2.5-pro',
      'gemini-2.5-flash',
      'gemini-2.5-flash-lite',
      'gemini-2.0-flash',
      'gemini-2.0-flash-lite',
    ].map((id) => [id, 1_048_576]),
  ),
};

const KIMI: ProviderWindows = {
  // Kimi K2 from 0905 on: 256k; the first K2 and moonshot-v1 models are smaller.
  floor: 131_072,
  models: {
    'kimi-k2.6': 262_144,
    'kimi-k2.5': 262_144,
    'kimi-k2-thinking': 262_144,
    'kimi-k2-thinking-turbo': 262_144,
    'kimi-k2-turbo-preview': 262_144,
    'kimi-k2-0905-preview': 262_144,
    'kimi-k2-0711-preview': 131_072,
    'moonshot-v1-8k': 8_192,
    'moonshot-v1-32k': 32_768,
    'moonshot-v1-128k': 131_072,
  },
};

const WINDOWS: Readonly<Record<string, ProviderWindows>> = {
  anthropic: CLAUDE,
  openai: GPT,
  gemini: GEMINI,
  vertex: GEMINI,
  moonshot: KIMI,
};

/** The window assumed for a provider with no table (OpenAI-compatible servers). */
export const UNKNOWN_PROVIDER_WINDOW = 32_768;

/** Where a context window comes from. */
export type WindowSource = 'configured' | 'model' | 'provider floor' | 'default' | 'agent';

/**
 * The context window of `model` of `provider`, and where it comes from; `configured` (the
 * user's `context.window`, a positive number) wins over the table.
 */
export function contextWindow(
  provider: string,
  model: string,
  configured?: number,
): { tokens: number; source: WindowSource } {
  if (configured !== undefined && Number.isFinite(configured) && configured > 0) {
    return { tokens: Math.floor(configured), source: 'configured' };
  }
  const own = Object.prototype.hasOwnProperty.call(WINDOWS, provider)
    ? WINDOWS[provider]
    : undefined;
  if (own === undefined) return { tokens: UNKNOWN_PROVIDER_WINDOW, source: 'default' };
  const tokens = lookupModel(own.models, model);
  return tokens === undefined
    ? { tokens: own.floor, source: 'provider floor' }
    : { tokens, source: 'model' };
}
