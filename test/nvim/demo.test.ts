// `npm run demo` as a newcomer runs it: Neovim with scripts/demo/init.lua, the demo chat, the
// offline provider at its own pace. Its log is its own, and a send leaves no warning in it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';
import { tempDirs } from '../helpers/temp.js';

let driver: Driver | undefined;
const temp = tempDirs();
const launch = neovimLauncher();

/** Neovim set up as `npm run demo` sets it up (the init file it passes with `-u`). */
function startDemo(env: Record<string, string>): Promise<Driver> {
  return launch({
    env: { FLEMMA_ROOT: ROOT, FLEMMA_DEMO_PROVIDER: 'demo', ...env },
    setup: `dofile(${JSON.stringify(join(ROOT, 'scripts/demo/init.lua'))})`,
  });
}

const DEMO_CHAT = readFileSync(join(ROOT, 'scripts/demo/demo.chat'), 'utf8').split('\n');

describe('the demo', () => {
  it('logs to the file npm run demo names, and a paced send leaves no listener warning there', async () => {
    const dir = temp('flemma-demo-log-');
    const log = join(dir, 'flemma.log');
    driver = await startDemo({ FLEMMA_DEMO_LOG: log });
    const buf = await driver.openChat('demo.chat', DEMO_CHAT);
    expect(await driver.lua('return require("flemma.log").path()')).toBe(log);

    // The demo's own pace (a pause before each streamed piece): many pauses on one send.
    await driver.press('G<C-]>');
    const finished = await driver.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toMatchObject({ bufnr: buf, status: 'completed' });
    await driver.waitForEvent('FlemmaApprovalNeeded');

    // Everything the host wrote to stderr is in the log once it has exited.
    const after = driver.eventCount;
    await driver.lua('require("flemma.host").stop()');
    await driver.waitForEvent('FlemmaHostExited', { after });
    const written = readFileSync(log, 'utf8');
    expect(written).toContain('host started');
    expect(written).not.toMatch(/MaxListenersExceededWarning|memory leak/);
    // Nothing went to the user's own log.
    expect(existsSync(join(driver.home, 'state', 'nvim', 'flemma.log'))).toBe(false);
  });

  it('started by hand, without a log path, logs to a temporary file', async () => {
    driver = await startDemo({});
    await driver.openChat('demo.chat', DEMO_CHAT);
    const paths = await driver.lua<{ log: string; temp: string; user: string }>(
      `return {
        log = require("flemma.log").path(),
        temp = vim.fn.fnamemodify(vim.fn.tempname(), ":h"),
        user = vim.fn.stdpath("log"),
      }`,
    );
    expect(paths.log).toBe(join(paths.temp, 'flemma-demo.log'));
    expect(paths.log.startsWith(paths.user)).toBe(false);
  });
});
