// One path expansion (issue 29, "one of each"): a tool path `~user/…` names that user's home
// directory (it was a file named `~user` in the chat's directory), and the Lua side expands
// configuration paths by the same rules as the host (lua/flemma/util/path.lua and
// src/core/util/expand-path.ts agree, case by case).
import { userInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { expandPath } from '../../src/core/util/expand-path.js';
import { anthropicMessages } from '../helpers/anthropic-script.js';
import { launcher } from '../helpers/e2e.js';

const launch = launcher();

describe('path expansion', () => {
  it("a read of ~user/… reads the file in that user's home directory", async () => {
    // HOME is the driver's private directory; the project (`work/`) lies in it.
    const t = await launch({
      key: 'sk-ant-test-key',
      config: '{}',
      files: { 'note.txt': 'the note in my home\n' },
      chat: { name: 'home.chat', lines: ['@You:', 'Read my note.'] },
    });
    const path = `~${userInfo().username}/work/note.txt`;
    await t.send();
    await t.reply('Reading.', [
      { id: 'toolu_home', name: 'read', input: { label: 'x', path, offset: null, limit: null } },
    ]);
    const followUp = await t.request();
    const results = anthropicMessages(followUp).flatMap((m) =>
      m.content.filter((c) => c.type === 'tool_result'),
    );
    expect(JSON.stringify(results)).toContain('the note in my home');
    await t.reply('Done.');
  });

  it('the Lua side expands as the host does', async () => {
    const { d: driver } = await launch({ provider: false });
    const env = { SET: '/set', EMPTY: '' };
    const cases = [
      '~',
      '~/',
      '~/x/y',
      `~${userInfo().username}/z`,
      '~root',
      '~no-such-user-flemma/x',
      'a/~/b',
      '~+/x',
      '$SET/a',
      '${SET}/b',
      '${UNSET:-/fallback}/c',
      '${UNSET:-~/.cache}',
      '${UNSET:-$SET}',
      '$UNSET/d',
      '${EMPTY}',
      '${EMPTY:-}',
      '$ 1 $-',
    ];
    const lua = await driver.lua<{ home: string; out: (string | null)[] }>(
      `local paths = require("flemma.util.path")
       local out = {}
       for i, p in ipairs(...) do
         local v = paths.expand(p, { SET = "/set", EMPTY = "" })
         out[i] = v == nil and vim.NIL or v
       end
       return { home = vim.uv.os_homedir(), out = out }`,
      cases,
    );
    const host = cases.map((p) => {
      try {
        return expandPath(p, env, lua.home) ?? null;
      } catch {
        return null;
      }
    });
    expect(lua.out).toEqual(host);
    expect(lua.out[0]).toBe(driver.home);
  });
});
