// Elision under `context.budget` (src/core/context/elide.ts, docs/context.md "Budget and
// elision"): which results go as stubs, that every provider's body still pairs each call with its
// result, that the same chat and budget give the same body, and that the last turns are spared.
import { describe, expect, it } from 'vitest';
import { budgetLines, budgetSettings, resolveBudget } from '../../src/core/context/budget.js';
import { type ElideOptions, elide, stubText } from '../../src/core/context/elide.js';
import { estimateRequest } from '../../src/core/context/estimate.js';
import { createAnthropicAdapter } from '../../src/core/provider/adapters/anthropic.js';
import { createChatCompletionsAdapter } from '../../src/core/provider/adapters/chat-completions.js';
import { createGeminiAdapter } from '../../src/core/provider/adapters/gemini.js';
import { createOpenAIAdapter } from '../../src/core/provider/adapters/openai.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import type {
  EvaluatedMessage,
  EvaluatedPart,
  ProviderAdapter,
  ProviderRequest,
  ToolSpec,
} from '../../src/core/provider/types.js';
import { toolResultPart, toolUsePart } from '../helpers/evaluated-parts.js';

const KB = 1024;
const TOOLS: ToolSpec[] = [
  { name: 'read', description: 'Read a file', inputSchema: { type: 'object' } },
  { name: 'bash', description: 'Run a command', inputSchema: { type: 'object' } },
];
const SYSTEM = 'You are a careful engineer.';

/** A line of text `bytes` long (ASCII, so bytes = characters). */
function text(bytes: number, seed = 'x'): string {
  return seed.repeat(bytes);
}

interface Round {
  /** The call's tool and input. */
  tool?: string;
  input?: Record<string, unknown>;
  /** The result's parts (default: `bytes` of text). */
  bytes?: number;
  parts?: EvaluatedPart[];
  isError?: boolean;
}

/**
 * A chat: your message, then one reply of the model per round, each calling one tool whose
 * result comes back in the next message, and your closing question.
 */
function chat(rounds: Round[], last = 'What now?'): EvaluatedMessage[] {
  const out: EvaluatedMessage[] = [{ role: 'user', parts: [{ kind: 'text', text: 'Begin.' }] }];
  rounds.forEach((round, index) => {
    const id = `toolu_${String(index).padStart(3, '0')}`;
    const name = round.tool ?? 'read';
    out.push({
      role: 'assistant',
      parts: [
        { kind: 'text', text: `Step ${String(index)}.` },
        toolUsePart(id, name, round.input ?? { path: `src/f${String(index)}.ts` }),
      ],
    });
    out.push({
      role: 'user',
      parts: [
        toolResultPart(
          id,
          name,
          round.parts ?? [{ kind: 'text', text: text(round.bytes ?? 20 * KB, String(index % 10)) }],
          { isError: round.isError ?? false },
        ),
      ],
    });
  });
  out.push({ role: 'assistant', parts: [{ kind: 'text', text: 'Done.' }] });
  out.push({ role: 'user', parts: [{ kind: 'text', text: last }] });
  return out;
}

function options(overrides: Partial<ElideOptions> = {}): ElideOptions {
  return { budget: 20_000, keepTurns: 2, minBytes: 4 * KB, lowWater: 0.7, ...overrides };
}

const REST = { system: SYSTEM, tools: TOOLS };

function ids(messages: EvaluatedMessage[], options: ElideOptions): string[] {
  return elide(messages, REST, options).elided.map((item) => item.toolUseId);
}

