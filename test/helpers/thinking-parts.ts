// Thinking parts of an evaluated prompt (src/core/provider/types.ts) on one line each.
import type { EvaluatedThinking } from '../../src/core/provider/types.js';

/** Thinking the model showed: `content`, signed by `provider` with `value` when both are given. */
export function thinkingPart(
  content: string,
  provider?: string,
  value?: string,
): EvaluatedThinking {
  const part: EvaluatedThinking = { kind: 'thinking', content, redacted: false };
  if (provider !== undefined && value !== undefined) part.signature = { provider, value };
  return part;
}

/** Thinking the provider hid: `content` is its opaque text. */
export function redactedThinkingPart(content: string): EvaluatedThinking {
  return { kind: 'thinking', content, redacted: true };
}
