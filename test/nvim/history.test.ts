// `:Flemma fork`, `:Flemma rewind` and `:Flemma retry` end to end (docs/history.md): the fork's
// file, the rewind's files restored through the undo store and its messages moved to a sibling
// file as one undo step (or a refusal that changes nothing), and the retry's new reply in place
// of the old one, sent with the same request.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { holdReply, launcher } from '../helpers/e2e.js';

const launch = launcher();

const FRONTMATTER = ['```json', '{ "flemma": { "model": "claude-haiku-4-5" } }', '```'];
const SETUP = 'require("flemma").setup({ tools = { autopilot = false } })';

function toolUse(name: string, id: string, input: unknown): string[] {
  return [`**Tool Use:** \`${name}\` (\`${id}\`)`, '', '```json', JSON.stringify(input), '```'];
}

/** The chat's file in the work directory, and the names there. */
function work(d: Driver, name = ''): string {
  return join(d.home, 'work', name);
}

function chats(d: Driver): string[] {
  return readdirSync(work(d))
    .filter((name) => name.endsWith('.chat'))
    .sort();
}

const CONVERSATION = [
  ...FRONTMATTER,
  '@System:',
  'Be brief.',
  '',
  '@You:',
  'First question.',
  '',
  '@Assistant:',
  'First answer.',
  '',
  '@You:',
  'Second question.',
  '',
  '@Assistant:',
  'Second answer.',
  '',
  '@You:',
  '',
];

/** Runs `:Flemma <command>` with the cursor on the line `line` (1-based); its end's event. */
async function at(d: Driver, line: number, command: string): Promise<Record<string, unknown>> {
  const count = d.eventCount;
  await d.command(`normal! ${String(line)}G`);
  await d.press(`:Flemma ${command}<CR>`);
  return (await d.waitForEvent('FlemmaHistoryFinished', { after: count })).data;
}

describe(':Flemma fork', () => {
  it('writes the conversation up to the message under the cursor beside the chat and opens it', async () => {
    const { d } = await launch({ key: false });
    const buf = await d.openChat('notes.chat', CONVERSATION);
    // On the first reply: it and all before it, then an empty @You: with the cursor on it.
    const first = await at(d, 10, 'fork');
    expect(first).toMatchObject({ bufnr: buf, action: 'fork', status: 'done' });
    expect(first['file']).toBe(work(d, 'notes.fork-1.chat'));
    expect(readFileSync(work(d, 'notes.fork-1.chat'), 'utf8')).toBe(
      [...CONVERSATION.slice(0, 11), '', '@You:', '', ''].join('\n'),
    );
    expect(await d.lua('return vim.api.nvim_buf_get_name(0)')).toBe(work(d, 'notes.fork-1.chat'));
    expect(await d.lua('return vim.api.nvim_win_get_cursor(0)')).toEqual([14, 0]);
    // The old chat is untouched; a second fork (from a @You:) takes the next name and ends with
    // that message, the cursor on its last line.
    expect(readFileSync(work(d, 'notes.chat'), 'utf8')).toBe(CONVERSATION.join('\n') + '\n');
    await d.command(`buffer ${String(buf)}`);
    const second = await at(d, 13, 'fork');
    expect(second['file']).toBe(work(d, 'notes.fork-2.chat'));
    expect(readFileSync(work(d, 'notes.fork-2.chat'), 'utf8')).toBe(
      CONVERSATION.slice(0, 14).join('\n') + '\n',
    );
    expect(await d.lua('return vim.api.nvim_win_get_cursor(0)')).toEqual([14, 0]);
    expect(chats(d)).toEqual(['notes.chat', 'notes.fork-1.chat', 'notes.fork-2.chat']);
  });

  it('refuses on the frontmatter, writing nothing', async () => {
    const { d } = await launch({ key: false });
    await d.openChat('notes.chat', CONVERSATION);
    expect(await at(d, 1, 'fork')).toMatchObject({ status: 'refused' });
    await d.waitForNotification(/fork: put the cursor on a message/);
    expect(chats(d)).toEqual(['notes.chat']);
  });
});

/**
 * A chat whose reply holds `uses` (after the frontmatter and a @You:), each run with <M-CR>;
 * its buffer.
 */
async function ranCalls(d: Driver, uses: string[][]): Promise<number> {
  const buf = await d.openChat('notes.chat', [
    ...FRONTMATTER,
    '@You:',
    'Change the files.',
    '',
    '@Assistant:',
    ...uses.flat(),
  ]);
  await d.waitForEvent('FlemmaBootComplete');
  for (const use of uses) {
    const row = (await d.lines()).findIndex((line) => line === use[0]) + 1;
    const count = d.eventCount;
    await d.command(`normal! ${String(row)}G`);
    await d.press('<M-CR>');
    const done = await d.waitForEvent('FlemmaToolCompleted', { after: count });
    expect(done.data['status']).toBe('success');
  }
  return buf;
}

