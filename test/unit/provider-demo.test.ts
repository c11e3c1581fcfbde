// The offline demo provider: its scripted reply follows the request it gets, and its pauses leave
// nothing behind on the send's signal.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  arithmeticIn,
  createDemoAdapter,
  demoScript,
} from '../../src/core/provider/adapters/demo.js';
import type {
  EvaluatedMessage,
  EvaluatedToolResult,
  ProviderEvent,
  ProviderRequest,
} from '../../src/core/provider/types.js';
import { toolUsePart } from '../helpers/evaluated-parts.js';

function request(messages: EvaluatedMessage[]): ProviderRequest {
  return { model: 'demo', system: '', messages, tools: [], maxTokens: 100, cacheRetention: 'none' };
}

const user = (text: string): EvaluatedMessage => ({
  role: 'user',
  parts: [{ kind: 'text', text }],
});

const call = (id: string, expression: string): EvaluatedMessage => ({
  role: 'assistant',
  parts: [{ kind: 'text', text: 'Here is a call:' }, toolUsePart(id, 'calculator', { expression })],
});

function result(id: string, text: string, extra: Partial<EvaluatedToolResult> = {}) {
  return {
    kind: 'tool_result',
    toolUseId: id,
    name: 'calculator',
    parts: [{ kind: 'text', text }],
    isError: false,
    synthetic: false,
    ...extra,
  } as EvaluatedToolResult;
}

const text = (events: ProviderEvent[]): string =>
  events.map((event) => (event.type === 'text' ? event.text : '')).join('');
const toolUses = (events: ProviderEvent[]) => events.filter((event) => event.type === 'tool_use');
const stop = (events: ProviderEvent[]) => events.find((event) => event.type === 'done');
const ids = () => 'demo_1';
/** The script's reply once the first question's call `6 * 7` got `answer`, then `later`. */
const afterCall = (answer: EvaluatedToolResult, ...later: EvaluatedMessage[]): ProviderEvent[] =>
  demoScript(
    request([user('Hi'), call('demo_1', '6 * 7'), { role: 'user', parts: [answer] }, ...later]),
    ids,
  );
/** The script's reply to `question`, asked after one finished calculator cycle. */
const afterOneCycle = (question: string): ProviderEvent[] =>
  afterCall(
    result('demo_1', '42'),
    { role: 'assistant', parts: [{ kind: 'text', text: 'It is 42.' }] },
    user(question),
  );

describe('the demo script', () => {
  it('answers a first question with a calculator call', () => {
    const events = demoScript(request([user('Hello! What can you do?')]), ids);
    expect(text(events)).toContain('You asked: "Hello! What can you do?"');
    expect(toolUses(events)).toEqual([
      { type: 'tool_use', id: 'demo_1', name: 'calculator', input: { expression: '6 * 7' } },
    ]);
    expect(stop(events)).toEqual({ type: 'done', stopReason: 'tool_use' });
  });

  it('reports the tool result it is sent, with its value', () => {
    const events = afterCall(result('demo_1', '42'));
    expect(text(events)).toContain('The calculator tool returned "42".');
    expect(text(events)).toContain('the whole tool cycle');
    expect(toolUses(events)).toEqual([]);
    expect(stop(events)).toEqual({ type: 'done', stopReason: 'end_turn' });
  });

  it('says a rejected or failed call gave no result, instead of pointing at one', () => {
    const rejected = afterCall(result('demo_1', 'The user rejected this call', { isError: true }));
    expect(text(rejected)).toContain(
      'The calculator call did not give a result: "The user rejected this call".',
    );
    expect(text(rejected)).not.toContain('whole tool cycle');
    const never = afterCall(
      result('demo_1', 'No result provided', { isError: true, synthetic: true }),
    );
    expect(text(never)).toContain('The calculator call has no result: it never ran');
  });

  it('answers a later question without a tool as a plain reply, not as a tool result', () => {
    // The conversation had a tool cycle before; the new question has nothing to do with it.
    const events = afterOneCycle('And what is your name?');
    expect(text(events)).toContain('You asked: "And what is your name?"');
    expect(text(events)).not.toMatch(/tool result|returned/);
    expect(toolUses(events)).toEqual([]);
    expect(stop(events)).toEqual({ type: 'done', stopReason: 'end_turn' });
  });

  it('computes the arithmetic a later question asks for', () => {
    const events = afterOneCycle('and what is 12 * (3 + 4)?');
    expect(toolUses(events)).toEqual([
      { type: 'tool_use', id: 'demo_1', name: 'calculator', input: { expression: '12 * (3 + 4)' } },
    ]);
  });

  it('finds arithmetic in words, and none where there is none', () => {
    expect(arithmeticIn('what is 2 ** 10 please')).toBe('2 ** 10');
    expect(arithmeticIn('(1.5+2)/3')).toBe('(1.5+2)/3');
    expect(arithmeticIn('I have 3 cats')).toBeUndefined();
  });
});

describe('the demo adapter', () => {
  it('leaves no abort listener on the send signal after a paced reply', async () => {
    const adapter = createDemoAdapter({ delayMs: 1 });
    const controller = new AbortController();
    const events: ProviderEvent[] = [];
    for await (const event of adapter.stream(request([user('Hi')]), controller.signal)) {
      events.push(event);
    }
    expect(events.length).toBeGreaterThan(10);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
