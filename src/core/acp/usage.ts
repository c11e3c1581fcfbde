// What an agent reports of a turn's usage (docs/agents.md, "Usage and cost"), as the one `usage`
// event a provider's reply ends with: the token counts of the prompt's answer (`usage`, when the
// agent gives it), else the tokens in its context (`usage_update`'s `used`); the window it says
// its model has; and the cost of the turn when it reports one in US dollars (its running cost of
// the session after the turn, less what it was before). Our price table is never used for an
// agent: a cost it does not report is unknown. Everything here is untrusted input: numbers only.
import type { Cost, UsageUpdate } from '@agentclientprotocol/sdk';
import type { ProviderEvent, ReportedUsage, Usage } from '../provider/types.js';

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** The token counts of a prompt's answer (`PromptResponse.usage`), if it holds them. */
export function promptUsage(raw: unknown): Usage | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const fields = raw as Record<string, unknown>;
  const input = count(fields['inputTokens']);
  const output = count(fields['outputTokens']);
  if (input === undefined || output === undefined) return undefined;
  const usage: Usage = { input, output };
  const thoughts = count(fields['thoughtTokens']);
  const cacheRead = count(fields['cachedReadTokens']);
  const cacheCreation = count(fields['cachedWriteTokens']);
  if (thoughts !== undefined) usage.thoughts = thoughts;
  if (cacheRead !== undefined) usage.cacheRead = cacheRead;
  if (cacheCreation !== undefined) usage.cacheCreation = cacheCreation;
  return usage;
}

/** The session's running cost in US dollars, when `cost` is one. */
export function dollarsOf(cost: Cost | null | undefined): number | undefined {
  if (cost === null || cost === undefined || cost.currency.toUpperCase() !== 'USD') {
    return undefined;
  }
  return count(cost.amount);
}

/**
 * The `usage` event of a turn: `update` the last `usage_update` of the turn, `answer` the usage of
 * the prompt's answer, `before` the session's running cost (USD) before the turn. None when the
 * agent reported nothing.
 */
export function turnUsage(
  update: UsageUpdate | undefined,
  answer: unknown,
  before: number,
): ProviderEvent[] {
  const tokens = promptUsage(answer);
  if (update === undefined && tokens === undefined) return [];
  const reported: ReportedUsage = {};
  const after = dollarsOf(update?.cost);
  if (after !== undefined && after >= before) reported.cost = after - before;
  const used = count(update?.used);
  const size = count(update?.size);
  if (used !== undefined) reported.context = used;
  if (size !== undefined && size > 0) reported.window = size;
  return [{ type: 'usage', usage: tokens ?? { input: used ?? 0, output: 0 }, reported }];
}
