// An ACP agent's file and terminal requests, served by Flemma (docs/agents.md, "Files and
// terminals"), against the fake agent (test/helpers/fake-acp-agent.mjs): a write recorded in the
// reply and undone with `:Flemma tool:undo`, a read of a buffer's unsaved text, the read and write
// policies, and terminals in the sandbox (output, exit, limit, kill).
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { launcher } from '../helpers/e2e.js';
import { type FakeAgent, type Step, agentConfig, fakeAgent, say } from '../helpers/fake-acp.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();
const launch = launcher();

type Session = Awaited<ReturnType<ReturnType<typeof launcher>>>;

/** Only the project is writable (commands and host-side writes alike). */
const SANDBOX = 'sandbox = { policy = { rw_paths = { "urn:flemma:cwd" } } }';

/** A chat whose one turn runs `steps`, its agent the fake one; `files` of the project. */
async function agentChat(
  steps: Step[],
  files: Record<string, string> = {},
): Promise<{ t: Session; agent: FakeAgent; work: string }> {
  const agent = fakeAgent(temp('flemma-acp-fs-'), { turns: [{ steps: [...steps, say('Done.')] }] });
  const t = await launch({
    provider: false,
    config: agentConfig(agent, SANDBOX),
    files,
    chat: ['@You:', 'Go.'],
  });
  const work = await t.d.lua<string>('return vim.fn.getcwd()');
  return { t, agent, work };
}

/** `:Flemma send`, and the reply's end. */
async function send(t: Session): Promise<void> {
  const after = t.d.eventCount;
  await t.d.command('Flemma send');
  const finished = await t.d.waitForEvent('FlemmaRequestFinished', { after });
  expect(finished.data).toMatchObject({ status: 'completed' });
}

/** What the agent's `kind` requests got back, in order. */
function answers(agent: FakeAgent, kind: string): Record<string, unknown>[] {
  return agent.events(kind);
}

