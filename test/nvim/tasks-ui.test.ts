// Seeing a task (docs/tasks.md, "Seeing a task"): `:Flemma tasks` lists a chat's children from
// its tasks folder (their frontmatter names the parent) and opens one, `gf` on a task result's
// path opens the child, and a child continued like any chat sends its answer back with
// `:Flemma task:return`.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicStream } from '../helpers/anthropic-script.js';
import { placeholder, toolResult, toolUse } from '../helpers/chat-lines.js';
import type { Driver } from '../helpers/driver.js';
import { launcher, MESSAGES } from '../helpers/e2e.js';

const launch = launcher();

/** A child's file as the task service writes it, then what happened in it. */
function child(parent: string, toolId: string, prompt: string, rest: string[]): string {
  const frontmatter = {
    flemma: { tools: { $set: ['read', 'grep', 'find', 'ls'] } },
    task: { agent: 'explorer', parent, tool_id: toolId },
  };
  return [
    '```json',
    ...JSON.stringify(frontmatter, null, 2).split('\n'),
    '```',
    '@You:',
    prompt,
    '',
    ...rest,
  ].join('\n');
}

/** The parent: a `task` call, its result (the child's answer and path), the model's answer. */
const PARENT = [
  '@You:',
  'Find the callers of parseChat.',
  '',
  '@Assistant:',
  ...toolUse(
    'task',
    'toolu_T1',
    '{"prompt":"Find every caller of parseChat","name":"find callers"}',
  ),
  '',
  '@You:',
  ...toolResult('toolu_T1', [
    'Two callers: a.ts and b.ts.',
    '',
    "The task's chat: notes.tasks/01-find-callers.chat",
  ]),
  '',
  '@Assistant:',
  'There are two callers.',
  '',
  '@You:',
  '',
];

/** The project: `project/notes.chat`, two children of it and one of another chat. */
function writeProject(d: Driver): void {
  d.writeFile(
    'project/notes.tasks/01-find-callers.chat',
    child('../notes.chat', 'toolu_T1', 'Find every caller of parseChat', [
      '@Assistant:',
      'Two callers: a.ts and b.ts.',
      '',
    ]),
  );
  d.writeFile(
    'project/notes.tasks/02-list-tests.chat',
    child('../notes.chat', 'toolu_T2', 'List the tests', [
      '@Assistant:',
      ...toolUse('bash', 'toolu_B1', '{"command":"ls test"}'),
      '',
      '@You:',
      ...placeholder('toolu_B1', 'pending'),
      '',
    ]),
  );
  d.writeFile(
    'project/notes.tasks/03-elsewhere.chat',
    child('../other.chat', 'toolu_X', 'Not a child of notes', []),
  );
}

async function currentName(d: Driver): Promise<string> {
  const name = await d.lua<string>('return vim.api.nvim_buf_get_name(0)');
  return name.slice(d.home.length);
}

/** Waits until the current buffer is the file ending in `suffix`. */
async function opened(d: Driver, suffix: string): Promise<string> {
  await d.waitUntil('return vim.endswith(vim.api.nvim_buf_get_name(0), ...)', { args: [suffix] });
  return currentName(d);
}

describe(':Flemma tasks', () => {
  it('lists the children its tasks folder holds and opens one with <CR> or its number', async () => {
    const { d } = await launch({ provider: false });
    writeProject(d);
    const parent = await d.openChat('project/notes.chat', PARENT);
    await d.command('Flemma tasks');
    await d.waitUntil('return vim.api.nvim_buf_get_name(0):match("flemma://tasks$") ~= nil');
    expect(await d.lines()).toEqual([
      'notes.chat: 2 tasks',
      ' 1  done     notes.tasks/01-find-callers.chat  explorer   1 turns           Two callers: a.ts and b.ts.',
      ' 2  waiting  notes.tasks/02-list-tests.chat    explorer   1 turns',
    ]);
    await d.lua('vim.api.nvim_win_set_cursor(0, { 3, 0 })');
    await d.press('<CR>');
    expect(await opened(d, '02-list-tests.chat')).toBe(
      '/work/project/notes.tasks/02-list-tests.chat',
    );
    await d.command(`buffer ${String(parent)}`);
    await d.command('Flemma tasks 1');
    expect(await opened(d, '01-find-callers.chat')).toBe(
      '/work/project/notes.tasks/01-find-callers.chat',
    );
  });

  it('gf on the path in a task result opens the child, whatever the path option says', async () => {
    const { d } = await launch({ provider: false });
    writeProject(d);
    await d.openChat('project/notes.chat', PARENT);
    // Not by Neovim's own `gf`: its 'path' would not find the file.
    await d.lua('vim.o.path = "/nonexistent"');
    const row = PARENT.indexOf("The task's chat: notes.tasks/01-find-callers.chat") + 1;
    await d.lua('vim.api.nvim_win_set_cursor(0, { ..., 24 })', row);
    await d.press('gf');
    expect(await opened(d, '01-find-callers.chat')).toBe(
      '/work/project/notes.tasks/01-find-callers.chat',
    );
  });
});

