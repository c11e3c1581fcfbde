import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { launch } from '../helpers/e2e.js';

// One Neovim for the whole file: every case below reads or resets the config module itself.
let driver: Driver;

beforeAll(async () => {
  driver = (await launch({ provider: false })).d;
});

afterAll(async () => {
  await driver.quit();
});

/** `require("flemma.config").validate(opts)` where `opts` is a Lua expression. */
async function validate(opts: string): Promise<{ ok: boolean; err: string | null }> {
  return driver.lua(`
    local ok, err = require("flemma.config").validate(${opts})
    return { ok = ok, err = err or vim.NIL }`);
}

describe('option defaults', () => {
  it('pass their own validation, and nil or {} are valid options', async () => {
    expect(await validate('require("flemma.config").defaults()')).toEqual({ ok: true, err: null });
    expect(await validate('nil')).toEqual({ ok: true, err: null });
    expect(await validate('{}')).toEqual({ ok: true, err: null });
  });

  it('are what get() returns before setup', async () => {
    const values = await driver.lua<Record<string, unknown>>(`
      local v = require("flemma.config").get()
      return {
        provider = v.provider,
        auto_approve = v.tools.auto_approve,
        tool_names = { unpack(v.tools) },
        max_concurrent = v.tools.max_concurrent,
        autopilot = v.tools.autopilot,
        thinking = v.parameters.thinking,
        max_tokens = v.parameters.max_tokens,
        host = v.host,
        experimental_empty = next(v.experimental) == nil,
      }`);
    expect(values).toEqual({
      provider: 'anthropic',
      auto_approve: ['$default'],
      tool_names: ['bash', 'edit', 'find', 'grep', 'ls', 'read', 'write'],
      max_concurrent: 2,
      autopilot: { enabled: true, max_turns: 100, resume_delay: 0 },
      thinking: { level: 'high', foreign: 'preserve' },
      max_tokens: '50%',
      host: {
        node: 'node',
        log_level: 'info',
        restart: { max_attempts: 5, window_ms: 60000, backoff_ms: 100 },
      },
      experimental_empty: true,
    });
  });

  it('hands out a fresh copy each time', async () => {
    const untouched = await driver.lua<boolean>(`
      local config = require("flemma.config")
      local d = config.defaults()
      d.tools.auto_approve[1] = "changed"
      return config.defaults().tools.auto_approve[1] == "$default"`);
    expect(untouched).toBe(true);
  });
});

describe('validation messages', () => {
  const cases: [string, string][] = [
    [
      '{ tools = { max_concurrent = "x" } }',
      `flemma.setup: option 'tools.max_concurrent' must be an integer >= 0, got string "x"`,
    ],
    ['{ keymapz = {} }', `flemma.setup: unknown option 'keymapz' (did you mean 'keymaps'?)`],
    [
      '{ editing = { autoprompt = true } }',
      `flemma.setup: unknown option 'editing.autoprompt' (did you mean 'editing.auto_prompt'?)`,
    ],
    [
      '{ parameters = { anthropic = { temprature = 1 } } }',
      `flemma.setup: unknown option 'parameters.anthropic.temprature' (did you mean 'parameters.anthropic.temperature'?)`,
    ],
    [
      '{ tools = { auto_approve = { "read", 3 } } }',
      `flemma.setup: option 'tools.auto_approve[2]' must be a string, got number 3`,
    ],
    [
      '{ tools = { auto_approve = 5 } }',
      `flemma.setup: option 'tools.auto_approve' must be a list of strings, a function or a string, got number 5`,
    ],
    [
      '{ tools = { autopilot = { enabled = "yes" } } }',
      `flemma.setup: option 'tools.autopilot.enabled' must be a boolean, got string "yes"`,
    ],
    ['{ sandbox = false }', `flemma.setup: option 'sandbox' must be a table, got boolean false`],
    [
      '{ experimental = { anything = true } }',
      `flemma.setup: unknown option 'experimental.anything'`,
    ],
    [
      '{ host = { log_level = "verbose" } }',
      `flemma.setup: option 'host.log_level' must be one of "debug", "info", "warn", "error", got string "verbose"`,
    ],
    [
      '{ host = { restart = { max_attempts = -1 } } }',
      `flemma.setup: option 'host.restart.max_attempts' must be an integer >= 0, got number -1`,
    ],
    [
      '{ parameters = { max_tokens = "lots" } }',
      `flemma.setup: option 'parameters.max_tokens' must be an integer >= 1 or a percentage from "1%" to "100%" such as "50%", got string "lots"`,
    ],
    // Real ranges (issue 28): what becomes a timer fits one, shares are 1% to 100%, no infinity.
    [
      '{ tools = { default_timeout = 3000000 } }',
      `flemma.setup: option 'tools.default_timeout' must be an integer between 1 and 2147483 (seconds), got number 3000000`,
    ],
    [
      '{ parameters = { timeout = math.huge } }',
      `flemma.setup: option 'parameters.timeout' must be an integer between 1 and 2147483 (seconds), got number inf`,
    ],
    [
      '{ ui = { usage = { timeout = 2147483648 } } }',
      `flemma.setup: option 'ui.usage.timeout' must be an integer between 0 and 2147483647 (milliseconds), got number 2147483648`,
    ],
    [
      '{ context = { warn_at = "150%" } }',
      `flemma.setup: option 'context.warn_at' must be a percentage from "1%" to "100%" such as "80%" or false, got string "150%"`,
    ],
    [
      '{ context = { elide = { low_water = "0%" } } }',
      `flemma.setup: option 'context.elide.low_water' must be a percentage from "1%" to "100%" such as "70%", got string "0%"`,
    ],
    [
      '{ parameters = { temperature = 3 } }',
      `flemma.setup: option 'parameters.temperature' must be a number between 0 and 2, got number 3`,
    ],
    [
      '{ tools = { undo = { max_bytes = 1073741824 } } }',
      `flemma.setup: option 'tools.undo.max_bytes' must be an integer between 0 and 268435456 (bytes), got number 1073741824`,
    ],
    ['{ tools = { "bash", 3 } }', `flemma.setup: option 'tools[2]' must be a string, got number 3`],
    ['"anthropic"', 'flemma.setup: options must be a table, got string'],
  ];

  it.each(cases)('%s', async (opts, message) => {
    expect(await validate(opts)).toEqual({ ok: false, err: message });
  });

  it('accepts the documented alternative forms', async () => {
    const forms = [
      '{ tools = { "bash", "read", auto_approve = function() return true end } }',
      '{ tools = { auto_approve = "my.approval.module", autopilot = false } }',
      '{ tools = { approve = { "$readonly" } } }',
      '{ thinking = "low", temperature = 0.2 }',
      '{ parameters = { thinking = false, openai = { reasoning = "high", max_tokens = 4000 } } }',
      '{ highlights = { user = { fg = "#ffffff" }, thinking_block = "Comment" } }',
      '{ keymaps = { normal = { fold_toggle = false }, text_object = false } }',
      '{ presets = { ["$fast"] = "openai gpt-5.4" }, tools = { presets = { ["$no-bash"] = { deny = { "bash" } } } } }',
      '{ turns = { padding = 2 }, editing = { conceal = false } }',
      '{ parameters = { timeout = 2147483, max_tokens = "100%" }, context = { warn_at = "1%" } }',
    ];
    for (const opts of forms) {
      expect(await validate(opts), opts).toEqual({ ok: true, err: null });
    }
  });
});

