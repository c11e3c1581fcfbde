// A chat the user starts in a buffer without a name and then writes (`:w name.chat`): Neovim
// names the buffer by sending BufWipeout for it, yet the buffer stays, and so must everything
// Flemma keeps of it (docs/rpc.md, `buffer:detach`).
import { describe, expect, it } from 'vitest';
import type { Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

const launch = neovimLauncher();

/** The rows of the message marks once there are `count` of them. */
async function messageRows(d: Driver, count: number): Promise<number[]> {
  const marks = await d.waitForExtmarks('flemma.messages', {
    until: '#marks == value',
    value: count,
  });
  return marks.map((mark) => mark[1]);
}

describe('a new chat written under a name', () => {
  it('keeps its marks following its text after :w name.chat', async () => {
    const d = await launch();
    await d.openChat('first.chat', ['@You:', 'Hi']);
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('enew');
    await d.command('setfiletype chat');
    await d.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, { "@You:", "What is 2 + 2?" })');
    expect(await messageRows(d, 1)).toEqual([0]);

    await d.command('write named.chat');
    await d.lua(
      'vim.api.nvim_buf_set_lines(0, -1, -1, false, { "", "@Assistant:", "4", "", "@You:", "And 3 + 3?" })',
    );
    expect(await messageRows(d, 3)).toEqual([0, 3, 6]);
    expect(await d.lua<string>('return vim.bo.filetype')).toBe('chat');
  });
});
