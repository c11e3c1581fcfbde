// The send through each provider's real SDK, against the fake server: the reply lands in the
// buffer the same way whichever provider streams it.
import { describe, expect, it } from 'vitest';
import { answered, launcher } from '../helpers/e2e.js';
import { type FakeStream } from '../helpers/fake-provider.js';
import { responsesEvent, responsesResponse } from '../helpers/openai-script.js';

const launch = launcher();

interface Case {
  provider: string;
  env: Record<string, string>;
  /** Lua table source of setup() options, given the fake server's URL. */
  setup: (url: string) => string;
  path: RegExp;
  reply: (stream: FakeStream) => Promise<void>;
  text: string;
}

const response = (status: string): Record<string, unknown> => responsesResponse(status, 'gpt-5.4');
const completionChunk = (delta: object, finish: string | null = null): object => ({
  id: 'chatcmpl-fake',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'qwen3:8b',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

const CASES: Case[] = [
  {
    provider: 'openai',
    env: { OPENAI_API_KEY: 'sk-openai-test' },
    setup: (url) => `{ provider = "openai", parameters = { openai = { base_url = "${url}/v1" } } }`,
    path: /^\/v1\/responses/,
    text: 'Hi from OpenAI.',
    reply: async (stream) => {
      const events = [
        responsesEvent('response.created', { response: response('in_progress') }),
        responsesEvent('response.output_text.delta', {
          item_id: 'm',
          output_index: 0,
          content_index: 0,
          delta: 'Hi from ',
        }),
        responsesEvent('response.output_text.delta', {
          item_id: 'm',
          output_index: 0,
          content_index: 0,
          delta: 'OpenAI.',
        }),
        responsesEvent('response.completed', { response: response('completed') }),
      ];
      for (const event of events) await stream.sse(event['type'] as string, event);
      await stream.end();
    },
  },
  {
    provider: 'openai_compatible',
    env: {},
    setup: (url) =>
      `{ provider = "openai_compatible", model = "qwen3:8b", parameters = { openai_compatible = { base_url = "${url}/v1" } } }`,
    path: /^\/v1\/chat\/completions/,
    text: 'Hi from a local model.',
    reply: async (stream) => {
      await stream.sse(undefined, completionChunk({ role: 'assistant', content: 'Hi from' }));
      await stream.sse(undefined, completionChunk({ content: ' a local model.' }));
      await stream.sse(undefined, completionChunk({}, 'stop'));
      await stream.sse(undefined, '[DONE]');
      await stream.end();
    },
  },
  {
    provider: 'gemini',
    env: { GEMINI_API_KEY: 'gemini-test-key' },
    setup: (url) => `{ provider = "gemini", parameters = { gemini = { base_url = "${url}" } } }`,
    path: /:streamGenerateContent/,
    text: 'Hi from Gemini.',
    reply: async (stream) => {
      await stream.sse(undefined, {
        candidates: [{ content: { role: 'model', parts: [{ text: 'Hi from Gemini.' }] } }],
      });
      await stream.sse(undefined, {
        candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4 },
      });
      await stream.end();
    },
  },
];

describe.each(CASES)('sending through $provider', (c) => {
  it('streams the reply into the buffer', async () => {
    const { d: driver, f: fake } = await launch({
      key: false,
      env: c.env,
      setup: (fake) => `require("flemma").setup(${c.setup(fake.url)})`,
    });
    const buf = await driver.openChat('p.chat', ['@You:', 'Hello']);
    await driver.press('<C-]>');
    const request = await fake.nextRequest({ path: c.path });
    expect(request.rawBody).toContain('Hello');
    await c.reply(request.stream());
    await answered(driver, buf, 'Hello', c.text);
  });
});

describe('a provider that is not ready', () => {
  it.each([
    [
      'vertex',
      '{ provider = "vertex" }',
      { VERTEX_AI_ACCESS_TOKEN: 'ya29.test' },
      /vertex: set parameters\.vertex\.project_id/,
    ],
    [
      'openai_compatible',
      '{ provider = "openai_compatible", model = "m" }',
      {},
      /set parameters\.openai_compatible\.base_url/,
    ],
  ])(
    '%s says what is missing, and the buffer is unchanged',
    async (_name, options, env, message) => {
      const { d: driver } = await launch({
        key: false,
        env,
        setup: `require("flemma").setup(${options})`,
      });
      await driver.openChat('n.chat', ['@You:', 'Hello']);
      await driver.press('<C-]>');
      await driver.waitForNotification(message);
      expect(await driver.lines()).toEqual(['@You:', 'Hello']);
    },
  );
});

describe('the offline demo provider', () => {
  it('streams a labelled, scripted reply with a tool call, without any key or network', async () => {
    const { d: driver } = await launch({
      key: false,
      setup: `require("flemma").setup({ provider = "demo", parameters = { demo = { delay_ms = 0 } } })`,
    });
    const buf = await driver.openChat('demo.chat', ['@You:', 'What can you do?']);
    await driver.press('<C-]>');
    const finished = await driver.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toMatchObject({ bufnr: buf, status: 'completed' });
    // Autopilot (on by default) goes on by itself: Phase 1 writes a pending placeholder for the
    // calculator call (not auto-approved), with its preview, and stops there for the user.
    await driver.waitForEvent('FlemmaApprovalNeeded');
    const pending = await driver.lines(buf);
    expect(pending[3]).toBe('@Assistant:');
    // Its thinking first, where it happened, then the labelled text.
    expect(pending.slice(4, 8)).toEqual([
      '',
      '<thinking>',
      'This is the demo provider: the reasoning of a real model would appear here.',
      '</thinking>',
    ]);
    expect(pending[8]).toBe('');
    expect(pending[9]).toMatch(/^\[Offline demo provider: this reply is scripted\./);
    expect(
      pending.some((line) => /^\*\*Tool Use:\*\* `calculator` \(`demo_\w+`\)$/.test(line)),
    ).toBe(true);
    expect(pending).toContain('{"expression":"6 * 7"}');
    expect(pending).toContain('```flemma:tool status=pending');
    const tree = await driver.lua<{ messages: { role: string }[]; diagnostics: unknown[] }>(
      `local done, result
      require("flemma.host").call("buffer:tree", { bufnr = ... }, function(err, res) done, result = true, err or res end)
      vim.wait(5000, function() return done end, 5)
      return result`,
      buf,
    );
    expect(tree.messages.map((m) => m.role)).toEqual(['You', 'Assistant', 'You']);
    expect(tree.diagnostics).toEqual([]);
    const marks = await driver.waitForExtmarks('flemma_tool_preview');
    expect(JSON.stringify(marks[0]?.[3]['virt_lines'])).toContain('calculator: 6 * 7');
    // The cursor waits on the pending call; <M-CR> runs the calculator, and autopilot sends
    // the result back.
    const cursor = await driver.lua<number>('return vim.api.nvim_win_get_cursor(0)[1]');
    expect(pending[cursor - 1]).toMatch(/^\*\*Tool Result:\*\* `demo_\w+`$/);
    const before = driver.eventCount;
    await driver.press('<M-CR>');
    await driver.waitForEvent('FlemmaToolCompleted', { after: before });
    await driver.waitForEvent('FlemmaRequestFinished', { after: before });
    const final = (await driver.lines(buf)).join('\n');
    expect(final).toMatch(/\*\*Tool Result:\*\* `demo_\w+`\n\n```\n42\n```\n\n@Assistant:\n/);
    expect(final).toContain('The calculator tool returned "42".');
    expect(final.endsWith('@You:\n')).toBe(true);

    // A next question with no tool in it gets a reply about that question, not about a tool.
    const asked = driver.eventCount;
    await driver.press('G');
    await driver.type('AWhat is your name?');
    await driver.press('<Esc><C-]>');
    await driver.waitForEvent('FlemmaRequestFinished', { after: asked });
    const next = (await driver.lines(buf)).join('\n');
    const reply = next.slice(next.lastIndexOf('@Assistant:'));
    expect(reply).toContain('You asked: "What is your name?"');
    expect(reply).not.toMatch(/Tool Use|returned|tool result/);
  });
});

describe('what a replayed tool cycle looks like on the wire', () => {
  const CYCLE = [
    '@You:',
    'Compute it.',
    '',
    '@Assistant:',
    'Computing.',
    '',
    '**Tool Use:** `calculator` (`call_1`)',
    '',
    '```json',
    '{"expression":"6 * 7"}',
    '```',
    '',
    '@You:',
    '**Tool Result:** `call_1`',
    '',
    '```',
    '42',
    '```',
    '',
    '@Assistant:',
    'It is 42.',
    '',
    '@You:',
    'Thanks.',
  ];

  it('Moonshot gets the tool name in each tool message', async () => {
    const { d: driver, f: fake } = await launch({
      key: false,
      env: { MOONSHOT_API_KEY: 'sk-moonshot-test' },
      setup: (fake) =>
        `require("flemma").setup({ provider = "moonshot", parameters = { moonshot = { base_url = "${fake.url}/v1" } } })`,
    });
    await driver.openChat('m.chat', CYCLE);
    await driver.press('<C-]>');
    const request = await fake.nextRequest({ path: /^\/v1\/chat\/completions/ });
    const body = request.body as { messages: Record<string, unknown>[] };
    expect(body.messages.filter((message) => message['role'] === 'tool')).toEqual([
      { content: '42', name: 'calculator', role: 'tool', tool_call_id: 'call_1' },
    ]);
    await request.respondError(400, { error: { message: 'enough', type: 'invalid_request' } });
    await driver.waitForEvent('FlemmaRequestFinished');
  });

  it.each([
    [
      'by default',
      '',
      [
        { id: 'msg_1_1', phase: 'commentary' },
        { id: 'msg_2_1', phase: 'final_answer' },
      ],
    ],
    [
      'with phase labels off',
      'experimental = { phase = false }, ',
      [{ id: 'msg_1_1' }, { id: 'msg_2_1' }],
    ],
  ])(
    'OpenAI gets the assistant items with their ids and phases %s',
    async (_when, option, expected) => {
      const { d: driver, f: fake } = await launch({
        key: false,
        env: { OPENAI_API_KEY: 'sk-openai-test' },
        setup: (fake) =>
          `require("flemma").setup({ provider = "openai", parameters = { openai = { ${option}base_url = "${fake.url}/v1" } } })`,
      });
      await driver.openChat('o.chat', CYCLE);
      await driver.press('<C-]>');
      const request = await fake.nextRequest({ path: /^\/v1\/responses/ });
      const body = request.body as { input: Record<string, unknown>[] };
      const items = body.input
        .filter((item) => item['type'] === 'message' && item['role'] === 'assistant')
        .map((item) => {
          const kept: Record<string, unknown> = { id: item['id'] };
          if ('phase' in item) kept['phase'] = item['phase'];
          return kept;
        });
      expect(items).toEqual(expected);
      await request.respondError(400, { error: { message: 'enough', type: 'invalid_request' } });
      await driver.waitForEvent('FlemmaRequestFinished');
    },
  );
});

describe('the output limit a send asks for', () => {
  it.each([
    ['half the default model limit by default', '', 64_000],
    ['half the chosen model limit', 'model = "claude-opus-4-1", ', 16_000],
    ['a percentage of the model limit', 'parameters = { max_tokens = "25%" }, ', 32_000],
    ['the number the user set', 'parameters = { max_tokens = 3000 }, ', 3000],
    [
      "the provider's own number first",
      'parameters = { max_tokens = 3000, anthropic = { max_tokens = 1234 } }, ',
      1234,
    ],
  ])('is %s', async (_what, options, expected) => {
    const { d: driver, f: fake } = await launch({
      key: 'sk-ant-test',
      setup: `require("flemma").setup({ ${options}provider = "anthropic" })`,
    });
    await driver.openChat('l.chat', ['@You:', 'Hello']);
    await driver.press('<C-]>');
    const request = await fake.nextRequest({ path: /^\/v1\/messages/ });
    expect((request.body as { max_tokens: number }).max_tokens).toBe(expected);
    await request.respondError(400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'enough' },
    });
    await driver.waitForEvent('FlemmaRequestFinished');
  });
});
