// What an ACP agent reports of a turn's usage, as the reply's `usage` event (src/core/acp/usage.ts
// through `AgentTurn`), and the record it makes (src/core/usage/session.ts): the agent's cost,
// never our price table's.
import type { SessionUpdate } from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import { AgentTurn } from '../../src/core/acp/updates.js';
import { promptUsage } from '../../src/core/acp/usage.js';
import { makeRecord } from '../../src/core/usage/session.js';

function usageUpdate(used: number, cost?: { amount: number; currency: string }): SessionUpdate {
  return { sessionUpdate: 'usage_update', used, size: 100_000, ...(cost ? { cost } : {}) };
}

/** The usage events of a turn of `updates` whose answer carries `answer`. */
function events(before: number | undefined, updates: SessionUpdate[], answer?: unknown): unknown[] {
  const turn = new AgentTurn(before);
  return [...updates.flatMap((update) => turn.push(update)), ...turn.finish(answer)];
}

describe('the usage an agent reports', () => {
  it('is one usage event at the turn end: the answer’s tokens, its window, the turn’s cost', () => {
    const answer = { inputTokens: 10, outputTokens: 5, thoughtTokens: 2, cachedReadTokens: 7 };
    expect(
      events(
        0.5,
        [
          usageUpdate(100, { amount: 0.6, currency: 'USD' }),
          usageUpdate(900, { amount: 0.75, currency: 'usd' }),
        ],
        answer,
      ),
    ).toEqual([
      {
        type: 'usage',
        usage: { input: 10, output: 5, thoughts: 2, cacheRead: 7 },
        reported: { cost: 0.25, context: 900, window: 100_000 },
      },
    ]);
  });

  it.each([
    ['no cost', usageUpdate(50)],
    ['a cost in credits', usageUpdate(50, { amount: 3, currency: 'credits' })],
    ['a running cost below the one before', usageUpdate(50, { amount: 0.1, currency: 'USD' })],
  ])('leaves the cost unknown with %s; the context stands for the tokens', (_what, update) => {
    expect(events(0.2, [update])).toEqual([
      {
        type: 'usage',
        usage: { input: 50, output: 0 },
        reported: { context: 50, window: 100_000 },
      },
    ]);
  });

  it('is nothing when the agent reports nothing, and takes no token count that is not one', () => {
    expect(events(undefined, [], { stopReason: 'end_turn' })).toEqual([]);
    expect(promptUsage({ inputTokens: -1, outputTokens: 3 })).toBeUndefined();
    expect(promptUsage({ inputTokens: '5', outputTokens: 3 })).toBeUndefined();
    expect(promptUsage(null)).toBeUndefined();
  });

  it('makes a record whose cost is the agent’s or none, never our price table’s', () => {
    // A model our table prices: its price is not the agent's.
    const done = {
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      usage: { input: 1000, output: 100 },
      bufnr: 1,
      startedAt: 0,
      completedAt: 1000,
    };
    expect(makeRecord({ ...done, reported: { cost: 0.01 } })).toMatchObject({
      cost: 0.01,
      reported_by: 'agent',
    });
    const unknown = makeRecord({ ...done, reported: {} });
    expect(unknown.reported_by).toBe('agent');
    expect(unknown.cost).toBeUndefined();
    expect(unknown.input_price).toBeUndefined();
  });
});
