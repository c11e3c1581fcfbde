// What a request costs (docs/usage.md, "What a request costs"): per-model prices from `pricing.json`, and the
// arithmetic over the token counts a reply reports. Prices are USD per million tokens.
import type { Usage } from '../provider/types.js';
import table from './pricing.json' with { type: 'json' };
import { lookupModel } from '../util/model-id.js';

export interface ModelPrices {
  input: number;
  output: number;
  /** Price of input read from the prompt cache; the input price when absent. */
  cache_read?: number;
  /** Price of input written to the prompt cache; the input price when absent. */
  cache_write?: number;
  /** The shortest prompt the provider caches (the usage bar hides 0 % below it). */
  min_cache_tokens?: number;
}

/** A model's prices, and whether its output count already includes its thinking. */
export interface Pricing extends ModelPrices {
  output_has_thoughts: boolean;
}

interface ProviderTable {
  output_has_thoughts: boolean;
  min_cache_tokens?: number;
  models?: Record<string, ModelPrices>;
  /** Another provider whose models (and prices) this one shares, e.g. Vertex and Gemini. */
  models_from?: string;
}

const PROVIDERS = table as unknown as Record<string, ProviderTable | string>;

function providerTable(provider: string): ProviderTable | undefined {
  // NOTE: `_source` and `_updated` are strings at the same level; they are not providers.
  const entry = PROVIDERS[provider];
  return typeof entry === 'object' ? entry : undefined;
}

/** The prices of `model` of `provider`: the exact id, else the longest known family; or undefined. */
export function pricingFor(provider: string, model: string): Pricing | undefined {
  const own = providerTable(provider);
  if (own === undefined) return undefined;
  const source = own.models_from === undefined ? own : providerTable(own.models_from);
  const prices = lookupModel(source?.models ?? {}, model);
  if (prices === undefined) return undefined;
  const result: Pricing = { ...prices, output_has_thoughts: own.output_has_thoughts };
  const minimum = prices.min_cache_tokens ?? own.min_cache_tokens ?? source?.min_cache_tokens;
  if (minimum !== undefined) result.min_cache_tokens = minimum;
  return result;
}

/** Where the table's prices come from and when they were last checked. */
export const PRICING_SOURCE = {
  source: (table as { _source: string })._source,
  updated: (table as { _updated: string })._updated,
};

/** The token counts of one request, as the session records them ("input" is non-cached). */
export interface TokenCounts {
  input_tokens: number;
  output_tokens: number;
  thoughts_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

export function tokenCounts(usage: Usage): TokenCounts {
  return {
    input_tokens: usage.input,
    output_tokens: usage.output,
    thoughts_tokens: usage.thoughts ?? 0,
    cache_read_input_tokens: usage.cacheRead ?? 0,
    cache_creation_input_tokens: usage.cacheCreation ?? 0,
  };
}

const MILLION = 1_000_000;

/** Input cost: non-cached input, cache reads and cache writes, each at its own price. */
export function inputCost(tokens: TokenCounts, prices: ModelPrices): number {
  return (
    (tokens.input_tokens * prices.input +
      tokens.cache_read_input_tokens * (prices.cache_read ?? prices.input) +
      tokens.cache_creation_input_tokens * (prices.cache_write ?? prices.input)) /
    MILLION
  );
}

/** Output cost: thinking is added only where the output count does not already include it. */
export function outputCost(
  tokens: TokenCounts,
  prices: ModelPrices,
  outputHasThoughts: boolean,
): number {
  const billed = tokens.output_tokens + (outputHasThoughts ? 0 : tokens.thoughts_tokens);
  return (billed * prices.output) / MILLION;
}

export function requestCost(tokens: TokenCounts, pricing: Pricing): number {
  return inputCost(tokens, pricing) + outputCost(tokens, pricing, pricing.output_has_thoughts);
}

/** All input the request carried: non-cached, read from the cache and written to it. */
export function totalInput(tokens: TokenCounts): number {
  return tokens.input_tokens + tokens.cache_read_input_tokens + tokens.cache_creation_input_tokens;
}

/** The share of the input served by the cache, in whole percent (rounded down). */
export function cachePercent(tokens: TokenCounts): number {
  const total = totalInput(tokens);
  return total === 0 ? 0 : Math.floor((tokens.cache_read_input_tokens / total) * 100);
}