/** Two edits of a.txt, an overwrite of b.txt, a created sub/c.txt. */
const USES = [
  toolUse('edit', 'toolu_E1', { label: 'one', path: 'a.txt', oldText: 'two', newText: 'TWO' }),
  toolUse('write', 'toolu_W1', { label: 'b', path: 'b.txt', content: 'replaced\n' }),
  toolUse('edit', 'toolu_E2', { label: 'two', path: 'a.txt', oldText: 'one', newText: 'ONE' }),
  toolUse('write', 'toolu_W2', { label: 'c', path: 'sub/c.txt', content: 'created\n' }),
];

async function turnWithEdits(): Promise<{ d: Driver; buf: number; before: string[] }> {
  const { d } = await launch({ key: false, setup: SETUP });
  d.writeFile('a.txt', 'one\ntwo\n');
  d.writeFile('b.txt', 'bee\n');
  const buf = await ranCalls(d, USES);
  expect(readFileSync(work(d, 'a.txt'), 'utf8')).toBe('ONE\nTWO\n');
  expect(readFileSync(work(d, 'b.txt'), 'utf8')).toBe('replaced\n');
  expect(readFileSync(work(d, 'sub/c.txt'), 'utf8')).toBe('created\n');
  return { d, buf, before: await d.lines() };
}

describe(':Flemma rewind', () => {
  it('restores every file the later calls changed and moves the later messages to a sibling file, one u bringing them back', async () => {
    const { d, buf, before } = await turnWithEdits();
    const done = await at(d, 5, 'rewind');
    expect(done).toMatchObject({ bufnr: buf, action: 'rewind', status: 'done' });
    expect(done['file']).toBe(work(d, 'notes.rewound-1.chat'));
    expect(readFileSync(work(d, 'a.txt'), 'utf8')).toBe('one\ntwo\n');
    expect(readFileSync(work(d, 'b.txt'), 'utf8')).toBe('bee\n');
    expect(existsSync(work(d, 'sub/c.txt'))).toBe(false);
    const cut = before.indexOf('@Assistant:');
    expect(await d.lines(buf)).toEqual(before.slice(0, cut));
    // The removed part with the frontmatter, a chat of its own; its results say they were undone.
    const removed = before
      .slice(cut)
      .map((line) => (line.startsWith('**Tool Result:**') ? `${line} (undone)` : line));
    while (removed.at(-1) === '') removed.pop();
    expect(readFileSync(work(d, 'notes.rewound-1.chat'), 'utf8')).toBe(
      [...FRONTMATTER, ...removed].join('\n') + '\n',
    );
    await d.press('u');
    expect(await d.lines(buf)).toEqual(before);
    // Each call's record says it was undone (`:Flemma tool:undo` will not undo it again).
    const records = await d.lua<string[]>(
      'return vim.fn.glob(vim.fn.stdpath("state") .. "/flemma/undo/*.json", false, true)',
    );
    expect(records).toHaveLength(4);
    for (const record of records) {
      expect(JSON.parse(readFileSync(record, 'utf8'))).toHaveProperty('undone');
    }
  });

  it('refuses when a file changed since its call wrote it, changing nothing, and shows that file', async () => {
    const { d, buf, before } = await turnWithEdits();
    writeFileSync(work(d, 'b.txt'), 'replaced\nby hand\n');
    const refused = await at(d, 5, 'rewind');
    expect(refused).toMatchObject({ bufnr: buf, action: 'rewind', status: 'refused' });
    const note = await d.waitForNotification(/rewind: .*b\.txt changed since write \(toolu_W1\)/);
    expect(note.message).toContain('nothing was rewound');
    expect(await d.lines(buf)).toEqual(before);
    expect(readFileSync(work(d, 'a.txt'), 'utf8')).toBe('ONE\nTWO\n');
    expect(readFileSync(work(d, 'b.txt'), 'utf8')).toBe('replaced\nby hand\n');
    expect(readFileSync(work(d, 'sub/c.txt'), 'utf8')).toBe('created\n');
    expect(chats(d)).toEqual(['notes.chat']);
    // The diff: what b.txt held before the call, beside it now, to read only.
    await d.waitUntil('return vim.fn.bufexists("flemma://now/b.txt") == 1');
    expect(
      await d.lua(`local before, now = vim.fn.bufnr("flemma://before/b.txt"), vim.fn.bufnr("flemma://now/b.txt")
        return { vim.api.nvim_buf_get_lines(before, 0, -1, false), vim.api.nvim_buf_get_lines(now, 0, -1, false), vim.bo[now].modifiable }`),
    ).toEqual([['bee'], ['replaced', 'by hand'], false]);
  });
});

