import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Driver, ROOT } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

async function hostPid(d: Driver): Promise<number> {
  return d.lua<number>(`
    local chan = require("flemma.host").ensure()
    return vim.rpcrequest(chan, "ping").pid`);
}

/**
 * Until the host's start line is in the log: the host writes it once idle after its start, or
 * before its next line (src/host/main.ts), not before it answers.
 */
async function startLogged(d: Driver): Promise<void> {
  await d.waitUntil(
    `local f = io.open(require("flemma.log").path())
    local text = f and f:read("*a") or ""
    if f then f:close() end
    return text:find("%] INFO host started %(node ") ~= nil`,
  );
}
describe('the host process', () => {
  it('starts lazily with the first chat buffer and answers', async () => {
    driver = await launch();
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

  it('starts lazily with the first :Flemma command that needs it, and not before', async () => {
    driver = await launch();
    await driver.command('Flemma log:level warn');
    await driver.command('Flemma');
    expect(await driver.lua('return require("flemma.host").status().state')).toBe('stopped');
    const status = driver.waitForNotification(
      /host: running, pid \d+, up [\d.]+ s, answered in \d+ ms/,
    );
    await driver.command('Flemma host:status');
    const started = await driver.waitForEvent('FlemmaHostStarted');
    expect((await status).message).toContain(`pid ${String(started.data['pid'])}`);
  });

  it('keeps the RPC channel intact when a library writes to stdout', async () => {
    driver = await launch({
      env: { NODE_OPTIONS: `--require ${join(ROOT, 'test/fixtures/stray-stdout.cjs')}` },
    });
    await driver.openChat();
    await driver.waitForEvent('FlemmaHostStarted');
    // The stray writer starts once the log holds the start line.
    await startLogged(driver);
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
    driver = await launch();
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
    // A warning, not an error: Neovim would pause a second before redrawing over an error.
    expect(crashNotes[0]?.level).toBe(3);

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

  it('restarts with backoff after crashes and gives up after host.restart.max_attempts', async () => {
    driver = await launch({
      setup: `require("flemma").setup({ host = { restart = { max_attempts = 2, window_ms = 60000, backoff_ms = 300 } } })`,
    });
    await driver.openChat();
    await driver.waitForEvent('FlemmaHostStarted');

    const crash = async (d: Driver): Promise<void> => {
      const after = d.eventCount;
      process.kill(await hostPid(d), 'SIGKILL');
      await d.waitForEvent('FlemmaHostExited', { after });
    };

    for (let attempt = 1; attempt <= 2; attempt++) {
      await crash(driver);
      const after = driver.eventCount;
      // The next use waits for the backoff; a call made meanwhile is answered by the new host.
      const state = await driver.lua<string>(`
        _G.answer = nil
        require("flemma.host").call("host:info", nil, function(err, info) _G.answer = err or info.pid end)
        return require("flemma.host").status().state`);
      expect(state).toBe('waiting');
      const started = await driver.waitForEvent('FlemmaHostStarted', { after });
      await driver.lua(`vim.wait(5000, function() return _G.answer ~= nil end, 5)`);
      expect(await driver.lua('return _G.answer')).toBe(started.data['pid']);
    }

    await crash(driver);
    const notes = driver.notificationCount;
    expect(await driver.lua('return require("flemma.host").ensure()')).toBeNull();
    expect(await driver.lua('return require("flemma.host").status().state')).toBe('failed');
    const giveUp = await driver.waitForNotification(/not restarted automatically/, {
      after: notes,
    });
    expect(giveUp.message).toContain(':Flemma host:restart');
    expect(giveUp.message).toContain(
      await driver.lua<string>('return require("flemma.log").path()'),
    );

    const after = driver.eventCount;
    await driver.command('Flemma host:restart');
    await driver.waitForEvent('FlemmaHostStarted', { after });
    expect(await driver.lua('return require("flemma.host").status().state')).toBe('running');
  });

  it('rotates a log that grew past its limit when the host starts', async () => {
    driver = await launch();
    const path = await driver.lua<string>(`
      local log = require("flemma.log")
      log.MAX_BYTES = 1000
      log.append(string.rep("old line\\n", 200))
      return log.path()`);
    await driver.openChat();
    await driver.waitForEvent('FlemmaHostStarted');
    await hostPid(driver);
    await startLogged(driver);
    expect(readFileSync(path + '.1', 'utf8')).toContain('old line');
    const current = readFileSync(path, 'utf8');
    expect(current).not.toContain('old line');
    expect(current).toContain('host started');
  });

  it(':Flemma log:open opens the log file, which holds the host lines', async () => {
    driver = await launch();
    await driver.openChat();
    await driver.waitForEvent('FlemmaHostStarted');
    await hostPid(driver);
    await startLogged(driver);
    await driver.command('Flemma log:open');
    const name = await driver.lua<string>('return vim.api.nvim_buf_get_name(0)');
    expect(name).toBe(await driver.lua<string>('return require("flemma.log").path()'));
    const lines = await driver.lines();
    expect(lines.some((line) => /\[host \d+\] INFO host started/.test(line))).toBe(true);
    expect(lines.some((line) => /\[lua\] INFO host started \(pid \d+/.test(line))).toBe(true);
  });

  it(':Flemma host:restart replaces the host quietly; the old one exits as intended', async () => {
    driver = await launch();
    await driver.openChat();
    await driver.waitForEvent('FlemmaHostStarted');
    const oldPid = await hostPid(driver);
    const after = driver.eventCount;
    await driver.command('Flemma host:restart');
    const exited = await driver.waitForEvent('FlemmaHostExited', { after });
    expect(exited.data).toMatchObject({ pid: oldPid, intended: true });
    const started = await driver.waitForEvent('FlemmaHostStarted', { after });
    expect(started.data['pid']).not.toBe(oldPid);
    expect(driver.notifications().filter((n) => /exited unexpectedly/.test(n.message))).toEqual([]);
  });

  it('writes both sides to logging.path, verbosely when logging.enabled', async () => {
    driver = await launch();
    const path = `${driver.home}/custom/flemma-test.log`;
    await driver.lua(
      `vim.fn.mkdir(vim.fs.dirname(...), "p")
      require("flemma").setup({ logging = { enabled = true, path = ... } })`,
      path,
    );
    expect(await driver.lua('return require("flemma.log").path()')).toBe(path);
    expect(await driver.lua('return require("flemma.log").get_level()')).toBe('debug');
    await driver.openChat();
    await driver.waitForEvent('FlemmaHostStarted');
    await hostPid(driver);
    const log = readFileSync(path, 'utf8');
    expect(log).toMatch(/\[lua\] INFO host started/);
    expect(log).toMatch(/\[host \d+\] DEBUG client/);
  });

  it('keeps a log level set with :Flemma log:level for hosts started later', async () => {
    driver = await launch();
    await driver.command('Flemma log:level debug');
    await driver.openChat();
    await driver.waitForEvent('FlemmaHostStarted');
    await hostPid(driver);
    const log = readFileSync(
      await driver.lua<string>('return require("flemma.log").path()'),
      'utf8',
    );
    expect(log).toMatch(/\[host \d+\] DEBUG client/);
  });

  it('reports a host that cannot start once per action, naming the fix', async () => {
    driver = await launch({
      setup: `require("flemma").setup({ host = { node = "/nonexistent/node" } })`,
    });
    const before = driver.notificationCount;
    await driver.press(':Flemma host:status<CR>');
    await driver.waitForNotification(/host: failed/, { after: before });
    const errors = driver
      .notifications()
      .slice(before)
      .filter((note) => note.message.includes("node executable '/nonexistent/node' was not found"));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toContain('set host.node');
  });
});
