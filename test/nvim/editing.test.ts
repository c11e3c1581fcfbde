// How a chat buffer edits (`editing.*`): the first `@You:` of an empty chat, no hard wrapping,
// conceal in chat windows only, a short 'updatetime' while a chat has focus, and the write after
// each reply and each batch of tool results (decided per buffer, frontmatter and trust included).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { anthropicReply, type ScriptedCall } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeProvider } from '../helpers/fake-provider.js';

const launch = launcher();

/** Neovim with the user's own settings (`before`, run before setup) and Flemma's options. */
async function start(options = '{}', before = ''): Promise<Driver> {
  const session = await launch({
    key: false,
    setup: `${before}\nrequire("flemma").setup(${options})`,
  });
  return session.d;
}

async function startWithProvider(options = '{}'): Promise<{ d: Driver; f: FakeProvider }> {
  const { d: driver, f: fake } = await launch({
    setup: `require("flemma").setup(${options})`,
  });
  return { d: driver, f: fake };
}

/** Answers the next request with `text` and `calls` and waits until the reply is written. */
async function replied(
  d: Driver,
  f: FakeProvider,
  text: string,
  calls: ScriptedCall[] = [],
): Promise<void> {
  const after = d.eventCount;
  await anthropicReply(await f.nextRequest({ path: '/v1/messages' }), text, calls);
  await d.waitForEvent('FlemmaRequestFinished', { after });
}

describe('editing.auto_prompt', () => {
  it('starts a new chat with @You: and the cursor under it, not modified and not an undo step', async () => {
    const d = await start();
    await d.openChat('new.chat');
    expect(await d.lines()).toEqual(['@You:', '']);
    expect(await d.lua('return vim.api.nvim_win_get_cursor(0)')).toEqual([2, 0]);
    // Nothing of the user's is in it yet: quitting loses nothing.
    expect(await d.lua('return vim.bo.modified')).toBe(false);
    await d.press('u');
    expect(await d.lines()).toEqual(['@You:', '']);
    // The prompt is what the user types under.
    await d.type('iHello');
    await d.press('<Esc>');
    expect(await d.lines()).toEqual(['@You:', 'Hello']);
  });

  it('fills an empty file or buffer too, and leaves other chats alone', async () => {
    const d = await start();
    d.writeFile('empty.chat', '\n');
    await d.openChat('empty.chat');
    expect(await d.lines()).toEqual(['@You:', '']);
    expect(await d.lua('return vim.bo.modified')).toBe(false);
    await d.command('enew');
    await d.command('setfiletype chat');
    expect(await d.lines()).toEqual(['@You:', '']);
    expect(await d.lua('return vim.bo.modified')).toBe(false);
    await d.openChat('full.chat', ['@System:', 'Be brief.']);
    expect(await d.lines()).toEqual(['@System:', 'Be brief.']);
  });

  it('does nothing with auto_prompt = false', async () => {
    const d = await start('{ editing = { auto_prompt = false } }');
    await d.openChat('new.chat');
    expect(await d.lines()).toEqual(['']);
  });
});

describe('editing.disable_textwidth', () => {
  const long = 'word '.repeat(30).trim();

  /** With `setup` and the user's 'textwidth' at 40, the chat has `textwidth`; the user types `long`. */
  async function typedLong(setup: string, textwidth: number): Promise<Driver> {
    const d = await start(setup, 'vim.o.textwidth = 40');
    await d.openChat('wrap.chat', ['@You:', '']);
    expect(await d.lua('return vim.bo.textwidth')).toBe(textwidth);
    await d.type(`Go${long}`);
    await d.press('<Esc>');
    return d;
  }

  it("turns off hard wrapping in chat buffers only, whatever the user's 'textwidth'", async () => {
    const d = await typedLong('{}', 0);
    expect(await d.lines()).toEqual(['@You:', '', long]);
    await d.command('edit notes.txt');
    expect(await d.lua('return vim.bo.textwidth')).toBe(40);
    // A new setup() applies to the open chat.
    await d.lua('require("flemma").setup({ editing = { disable_textwidth = false } })');
    expect(await d.lua('return vim.bo[vim.fn.bufnr("wrap.chat")].textwidth')).toBe(40);
    await d.lua('require("flemma").setup({})');
    expect(await d.lua('return vim.bo[vim.fn.bufnr("wrap.chat")].textwidth')).toBe(0);
  });

  it("keeps the user's 'textwidth' with disable_textwidth = false", async () => {
    const d = await typedLong('{ editing = { disable_textwidth = false } }', 40);
    expect((await d.lines()).length).toBeGreaterThan(3);
  });
});