describe('elision under a budget', () => {
  it('sends the request whole when it fits', () => {
    const messages = chat([{ bytes: 8 * KB }, { bytes: 8 * KB }]);
    const result = elide(messages, REST, options({ budget: 100_000 }));
    expect(result.messages).toBe(messages);
    expect(result.elided).toEqual([]);
    expect(result.over).toBeUndefined();
  });

  it('elides the oldest large results first, down to the low-water mark, and never small ones', () => {
    // 10 rounds of 20 KB (≈5,900 tokens each), one small result among them.
    const rounds: Round[] = Array.from({ length: 10 }, () => ({ bytes: 20 * KB }));
    rounds[1] = { bytes: 2 * KB };
    const messages = chat(rounds);
    const budget = 40_000;
    const result = elide(messages, REST, options({ budget }));
    const whole = estimateRequest({ ...REST, messages });
    expect(whole).toBeGreaterThan(budget);
    // The oldest first, the small one (round 1) passed over. The chat first went over the budget
    // at round 7 (the replay of its history); that request was brought down to 70 % of the budget,
    // and the same three stubs still keep this one under it.
    expect(result.elided.map((item) => item.toolUseId)).toEqual([
      'toolu_000',
      'toolu_002',
      'toolu_003',
    ]);
    expect(result.after).toBeLessThanOrEqual(budget);
    expect(result.after).toBeGreaterThan(budget * 0.7);
    expect(result.after).toBe(estimateRequest({ ...REST, messages: result.messages }));
    expect(result.over).toBeUndefined();
    // A chat that goes over only now is brought down to the low-water mark at once.
    const first = elide(messages, REST, options({ budget: whole - 1, lowWater: 0.5 }));
    expect(first.elided.map((item) => item.toolUseId)).toEqual(
      ['000', '002', '003', '004', '005'].map((id) => `toolu_${id}`),
    );
    expect(first.after).toBeLessThanOrEqual((whole - 1) * 0.5);
    // The input is not changed.
    expect(JSON.stringify(messages)).toBe(JSON.stringify(chat(rounds)));
  });

  it('writes a stub naming the tool, what it was called on and the size', () => {
    const rounds: Round[] = [
      { tool: 'read', input: { path: 'src/x.ts' }, bytes: 48 * KB },
      { tool: 'bash', input: { command: 'npm test\n  -- --run' }, bytes: 30 * KB },
      { tool: 'grep', input: { pattern: 'TODO', path: '.' }, bytes: 30 * KB, isError: true },
      { tool: 'mcp:files:dump', input: { limit: 3 }, bytes: 30 * KB },
      { bytes: 1 * KB },
      { bytes: 1 * KB },
    ];
    const messages = chat(rounds);
    const result = elide(messages, REST, options({ budget: 5_000 }));
    expect(result.elided.map((item) => item.stub)).toEqual([
      '[result of read src/x.ts elided: 48 KB; the chat file has it]',
      '[result of bash npm test -- --run elided: 30 KB; the chat file has it]',
      '[result of grep . elided: 30 KB; the chat file has it]',
      '[result of mcp:files:dump elided: 30 KB; the chat file has it]',
    ]);
    // Only the content changes: the id, the name and is_error stay.
    const results = result.messages.flatMap((message) =>
      message.role === 'user' ? message.parts.filter((part) => part.kind === 'tool_result') : [],
    );
    expect(results[2]).toEqual(
      toolResultPart(
        'toolu_002',
        'grep',
        '[result of grep . elided: 30 KB; the chat file has it]',
        { isError: true },
      ),
    );
  });

  it('counts images and PDFs in results', () => {
    const image = 'A'.repeat(Math.ceil((200 * KB * 4) / 3));
    const pdf = 'B'.repeat(Math.ceil((600 * KB * 4) / 3));
    const messages = chat([
      {
        tool: 'screenshot',
        input: { url: 'http://localhost:3000' },
        parts: [
          { kind: 'text', text: 'Captured.' },
          { kind: 'image', mimeType: 'image/png', data: image, filename: 'shot.png' },
        ],
      },
      {
        tool: 'read',
        input: { path: 'spec.pdf' },
        parts: [{ kind: 'pdf', mimeType: 'application/pdf', data: pdf, filename: 'spec.pdf' }],
      },
      { bytes: 1 * KB },
      { bytes: 1 * KB },
    ]);
    const result = elide(messages, REST, options({ budget: 2_000 }));
    expect(result.elided.map((item) => item.stub)).toEqual([
      '[result of screenshot http://localhost:3000 elided: 200 KB, 1 image; the chat file has it]',
      '[result of read spec.pdf elided: 600 KB, 1 PDF; the chat file has it]',
    ]);
    expect(JSON.stringify(result.messages)).not.toContain('AAAA');
  });

  it('never elides the last keep_turns turns, and says why the request stays over budget', () => {
    const messages = chat(Array.from({ length: 4 }, () => ({ bytes: 40 * KB })));
    const result = elide(messages, REST, options({ budget: 10_000, keepTurns: 3 }));
    // Four replies with a call, then the closing reply: the last three replies are spared, so
    // only the first two results may go.
    expect(result.elided.map((item) => item.toolUseId)).toEqual(['toolu_000', 'toolu_001']);
    expect(result.after).toBeGreaterThan(10_000);
    expect(result.over).toMatch(
      /^request ≈[\d,]+ tokens, over context\.budget 10,000 \(after eliding 2 results\): the last 3 turns ≈[\d,]+ \(never elided: context\.elide\.keep_turns\)/,
    );
    // With nothing old enough, nothing goes and it says so.
    const none = elide(chat([{ bytes: 80 * KB }]), REST, options({ budget: 1_000, keepTurns: 2 }));
    expect(none.elided).toEqual([]);
    expect(none.over).toContain('(nothing could be elided)');
  });

  it('keeps each call paired with its result in every provider’s body', () => {
    const loader = new SdkLoader();
    const adapters: Record<string, ProviderAdapter> = {
      anthropic: createAnthropicAdapter({ apiKey: 'k' }, loader),
      openai: createOpenAIAdapter({ apiKey: 'k' }, loader),
      chat: createChatCompletionsAdapter({ apiKey: 'k', name: 'compatible' }, loader),
      moonshot: createChatCompletionsAdapter(
        { apiKey: 'k', name: 'moonshot', toolResultNames: true },
        loader,
      ),
      gemini: createGeminiAdapter({ apiKey: 'k' }, loader),
      vertex: createGeminiAdapter({ vertex: { project: 'p', location: 'global' } }, loader),
    };
    // Parallel calls in one reply, an error result, an image result.
    const messages = chat(Array.from({ length: 6 }, () => ({ bytes: 20 * KB })));
    const parallel: EvaluatedMessage[] = [
      {
        role: 'assistant',
        parts: [
          toolUsePart('p1', 'read', { path: 'a.ts' }),
          toolUsePart('p2', 'bash', { command: 'ls' }),
        ],
      },
      {
        role: 'user',
        parts: [
          toolResultPart('p1', 'read', text(30 * KB)),
          toolResultPart(
            'p2',
            'bash',
            [
              { kind: 'text', text: text(10 * KB) },
              { kind: 'image', mimeType: 'image/png', data: 'A'.repeat(20_000), filename: 'x.png' },
            ],
            { isError: true },
          ),
        ],
      },
    ];
    const all = [messages[0] as EvaluatedMessage, ...parallel, ...messages.slice(1)];
    const result = elide(all, REST, options({ budget: 12_000 }));
    expect(result.elided.map((item) => item.toolUseId).slice(0, 3)).toEqual([
      'p1',
      'p2',
      'toolu_000',
    ]);
    const request = (messages: EvaluatedMessage[]): ProviderRequest => ({
      model: 'm',
      system: SYSTEM,
      messages,
      tools: TOOLS,
      maxTokens: 1000,
      cacheRetention: 'none',
    });
    const calls = ['p1', 'p2', ...Array.from({ length: 6 }, (_, i) => `toolu_00${String(i)}`)];
    for (const [name, adapter] of Object.entries(adapters)) {
      const body = adapter.buildBody(request(result.messages));
      const pairs = pairing(name, body);
      expect([name, pairs.calls]).toEqual([name, calls]);
      expect([name, pairs.results]).toEqual([name, calls]);
      const json = JSON.stringify(body);
      for (const item of result.elided) expect(json).toContain(item.stub);
      expect(json).not.toContain(text(10 * KB));
      // The whole request builds too, and differs only where results were elided.
      const whole = pairing(name, adapter.buildBody(request(all)));
      expect([name, whole.calls, whole.results]).toEqual([name, calls, calls]);
    }
  });

  it('gives byte-identical bodies for the same chat and budget, and keeps its stubs as the chat grows', () => {
    const adapter = createAnthropicAdapter({ apiKey: 'k' }, new SdkLoader());
    const body = (messages: EvaluatedMessage[], opts: ElideOptions): string =>
      JSON.stringify(
        adapter.buildBody({
          model: 'claude-sonnet-4-6',
          system: SYSTEM,
          messages: elide(messages, REST, opts).messages,
          tools: TOOLS,
          maxTokens: 1000,
          cacheRetention: 'short',
        }),
      );
    const rounds: Round[] = Array.from({ length: 12 }, () => ({ bytes: 12 * KB }));
    const opts = options({ budget: 30_000, keepTurns: 2 });
    expect(body(chat(rounds), opts)).toBe(body(structuredClone(chat(rounds)), opts));
    // An edit after the kept turns (your last message) leaves every stub as it was.
    expect(ids(chat(rounds, 'And now?'), opts)).toEqual(ids(chat(rounds), opts));
    // The chat grows a round at a time: a result once elided stays elided, and the elided set
    // changes in blocks, not at every request.
    let previous: string[] = [];
    let changes = 0;
    for (let length = 1; length <= 40; length++) {
      const grown = Array.from({ length }, () => ({ bytes: 12 * KB }));
      const now = ids(chat(grown), opts);
      expect(now.slice(0, previous.length)).toEqual(previous);
      if (now.length !== previous.length) changes++;
      previous = now;
      expect(elide(chat(grown), REST, opts).after).toBeLessThanOrEqual(30_000);
    }
    expect(previous.length).toBeGreaterThan(20);
    // Each step elides a block: far fewer changes than requests that needed elision.
    expect(changes).toBeLessThanOrEqual(previous.length / 3);
  });
});

