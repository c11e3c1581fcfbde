// Integrations with other plugins, end to end, each against a small stand-in placed on the
// runtimepath and shaped like the real plugin's API: nvim-web-devicons (the `.chat` icon),
// nvim-notify (Flemma's messages), bufferline.nvim (the busy indicator, drawn through a `%!`
// tabline while a request streams from the fake provider) and nvim-treesitter-context (kept out
// of chat buffers). And everything with none of them installed.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { textReply as reply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import {
  launcher,
  type LaunchOptions,
  type Session,
  GATED_TOOL,
  GATED_CHAT,
} from '../helpers/e2e.js';

const dirs: string[] = [];

// Declared before the launcher's: after hooks run last-declared first, so Neovim has quit before
// the stub plugins' directories are removed.
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const launch = launcher();

/** A directory for the runtimepath holding `files` (relative path → content). */
function plugin(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'flemma-stub-'));
  dirs.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** Neovim with `setup` run at start-up (and no provider unless `options.key` says one). */
function session(setup: string, options: LaunchOptions = {}): Promise<Session> {
  return launch({ key: false, ...options, setup });
}

async function start(setup: string, options: LaunchOptions = {}): Promise<Driver> {
  return (await session(setup, options)).d;
}

/** Wait (in Neovim) until a Lua expression is true; fails the test with `what` otherwise. */
async function until(d: Driver, expression: string, what: string): Promise<void> {
  const ok = await d.lua<boolean>(
    `return vim.wait(5000, function() return (${expression}) == true end, 5)`,
  );
  expect(ok, what).toBe(true);
}

// ---------------------------------------------------------------------------------------------
// nvim-web-devicons
// ---------------------------------------------------------------------------------------------

/**
 * Like nvim-web-devicons: `setup({ override })`, `set_icon` (adds to the icons looked up by
 * name or extension), `set_icon_by_filetype`, `get_icon`, `get_icon_by_filetype`, and a table
 * rebuilt from defaults and overrides when 'background' changes. Calls are recorded.
 */
const DEVICONS = `
local M = {}
_G.devicons_calls = {}
local defaults = { lua = { icon = "L", name = "Lua" } }
local overrides = {}
local icons, filetypes = {}, { lua = "lua" }
local function rebuild()
  icons = vim.tbl_extend("force", {}, defaults, overrides)
end
rebuild()
function M.setup(opts)
  overrides = (opts or {}).override or {}
  rebuild()
end
function M.set_icon(user_icons)
  table.insert(_G.devicons_calls, { "set_icon", vim.deepcopy(user_icons) })
  icons = vim.tbl_extend("force", icons, user_icons)
  for _, data in pairs(user_icons) do
    if data.color then vim.api.nvim_set_hl(0, "DevIcon" .. data.name, { fg = data.color }) end
  end
end
function M.set_icon_by_filetype(map)
  table.insert(_G.devicons_calls, { "set_icon_by_filetype", vim.deepcopy(map) })
  filetypes = vim.tbl_extend("force", filetypes, map)
end
function M.get_icon(name, ext, opts)
  local data = icons[(name or ""):lower()] or (ext and icons[ext])
  if not data and name then data = icons[name:match("%.([^.]*)$") or ""] end
  if data then return data.icon, "DevIcon" .. data.name end
end
function M.get_icon_by_filetype(ft, opts)
  return M.get_icon(filetypes[ft] or "", nil, opts)
end
vim.api.nvim_create_autocmd("OptionSet", { pattern = "background", callback = rebuild })
return M
`;

function devicons(): string {
  return plugin({ 'lua/nvim-web-devicons.lua': DEVICONS });
}

/** What a file tree or tabline would show for `notes.chat`: by name, and by filetype. */
const CHAT_ICON = `
local devicons = require("nvim-web-devicons")
local icon, hl = devicons.get_icon("notes.chat", "chat")
return { icon = icon, hl = hl, by_filetype = devicons.get_icon_by_filetype("chat") }
`;

