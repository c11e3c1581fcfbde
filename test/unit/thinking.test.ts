import { describe, expect, it } from 'vitest';
import { resolveThinking } from '../../src/core/provider/thinking.js';

describe('resolveThinking (docs/configuration.md, parameters.thinking)', () => {
  it('maps the unified level to Anthropic effort on adaptive models, and budgets elsewhere', () => {
    expect(
      resolveThinking('anthropic', 'claude-sonnet-4-6', { thinking: 'medium' }, {}, 8192),
    ).toEqual({
      level: 'medium',
      effort: 'medium',
      foreign: 'preserve',
    });
    expect(
      resolveThinking('anthropic', 'claude-sonnet-4-6', { thinking: 'max' }, {}, 8192)?.effort,
    ).toBe('high');
    expect(
      resolveThinking('anthropic', 'claude-opus-4-7', { thinking: 'max' }, {}, 8192)?.effort,
    ).toBe('max');
    expect(
      resolveThinking('anthropic', 'claude-opus-4-7', { thinking: 'minimal' }, {}, 8192)?.effort,
    ).toBe('low');
    expect(
      resolveThinking('anthropic', 'claude-haiku-4-5', { thinking: 'medium' }, {}, 32000),
    ).toEqual({
      level: 'medium',
      budget: 8192,
      foreign: 'preserve',
    });
  });

  it('keeps an Anthropic budget below max_tokens and at least 1024', () => {
    expect(
      resolveThinking('anthropic', 'claude-haiku-4-5', { thinking: 'high' }, {}, 4096)?.budget,
    ).toBe(4095);
    expect(
      resolveThinking('anthropic', 'claude-haiku-4-5', { thinking: 100 }, {}, 4096)?.budget,
    ).toBe(1024);
  });

  it('lets the provider-specific value win, and turns thinking off with false, 0 or a budget <= 0', () => {
    expect(
      resolveThinking(
        'anthropic',
        'claude-haiku-4-5',
        { thinking: 'low' },
        { thinking: 'high' },
        32000,
      )?.budget,
    ).toBe(16384);
    expect(
      resolveThinking(
        'anthropic',
        'claude-sonnet-4-6',
        { thinking: 'low' },
        { thinking_budget: 5000 },
        32000,
      ),
    ).toEqual({ level: 'medium', budget: 5000, foreign: 'preserve' });
    expect(
      resolveThinking('anthropic', 'claude-sonnet-4-6', { thinking: false }, {}, 8192),
    ).toBeUndefined();
    expect(
      resolveThinking('anthropic', 'claude-sonnet-4-6', {}, { thinking_budget: 0 }, 8192),
    ).toBeUndefined();
    expect(
      resolveThinking(
        'anthropic',
        'claude-sonnet-4-6',
        { thinking: 'high' },
        { effort: 'xhigh' },
        8192,
      )?.effort,
    ).toBe('xhigh');
  });

  it('gives OpenAI reasoning models an effort, "none" when off, and others nothing', () => {
    expect(resolveThinking('openai', 'gpt-5.4', { thinking: 'low' }, {}, 8192)?.effort).toBe('low');
    expect(resolveThinking('openai', 'gpt-5.4', { thinking: false }, {}, 8192)?.effort).toBe(
      'none',
    );
    expect(
      resolveThinking('openai', 'gpt-5.4', { thinking: 'low' }, { reasoning: 'xhigh' }, 8192)
        ?.effort,
    ).toBe('xhigh');
    expect(resolveThinking('openai', 'gpt-4.1', { thinking: 'high' }, {}, 8192)).toBeUndefined();
  });

  it('gives Gemini 3 a level and Gemini 2.5 a budget; foreign handling travels along', () => {
    expect(
      resolveThinking('gemini', 'gemini-3.1-pro-preview', { thinking: 'medium' }, {}, 8192)?.effort,
    ).toBe('medium');
    expect(
      resolveThinking(
        'vertex',
        'gemini-2.5-flash',
        { thinking: { level: 'high', foreign: 'drop' } },
        {},
        8192,
      ),
    ).toEqual({ level: 'high', budget: 24576, foreign: 'drop' });
    expect(
      resolveThinking('moonshot', 'kimi-k2.6', { thinking: 'high' }, {}, 8192),
    ).toBeUndefined();
  });
});