describe('setup', () => {
  it('merges over the defaults: tables merge, lists replace', async () => {
    const values = await driver.lua<Record<string, unknown>>(`
      local config = require("flemma.config")
      config.setup({
        tools = { "bash", "read", max_concurrent = 4, grep = { exclude = { ".git" } }, autopilot = false },
        editing = { auto_write = true },
        thinking = "low",
      })
      local v = config.get()
      return {
        tool_names = { unpack(v.tools) },
        max_concurrent = v.tools.max_concurrent,
        require_approval = v.tools.require_approval,
        grep = v.tools.grep,
        autopilot = v.tools.autopilot,
        auto_write = v.editing.auto_write,
        auto_prompt = v.editing.auto_prompt,
        thinking = v.parameters.thinking,
        timeout = v.parameters.timeout,
      }`);
    expect(values).toEqual({
      tool_names: ['bash', 'read'],
      max_concurrent: 4,
      require_approval: true,
      grep: { cwd: 'urn:flemma:buffer:path', exclude: ['.git'] },
      autopilot: { enabled: false, max_turns: 100, resume_delay: 0 },
      auto_write: true,
      auto_prompt: true,
      thinking: 'low',
      timeout: 600,
    });
  });

  it('starts again from the defaults on every call', async () => {
    const values = await driver.lua<[number, boolean]>(`
      local config = require("flemma.config")
      config.setup({ tools = { max_concurrent = 4 } })
      config.setup({ editing = { auto_write = true } })
      return { config.get().tools.max_concurrent, config.get().editing.auto_write }`);
    expect(values).toEqual([2, true]);
  });

  it('raises on invalid options and keeps the previous values', async () => {
    const result = await driver.lua<{ ok: boolean; err: string; kept: number }>(`
      local config = require("flemma.config")
      config.setup({ tools = { max_concurrent = 7 } })
      local ok, err = pcall(config.setup, { tools = { max_concurrent = -1 } })
      return { ok = ok, err = err, kept = config.get().tools.max_concurrent }`);
    expect(result).toEqual({
      ok: false,
      err: `flemma.setup: option 'tools.max_concurrent' must be an integer >= 0, got number -1`,
      kept: 7,
    });
  });

  it('reports a typo from require("flemma").setup without a Lua position', async () => {
    const err = await driver.lua<string>(`
      local ok, err = pcall(require("flemma").setup, { keymaps = { normal = { sned = "<C-s>" } } })
      return err`);
    expect(err).toBe(
      `flemma.setup: unknown option 'keymaps.normal.sned' (did you mean 'keymaps.normal.send'?)`,
    );
  });
});