describe('nvim-web-devicons', () => {
  it('gets the configured icon for .chat files and the chat filetype, with a colour', async () => {
    const d = await start(
      `require("nvim-web-devicons")
      require("flemma").setup({ integrations = { devicons = { icon = "C" } } })`,
      { rtp: [devicons()] },
    );
    expect(await d.lua(CHAT_ICON)).toEqual({
      icon: 'C',
      hl: 'DevIconFlemmaChat',
      by_filetype: 'C',
    });
    expect(
      await d.lua('return vim.api.nvim_get_hl(0, { name = "DevIconFlemmaChat" }).fg ~= nil'),
    ).toBe(true);
    // A new setup() changes it.
    await d.lua('require("flemma").setup({ integrations = { devicons = { icon = "D" } } })');
    expect(await d.lua(CHAT_ICON)).toMatchObject({ icon: 'D', by_filetype: 'D' });
    // devicons rebuilds its tables when 'background' changes: the icon comes back.
    await d.command('set background=light');
    await until(
      d,
      'require("nvim-web-devicons").get_icon("notes.chat", "chat") == "D"',
      'icon registered again after the background changed',
    );
  });

  it('is registered when devicons loads after Flemma: on the first chat, or from lazy.nvim', async () => {
    const d = await start('require("flemma").setup({})', { rtp: [devicons()] });
    // Installed but not loaded by anyone: Flemma does not load it at start-up.
    expect(await d.lua('return package.loaded["nvim-web-devicons"] == nil')).toBe(true);
    await d.openChat('first.chat', ['@You:', 'Hi']);
    expect(await d.lua(CHAT_ICON)).toMatchObject({ icon: '∴', by_filetype: '∴' });

    // lazy.nvim: the plugin joins the runtimepath when loaded and announces it.
    const late = devicons();
    const e = await start('require("flemma").setup({})');
    await e.lua(
      `vim.opt.rtp:prepend(...)
      require("nvim-web-devicons")
      vim.api.nvim_exec_autocmds("User", { pattern = "LazyLoad", data = "nvim-web-devicons" })`,
      late,
    );
    expect(await e.lua(CHAT_ICON)).toMatchObject({ icon: '∴', by_filetype: '∴' });
  });

  it("leaves the user's own .chat icon alone, and does nothing when disabled", async () => {
    const d = await start(
      `require("nvim-web-devicons").setup({ override = { chat = { icon = "U", name = "Mine" } } })
      require("flemma").setup({})`,
      { rtp: [devicons()] },
    );
    await d.openChat('mine.chat', ['@You:', 'Hi']);
    expect(await d.lua(CHAT_ICON)).toMatchObject({ icon: 'U', hl: 'DevIconMine' });

    const e = await start(
      `require("nvim-web-devicons")
      require("flemma").setup({ integrations = { devicons = { enabled = false } } })`,
      { rtp: [devicons()] },
    );
    await e.openChat('off.chat', ['@You:', 'Hi']);
    expect(await e.lua('return _G.devicons_calls')).toEqual([]);
    expect(
      await e.lua('return require("nvim-web-devicons").get_icon("notes.chat", "chat") == nil'),
    ).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// nvim-notify
// ---------------------------------------------------------------------------------------------

/**
 * Like nvim-notify: a callable module with `notify(message, level, opts)` returning a record
 * `{ id }`, `opts.replace` (a record of a notification still open, else an error message as
 * nvim-notify gives), `opts.on_close`, and `dismiss()`. `_G.close_notification(id)` closes one.
 */
const NVIM_NOTIFY = `
local M = {}
_G.notify_calls = {}
local open = {}
function M.notify(message, level, opts)
  opts = opts or {}
  local replace = type(opts.replace) == "table" and opts.replace.id or opts.replace
  if replace ~= nil and not open[replace] then
    table.insert(_G.notify_calls, { error = "No matching notification found to replace" })
    return
  end
  local id = #_G.notify_calls + 1
  table.insert(_G.notify_calls, {
    id = id, message = message, level = level, title = opts.title, icon = opts.icon,
    replace = replace,
  })
  if replace ~= nil then open[replace] = nil end
  open[id] = opts.on_close or true
  return { id = id }
end
function M.dismiss() end
function M.setup() end
_G.close_notification = function(id)
  local on_close = open[id]
  open[id] = nil
  if type(on_close) == "function" then on_close() end
end
return setmetatable(M, { __call = function(_, ...) return M.notify(...) end })
`;

function nvimNotify(): string {
  return plugin({ 'lua/notify.lua': NVIM_NOTIFY });
}

describe('nvim-notify', () => {
  it('shows an error with the title "Flemma"; a repeated message replaces the open one', async () => {
    const d = await start(
      `vim.notify = require("notify")
      require("flemma").setup({})`,
      { rtp: [nvimNotify()] },
    );
    await d.press(':Flemma hots:status<CR>');
    const first = await d.lua<Record<string, unknown>[]>('return _G.notify_calls');
    expect(first).toEqual([
      {
        id: 1,
        message: "unknown command 'hots:status' (did you mean 'host:status'?)",
        level: 4,
        title: 'Flemma',
      },
    ]);
    // The same message again while the first is on screen: replaced in place.
    await d.press(':Flemma hots:status<CR>');
    expect(await d.lua('return _G.notify_calls[2]')).toMatchObject({ id: 2, replace: 1 });
    // Once closed, the next one is a new notification.
    await d.lua('_G.close_notification(2)');
    await d.press(':Flemma hots:status<CR>');
    const third = await d.lua<Record<string, unknown>>('return _G.notify_calls[3]');
    expect(third).toMatchObject({ id: 3, level: 4, title: 'Flemma' });
    expect(third['replace']).toBeUndefined();
    // A keyed message (a report run again) replaces the previous one of its key.
    await d.lua(`local notify = require("flemma.notify")
      notify.info("status: one", { key = "k" })
      notify.info("status: two", { key = "k" })`);
    expect(await d.lua('return { _G.notify_calls[4], _G.notify_calls[5] }')).toEqual([
      { id: 4, message: 'status: one', level: 2, title: 'Flemma' },
      { id: 5, message: 'status: two', level: 2, title: 'Flemma', replace: 4 },
    ]);
    // Nothing reached vim.notify past nvim-notify.
    expect(d.notifications()).toEqual([]);
  });

  it("is used with Neovim's own vim.notify too, with integrations.nvim_notify.icon", async () => {
    const d = await start(
      `-- Neovim's own vim.notify, as before the test driver wrapped it.
      local i = 1
      while true do
        local name, value = debug.getupvalue(vim.notify, i)
        if name == nil then break end
        if name == "notify" then vim.notify = value break end
        i = i + 1
      end
      require("flemma").setup({ integrations = { nvim_notify = { icon = "∴" } } })`,
      { rtp: [nvimNotify()] },
    );
    await d.lua('require("flemma.notify").warn("careful")');
    expect(await d.lua('return _G.notify_calls')).toEqual([
      { id: 1, message: 'careful', level: 3, title: 'Flemma', icon: '∴' },
    ]);
  });

  it('is left alone when another plugin owns vim.notify, or when disabled', async () => {
    // The test driver's vim.notify stands for noice, snacks, fidget…: Flemma goes through it.
    const d = await start('require("flemma").setup({})', { rtp: [nvimNotify()] });
    await d.press(':Flemma hots:status<CR>');
    await d.waitForNotification(/^Flemma: unknown command 'hots:status'/);
    // nvim-notify is not even loaded.
    expect(await d.lua('return _G.notify_calls == nil')).toBe(true);

    const e = await start(
      `vim.notify = require("notify")
      require("flemma").setup({ integrations = { nvim_notify = { enabled = false } } })`,
      { rtp: [nvimNotify()] },
    );
    await e.press(':Flemma hots:status<CR>');
    // vim.notify is nvim-notify itself here: the message arrives the plain way, prefix and all.
    expect(await e.lua('return _G.notify_calls[1].message')).toBe(
      "Flemma: unknown command 'hots:status' (did you mean 'host:status'?)",
    );
    expect(await e.lua('return _G.notify_calls[1].title')).toBe('Flemma');
  });
});

// ---------------------------------------------------------------------------------------------
// bufferline.nvim
// ---------------------------------------------------------------------------------------------

/**
 * Like bufferline.nvim in buffers mode: `setup({ options })` makes the tabline `%!` of this
 * module; each draw builds every listed buffer's element, asking `get_element_icon` with
 * `{ filetype, directory, path, extension, type }` and `name_formatter` with
 * `{ name, path, bufnr }`, as bufferline does. `_G.bufferline_drawn` is the last tabline's
 * text without highlights; `_G.bufferline_icon_hl` the icon highlight per buffer name.
 */
const BUFFERLINE = `
local M = {}
local options = {}
function M.setup(config)
  options = (config or {}).options or {}
  vim.o.showtabline = 2
  vim.o.tabline = "%!v:lua.require'bufferline'.tabline()"
end
function M.tabline()
  local plain, line = {}, {}
  _G.bufferline_icon_hl = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.bo[buf].buflisted then
      local path = vim.api.nvim_buf_get_name(buf)
      local icon, hl
      if options.get_element_icon then
        icon, hl = options.get_element_icon({
          filetype = vim.bo[buf].filetype,
          directory = vim.fn.isdirectory(path) > 0,
          path = path,
          extension = vim.fn.fnamemodify(path, ":e"),
          type = vim.bo[buf].buftype,
        })
      end
      icon = icon or "·"
      local name = vim.fn.fnamemodify(path, ":t")
      if options.name_formatter then
        name = options.name_formatter({ name = name, path = path, bufnr = buf }) or name
      end
      _G.bufferline_icon_hl[name] = hl or false
      plain[#plain + 1] = icon .. " " .. name
      line[#line + 1] = (hl and ("%#" .. hl .. "#" .. icon .. "%*") or icon) .. " " .. name
    end
  end
  _G.bufferline_drawn = table.concat(plain, " | ")
  return table.concat(line, " | ")
end
return M
`;

describe('bufferline.nvim', () => {
  it('shows the busy icon on a chat tab while its request streams, and not after', async () => {
    const { d, f: fake } = await session(
      `local flemma_bufferline = require("flemma.integrations.bufferline")
      require("bufferline").setup({ options = {
        get_element_icon = flemma_bufferline.get_element_icon,
        name_formatter = flemma_bufferline.name_formatter,
      } })
      require("flemma").setup({ model = "claude-sonnet-4-6", integrations = { bufferline = { icon = "B" } } })`,
      {
        rtp: [plugin({ 'lua/bufferline.lua': BUFFERLINE })],
        key: 'sk-test-key',
        ui: { width: 100, height: 12 },
      },
    );
    await d.openChat('idle.chat', ['@You:', 'Not now']);
    await d.openChat('busy.chat', ['@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete');
    await until(
      d,
      '_G.bufferline_drawn == "· idle.chat | · busy.chat"',
      'tabline drawn with both chats idle',
    );
    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    await d.waitForEvent('FlemmaRequestSending');
    // Redrawn by itself while the request runs: the icon and the name say busy.
    await until(
      d,
      '_G.bufferline_drawn == "· idle.chat | B busy.chat B"',
      'tabline drawn with the busy chat marked',
    );
    expect(await d.lua('return _G.bufferline_icon_hl["busy.chat B"]')).toBe('FlemmaBufferlineBusy');
    // The busy colour is the statusline's (highlights.busy).
    expect(
      await d.lua('return vim.api.nvim_get_hl(0, { name = "FlemmaBufferlineBusy" }).link'),
    ).toBe('FlemmaStatuslineBusy');
    await reply(request.stream(), 'Hi there!');
    await d.waitForEvent('FlemmaRequestFinished');
    await until(
      d,
      '_G.bufferline_drawn == "· idle.chat | · busy.chat"',
      'tabline drawn without the busy mark after the request',
    );
  });

  it('shows a new icon from setup() at once on a busy chat', async () => {
    const d = await start(
      `require("bufferline").setup({ options = {
        get_element_icon = require("flemma.integrations.bufferline").get_element_icon,
      } })
      require("flemma").setup({})`,
      { rtp: [plugin({ 'lua/bufferline.lua': BUFFERLINE })], ui: { width: 100, height: 12 } },
    );
    const chat = await d.openChat('locked.chat', ['@You:', 'Hi']);
    await d.waitForEvent('FlemmaBootComplete');
    await until(d, '_G.bufferline_drawn == "· locked.chat"', 'tabline drawn idle');
    // Held as during a request (the lock is what makes a chat busy).
    await d.lua('require("flemma.buffer").lock(..., "request")', chat);
    await until(d, '_G.bufferline_drawn == "󰔟 locked.chat"', 'tabline drawn busy');
    await d.lua('require("flemma").setup({ integrations = { bufferline = { icon = "X" } } })');
    await until(d, '_G.bufferline_drawn == "X locked.chat"', 'tabline redrawn with the new icon');
    await d.lua('require("flemma.buffer").unlock(..., "request")', chat);
    await until(d, '_G.bufferline_drawn == "· locked.chat"', 'tabline drawn idle again');
  });

  it('shows running tools too', async () => {
    const d = await start(
      `require("bufferline").setup({ options = {
        get_element_icon = require("flemma.integrations.bufferline").get_element_icon,
      } })
      require("flemma").setup({ tools = { autopilot = false } })
      ${GATED_TOOL}`,
      { rtp: [plugin({ 'lua/bufferline.lua': BUFFERLINE })], ui: { width: 100, height: 12 } },
    );
    await d.openChat('tools.chat', GATED_CHAT);
    await d.waitForEvent('FlemmaBootComplete');
    await until(d, '_G.bufferline_drawn == "· tools.chat"', 'tabline drawn idle');
    await d.command('normal! 6G');
    await d.press('<M-CR>');
    await d.waitForEvent('FlemmaToolExecuting');
    await until(d, '_G.bufferline_drawn == "󰔟 tools.chat"', 'tabline drawn with tools running');
    await until(d, '_G.finish_gated ~= nil', 'the tool started');
    await d.lua('_G.finish_gated("done")');
    await d.waitForEvent('FlemmaToolCompleted');
    await until(d, '_G.bufferline_drawn == "· tools.chat"', 'tabline drawn idle again');
  });
});

// ---------------------------------------------------------------------------------------------
// nvim-treesitter-context
// ---------------------------------------------------------------------------------------------

/**
 * Like nvim-treesitter-context: a `treesitter-context.config` module (`update()`, fields read
 * through a metatable) and `setup()` → `enable()`, which attaches to a buffer read from disk
 * unless the configured `on_attach(bufnr)` answers false. `_G.ts_attached[name]` records it.
 */
const TS_CONTEXT_CONFIG = `
local config = { enable = true }
local M = {}
function M.update(cfg) config = vim.tbl_deep_extend("force", config, cfg) end
return setmetatable(M, { __index = function(_, k) return config[k] end })
`;
const TS_CONTEXT = `
local config = require("treesitter-context.config")
local M = {}
_G.ts_attached = {}
function M.enable()
  vim.api.nvim_create_autocmd("BufReadPost", {
    group = vim.api.nvim_create_augroup("treesitter_context_update", {}),
    callback = function(args)
      local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(args.buf), ":t")
      _G.ts_attached[name] = not config.on_attach or config.on_attach(args.buf) ~= false
    end,
  })
end
function M.setup(options)
  if options then config.update(options) end
  M.enable()
end
return M
`;

describe('nvim-treesitter-context', () => {
  it('does not attach to chat buffers; the user on_attach still decides elsewhere', async () => {
    const d = await start(
      `_G.user_asked = {}
      require("treesitter-context").setup({ on_attach = function(buf)
        local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":t")
        table.insert(_G.user_asked, name)
        return not name:match("%.txt$")
      end })
      require("flemma").setup({})`,
      {
        rtp: [
          plugin({
            'lua/treesitter-context.lua': TS_CONTEXT,
            'lua/treesitter-context/config.lua': TS_CONTEXT_CONFIG,
          }),
        ],
      },
    );
    await d.openChat('talk.chat', ['@You:', 'Hi']);
    d.writeFile('readme.md', '# Title\n');
    d.writeFile('skip.txt', 'text\n');
    await d.command('edit readme.md');
    await d.command('edit skip.txt');
    expect(await d.lua('return _G.ts_attached')).toEqual({
      'talk.chat': false,
      'readme.md': true,
      'skip.txt': false,
    });
    expect(await d.lua('return _G.user_asked')).toEqual(['readme.md', 'skip.txt']);
    // Asked about a chat buffer whose filetype is not set yet (read before filetype detection).
    expect(
      await d.lua(`local buf = vim.api.nvim_create_buf(true, false)
        vim.api.nvim_buf_set_name(buf, "early.chat")
        return require("treesitter-context.config").on_attach(buf)`),
    ).toBe(false);
    // The user configures treesitter-context anew: chats stay excluded.
    await d.lua(`require("treesitter-context").setup({ on_attach = function() return true end })`);
    await d.openChat('again.chat', ['@You:', 'Hi']);
    expect(await d.lua('return _G.ts_attached["again.chat"]')).toBe(false);
    // Turned off: treesitter-context gets the user's on_attach back.
    await d.lua(
      'require("flemma").setup({ integrations = { treesitter_context = { enabled = false } } })',
    );
    await d.openChat('open.chat', ['@You:', 'Hi']);
    expect(await d.lua('return _G.ts_attached["open.chat"]')).toBe(true);
  });

  it('offers on_attach and wrap() for configuring it by hand', async () => {
    const d = await start('require("flemma").setup({})');
    expect(
      await d.lua(`local ts = require("flemma.integrations.treesitter_context")
        local chat = vim.api.nvim_create_buf(true, false)
        vim.bo[chat].filetype = "chat"
        local other = vim.api.nvim_create_buf(true, false)
        vim.bo[other].filetype = "lua"
        local wrapped = ts.wrap(function() return nil end)
        local refusing = ts.wrap(function() return false end)
        return { ts.on_attach(chat), ts.on_attach(other), wrapped(chat), wrapped(other), refusing(other) }`),
    ).toEqual([false, true, false, true, false]);
  });
});

// ---------------------------------------------------------------------------------------------
// None of them
// ---------------------------------------------------------------------------------------------

describe('without any of these plugins', () => {
  it('a chat works, messages go through vim.notify, and nothing fails', async () => {
    const { d, f: fake } = await session(
      `require("flemma").setup({
        model = "claude-sonnet-4-6",
        integrations = { nvim_notify = { icon = "∴" }, bufferline = { icon = "B" } },
      })`,
      {
        key: 'sk-test-key',
        ui: { width: 80, height: 12 },
      },
    );
    const chat = await d.openChat('plain.chat', ['@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete');
    const busy = `require("flemma.integrations.bufferline").get_element_icon({
      filetype = "chat", path = vim.api.nvim_buf_get_name(${chat}), extension = "chat" })`;
    expect(await d.lua(`return ${busy} == nil`)).toBe(true);
    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    await d.waitForEvent('FlemmaRequestSending');
    // The bufferline callbacks answer without bufferline.
    await until(d, `${busy} == "B"`, 'busy while the request runs');
    await reply(request.stream(), 'Hi there!');
    await d.waitForEvent('FlemmaRequestFinished');
    await until(d, `${busy} == nil`, 'not busy after the request');
    expect((await d.lines(chat)).join('\n')).toContain('Hi there!');
    expect(
      await d.lua(`return {
        devicons = package.loaded["nvim-web-devicons"] == nil,
        notify = package.loaded["notify"] == nil,
        bufferline = package.loaded["bufferline"] == nil,
        context = package.loaded["treesitter-context"] == nil,
        errmsg = vim.v.errmsg,
      }`),
    ).toEqual({ devicons: true, notify: true, bufferline: true, context: true, errmsg: '' });
    await d.press(':Flemma hots:status<CR>');
    await d.waitForNotification(/^Flemma: unknown command 'hots:status'/);
    // Only the message asked for: no error from any integration.
    expect(d.notifications().map((n) => n.message)).toEqual([
      "Flemma: unknown command 'hots:status' (did you mean 'host:status'?)",
    ]);
  });
});