describe('editing.conceal', () => {
  const conceal = (d: Driver): Promise<[number, string]> =>
    d.lua('return { vim.wo.conceallevel, vim.wo.concealcursor }');
  /** Runs the Ex `commands` in turn; the conceal options of the current window then. */
  const concealAfter = async (d: Driver, ...commands: string[]): Promise<[number, string]> => {
    for (const command of commands) await d.command(command);
    return conceal(d);
  };

  it("sets the chat window's conceal options and gives other buffers the window's own", async () => {
    const d = await start('{}', 'vim.o.conceallevel = 1');
    d.writeFile('notes.txt', 'notes\n');
    await d.command('edit notes.txt');
    await d.openChat('c.chat', ['@You:', 'Hi']);
    expect(await conceal(d)).toEqual([2, 'nv']);
    // Another buffer in the same window: the user's values.
    expect(await concealAfter(d, 'edit notes.txt')).toEqual([1, '']);
    // Back to the chat: its values again, and a change the user made to them stays.
    expect(await concealAfter(d, 'buffer c.chat')).toEqual([2, 'nv']);
    const changed = ['setlocal conceallevel=0', 'edit notes.txt', 'buffer c.chat'];
    expect(await concealAfter(d, ...changed)).toEqual([0, 'nv']);
    // A window split off to edit another file has the user's values; the chat shown in a new
    // window gets the chat's.
    expect(await concealAfter(d, 'split other.txt')).toEqual([1, '']);
    expect((await concealAfter(d, 'enew', 'buffer c.chat'))[1]).toBe('nv');
  });

  it('keymaps.normal.conceal_toggle (<Space><Space>) turns conceal off and on in the window, and says so', async () => {
    const d = await start('{ editing = { conceal = "3n" } }');
    d.writeFile('notes.txt', 'notes\n');
    await d.openChat('c.chat', ['@You:', 'Hi']);
    await d.command('split notes.txt');
    await d.command('buffer c.chat');
    await d.press('<Space><Space>');
    expect(await conceal(d)).toEqual([0, 'n']);
    expect(await d.commandOutput('messages')).toContain('Flemma: conceal off (conceallevel=0)');
    // The other window showing the chat keeps its own.
    expect(await d.lua('return vim.wo[vim.fn.win_getid(vim.fn.winnr("j"))].conceallevel')).toBe(3);
    await d.press('<Space><Space>');
    expect(await conceal(d)).toEqual([3, 'n']);
    expect(await d.commandOutput('messages')).toContain('Flemma: conceal on (conceallevel=3)');
  });

  it('maps no conceal toggle that starts with the leader key, nor with conceal_toggle = false', async () => {
    for (const [options, before] of [
      ['{}', 'vim.g.mapleader = " "'],
      ['{ keymaps = { normal = { conceal_toggle = false } } }', ''],
    ]) {
      const d = await start(options, before);
      await d.openChat('c.chat', ['@You:', 'Hi']);
      expect(await d.lua('return vim.fn.maparg("<Space><Space>", "n")')).toBe('');
    }
  });

  it('takes any spec: level and cursor flags', async () => {
    const d = await start('{ editing = { conceal = "1i" } }');
    await d.openChat('c.chat', ['@You:', 'Hi']);
    expect(await conceal(d)).toEqual([1, 'i']);
  });

  it('leaves both alone with conceal = false, and follows a new setup() in open chat windows', async () => {
    const d = await start('{ editing = { conceal = false } }', 'vim.o.conceallevel = 1');
    await d.openChat('c.chat', ['@You:', 'Hi']);
    expect(await conceal(d)).toEqual([1, '']);
    const setup = (conceal: string): string =>
      `lua require("flemma").setup({ editing = { conceal = ${conceal} } })`;
    expect(await concealAfter(d, setup('"3"'))).toEqual([3, '']);
    expect(await concealAfter(d, setup('false'))).toEqual([1, '']);
  });
});

describe('editing.manage_updatetime', () => {
  const updatetime = (d: Driver): Promise<number> => d.lua('return vim.o.updatetime');

  it("lowers 'updatetime' while a chat has focus and gives the user's back when none has", async () => {
    const d = await start('{}', 'vim.o.updatetime = 4000');
    d.writeFile('notes.txt', 'notes\n');
    await d.openChat('one.chat', ['@You:', 'Hi']);
    expect(await updatetime(d)).toBe(100);
    await d.command('edit notes.txt');
    await d.waitUntil('return vim.o.updatetime == 4000');
    await d.command('buffer one.chat');
    expect(await updatetime(d)).toBe(100);
    // From one chat to another: it stays low.
    await d.openChat('two.chat', ['@You:', 'Hello']);
    await d.afterScheduled();
    expect(await updatetime(d)).toBe(100);
    // Windows: focus on a window with another buffer gives it back.
    await d.command('split notes.txt');
    await d.waitUntil('return vim.o.updatetime == 4000');
    await d.command('wincmd j');
    expect(await updatetime(d)).toBe(100);
    // Wiping the chat that has focus gives it back too.
    await d.command('bwipeout! two.chat');
    await d.afterScheduled();
    expect(await d.lua('return vim.bo.filetype')).not.toBe('chat');
    expect(await updatetime(d)).toBe(4000);
  });

  it("keeps a value the user set meanwhile, and leaves 'updatetime' alone with manage_updatetime = false", async () => {
    const d = await start('{}', 'vim.o.updatetime = 4000');
    await d.openChat('one.chat', ['@You:', 'Hi']);
    await d.command('set updatetime=300');
    await d.command('enew');
    await d.afterScheduled();
    expect(await updatetime(d)).toBe(300);
    await d.lua('require("flemma").setup({ editing = { manage_updatetime = false } })');
    await d.openChat('two.chat', ['@You:', 'Hi']);
    expect(await updatetime(d)).toBe(300);
  });
});

