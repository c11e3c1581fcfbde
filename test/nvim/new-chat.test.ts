// A new chat from anywhere (docs/chats.md, "Starting chats"): `:Flemma new [name]` in each layout,
// names that never overwrite, a visual selection or the current file into a new or the last used
// chat, a busy chat refused, and `:Flemma toggle`.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicStream } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { holdReply, launcher } from '../helpers/e2e.js';

const launch = launcher();

const SOURCE = [
  'export function add(a: number, b: number): number {',
  '  return a + b;',
  '}',
  '',
  '```',
  'not a fence of the chat',
];

/** A chat with a question, a reply and a second question. */
const NOTES = [
  '@You:',
  'Look at this:',
  '',
  '@Assistant:',
  'Show me.',
  '',
  '@You:',
  'First question',
];

/** A Neovim set up with `chats.directory` under its home, and `src/x.ts` in the project. */
async function neovim(config = ''): Promise<Driver> {
  const { d } = await launch({
    config: `{ chats = { directory = "~/chats" }${config} }`,
    files: { 'src/x.ts': SOURCE.join('\n') + '\n' },
    ui: { width: 160, height: 40 },
  });
  return d;
}

/** The current window's buffer: its name (relative to home), lines, cursor, and the windows. */
async function current(d: Driver): Promise<{
  name: string;
  lines: string[];
  cursor: [number, number];
  wins: number;
  tabs: number;
  width: number;
  modified: boolean;
}> {
  return d.lua(`
    local name = vim.api.nvim_buf_get_name(0)
    return {
      name = name:sub(#vim.env.HOME + 2),
      lines = vim.api.nvim_buf_get_lines(0, 0, -1, false),
      cursor = vim.api.nvim_win_get_cursor(0),
      wins = #vim.api.nvim_tabpage_list_wins(0),
      tabs = #vim.api.nvim_list_tabpages(),
      width = vim.api.nvim_win_get_width(0),
      modified = vim.bo.modified,
    }`);
}

describe(':Flemma new', () => {
  it.each([
    ['split', { wins: 2, tabs: 1 }],
    ['vsplit', { wins: 2, tabs: 1 }],
    ['tab', { wins: 1, tabs: 2 }],
    ['side', { wins: 2, tabs: 1 }],
    ['current', { wins: 1, tabs: 1 }],
  ])('opens the chat with the template, layout %s', async (layout, expected) => {
    const d = await neovim(`, ui = { new_chat = { layout = "${layout}", width = 50 } }`);
    await d.command('edit src/x.ts');
    await d.command('Flemma new');
    const chat = await current(d);
    expect(chat.name).toMatch(/^chats\/\d{4}-\d\d-\d\d-\d{4}\.chat$/);
    expect(chat.lines).toEqual(['@You:', '']);
    expect(chat.cursor).toEqual([2, 0]);
    expect(chat.modified).toBe(false);
    expect({ wins: chat.wins, tabs: chat.tabs }).toEqual(expected);
    expect(await d.lua('return vim.bo.filetype')).toBe('chat');
    if (layout === 'side') {
      expect(chat.width).toBe(50);
      expect(await d.lua('return vim.fn.winnr() == vim.fn.winnr("$")')).toBe(true);
    }
    if (layout === 'split' || layout === 'vsplit') {
      const split = await d.lua<string>('return vim.fn.winlayout()[1]');
      expect(split).toBe(layout === 'split' ? 'col' : 'row');
    }
    // Nothing is written until you write it.
    expect(existsSync(join(d.home, chat.name))).toBe(false);
  });

  it('names the file after the argument and never takes a name a file or a buffer has', async () => {
    const d = await neovim(', chats = { directory = "~/chats", template = "~/template.chat" }');
    d.writeFile('../chats/my-notes.chat', 'mine\n');
    d.writeFile('../template.chat', '```json\n{ "flemma": { "thinking": "low" } }\n```\n@You:\n');
    await d.command('Flemma new My Notes!');
    expect(await current(d)).toMatchObject({
      name: 'chats/my-notes-2.chat',
      lines: ['```json', '{ "flemma": { "thinking": "low" } }', '```', '@You:', ''],
      cursor: [5, 0],
    });
    await d.command('Flemma new my notes');
    expect((await current(d)).name).toBe('chats/my-notes-3.chat');
  });

  it('opens a chat holding the selected lines, with the file and the line range', async () => {
    const d = await neovim(', ui = { new_chat = { layout = "vsplit" } }');
    await d.command('edit src/x.ts');
    await d.press('Vjj');
    await d.press(':Flemma new<CR>');
    expect(await current(d)).toMatchObject({
      lines: [
        '@You:',
        'From `src/x.ts` lines 1–3:',
        '```typescript',
        ...SOURCE.slice(0, 3),
        '```',
        '',
      ],
      cursor: [8, 0],
    });
    // A fence longer than the one the lines hold.
    await d.command('wincmd p');
    await d.command('4,6Flemma new selection');
    const chat = await current(d);
    expect(chat.name).toBe('chats/selection.chat');
    expect(chat.lines).toEqual([
      '@You:',
      'From `src/x.ts` lines 4–6:',
      '````typescript',
      ...SOURCE.slice(3),
      '````',
      '',
    ]);
    expect(chat.cursor).toEqual([8, 0]);
    expect(chat.modified).toBe(true);
  });
  it('says why when chats.directory names an unset variable, and opens nothing', async () => {
    const d = await neovim(', chats = { directory = "$FLEMMA_NO_SUCH/chats" }');
    await d.press(':Flemma new<CR>');
    await d.waitForNotification(
      /^Flemma: new: chats.directory '\$FLEMMA_NO_SUCH\/chats': the variable FLEMMA_NO_SUCH/,
    );
    expect((await current(d)).wins).toBe(1);
  });
});

