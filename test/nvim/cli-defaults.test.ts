// `flemma run` reads the configuration without Neovim from src/core/config/defaults.json: the
// file is what the Lua schema gives now (else `npm run gen:defaults` was not run), and the checks
// made from it answer what Lua's answer for the same frontmatter operations.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOps } from '../../src/core/config/schema-data.js';
import type { ConfigOp } from '../../src/core/config/frontmatter.js';
import { type Driver } from '../helpers/driver.js';
import { launch } from '../helpers/e2e.js';
import { ROOT } from '../helpers/paths.js';
import { DEFAULTS_FILE, defaultsText } from '../../scripts/gen-defaults.mjs';

let driver: Driver;

beforeAll(async () => {
  driver = (await launch({ provider: false, setup: 'require("flemma").setup({})' })).d;
});

afterAll(async () => {
  await driver.quit();
});

const op = (path: string[], value: unknown, kind: ConfigOp['op'] = 'set'): ConfigOp => ({
  path,
  op: kind,
  value,
  line: 2,
});

describe("flemma run's schema data", () => {
  it('is what the Lua schema gives (npm run gen:defaults)', async () => {
    const json = await driver.lua<string>(
      'return dofile(...).json()',
      join(ROOT, 'scripts/gen-defaults.lua'),
    );
    expect(readFileSync(DEFAULTS_FILE, 'utf8')).toBe(await defaultsText(json));
  });

  it.each([
    [[op(['thinking'], 'high'), op(['anthropic', 'base_url'], 'http://x'), op(['model'], 'm')]],
    [[op(['tools'], 'bash', 'remove'), op(['tools'], ['read']), op(['tools', 'approve'], 'read')]],
    [[op(['tools', 'autopilot'], false), op(['tools', 'autopilot', 'max_turns'], 3)]],
    [[op(['sandbox'], { enabled: true }), op(['sandbox'], { backend: 'x' })]],
    [[op(['limits', 'max_session_cost'], 2), op(['cache_retention'], 'long')]],
    [[op(['tools', 'my_tool'], { a: 1 }), op(['tools', 'bash', 'deny'], 'rm *', 'append')]],
    [[op(['mcp', 'servers', 'x', 'command'], 'y'), op(['ui', 'tool_output', 'lines'], 3)]],
    [[op(['tools', 'max_concurent'], 2)]],
    [[op(['tools', 'max_concurrent'], 'two')]],
    [[op(['model'], 'm', 'append')]],
  ])('answers what Lua answers for %j', async (ops) => {
    const lua = await driver.lua('return require("flemma.frontmatter").check_ops(...)', ops);
    const ts = checkOps(ops);
    if ('error' in ts) {
      // The messages' wording differs a little; both name the line and the option.
      expect(lua).toEqual({ error: expect.stringMatching(/^frontmatter line 2: /) as unknown });
      const option = /flemma\.opt\.[\w.]+/.exec(ts.error)?.[0] ?? '';
      expect((lua as { error: string }).error).toContain(option);
    } else {
      expect(lua).toEqual(ts);
    }
  });
});
