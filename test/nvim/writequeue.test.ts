import { describe, expect, it } from 'vitest';
import { LuaBridge, rpcPortOf } from '../../src/editor/lua.js';
import { WriteScheduler } from '../../src/editor/writequeue.js';
import { type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';
import { type WriteCounter, countWrites } from '../helpers/write-counter.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

/** The editor adapter, connected to the test's Neovim like the host is. */
function adapter(d: Driver): WriteScheduler {
  return new WriteScheduler(new LuaBridge(rpcPortOf(d.nvim)));
}

/** The same, with its batches counted on the way to Neovim. */
function counted(d: Driver): { writes: WriteScheduler; count: WriteCounter } {
  const count = countWrites(new LuaBridge(rpcPortOf(d.nvim)));
  return { writes: new WriteScheduler(count.bridge), count };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('the frame-batched write queue in Neovim', () => {
  it('streams thousands of chunks into a chat buffer in a few batches', async () => {
    driver = await launch();
    const buf = await driver.openChat('stream.chat', ['@You:', 'Hi', '', '@Assistant:']);
    const { writes, count } = counted(driver);
    const writer = writes.buffer(buf);
    let expected = '';
    const started = performance.now();
    for (let i = 0; i < 2000; i++) {
      const chunk = i % 25 === 24 ? `w${String(i)}\n` : `w${String(i)} `;
      expected += chunk;
      writer.append(chunk);
      if (i % 10 === 0) await tick();
    }
    await writer.flushed();
    const elapsed = performance.now() - started;
    const lines = await driver.lines(buf);
    expect(lines.slice(0, 3)).toEqual(['@You:', 'Hi', '']);
    expect(lines.slice(3).join('\n')).toBe('@Assistant:' + expected);
    expect(count.batches).toBeLessThanOrEqual(Math.ceil(elapsed / 16) + 2);
  });

  it("never moves the user's cursor, even at the end of the buffer", async () => {
    driver = await launch();
    const buf = await driver.openChat('cursor.chat', ['@You:', 'question', '@Assistant:', 'ans']);
    await driver.command('split');
    await driver.lua('vim.api.nvim_win_set_cursor(0, {1, 2})');
    await driver.command('wincmd w');
    await driver.lua('vim.api.nvim_win_set_cursor(0, {4, 2})');
    const writes = adapter(driver);
    const writer = writes.buffer(buf);
    for (let i = 0; i < 50; i++) {
      writer.append(`wer ${String(i)}\nmore`);
      await tick();
    }
    await writer.flushed();
    const cursors = await driver.lua<[number, number][]>(
      `
      local out = {}
      for _, win in ipairs(vim.fn.win_findbuf(...)) do out[#out + 1] = vim.api.nvim_win_get_cursor(win) end
      table.sort(out, function(a, b) return a[1] < b[1] end)
      return out`,
      buf,
    );
    expect(cursors).toEqual([
      [1, 2],
      [4, 2],
    ]);
    expect((await driver.lines(buf))[3]).toBe('answer 0');
  });

  it('keeps what the user types meanwhile: above, and after the stream', async () => {
    driver = await launch();
    const buf = await driver.openChat('typing.chat', ['@You:', 'q', '@Assistant:', '']);
    const writes = adapter(driver);
    const writer = writes.buffer(buf);
    let edits = 0;
    writer.onExternalEdit(() => (edits += 1));
    writer.append('Hello');
    await writer.flushed();
    writer.append(' there');
    await writer.flushed();
    expect(edits).toBe(0);
    // The user adds a line at the top and one below the streamed text.
    await driver.press('ggOnote at the top<Esc>');
    await driver.press('Go<Esc>ilast line by the user<Esc>');
    writer.append(', world.\nSecond line.');
    await writer.flushed();
    expect(edits).toBe(1);
    expect(await driver.lines(buf)).toEqual([
      'note at the top',
      '@You:',
      'q',
      '@Assistant:',
      'Hello there, world.',
      'Second line.',
      'last line by the user',
    ]);
  });

  it('refuses to replace lines the user changed since the host read them', async () => {
    driver = await launch();
    const buf = await driver.openChat('conflict.chat', ['@You:', 'placeholder', 'end']);
    const writer = adapter(driver).buffer(buf);
    await driver.press('2GccThe user rewrote this<Esc>');
    const outcome = await writer.setLines(1, 2, ['host result'], ['placeholder']);
    expect(outcome).toBe('conflict');
    expect(await driver.lines(buf)).toEqual(['@You:', 'The user rewrote this', 'end']);
    expect(await writer.setLines(2, 3, ['new end'], ['end'])).toBe('applied');
    expect(await driver.lines(buf)).toEqual(['@You:', 'The user rewrote this', 'new end']);
  });

  it('runs a notice right after its edit, and holds it when the edit was refused', async () => {
    driver = await launch();
    const buf = await driver.openChat('notice.chat', ['@You:', 'placeholder', 'end']);
    await driver.lua(`_G.heard = {}
require("flemma.hooks").on("tool:completed", function(data)
  table.insert(_G.heard, { id = data.tool_id, line = vim.api.nvim_buf_get_lines(data.bufnr, 1, 2, false)[1] })
end)`);
    const writes = adapter(driver);
    const notice = (id: string) =>
      writes.noticeAfterWrites('hooks.emit', {
        name: 'tool:completed',
        data: { bufnr: buf, tool_name: 't', tool_id: id, status: 'success' },
      });
    const applied = writes.buffer(buf).setLines(1, 2, ['host result'], ['placeholder']);
    const went = notice('a');
    expect(await applied).toBe('applied');
    expect(await went).toBe(true);
    // The listener ran after the edit, in the same call.
    expect(await driver.lua('return _G.heard')).toEqual([{ id: 'a', line: 'host result' }]);
    await driver.press('2GccThe user rewrote this<Esc>');
    const refused = writes.buffer(buf).setLines(1, 2, ['again'], ['host result']);
    const held = notice('b');
    expect(await refused).toBe('conflict');
    expect(await held).toBe(false);
    expect(await driver.lua('return #_G.heard')).toBe(1);
  });

  it('retries while Neovim refuses edits (textlock), then writes everything in order', async () => {
    driver = await launch();
    const buf = await driver.openChat('textlock.chat', ['@Assistant:', '']);
    // An <expr> mapping that waits (as completion plugins do) holds textlock while Neovim keeps
    // serving RPC requests: every edit made meanwhile fails with E565.
    await driver.lua(`vim.keymap.set("n", "<F2>", function()
      vim.wait(20000, function() return vim.g.release_textlock end, 5)
      return ""
    end, { expr = true })`);
    await driver.press('<F2>');
    const { writes, count } = counted(driver);
    const writer = writes.buffer(buf);
    writer.append('written ');
    writer.append('after ');
    await count.retried(2);
    writer.append('the lock');
    expect(await driver.lines(buf)).toEqual(['@Assistant:', '']);
    await driver.lua('vim.g.release_textlock = true');
    await writer.flushed();
    expect(await driver.lines(buf)).toEqual(['@Assistant:', 'written after the lock']);
    expect(count.retries).toBeGreaterThanOrEqual(2);
  });

  it('writes into a locked buffer and leaves it locked', async () => {
    driver = await launch();
    const buf = await driver.openChat('locked.chat', ['@Assistant:', '']);
    await driver.lua('require("flemma.buffer").lock(..., "request")', buf);
    const writer = adapter(driver).buffer(buf);
    writer.append('streamed while locked');
    await writer.flushed();
    expect(await driver.lines(buf)).toEqual(['@Assistant:', 'streamed while locked']);
    expect(await driver.lua('return vim.bo[...].modifiable', buf)).toBe(false);
    await driver.lua('require("flemma.buffer").unlock(..., "request")', buf);
    expect(await driver.lua('return vim.bo[...].modifiable', buf)).toBe(true);
  });
});
