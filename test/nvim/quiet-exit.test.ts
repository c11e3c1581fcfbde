// A quiet exit: quitting Neovim (`:wqa`) while a `bash` call runs, or just after one was
// cancelled, leaves no error in the log: the host finds Neovim gone and exits as it should, also
// when it finds out by writing to the channel Neovim already closed (EPIPE).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { waitForExit } from '../helpers/processes.js';
import { tempDirs } from '../helpers/temp.js';

const launch = launcher();
const temp = tempDirs();

/** The lines of a host log that say ERROR. */
function errors(log: string): string[] {
  return log.split('\n').filter((line) => /\bERROR\b/.test(line));
}

describe('quitting Neovim', () => {
  it.each([['runs'], ['was cancelled']])(
    'with :wqa while a bash call %s logs no error',
    async (state) => {
      const t = await launch({
        key: 'sk-ant-test-key',
        config: '{ tools = { bash = { allow = { "sleep *" } } } }',
        chat: { name: 'quit.chat', lines: ['@You:', 'Wait.'] },
      });
      const { d } = t;
      await t.send();
      await t.reply('', [
        {
          id: 'toolu_Q',
          name: 'bash',
          input: { label: 'wait', command: 'sleep 30', timeout: null },
        },
      ]);
      await d.waitForEvent('FlemmaToolExecuting');
      if (state === 'was cancelled') {
        const before = d.eventCount;
        await d.command('Flemma tool:cancel');
        await d.waitForEvent('FlemmaToolCompleted', { after: before });
      }
      const pid = await d.lua<number>('return require("flemma.host").status().pid');
      await d.quit({ keepHome: true, command: 'wqa' });
      await waitForExit(pid);
      const log = readFileSync(join(d.home, 'state', 'nvim', 'flemma.log'), 'utf8');
      expect(errors(log)).toEqual([]);
    },
  );
});

describe('the host', () => {
  it('that writes to a channel Neovim has closed exits quietly', async () => {
    // Started as Neovim starts it, whose end of the host's stdout is gone at once: the host's
    // first message to Neovim fails with EPIPE.
    const log = join(temp('flemma-epipe-'), 'flemma.log');
    const host = spawn(process.execPath, [join(ROOT, 'dist', 'host-main.js')], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { ...process.env, FLEMMA_LOG_FILE: log, FLEMMA_LOG_LEVEL: 'info' },
    });
    host.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => host.once('exit', resolve));
    const text = readFileSync(log, 'utf8');
    expect(errors(text)).toEqual([]);
    expect(text).toContain('Neovim closed the channel; exiting');
    expect(code).toBe(0);
  });
});
