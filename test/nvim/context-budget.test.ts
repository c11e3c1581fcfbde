// `context.budget`, end to end (docs/context.md, "Budget and elision"): a long chat sent over its
// budget reaches the provider with its old large tool results as stubs, the buffer and the file
// as they were, and `:Flemma status` listing what was elided.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ELIDE_DEFAULTS } from '../../src/core/context/budget.js';
import { estimateText } from '../../src/core/context/estimate.js';
import { anthropicMessages, anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher, statusLines } from '../helpers/e2e.js';
import { type FakeProvider } from '../helpers/fake-provider.js';

const launch = launcher();

async function start(setup: string): Promise<{ d: Driver; f: FakeProvider }> {
  const { d: driver, f: fake } = await launch({
    setup: `require("flemma").setup(${setup})`,
  });
  return { d: driver, f: fake };
}

/** A long agent session: `rounds` reads of a 16 KB file each, then your question. */
function session(rounds: number): string[] {
  const lines = ['@You:', 'Read the sources.', ''];
  for (let index = 0; index < rounds; index++) {
    const id = `toolu_${String(index).padStart(2, '0')}`;
    lines.push(
      '@Assistant:',
      `Reading file ${String(index)}.`,
      '',
      `**Tool Use:** \`read\` (\`${id}\`)`,
      '',
      '```json',
      `{"path":"src/f${String(index)}.ts"}`,
      '```',
      '',
      '@You:',
      `**Tool Result:** \`${id}\``,
      '',
      '```',
      // 200 lines of 80 bytes: 16,000 bytes, ≈4,600 tokens.
      ...Array.from({ length: 200 }, (_, row) =>
        `// f${String(index)} line ${String(row).padStart(3, '0')} `.padEnd(79, '.'),
      ),
      '```',
      '',
    );
  }
  lines.push('@Assistant:', 'All read.', '', '@You:', 'Which file defines main?');
  return lines;
}

type Block = { type: string; tool_use_id?: string; content?: unknown };

/** The tool results of an Anthropic request body, by id. */
function results(request: Parameters<typeof anthropicMessages>[0]): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const message of anthropicMessages(request)) {
    if (typeof message.content === 'string') continue;
    for (const block of message.content as Block[]) {
      if (block.type === 'tool_result') out.set(String(block.tool_use_id), block.content);
    }
  }
  return out;
}

