// Limits everywhere a model points (issue 28): a pending call may name `/dev/zero`, a FIFO or a
// huge file; the host reads what it shows, compares or counts through the bounded reader, so the
// preview and the diff say what the path is instead of reading it (or hanging on it).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Driver, startDriver } from '../helpers/driver.js';

let driver: Driver | undefined;

afterEach(async () => {
  await driver?.quit();
  driver = undefined;
});

function pendingCall(name: string, id: string, input: Record<string, unknown>): string[] {
  return [
    '@You:',
    'Change it.',
    '',
    '@Assistant:',
    `**Tool Use:** \`${name}\` (\`${id}\`)`,
    '',
    '```json',
    JSON.stringify(input),
    '```',
    '',
    '@You:',
    '',
    `**Tool Result:** \`${id}\``,
    '',
    '```flemma:tool status=pending',
    '```',
  ];
}

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
    driver = await startDriver();
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
    driver = await startDriver();
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