describe('a finished task', () => {
  it('is continued like any chat, and task:return sends its new answer to the parent', async () => {
    const s = await launch({ config: '{}' });
    const { d } = s;
    writeProject(d);
    d.writeFile('project/notes.chat', PARENT.join('\n') + '\n');
    const buf = await s.open('project/notes.tasks/01-find-callers.chat');
    await d.press('G');
    await d.type('oAnd in test/?');
    await d.press('<Esc>');
    const request = await s.send();
    // The child's own tools, as its frontmatter keeps them.
    const tools = (request.body as { tools: { name: string }[] }).tools.map((tool) => tool.name);
    expect(tools.sort()).toEqual(['find', 'grep', 'ls', 'read']);
    await s.replyAndWait('Three callers: a.ts, b.ts and test/c.ts ({{ x }} @./secret).');
    // Opened and sent with no word about trust: nothing in it needs any.
    expect(d.notifications().filter((note) => note.level >= 3)).toEqual([]);
    await d.command('Flemma task:return');
    await d.waitForNotification(/task:return: the answer is a note/);
    const parent = readFileSync(join(d.home, 'work/project/notes.chat'), 'utf8').split('\n');
    expect(parent.slice(PARENT.length - 2)).toEqual([
      '@You:',
      'The task notes.tasks/01-find-callers.chat was continued; its answer now:',
      '',
      'Three callers: a.ts, b.ts and test/c.ts ({ { x }} @ ./secret).',
      '',
      '',
    ]);
    expect(await d.lines(buf)).toContain(
      'Three callers: a.ts, b.ts and test/c.ts ({{ x }} @./secret).',
    );
  });

  it('task:return into a parent with unsaved changes adds a new @You: and leaves it unwritten', async () => {
    const { d } = await launch({ provider: false });
    writeProject(d);
    // The chat ends with the model's reply, and an edit of it not written yet.
    const edited = [...PARENT.slice(0, -3), 'Thanks.'];
    const parent = await d.openChat('project/notes.chat', PARENT.slice(0, -3));
    await d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Thanks." })');
    await d.openChat('project/notes.tasks/01-find-callers.chat');
    await d.command('Flemma task:return');
    await d.waitForNotification(/task:return: the answer is a note/);
    expect(await d.lines(parent)).toEqual([
      ...edited,
      '',
      '@You:',
      'The task notes.tasks/01-find-callers.chat was continued; its answer now:',
      '',
      'Two callers: a.ts and b.ts.',
    ]);
    expect(await d.lua('return vim.bo[...].modified', parent)).toBe(true);
    expect(readFileSync(join(d.home, 'work/project/notes.chat'), 'utf8')).toBe(
      PARENT.slice(0, -3).join('\n') + '\n',
    );
  });

  it('task:return in a chat that is no task says so', async () => {
    const { d } = await launch({ provider: false });
    await d.openChat('plain.chat', ['@You:', 'hello']);
    await d.command('Flemma task:return');
    const note = await d.waitForNotification(/task:return/);
    expect(note.message).toBe(
      'Flemma: task:return: Not a task’s chat (its frontmatter records no parent)',
    );
  });
});

/** The parent offers `task` (approved) and a profile that may run `bash` (which asks). */
const TASK_CONFIG = `{
  tools = { "read", "grep", "find", "ls", "bash", "task", auto_approve = { "$default", "task" } },
  agents = { builder = { description = "Builds things.", tools = { "read", "bash" } } },
}`;

describe('a running task', () => {
  it('shows its state on one line in the task placeholder until it ends', async () => {
    const s = await launch({ config: TASK_CONFIG });
    const { d } = s;
    const parent = await s.open('parent.chat', ['@You:', 'Delegate.']);
    await s.send();
    await s.reply('Delegating.', [
      {
        id: 'toolu_T',
        name: 'task',
        input: { label: 'Build it', prompt: 'Build it', agent: 'builder', name: 'build' },
      },
    ]);
    const child = await anthropicStream(await s.f.nextRequest({ path: MESSAGES }));
    await child.text('Looking at the Makefile');
    const line = await previewWith(d, parent, 'task: writing · turn 1');
    // What it does now comes first: a narrow window cuts the line's end (the file's name).
    expect(line).toMatch(
      /^task: writing · turn 1 · 0 tokens · \$0\.0000 · builder in parent\.tasks/,
    );
    // `:Flemma tasks` lists it as running, with what it does.
    await d.command('Flemma tasks');
    await d.waitUntil('return vim.api.nvim_buf_get_name(0):match("flemma://tasks$") ~= nil');
    expect(await d.lines()).toEqual([
      'parent.chat: 1 task',
      ' 1  running  parent.tasks/01-build.chat  builder   1 turns  $0.0000  writing · Looking at the Makefile',
    ]);
    await d.press('q');
    await child.finish();
    // The task ends, its result names the file; the line goes with it.
    await s.toolResult('toolu_T');
    expect((await s.lines()).join('\n')).toContain("The task's chat: parent.tasks/01-build.chat");
    await d.waitForExtmarks('flemma_tool_preview', {
      bufnr: parent,
      until: 'vim.inspect(marks):find(value, 1, true) == nil',
      value: 'task: ',
    });
  });
});

/** The preview line of buffer `bufnr` that contains `needle`, once there is one. */
async function previewWith(d: Driver, bufnr: number, needle: string): Promise<string> {
  const marks = await d.waitForExtmarks('flemma_tool_preview', {
    bufnr,
    until: '#marks > 0 and vim.inspect(marks):find(value, 1, true) ~= nil',
    value: needle,
  });
  const texts = marks.flatMap((mark) =>
    (mark[3]['virt_lines'] as [string, string][][]).flatMap((line) =>
      line.map((chunk) => chunk[0]),
    ),
  );
  const found = texts.find((text) => text.includes(needle)) ?? '';
  return found.trim();
}
