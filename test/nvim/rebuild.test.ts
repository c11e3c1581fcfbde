// The install and update as a plugin manager does them, on a copy of the plugin: a host that is not
// built says what to run (lazy.nvim's build and the npm command), and a new build written under a
// running Neovim (an update) restarts the host on it at the next idle moment: at once when nothing
// runs, after the streaming reply when one runs.
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MESSAGE_START, textDeltas, textDelta, endMessage } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { copyInstall } from '../helpers/install.js';

let plugin: string | undefined;

// Declared before the launcher's: after hooks run last-declared first, so Neovim quits and
// the fake provider stops before this runs.
afterEach(() => {
  if (plugin !== undefined) rmSync(plugin, { recursive: true, force: true });
  plugin = undefined;
});

const launch = launcher();

function install(options: { dist: boolean }): string {
  plugin = copyInstall(mkdtempSync(join(tmpdir(), 'flemma-plugin-')), options);
  return plugin;
}

/** What `npm run build` does last: a new dist/build-info.json (through a rename, as a writer may). */
function rebuild(dir: string): void {
  const path = join(dir, 'dist', 'build-info.json');
  const info = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  const next = { ...info, built_at: new Date(Date.now() + 1000).toISOString() };
  writeFileSync(`${path}.new`, JSON.stringify(next, null, 2) + '\n');
  renameSync(`${path}.new`, path);
}

function pidOf(d: Driver): Promise<number | null> {
  return d.lua<number | null>('return require("flemma.host").status().pid or vim.NIL');
}

/** Neovim with the plugin installed at `dir`, set up with the defaults and no provider key. */
async function installedAt(dir: string): Promise<Driver> {
  return (await launch({ key: false, plugin: dir, setup: 'require("flemma").setup({})' })).d;
}

describe('a plugin that is not built', () => {
  it('says to run :Lazy build flemma or the npm command, in the error and in :checkhealth', async () => {
    const dir = install({ dist: false });
    const driver = await installedAt(dir);
    await driver.openChat('a.chat', ['@You:', 'Hi']);
    const note = await driver.waitForNotification(/the host is not built/);
    expect(note.message).toContain(`${join(dir, 'dist', 'host.js')} is missing`);
    expect(note.message).toContain(
      `run \`:Lazy build flemma\` (lazy.nvim), or \`npm ci --omit=dev && npm run build\` in ${dir}`,
    );
    await driver.command('checkhealth flemma');
    const report = (
      await driver.lua<string[]>(`
        for _, buf in ipairs(vim.api.nvim_list_bufs()) do
          if vim.bo[buf].filetype == "checkhealth" then
            return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
          end
        end
        return {}`)
    ).join('\n');
    expect(report).toContain(':Lazy build flemma');
    expect(report).toContain('npm ci --omit=dev && npm run build');
  });
});

describe('a new build under a running Neovim', () => {
  it('restarts an idle host on it, once, with a message', async () => {
    const dir = install({ dist: true });
    const driver = await installedAt(dir);
    const buf = await driver.openChat('a.chat', ['@You:', 'Hi']);
    await driver.waitForEvent('FlemmaHostStarted');
    const first = await pidOf(driver);
    const before = driver.eventCount;
    rebuild(dir);
    const note = await driver.waitForNotification(/restarted on the new build/);
    const started = await driver.waitForEvent('FlemmaHostStarted', { after: before });
    expect(started.data['pid']).not.toBe(first);
    expect(note.message).toBe(
      `Flemma was updated: the host restarted on the new build (pid ${String(started.data['pid'])})`,
    );
    const exited = await driver.waitForEvent('FlemmaHostExited', { after: before });
    expect(exited.data).toMatchObject({ pid: first, intended: true });
    // The new host follows the chat buffer again.
    await driver.lua(
      'vim.api.nvim_buf_set_lines(..., -1, -1, false, { "", "@Assistant:", "Hello", "", "@You:", "More" })',
      buf,
    );
    await driver.waitUntil(
      `local ns = vim.api.nvim_get_namespaces()["flemma.messages"]
      return ns ~= nil and #vim.api.nvim_buf_get_extmarks(..., ns, 0, -1, {}) == 3`,
      { args: [buf] },
    );
    expect(driver.notifications().filter((n) => /Flemma was updated/.test(n.message))).toHaveLength(
      1,
    );
  });

  it('waits for a streaming reply to end, then restarts', async () => {
    const dir = install({ dist: true });
    const { d: driver, f: fake } = await launch({
      plugin: dir,
      setup: 'require("flemma").setup({})',
    });
    await driver.openChat('a.chat', ['@You:', 'Hi']);
    await driver.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    const stream = request.stream();
    await stream.sse('message_start', MESSAGE_START);
    await textDeltas(stream, []);
    await textDelta(stream, 'Half a reply');
    await driver.waitUntil(
      'return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), "Half a reply")',
    );
    const first = await pidOf(driver);
    const before = driver.eventCount;
    rebuild(dir);
    // While the reply streams, the host stays and the message says what happens.
    const waiting = await driver.waitForNotification(/restarts on the new build once/);
    expect(waiting.message).toContain(':Flemma host:restart restarts it now');
    expect(await pidOf(driver)).toBe(first);
    expect(driver.eventsSeen('FlemmaHostStarted').slice(before)).toEqual([]);

    await textDelta(stream, ', and the rest.');
    await endMessage(stream);
    const finished = await driver.waitForEvent('FlemmaRequestFinished');
    expect(finished.data['status']).toBe('completed');
    const started = await driver.waitForEvent('FlemmaHostStarted', { after: before });
    expect(started.data['pid']).not.toBe(first);
    // The reply is whole: the restart came after it.
    expect(await driver.lines()).toContain('Half a reply, and the rest.');
  });
});
