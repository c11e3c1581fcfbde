// A buffer that goes is forgotten only if it was a chat: a send's sink buffer, wiped after each
// reply, is not, so the host hears of no `buffer:detach` (docs/rpc.md) for it; a chat that goes
// is still forgotten, and the host told. Read off the host's wire trace (`FLEMMA_TRACE`).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import type { Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();
const launch = launcher();

/** How many `buffer:detach` notifications the host received so far. */
function detaches(file: string): number {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.endsWith(' wire:in buffer:detach')).length;
}

/**
 * Everything Neovim has scheduled so far has run and reached the host: a call made from a
 * callback scheduled after them has been answered.
 */
async function settled(d: Driver): Promise<void> {
  const after = d.eventCount;
  await d.lua(`vim.schedule(function()
    vim.schedule(function()
      require("flemma.host").call("host:info", nil, function()
        vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaTestSettled" })
      end)
    end)
  end)`);
  await d.waitForEvent('FlemmaTestSettled', { after });
}

describe('a buffer that goes', () => {
  it("is forgotten only if it was a chat: a send's sink is not, a chat is", async () => {
    const file = join(temp('flemma-sink-wipe-'), 'trace.log');
    const { d, f } = await launch({ key: 'sk-test', env: { FLEMMA_TRACE: file }, config: '{}' });
    await d.openChat('sink.chat', ['@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
    const before = d.eventCount;
    await d.press('<C-]>');
    await anthropicReply(await f.nextRequest({ path: /^\/v1\/messages/ }), 'Hi!');
    const destroyed = await d.waitForEvent('FlemmaSinkDestroyed', { after: before });
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    await settled(d);
    expect(await d.lua('return vim.api.nvim_buf_is_valid(...)', destroyed.data['bufnr'])).toBe(
      false,
    );
    expect(detaches(file)).toBe(0);

    // The chat itself going is told.
    await d.command('enew');
    await d.command('bwipeout! sink.chat');
    await settled(d);
    expect(detaches(file)).toBe(1);
  });
});
