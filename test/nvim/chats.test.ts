// `:Flemma chats` (docs/picker.md): the chats of the chat directory and of the project listed
// with their titles and models, the chosen one opened; through `vim.ui.select` and through the
// documented APIs of snacks.picker, telescope and fzf-lua (stand-ins on the runtimepath: CI
// cannot download the plugins).
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicBlocks, replyBlocks } from '../helpers/anthropic-script.js';
import { type Driver, ROOT } from '../helpers/driver.js';
import { launcher, neovimLauncher } from '../helpers/e2e.js';
import { gitIn } from '../helpers/git.js';

const launch = neovimLauncher();
const launchWithProvider = launcher();

/** The default chat directory (`stdpath("data")/flemma/chats`), from the work directory. */
const DIR = '../data/nvim/flemma/chats';

const FILES: Record<string, string> = {
  [`${DIR}/release.chat`]: [
    '```json',
    '{ "title": "Release notes", "flemma": { "provider": "openai", "model": "gpt-5.4" } }',
    '```',
    '@You:',
    'Draft the notes.',
    '',
    '@Assistant:',
    'Here they are.',
    '',
  ].join('\n'),
  [`${DIR}/sky.chat`]: [
    '@You:',
    'Why is the sky blue?',
    '',
    '@Assistant:',
    'Rayleigh scattering.',
    '',
    '@You:',
    'And sunsets?',
    '',
    '@Assistant:',
    'A longer path, more red.',
    '',
  ].join('\n'),
  'notes.chat': [
    '```lua',
    'title = "Project notes"',
    'flemma.opt.provider = "anthropic"',
    'flemma.opt.model = "claude-sonnet-4-6"',
    '```',
    '@You:',
    'Summarise.',
    '',
  ].join('\n'),
  'notes.tasks/01-child.chat': '@You:\nA task of notes.chat.\n',
  'build/ignored.chat': '@You:\nIgnored by git.\n',
  '.gitignore': 'build/\n',
};

/** The last exchange of `sky.chat`: what its preview shows. */
const SKY_PREVIEW = ['@You:', 'And sunsets?', '', '@Assistant:', 'A longer path, more red.'];

/**
 * `vim.ui.select` watched: Neovim's own (the numbered list of `inputlist()`), which announces
 * the lines it shows with `User TestPickerShown` just before it waits for the user's number.
 */
const WATCH_SELECT = `
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    _G.picker_calls = { { api = "vim.ui.select", prompt = opts.prompt } }
    local lines = vim.tbl_map(opts.format_item, items)
    vim.api.nvim_exec_autocmds("User", {
      pattern = "TestPickerShown",
      data = { api = "vim.ui.select", lines = lines },
    })
    return select(items, opts, on_choice)
  end`;

/** Neovim in a git project holding `FILES`, Flemma set up with `config`. */
async function start(config = '{}', rtp: string[] = []): Promise<Driver> {
  const d = await launch({ config, files: FILES, rtp, lua: WATCH_SELECT });
  gitIn(d.home, join(d.home, 'work'), 'init', '-q');
  return d;
}

/** What the picker shows: through which API, and its lines. */
interface Shown {
  api: string;
  lines: string[];
}

/**
 * `:Flemma chats` typed; resolves with what the picker shows once it shows it. (`vim.ui.select`
 * then waits for a number: `choose`, or `<Esc>`, before Neovim does anything else.)
 */
async function pick(d: Driver): Promise<Shown> {
  const after = d.eventCount;
  await d.press(':Flemma chats<CR>');
  const { data } = await d.waitForEvent('TestPickerShown', { after });
  if (data['api'] === 'vim.ui.select') return data as unknown as Shown;
  return d.lua<Shown>(
    'return { api = _G.picker_calls[#_G.picker_calls].api, lines = _G.fake_picker.lines }',
  );
}

/** The 1-based index of the line that holds `text`. */
function indexOf(lines: string[], text: string): number {
  const index = lines.findIndex((line) => line.includes(text));
  expect(index, `a line with ${text} in ${JSON.stringify(lines)}`).toBeGreaterThanOrEqual(0);
  return index + 1;
}

/**
 * Choose line `k` of what `shown` shows: its number typed in `vim.ui.select`'s list, or the
 * stand-in's choice made; resolves once the current buffer is the file `name`.
 */
