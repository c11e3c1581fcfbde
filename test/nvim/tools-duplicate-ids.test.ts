// Two tool uses with one id (issue 19): the second gets a diagnostic naming the id and the first
// one's line; <C-]> runs only the first, answers the second with a "duplicate tool id" error
// result under a derived id, and the request never carries two tool uses with one id, through
// Anthropic (a model's mistake, streamed) and OpenAI (a hand edit). The rules: tool-ids.ts.
import { describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeRequest } from '../helpers/fake-provider.js';
import { toolResult } from '../helpers/chat-lines.js';

const launch = launcher();

const TOOLS = '{ "calculator", autopilot = false, auto_approve = { "calculator" } }';
const DUPLICATE_TEXT =
  'Duplicate tool id SAME_1: an earlier tool call (line LINE of the chat) already has this id, so this call was not run. Call the tool again with a new id if it is still needed.';

/** Streams an Anthropic reply holding two calculator calls that share one id. */
function replyTwice(request: FakeRequest): Promise<void> {
  return anthropicReply(
    request,
    '',
    ['1 + 1', '2 + 2'].map((expression) => ({
      id: 'SAME_1',
      name: 'calculator',
      input: { expression },
    })),
  );
}

/** Waits for the buffer's diagnostics to include one that mentions `text`; returns them. */
async function diagnosticsWith(
  d: Driver,
  bufnr: number,
  text: string,
): Promise<{ lnum: number; message: string; code: string }[]> {
  return d.lua(
    `local bufnr, text = ...
    local found
    vim.wait(10000, function()
      found = vim.diagnostic.get(bufnr)
      for _, item in ipairs(found) do
        if item.message:find(text, 1, true) then return true end
      end
      return false
    end, 5)
    return found`,
    bufnr,
    text,
  );
}

/** The run of the second tool use: its diagnostic, one run, its error result in the buffer. */
async function runTheCycle(
  d: Driver,
  buf: number,
  firstLine: number,
  secondLine: number,
): Promise<string[]> {
  const diagnostics = await diagnosticsWith(d, buf, 'SAME_1 is already used');
  expect(diagnostics.filter((x) => x.code === 'tool-use-duplicate-id')).toEqual([
    expect.objectContaining({
      lnum: secondLine - 1,
      message: `Tool use id SAME_1 is already used by the tool use on line ${String(firstLine)}; this one is not run and is answered as SAME_1_dup2 with an error result`,
    }),
  ]);
  await d.press('<C-]>');
  const completed = await d.waitForEvent('FlemmaToolCompleted');
  expect(completed.data).toMatchObject({ tool_id: 'SAME_1', status: 'success' });
  return d.lines(buf);
}

describe('two tool uses with the same id', () => {
  it('Anthropic: the repeat gets a diagnostic and an error result, and is sent under its own id', async () => {
    const { d: driver, f: fake } = await launch({
      setup: `require("flemma").setup({ tools = ${TOOLS} })`,
    });
    const d = driver;
    const buf = await d.openChat('dup.chat', ['@You:', 'Add twice.']);
    await d.press('<C-]>');
    await replyTwice(await fake.nextRequest({ path: '/v1/messages' }));
    await d.waitForEvent('FlemmaRequestFinished');
    const lines = await d.lines(buf);
    const first = lines.indexOf('**Tool Use:** `calculator` (`SAME_1`)') + 1;
    const second = lines.lastIndexOf('**Tool Use:** `calculator` (`SAME_1`)') + 1;
    expect(second).toBeGreaterThan(first);
    await runTheCycle(d, buf, first, second);
    // The next <C-]> sends: one step at a time, so the error result is written by now.
    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    const after = await d.lines(buf);
    const at = after.indexOf('**Tool Result:** `SAME_1_dup2` (error)');
    expect(at).toBeGreaterThan(0);
    expect(after.slice(at, at + 5)).toEqual(
      toolResult('SAME_1_dup2', [DUPLICATE_TEXT.replace('LINE', String(first))], true),
    );
    expect(after).toContain('**Tool Result:** `SAME_1`');
    // Only the first one ran.
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(1);
    type Block = { type: string; id?: string; tool_use_id?: string; is_error?: boolean };
    const messages = (request.body as { messages: { role: string; content: Block[] | string }[] })
      .messages;
    const blocks = messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content));
    const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id);
    expect(uses).toEqual(['SAME_1', 'SAME_1_dup2']);
    const results = blocks.filter((b) => b.type === 'tool_result');
    expect(results.map((b) => [b.tool_use_id, b.is_error === true])).toEqual([
      ['SAME_1', false],
      ['SAME_1_dup2', true],
    ]);
    expect(JSON.stringify(results[1])).toContain('Duplicate tool id SAME_1');
  });

  it('OpenAI: a hand-edited chat with a repeated id sends one call per id, each with its output', async () => {
    const { d: driver, f: fake } = await launch({
      key: false,
      env: { OPENAI_API_KEY: 'sk-openai-test' },
      config: (fake) =>
        `{ provider = "openai", parameters = { openai = { base_url = "${fake.url}/v1" } }, tools = ${TOOLS} }`,
    });
    const d = driver;
    const use = (expression: string): string[] => [
      '**Tool Use:** `calculator` (`SAME_1`)',
      '',
      '```json',
      JSON.stringify({ expression }),
      '```',
    ];
    const buf = await d.openChat('dup-openai.chat', [
      '@You:',
      'Add twice.',
      '',
      '@Assistant:',
      ...use('1 + 1'),
      ...use('2 + 2'),
    ]);
    const lines = await runTheCycle(d, buf, 5, 10);
    expect(lines).toContain('**Tool Result:** `SAME_1`');
    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: /^\/v1\/responses/ });
    const after = await d.lines(buf);
    expect(after).toContain('**Tool Result:** `SAME_1_dup2` (error)');
    expect(after).toContain(DUPLICATE_TEXT.replace('LINE', '5'));
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(1);
    type Item = { type?: string; call_id?: string; output?: unknown };
    const input = (request.body as { input: Item[] }).input;
    const calls = input.filter((item) => item.type === 'function_call').map((i) => i.call_id);
    expect(calls).toEqual(['SAME_1', 'SAME_1_dup2']);
    const outputs = input.filter((item) => item.type === 'function_call_output');
    expect(outputs.map((item) => item.call_id)).toEqual(['SAME_1', 'SAME_1_dup2']);
    expect(JSON.stringify(outputs[1]?.output)).toContain('Duplicate tool id SAME_1');
  });
});
