// Prices and cost arithmetic (docs/usage.md, "What a request costs"), with every expected figure worked out by hand
// from the published prices in src/core/usage/pricing.json.
import { describe, expect, it } from 'vitest';
import {
  cachePercent,
  inputCost,
  outputCost,
  PRICING_SOURCE,
  pricingFor,
  requestCost,
  tokenCounts,
  totalInput,
} from '../../src/core/usage/cost.js';
import table from '../../src/core/usage/pricing.json' with { type: 'json' };

function cost(provider: string, model: string, usage: Parameters<typeof tokenCounts>[0]): number {
  const pricing = pricingFor(provider, model);
  if (pricing === undefined) throw new Error(`no price for ${provider}/${model}`);
  return requestCost(tokenCounts(usage), pricing);
}

describe('looking up a price', () => {
  it('finds an exact model id', () => {
    expect(pricingFor('anthropic', 'claude-sonnet-4-6')).toEqual({
      input: 3,
      output: 15,
      cache_read: 0.3,
      cache_write: 3.75,
      min_cache_tokens: 1024,
      output_has_thoughts: true,
    });
    expect(pricingFor('anthropic', 'claude-opus-4-1')?.input).toBe(15);
    expect(pricingFor('anthropic', 'claude-haiku-4-5')?.output).toBe(5);
  });

  it('maps a dated or tagged id to its family (the longest known prefix)', () => {
    expect(pricingFor('anthropic', 'claude-sonnet-4-5-20250929')?.input).toBe(3);
    expect(pricingFor('anthropic', 'claude-opus-4-1-20250805')?.input).toBe(15);
    expect(pricingFor('anthropic', 'claude-opus-4-20250514')?.output).toBe(75);
    expect(pricingFor('openai', 'gpt-4.1-2025-04-14')?.input).toBe(2);
    // `gpt-4.1-mini-…` belongs to gpt-4.1-mini, not to the shorter gpt-4.1.
    expect(pricingFor('openai', 'gpt-4.1-mini-2025-04-14')?.input).toBe(0.4);
    expect(pricingFor('gemini', 'gemini-2.5-flash-preview-09-2025')?.output).toBe(2.5);
    expect(pricingFor('gemini', 'gemini-2.5-flash-lite-preview-06-17')?.output).toBe(0.4);
    expect(pricingFor('moonshot', 'kimi-k2-thinking-turbo')?.output).toBe(8);
  });

  it('does not take another version of a family for the family', () => {
    expect(pricingFor('anthropic', 'claude-opus-4-9')).toBeUndefined();
    expect(pricingFor('anthropic', 'claude-opus-4-9-20270101')).toBeUndefined();
    expect(pricingFor('openai', 'gpt-5.7')).toBeUndefined();
  });

  it('knows nothing of unknown models and providers', () => {
    expect(pricingFor('anthropic', 'claude-unknown')).toBeUndefined();
    expect(pricingFor('openai_compatible', 'qwen3:8b')).toBeUndefined();
    expect(pricingFor('demo', 'demo')).toBeUndefined();
    // The table's own fields are not providers.
    expect(pricingFor('_source', 'x')).toBeUndefined();
  });

  it('gives Vertex the Gemini prices, and a provider-wide cache minimum to OpenAI', () => {
    expect(pricingFor('vertex', 'gemini-2.5-pro')).toEqual({
      input: 1.25,
      output: 10,
      cache_read: 0.125,
      min_cache_tokens: 2048,
      output_has_thoughts: false,
    });
    expect(pricingFor('openai', 'gpt-5.4')?.min_cache_tokens).toBe(1024);
  });

  it('says where the prices come from', () => {
    expect(PRICING_SOURCE.source).toMatch(/per million tokens/);
    expect(PRICING_SOURCE.updated).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('has well-formed entries everywhere', () => {
    for (const [name, entry] of Object.entries(table)) {
      if (name.startsWith('_')) continue;
      const provider = entry as {
        output_has_thoughts: unknown;
        models?: Record<string, Record<string, unknown>>;
        models_from?: string;
      };
      expect(typeof provider.output_has_thoughts).toBe('boolean');
      expect(provider.models !== undefined || provider.models_from !== undefined).toBe(true);
      for (const prices of Object.values(provider.models ?? {})) {
        expect(typeof prices['input']).toBe('number');
        expect(typeof prices['output']).toBe('number');
        for (const key of Object.keys(prices)) {
          expect(['input', 'output', 'cache_read', 'cache_write', 'min_cache_tokens']).toContain(
            key,
          );
        }
      }
    }
  });
});

describe('the cost of a request', () => {
  it('anthropic: cache reads and writes at their prices; thinking is inside the output', () => {
    // claude-sonnet-4-6: input 3, cache read 0.3, cache write 3.75, output 15 (USD / MTok).
    // Input: 2000×3 + 6000×0.3 + 1000×3.75 = 6000 + 1800 + 3750 = 11550 µ$;
    // output: 410×15 = 6150 µ$ (the 100 thinking tokens are already in the 410).
    const usage = { input: 2000, output: 410, thoughts: 100, cacheRead: 6000, cacheCreation: 1000 };
    expect(cost('anthropic', 'claude-sonnet-4-6', usage)).toBeCloseTo(0.0177, 10);
    const tokens = tokenCounts(usage);
    const prices = pricingFor('anthropic', 'claude-sonnet-4-6');
    if (prices === undefined) throw new Error('no price');
    expect(inputCost(tokens, prices)).toBeCloseTo(0.01155, 10);
    expect(outputCost(tokens, prices, true)).toBeCloseTo(0.00615, 10);
  });

  it('anthropic: opus 4.1 at its own (higher) prices', () => {
    // 1000×15 + 0 + 500×18.75 = 15000 + 9375 = 24375 µ$; 200×75 = 15000 µ$.
    expect(
      cost('anthropic', 'claude-opus-4-1', { input: 1000, output: 200, cacheCreation: 500 }),
    ).toBeCloseTo(0.039375, 10);
  });

  it('openai: cached input at the cached price, reasoning inside the output', () => {
    // gpt-5.4: input 2.5, cached 0.25, output 15.
    // 3000×2.5 + 1000×0.25 = 7500 + 250 = 7750 µ$; 1200×15 = 18000 µ$ (reasoning 800 included).
    const usage = { input: 3000, output: 1200, thoughts: 800, cacheRead: 1000 };
    expect(cost('openai', 'gpt-5.4', usage)).toBeCloseTo(0.02575, 10);
  });

  it('openai: a model without a cached price bills cache reads at the input price', () => {
    // gpt-5-pro: input 15, output 120. 100×15 + 100×15 = 3000 µ$; 10×120 = 1200 µ$.
    expect(cost('openai', 'gpt-5-pro', { input: 100, output: 10, cacheRead: 100 })).toBeCloseTo(
      0.0042,
      10,
    );
  });

  it('gemini: thinking tokens are billed on top of the output', () => {
    // gemini-2.5-flash: input 0.3, cache read 0.03, output 2.5.
    // 10000×0.3 + 20000×0.03 = 3000 + 600 = 3600 µ$; (1000 + 3000)×2.5 = 10000 µ$.
    const usage = { input: 10000, output: 1000, thoughts: 3000, cacheRead: 20000 };
    expect(cost('gemini', 'gemini-2.5-flash', usage)).toBeCloseTo(0.0136, 10);
  });

  it('vertex: the same as the Gemini API', () => {
    // gemini-2.5-pro: 4000×1.25 = 5000 µ$; (600 + 400)×10 = 10000 µ$.
    const usage = { input: 4000, output: 600, thoughts: 400 };
    expect(cost('vertex', 'gemini-2.5-pro', usage)).toBeCloseTo(0.015, 10);
    expect(cost('gemini', 'gemini-2.5-pro', usage)).toBeCloseTo(0.015, 10);
  });

  it('moonshot: cache hits at their price, cache writes at the input price, thinking added', () => {
    // kimi-k2.6: input 0.95, cache read 0.16, output 4 (no cache write price).
    // 1000×0.95 + 5000×0.16 + 100×0.95 = 950 + 800 + 95 = 1845 µ$; (300 + 200)×4 = 2000 µ$.
    const usage = { input: 1000, output: 300, thoughts: 200, cacheRead: 5000, cacheCreation: 100 };
    expect(cost('moonshot', 'kimi-k2.6', usage)).toBeCloseTo(0.003845, 10);
  });

  it('a reply with no tokens costs nothing', () => {
    expect(cost('anthropic', 'claude-haiku-4-5', { input: 0, output: 0 })).toBe(0);
  });
});

describe('cache share', () => {
  it('is the cache reads over all input, rounded down', () => {
    const tokens = tokenCounts({ input: 2000, output: 1, cacheRead: 6000, cacheCreation: 1000 });
    expect(totalInput(tokens)).toBe(9000);
    expect(cachePercent(tokens)).toBe(66);
    expect(cachePercent(tokenCounts({ input: 1, output: 0, cacheRead: 2 }))).toBe(66);
    expect(cachePercent(tokenCounts({ input: 0, output: 0 }))).toBe(0);
  });
});