async function choose(d: Driver, shown: Shown, k: number, name: string): Promise<void> {
  if (shown.api === 'vim.ui.select') await d.nvim.input(`${String(k)}<CR>`);
  else await d.lua('_G.fake_picker.choose(...)', k);
  await d.waitUntil('return vim.fs.basename(vim.api.nvim_buf_get_name(0)) == ...', {
    args: [name],
  });
}

describe(':Flemma chats', () => {
  it('lists the chat directory and the project with titles and models; the number typed opens one', async () => {
    const d = await start();
    const shown = await pick(d);
    const { lines } = shown;
    expect(shown.api).toBe('vim.ui.select');
    expect(lines).toHaveLength(3);
    // A frontmatter's title, provider and model (JSON, and a Lua one read without running it).
    expect(lines[indexOf(lines, 'release.chat') - 1]).toMatch(
      /^Release notes · openai\/gpt-5\.4 · just now · \d+ B · ~\/data\/nvim\/flemma\/chats\/release\.chat$/,
    );
    expect(lines[indexOf(lines, 'notes.chat') - 1]).toMatch(
      /^Project notes · anthropic\/claude-sonnet-4-6 · just now · \d+ B · notes\.chat$/,
    );
    // No title: the first line of the first @You:, and the configuration's model.
    expect(lines[indexOf(lines, 'sky.chat') - 1]).toMatch(/^Why is the sky blue\? · default · /);
    // Ignored by git, and a task's child: not listed.
    expect(lines.join('\n')).not.toMatch(/ignored\.chat|01-child/);
    await choose(d, shown, indexOf(lines, 'sky.chat'), 'sky.chat');
    expect(await d.lua('return vim.bo.filetype')).toBe('chat');
    expect(await d.lua('return vim.api.nvim_buf_get_lines(0, 0, 2, false)')).toEqual([
      '@You:',
      'Why is the sky blue?',
    ]);
  });

  it('goes to the window that already shows the chosen chat', async () => {
    const d = await start();
    await d.command('edit notes.chat');
    const buf = await d.lua<number>('return vim.api.nvim_get_current_buf()');
    const win = await d.lua<number>('return vim.api.nvim_get_current_win()');
    await d.command('vsplit | enew');
    const shown = await pick(d);
    await choose(d, shown, indexOf(shown.lines, 'notes.chat'), 'notes.chat');
    expect(
      await d.lua('return { vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win() }'),
    ).toEqual([buf, win]);
  });

  it('lists the children of tasks with chats.children', async () => {
    const d = await start('{ chats = { children = true } }');
    const { lines } = await pick(d);
    await d.nvim.input('<Esc>');
    expect(lines[indexOf(lines, '01-child.chat') - 1]).toMatch(
      /^A task of notes\.chat\. · default · .* · notes\.tasks\/01-child\.chat$/,
    );
    expect(lines).toHaveLength(4);
  });

  it('lets a freshly started host read only the chats changed since (the index in stdpath("cache"))', async () => {
    const d = await start();
    await pick(d);
    await d.nvim.input('<Esc>');
    const index = join(d.home, 'cache', 'nvim', 'flemma', 'chats-index.json');
    expect(statSync(index).mode & 0o777).toBe(0o600);
    d.writeFile(`${DIR}/sky.chat`, '@You:\nWhy is the sea blue?\n');
    const after = d.eventCount;
    await d.lua(`
      local host = require("flemma.host")
      host.restart()
      host.call("chats:list", require("flemma.chats").sources(), function(_, answer)
        vim.api.nvim_exec_autocmds("User", { pattern = "TestChatsListed", data = { read = answer.read } })
      end)`);
    const { data } = await d.waitForEvent('TestChatsListed', { after });
    expect(data['read']).toBe(1);
    const { lines } = await pick(d);
    await d.nvim.input('<Esc>');
    expect(lines[indexOf(lines, 'sky.chat') - 1]).toMatch(/^Why is the sea blue\? · default · /);
  });

  it('looks in chats.search too, and says so when there is no chat', async () => {
    const d = await launch({ config: '{ chats = { search = { "~/elsewhere" } } }' });
    await d.press(':Flemma chats<CR>');
    await d.waitForNotification(/chats: no chats in .*flemma\/chats, ~\/elsewhere or this project/);
    d.writeFile('../elsewhere/deep/found.chat', '@You:\nFound me.\n');
    await d.lua(WATCH_SELECT);
    const shown = await pick(d);
    expect(shown.lines).toEqual([expect.stringMatching(/^Found me\. · default · .*found\.chat$/)]);
    await choose(d, shown, 1, 'found.chat');
  });
});

