// The `max_tokens` a request carries: the provider's own setting, else the shared one, resolved
// against the model's limit (a number, or "N%" of it).
import type { Config } from '../../core/config/config.js';
import { resolveMaxTokens } from '../../core/provider/limits.js';
import type { ProviderParameters } from '../providers.js';

/** A `max_tokens` value as the configuration admits it (a number, or "N%"), else undefined. */
function maxTokensOf(value: unknown): number | string | undefined {
  return typeof value === 'number' || typeof value === 'string' ? value : undefined;
}

/** The `max_tokens` a request of `config` to `model` of `providerName` carries. */
export function requestMaxTokens(config: Config, providerName: string, model: string): number {
  const parameters = config.parameters;
  const specific = (parameters[providerName] ?? {}) as ProviderParameters;
  return resolveMaxTokens(
    maxTokensOf(specific['max_tokens']) ?? parameters.max_tokens,
    providerName,
    model,
  );
}
