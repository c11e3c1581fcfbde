// `:Flemma tool:undo` end to end (docs/tools.md, "Undo and review"): a `write` or `edit` that ran
// is undone from its result, the file gets back what it held (or goes away when the call created
// it), the result is marked `(undone)`, and an undo is refused when the file changed since.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';

const launch = launcher();

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

/** Neovim set up for the tests, with `notes.txt` holding `text`; the file's path. */
async function withNotes(text: string): Promise<{ d: Driver; notes: string }> {
  const { d } = await launch({ key: false, setup: SETUP });
  return { d, notes: d.writeFile('notes.txt', text) };
}

/** The model's call `id` editing `notes.txt`: `oldText` becomes `newText`. */
function fixNotes(id: string, oldText: string, newText: string): string[] {
  return toolUse('edit', id, { label: 'fix', path: 'notes.txt', oldText, newText });
}

describe(':Flemma tool:undo', () => {
  it('restores what an edit changed and removes what a write created, and marks each result', async () => {
    const { d, notes } = await withNotes('one\ntwo\nthree\n');
    await runCalls(d, [
      fixNotes('toolu_E1', 'two', 'TWO'),
      toolUse('write', 'toolu_W1', { label: 'new', path: 'sub/new.txt', content: 'fresh\n' }),
    ]);
    const created = notes.replace(/notes\.txt$/, 'sub/new.txt');
    expect(readFileSync(notes, 'utf8')).toBe('one\nTWO\nthree\n');
    expect(readFileSync(created, 'utf8')).toBe('fresh\n');
    // One record per call, in Neovim's state directory.
    const stored = await d.lua<string[]>(
      'return vim.fn.glob(vim.fn.stdpath("state") .. "/flemma/undo/*.json", false, true)',
    );
    expect(stored).toHaveLength(2);

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
    const { d, notes } = await withNotes('alpha\nbeta\n');
    await runCalls(d, [fixNotes('toolu_E2', 'beta', 'BETA')]);
    writeFileSync(notes, 'alpha\nBETA\ngamma by hand\n');
    await undo(d, 'toolu_E2');
    const note = await d.waitForNotification(/Cannot undo toolu_E2/);
    expect(note.message).toContain('notes.txt changed since the call ran');
    expect(note.message).toContain(':Flemma tool:diff');
    expect(readFileSync(notes, 'utf8')).toBe('alpha\nBETA\ngamma by hand\n');
    expect((await d.lines()).some((line) => line.includes('(undone)'))).toBe(false);
    // The diff it offers: what the file held before the call, beside the file now, to read only.
    const row = (await d.lines()).findIndex((line) =>
      line.startsWith('**Tool Result:** `toolu_E2`'),
    );
    await d.command(`normal! ${String(row + 1)}G`);
    await d.command('Flemma tool:diff');
    await d.waitUntil('return vim.fn.bufexists("flemma://now/notes.txt") == 1');
    expect(
      await d.lua(`local before, now = vim.fn.bufnr("flemma://before/notes.txt"), vim.fn.bufnr("flemma://now/notes.txt")
        return {
          vim.api.nvim_buf_get_lines(before, 0, -1, false),
          vim.api.nvim_buf_get_lines(now, 0, -1, false),
          vim.bo[now].modifiable,
          vim.wo.diff,
        }`),
    ).toEqual([['alpha', 'beta'], ['alpha', 'BETA', 'gamma by hand'], false, true]);
  });
});

interface QfItem {
  filename: string;
  lnum: number;
  text: string;
}

/** The quickfix list: title and items with their file names (relative to the work dir). */
async function quickfix(d: Driver): Promise<{ title: string; items: QfItem[] }> {
  return d.lua(`
    local info = vim.fn.getqflist({ title = 1, items = 1 })
    local items = {}
    for _, item in ipairs(info.items) do
      items[#items + 1] = { filename = vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ":t"), lnum = item.lnum, text = item.text }
    end
    return { title = info.title, items = items }`);
}

