// Following a reply (docs/ui.md, "Following a reply"): a window at the end of a chat follows what
// the host writes there, like `tail -f`; a window scrolled away stays where it is and shows a
// hint, and `G` makes it follow again. The same for tool results.
import { describe, expect, it } from 'vitest';
import { type ScriptedStream, anthropicStream } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { callChat, placeholder, toolResult, toolUse } from '../helpers/chat-lines.js';
import { finishGated, GATED_TOOL, launcher } from '../helpers/e2e.js';
import { type FakeProvider } from '../helpers/fake-provider.js';

const launch = launcher();

/** A chat longer than the window: a question of `count` lines. */
function longChat(count: number): string[] {
  return [
    '@You:',
    ...Array.from({ length: count }, (_, i) => `line ${String(i + 1)} of the question`),
  ];
}

async function setup(
  lines: string[],
  setupLua = '',
): Promise<{ d: Driver; f: FakeProvider; buf: number }> {
  const session = await launch({
    ui: { width: 80, height: 24 },
    setup: setupLua,
    chat: { name: 'follow.chat', lines, boot: false },
  });
  return { d: session.d, f: session.f, buf: session.buf };
}

/** How a window stands: cursor line, first and last line on screen, the buffer's last line. */
interface View {
  cursor: number;
  top: number;
  bottom: number;
  last: number;
}

async function view(d: Driver, win = 0): Promise<View> {
  const [cursor, top, bottom, last] = await d.lua<number[]>(
    `local win = ...
    if win == 0 then win = vim.api.nvim_get_current_win() end
    local buf = vim.api.nvim_win_get_buf(win)
    return { vim.api.nvim_win_get_cursor(win)[1], vim.fn.line("w0", win), vim.fn.line("w$", win),
      vim.api.nvim_buf_line_count(buf) }`,
    win,
  );
  return { cursor: cursor ?? 0, top: top ?? 0, bottom: bottom ?? 0, last: last ?? 0 };
}

/** Sends one line of the reply and waits until it is in the buffer. */
async function line(d: Driver, s: ScriptedStream, buf: number, text: string): Promise<void> {
  await s.text(`${text}\n`);
  await d.waitUntil(
    `local buf, text = ...
    local n = vim.api.nvim_buf_line_count(buf)
    return vim.api.nvim_buf_get_lines(buf, n - 2, n - 1, false)[1] == text`,
    { args: [buf, text] },
  );
}

/** The hint a window shows (null when none), checked against what its float shows. */
async function hint(d: Driver, win: number): Promise<string | null> {
  return d.lua<string | null>(
    `local win = ...
    local text = require("flemma.follow").hint(win)
    local shown
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      local config = vim.api.nvim_win_get_config(w)
      if config.relative == "win" and config.win == win then
        local line = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, 1, false)[1]
        if line:find("below · G", 1, true) then
          assert(shown == nil, "one hint per window")
          shown = vim.trim(line)
        end
      end
    end
    assert(shown == text, "the float shows " .. tostring(shown) .. ", hint() says " .. tostring(text))
    return text or vim.NIL`,
    win,
  );
}