describe(':Flemma retry', () => {
  it('sends the same request again, puts the new reply in place of the last one and keeps the old one in a sibling file', async () => {
    const { d, f } = await launch();
    const buf = await d.openChat('notes.chat', [...FRONTMATTER, '@You:', 'Say hello.']);
    await d.press(':Flemma send<CR>');
    const original = await f.nextRequest({ path: '/v1/messages' });
    await anthropicReply(original, 'Hello, first try.');
    await d.waitForEvent('FlemmaRequestFinished');
    const first = await d.lines(buf);
    expect(first.slice(-5)).toEqual(['@Assistant:', 'Hello, first try.', '', '@You:', '']);
    const count = d.eventCount;
    await d.press(':Flemma retry<CR>');
    const again = await f.nextRequest({ path: '/v1/messages' });
    expect(again.body).toEqual(original.body);
    await anthropicReply(again, 'Hello, second try.');
    await d.waitForEvent('FlemmaRequestFinished', { after: count });
    expect(await d.lines(buf)).toEqual(first.map((line) => line.replace('first', 'second')));
    expect(readFileSync(work(d, 'notes.rewound-1.chat'), 'utf8')).toBe(
      [...FRONTMATTER, '@Assistant:', 'Hello, first try.', '', '@You:', ''].join('\n'),
    );
  });

  it('undoes the file changes of the reply it replaces before it asks again', async () => {
    const { d, f } = await launch({ setup: SETUP });
    d.writeFile('a.txt', 'one\ntwo\n');
    const buf = await d.openChat('notes.chat', ['@You:', 'Fix a.txt.']);
    await d.press(':Flemma send<CR>');
    const original = await f.nextRequest({ path: '/v1/messages' });
    const edit = { label: 'fix', path: 'a.txt', oldText: 'two', newText: 'TWO' };
    await anthropicReply(original, 'Fixing.', [{ id: 'toolu_R1', name: 'edit', input: edit }]);
    await d.waitForEvent('FlemmaRequestFinished');
    // The call runs (<M-CR> on it): its result follows the reply.
    const row = (await d.lines(buf)).findIndex((line) => line.includes('toolu_R1')) + 1;
    const count = d.eventCount;
    await d.command(`normal! ${String(row)}G`);
    await d.press('<M-CR>');
    await d.waitForEvent('FlemmaToolCompleted', { after: count });
    expect(readFileSync(work(d, 'a.txt'), 'utf8')).toBe('one\nTWO\n');
    const ran = await d.lines(buf);
    await d.press(':Flemma retry<CR>');
    const again = await f.nextRequest({ path: '/v1/messages' });
    expect(again.body).toEqual(original.body);
    expect(readFileSync(work(d, 'a.txt'), 'utf8')).toBe('one\ntwo\n');
    await anthropicReply(again, 'Nothing to fix.');
    await d.waitForEvent('FlemmaRequestFinished', { after: count });
    const lines = await d.lines(buf);
    expect(lines.slice(0, 2)).toEqual(['@You:', 'Fix a.txt.']);
    expect(lines.join('\n')).not.toContain('toolu_R1');
    expect(lines).toContain('Nothing to fix.');
    // The old reply and its result, marked undone, are in the sibling file.
    const cut = ran.indexOf('@Assistant:');
    const kept = readFileSync(work(d, 'notes.rewound-1.chat'), 'utf8');
    expect(kept.startsWith(ran.slice(cut, cut + 2).join('\n'))).toBe(true);
    expect(kept).toContain('**Tool Result:** `toolu_R1` (undone)');
  });
});

describe('a busy chat', () => {
  it('refuses rewind and retry while a reply streams, changing nothing', async () => {
    const { d, f } = await launch();
    const buf = await d.openChat('notes.chat', CONVERSATION.slice(0, 14));
    const stream = await holdReply(d, f, ':Flemma send<CR>');
    const streaming = await d.lines(buf);
    await d.command('normal! 8G');
    await d.press(':Flemma rewind<CR>');
    await d.waitForNotification(/read-only while the reply streams in/);
    await d.press(':Flemma retry<CR>');
    expect(await d.lines(buf)).toEqual(streaming);
    expect(chats(d)).toEqual(['notes.chat']);
    await stream.finish();
    await d.waitForEvent('FlemmaRequestFinished');
    expect(chats(d)).toEqual(['notes.chat']);
    expect(d.eventsSeen('FlemmaHistoryFinished')).toEqual([]);
  });

  it('refuses a rewind while a tool runs (the host says so), changing nothing', async () => {
    const hold = `${SETUP}
    require("flemma.tools").register("hold", {
      description = "waits to be released",
      input_schema = { type = "object", properties = {} },
      async = true,
      execute = function(_, _, callback) _G.release = callback end,
    })`;
    const { d } = await launch({ key: false, setup: hold });
    const buf = await d.openChat('notes.chat', [
      '@You:',
      'Hold on.',
      '',
      '@Assistant:',
      ...toolUse('hold', 'toolu_H1', {}),
    ]);
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('normal! 5G');
    await d.press('<M-CR>');
    await d.waitUntil('return _G.release ~= nil');
    const running = await d.lines(buf);
    const refused = await at(d, 2, 'rewind');
    expect(refused).toEqual({ bufnr: buf, action: 'rewind', status: 'refused' });
    await d.waitForNotification(/rewind: the chat is busy \(a request or a tool runs\)/);
    expect(await d.lines(buf)).toEqual(running);
    expect(chats(d)).toEqual(['notes.chat']);
    await d.lua('_G.release({ success = true, output = "released" })');
    await d.waitForEvent('FlemmaToolCompleted');
  });
});
