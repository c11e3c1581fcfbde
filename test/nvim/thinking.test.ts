// Thinking where it happened (docs/chat-format.md, "Thinking"): whichever provider streams it
// (Anthropic thinking and redacted thinking, OpenAI reasoning summaries, Gemini thought parts),
// the thinking block is written above the answer it preceded, even when the provider hands it
// over (with its signature) only after the answer; its fold line shows its first words, never the
// signature; and it goes back to its provider byte for byte, signature and all.
import { describe, expect, it } from 'vitest';
import { MESSAGE_START, endMessage, textDeltas } from '../helpers/anthropic-script.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeRequest, type FakeStream } from '../helpers/fake-provider.js';

const launch = launcher();

const THOUGHT = 'Compare the two numbers first.';
const ANSWER = 'Seven is larger.';

let sequence = 0;
const responsesEvent = (type: string, fields: Record<string, unknown>): [string, unknown] => [
  type,
  { type, sequence_number: ++sequence, ...fields },
];
const REASONING = { id: 'rs_1', type: 'reasoning', encrypted_content: 'gAAAAenc' };

interface Case {
  provider: string;
  env: (url: string) => Record<string, string>;
  path: RegExp;
  /** Streams the thinking, then the answer; the provider's signature may come last. */
  reply: (stream: FakeStream) => Promise<void>;
  /** The reply's lines under `@Assistant:`. */
  lines: (string | RegExp)[];
  /** The thinking as the next request sends it back. */
  sentBack: (request: FakeRequest) => void;
}

const CASES: Case[] = [
  {
    provider: 'anthropic',
    env: (url) => ({ ANTHROPIC_API_KEY: 'sk-ant', ANTHROPIC_BASE_URL: url }),
    path: /^\/v1\/messages$/,
    async reply(stream) {
      await stream.sse('message_start', MESSAGE_START);
      const block = (index: number, content: object): Promise<void> =>
        stream.sse('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: content,
        });
      const delta = (index: number, value: object): Promise<void> =>
        stream.sse('content_block_delta', { type: 'content_block_delta', index, delta: value });
      const stop = (index: number): Promise<void> =>
        stream.sse('content_block_stop', { type: 'content_block_stop', index });
      await block(0, { type: 'thinking', thinking: '', signature: '' });
      await delta(0, { type: 'thinking_delta', thinking: THOUGHT });
      await delta(0, { type: 'signature_delta', signature: 'EqQBCkgIBxsig' });
      await stop(0);
      await block(1, { type: 'redacted_thinking', data: 'b3BhcXVl' });
      await stop(1);
      await textDeltas(stream, [ANSWER], 2);
      await endMessage(stream, { index: 2 });
    },
    lines: [
      '<thinking anthropic:signature="EqQBCkgIBxsig">',
      THOUGHT,
      '</thinking>',
      '<thinking redacted>',
      'b3BhcXVl',
      '</thinking>',
    ],
    sentBack(request) {
      const body = request.body as { messages: { content: unknown }[] };
      expect(body.messages[1]?.content).toEqual([
        { type: 'thinking', thinking: THOUGHT, signature: 'EqQBCkgIBxsig' },
        { type: 'redacted_thinking', data: 'b3BhcXVl' },
        { type: 'text', text: ANSWER },
      ]);
    },
  },
  {
    provider: 'openai',
    env: (url) => ({ OPENAI_API_KEY: 'sk-openai', OPENAI_BASE_URL: `${url}/v1` }),
    path: /^\/v1\/responses$/,
    async reply(stream) {
      const response = (status: string): object => ({
        id: 'resp_1',
        object: 'response',
        model: 'gpt-5.4',
        status,
        output: [],
      });
      for (const [type, event] of [
        responsesEvent('response.created', { response: response('in_progress') }),
        responsesEvent('response.output_item.added', {
          output_index: 0,
          item: { ...REASONING, summary: [] },
        }),
        responsesEvent('response.reasoning_summary_text.delta', {
          item_id: 'rs_1',
          output_index: 0,
          summary_index: 0,
          delta: THOUGHT,
        }),
        responsesEvent('response.output_item.done', {
          output_index: 0,
          item: { ...REASONING, summary: [{ type: 'summary_text', text: THOUGHT }] },
        }),
        responsesEvent('response.output_text.delta', {
          item_id: 'msg_1',
          output_index: 1,
          content_index: 0,
          delta: ANSWER,
        }),
        responsesEvent('response.completed', { response: response('completed') }),
      ]) {
        await stream.sse(type, event);
      }
      await stream.end();
    },
    lines: [/^<thinking openai:signature="[A-Za-z0-9+/=]+">$/, THOUGHT, '</thinking>'],
    sentBack(request) {
      const body = request.body as { input: Record<string, unknown>[] };
      expect(body.input).toContainEqual(expect.objectContaining(REASONING));
    },
  },
  {
    provider: 'gemini',
    env: () => ({ GEMINI_API_KEY: 'gemini-key' }),
    path: /:streamGenerateContent/,
    async reply(stream) {
      const chunk = (parts: object[], end = {}): Promise<void> =>
        stream.sse(undefined, { candidates: [{ content: { role: 'model', parts }, ...end }] });
      await chunk([{ text: THOUGHT, thought: true }]);
      await chunk([{ text: ANSWER }]);
      // The thought's signature comes with the last part, after the answer.
      await chunk([{ text: '', thoughtSignature: 'Cg0sig' }], { finishReason: 'STOP' });
      await stream.end();
    },
    lines: ['<thinking gemini:signature="Cg0sig">', THOUGHT, '</thinking>'],
    sentBack(request) {
      const body = request.body as { contents: { parts: unknown[] }[] };
      expect(body.contents[1]?.parts).toEqual([{ text: ANSWER, thoughtSignature: 'Cg0sig' }]);
    },
  },
];

describe.each(CASES)('thinking from $provider', (c) => {
  it('is written above the answer it preceded, folds to its first words, and goes back with its signature', async () => {
    const { d, f } = await launch({
      key: false,
      env: (fake) => c.env(fake.url),
      setup: (fake) =>
        `require("flemma").setup({ provider = "${c.provider}", parameters = { gemini = { base_url = "${fake.url}" } } })`,
    });
    const buf = await d.openChat('thinking.chat', ['@You:', 'Which is larger, 7 or 5?']);
    await d.press('<C-]>');
    await c.reply((await f.nextRequest({ path: c.path })).stream());
    await d.waitForEvent('FlemmaRequestFinished');
    const lines = await d.lines(buf);
    const reply = lines.slice(4);
    expect(lines[3]).toBe('@Assistant:');
    const thinking = c.lines.map((l): unknown =>
      typeof l === 'string' ? l : expect.stringMatching(l),
    );
    expect(reply).toEqual(['', ...thinking, '', ANSWER, '', '@You:', '']);
    // The closed fold of the thinking block: its first words, never the signature.
    await d.waitUntil('return vim.fn.foldclosed(6) == 6');
    const folds = await d.lua<string[]>(
      'local out = {} for l = 6, vim.fn.line("$") do if vim.fn.foldclosed(l) == l then out[#out + 1] = vim.fn.foldtextresult(l) end end return out',
    );
    expect(folds[0]).toBe(`<thinking> ${THOUGHT} (3 lines)`);
    if (c.provider === 'anthropic') expect(folds[1]).toBe('<thinking redacted> (3 lines)');
    expect(folds.join('\n')).not.toContain('signature');
    // The next request sends the thinking back as it came.
    await d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "And 3?" })');
    await d.press('<C-]>');
    c.sentBack(await f.nextRequest({ path: c.path }));
  });
});
