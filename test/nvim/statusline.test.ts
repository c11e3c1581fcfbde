// The statusline text end to end: `require("flemma.statusline").get()` drawn by a plain
// 'statusline', through a real send to the fake Anthropic server and a real tool run, custom
// formats, and the lualine component on a stand-in for lualine's component class.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { textReply as reply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import {
  launcher,
  type LaunchOptions,
  type Session,
  GATED_TOOL,
  GATED_CHAT,
  finishGated,
} from '../helpers/e2e.js';
import { tempDirs } from '../helpers/temp.js';

// Before the launcher: Neovim has quit before the stub's directory is removed.
const tempDir = tempDirs();

const launch = launcher();

/**
 * A plain 'statusline' showing Flemma's text. Every evaluation (each redraw, with a UI attached)
 * records what it drew in `_G.drawn`, and a new text is announced as `User FlemmaTestDrawn` (after
 * the redraw: no autocmd may run inside it), so that a test waits for what Neovim drew by itself
 * instead of holding Neovim in a `vim.wait`, which would keep it from redrawing.
 */
const STATUSLINE = `
_G.Drawn = function()
  local text = require("flemma.statusline").get()
  if text ~= _G.drawn then
    vim.schedule(function()
      vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaTestDrawn", data = { text = text } })
    end)
  end
  _G.drawn = text
  return text
end
vim.o.statusline = "%{v:lua.Drawn()}"
`;

/** Neovim with `setup` and the statusline (and no provider unless `options.key` says one). */
function session(setup: string, options: LaunchOptions = {}): Promise<Session> {
  return launch({ key: false, ...options, setup: `${setup}\n${STATUSLINE}` });
}

async function start(setup: string, options: LaunchOptions = {}): Promise<Driver> {
  return (await session(setup, options)).d;
}

/** The current window's statusline as the user sees it. */
function shown(d: Driver): Promise<string> {
  return d.lua<string>('return vim.api.nvim_eval_statusline(vim.o.statusline, {}).str');
}

/** Wait until a redraw drew a statusline that does (or does not) contain `text`. */
async function drawn(d: Driver, text: string, present = true): Promise<string> {
  const has = (value: unknown): boolean =>
    typeof value === 'string' && value.includes(text) === present;
  // Texts drawn from here on are announced as events after this count.
  const after = d.eventCount;
  const now = await d.lua<string | null>('return _G.drawn');
  if (has(now)) return now ?? '';
  const event = await d.waitForEvent('FlemmaTestDrawn', {
    after,
    match: (e) => has(e.data['text']),
  });
  return String(event.data['text']);
}

/** A tool source that keeps the host booting until `_G.finish_source()`. */
const SLOW_SOURCE = `
require("flemma.tools").register({
  timeout = 20,
  resolve = function(register, done)
    _G.finish_source = done
  end,
})
`;

