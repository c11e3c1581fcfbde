// The unified `thinking` option → what each provider's request carries (docs/configuration.md, `parameters.thinking`).
// Provider-specific overrides win over the general value. Until per-model tables exist, model
// families are recognised by name (documented in docs/configuration.md).
import type { ProviderRequest, ThinkingLevel } from './types.js';

const LEVELS: readonly ThinkingLevel[] = ['minimal', 'low', 'medium', 'high', 'max'];

/** `parameters.thinking` in any of its forms. */
export type ThinkingOption =
  | ThinkingLevel
  | number
  | false
  | { level?: ThinkingLevel | number | false; foreign?: 'preserve' | 'drop' };

export interface ThinkingParameters {
  thinking?: ThinkingOption;
  /** Anthropic, Gemini, Vertex: an explicit budget (0 or less: off). */
  thinking_budget?: number;
  /** Anthropic adaptive models: `low` … `max`. */
  effort?: string;
  /** OpenAI: the reasoning effort, as the API spells it. */
  reasoning?: string;
}

const BUDGETS: Record<ThinkingLevel, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  max: 32768,
};

const GEMINI_25_BUDGETS: Record<ThinkingLevel, number> = {
  minimal: 128,
  low: 2048,
  medium: 8192,
  high: 24576,
  max: 32768,
};

/** A budget's level: ≤256 minimal, ≤4096 low, ≤12288 medium, ≤24576 high, else max. */
function levelOfBudget(budget: number): ThinkingLevel {
  if (budget <= 256) return 'minimal';
  if (budget <= 4096) return 'low';
  if (budget <= 12288) return 'medium';
  if (budget <= 24576) return 'high';
  return 'max';
}

interface Unified {
  level: ThinkingLevel | undefined;
  budget: number | undefined;
  foreign: 'preserve' | 'drop';
  off: boolean;
}

function unify(option: ThinkingOption | undefined): Unified {
  const value = typeof option === 'object' ? option.level : option;
  const foreign = typeof option === 'object' && option.foreign === 'drop' ? 'drop' : 'preserve';
  if (value === false || value === 0)
    return { level: undefined, budget: undefined, foreign, off: true };
  if (typeof value === 'number') {
    return { level: levelOfBudget(value), budget: Math.floor(value), foreign, off: false };
  }
  const level = value !== undefined && LEVELS.includes(value) ? value : 'high';
  return { level, budget: undefined, foreign, off: false };
}

const ADAPTIVE_ANTHROPIC = /^claude-(opus-4-[67]|sonnet-4-6)/;
const OPENAI_REASONING = /^(gpt-5|o\d)/;

/**
 * The `thinking` of a request to `provider` for `model`, from the general and the provider's
 * own parameters (the provider's win), or undefined when thinking is off for it.
 */
export function resolveThinking(
  provider: string,
  model: string,
  general: ThinkingParameters,
  specific: ThinkingParameters,
  maxTokens: number,
): ProviderRequest['thinking'] {
  const unified = unify(specific.thinking ?? general.thinking);
  const { foreign } = unified;
  switch (provider) {
    case 'anthropic': {
      if (specific.thinking_budget !== undefined) {
        if (specific.thinking_budget <= 0) return undefined;
        return anthropicBudget(
          levelOfBudget(specific.thinking_budget),
          specific.thinking_budget,
          maxTokens,
          foreign,
        );
      }
      if (unified.off || unified.level === undefined) return undefined;
      if (ADAPTIVE_ANTHROPIC.test(model)) {
        const effort =
          specific.effort ??
          (unified.level === 'minimal'
            ? 'low'
            : unified.level === 'max' && model.startsWith('claude-sonnet')
              ? 'high'
              : unified.level);
        return { level: unified.level, effort, foreign };
      }
      return anthropicBudget(
        unified.level,
        unified.budget ?? BUDGETS[unified.level],
        maxTokens,
        foreign,
      );
    }
    case 'openai': {
      if (!OPENAI_REASONING.test(model)) return undefined;
      if (specific.reasoning !== undefined && specific.reasoning !== '') {
        return { level: unified.level ?? 'high', effort: specific.reasoning, foreign };
      }
      // NOTE: thinking explicitly off is sent as effort "none" (the default would be "medium").
      if (unified.off) return { level: 'minimal', effort: 'none', foreign };
      const level = unified.level ?? 'high';
      return { level, effort: level === 'max' ? 'high' : level, foreign };
    }
    case 'gemini':
    case 'vertex': {
      if (specific.thinking_budget !== undefined) {
        if (specific.thinking_budget <= 0) return undefined;
        return {
          level: levelOfBudget(specific.thinking_budget),
          budget: specific.thinking_budget,
          foreign,
        };
      }
      if (unified.off || unified.level === undefined) return undefined;
      if (/^gemini-3/.test(model)) {
        const effort =
          unified.level === 'max' ? 'high' : unified.level === 'minimal' ? 'low' : unified.level;
        return { level: unified.level, effort, foreign };
      }
      return {
        level: unified.level,
        budget: unified.budget ?? GEMINI_25_BUDGETS[unified.level],
        foreign,
      };
    }
    default:
      return undefined;
  }
}

function anthropicBudget(
  level: ThinkingLevel,
  budget: number,
  maxTokens: number,
  foreign: 'preserve' | 'drop',
): ProviderRequest['thinking'] {
  // The budget must stay below max_tokens, and Anthropic's minimum is 1024.
  const clamped = Math.max(1024, Math.min(Math.floor(budget), maxTokens - 1));
  return { level, budget: clamped, foreign };
}