describe('the budget setting', () => {
  it('is tokens or a share of the model’s window; unset is the window less the reply; false none', () => {
    expect(resolveBudget(50_000, 200_000)).toBe(50_000);
    expect(resolveBudget('60%', 200_000)).toBe(120_000);
    expect(resolveBudget(false, 200_000)).toBeUndefined();
    expect(resolveBudget(undefined, 200_000)).toBeUndefined();
    expect(resolveBudget('lots', 200_000)).toBeUndefined();
    expect(budgetSettings({}, 'anthropic', 'claude-sonnet-4-6', 64_000)).toMatchObject({
      setting: null,
      budget: 136_000,
      reply: 64_000,
    });
    expect(
      budgetSettings({ context: { budget: false } }, 'anthropic', 'claude-sonnet-4-6', 64_000),
    ).toBeUndefined();
    // A reply as large as the window leaves no automatic budget.
    expect(
      budgetSettings({ context: { window: 8000 } }, 'openai_compatible', 'x', 8192),
    ).toBeUndefined();
    expect(
      budgetSettings({ context: { budget: '60%' } }, 'anthropic', 'claude-sonnet-4-6', 64_000),
    ).toMatchObject({ budget: 120_000, keepTurns: 8, minBytes: 4096, lowWater: 0.7 });
    // `context.window` wins over the model table.
    expect(
      budgetSettings(
        { context: { budget: '50%', window: 64_000, elide: { keep_turns: 3, low_water: '80%' } } },
        'anthropic',
        'claude-sonnet-4-6',
        64_000,
      ),
    ).toMatchObject({ budget: 32_000, keepTurns: 3, lowWater: 0.8 });
  });

  it('is listed in :Flemma status with what the last request elided, summed up when many', () => {
    const settings = budgetSettings({ context: { budget: 1000 } }, 'anthropic', 'claude-x', 4096);
    const elided = Array.from({ length: 12 }, (_, index) => ({
      toolUseId: `t${String(index)}`,
      name: 'read',
      bytes: 10 * KB,
      saved: 2900,
      stub: `[result of read f${String(index)} elided: 10 KB; the chat file has it]`,
    }));
    const lines = budgetLines(settings, {
      elided,
      budget: 1000,
      before: 36_000,
      after: 900,
      automatic: false,
    });
    expect(lines[0]).toMatch(/^context budget: 1,000 tokens; elision spares the last 8 turns/);
    expect(lines[1]).toBe(
      'last request: ≈900 tokens of 1,000 (≈36,000 whole); elided 12 tool results, 120 KB:',
    );
    expect(lines[2]).toBe('  [result of read f0 elided: 10 KB; the chat file has it]');
    expect(lines.at(-1)).toBe('  … and 2 more, 20 KB');
    expect(budgetLines(undefined, undefined)).toEqual([
      'context budget: none (context.budget = false: requests go whole)',
    ]);
    expect(budgetLines(budgetSettings({}, 'anthropic', 'claude-x', 64_000), undefined)[0]).toMatch(
      /^context budget: 136,000 tokens \(automatic: the 200,000-token window, provider floor less 64,000 for the reply; context.budget sets one, false none\)/,
    );
  });

  it('names a target only when the input has one, shortened when long', () => {
    const result = {
      kind: 'tool_result' as const,
      toolUseId: 't',
      name: 'bash',
      parts: [],
      isError: false,
      synthetic: false,
    };
    expect(stubText(result, { command: 'x'.repeat(200) }, 5000)).toBe(
      `[result of bash ${'x'.repeat(79)}… elided: 5 KB; the chat file has it]`,
    );
    expect(stubText(result, 'not an object', 500)).toBe(
      '[result of bash elided: 500 B; the chat file has it]',
    );
  });
});

