// A chat buffer is locked while Flemma writes into it (docs/ui.md, "While a reply streams"):
// typing in it says so once, without a run of E21/E35 errors, and changes nothing; Flemma's own
// keys do not act on the message still being written; everything is as before once it ends.
import { describe, expect, it } from 'vitest';
import { type ScriptedStream, anthropicStream } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';

const launch = launcher();

const LOCKED = /^Flemma: read-only while the reply streams in \(<C-c> cancels it\)$/;

async function streaming(
  lines: string[],
  setupLua = '',
): Promise<{ d: Driver; s: ScriptedStream; buf: number }> {
  const { d: driver, f: fake } = await launch({
    ui: { width: 100, height: 30 },
    setup: setupLua,
  });
  const d = driver;
  const buf = await d.openChat('locked.chat', lines);
  await d.press('<C-]>');
  const s = await anthropicStream(await fake.nextRequest({ path: '/v1/messages' }));
  await s.text('The answer begins');
  await d.waitUntil('return vim.fn.getline("$") == "The answer begins"');
  return { d, s, buf };
}

/** Errors (`E<number>:`) in the message history. */
async function errors(d: Driver): Promise<string[]> {
  return (await d.commandOutput('messages')).split('\n').filter((line) => /E\d+:/.test(line));
}

/** The messages shown since the `notes`th, once what was scheduled has run. */
async function messagesSince(d: Driver, notes: number): Promise<string[]> {
  await d.afterScheduled();
  return d
    .notifications()
    .slice(notes)
    .map((note) => note.message);
}

describe('a locked chat buffer', () => {
  it('says once that it is read-only, whatever is typed, and changes nothing', async () => {
    const { d, s, buf } = await streaming(['@You:', 'What is the answer?']);
    const before = await d.lines(buf);
    const notes = d.notificationCount;
    // Typing as if in Insert mode (the send left it), then in Insert mode, then editing keys.
    await d.type('hello there, is it done yet? no');
    await d.press('<Esc>');
    await d.press('ihello world<CR>second line<BS><C-w><Tab><Esc>');
    await d.press('Aappended<Esc>oopened<Esc>ccchanged<Esc>');
    await d.press('xdddwpPJu<C-r>.~>>rq');
    await d.press('nN');
    expect(await d.lines(buf)).toEqual(before);
    // With a search pattern, `n` searches as ever.
    await d.press('gg0');
    await d.lua('vim.fn.setreg("/", "answer")');
    await d.press('n');
    expect(await d.lua('return vim.api.nvim_win_get_cursor(0)')).toEqual([2, 12]);
    expect(await errors(d)).toEqual([]);
    await d.afterScheduled();
    const said = d.notifications().slice(notes);
    expect(said.map((note) => note.message)).toEqual([expect.stringMatching(LOCKED)]);
    expect(said[0]?.level).toBe(3);
    await s.text(', and ends here.');
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
    // Unlocked: the keys are the user's again.
    await d.press('<Esc>gg0');
    await d.press('x');
    expect((await d.lines(buf))[0]).toBe('You:');
    await d.press('Go');
    await d.type('next question');
    await d.press('<Esc>');
    expect((await d.lines(buf)).at(-1)).toBe('next question');
    expect(await errors(d)).toEqual([]);
  });

  it("puts the buffer's own mappings of those keys back", async () => {
    const { d: driver, f: fake } = await launch();
    const d = driver;
    const buf = await d.openChat('maps.chat', ['@You:', 'Hi']);
    await d.lua(
      `vim.keymap.set("n", "x", function() _G.pressed = "x" end, { buffer = true, desc = "mine" })
      vim.keymap.set("i", "<CR>", "<CR><CR>", { buffer = true, desc = "mine too" })`,
    );
    await d.press('<C-]>');
    const s = await anthropicStream(await fake.nextRequest({ path: '/v1/messages' }));
    await s.text('Hello.');
    await d.waitUntil('return vim.fn.getline("$") == "Hello."');
    await d.press('x');
    expect(await d.lua('return _G.pressed')).toBeNull();
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
    await d.press('x');
    expect(await d.lua('return _G.pressed')).toBe('x');
    const maps = await d.lua<string[]>(
      `local out = {}
      for _, mode in ipairs({ "n", "i" }) do
        for _, map in ipairs(vim.api.nvim_buf_get_keymap(..., mode)) do
          if map.desc and map.desc:find("read%-only") then out[#out + 1] = mode .. " " .. map.lhs end
          if map.desc == "mine too" then out[#out + 1] = "mine: " .. map.rhs end
        end
      end
      return out`,
      buf,
    );
    expect(maps).toEqual(['mine: <CR><CR>']);
  });

  it('the fold toggle does not fold the message being written, but folds the others', async () => {
    const { d, s } = await streaming([
      '@System:',
      'Be brief.',
      'Really.',
      '',
      '@You:',
      'What is the answer?',
    ]);
    const notes = d.notificationCount;
    // On the reply being written: nothing is folded.
    await d.press('G');
    await d.press('<Space>');
    expect(await d.lua('return vim.fn.foldclosed(".")')).toBe(-1);
    expect(await d.lua('return vim.fn.foldlevel(".")')).toBe(0);
    expect(await messagesSince(d, notes)).toEqual([expect.stringMatching(LOCKED)]);
    // On a complete message: folded as ever.
    await d.press('gg');
    await d.press('<Space>');
    expect(await d.lua('return vim.fn.foldclosed(1)')).toBe(1);
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('approving a call in the reply being written waits for the reply to end', async () => {
    const { d, s, buf } = await streaming(['@You:', 'Read a file.']);
    await s.toolUse({ id: 'toolu_R', name: 'read', input: { path: 'a.txt' } });
    await s.text('More text after the call.');
    await d.waitUntil('return vim.fn.getline("$") == "More text after the call."');
    const before = await d.lines(buf);
    const header = before.findIndex((line) => line.startsWith('**Tool Use:**'));
    expect(header).toBeGreaterThan(0);
    await d.lua('vim.api.nvim_win_set_cursor(0, { ..., 0 })', header + 1);
    const notes = d.notificationCount;
    await d.command('Flemma tool:approve');
    await d.press('<M-CR>');
    await s.text(' The end.');
    await d.waitUntil('return vim.fn.getline("$") == "More text after the call. The end."');
    const after = await d.lines(buf);
    expect(after.filter((line) => line.startsWith('**Tool Result:**'))).toEqual([]);
    expect(await messagesSince(d, notes)).toEqual([expect.stringMatching(LOCKED)]);
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
  });
});