describe('editing.auto_write', () => {
  const onDisk = (path: string): string => readFileSync(path, 'utf8');

  it('writes the chat after a reply, before request:finished', async () => {
    const { d, f } = await startWithProvider('{ editing = { auto_write = true } }');
    const path = d.writeFile('w.chat', '@You:\nHello\n');
    await d.openChat('w.chat');
    await d.type('GoHow are you?');
    await d.press('<Esc>');
    await d.press('<C-]>');
    await replied(d, f, 'Fine, thanks.');
    // Written before the event: a listener finds the file as the buffer is.
    expect(onDisk(path)).toBe(
      ['@You:', 'Hello', 'How are you?', '', '@Assistant:', 'Fine, thanks.', '', '@You:', ''].join(
        '\n',
      ) + '\n',
    );
    expect(await d.lua('return vim.bo.modified')).toBe(false);
  });

  it('does not write by default', async () => {
    const { d, f } = await startWithProvider();
    const path = d.writeFile('w.chat', '@You:\nHello\n');
    await d.openChat('w.chat');
    await d.press('<C-]>');
    await replied(d, f, 'Fine, thanks.');
    expect(onDisk(path)).toBe('@You:\nHello\n');
    expect(await d.lua('return vim.bo.modified')).toBe(true);
  });

  it('writes after a batch of tool results', async () => {
    const { d, f } = await startWithProvider(
      '{ editing = { auto_write = true }, tools = { require_approval = false, autopilot = false } }',
    );
    d.writeFile('notes.txt', 'remember the milk\n');
    const path = d.writeFile('w.chat', '@You:\nRead my notes.\n');
    await d.openChat('w.chat');
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    await replied(d, f, 'Reading.', [
      {
        id: 'toolu_R',
        name: 'read',
        input: { path: 'notes.txt', label: 'notes', offset: null, limit: null },
      },
    ]);
    expect(onDisk(path)).toContain('**Tool Use:** `read` (`toolu_R`)');
    expect(onDisk(path)).not.toContain('**Tool Result:**');
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaToolCompleted');
    await d.waitUntil(
      `return table.concat(vim.fn.readfile(...), "\\n"):find("remember the milk", 1, true) ~= nil`,
      { args: [path] },
    );
    expect(onDisk(path)).toContain('**Tool Result:** `toolu_R`');
    expect(await d.lua('return vim.bo.modified')).toBe(false);
  });

  it('a chat that is not trusted may turn it off but not on; once trusted it may', async () => {
    const json = (value: boolean): string[] => [
      '```json',
      `{ "flemma": { "editing": { "auto_write": ${String(value)} } } }`,
      '```',
      '@You:',
      'Hello',
    ];
    // Off in setup(), on in the file: not written until the file is trusted.
    let { d, f } = await startWithProvider();
    let path = d.writeFile('on.chat', json(true).join('\n') + '\n');
    await d.openChat('on.chat');
    await d.command('Flemma send');
    await replied(d, f, 'One.');
    expect(onDisk(path)).not.toContain('One.');
    await d.command('trust');
    await d.type('GoAgain');
    await d.press('<Esc>');
    await d.command('Flemma send');
    await replied(d, f, 'Two.');
    expect(onDisk(path)).toContain('Two.');
    await d.quit();
    await f.close();

    // On in setup(), off in a file that is not trusted: that applies.
    ({ d, f } = await startWithProvider('{ editing = { auto_write = true } }'));
    path = d.writeFile('off.chat', json(false).join('\n') + '\n');
    await d.openChat('off.chat');
    await d.command('Flemma send');
    await replied(d, f, 'Three.');
    expect(onDisk(path)).not.toContain('Three.');
  });

  it('leaves a buffer with no file alone', async () => {
    const { d, f } = await startWithProvider('{ editing = { auto_write = true } }');
    await d.command('enew');
    await d.command('setfiletype chat');
    await d.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, { "@You:", "Hello" })');
    await d.command('Flemma send');
    await replied(d, f, 'Hi.');
    expect(await d.lua('return vim.bo.modified')).toBe(true);
    expect(d.notifications().filter((note) => note.message.includes('auto_write'))).toEqual([]);
  });
});