const PICKERS = join(ROOT, 'test/fixtures/pickers');

/** The runtimepath of the stand-ins `names` (and what they share). */
function standIns(...names: string[]): string[] {
  return [...names, 'shared'].map((name) => join(PICKERS, name));
}

describe(':Flemma chats, the cost so far', () => {
  it('shows what a chat sent once cost after the host restarted (the usage ledger)', async () => {
    const { d, f } = await launchWithProvider({
      config: '{}',
      lua: WATCH_SELECT,
      chat: { name: 'paid.chat', lines: ['@You:', 'Hello'] },
    });
    await d.press('<C-]>');
    // claude-sonnet-4-6: 2000×$3 + 410×$15 per million tokens, $0.0122.
    const usage = { input: 2000, output: 410, cacheRead: 0, cacheWrite: 0 };
    await anthropicBlocks(
      await f.nextRequest({ path: '/v1/messages' }),
      replyBlocks('Hi.', [], true),
      usage,
    );
    await d.waitForEvent('FlemmaRequestFinished');
    const ledger = join(d.home, 'state', 'nvim', 'flemma', 'usage.jsonl');
    expect(statSync(ledger).mode & 0o777).toBe(0o600);
    expect(readFileSync(ledger, 'utf8')).not.toContain('Hello');
    await d.lua('require("flemma.host").restart()');
    const { lines } = await pick(d);
    await d.nvim.input('<Esc>');
    expect(lines[indexOf(lines, 'paid.chat') - 1]).toMatch(
      /^Hello · default · just now · \$0\.0122 · \d+ B · paid\.chat$/,
    );
  });
});

describe.each([
  ['snacks', 'snacks.picker.pick', ['items', 'format', 'preview', 'confirm']],
  ['telescope', 'telescope.pickers.new', ['finder', 'sorter', 'previewer', 'attach_mappings']],
  ['fzf-lua', 'fzf-lua.fzf_exec', ['previewer', 'actions']],
])(':Flemma chats through %s', (name, api, keys) => {
  it('shows the chats with their preview and opens the chosen one', async () => {
    const d = await start('{}', standIns(name));
    const shown = await pick(d);
    expect(shown.api).toBe(api);
    const call = await d.lua<{ keys: string[] }>('return _G.picker_calls[1]');
    expect(call.keys).toEqual(expect.arrayContaining(keys));
    expect(shown.lines).toHaveLength(3);
    const sky = indexOf(shown.lines, 'sky.chat');
    const after = d.eventCount;
    await d.lua('_G.fake_picker.preview(...)', sky);
    await d.waitForEvent('TestPreviewDrawn', { after });
    expect(await d.lua('return _G.preview_lines')).toEqual(SKY_PREVIEW);
    expect(await d.lua('return _G.preview_ft')).toBe('markdown');
    await choose(d, shown, sky, 'sky.chat');
  });
});

describe('ui.picker', () => {
  it('auto takes snacks, then telescope, then fzf-lua; a named one is used when installed', async () => {
    const d = await start('{}', standIns('fzf-lua', 'telescope', 'snacks'));
    expect((await pick(d)).api).toBe('snacks.picker.pick');
    for (const [option, api] of [
      ['fzf-lua', 'fzf-lua.fzf_exec'],
      ['telescope', 'telescope.pickers.new'],
      ['select', 'vim.ui.select'],
    ]) {
      await d.lua(`require("flemma").setup({ ui = { picker = "${option}" } })`);
      expect((await pick(d)).api).toBe(api);
    }
    await d.nvim.input('<Esc>');
  });

  it('falls back to vim.ui.select, with a warning, when the named picker is not installed', async () => {
    const d = await start('{ ui = { picker = "telescope" } }');
    const shown = await pick(d);
    expect(shown.api).toBe('vim.ui.select');
    expect(shown.lines).toHaveLength(3);
    await d.nvim.input('<Esc>');
    await d.waitForNotification(/ui\.picker: telescope is not installed; using vim\.ui\.select/);
  });
});
