// `flemma.util.registry`: a Lua registry synced to the host (docs/architecture.md). The whole set
// goes out in one notification per tick after changes, only while a host runs, and again to every
// host that starts; tools, sandbox backends, approval and credential resolvers and frontmatter
// languages all keep their sets in one.
import { describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

/** Record every notification Lua sends to the host (method and params) in `_G.sent`. */
const RECORD = `
_G.sent = {}
local host = require("flemma.host")
local notify = host.notify
host.notify = function(method, ...)
  table.insert(_G.sent, { method = method, params = select(1, ...) })
  return notify(method, ...)
end`;

/** Wait (in Neovim) until `count` notifications of `method` were sent; answers their params. */
async function sent(d: Driver, method: string, count: number): Promise<unknown[]> {
  return d.lua(
    `local method, count = ...
    local function of()
      return vim.tbl_filter(function(n) return n.method == method end, _G.sent)
    end
    vim.wait(5000, function() return #of() >= count end, 1)
    return vim.tbl_map(function(n) return n.params end, of())`,
    method,
    count,
  );
}

describe('a registry synced to the host', () => {
  it('sends the whole set once per tick of changes, only while a host runs', async () => {
    driver = await launch({ setup: RECORD });
    const d = driver;
    // No host yet: changes are kept, nothing is sent (and no host starts).
    await d.lua(
      `_G.reg = require("flemma.util.registry").new({
        method = "frontmatter:languages",
        payload = function(self) return { names = self:names() } end,
      })
      _G.reg:set("toml", true)`,
    );
    // A callback scheduled now runs after the registry's own, scheduled by the change.
    await d.lua(
      `local ticked = false
      vim.schedule(function() ticked = true end)
      vim.wait(5000, function() return ticked end, 1)`,
    );
    expect(await d.lua('return { #_G.sent, require("flemma.host").channel() == nil }')).toEqual([
      0,
      true,
    ]);
    await d.lua('require("flemma.host").ensure()');
    await d.lua('_G.reg:set("ini", true) _G.reg:set("kv", true) _G.reg:remove("toml")');
    expect(await sent(d, 'frontmatter:languages', 1)).toEqual([{ names: ['ini', 'kv'] }]);
    // Removing what is not there sends nothing; the next change sends the set again.
    await d.lua('_G.reg:remove("nothing")');
    await d.lua('_G.reg:set("cfg", true)');
    expect(await sent(d, 'frontmatter:languages', 2)).toEqual([
      { names: ['ini', 'kv'] },
      { names: ['cfg', 'ini', 'kv'] },
    ]);
    expect(await d.lua('return _G.reg:names()')).toEqual(['cfg', 'ini', 'kv']);
  });

  it('every registry reaches a host that starts, before the buffers are handed to it', async () => {
    driver = await launch({
      setup: `${RECORD}
      require("flemma").setup({})
      require("flemma.secrets").register("vault", { resolve = function() end })
      require("flemma.tools.approval").register("mine", { resolve = function() end })
      require("flemma.sandbox").register_backend({
        name = "jail", available = function() return true end, wrap = function(argv) return argv end,
      })
      require("flemma.tools").register("noop", { description = "does nothing", execute = function() end })
      require("flemma.frontmatter").register_language("kv", function() return {} end)`,
    });
    const d = driver;
    await d.openChat('first.chat', ['@You:', 'hi']);
    const after = d.eventCount;
    await d.lua('_G.sent = {}');
    await d.command('Flemma host:restart');
    await d.waitForEvent('FlemmaHostStarted', { after });
    const attach = await sent(d, 'buffer:attach', 1);
    expect(attach).toHaveLength(1);
    const order = await d.lua<string[]>(
      'return vim.tbl_map(function(n) return n.method end, _G.sent)',
    );
    const first = (method: string): number => order.indexOf(method);
    for (const method of [
      'tools:define',
      'sandbox:define',
      'approval:define',
      'secrets:define',
      'frontmatter:languages',
    ]) {
      expect(first(method), method).toBeGreaterThanOrEqual(0);
      expect(first(method), method).toBeLessThan(first('buffer:attach'));
    }
    expect(await sent(d, 'secrets:define', 1)).toEqual([
      { resolvers: [{ name: 'vault', priority: 50 }] },
    ]);
    expect(await sent(d, 'sandbox:define', 1)).toEqual([
      { backends: [{ name: 'jail', priority: 50 }] },
    ]);
    expect(await sent(d, 'approval:define', 1)).toEqual([
      { resolvers: [{ name: 'mine', priority: 50, description: '' }] },
    ]);
    expect(await sent(d, 'frontmatter:languages', 1)).toEqual([{ names: ['kv'] }]);
    const tools = (await sent(d, 'tools:define', 1)) as { tools: { name: string }[] }[];
    expect(tools[0]?.tools.map((tool) => tool.name)).toEqual(['noop']);
  });
});
