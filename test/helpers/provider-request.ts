// The smallest request a provider adapter is given in its tests: one user message, "Hello".
import type { ProviderRequest } from '../../src/core/provider/types.js';

/**
 * A request to `model` of one user message "Hello", no system prompt and no tools, at most
 * `maxTokens` out, no prompt caching; `overrides` replace any field.
 */
export function helloRequest(
  model: string,
  maxTokens: number,
  overrides: Partial<ProviderRequest> = {},
): ProviderRequest {
  return {
    model,
    system: '',
    messages: [{ role: 'user', parts: [{ kind: 'text', text: 'Hello' }] }],
    tools: [],
    maxTokens,
    cacheRetention: 'none',
    ...overrides,
  };
}
