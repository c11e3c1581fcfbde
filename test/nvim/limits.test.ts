// Limits everywhere a model points (issue 28): a pending call may name `/dev/zero`, a FIFO or a
// huge file; the host reads what it shows, compares or counts through the bounded reader, so the
// preview and the diff say what the path is instead of reading it (or hanging on it).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { jsonChat, pendingCall } from '../helpers/chat-lines.js';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { type FakeProvider } from '../helpers/fake-provider.js';
import { launcher, type Session } from '../helpers/e2e.js';

let home: string | undefined;

// Declared before the launcher's: after hooks run last-declared first, so Neovim quits and the
// fake provider stops before the private directory goes.
afterEach(() => {
  if (home !== undefined) rmSync(home, { recursive: true, force: true });
  home = undefined;
});

const launch = launcher();

/** The preview lines of the current buffer, once one contains `needle`. */
async function previewWith(d: Driver, needle: string): Promise<string> {
  const marks = await d.waitForExtmarks('flemma_tool_preview', {
    until: `#marks > 0 and vim.inspect(marks):find(value, 1, true) ~= nil`,
    value: needle,
  });
  return JSON.stringify(marks.map((mark) => mark[3]['virt_lines']));
}

/** `gD` on the placeholder's fence (line 15), as a user presses it. */
async function pressDiff(d: Driver): Promise<void> {
  await d.command('normal! 15G');
  await d.press('gD');
}

describe('a pending call that names something other than a regular file', () => {
  it('an edit of /dev/zero: the preview and gD say what it is, and the host stays responsive', async () => {
    const { d: driver } = await launch({ key: false });
    const d = driver;
    await d.openChat(
      'zero.chat',
      pendingCall('edit', 'toolu_Z1', {
        label: 'zero',
        path: '/dev/zero',
        oldText: 'a',
        newText: 'b',
      }),
    );
    expect(await previewWith(d, 'not a regular file')).toContain(
      'edit: /dev/zero  (not a regular file)  # zero',
    );
    await pressDiff(d);
    const note = await d.waitForNotification(/Cannot show \/dev\/zero as a diff/);
    expect(note.message).toBe(
      'Flemma: Cannot show /dev/zero as a diff: /dev/zero is a character device, not a regular file',
    );
    // No diff tab opened.
    expect(await d.lua('return #vim.api.nvim_list_tabpages()')).toBe(1);
    // The host still answers: a pending edit of an ordinary file gets its count.
    d.writeFile('notes.txt', 'one\ntwo\n');
    await d.openChat(
      'notes.chat',
      pendingCall('edit', 'toolu_N1', {
        label: 'shout',
        path: 'notes.txt',
        oldText: 'two\n',
        newText: 'TWO\n',
      }),
    );
    expect(await previewWith(d, '+1 −1')).toContain('edit: notes.txt  +1 −1  # shout');
  });

  it('a write to a FIFO: the preview and gD do not hang on it', async () => {
    const { d: driver } = await launch({ key: false });
    const d = driver;
    execFileSync('mkfifo', [join(d.home, 'work', 'pipe')]);
    await d.openChat(
      'fifo.chat',
      pendingCall('write', 'toolu_P1', { label: 'pipe', path: 'pipe', content: 'x\n' }),
    );
    expect(await previewWith(d, 'not a regular file')).toContain(
      'write: pipe  (2B)  (not a regular file)  # pipe',
    );
    await pressDiff(d);
    const note = await d.waitForNotification(/Cannot show pipe as a diff/);
    expect(note.message).toBe(
      'Flemma: Cannot show pipe as a diff: pipe is a FIFO (named pipe), not a regular file',
    );
    expect(await d.lua('return #vim.api.nvim_list_tabpages()')).toBe(1);
  });
});

