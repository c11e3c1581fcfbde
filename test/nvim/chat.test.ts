import { describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

const launch = neovimLauncher();

const CHAT = [
  '@System:',
  'Be brief.',
  '',
  '@You:',
  'What is 15 * 7?',
  '',
  '@Assistant:',
  'Let me calculate.',
  '',
  '**Tool Use:** `calculator` (`toolu_01`)',
  '',
  '```json',
  '{"expression": "15 * 7"',
  '```',
  '',
  '@You:',
  'thanks',
];

/** The parsed tree as the host holds it, once every change so far is parsed. */
async function tree(
  d: Driver,
  bufnr: number,
): Promise<{
  messages: { role: string }[];
  diagnostics: { code: string; span: { startLine: number } }[];
}> {
  return d.lua(
    `local bufnr = ...
    local done, result
    require("flemma.host").call("buffer:tree", { bufnr = bufnr }, function(err, res) done, result = true, err or res end)
    vim.wait(5000, function() return done end, 5)
    return result`,
    bufnr,
  );
}

/** Wait until Lua shows `count` message marks for the buffer. */
async function marks(d: Driver, bufnr: number, count: number): Promise<number[]> {
  return d.lua(
    `local bufnr, count = ...
    local ns = vim.api.nvim_get_namespaces()["flemma.messages"]
    local rows
    vim.wait(5000, function()
      rows = vim.tbl_map(function(m) return m[2] end, vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, {}))
      return #rows == count
    end, 5)
    return rows`,
    bufnr,
    count,
  );
}

describe('a chat buffer in Neovim', () => {
  it('is parsed by the host, which marks each message and shows parser diagnostics', async () => {
    const driver = await launch();
    const buf = await driver.openChat('calc.chat', CHAT);
    expect(await marks(driver, buf, 4)).toEqual([0, 3, 6, 15]);
    const parsed = await tree(driver, buf);
    expect(parsed.messages.map((m) => m.role)).toEqual(['System', 'You', 'Assistant', 'You']);
    const diagnostics = await driver.lua<
      { lnum: number; severity: number; message: string; source: string }[]
    >('return vim.diagnostic.get(...)', buf);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]).toMatchObject({ lnum: 9, severity: 2, source: 'flemma' });
    expect(diagnostics[0]?.message).toContain('Failed to parse tool input');
  });

  it('follows edits without blocking: fixing the JSON clears the diagnostic, a new message gets a mark', async () => {
    const driver = await launch();
    const buf = await driver.openChat('edit.chat', CHAT);
    await marks(driver, buf, 4);
    await driver.press('13GA}<Esc>');
    await driver.press('Go<CR>@Assistant:<CR>Fine.<Esc>');
    expect(await marks(driver, buf, 5)).toEqual([0, 3, 6, 15, 18]);
    const parsed = await tree(driver, buf);
    expect(parsed.diagnostics).toEqual([]);
    expect(parsed.messages.map((m) => m.role)).toEqual([
      'System',
      'You',
      'Assistant',
      'You',
      'Assistant',
    ]);
    await driver.lua(
      `local bufnr = ...
      vim.wait(5000, function() return #vim.diagnostic.get(bufnr) == 0 end, 5)`,
      buf,
    );
    expect(await driver.lua('return #vim.diagnostic.get(...)', buf)).toBe(0);
  });

  it(']m and [m move between messages; im and am select one', async () => {
    const driver = await launch();
    const buf = await driver.openChat('nav.chat', CHAT);
    await marks(driver, buf, 4);
    await driver.press('gg');
    const d = driver;
    const cursor = async (): Promise<number> =>
      (await d.lua<[number, number]>('return vim.api.nvim_win_get_cursor(0)'))[0];
    // Each motion in turn, and the line it lands on. A count past the last message goes as far
    // as it can, as Vim's own motions do.
    const moves: [string, number][] = [
      [']m', 5],
      [']m', 8],
      ['2]m', 17],
      [']m', 17],
      ['[m', 8],
      ['[m[m', 2],
    ];
    for (const [keys, row] of moves) {
      await driver.press(keys);
      expect(await cursor()).toBe(row);
    }

    await driver.press('8G"ayim');
    expect(await driver.lua('return vim.fn.getreg("a")')).toBe(CHAT.slice(7, 14).join('\n') + '\n');
    await driver.press('5Gdam');
    expect((await driver.lines(buf)).slice(0, 4)).toEqual([
      '@System:',
      'Be brief.',
      '',
      '@Assistant:',
    ]);
  });

  it('follows the buffer across :edit! of a file changed on disk, and after a host restart', async () => {
    const driver = await launch();
    const buf = await driver.openChat('reload.chat', CHAT);
    await marks(driver, buf, 4);
    driver.writeFile('reload.chat', [...CHAT, '', '@Assistant:', 'Done.'].join('\n') + '\n');
    await driver.command('edit!');
    expect(await marks(driver, buf, 5)).toEqual([0, 3, 6, 15, 18]);
    const after = driver.eventCount;
    await driver.command('Flemma host:restart');
    await driver.waitForEvent('FlemmaHostStarted', { after });
    await driver.press('Go<CR>@You:<CR>more<Esc>');
    expect(await marks(driver, buf, 6)).toEqual([0, 3, 6, 15, 18, 21]);
    expect((await tree(driver, buf)).messages).toHaveLength(6);
  });
});