describe(':Flemma tool:undo and the sandbox', () => {
  it('writes through the policy in force: a path it no longer allows is refused', async () => {
    const { d: driver } = await launch({
      key: false,
      setup: `require("flemma").setup({
        tools = { autopilot = false },
        sandbox = { policy = { rw_paths = { "urn:flemma:cwd" } } },
      })`,
    });
    const d = driver;
    const outside = d.writeFile('../outside/keep.txt', 'keep\n');
    await d.openChat('undo.chat', ['@You:', 'Go.']);
    await d.press(':Flemma sandbox:disable<CR>');
    await d.waitForNotification(/[Ss]andbox/);
    await d.command('bwipeout!');
    await runCalls(d, [
      toolUse('write', 'toolu_S1', { label: 'w', path: '../outside/keep.txt', content: 'gone\n' }),
    ]);
    expect(readFileSync(outside, 'utf8')).toBe('gone\n');
    const count = d.notifications().length;
    await d.press(':Flemma sandbox:enable<CR>');
    await d.waitForNotification(/[Ss]andbox/, { after: count });
    await undo(d, 'toolu_S1');
    const note = await d.waitForNotification(/Cannot undo toolu_S1/);
    expect(note.message).toContain('Sandbox: write denied');
    expect(readFileSync(outside, 'utf8')).toBe('gone\n');
    expect((await d.lines()).some((line) => line.includes('(undone)'))).toBe(false);

    // Allowed again, the same undo goes through.
    await d.press(':Flemma sandbox:disable<CR>');
    await undo(d, 'toolu_S1');
    await d.waitForNotification(/Undid write \(toolu_S1\)/);
    expect(readFileSync(outside, 'utf8')).toBe('keep\n');
  });
});

describe('tools.undo', () => {
  it('enabled = false keeps nothing, and the undo says so', async () => {
    const { d: driver } = await launch({
      key: false,
      setup:
        'require("flemma").setup({ tools = { autopilot = false, undo = { enabled = false } } })',
    });
    const d = driver;
    const notes = d.writeFile('notes.txt', 'old\n');
    await runCalls(d, [
      toolUse('write', 'toolu_N1', { label: 'w', path: 'notes.txt', content: 'new\n' }),
    ]);
    await undo(d, 'toolu_N1');
    await d.waitForNotification(/Nothing kept to undo write \(toolu_N1\)/);
    expect(readFileSync(notes, 'utf8')).toBe('new\n');
    const stored = await d.lua<number>(
      'return #vim.fn.glob(vim.fn.stdpath("state") .. "/flemma/undo/*.json", false, true)',
    );
    expect(stored).toBe(0);
  });
});

