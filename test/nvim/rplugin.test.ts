import { describe, expect, it } from 'vitest';
import { type Driver, ROOT } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

describe('the remote-plugin route (rplugin/node/flemma)', () => {
  it('registers with the classic Node host and answers through the same dispatch table', async () => {
    driver = await launch();
    const info = await driver.lua<{ pid: number; version: string; actions: string[] }>(
      `local root = ...
      vim.g.node_host_prog = root .. "/node_modules/neovim/bin/cli.js"
      vim.fn["remote#host#RegisterPlugin"]("node", root .. "/rplugin/node/flemma", {
        { type = "function", name = "FlemmaHost", sync = 1, opts = vim.empty_dict() },
      })
      return vim.fn.FlemmaHost("ping")`,
      ROOT,
    );
    expect(info.pid).toBeGreaterThan(0);
    expect(info.actions).toContain('ping');
    // The job host was not involved: the remote-plugin host answered by itself.
    expect(await driver.lua('return require("flemma.host").status().state')).toBe('stopped');
    const error = await driver.lua(`return vim.fn.FlemmaHost("no:such-method")`).then(
      () => 'no error',
      (e: unknown) => String(e),
    );
    expect(error).toContain("unknown method 'no:such-method'");
  });
});