describe('fs/write_text_file', () => {
  it('writes through the undo journal: the reply records it, a buffer showing the file follows, :Flemma review lists it, :Flemma tool:undo puts it back', async () => {
    const { t, agent, work } = await agentChat(
      [{ writeFile: { path: '$CWD/notes.txt', content: 'the milk\n' } }],
      { 'notes.txt': 'teh milk\n' },
    );
    // The file is open in another window, without unsaved changes.
    await t.d.command('split notes.txt | wincmd p');
    await send(t);
    expect(answers(agent, 'writeFile')).toMatchObject([{ ok: true }]);
    const notes = join(work, 'notes.txt');
    expect(readFileSync(notes, 'utf8')).toBe('the milk\n');
    expect(agent.events('initialize')[0]?.['params']).toMatchObject({
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    });
    await t.d.waitUntil(
      'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("notes.txt"), 0, -1, false)[1] == "the milk"',
    );
    const lines = await t.lines();
    const row = lines.findIndex((line) => line.startsWith('**Agent Write:**'));
    expect(lines[row]).toMatch(/^\*\*Agent Write:\*\* `[^`]+` \(written\) .*\/notes\.txt$/);
    // `:Flemma review` lists it with the calls.
    const id = /`([^`]+)`/.exec(lines[row] ?? '')?.[1] ?? '';
    const chat = await t.d.lua<number>('return vim.api.nvim_get_current_win()');
    await t.d.command('Flemma review');
    await t.d.waitUntil('return vim.fn.getqflist({ title = 1 }).title == "Flemma review"');
    expect(
      await t.d.lua('return vim.tbl_map(function(item) return item.text end, vim.fn.getqflist())'),
    ).toEqual([`${id} (acp:write): -1 +1`]);
    await t.d.lua('vim.api.nvim_set_current_win(...)', chat);
    await t.d.lua('vim.api.nvim_win_set_cursor(0, { ..., 0 })', row + 1);
    await t.d.command('Flemma tool:undo');
    await t.d.waitForNotification(/Undid acp:write/);
    expect(readFileSync(notes, 'utf8')).toBe('teh milk\n');
    await t.d.waitUntil(
      `return vim.api.nvim_buf_get_lines(0, ${String(row)}, ${String(row + 1)}, false)[1]:find("(undone)", 1, true) ~= nil`,
    );
  });

  it('is refused outside the writable paths, through a link out of them, over unsaved changes and on the chat itself', async () => {
    const { t, agent, work } = await agentChat(
      [
        { writeFile: { path: '$CWD/../outside/keep.txt', content: 'gone\n' } },
        { writeFile: { path: '$CWD/out/keep.txt', content: 'gone\n' } },
        { writeFile: { path: '$CWD/draft.txt', content: 'gone\n' } },
        { writeFile: { path: 'draft.txt', content: 'gone\n' } },
        { writeFile: { path: '$CWD/test.chat', content: 'gone\n' } },
      ],
      { '../outside/keep.txt': 'keep\n', 'draft.txt': 'draft\n' },
    );
    symlinkSync(join(work, '../outside'), join(work, 'out'));
    await t.d.command('split draft.txt');
    await t.d.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, { "mine, unsaved" })');
    await t.d.command('wincmd p');
    await send(t);
    const [outside, link, unsaved, relative, chat] = answers(agent, 'writeFile');
    for (const refused of [outside, link]) {
      expect(refused?.['error']).toMatchObject({
        message: expect.stringContaining('outside writable directories') as unknown,
      });
    }
    expect(unsaved?.['error']).toMatchObject({
      message: expect.stringContaining('unsaved changes') as unknown,
    });
    expect(relative?.['error']).toMatchObject({ code: -32602 });
    expect(chat?.['error']).toMatchObject({
      message: expect.stringContaining("this chat's own file") as unknown,
    });
    expect(readFileSync(join(work, '../outside/keep.txt'), 'utf8')).toBe('keep\n');
    expect(readFileSync(join(work, 'draft.txt'), 'utf8')).toBe('draft\n');
    expect((await t.lines()).some((line) => line.startsWith('**Agent Write:**'))).toBe(false);
  });
});

describe('fs/read_text_file', () => {
  it('reads a buffer with its unsaved changes, else the file; line and limit select lines; a trusted chat reads outside the project', async () => {
    const { t, agent } = await agentChat(
      [
        { readFile: { path: '$CWD/notes.txt' } },
        { readFile: { path: '$CWD/other.txt', line: 2, limit: 1 } },
        { readFile: { path: '$CWD/../outside/notes.txt' } },
      ],
      { 'notes.txt': 'one\ntwo\n', 'other.txt': 'a\nb\nc\n', '../outside/notes.txt': 'far\n' },
    );
    await t.d.command('trust');
    await t.d.command('split notes.txt');
    await t.d.lua('vim.api.nvim_buf_set_lines(0, 0, 1, false, { "ONE (unsaved)" })');
    await t.d.command('wincmd p');
    await send(t);
    expect(answers(agent, 'readFile').map((entry) => entry['content'])).toEqual([
      'ONE (unsaved)\ntwo\n',
      'b\n',
      'far\n',
    ]);
  });

  it('refuses a sensitive place, and (the chat not trusted) a path outside the project', async () => {
    const { t, agent } = await agentChat(
      [{ readFile: { path: '$CWD/.env' } }, { readFile: { path: '$CWD/../outside/notes.txt' } }],
      { '.env': 'KEY=secret\n', '../outside/notes.txt': 'elsewhere\n' },
    );
    await send(t);
    const [env, outside] = answers(agent, 'readFile');
    expect(env).not.toHaveProperty('content');
    expect(env?.['error']).toMatchObject({
      message: expect.stringContaining('Sensitive place: read denied') as unknown,
    });
    expect(outside?.['error']).toMatchObject({
      message: expect.stringContaining('outside the project') as unknown,
    });
    expect(JSON.stringify(agent.log())).not.toContain('secret');
  });
});

describe('terminal/*', () => {
  it('runs in the sandbox like the bash tool: its output and exit code, no write outside the project, a scrubbed environment', async () => {
    const command =
      'touch inside.txt && echo made; echo changed > ../outside/existing.txt; echo "token=${MY_TOKEN:-gone}"; exit 3';
    const { t, agent, work } = await agentChat(
      [
        { terminal: { command, env: [{ name: 'MY_TOKEN', value: 's3cret' }] } },
        { terminal: { command: 'printf', args: ['%s|', 'a b', '$HOME'], cwd: '$CWD' } },
      ],
      { '../outside/existing.txt': 'untouched\n' },
    );
    await send(t);
    const [sandboxed, program] = answers(agent, 'terminal');
    expect(sandboxed).toMatchObject({ exit: { exitCode: 3 }, truncated: false });
    const output = String(sandboxed?.['output']);
    expect(output).toContain('made');
    expect(output).toMatch(/Read-only file system/);
    expect(output).toContain('token=gone');
    expect(existsSync(join(work, 'inside.txt'))).toBe(true);
    expect(readFileSync(join(work, '../outside/existing.txt'), 'utf8')).toBe('untouched\n');
    expect(program).toMatchObject({ output: 'a b|$HOME|', exit: { exitCode: 0 } });
  });

  it('keeps the end of an output over its limit (truncated), and kill stops the command', async () => {
    const { t, agent } = await agentChat([
      { terminal: { command: 'seq 1 20000', outputByteLimit: 100 } },
      { terminal: { command: 'sleep 60', kill: true } },
    ]);
    await send(t);
    const [long, killed] = answers(agent, 'terminal');
    expect(long).toMatchObject({ truncated: true, exit: { exitCode: 0 } });
    const output = String(long?.['output']);
    expect(output.endsWith('19999\n20000\n')).toBe(true);
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(100);
    expect(killed).toMatchObject({ exit: { exitCode: null, signal: 'SIGTERM' } });
  });

  it('are killed when the turn is cancelled', async () => {
    const { t, agent, work } = await agentChat([
      { terminal: { command: 'touch started; sleep 60' } },
    ]);
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    await expect.poll(() => existsSync(join(work, 'started'))).toBe(true);
    await t.d.press('<C-c>');
    await t.d.waitForEvent('FlemmaRequestFinished', { after });
    await expect.poll(() => answers(agent, 'terminal')).toHaveLength(1);
    expect(answers(agent, 'terminal')[0]).toMatchObject({
      exit: { exitCode: null, signal: 'SIGTERM' },
    });
  });
});