describe('following a reply', () => {
  it('a window whose cursor is on the last line follows the reply to its end', async () => {
    const { d, f, buf } = await setup(longChat(60));
    await d.press('G');
    const before = await view(d);
    expect(before.bottom).toBe(before.last);
    await d.press('<C-]>');
    const s = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    for (let i = 1; i <= 40; i++) {
      await line(d, s, buf, `answer line ${String(i)}`);
      const now = await view(d);
      // The cursor is on the last line, and the last line is on screen.
      expect(now.cursor).toBe(now.last);
      expect(now.bottom).toBe(now.last);
    }
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
    const end = await view(d);
    expect((await d.lines()).slice(-2)).toEqual(['@You:', '']);
    expect(end.cursor).toBe(end.last);
    expect(end.bottom).toBe(end.last);
    // Tail-like: the last line at the bottom of the window, not centred.
    expect(end.top).toBeGreaterThan(end.last - 25);
  });

  it('a window scrolled away stays, shows a hint, and follows again after G', async () => {
    const { d, f, buf } = await setup(longChat(60));
    await d.press('G');
    await d.command('split');
    const [following, away] = await d.lua<[number, number]>(
      `local top = vim.api.nvim_get_current_win()
      vim.cmd("wincmd j")
      local below = vim.api.nvim_get_current_win()
      vim.cmd("normal! gg")
      vim.cmd("wincmd k")
      return { top, below }`,
    );
    await d.press('<C-]>');
    const s = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    for (let i = 1; i <= 20; i++) await line(d, s, buf, `answer line ${String(i)}`);
    const top = await view(d, following);
    expect(top.cursor).toBe(top.last);
    expect(top.bottom).toBe(top.last);
    // The other window did not move, and says where the reply is.
    const other = await view(d, away);
    expect([other.cursor, other.top]).toEqual([1, 1]);
    expect(other.bottom).toBeLessThan(other.last);
    expect(await hint(d, away)).toBe('↓ reply streaming below · G');
    expect(await hint(d, following)).toBeNull();

    // `G` there: the hint goes and that window follows too.
    await d.command('wincmd j');
    await d.press('G');
    expect(await hint(d, away)).toBeNull();
    for (let i = 21; i <= 40; i++) {
      await line(d, s, buf, `answer line ${String(i)}`);
      const now = await view(d, away);
      expect(now.cursor).toBe(now.last);
      expect(now.bottom).toBe(now.last);
    }
    // Moving away while it streams: the window stays where the user put it.
    await d.press('gg');
    for (let i = 41; i <= 45; i++) await line(d, s, buf, `answer line ${String(i)}`);
    const moved = await view(d, away);
    expect([moved.cursor, moved.top]).toEqual([1, 1]);
    expect(await hint(d, away)).toBe('↓ reply streaming below · G');
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
    // Once the reply is complete the hint says so, until the window shows the end.
    expect(await hint(d, away)).toBe('↓ reply below · G');
    await d.press('G');
    await d.afterScheduled();
    expect(await hint(d, away)).toBeNull();
  });

  it('a window showing the end keeps showing it without moving the cursor', async () => {
    const { d, f, buf } = await setup(longChat(40));
    await d.press('G');
    await d.press('5k');
    const start = await view(d);
    expect(start.bottom).toBe(start.last);
    await d.press('<C-]>');
    const s = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    let followed = 0;
    for (let i = 1; i <= 40; i++) {
      await line(d, s, buf, `answer line ${String(i)}`);
      const now = await view(d);
      // The cursor stays on the line the user was reading, whatever happens to the view.
      expect(now.cursor).toBe(start.cursor);
      expect(now.top).toBeLessThanOrEqual(now.cursor);
      if (now.bottom === now.last) followed += 1;
    }
    // It followed while its cursor stayed on screen, then stopped there with the hint.
    expect(followed).toBeGreaterThan(5);
    const end = await view(d);
    expect(end.bottom).toBeLessThan(end.last);
    expect(await hint(d, await d.lua<number>('return vim.api.nvim_get_current_win()'))).toBe(
      '↓ reply streaming below · G',
    );
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
  });
});

/** Neovim with `gated_tool`, no autopilot, the cursor left where it is; `chat` open and booted. */
async function gated(chat: string[]): Promise<{ d: Driver; buf: number }> {
  const { d, buf } = await setup(
    chat,
    `require("flemma").setup({ tools = { autopilot = false, cursor_after_result = "stay" } })
    ${GATED_TOOL}`,
  );
  await d.waitForEvent('FlemmaBootComplete');
  return { d, buf };
}

describe('following tool results', () => {
  it('a window at the end shows the result written below it; one scrolled away gets the hint', async () => {
    const { d, buf } = await gated([
      ...longChat(60),
      '',
      '@Assistant:',
      ...toolUse('gated_tool', 'toolu_G'),
      '',
      '@You:',
      '',
      ...placeholder('toolu_G', 'approved'),
    ]);
    // The chat is the user's: its `approved` stands (in a file not trusted the chain judges it).
    await d.command('trust');
    await d.press('G');
    await d.command('split');
    const away = await d.lua<number>(
      `vim.cmd("wincmd j")
      local win = vim.api.nvim_get_current_win()
      vim.cmd("normal! gg")
      vim.cmd("wincmd k")
      return win`,
    );
    await d.press('<C-]>');
    const output = Array.from({ length: 30 }, (_, i) => `result line ${String(i + 1)}`).join('\n');
    await finishGated(d, output);
    await d.waitForEvent('FlemmaToolCompleted');
    await d.waitUntil(
      `return vim.fn.getline("$") == "\`\`\`" and vim.fn.search("result line 30", "n") > 0`,
    );
    expect(await d.lua('return vim.api.nvim_buf_get_lines(..., -2, -1, false)[1]', buf)).toBe(
      '```',
    );
    const now = await view(d);
    expect(now.cursor).toBe(now.last);
    expect(now.bottom).toBe(now.last);
    const other = await view(d, away);
    expect([other.cursor, other.top]).toEqual([1, 1]);
    expect(await hint(d, away)).toBe('↓ tool results below · G');
  });

  it('a result written where the window looks gets no hint, the end staying where it is', async () => {
    const { d, buf } = await gated([
      ...callChat('Run it.', [['gated_tool', 'toolu_M']]),
      '',
      '@You:',
      '',
      ...toolResult('toolu_M', ['old output']),
      '',
      ...longChat(60).slice(1),
    ]);
    await d.press('5G');
    const win = await d.lua<number>('return vim.api.nvim_get_current_win()');
    await d.press('<M-CR>');
    await finishGated(d, 'new output');
    await d.waitForEvent('FlemmaToolCompleted');
    await d.waitUntil('return vim.fn.search("new output", "n") > 0');
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(true);
    const now = await view(d);
    expect([now.cursor, now.top]).toEqual([5, 1]);
    expect(await hint(d, win)).toBeNull();
  });
});
