// A chat held in a file, run by the host's loop while Neovim shows that file (`:Flemma run`,
// docs/tasks.md "Chats on files"): the buffer follows what the file gets, is read-only until
// the run ends, and ends equal to the file; `<C-c>` in it stops the run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  anthropicReply,
  anthropicStream,
  type ScriptedStream,
} from '../helpers/anthropic-script.js';
import { launcher, MESSAGES, type Session } from '../helpers/e2e.js';

const launch = launcher();

const CONFIG = '{ tools = { auto_approve = { "read" } } }';

/** A run started: its Neovim and fake provider, the chat's buffer and file. */
interface Running {
  d: Session['d'];
  f: Session['f'];
  buf: number;
  file: string;
}

/** `:Flemma run` on a chat of `lines` (`:trust`ed first with `trust`). */
async function running(
  lines = ['@You:', 'What does notes.txt say?'],
  trust = false,
): Promise<Running> {
  const { d, f } = await launch({ config: CONFIG, files: { 'notes.txt': 'alpha\n' } });
  const buf = await d.openChat('job.chat', lines);
  if (trust) await d.command('trust');
  await d.press(':Flemma run<CR>');
  return { d, f, buf, file: join(d.home, 'work', 'job.chat') };
}

/** The run's first request answered with `text` so far, once the buffer shows it. */
async function streaming({ d, f, buf }: Running, text: string): Promise<ScriptedStream> {
  const stream = await anthropicStream(await f.nextRequest({ path: MESSAGES }));
  await stream.text(text);
  await d.waitUntil(
    'local b, text = ...; local l = vim.api.nvim_buf_get_lines(b, 0, -1, false); return l[#l] == text',
    { args: [buf, text] },
  );
  return stream;
}

describe(':Flemma run', () => {
  it('runs the chat in its file: the buffer follows it, read-only until the run is over', async () => {
    const run = await running();
    const { d, f, buf, file } = run;
    const stream = await streaming(run, 'Reading it.');
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(false);
    await stream.toolUse({
      id: 'toolu_1',
      name: 'read',
      input: { label: 'notes', path: 'notes.txt', offset: null, limit: null },
    });
    await stream.finish();
    await anthropicReply(await f.nextRequest({ path: MESSAGES }), 'It says alpha.');
    await d.waitForNotification(/job\.chat: done \(2 requests/);
    await d.waitUntil('return vim.bo[...].modifiable', { args: [buf] });
    const lines = await d.lines(buf);
    expect(lines.join('\n') + '\n').toBe(readFileSync(file, 'utf8'));
    expect(lines).toContain('alpha');
    expect(lines).toContain('It says alpha.');
    expect(await d.lua('return vim.bo[...].modified', buf)).toBe(false);
    // The chat's hooks (its bufnr is no buffer's) went to Neovim without an error anywhere.
    expect(d.notifications().filter((note) => note.level >= 3)).toEqual([]);
  });

  it('stops at <C-c> in the buffer, the partial reply kept and marked in file and buffer', async () => {
    const run = await running();
    const { d, buf, file } = run;
    await streaming(run, 'Half an ans');
    await d.press('<C-c>');
    await d.waitForNotification(/job\.chat: cancelled/);
    await d.waitUntil('return vim.bo[...].modifiable', { args: [buf] });
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/@Assistant:\nHalf an ans\n\n<!-- flemma:aborted/);
    expect((await d.lines(buf)).join('\n') + '\n').toBe(text);
  });

  it('renders its templates in Lua with the trust of the buffer that started it', async () => {
    const { d, f } = await running(['@System:', 'Two is {{ 1 + 1 }}.', '', '@You:', 'Hi.'], true);
    const request = await f.nextRequest({ path: MESSAGES });
    expect(JSON.stringify((request.body as { system: unknown }).system)).toContain('Two is 2.');
    await anthropicReply(request, 'Hello.');
    await d.waitForNotification(/job\.chat: done/);
  });

  it('does not render the templates of a chat that is not trusted, and says why', async () => {
    const { d, f } = await running(['@System:', 'Two is {{ 1 + 1 }}.', '', '@You:', 'Hi.']);
    await d.waitForNotification(
      /job\.chat: failed: .*job\.chat is not trusted: its templates do not run/,
    );
    expect(f.requests).toHaveLength(0);
  });

  it('refuses a chat with unsaved changes: nothing is sent, nothing changes', async () => {
    const { d, f } = await launch({ config: CONFIG });
    const buf = await d.openChat('job.chat', ['@You:', 'Hi.']);
    await d.press('GoMore.<Esc>');
    await d.press(':Flemma run<CR>');
    await d.waitForNotification(/unsaved changes/);
    expect(f.requests).toHaveLength(0);
    expect(await d.lines(buf)).toEqual(['@You:', 'Hi.', 'More.']);
  });
});
