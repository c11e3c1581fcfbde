// `:Flemma tool:undo` end to end (docs/tools.md, "Undo and review"): a `write` or `edit` that ran
// is undone from its result, the file gets back what it held (or goes away when the call created
// it), the result is marked `(undone)`, and an undo is refused when the file changed since.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { type Driver, startDriver } from '../helpers/driver.js';

let driver: Driver | undefined;

afterEach(async () => {
  await driver?.quit();
  driver = undefined;
});

function toolUse(name: string, id: string, input: unknown): string[] {
  return [`**Tool Use:** \`${name}\` (\`${id}\`)`, '', '```json', JSON.stringify(input), '```'];
}

const SETUP = 'require("flemma").setup({ tools = { autopilot = false } })';

/** Opens a chat whose reply holds `uses`, runs each call with <M-CR>, waits for its result. */
async function runCalls(d: Driver, uses: string[][]): Promise<void> {
  await d.openChat('undo.chat', ['@You:', 'Change the files.', '', '@Assistant:', ...uses.flat()]);
  await d.waitForEvent('FlemmaBootComplete');
  for (const use of uses) {
    const id = /\(`([^`]+)`\)/.exec(use[0] ?? '')?.[1] ?? '';
    const row = (await d.lines()).findIndex((line) => line === use[0]) + 1;
    const count = d.eventCount;
    await d.command(`normal! ${String(row)}G`);
    await d.press('<M-CR>');
    const done = await d.waitForEvent('FlemmaToolCompleted', { after: count });
    expect(done.data['tool_id']).toBe(id);
    expect(done.data['status']).toBe('success');
  }
}

/** Puts the cursor on the result header of `id` and runs `:Flemma tool:undo`. */
async function undo(d: Driver, id: string): Promise<void> {
  const row = (await d.lines()).findIndex((line) => line.startsWith(`**Tool Result:** \`${id}\``));
  expect(row).toBeGreaterThanOrEqual(0);
  await d.command(`normal! ${String(row + 1)}G`);
  await d.press(':Flemma tool:undo<CR>');
}

describe(':Flemma tool:undo', () => {
  it('restores what an edit changed and removes what a write created, and marks each result', async () => {
    driver = await startDriver({ setup: SETUP });
    const d = driver;
    const notes = d.writeFile('notes.txt', 'one\ntwo\nthree\n');
    await runCalls(d, [
      toolUse('edit', 'toolu_E1', {
        label: 'fix',
        path: 'notes.txt',
        oldText: 'two',
        newText: 'TWO',
      }),
      toolUse('write', 'toolu_W1', { label: 'new', path: 'sub/new.txt', content: 'fresh\n' }),
    ]);
    const created = notes.replace(/notes\.txt$/, 'sub/new.txt');
    expect(readFileSync(notes, 'utf8')).toBe('one\nTWO\nthree\n');
    expect(readFileSync(created, 'utf8')).toBe('fresh\n');

    await undo(d, 'toolu_E1');
    await d.waitForNotification(/Undid edit \(toolu_E1\)/);
    expect(readFileSync(notes, 'utf8')).toBe('one\ntwo\nthree\n');
    await d.waitUntil('return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), ...)', {
      args: ['**Tool Result:** `toolu_E1` (undone)'],
    });

    await undo(d, 'toolu_W1');
    await d.waitForNotification(/Undid write \(toolu_W1\)/);
    expect(existsSync(created)).toBe(false);
    const lines = await d.lines();
    expect(lines).toContain('**Tool Result:** `toolu_W1` (undone)');

    // A second undo of the same call is refused, and the header keeps one mark.
    const count = d.notifications().length;
    await undo(d, 'toolu_E1');
    await d.waitForNotification(/toolu_E1\) is already undone/, { after: count });
    expect((await d.lines()).filter((line) => line.includes('(undone)'))).toHaveLength(2);

    // The mark survives a write and a reload of the chat, and the parser keeps it.
    await d.command('write');
    await d.command('edit!');
    expect(await d.lines()).toContain('**Tool Result:** `toolu_E1` (undone)');
  });

  it('refuses when the file changed since the call, and leaves file and result alone', async () => {
    driver = await startDriver({ setup: SETUP });
    const d = driver;
    const notes = d.writeFile('notes.txt', 'alpha\nbeta\n');
    await runCalls(d, [
      toolUse('edit', 'toolu_E2', {
        label: 'fix',
        path: 'notes.txt',
        oldText: 'beta',
        newText: 'BETA',
      }),
    ]);
    writeFileSync(notes, 'alpha\nBETA\ngamma by hand\n');
    await undo(d, 'toolu_E2');
    const note = await d.waitForNotification(/Cannot undo toolu_E2/);
    expect(note.message).toContain('notes.txt changed since the call ran');
    expect(note.message).toContain(':diffsplit');
    expect(readFileSync(notes, 'utf8')).toBe('alpha\nBETA\ngamma by hand\n');
    expect((await d.lines()).some((line) => line.includes('(undone)'))).toBe(false);
  });
});
