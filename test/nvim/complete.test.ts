// Completion in chat buffers (docs/completion.md), as a user sees it: the popup that opens on `@`
// and on `/` while typing, `'omnifunc'` (<C-x><C-o>) in the frontmatter, and the sources of
// blink.cmp and nvim-cmp called through their documented interfaces (the plugins are not
// installed here). Every answer comes from the host later, so each check waits for the popup.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { launcher, neovimLauncher } from '../helpers/e2e.js';
import { MCP_FIXTURE, type McpControl, startMcpControl } from '../helpers/mcp-fixture.js';

let control: McpControl | undefined;

afterEach(async () => {
  await control?.close();
  control = undefined;
});

const launch = neovimLauncher();
const launchWithProvider = launcher();

/** The words of the popup's items as shown (none when it is closed), read in Lua. */
const WORDS = `local function words()
  local info = vim.fn.complete_info({ "items", "pum_visible" })
  local out = {}
  if info.pum_visible == 0 then return out end
  for _, item in ipairs(info.items) do out[#out + 1] = item.word end
  return out
end`;

/** Waits until `condition` (Lua, over `words()` and `...`) holds of the popup; says what it holds. */
async function waitPopup(d: Driver, condition: string, arg: unknown): Promise<string[]> {
  try {
    await d.waitUntil(`${WORDS} ${condition}`, { args: [arg] });
  } catch (error) {
    const shown = await d.lua<string[]>(`${WORDS} return words()`);
    const line = await d.lua<string>('return vim.api.nvim_get_current_line()');
    throw new Error(`${String(error)}; the popup holds ${JSON.stringify(shown)} on ${line}`);
  }
  return d.lua<string[]>(`${WORDS} return words()`);
}

/** Waits until the popup holds `word`, then answers all its words. */
async function popupWith(d: Driver, word: string): Promise<string[]> {
  return waitPopup(d, 'return vim.tbl_contains(words(), ...)', word);
}

/** Waits until the popup holds exactly `expected` (it refreshes as the user types). */
async function popupIs(d: Driver, expected: string[]): Promise<void> {
  await waitPopup(d, 'return vim.deep_equal(words(), ...)', expected);
}

/** A project (a git work tree) with a chat in `chats/`, beside files, some ignored. */
function writeProject(d: Driver): void {
  d.writeFile('project/.git/HEAD', 'ref: refs/heads/main\n');
  d.writeFile('project/.gitignore', 'build/\n*.log\n');
  d.writeFile('project/chats/notes.md', 'notes\n');
  d.writeFile('project/chats/src/app.ts', 'export {};\n');
  d.writeFile('project/chats/src/app.test.ts', 'export {};\n');
  d.writeFile('project/chats/build/out.js', '1;\n');
  d.writeFile('project/chats/debug.log', 'log\n');
  d.writeFile('project/chats/.env.example', 'A=1\n');
  d.writeFile('project/chats/my notes.txt', 'spaced\n');
}

async function openTalk(d: Driver, lines = ['@You:', '']): Promise<number> {
  writeProject(d);
  const buf = await d.openChat('project/chats/talk.chat', lines);
  await d.waitForEvent('FlemmaBootComplete');
  return buf;
}

