// Reviewing a pending file change before approving it: the preview of a pending `write` or `edit`
// shows the file and the lines it would add and remove, read from the file as it is now.
import { realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pendingCall } from '../helpers/chat-lines.js';
import { type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();
const launch = neovimLauncher();

/** A file of the working directory, as Neovim's side reads it. */
function fileText(d: Driver, path: string): Promise<string> {
  return d.lua(
    'local f = assert(io.open(..., "rb")); local s = f:read("*a"); f:close(); return s',
    path,
  );
}

/** The text of the preview lines of the current buffer, once one contains `needle`. */
async function previewWith(d: Driver, needle: string): Promise<string> {
  const marks = await d.waitForExtmarks('flemma_tool_preview', {
    until: `#marks > 0 and vim.inspect(marks):find(value, 1, true) ~= nil`,
    value: needle,
  });
  return JSON.stringify(marks.map((mark) => mark[3]['virt_lines']));
}

/** Neovim with `notes.txt` holding `text` in its working directory. */
function withNotes(text: string): Promise<Driver> {
  return launch({ files: { 'notes.txt': text } });
}

describe('the preview of a pending file change', () => {
  it('an edit shows its file and +N −M, and follows the file on disk', async () => {
    const d = await withNotes('one\ntwo\nthree\nfour\n');
    await d.openChat(
      'edit.chat',
      pendingCall('edit', 'toolu_E1', {
        label: 'renumber',
        path: 'notes.txt',
        oldText: 'two\nthree\n',
        newText: 'TWO\n',
      }),
    );
    expect(await previewWith(d, '+1 −2')).toContain('edit: notes.txt  +1 −2  # renumber');
    // The file changes on disk so that the edit no longer applies: the next parse says so.
    d.writeFile('notes.txt', 'one\nfour\n');
    await d.command('normal! Go');
    expect(await previewWith(d, 'text not found')).toContain('notes.txt  (text not found)');
  });

  it('a write counts a missing file as empty', async () => {
    const d = await launch();
    await d.openChat(
      'write.chat',
      pendingCall('write', 'toolu_W1', { label: 'new', path: 'sub/new.txt', content: 'a\nb\nc\n' }),
    );
    expect(await previewWith(d, '+3 −0')).toContain('write: sub/new.txt  (6B)  +3 −0  # new');
  });
});

/** The tab count, and each window of the current tab: its buffer's name, lines and 'diff'. */
async function diffTab(
  d: Driver,
): Promise<{ name: string; lines: string[]; diff: boolean; winbar: string }[]> {
  return d.lua(`
    local out = {}
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      local buf = vim.api.nvim_win_get_buf(win)
      out[#out + 1] = {
        name = vim.api.nvim_buf_get_name(buf),
        lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
        diff = vim.wo[win].diff,
        winbar = vim.wo[win].winbar,
      }
    end
    return out`);
}

const EDIT = {
  label: 'shout',
  path: 'notes.txt',
  oldText: 'two\n',
  newText: 'TWO\n',
};

async function openDiff(d: Driver): Promise<void> {
  // The cursor on the placeholder's fence (line 15), as a user would put it.
  await d.command('normal! 15G');
  await d.press(':Flemma tool:diff<CR>');
  await d.waitUntil(
    'return #vim.api.nvim_list_tabpages() == 2 and #vim.api.nvim_tabpage_list_wins(0) == 2',
  );
}

describe('the preview of a declarative file_write', () => {
  it('counts the lines the call would write against the file', async () => {
    const dir = realpathSync(temp('flemma-review-'));
    writeFileSync(
      join(dir, 'save.yaml'),
      'name: save\ndescription: Save a file\nparams:\n  - { name: path, type: string, required: true }\n  - { name: content, type: string, required: true }\nimplementation: { type: file_write }\n',
    );
    const d = await launch({
      setup: `require("flemma").setup({ tools = { declarative = { dirs = { ${JSON.stringify(dir)} } } } })`,
    });
    d.writeFile('notes.txt', 'one\ntwo\n');
    await d.openChat(
      'decl.chat',
      pendingCall('save', 'toolu_F1', { path: 'notes.txt', content: 'one\n2\n3\n' }),
    );
    expect(await previewWith(d, '+2 −1')).toContain('save: write notes.txt (8B)  +2 −1');
  });
});

describe(':Flemma tool:diff', () => {
  it('opens the file and the proposal side by side in diff mode', async () => {
    const d = await withNotes('one\ntwo\nthree\n');
    await d.openChat('diff.chat', pendingCall('edit', 'toolu_D1', EDIT));
    await openDiff(d);
    const wins = await diffTab(d);
    expect(wins.map((w) => w.diff)).toEqual([true, true]);
    expect(wins[0]?.name).toBe('flemma://current/notes.txt');
    expect(wins[0]?.lines).toEqual(['one', 'two', 'three']);
    expect(wins[1]?.name).toBe('flemma://proposed/notes.txt');
    expect(wins[1]?.lines).toEqual(['one', 'TWO', 'three']);
    expect(wins[1]?.winbar).toContain('ga approve');
    // Closing the tab leaves the call pending.
    await d.command('tabclose');
    expect(await d.lua('return #vim.api.nvim_list_tabpages()')).toBe(1);
    const lines = await d.lines();
    expect(lines).toContain('```flemma:tool status=pending');
    expect(await fileText(d, 'notes.txt')).toBe('one\ntwo\nthree\n');
  });

  it('approving runs exactly what the proposed side shows and rewrites the call', async () => {
    const d = await withNotes('one\ntwo\nthree\n');
    await d.openChat('approve.chat', pendingCall('edit', 'toolu_D2', EDIT));
    await openDiff(d);
    // The user changes the proposal: the third line too.
    await d.command('wincmd l');
    await d.command('normal! 3Gcc3');
    await d.press('ga');
    await d.waitForEvent('FlemmaToolCompleted');
    await d.waitUntil('return #vim.api.nvim_list_tabpages() == 1');
    expect(await fileText(d, 'notes.txt')).toBe('one\nTWO\n3\n');
    const chat = (await d.lines()).join('\n');
    expect(chat).toContain('"oldText":"two\\nthree\\n","newText":"TWO\\n3\\n"');
    expect(chat).toContain('"label":"shout"');
    expect(chat).not.toContain('status=pending');
  });

  it('rejecting (gr, at once) asks for a reason, which the error result carries', async () => {
    const d = await withNotes('one\ntwo\n');
    await d.openChat(
      'reject.chat',
      pendingCall('write', 'toolu_D3', { label: 'x', path: 'notes.txt', content: 'gone\n' }),
    );
    await openDiff(d);
    await d.lua(
      'vim.ui.input = function(opts, cb) _G.prompt = opts.prompt; cb("keep my notes") end',
    );
    // `gr` is the start of Neovim's own `grn`, `grr`, … (0.11+): it must not wait for them, even
    // with a 'timeoutlen' of an hour. The prompt was asked before any further key.
    await d.command('set timeoutlen=3600000');
    await d.press('gr');
    expect(await d.lua('return _G.prompt')).toContain('Reason');
    await d.waitUntil('return #vim.api.nvim_list_tabpages() == 1');
    await d.waitUntil(
      'return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\\n"):find("(error)", 1, true) ~= nil',
    );
    const chat = (await d.lines()).join('\n');
    expect(chat).toContain('**Tool Result:** `toolu_D3` (error)');
    expect(chat).toContain('keep my notes');
    expect(await fileText(d, 'notes.txt')).toBe('one\ntwo\n');
  });

  it(':Flemma keys lists the keys of a chat and of a diff tab, as configured', async () => {
    const d = await launch({
      setup: 'require("flemma").setup({ keymaps = { diff = { reject = "gX" } } })',
    });
    await d.openChat('keys.chat', ['@You:', 'Hello']);
    await d.command('Flemma keys');
    const lines = await d.lua<string[]>(
      'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://keys"), 0, -1, false)',
    );
    expect(lines).toContain('  n    <C-]>      run approved tools, or send');
    expect(lines).toContain(
      '  n    <Space>    toggle the fold of the message (waits for longer maps)',
    );
    expect(lines).toContain('  n    ga         approve what the proposed side shows');
    expect(lines).toContain('  n    gX         reject the call (asks for a reason)');
    // The chat's maps are `nowait`, the fold toggle's is not.
    const nowait = await d.lua<Record<string, number>>(
      `local out = {}
      for _, map in ipairs(vim.api.nvim_buf_get_keymap(vim.fn.bufnr("keys.chat"), "n")) do
        out[map.lhs] = map.nowait
      end
      return out`,
    );
    expect(nowait).toMatchObject({ gd: 1, gD: 1, ']m': 1, ' ': 0 });
  });

  it('flags a file changed on disk, and approving re-diffs instead of running', async () => {
    const d = await withNotes('one\ntwo\nthree\n');
    const chatBuf = await d.openChat('stale.chat', pendingCall('edit', 'toolu_D4', EDIT));
    await previewWith(d, '+1 −1');
    // Changed after the call was first previewed: the diff says so when it opens.
    d.writeFile('notes.txt', 'zero\none\ntwo\nthree\n');
    await openDiff(d);
    expect((await diffTab(d))[0]?.winbar).toContain('changed on disk since this call');
    // Changed again while the diff is open: approving shows the new file and runs nothing.
    d.writeFile('notes.txt', 'one\ntwo\n');
    await d.command('wincmd l');
    await d.press('ga');
    await d.waitUntil(
      'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://current/notes.txt"), 0, -1, false)[3] == nil',
    );
    const wins = await diffTab(d);
    expect(wins[0]?.lines).toEqual(['one', 'two']);
    expect(wins[0]?.winbar).toContain('changed on disk while the diff was open');
    expect(await fileText(d, 'notes.txt')).toBe('one\ntwo\n');
    expect(await d.lines(chatBuf)).toContain('```flemma:tool status=pending');
  });

  it('approving from the diff writes no further than the sandbox lets the call', async () => {
    const d = await launch({
      setup: `require("flemma").setup({
        tools = { autopilot = false },
        sandbox = { policy = { rw_paths = { "urn:flemma:cwd" } } },
      })`,
    });
    d.writeFile('../outside/notes.txt', 'one\ntwo\nthree\n');
    await d.openChat(
      'sandbox.chat',
      pendingCall('edit', 'toolu_D5', { ...EDIT, path: '../outside/notes.txt' }),
    );
    await openDiff(d);
    await d.command('wincmd l');
    await d.command('normal! 1Gcc1');
    await d.press('ga');
    await d.waitUntil('return #vim.api.nvim_list_tabpages() == 1');
    await d.waitUntil(
      'return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\\n"):find("Sandbox: edit denied", 1, true) ~= nil',
    );
    expect(await fileText(d, '../outside/notes.txt')).toBe('one\ntwo\nthree\n');
  });
});
