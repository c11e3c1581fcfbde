// A quiet exit: quitting Neovim (`:wqa`) while a `bash` call runs, or just after one was
// cancelled, leaves no error in the log: the host finds Neovim gone and exits as it should, also
// when it finds out by writing to the channel Neovim already closed (EPIPE).
import { type ChildProcess, type ChildProcessByStdio, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
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

/** msgpack-RPC [0, 1, "ping", []]: a request the host answers. */
const PING = Buffer.from([0x94, 0x00, 0x01, 0xa4, ...Buffer.from('ping'), 0x90]);

/** The host's bundle started as Neovim starts it, its stderr ignored. */
function startHost(log: string): ChildProcessByStdio<Writable, Readable, null> {
  return spawn(process.execPath, [join(ROOT, 'dist', 'host-main.js')], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'ignore'],
    env: { ...process.env, FLEMMA_LOG_FILE: log, FLEMMA_LOG_LEVEL: 'info' },
  });
}

function ended(host: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolve) =>
    host.once('exit', (code, signal) => {
      resolve({ code, signal });
    }),
  );
}

describe('the host', () => {
  it('that writes to a channel Neovim has closed exits quietly', async () => {
    const log = join(temp('flemma-epipe-'), 'flemma.log');
    const host = startHost(log);
    const exit = ended(host);
    let out = Buffer.alloc(0);
    const received = (what: (bytes: Buffer) => boolean): Promise<void> =>
      new Promise((resolve) => {
        const look = (chunk: Buffer): void => {
          out = Buffer.concat([out, chunk]);
          if (!what(out)) return;
          host.stdout.off('data', look);
          resolve();
        };
        host.stdout.on('data', look);
      });
    // Once idle after its start, the host hands the channel over to Node's streams and asks
    // Neovim for something, so that the read waiting in the pool returns (src/host/channel.ts).
    await received((bytes) => bytes.includes('nvim_get_chan_info'));
    const asked = out.length;
    // A request: the read that waited returns with it, and the stream reads from now on.
    host.stdin.write(PING);
    await received((bytes) => bytes.length > asked);
    // Then Neovim's end of the host's stdout goes, and the next answer fails with EPIPE.
    host.stdout.destroy();
    host.stdin.write(PING);
    const { code } = await exit;
    const text = readFileSync(log, 'utf8');
    expect(errors(text)).toEqual([]);
    expect(text).toContain('Neovim closed the channel; exiting');
    expect(code).toBe(0);
  });

  it('whose stdout Neovim closed at once ends by itself, quietly, though its stdin stays open', async () => {
    // The answer to the first request fails with EPIPE while the host's read of its stdin waits
    // in the thread pool, which Node's exit would wait for: the host ends itself (SIGKILL).
    const log = join(temp('flemma-epipe-'), 'flemma.log');
    const host = startHost(log);
    const exit = ended(host);
    host.stdout.destroy();
    host.stdin.write(PING);
    const { code, signal } = await exit;
    const text = readFileSync(log, 'utf8');
    expect(errors(text)).toEqual([]);
    expect(text).toContain('Neovim closed the channel; exiting');
    expect(code === 0 || signal === 'SIGKILL').toBe(true);
  });
});