describe('the statusline text', () => {
  it('shows the configured model and thinking level in chat buffers, nothing elsewhere', async () => {
    const d = await start(
      'require("flemma").setup({ model = "claude-test-model", thinking = "low" })',
    );
    const chat = await d.openChat('model.chat', ['@You:', 'Hi']);
    await d.waitForEvent('FlemmaBootComplete');
    expect(await shown(d)).toBe('claude-test-model (low)');
    await d.command('enew');
    const scratch = await d.lua<number>('return vim.api.nvim_get_current_buf()');
    expect(await shown(d)).toBe('');
    expect(await d.lua('return require("flemma.statusline").get(...)', scratch)).toBe('');
    // Asked by number, the chat buffer still answers.
    expect(await d.lua('return require("flemma.statusline").get(...)', chat)).toBe(
      'claude-test-model (low)',
    );
  });

  it('says "booting" until the host announces boot:complete', async () => {
    const d = await start(`require("flemma").setup({})\n${SLOW_SOURCE}`, {
      ui: { width: 80, height: 10 },
    });
    await d.openChat('boot.chat', ['@You:', 'Hi']);
    await d.waitForEvent('FlemmaHostStarted');
    expect(await drawn(d, 'booting…')).toBe('anthropic (high) · booting…');
    await d.lua('_G.finish_source()');
    await d.waitForEvent('FlemmaBootComplete');
    // Redrawn by itself: nobody asked for the text again.
    expect(await drawn(d, 'booting…', false)).toBe('anthropic (high)');
  });

  it('shows a streaming request while it runs, and not after it finished', async () => {
    const { d, f: fake } = await session(
      'require("flemma").setup({ model = "claude-sonnet-4-6" })',
      {
        key: 'sk-test-key',
        ui: { width: 80, height: 10 },
      },
    );
    await d.openChat('send.chat', ['@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete');
    expect(await drawn(d, 'claude-sonnet-4-6 (high)')).toBe('claude-sonnet-4-6 (high)');
    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    await d.waitForEvent('FlemmaRequestSending');
    expect(await drawn(d, '· request…')).toBe('claude-sonnet-4-6 (high) · request…');
    expect(await shown(d)).toBe('claude-sonnet-4-6 (high) · request…');
    await reply(request.stream(), 'Hi there!');
    await d.waitForEvent('FlemmaRequestFinished');
    const after = await drawn(d, 'request…', false);
    // The session now counts the request (recorded by flemma.usage before the event).
    // The context meter of that request ends it.
    expect(after).toMatch(
      /^claude-sonnet-4-6 \(high\) · 1 req \$\d+\.\d\d · \d+ \/ 200k \(\d+%\)$/,
    );
    expect(await shown(d)).toBe(after);
  });

  it('shows running tools while they run', async () => {
    const d = await start(`require("flemma").setup({ tools = { autopilot = false } })
      ${GATED_TOOL}`);
    await d.openChat('tools.chat', GATED_CHAT);
    await d.waitForEvent('FlemmaBootComplete');
    expect(await shown(d)).toBe('anthropic (high)');
    await d.command('normal! 6G');
    await d.press('<M-CR>');
    await d.waitForEvent('FlemmaToolExecuting');
    expect(await shown(d)).toBe('anthropic (high) · tools…');
    await finishGated(d, 'done');
    await d.waitForEvent('FlemmaToolCompleted');
    expect(await shown(d)).toBe('anthropic (high)');
  });
});

describe('ui.statusline.format', () => {
  it('takes a template string with the variables', async () => {
    const d = await start(`require("flemma").setup({
      provider = "openai",
      model = "gpt-test",
      ui = { statusline = { format =
        "{{ model.provider }}/{{ model.name }}{% if busy then %} [{{ busy }}]{% end %}"
        .. " {{ session.requests }} {{ string.format('%.2f', session.cost) }}"
        .. "{% if thinking.level then %} {{ thinking.level }}{% end %}{{ booting and ' boot' }}" } },
      parameters = { openai = { thinking = false } },
    })`);
    await d.openChat('format.chat', ['@You:', 'Hi']);
    await d.waitForEvent('FlemmaBootComplete');
    // No usage recorded in this session: zeros; thinking is off for openai.
    expect(await shown(d)).toBe('openai/gpt-test 0 0.00');
  });

  it('takes a function of the variables; a new setup() applies at once', async () => {
    const d = await start('require("flemma").setup({ model = "m1" })');
    await d.openChat('fn.chat', ['@You:', 'Hi']);
    await d.waitForEvent('FlemmaBootComplete');
    expect(await shown(d)).toBe('m1 (high)');
    await d.lua(`require("flemma").setup({
      model = "m2",
      thinking = 2048,
      ui = { statusline = { format = function(v)
        return string.format("%s|%s|%s|%s|%s", v.model.provider, v.model.name, v.thinking.level,
          tostring(v.busy), tostring(v.booting))
      end } },
    })`);
    expect(await shown(d)).toBe('anthropic|m2|2048|nil|false');
  });

  it('reads the session figures and the last request from flemma.usage', async () => {
    const { d, f: fake } = await session(
      `require("flemma").setup({ model = "claude-sonnet-4-6", parameters = { openai = { thinking = "low" } } })
      -- A stand-in for the usage module, answering what the test puts in these globals.
      _G.usage_figures = { requests = 0, cost = 0 }
      package.loaded["flemma.usage"] = setmetatable({
        session = function() return _G.usage_figures end,
        last = function(bufnr) return _G.usage_last end,
      }, { __index = function() return function() end end })`,
      { key: 'sk-test-key' },
    );
    await d.openChat('usage.chat', ['@You:', 'Hi']);
    await d.waitForEvent('FlemmaBootComplete');
    expect(await shown(d)).toBe('claude-sonnet-4-6 (high)');
    // The buffer's last request names another provider and model: they win over the config.
    await d.lua(`_G.usage_figures = { requests = 3, cost = 0.4567, input_tokens = 100, output_tokens = 20 }
      _G.usage_last = { provider = "openai", model = "gpt-test", cost = 0.1 }
      require("flemma.statusline").refresh()`);
    expect(await shown(d)).toBe('gpt-test (low) · 3 req $0.46');
    // A request ends: the figures are read again.
    await d.lua('_G.usage_figures = { requests = 4, cost = 1.5 }');
    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    await reply(request.stream(), 'Hello.');
    await d.waitForEvent('FlemmaRequestFinished');
    expect(await shown(d)).toBe('gpt-test (low) · 4 req $1.50');
    // The configured model changes after that request: the configuration shows again.
    await d.lua('require("flemma").setup({ model = "claude-other" })');
    expect(await shown(d)).toBe('claude-other (high) · 4 req $1.50');
  });

  it('a failing format shows a marker and one warning; % is escaped on request', async () => {
    const d = await start(
      'require("flemma").setup({ ui = { statusline = { format = "{{ nope( }}" } } })',
    );
    await d.openChat('bad.chat', ['@You:', 'Hi']);
    expect(await shown(d)).toBe('flemma: format error');
    await d.waitForNotification(/Flemma: ui\.statusline\.format: .*statusline format/);
    await d.lua(
      'require("flemma").setup({ ui = { statusline = { format = "100% {{ model.provider }}" } } })',
    );
    expect(await shown(d)).toBe('100% anthropic');
    expect(await d.lua('return require("flemma.statusline").get(0, { escape = true })')).toBe(
      '100%% anthropic',
    );
  });
});

/** A stand-in for lualine's component class, shaped like lualine's own. */
const LUALINE_COMPONENT = `
-- extend() makes a subclass; calling a class makes an instance and runs init(options);
-- draw() applies cond before update_status(), as lualine does.
local Component = {}
Component.__index = Component

function Component:extend()
  local class = {}
  for key, value in pairs(self) do
    if type(key) == "string" and key:sub(1, 2) == "__" then
      class[key] = value
    end
  end
  class.__index = class
  class.super = self
  return setmetatable(class, self)
end

function Component:__call(options)
  local instance = setmetatable({}, self)
  instance:init(options)
  return instance
end

function Component:init(options)
  self.options = options or {}
end

function Component:create_hl(color, hint)
  _G.lualine_colors = _G.lualine_colors or {}
  _G.lualine_colors[hint] = color
  return { name = "lualine_flemma_" .. hint }
end

function Component:format_hl(token)
  return "%#" .. token.name .. "#"
end

function Component:get_default_hl()
  return "%#lualine_x_normal#"
end

function Component:update_status() end

function Component:draw()
  if self.options.cond ~= nil and self.options.cond() ~= true then
    return ""
  end
  return self:update_status() or ""
end

return Component
`;

describe('the lualine component', () => {
  it('draws the text in chat buffers, with a highlighted spinner while busy', async () => {
    const stubDir = tempDir('flemma-lualine-');
    mkdirSync(join(stubDir, 'lua', 'lualine'), { recursive: true });
    writeFileSync(join(stubDir, 'lua', 'lualine', 'component.lua'), LUALINE_COMPONENT);
    const d = await start(
      `require("flemma").setup({ ui = { statusline = { format = "50% {{ model.provider }}{% if booting then %} booting{% end %}" } } })
      ${SLOW_SOURCE}
      _G.component = require("lualine.components.flemma")({ self = { section = "x" } })`,
      { rtp: [stubDir] },
    );
    await d.openChat('lualine.chat', ['@You:', 'Hi']);
    await d.waitForEvent('FlemmaHostStarted');
    const busy = await d.lua<string>('return _G.component:draw()');
    expect(busy).toMatch(
      /^%#lualine_flemma_busy#[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]%#lualine_x_normal# 50%% anthropic booting$/,
    );
    // The busy colour: FlemmaStatuslineBusy's foreground (linked to highlights.busy).
    expect(
      await d.lua(`return {
        _G.lualine_colors.busy().fg,
        vim.api.nvim_get_hl(0, { name = "FlemmaStatuslineBusy" }).link,
      }`),
    ).toEqual([expect.stringMatching(/^#[0-9a-f]{6}$/), 'DiagnosticWarn']);
    await d.lua('_G.finish_source()');
    await d.waitForEvent('FlemmaBootComplete');
    expect(await d.lua('return _G.component:draw()')).toBe('50%% anthropic');
    await d.command('enew');
    expect(await d.lua('return _G.component:draw()')).toBe('');
    // A static icon instead of the spinner.
    await d.lua(`_G.still = require("lualine.components.flemma")({ self = { section = "x" }, busy_icon = "●" })
      require("flemma.buffer").lock(vim.fn.bufnr("lualine.chat"), "request")
      vim.cmd.buffer("lualine.chat")`);
    expect(await d.lua('return _G.still:draw()')).toBe(
      '%#lualine_flemma_busy#●%#lualine_x_normal# 50%% anthropic',
    );
    // highlights.busy of a later setup() replaces Flemma's own definition.
    await d.lua('require("flemma").setup({ highlights = { busy = "ErrorMsg+bg:#000000" } })');
    expect(
      await d.lua('return vim.api.nvim_get_hl(0, { name = "FlemmaStatuslineBusy" }).link'),
    ).toBe('ErrorMsg');
  });
});