describe('a write whose undo record cannot be written', () => {
  it('waits for approval with the reason; approved, it runs and tool:undo says why there is no record', async () => {
    // Neovim's state directory is a tmpfs of 64 KiB (bubblewrap), filled below: a real ENOSPC.
    home = mkdtempSync(join(tmpdir(), 'flemma-e2e-full-'));
    const { d: driver, f: fake } = await launch({
      home,
      wrap: [
        'bwrap',
        '--dev-bind',
        '/',
        '/',
        '--size',
        '65536',
        '--tmpfs',
        join(home, 'state'),
        '--',
      ],
      setup: 'require("flemma").setup({ tools = { autopilot = false } })',
    });
    const d = driver;
    await d.openChat('full.chat', ['@You:', 'Write it.']);
    await d.waitForEvent('FlemmaBootComplete');
    const filled = await d.lua<string>(`
      local dir = vim.fn.stdpath("state")
      vim.fn.mkdir(dir, "p")
      local fd = assert(vim.uv.fs_open(dir .. "/filler", "w", 384))
      local chunk = string.rep("x", 4096)
      local err
      for _ = 1, 4096 do
        local ok, e = vim.uv.fs_write(fd, chunk)
        if not ok then err = e break end
      end
      vim.uv.fs_close(fd)
      return tostring(err)`);
    expect(filled).toContain('ENOSPC');

    await d.press('<C-]>');
    await anthropicReply(await fake.nextRequest({ path: '/v1/messages' }), 'Writing.', [
      { id: 'toolu_W', name: 'write', input: { label: 'out', path: 'out.txt', content: 'x\n' } },
    ]);
    await d.waitForEvent('FlemmaRequestFinished');
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaApprovalNeeded');
    // The approval notice says why, and the write has not run.
    const notice = await d.waitForNotification(/Approval needed: write/);
    expect(notice.message).toMatch(
      /write \(toolu_W\): no undo record: ENOSPC: no space left on device.*; approve to write without undo/,
    );
    const out = join(d.home, 'work', 'out.txt');
    expect(existsSync(out)).toBe(false);
    // :Flemma tool:why names the guard and the reason (the cursor is on the waiting block).
    await d.press(':Flemma tool:why<CR>');
    const why = await d.waitForNotification(/write \(toolu_W\): require_approval/);
    expect(why.message).toContain('urn:flemma:approval:undo');
    expect(why.message).toContain('no undo record: ENOSPC');

    // The user approves anyway: it runs without a record, and says so.
    let count = d.eventCount;
    await d.press('<M-CR>');
    const done = await d.waitForEvent('FlemmaToolCompleted', { after: count });
    expect(done.data['status']).toBe('success');
    expect(readFileSync(out, 'utf8')).toBe('x\n');
    await d.waitForNotification(
      /toolu_W changed files without an undo record: it could not be written \(ENOSPC/,
    );

    // :Flemma tool:undo on its result says there is no record because it could not be written.
    const row = (await d.lines()).findIndex((line) =>
      line.startsWith('**Tool Result:** `toolu_W`'),
    );
    await d.command(`normal! ${String(row + 1)}G`);
    count = d.notificationCount;
    await d.press(':Flemma tool:undo<CR>');
    const undo = await d.waitForNotification(/Nothing to undo write/, { after: count });
    expect(undo.message).toMatch(
      /Nothing to undo write \(toolu_W\): it ran without an undo record, which could not be written \(ENOSPC/,
    );
  });
});

/** `:Flemma send` on the chat `name` asking `Hello`: the reply `text` is written, completed. */
async function sendsAndCompletes(
  d: Driver,
  f: FakeProvider,
  name: string,
  text: string,
): Promise<void> {
  await d.openChat(name, ['@You:', 'Hello']);
  await d.waitForEvent('FlemmaBootComplete');
  await d.command('Flemma send');
  await anthropicReply(await f.nextRequest({ path: '/v1/messages' }), text);
  const done = await d.waitForEvent('FlemmaRequestFinished');
  expect(done.data['status']).toBe('completed');
}

describe('a timeout beyond what a timer takes', () => {
  function startWith(setup: string): Promise<Session> {
    return launch({ setup });
  }

  it('setup() refuses parameters.timeout = 999999999 with its range, and a send still works', async () => {
    const { d, f } = await startWith('require("flemma").setup({})');
    const err = await d.lua<string>(`
      local ok, err = pcall(require("flemma").setup, { parameters = { timeout = 999999999 } })
      return err`);
    expect(err).toBe(
      "flemma.setup: option 'parameters.timeout' must be an integer between 1 and 2147483 (seconds), got number 999999999",
    );
    await sendsAndCompletes(d, f, 'send.chat', 'Hi there.');
    expect(await d.lines()).toContain('Hi there.');
  });

  it('a frontmatter timeout of 999999999 is an error on its line, and nothing is sent', async () => {
    const { d, f } = await startWith('require("flemma").setup({})');
    const lines = jsonChat('{ "flemma": { "parameters": { "timeout": 999999999 } } }', [
      '@You:',
      'Hello',
    ]);
    await d.openChat('timeout.chat', lines);
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('Flemma send');
    const note = await d.waitForNotification(/parameters\.timeout/);
    expect(note.message).toContain(
      "frontmatter line 2: option 'flemma.opt.parameters.timeout' must be an integer between 1 and 2147483 (seconds), got number 999999999",
    );
    expect(f.requests).toHaveLength(0);
    expect(await d.lines()).toEqual(lines);
  });

  it('the largest timeout the range allows sends and gets its reply', async () => {
    const { d, f } = await startWith(
      'require("flemma").setup({ parameters = { timeout = 2147483, stream_idle_timeout = 2147483 } })',
    );
    await sendsAndCompletes(d, f, 'max.chat', 'In time.');
  });
});