describe('the popup while typing', () => {
  it('opens on @ with the chat directory, honours .gitignore, narrows and descends', async () => {
    const d = await launch({ config: '{}' });
    await openTalk(d);
    const original = await d.lua<string>('return vim.o.completeopt');
    await d.press('G');
    await d.type('A' + 'see @');
    const first = await popupWith(d, './notes.md');
    expect(first).toEqual([
      './my%20notes.txt',
      './notes.md',
      './src/',
      './talk.chat',
      './.env.example',
    ]);
    await d.type('./s');
    await popupIs(d, ['./src/']);
    // Choosing a directory goes on into it.
    await d.press('<C-n><C-y>');
    await popupIs(d, ['./src/app.test.ts', './src/app.ts']);
    expect(await d.lua('return vim.api.nvim_get_current_line()')).toBe('see @./src/');
    await d.type('app.te');
    await popupIs(d, ['./src/app.test.ts']);
    // A name that matches nothing closes the popup.
    await d.type('x');
    await popupIs(d, []);
    await d.press('<BS>');
    await popupIs(d, ['./src/app.test.ts']);
    // Nothing is chosen for you: Enter ends the line as typed.
    await d.press('<CR>x');
    expect((await d.lines()).slice(-2)).toEqual(['see @./src/app.te', 'x']);
    // The popup's 'completeopt' was its own.
    await d.press('<Esc>');
    expect(await d.lua('return vim.o.completeopt')).toBe(original);
  });

  it('lists ../ and absolute paths; @ right after a letter starts nothing', async () => {
    const d = await launch({ config: '{}' });
    const buf = await openTalk(d);
    const context = (line: string): Promise<unknown> =>
      d.lua(
        'return require("flemma.complete").context(..., 1, #select(2, ...), select(2, ...))',
        buf,
        line,
      );
    expect(await context('mail@./')).toBeNull();
    expect(await context('(@./')).toMatchObject({ where: 'reference' });
    await d.press('G');
    await d.type('A' + 'see @../');
    expect(await popupWith(d, '../chats/')).toEqual(['../chats/', '../.gitignore']);
    await d.press('<C-e><Esc>');
    const root = d.writeFile('abs/one.md', '1\n').replace(/one\.md$/, '');
    await d.type(`o@${root}`);
    expect(await popupWith(d, `${root}one.md`)).toEqual([`${root}one.md`]);
  });

  it('with completion.auto = false, <C-x><C-o> completes (one match: inserted)', async () => {
    const d = await launch({ config: '{ completion = { auto = false } }' });
    await openTalk(d);
    await d.press('G');
    await d.type('A' + '@./no');
    await d.press('<C-x><C-o>');
    await d.waitUntil('return vim.api.nvim_get_current_line() == "@./notes.md"');
    expect(await d.lua<string>('return vim.o.completeopt')).not.toContain('noselect');
  });

  it('offers slash commands at the start of a @You: line, and their arguments', async () => {
    const d = await launch({ config: '{}' });
    await openTalk(d);
    await d.press('G');
    await d.type('A/');
    const all = await popupWith(d, '/thinking');
    expect(all).toEqual(expect.arrayContaining(['/model', '/compact', '/fork', '/retry']));
    await d.type('thi');
    await popupIs(d, ['/thinking']);
    await d.type('nking ');
    await popupIs(d, ['off', 'minimal', 'low', 'medium', 'high', 'max']);
  });
});

describe('omnifunc in the frontmatter', () => {
  async function omni(d: Driver, row: number, text: string, word: string): Promise<string[]> {
    await d.lua(
      `local row, text = ...
      vim.api.nvim_buf_set_lines(0, row - 1, row, false, { text })
      vim.api.nvim_win_set_cursor(0, { row, #text })`,
      row,
      text,
    );
    // A user's 'completeopt' that shows the popup even for one match.
    await d.lua('vim.o.completeopt = "menuone,noselect"');
    await d.press('A<C-x><C-o>');
    const words = await popupWith(d, word);
    await d.press('<C-e><Esc>');
    return words;
  }

  it('Lua: option names, a choice’s values, tools and presets in approval lists', async () => {
    const d = await launch({ config: '{}' });
    await openTalk(d, ['```lua', '', '```', '@You:', 'hi']);
    expect(await omni(d, 2, 'flemma.opt.thinking = "', 'high')).toEqual(
      expect.arrayContaining(['low', 'medium', 'high']),
    );
    expect(await omni(d, 2, 'flemma.opt.tools.auto_', 'auto_approve')).toEqual(
      expect.arrayContaining(['auto_approve', 'auto_approve_sandboxed']),
    );
    const approve = await omni(d, 2, 'flemma.opt.tools.auto_approve = { "read", "', '$default');
    expect(approve).toEqual(expect.arrayContaining(['$default', '$readonly', 'bash', 'read']));
    expect(await omni(d, 2, 'flemma.opt.tools:remove("ba', 'bash')).toEqual(['bash']);
  });

  it('JSON: the keys under "flemma" and a value', async () => {
    const d = await launch({ config: '{}' });
    await openTalk(d, ['```json', '{ "flemma": {', '', '} }', '```', '@You:', 'hi']);
    expect(await omni(d, 3, '  "provi', 'provider')).toEqual(['provider']);
    expect(await omni(d, 3, '  "tools": { "autonomy": "c', 'conservative')).toEqual([
      'conservative',
    ]);
  });
});

describe('MCP resources', () => {
  it('@mcp: offers the connected servers, then their resources', async () => {
    const fixture = await startMcpControl();
    control = fixture;
    const { d } = await launchWithProvider({
      setup: `require("flemma").setup({ mcp = { servers = { ["local"] = {
        command = ${JSON.stringify(process.execPath)}, args = { ${JSON.stringify(MCP_FIXTURE)} },
        env = { MCP_FIXTURE_CONTROL = "${String(fixture.port)}" } } } } })`,
    });
    await openTalk(d);
    // Lua's copy of the catalogue arrived: the host has the server's resources too.
    await d.waitUntil(
      'return vim.tbl_contains(vim.fn.getcompletion("Flemma mcp:prompt local ", "cmdline"), "review")',
    );
    await d.press('G');
    await d.type('A' + '@mcp:');
    expect(await popupWith(d, 'mcp:local:')).toEqual(['mcp:local:']);
    await d.type('local:fixture://n');
    expect(await popupWith(d, 'mcp:local:fixture://notes.md')).toEqual([
      'mcp:local:fixture://notes.md',
    ]);
  });
});

