// The session's records and totals (docs/usage.md, "The session").
import { describe, expect, it } from 'vitest';
import { makeRecord, Session } from '../../src/core/usage/session.js';
import { SONNET_RECORD } from '../helpers/usage.js';

const STARTED = Date.UTC(2026, 10, 23, 12, 0, 0);

describe('a request record', () => {
  it('carries the token counts, the prices, where it came from and what it cost', () => {
    const record = makeRecord({
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      usage: { input: 2000, output: 410, cacheRead: 6000, cacheCreation: 1000 },
      bufnr: 3,
      filepath: '/work/notes.chat',
      startedAt: STARTED,
      completedAt: STARTED + 1500,
    });
    expect(record).toEqual({
      ...SONNET_RECORD,
      filepath: '/work/notes.chat',
      bufnr: 3,
      started_at: STARTED / 1000,
      completed_at: STARTED / 1000 + 1.5,
      cost: expect.closeTo(0.0177, 10) as number,
    });
  });

  it('has no prices and no cost for a model without a price entry', () => {
    const record = makeRecord({
      provider: 'openai_compatible',
      model: 'qwen3:8b',
      usage: { input: 50, output: 20 },
      bufnr: 1,
      startedAt: STARTED,
      completedAt: STARTED,
    });
    expect(record.cost).toBeUndefined();
    expect(record.input_price).toBeUndefined();
    expect(record.filepath).toBeUndefined();
    expect(record.output_has_thoughts).toBe(true);
    expect(record.input_tokens).toBe(50);
  });

  it('says Gemini-style providers report thinking apart, priced or not', () => {
    const usage = { input: 1, output: 1, thoughts: 5 };
    const base = { usage, bufnr: 1, startedAt: STARTED, completedAt: STARTED };
    expect(makeRecord({ ...base, provider: 'vertex', model: 'gemini-2.5-pro' })).toMatchObject({
      output_has_thoughts: false,
      thoughts_tokens: 5,
    });
    expect(
      makeRecord({ ...base, provider: 'moonshot', model: 'kimi-new' }).output_has_thoughts,
    ).toBe(false);
  });
});

describe('the session', () => {
  it('adds up requests, cost and tokens, and knows each buffer’s last request', () => {
    const session = new Session();
    expect(session.totals()).toEqual({ requests: 0, cost: 0, input_tokens: 0, output_tokens: 0 });
    const base = { startedAt: STARTED, completedAt: STARTED };
    // 2000×3 + 6000×0.3 + 1000×3.75 = 11550 µ$ and 410×15 = 6150 µ$: 0.0177.
    session.add(
      makeRecord({
        ...base,
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        usage: { input: 2000, output: 410, cacheRead: 6000, cacheCreation: 1000 },
        bufnr: 1,
      }),
    );
    // 4000×1.25 = 5000 µ$ and (600 + 400)×10 = 10000 µ$: 0.015.
    session.add(
      makeRecord({
        ...base,
        provider: 'vertex',
        model: 'gemini-2.5-pro',
        usage: { input: 4000, output: 600, thoughts: 400 },
        bufnr: 2,
      }),
    );
    // Unpriced: tokens count, cost does not.
    session.add(
      makeRecord({
        ...base,
        provider: 'openai_compatible',
        model: 'qwen3:8b',
        usage: { input: 100, output: 10 },
        bufnr: 1,
      }),
    );
    const totals = session.totals();
    expect(totals.requests).toBe(3);
    expect(totals.cost).toBeCloseTo(0.0327, 10);
    expect(totals.input_tokens).toBe(9000 + 4000 + 100);
    // Vertex's thinking is output billed on top; Anthropic's is already inside its 410.
    expect(totals.output_tokens).toBe(410 + 1000 + 10);
    expect(session.last(1)?.model).toBe('qwen3:8b');
    expect(session.last(2)?.model).toBe('gemini-2.5-pro');
    expect(session.last(9)).toBeUndefined();
    expect(session.requests()).toHaveLength(3);
  });
});