describe(':Flemma add', () => {
  it("puts the selection under the message at the last used chat's cursor", async () => {
    const d = await neovim(', ui = { new_chat = { layout = "vsplit" } }');
    const chat = await d.openChat('notes.chat', NOTES);
    await d.press('2G');
    await d.command('wincmd v');
    await d.command('edit src/x.ts');
    await d.command('1Flemma add');
    expect(await d.lua('return vim.api.nvim_get_current_buf()')).toBe(chat);
    const lines = await d.lines(chat);
    expect(lines.slice(0, 8)).toEqual([
      '@You:',
      'Look at this:',
      '',
      'From `src/x.ts` line 1:',
      '```typescript',
      SOURCE[0],
      '```',
      '',
    ]);
    expect(lines.slice(8)).toEqual(NOTES.slice(3));
    expect((await current(d)).cursor).toEqual([8, 0]);

    // On a reply, the lines go into a new `@You:` at the end; the chat's unsaved text stays.
    await d.press('10G');
    await d.command('wincmd p');
    await d.command('Flemma add %');
    expect((await d.lines(chat)).slice(11)).toEqual([
      ...NOTES.slice(-2),
      '',
      '@You:',
      '@./src/x.ts',
      '',
    ]);
  });

  it('puts the current file as an @./ reference when it lies below the chat', async () => {
    const d = await neovim(', chats = { directory = "~/work/chats" }');
    d.writeFile('chats/a b+c.md', 'notes\n');
    await d.command('edit chats/a\\ b+c.md');
    await d.command('Flemma new %');
    expect((await current(d)).lines).toEqual(['@You:', '@./a%20b%2Bc.md', '']);
  });

  it('sends the file a reference outside the chat names: a chat you started is trusted', async () => {
    const { d, f } = await launch({
      config: '{ chats = { directory = "~/chats" } }',
      files: { 'src/x.ts': SOURCE.join('\n') + '\n' },
    });
    await d.command('edit src/x.ts');
    await d.command('Flemma new %');
    expect((await current(d)).lines).toEqual(['@You:', '@~/work/src/x.ts', '']);
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    expect(request.rawBody).toContain('return a + b;');
  });

  it('opens a new chat when none was used', async () => {
    const d = await neovim(', ui = { new_chat = { layout = "side" } }');
    await d.command('edit src/x.ts');
    await d.command('Flemma add %');
    const chat = await current(d);
    expect(chat.name).toMatch(/^chats\/.*\.chat$/);
    expect(chat.lines).toEqual(['@You:', '@~/work/src/x.ts', '']);
  });

  it('refuses a chat a reply streams into, changing nothing', async () => {
    const { d, f } = await launch({
      config: '{ chats = { directory = "~/chats" } }',
      files: { 'src/x.ts': SOURCE.join('\n') + '\n' },
    });
    const chat = await d.openChat('busy.chat', ['@You:', 'Hello?']);
    const s = await holdReply(d, f);
    const before = await d.lines(chat);
    await d.command('split src/x.ts');
    const notes = d.notificationCount;
    await d.press(':1,2Flemma add<CR>');
    const note = await d.waitForNotification(/add: busy\.chat is read-only/, { after: notes });
    expect(note.message).toBe(
      'Flemma: add: busy.chat is read-only while the reply streams in (<C-c> cancels it); nothing was added',
    );
    expect(await d.lines(chat)).toEqual(before);
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('loads a last used chat that was deleted; template and reference openers in the lines are sent as written', async () => {
    const { d, f } = await launch({
      config: '{ chats = { directory = "~/chats" }, ui = { new_chat = { layout = "current" } } }',
      files: {
        'src/page.vue': '<p>{{ name }}</p>\n{% if x %} @./secret @~/.netrc @/etc/hosts @mcp:x/y\n',
      },
    });
    const chat = await d.openChat('notes.chat', ['@You:', 'Before']);
    await d.command('edit src/page.vue');
    await d.command('bdelete notes.chat');
    await d.command('1,2Flemma add');
    expect(await d.lua('return vim.api.nvim_get_current_buf()')).toBe(chat);
    // A chat in the project runs templates once trusted (docs/security.md).
    await d.command('trust');
    expect(await d.lines(chat)).toEqual([
      '@You:',
      'Before',
      '',
      'From `src/page.vue` lines 1–2:',
      '```vue',
      '<p>{{ "{{" }} name }}</p>',
      '{{ "{%" }} if x %} {{ "@" }}./secret {{ "@" }}~/.netrc {{ "@" }}/etc/hosts {{ "@" }}mcp:x/y',
      '```',
      '',
    ]);
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    const sent = JSON.stringify(request.body);
    expect(sent).toContain(
      '<p>{{ name }}</p>\\n{% if x %} @./secret @~/.netrc @/etc/hosts @mcp:x/y',
    );
    const s = await anthropicStream(request);
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('without a range or %, says how to use it', async () => {
    const d = await neovim();
    await d.command('edit src/x.ts');
    await d.press(':Flemma add<CR>');
    await d.waitForNotification(/^Flemma: add: select lines first/);
  });
});

describe(':Flemma toggle', () => {
  it('shows the last used chat in the side window, and hides it', async () => {
    const d = await neovim(', ui = { new_chat = { width = 60 } }');
    const chat = await d.openChat('notes.chat', ['@You:', 'unsaved']);
    await d.command('edit src/x.ts');
    await d.command('Flemma toggle');
    expect(await current(d)).toMatchObject({ wins: 2, width: 60, lines: ['@You:', 'unsaved'] });
    expect(await d.lua('return vim.api.nvim_get_current_buf()')).toBe(chat);
    await d.command('Flemma toggle');
    expect((await current(d)).wins).toBe(1);
    expect(await d.lines(chat)).toEqual(['@You:', 'unsaved']);
    await d.command('Flemma toggle');
    expect((await current(d)).wins).toBe(2);
  });

  it('opens a new chat there when none was used', async () => {
    const d = await neovim();
    await d.command('Flemma toggle');
    const chat = await current(d);
    expect(chat.name).toMatch(/^chats\/.*\.chat$/);
    expect(chat.wins).toBe(2);
  });
});