describe('the completion plugins’ sources', () => {
  /** Calls a source through the plugin's interface; the items arrive as a `User` event. */
  async function viaSource(d: Driver, plugin: 'blink' | 'cmp'): Promise<Record<string, unknown>> {
    const after = d.eventCount;
    await d.lua(
      `local plugin = ...
      local function done(result)
        vim.api.nvim_exec_autocmds("User", { pattern = "CompleteSourceDone", data = result })
      end
      local row, col = unpack(vim.api.nvim_win_get_cursor(0))
      if plugin == "blink" then
        local source = require("flemma.complete.source").new({})
        assert(source:enabled() and vim.tbl_contains(source:get_trigger_characters(), "@"))
        source:get_completions({ bufnr = 0 + vim.api.nvim_get_current_buf(), cursor = { row, col },
          line = vim.api.nvim_get_current_line() }, done)
      else
        local source = require("flemma.complete.source").new()
        assert(source:is_available() and vim.tbl_contains(source:get_trigger_characters(), "@"))
        source:complete({ context = { bufnr = vim.api.nvim_get_current_buf(),
          cursor = { row = row, col = col + 1 }, cursor_before_line = vim.api.nvim_get_current_line():sub(1, col) } }, done)
      end`,
      plugin,
    );
    return (await d.waitForEvent('CompleteSourceDone', { after })).data;
  }

  it.each(['blink', 'cmp'] as const)(
    '%s: @./ paths as LSP items with a text edit',
    async (plugin) => {
      const d = await launch({ config: '{}' });
      await openTalk(d, ['@You:', 'see @./sr more']);
      await d.lua('vim.api.nvim_win_set_cursor(0, { 2, 9 })');
      const result = await viaSource(d, plugin);
      expect(result['items']).toEqual([
        {
          label: 'src/',
          filterText: './src/',
          kind: 19,
          textEdit: {
            newText: './src/',
            range: { start: { line: 1, character: 5 }, end: { line: 1, character: 9 } },
          },
        },
      ]);
    },
  );

  it('registers with the plugins when they are installed, through their setup functions', async () => {
    const d = await launch({ config: '{}' });
    const stub = join(d.home, 'plugins');
    mkdirSync(join(stub, 'lua/cmp'), { recursive: true });
    mkdirSync(join(stub, 'lua/blink/cmp'), { recursive: true });
    writeFileSync(
      join(stub, 'lua/cmp/init.lua'),
      `_G.cmp_calls = {}
      local cmp = { setup = {} }
      function cmp.register_source(name, source) _G.cmp_calls.source = { name, source } end
      function cmp.get_config() return { sources = { { name = "buffer" } } } end
      function cmp.setup.filetype(ft, cfg) _G.cmp_calls.filetype = { ft, cfg } end
      return cmp`,
    );
    writeFileSync(
      join(stub, 'lua/blink/cmp/init.lua'),
      `_G.blink_calls = {}
      return {
        add_source_provider = function(id, cfg) _G.blink_calls.provider = { id, cfg } end,
        add_filetype_source = function(ft, id) _G.blink_calls.filetype = { ft, id } end,
      }`,
    );
    await d.lua('vim.opt.rtp:prepend(...)', stub);
    await openTalk(d, ['@You:', 'see @./no more']);
    const calls = await d.lua<Record<string, unknown>>(
      `local provider = _G.blink_calls.provider
      -- blink.cmp loads the provider's module by name and calls new().
      local blink_source = require(provider[2].module).new({})
      return {
        cmp = { _G.cmp_calls.source[1], _G.cmp_calls.filetype },
        blink = { provider[1], provider[2].name, _G.blink_calls.filetype },
        same = getmetatable(blink_source) == getmetatable(_G.cmp_calls.source[2]),
      }`,
    );
    expect(calls).toEqual({
      cmp: ['flemma', ['chat', { sources: [{ name: 'flemma' }, { name: 'buffer' }] }]],
      blink: ['flemma', 'Flemma', ['chat', 'flemma']],
      same: true,
    });
    // The source nvim-cmp was given answers through its interface.
    await d.lua('vim.api.nvim_win_set_cursor(0, { 2, 9 })');
    const after = d.eventCount;
    await d.lua(`_G.cmp_calls.source[2]:complete({ context = { bufnr = vim.api.nvim_get_current_buf(),
      cursor = { row = 2, col = 10 } } }, function(result)
        vim.api.nvim_exec_autocmds("User", { pattern = "CompleteSourceDone", data = result })
      end)`);
    const result = (await d.waitForEvent('CompleteSourceDone', { after })).data;
    expect((result['items'] as { filterText: string }[]).map((item) => item.filterText)).toEqual([
      './notes.md',
    ]);
  });
});
