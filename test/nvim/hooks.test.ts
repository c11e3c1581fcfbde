import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HookEmitter } from '../../src/editor/hooks.js';
import { LuaBridge, rpcPortOf } from '../../src/editor/lua.js';
import { type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

describe('the hooks bus', () => {
  it('runs hooks.on subscribers first, in order, then the User autocmd with ev.data', async () => {
    driver = await launch();
    const order = await driver.lua<string[]>(`
      local hooks = require("flemma.hooks")
      local order = {}
      vim.api.nvim_create_autocmd("User", { pattern = "FlemmaRequestSending", callback = function(ev)
        order[#order + 1] = "autocmd:" .. ev.data.bufnr
      end })
      hooks.on("request:sending", function(data) order[#order + 1] = "first:" .. data.bufnr end)
      hooks.on("request:sending", function(data) order[#order + 1] = "second:" .. data.bufnr end)
      hooks.emit("request:sending", { bufnr = 7 })
      return order`);
    expect(order).toEqual(['first:7', 'second:7', 'autocmd:7']);
    const event = await driver.waitForEvent('FlemmaRequestSending');
    expect(event.data).toEqual({ bufnr: 7 });
  });

  it('derives patterns with hyphens and always passes a table, even with no payload', async () => {
    driver = await launch();
    const seen = await driver.lua<Record<string, string>>(`
      local hooks = require("flemma.hooks")
      local seen = {}
      for _, pattern in ipairs({ "FlemmaBootComplete", "FlemmaToolUseCompleted", "FlemmaAutopilotResumeScheduled" }) do
        vim.api.nvim_create_autocmd("User", { pattern = pattern, callback = function(ev)
          seen[pattern] = type(ev.data)
        end })
      end
      local sub = "none"
      hooks.on("boot:complete", function(data) sub = type(data) end)
      hooks.emit("boot:complete")
      hooks.emit("tool-use:completed", nil)
      hooks.emit("autopilot:resume-scheduled", { bufnr = 1, delay_ms = 100 })
      seen.subscriber = sub
      return seen`);
    expect(seen).toEqual({
      FlemmaBootComplete: 'table',
      FlemmaToolUseCompleted: 'table',
      FlemmaAutopilotResumeScheduled: 'table',
      subscriber: 'table',
    });
  });

  it('unsubscribes with handle:off()', async () => {
    driver = await launch();
    const calls = await driver.lua<[number, boolean, boolean, number]>(`
      local hooks = require("flemma.hooks")
      local calls = 0
      local handle = hooks.on("conversation:idle", function() calls = calls + 1 end)
      hooks.emit("conversation:idle", { bufnr = 1 })
      local first = handle:off()
      local second = handle:off()
      hooks.emit("conversation:idle", { bufnr = 1 })
      return { calls, first, second, hooks.count("conversation:idle") }`);
    expect(calls).toEqual([1, true, false, 0]);
  });

  it('catches and logs a failing subscriber or autocmd; the rest still run', async () => {
    driver = await launch();
    const ran = await driver.lua<string[]>(`
      local hooks = require("flemma.hooks")
      local ran = {}
      hooks.on("tool:completed", function() error("subscriber exploded") end)
      hooks.on("tool:completed", function() ran[#ran + 1] = "after the failure" end)
      vim.api.nvim_create_autocmd("User", { pattern = "FlemmaToolCompleted", callback = function()
        error("autocmd exploded")
      end })
      vim.api.nvim_create_autocmd("User", { pattern = "FlemmaToolCompleted", callback = function()
        ran[#ran + 1] = "second autocmd"
      end })
      local ok = pcall(hooks.emit, "tool:completed", { bufnr = 1, tool_name = "bash", tool_id = "t1", status = "success" })
      ran[#ran + 1] = ok and "emit returned" or "emit raised"
      return ran`);
    expect(ran).toContain('after the failure');
    expect(ran).toContain('emit returned');
    const warnings = driver.notifications().map((note) => note.message);
    expect(
      warnings.some(
        (m) => m.includes("hooks.on('tool:completed')") && m.includes('subscriber exploded'),
      ),
    ).toBe(true);
    expect(ran).toContain('second autocmd');
    const log = readFileSync(
      await driver.lua<string>('return require("flemma.log").path()'),
      'utf8',
    );
    expect(log).toContain('subscriber exploded');
    expect(log).toContain('autocmd exploded');
  });

  it('delivers events fired from the host side through the editor adapter', async () => {
    driver = await launch();
    await driver.lua(`
      _G.received = {}
      require("flemma.hooks").on("request:finished", function(data) table.insert(_G.received, data.status) end)
      vim.api.nvim_create_autocmd("User", { pattern = "FlemmaRequestFinished", callback = function()
        error("a user's broken autocmd")
      end })`);
    const hooks = new HookEmitter(new LuaBridge(rpcPortOf(driver.nvim)));
    await hooks.emit('request:finished', { bufnr: 3, status: 'completed' });
    const event = await driver.waitForEvent('FlemmaRequestFinished');
    expect(event.data).toEqual({ bufnr: 3, status: 'completed' });
    expect(await driver.lua('return _G.received')).toEqual(['completed']);
    const log = readFileSync(
      await driver.lua<string>('return require("flemma.log").path()'),
      'utf8',
    );
    expect(log).toContain("a user's broken autocmd");
  });
});