describe('a send over context.budget', () => {
  it('arrives under the budget with stubs for old large results; the chat is untouched', async () => {
    const budget = 20_000;
    const { d, f } = await start(
      `{ context = { budget = ${String(budget)}, elide = { keep_turns = 2 } } }`,
    );
    const lines = session(10);
    const buf = await d.openChat('long.chat', lines);
    const file = readFileSync(`${d.home}/work/long.chat`, 'utf8');
    await d.command('Flemma send');
    const request = await f.nextRequest({ path: '/v1/messages' });
    const sent = results(request);
    expect([...sent.keys()]).toHaveLength(10);
    // The oldest results went as stubs, in a block; the last two turns' results are whole.
    const stubbed = [...sent.entries()].filter(
      ([, content]) => typeof content === 'string' && content.endsWith('the chat file has it]'),
    );
    expect(stubbed.length).toBeGreaterThanOrEqual(3);
    stubbed.forEach(([id, content], index) => {
      expect(id).toBe(`toolu_${String(index).padStart(2, '0')}`);
      expect(content).toBe(
        `[result of read src/f${String(index)}.ts elided: 16 KB; the chat file has it]`,
      );
    });
    expect(String(sent.get('toolu_09'))).toContain('// f9 line 199');
    expect(String(sent.get('toolu_08'))).toContain('// f8 line 199');
    // Under the budget by the same estimate (the body's own bytes, JSON keys and all).
    expect(estimateText(request.rawBody)).toBeLessThan(budget);
    expect(estimateText(file)).toBeGreaterThan(budget);
    await anthropicReply(request, 'src/f3.ts.');
    await d.waitForEvent('FlemmaRequestFinished');
    // The buffer still holds every result in full, and the file on disk is as it was.
    const after = await d.lines(buf);
    expect(after.slice(0, lines.length)).toEqual(lines);
    expect(readFileSync(`${d.home}/work/long.chat`, 'utf8')).toBe(file);
    // `:Flemma status` lists what the last request elided.
    const status = await statusLines(d);
    expect(status).toContain(
      `context budget: 20,000 tokens; elision spares the last 2 turns and results under 4 KB, and goes down to 70% of the budget`,
    );
    const summary = status.find((line) => line.startsWith('last request:'));
    expect(summary).toMatch(
      new RegExp(
        `^last request: ≈[\\d,]+ tokens of 20,000 \\(≈[\\d,]+ whole\\); elided ${String(stubbed.length)} tool results, \\d+ KB:$`,
      ),
    );
    expect(status).toContain('  [result of read src/f0.ts elided: 16 KB; the chat file has it]');
    expect(d.notifications().some((note) => note.message.includes('over context.budget'))).toBe(
      false,
    );
  });

  it('without a budget, elides only what would not fit the window, and says so once', async () => {
    // A 40,000-token window with the reply's 8,192 (`max_tokens`) leaves 31,808 for the input.
    const { d, f } = await start(
      '{ context = { window = 40000, elide = { keep_turns = 2 } }, parameters = { max_tokens = 8192 } }',
    );
    const small = session(4);
    const buf = await d.openChat('fits.chat', small);
    await d.command('Flemma send');
    const first = await f.nextRequest({ path: '/v1/messages' });
    // ≈18,000 tokens: under the window less the reply, so everything goes whole.
    expect(String(results(first).get('toolu_00'))).toContain('// f0 line 199');
    await anthropicReply(first, 'ok');
    await d.waitForEvent('FlemmaRequestFinished');
    expect(d.notifications().some((note) => note.message.includes('no longer fits'))).toBe(false);

    const long = session(10);
    await d.lua('vim.api.nvim_buf_set_lines(..., 0, -1, false, select(2, ...))', buf, long);
    await d.command('Flemma send');
    const second = await f.nextRequest({ path: '/v1/messages' });
    const sent = results(second);
    expect(String(sent.get('toolu_00'))).toBe(
      '[result of read src/f0.ts elided: 16 KB; the chat file has it]',
    );
    expect(String(sent.get('toolu_09'))).toContain('// f9 line 199');
    expect(estimateText(second.rawBody)).toBeLessThan(40_000 - 8192);
    const note = await d.waitForNotification(/no longer fits the model's window/);
    expect(note.message).toMatch(/\d+ old tool results went as stubs/);
    await anthropicReply(second, 'ok');
    await d.waitForEvent('FlemmaRequestFinished');
    expect((await d.lines(buf)).slice(0, long.length)).toEqual(long);
    const status = await statusLines(d);
    expect(status[status.findIndex((line) => line.startsWith('context budget:'))]).toMatch(
      /^context budget: 31,808 tokens \(automatic: the 40,000-token window, configured less 8,192 for the reply/,
    );
  });

  it('goes over the budget with a warning when the kept turns alone exceed it', async () => {
    const { d, f } = await start('{}');
    // Set by the chat's own frontmatter (JSON: Lua would need trust to run), in a file that is
    // not trusted: safe anywhere.
    await d.openChat('over.chat', [
      '```json',
      '{ "flemma": { "context": { "budget": 8000, "elide": { "keep_turns": 7 } } } }',
      '```',
      ...session(6),
    ]);
    await d.command('Flemma send');
    const request = await f.nextRequest({ path: '/v1/messages' });
    // Six reads and the closing reply are seven turns, all kept: everything goes whole.
    expect(String(results(request).get('toolu_00'))).toContain('// f0 line 199');
    const note = await d.waitForNotification(/over context\.budget 8,000/);
    expect(note.message).toContain('nothing could be elided');
    expect(note.message).toContain('context.elide.keep_turns');
    await anthropicReply(request, 'ok');
    await d.waitForEvent('FlemmaRequestFinished');
    const status = await statusLines(d);
    expect(status.some((line) => line.startsWith('  ! request ≈'))).toBe(true);
  });

  it("reads the schema's defaults", async () => {
    const { d } = await start('{}');
    expect(await d.lua('return require("flemma.config").defaults().context.elide')).toEqual(
      ELIDE_DEFAULTS,
    );
    expect(await d.lua('return require("flemma.config").defaults().context.budget')).toBeNull();
  });

  it('says what is wrong with a bad budget', async () => {
    const { d } = await start('{}');
    const validate = (opts: string): Promise<unknown> =>
      d.lua(`local ok, err = require("flemma.config").validate(${opts}) return err or vim.NIL`);
    expect(await validate('{ context = { budget = "lots" } }')).toBe(
      `flemma.setup: option 'context.budget' must be an integer >= 1, a percentage from "1%" to "100%" such as "60%" or false, got string "lots"`,
    );
    expect(await validate('{ context = { elide = { keep_turns = 0 } } }')).toBe(
      `flemma.setup: option 'context.elide.keep_turns' must be an integer >= 1, got number 0`,
    );
    expect(await validate('{ context = { budget = "60%", window = 64000 } }')).toBeNull();
  });
});
