// The protocol in a running Neovim and host: the Lua side's method table and the host's dispatch
// are the protocol's (src/editor/protocol/), the host's defaults are the schema's, and the
// configuration travels only when it changed (its generation).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_DEFAULTS } from '../../src/core/config/config.js';
import { HOST_TO_LUA, LUA_TO_HOST } from '../../src/editor/protocol/index.js';
import { type Driver } from '../helpers/driver.js';
import { launch } from '../helpers/e2e.js';

let driver: Driver;

beforeAll(async () => {
  driver = (await launch({ provider: false, setup: 'require("flemma").setup({})' })).d;
});

afterAll(async () => {
  await driver.quit();
});

/** Every leaf of `CONFIG_DEFAULTS` as `[path, value]`. */
function leaves(value: unknown, path: string[] = []): [string[], unknown][] {
  if (typeof value !== 'object' || value === null) return [[path, value]];
  return Object.entries(value).flatMap(([key, item]) => leaves(item, [...path, key]));
}

describe('the protocol in Neovim', () => {
  it("has Lua's method table and the host's dispatch", async () => {
    const methods = await driver.lua<string[]>(
      'local names = vim.tbl_keys(require("flemma.rpc").methods) table.sort(names) return names',
    );
    expect(methods).toEqual(Object.keys(HOST_TO_LUA).sort());
    const info = await driver.lua<{ actions: string[] }>(
      'return vim.rpcrequest(require("flemma.host").ensure(), "ping")',
    );
    expect(info.actions).toEqual(Object.keys(LUA_TO_HOST).sort());
  });

  it("gives the options the host reads the schema's defaults", async () => {
    for (const [path, value] of leaves(CONFIG_DEFAULTS)) {
      const lua = await driver.lua(
        'return vim.tbl_get(require("flemma.config").defaults(), unpack(...))',
        path,
      );
      expect([path.join('.'), lua]).toEqual([path.join('.'), value]);
    }
  });
});

describe("the configuration's generation", () => {
  it('editor.context and config.snapshot carry the configuration only when asked with another generation', async () => {
    const answer = await driver.lua<Record<string, [boolean, boolean]>>(`
      local rpc = require("flemma.rpc")
      local config = require("flemma.config")
      local buf = vim.api.nvim_get_current_buf()
      local function probe(method, params)
        local a = rpc.dispatch(method, params)
        return { a.generation == config.generation(), a.config ~= nil }
      end
      local current = config.generation()
      local out = {
        context_none = probe("editor.context", { bufnr = buf, names = {} }),
        context_old = probe("editor.context", { bufnr = buf, names = {}, generation = current - 1 }),
        context_current = probe("editor.context", { bufnr = buf, names = {}, generation = current }),
        snapshot_none = probe("config.snapshot", vim.NIL),
        snapshot_current = probe("config.snapshot", { generation = current }),
      }
      require("flemma").setup({ model = "claude-gen" })
      out.after_setup = { config.generation() ~= current, probe("editor.context", { bufnr = buf, names = {}, generation = current })[2] }
      return out`);
    expect(answer).toEqual({
      context_none: [true, true],
      context_old: [true, true],
      context_current: [true, false],
      snapshot_none: [true, true],
      snapshot_current: [true, false],
      after_setup: [true, true],
    });
  });

  it('is sent to the host once, and again after setup() or a run-time change', async () => {
    const d = driver;
    await d.lua(`
      local rpc = require("flemma.rpc")
      local original = rpc.methods["editor.context"]
      rpc.methods["editor.context"] = function(params)
        local answer = original(params)
        vim.api.nvim_exec_autocmds("User", {
          pattern = "ProbeContext",
          data = { sent = answer.config ~= nil },
        })
        return answer
      end`);
    const buf = await d.openChat('generation.chat', ['@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete');
    /** `:Flemma status` (one `editor.context`): whether it carried the configuration, and the report. */
    const status = async (): Promise<{ sent: boolean[]; lines: string[] }> => {
      const from = d.eventCount;
      await d.lua(
        `require("flemma.host").call("chat:status", { bufnr = ... }, function(err, result)
          vim.api.nvim_exec_autocmds("User", {
            pattern = "ProbeStatus",
            data = { lines = result and result.lines or { tostring(err) } },
          })
        end)`,
        buf,
      );
      const done = await d.waitForEvent('ProbeStatus', { after: from });
      const sent = d
        .eventsSeen('ProbeContext')
        .slice(
          d
            .eventsSeen()
            .slice(0, from)
            .filter((e) => e.pattern === 'ProbeContext').length,
        )
        .map((event) => event.data['sent'] === true);
      return { sent, lines: done.data['lines'] as string[] };
    };
    // The host holds the generation of setup() by now: the first status sends it (or an earlier
    // question did), the second does not.
    await status();
    expect((await status()).sent).toEqual([false]);
    await d.lua('require("flemma").setup({ model = "claude-other" })');
    const afterSetup = await status();
    expect(afterSetup.sent).toEqual([true]);
    expect(afterSetup.lines).toContain('model: "claude-other"  (setup)');
    await d.command('Flemma autopilot:disable');
    const afterSwitch = await status();
    expect(afterSwitch.sent).toEqual([true]);
    expect(afterSwitch.lines.find((line) => line.startsWith('autopilot:'))).toMatch(
      /^autopilot: disabled/,
    );
    expect((await status()).sent).toEqual([false]);
  });
});
