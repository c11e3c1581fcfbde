// The output limit of a request: half the model's own limit by default, from a table of the
// models Flemma knows; the provider's floor for a model it does not know; the user's number as
// it is.
import { describe, expect, it } from 'vitest';
import {
  outputLimit,
  resolveMaxTokens,
  UNKNOWN_PROVIDER_LIMIT,
} from '../../src/core/provider/limits.js';
import table from '../../src/core/usage/pricing.json' with { type: 'json' };

describe('the default max_tokens', () => {
  it.each([
    ['anthropic', 'claude-sonnet-4-6', 64_000],
    ['anthropic', 'claude-opus-4-7', 64_000],
    ['anthropic', 'claude-haiku-4-5', 32_000],
    ['anthropic', 'claude-opus-4-1', 16_000],
    ['openai', 'gpt-5.4', 64_000],
    ['openai', 'gpt-4.1', 16_384],
    ['openai', 'gpt-4o', 8_192],
    ['openai', 'o3', 50_000],
    ['gemini', 'gemini-3.1-pro-preview', 32_768],
    ['vertex', 'gemini-2.5-flash', 32_768],
    ['moonshot', 'kimi-k2.6', 32_768],
    ['moonshot', 'moonshot-v1-8k', 4_096],
  ])('is half the limit of %s %s: %i', (provider, model, expected) => {
    expect(resolveMaxTokens(undefined, provider, model)).toBe(expected);
    expect(resolveMaxTokens('50%', provider, model)).toBe(expected);
  });

  it('finds the family of a dated or tagged id, and not another version', () => {
    expect(outputLimit('anthropic', 'claude-sonnet-4-5-20250929')).toEqual({
      tokens: 64_000,
      source: 'model',
    });
    expect(outputLimit('anthropic', 'claude-opus-4-1@20250805').tokens).toBe(32_000);
    expect(outputLimit('openai', 'gpt-4o-2024-08-06').tokens).toBe(16_384);
    expect(outputLimit('openai', 'gpt-4o-2024-05-13').tokens).toBe(4_096);
    expect(outputLimit('openai', 'gpt-5.2-chat-latest').tokens).toBe(16_384);
    // A newer version is not its predecessor: it gets the provider's floor.
    expect(outputLimit('anthropic', 'claude-opus-4-9')).toEqual({
      tokens: 32_000,
      source: 'provider floor',
    });
  });

  it("gives an unknown model its provider's floor, and an unknown provider 8192", () => {
    expect(outputLimit('openai', 'gpt-7-turbo')).toEqual({
      tokens: 16_384,
      source: 'provider floor',
    });
    expect(outputLimit('gemini', 'gemini-9-ultra').tokens).toBe(65_536);
    expect(outputLimit('openai_compatible', 'qwen3:8b')).toEqual({
      tokens: UNKNOWN_PROVIDER_LIMIT,
      source: 'default',
    });
    expect(resolveMaxTokens(undefined, 'openai_compatible', 'qwen3:8b')).toBe(4_096);
  });

  it('knows the limit of every model it knows the price of', () => {
    for (const [provider, entry] of Object.entries(table)) {
      if (typeof entry !== 'object' || !('models' in entry)) continue;
      for (const model of Object.keys(entry.models)) {
        expect(outputLimit(provider, model).source, `${provider} ${model}`).toBe('model');
      }
    }
  });
});

describe('a max_tokens the user sets', () => {
  it('is sent as it is when it is a number, even past the model limit', () => {
    expect(resolveMaxTokens(3000, 'anthropic', 'claude-sonnet-4-6')).toBe(3000);
    expect(resolveMaxTokens(200_000, 'openai', 'gpt-4o')).toBe(200_000);
  });

  it('is a share of the model limit when it is a percentage, at least 1024 and at most all', () => {
    expect(resolveMaxTokens('25%', 'anthropic', 'claude-sonnet-4-6')).toBe(32_000);
    expect(resolveMaxTokens('100%', 'openai', 'gpt-4.1')).toBe(32_768);
    expect(resolveMaxTokens('150%', 'openai', 'gpt-4.1')).toBe(32_768);
    expect(resolveMaxTokens('1%', 'openai', 'gpt-4o')).toBe(1_024);
  });
});
