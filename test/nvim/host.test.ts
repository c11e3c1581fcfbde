import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Driver, ROOT, startDriver } from '../helpers/driver.js';

let driver: Driver | undefined;

afterEach(async () => {
  await driver?.quit();
  driver = undefined;
});

async function hostPid(d: Driver): Promise<number> {
  return d.lua<number>(`
    local chan = require("flemma.host").ensure()
    return vim.rpcrequest(chan, "ping").pid`);
}

describe('the host process', () => {
  it('starts lazily with the first chat buffer and answers', async () => {
    driver = await startDriver();
    const before = await driver.lua<{ state: string }>('return require("flemma.host").status()');
    expect(before.state).toBe('stopped');
    const started = driver.waitForEvent('FlemmaHostStarted');
    const buf = await driver.openChat('hello.chat', ['@You:', 'Hi']);
    expect(await driver.lua('return vim.bo[...].filetype', buf)).toBe('chat');
    const event = await started;
    const pid = await hostPid(driver);
    expect(event.data['pid']).toBe(pid);
    expect(pid).not.toBe(process.pid);
  });

  it('keeps the RPC channel intact when a library writes to stdout', async () => {
    driver = await startDriver({
      env: { NODE_OPTIONS: `--require ${join(ROOT, 'test/fixtures/stray-stdout.cjs')}` },
    });
    await driver.openChat();
    await driver.waitForEvent('FlemmaHostStarted');
    // Many round trips while the stray writer fires every 20 ms.
    for (let i = 0; i < 20; i++) {
      const info = await driver.lua<{ pid: number }>(`
        local chan = require("flemma.host").channel()
        return vim.rpcrequest(chan, "ping")`);
      expect(info.pid).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const logPath = await driver.lua<string>('return require("flemma.log").path()');
    const log = readFileSync(logPath, 'utf8');
    expect(log).toContain('stray console.log at-start');
    expect(log).toContain('stray stdout.write while-serving');
    expect(log).toContain('stray console.info while-serving');
    const status = await driver.lua<{ state: string; starts: number }>(
      'return require("flemma.host").status()',
    );
    expect(status).toMatchObject({ state: 'running', starts: 1 });
  });

  it('survives SIGKILL: buffer unlocked, one message naming the log, a new host on next use', async () => {
    driver = await startDriver();
    const buf = await driver.openChat('crash.chat', ['@You:', 'text']);
    await driver.waitForEvent('FlemmaHostStarted');
    const firstPid = await hostPid(driver);
    // A host-owned lock, as a running request would hold.
    await driver.lua('require("flemma.buffer").lock(..., "request")', buf);
    expect(await driver.lua('return vim.bo[...].modifiable', buf)).toBe(false);

    const notesBefore = driver.notificationCount;
    const exited = driver.waitForEvent('FlemmaHostExited');
    process.kill(firstPid, 'SIGKILL');
    await exited;

    expect(await driver.lua('return vim.bo[...].modifiable', buf)).toBe(true);
    await driver.type('GoI can still type');
    await driver.press('<Esc>');
    expect(await driver.lines(buf)).toEqual(['@You:', 'text', 'I can still type']);

    const logPath = await driver.lua<string>('return require("flemma.log").path()');
    const crashNotes = driver
      .notifications()
      .slice(notesBefore)
      .filter((note) => /exited unexpectedly/.test(note.message));
    expect(crashNotes).toHaveLength(1);
    expect(crashNotes[0]?.message).toContain(logPath);

    const restarted = driver.waitForEvent('FlemmaHostStarted', { after: driver.eventCount });
    const statusNote = driver.waitForNotification(/host: running, pid \d+/);
    await driver.command('Flemma host:status');
    const newPid = (await restarted).data['pid'];
    expect(newPid).not.toBe(firstPid);
    expect((await statusNote).message).toContain(`pid ${String(newPid)}`);
    expect(
      driver.notifications().filter((n) => /exited unexpectedly/.test(n.message)),
    ).toHaveLength(1);
  });
});