describe(':Flemma review', () => {
  const TURNS = [
    toolUse('edit', 'toolu_R1', {
      label: 'two places',
      path: 'list.txt',
      oldText: 'a\nb\nc\nd\ne',
      newText: 'A\nb\nc\nd\nE',
    }),
    toolUse('write', 'toolu_R2', { label: 'new', path: 'made.txt', content: 'x\ny\n' }),
  ];

  it('lists one entry per hunk of the last turn, of a range, or of the whole chat; undo works from an entry', async () => {
    const { d: driver } = await launch({ key: false, setup: SETUP });
    const d = driver;
    const list = d.writeFile('list.txt', 'a\nb\nc\nd\ne\nf\n');
    d.writeFile('other.txt', 'keep\n');
    await d.openChat('undo.chat', [
      '@You:',
      'First.',
      '',
      '@Assistant:',
      ...TURNS.flat(),
      '',
      '@You:',
      'Second.',
      '',
      '@Assistant:',
      ...toolUse('edit', 'toolu_R3', {
        label: 'o',
        path: 'other.txt',
        oldText: 'keep',
        newText: 'kept',
      }),
    ]);
    await d.waitForEvent('FlemmaBootComplete');
    for (const id of ['toolu_R1', 'toolu_R2', 'toolu_R3']) {
      const row = (await d.lines()).findIndex((line) => line.includes(`(\`${id}\`)`)) + 1;
      const count = d.eventCount;
      await d.command(`normal! ${String(row)}G`);
      await d.press('<M-CR>');
      await d.waitForEvent('FlemmaToolCompleted', { after: count });
    }

    // The last turn: the calls after the user's last own message.
    await d.command('Flemma review');
    await d.waitUntil('return vim.fn.getqflist({ title = 1 }).title == "Flemma review"');
    expect((await quickfix(d)).items).toEqual([
      { filename: 'other.txt', lnum: 1, text: 'toolu_R3 (edit): -1 +1' },
    ]);

    // The whole chat: two hunks of the edit, the new file, the last turn's edit.
    await d.command('call setqflist([], "f")');
    await d.command('Flemma review all');
    await d.waitUntil('return #vim.fn.getqflist() > 0');
    expect((await quickfix(d)).items).toEqual([
      { filename: 'list.txt', lnum: 1, text: 'toolu_R1 (edit): -1 +1' },
      { filename: 'list.txt', lnum: 5, text: 'toolu_R1 (edit): -1 +1' },
      { filename: 'made.txt', lnum: 1, text: 'toolu_R2 (write): -0 +2 (new file)' },
      { filename: 'other.txt', lnum: 1, text: 'toolu_R3 (edit): -1 +1' },
    ]);

    // A range: the messages of the first turn.
    await d.command('call setqflist([], "f")');
    await d.command('1,4Flemma review');
    await d.waitUntil('return #vim.fn.getqflist() > 0');
    expect((await quickfix(d)).items.map((item) => item.text)).toEqual([
      'toolu_R1 (edit): -1 +1',
      'toolu_R1 (edit): -1 +1',
      'toolu_R2 (write): -0 +2 (new file)',
    ]);

    // From an entry (the file it opened is current): the diff of that entry's call, then undo it.
    const chatWin = await d.lua<number>('return vim.api.nvim_get_current_win()');
    await d.command('cfirst');
    expect(await d.lua('return vim.fn.expand("%:t")')).toBe('list.txt');
    await d.press(':Flemma tool:diff<CR>');
    await d.waitUntil('return vim.fn.bufexists("flemma://now/list.txt") == 1');
    expect(
      await d.lua(
        'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://before/list.txt"), 0, -1, false)',
      ),
    ).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    await d.command('tabclose');
    expect(await d.lua('return vim.fn.expand("%:t")')).toBe('list.txt');
    await d.press(':Flemma tool:undo<CR>');
    await d.waitForNotification(/Undid edit \(toolu_R1\)/);
    expect(readFileSync(list, 'utf8')).toBe('a\nb\nc\nd\ne\nf\n');
    // The buffer showing the file read it again.
    await d.waitUntil('return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == "a"');
    await d.lua('vim.api.nvim_set_current_win(...)', chatWin);
    await d.command('buffer undo.chat');
    expect(await d.lines()).toContain('**Tool Result:** `toolu_R1` (undone)');
  });
});

describe(':Flemma review in a git repository', () => {
  it('also lists the files git status shows changed during the turn, marked as such', async () => {
    const { d: driver, f: fake } = await launch({ key: 'sk-ant-test-key', setup: SETUP });
    const d = driver;
    const tracked = d.writeFile('tracked.txt', 'one\n');
    const work = dirname(tracked);
    d.writeFile('dirty.txt', 'base\n');
    const git = (...args: string[]): void => {
      execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], {
        cwd: work,
        stdio: 'ignore',
      });
    };
    git('init', '-q');
    git('add', 'tracked.txt', 'dirty.txt');
    git('commit', '-q', '-m', 'start');
    // Changed before the turn, and not during it: not listed.
    writeFileSync(join(work, 'dirty.txt'), 'dirty before the turn\n');

    await d.openChat('git.chat', ['@You:', 'Change things.']);
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    await anthropicReply(request, '', [
      {
        id: 'toolu_B1',
        name: 'bash',
        input: {
          label: 'change',
          command: 'echo two >> tracked.txt && echo new > fresh.txt',
          timeout: null,
        },
      },
    ]);
    await d.waitForEvent('FlemmaRequestFinished');
    const row = (await d.lines()).findIndex((line) => line.includes('(`toolu_B1`)')) + 1;
    const count = d.eventCount;
    await d.command(`normal! ${String(row)}G`);
    await d.press('<M-CR>');
    expect((await d.waitForEvent('FlemmaToolCompleted', { after: count })).data['status']).toBe(
      'success',
    );
    expect(readFileSync(tracked, 'utf8')).toBe('one\ntwo\n');

    await d.command('Flemma review');
    await d.waitUntil('return #vim.fn.getqflist() > 0');
    const marked = 'changed during the turn (git status; by a command, exact change unknown)';
    expect((await quickfix(d)).items).toEqual([
      { filename: 'fresh.txt', lnum: 1, text: marked },
      { filename: 'tracked.txt', lnum: 1, text: marked },
    ]);
  });
});
