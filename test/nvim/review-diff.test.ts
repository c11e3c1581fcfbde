// Reviewing a pending file change before approving it: the preview of a pending `write` or `edit`
// shows the file and the lines it would add and remove, read from the file as it is now.
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

/** The text of the preview lines of the current buffer, once one contains `needle`. */
async function previewWith(d: Driver, needle: string): Promise<string> {
  const marks = await d.waitForExtmarks('flemma_tool_preview', {
    until: `#marks > 0 and vim.inspect(marks):find(value, 1, true) ~= nil`,
    value: needle,
  });
  return JSON.stringify(marks.map((mark) => mark[3]['virt_lines']));
}

describe('the preview of a pending file change', () => {
  it('an edit shows its file and +N −M, and follows the file on disk', async () => {
    driver = await startDriver();
    const d = driver;
    d.writeFile('notes.txt', 'one\ntwo\nthree\nfour\n');
    await d.openChat(
      'edit.chat',
      pendingCall('edit', 'toolu_E1', {
        label: 'renumber',
        path: 'notes.txt',
        oldText: 'two\nthree\n',
        newText: 'TWO\n',
      }),
    );
    expect(await previewWith(d, '+1 −2')).toContain('edit: notes.txt  +1 −2  # renumber');
    // The file changes on disk so that the edit no longer applies: the next parse says so.
    d.writeFile('notes.txt', 'one\nfour\n');
    await d.command('normal! Go');
    expect(await previewWith(d, 'text not found')).toContain('notes.txt  (text not found)');
  });

  it('a write counts a missing file as empty', async () => {
    driver = await startDriver();
    const d = driver;
    await d.openChat(
      'write.chat',
      pendingCall('write', 'toolu_W1', { label: 'new', path: 'sub/new.txt', content: 'a\nb\nc\n' }),
    );
    expect(await previewWith(d, '+3 −0')).toContain('write: sub/new.txt  (6B)  +3 −0  # new');
  });
});