/** The call ids of a body in order, and the ids its results answer, per provider's format. */
function pairing(
  provider: string,
  body: Record<string, unknown>,
): { calls: string[]; results: string[] } {
  const calls: string[] = [];
  const results: string[] = [];
  type Item = Record<string, unknown>;
  if (provider === 'anthropic') {
    const messages = body['messages'] as { role: string; content: Item[] | string }[];
    messages.forEach((message, index) => {
      if (typeof message.content === 'string') return;
      const uses = message.content.filter((block) => block['type'] === 'tool_use');
      calls.push(...uses.map((block) => String(block['id'])));
      if (uses.length === 0) return;
      // The results must come in the very next message.
      const next = messages[index + 1]?.content;
      const answered = Array.isArray(next)
        ? next
            .filter((block) => block['type'] === 'tool_result')
            .map((b) => String(b['tool_use_id']))
        : [];
      results.push(...answered);
    });
  } else if (provider === 'openai') {
    for (const item of body['input'] as Item[]) {
      if (item['type'] === 'function_call') calls.push(String(item['call_id']));
      if (item['type'] === 'function_call_output') {
        // Text, or a list of content items when a result holds an image.
        expect(typeof item['output'] === 'string' || Array.isArray(item['output'])).toBe(true);
        results.push(String(item['call_id']));
      }
    }
  } else if (provider === 'chat' || provider === 'moonshot') {
    const messages = body['messages'] as Item[];
    messages.forEach((message, index) => {
      const toolCalls = (message['tool_calls'] ?? []) as Item[];
      calls.push(...toolCalls.map((call) => String(call['id'])));
      // Each call's `tool` message follows its assistant message at once.
      for (let at = 1; at <= toolCalls.length; at++) {
        const answer = messages[index + at] as Item;
        expect(answer['role']).toBe('tool');
        expect(typeof answer['content']).toBe('string');
        if (provider === 'moonshot') expect(typeof answer['name']).toBe('string');
        results.push(String(answer['tool_call_id']));
      }
    });
  } else {
    // Gemini: a model turn's function calls answered, in order and by name, by the next turn.
    const contents = body['contents'] as { role: string; parts: Item[] }[];
    contents.forEach((content, index) => {
      const made = content.parts.flatMap((part) =>
        part['functionCall'] === undefined ? [] : [part['functionCall'] as Item],
      );
      if (made.length === 0) return;
      const next = contents[index + 1]?.parts ?? [];
      const answers = next.flatMap((part) =>
        part['functionResponse'] === undefined ? [] : [part['functionResponse'] as Item],
      );
      expect(answers.map((answer) => answer['name'])).toEqual(made.map((call) => call['name']));
      // Gemini pairs by position; the ids come from the test's own order.
      calls.push(...made.map(() => '#'));
      results.push(...answers.map(() => '#'));
    });
    const order = ['p1', 'p2', ...Array.from({ length: 6 }, (_, i) => `toolu_00${String(i)}`)];
    return {
      calls: calls.map((_, index) => order[index] ?? '?'),
      results: results.map((_, index) => order[index] ?? '?'),
    };
  }
  return { calls, results };
}
