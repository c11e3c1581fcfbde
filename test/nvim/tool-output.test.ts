// Watching a command run (docs/tools.md, "Watching a command run"): while a bash call runs, the
// last lines it printed show as virtual lines under its block, cleaned of escapes; they go when
// the result is written or the call is cancelled; `:Flemma tool:output` opens what it printed.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

const launch = neovimLauncher();

/** A command that prints two lines (the second in colour), then waits for the test's word. */
const GATED =
  "mkfifo gate && echo 'first line' && printf '\\033[31mred\\033[0m\\n' && read x < gate && echo \"got $x\"";

type Mark = [number, number, number, Record<string, unknown>];

/** The text of each virtual line of the view's marks. */
function shown(marks: Mark[]): string[] {
  return marks.flatMap((mark) =>
    ((mark[3]['virt_lines'] ?? []) as [string, string][][]).map((line) =>
      line.map((chunk) => chunk[0]).join(''),
    ),
  );
}

/** A chat whose last message is a bash call of `command`, run with <M-CR>; its buffer number. */
async function runBash(d: Driver, command: string): Promise<number> {
  const input = JSON.stringify({ label: 'watch', command, timeout: null });
  const bufnr = await d.openChat('watch.chat', [
    '@You:',
    'Run it.',
    '',
    '@Assistant:',
    '**Tool Use:** `bash` (`toolu_W`)',
    '',
    '```json',
    input,
    '```',
  ]);
  await d.waitForEvent('FlemmaBootComplete');
  await d.command('normal! 5G');
  await d.press('<M-CR>');
  await d.waitForEvent('FlemmaToolExecuting');
  return bufnr;
}

/** Wait until the view under the block shows its last line, `red`; the marks. */
function waitForRed(d: Driver): Promise<Mark[]> {
  return d.waitForExtmarks('flemma.tool_output', {
    until: `#marks == 1 and vim.inspect(marks[1][4].virt_lines):find("red", 1, true) ~= nil`,
  });
}

async function setup(): Promise<Driver> {
  return launch({ setup: 'require("flemma").setup({ tools = { autopilot = false } })' });
}

describe('a running command shows what it printed', () => {
  it('under its block while it runs, in :Flemma tool:output, and not once its result is in', async () => {
    const d = await setup();
    const bufnr = await runBash(d, GATED);
    const marks = await waitForRed(d);
    // Below the placeholder, cleaned of its escape sequences, never part of the text.
    expect(shown(marks)).toEqual(['  │ first line', '  │ red']);
    const lines = await d.lines();
    const placeholder = lines.lastIndexOf('```flemma:tool status=approved');
    expect(lines.slice(placeholder)).toEqual(['```flemma:tool status=approved', '```']);
    expect(marks[0]?.[1]).toBe(placeholder + 1);

    await d.command('Flemma tool:output');
    await d.waitUntil('return vim.fn.bufnr("flemma://tool-output") ~= -1');
    const scratch = await d.lua<string[]>(
      'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://tool-output"), 0, -1, false)',
    );
    expect(scratch).toEqual(['bash (toolu_W) runs; its output so far:', '', 'first line', 'red']);
    await d.command('close');

    const count = d.eventCount;
    await writeFile(join(d.home, 'work', 'gate'), 'go\n');
    const done = await d.waitForEvent('FlemmaToolCompleted', { after: count });
    expect(done.data['status']).toBe('success');
    expect((await d.lines(bufnr)).join('\n')).toContain('got go');
    expect(await d.extmarks('flemma.tool_output', bufnr)).toEqual([]);
  });

  it(':Flemma tool:output opens the whole output so far, beyond what the view reads', async () => {
    const d = await setup();
    // 20,000 numbered lines (108,894 bytes: more than the view's 64 KB tail), then the gate.
    await runBash(d, `seq 1 20000 && ${GATED}`);
    await waitForRed(d);
    await d.command('Flemma tool:output');
    await d.waitUntil('return vim.fn.bufnr("flemma://tool-output") ~= -1');
    const scratch = await d.lua<string[]>(
      'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://tool-output"), 0, -1, false)',
    );
    expect(scratch.slice(0, 4)).toEqual(['bash (toolu_W) runs; its output so far:', '', '1', '2']);
    expect(scratch.slice(-3)).toEqual(['20000', 'first line', 'red']);
    expect(scratch).toHaveLength(20004);
    await d.command('close');
    await writeFile(join(d.home, 'work', 'gate'), 'go\n');
    await d.waitForEvent('FlemmaToolCompleted');
  });

  it('goes as <C-c> cancels the call', async () => {
    const d = await setup();
    await runBash(d, GATED);
    await waitForRed(d);
    await d.press('<C-c>');
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data['status']).toBe('error');
    expect(await d.extmarks('flemma.tool_output')).toEqual([]);
  });

  it("lines that arrive before the call's placeholder is written wait for it", async () => {
    const d = await setup();
    const bufnr = await d.openChat('early.chat', [
      '@You:',
      'Run it.',
      '',
      '@Assistant:',
      '**Tool Use:** `bash` (`toolu_E`)',
      '',
      '```json',
      '{"command":"true"}',
      '```',
    ]);
    // What the host sends when a command prints before `<M-CR>`'s placeholder is in the buffer.
    await d.lua(
      'require("flemma.tools.output").show({ bufnr = ..., outputs = { { tool_id = "toolu_E", lines = { "early" } } } })',
      bufnr,
    );
    expect(await d.extmarks('flemma.tool_output')).toEqual([]);
    await d.lua(
      'vim.api.nvim_buf_set_lines(0, -1, -1, false, { "", "@You:", "", "**Tool Result:** `toolu_E`", "", "```flemma:tool status=approved", "```" })',
    );
    const marks = await d.waitForExtmarks('flemma.tool_output');
    expect(shown(marks)).toEqual(['  │ early']);
    expect(marks[0]?.[1]).toBe((await d.lines()).length - 1);
  });

  it(':Flemma tool:output opens the whole saved output of a call whose result was cut', async () => {
    const d = await setup();
    await runBash(d, 'seq 1 5000');
    await d.waitForEvent('FlemmaToolCompleted');
    await d.command('normal! 5G');
    await d.command('Flemma tool:output');
    await d.waitUntil('return vim.fn.bufnr("flemma://tool-output") ~= -1');
    const scratch = await d.lua<string[]>(
      'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://tool-output"), 0, -1, false)',
    );
    expect(scratch[0]).toMatch(
      /^bash \(toolu_W\): its whole output \(saved in .*flemma_bash_toolu_W\.txt\):$/,
    );
    expect(scratch.slice(2)).toEqual(Array.from({ length: 5000 }, (_, i) => String(i + 1)));
  });
});
