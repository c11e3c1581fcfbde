// A signal when the user is needed (docs/ui.md, "Attention"): `User FlemmaAttention` fires for a
// call that waits for approval, a finished turn and a failed request, only when the chat is not
// the current buffer or Neovim lost focus; and nothing is written to a terminal that is not there
// (this Neovim is headless, its only UI is the test's over RPC).
import { describe, expect, it } from 'vitest';
import { anthropicError, anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { echoTool, launcher, type Session } from '../helpers/e2e.js';

const launch = launcher();

const ECHO_TOOL = `
${echoTool({ strict: true })}`;

/** A terminal `attention.terminal = "auto"` knows nothing about, outside tmux. */
const PLAIN_TERMINAL = {
  TERM: 'xterm-256color',
  TERM_PROGRAM: '',
  LC_TERMINAL: '',
  KITTY_WINDOW_ID: '',
  WEZTERM_PANE: '',
  GHOSTTY_RESOURCES_DIR: '',
  TMUX: '',
};

function start(options = '{}'): Promise<Session> {
  return launch({
    ui: { width: 80, height: 24 },
    key: 'sk-ant-test-key',
    env: PLAIN_TERMINAL,
    setup: `require("flemma").setup(${options})
${ECHO_TOOL}
-- What the signal would write to a terminal, had this Neovim one.
_G.attention_writes = {}
local attention = require("flemma.ui.attention")
local write = attention.write
attention.write = function(bytes)
  local written = write(bytes)
  table.insert(_G.attention_writes, { bytes = bytes, written = written })
  return written
end`,
  });
}

/** Opens a chat that asks something, and sends it; the request is left to the test. */
async function send(d: Driver, name: string): Promise<number> {
  const bufnr = await d.openChat(name, ['@You:', 'Hello?']);
  await d.command('Flemma send');
  return bufnr;
}

/** Leaves the chat: another buffer in the window. */
async function elsewhere(d: Driver): Promise<void> {
  await d.command('enew');
}

function attentions(d: Driver): Record<string, unknown>[] {
  return d.eventsSeen('FlemmaAttention').map((event) => event.data);
}

/** The next `User FlemmaAttention` carries `data`. */
async function expectAttention(d: Driver, data: Record<string, unknown>): Promise<void> {
  expect((await d.waitForEvent('FlemmaAttention')).data).toEqual(data);
}

describe('User FlemmaAttention', () => {
  it('fires when a turn finishes in a chat that is not current, and not in the current one', async () => {
    const { d, f } = await start();
    // Watched: the chat is current and Neovim has focus.
    const watched = await send(d, 'watched.chat');
    await anthropicReply(await f.nextRequest(), 'Here.');
    await d.waitForEvent('FlemmaRequestFinished');
    // Not watched: the same, with another buffer current while the reply comes.
    const away = await send(d, 'away.chat');
    const request = await f.nextRequest();
    await elsewhere(d);
    await anthropicReply(request, 'Here too.');
    await expectAttention(d, {
      reason: 'finished',
      bufnr: away,
      message: 'away.chat: the reply is finished',
    });
    // The signals keep the host's order: the watched chat's would have come first.
    expect(attentions(d)).toHaveLength(1);
    expect(watched).not.toBe(away);
    // Headless: no terminal to write to, so nothing was written (the bell, by default).
    expect(await d.lua('return _G.attention_writes')).toEqual([
      { bytes: '\u0007', written: false },
    ]);
  });

  it('fires when Neovim lost focus, even with the chat current, and not after it came back', async () => {
    const { d, f } = await start();
    await send(d, 'focus.chat');
    await d.command('doautocmd FocusLost');
    await anthropicReply(await f.nextRequest(), 'One.');
    const lost = await d.waitForEvent('FlemmaAttention');
    expect(lost.data['reason']).toBe('finished');
    await d.command('doautocmd FocusGained');
    await d.lua(`vim.api.nvim_buf_set_lines(0, -1, -1, false, { "", "@You:", "Again?" })`);
    await d.command('Flemma send');
    await anthropicReply(await f.nextRequest(), 'Two.');
    await d.waitForEvent('FlemmaRequestFinished', { after: d.eventCount });
    // A last turn away from the chat: its signal is the second one, so the focused turn gave none.
    await d.lua(`vim.api.nvim_buf_set_lines(0, -1, -1, false, { "", "@You:", "Three?" })`);
    await d.command('Flemma send');
    const third = await f.nextRequest();
    await elsewhere(d);
    await anthropicReply(third, 'Three.');
    await d.waitForEvent('FlemmaAttention', { after: d.eventCount });
    expect(attentions(d).map((data) => data['reason'])).toEqual(['finished', 'finished']);
  });

  it('fires when a call waits for approval, once, and not for the turn that continues', async () => {
    const { d, f } = await start();
    const bufnr = await send(d, 'tool.chat');
    const request = await f.nextRequest();
    await elsewhere(d);
    await anthropicReply(request, 'Let me echo.', [
      { id: 'toolu_1', name: 'echo_tool', input: { text: 'hi' } },
    ]);
    await d.waitForEvent('FlemmaApprovalNeeded');
    expect(attentions(d)).toEqual([
      { reason: 'approval', bufnr, message: 'tool.chat: echo_tool waits for approval' },
    ]);
  });

  it('says nothing about a call that waits while the chat is watched', async () => {
    const { d, f } = await start();
    await send(d, 'tool.chat');
    await anthropicReply(await f.nextRequest(), 'Let me echo.', [
      { id: 'toolu_1', name: 'echo_tool', input: { text: 'hi' } },
    ]);
    await d.waitForEvent('FlemmaApprovalNeeded');
    expect(attentions(d)).toEqual([]);
  });

  it('fires when a request fails in a chat that is not current, not when it is', async () => {
    const { d, f } = await start();
    await send(d, 'watched.chat');
    await anthropicError(await f.nextRequest(), 400, 'invalid_request_error', 'bad request');
    await d.waitForEvent('FlemmaRequestFinished');
    const away = await send(d, 'fails.chat');
    const request = await f.nextRequest();
    await elsewhere(d);
    await anthropicError(request, 400, 'invalid_request_error', 'bad request');
    await expectAttention(d, {
      reason: 'failed',
      bufnr: away,
      message: 'fails.chat: the request failed',
    });
    expect(attentions(d)).toHaveLength(1);
  });

  it('stays quiet with attention.enabled = false, and runs attention.command with the message', async () => {
    const { d, f } = await start(`{ attention = { enabled = false } }`);
    await send(d, 'quiet.chat');
    const first = await f.nextRequest();
    await elsewhere(d);
    await anthropicReply(first, 'Shh.');
    await d.waitForEvent('FlemmaRequestFinished');
    // The command's output file tells it ran, and with what; `enabled` back on for the next turn.
    const out = `${d.home}/attention.txt`;
    await d.lua(
      `require("flemma").setup({ attention = { command = { "sh", "-c", 'printf "%s|%s" "$1" "$2" > "$0"', ..., "{reason}", "{message}" } } })`,
      out,
    );
    await d.command('buffer quiet.chat');
    await d.lua(`vim.api.nvim_buf_set_lines(0, -1, -1, false, { "", "@You:", "Now?" })`);
    await d.command('Flemma send');
    const second = await f.nextRequest();
    await elsewhere(d);
    await anthropicReply(second, 'Now.');
    await d.waitForEvent('FlemmaAttention');
    expect(attentions(d)).toHaveLength(1);
    const written = await d.lua<string>(
      `local path = ...
      vim.wait(10000, function() return vim.uv.fs_stat(path) ~= nil and vim.fn.readfile(path)[1] ~= nil end, 10)
      return vim.fn.readfile(path)[1]`,
      out,
    );
    expect(written).toBe('finished|quiet.chat: the reply is finished');
  });
});

describe('the escape sequences', () => {
  it('builds OSC 777, OSC 9 and the bell, and wraps them for tmux', async () => {
    const { d: driver } = await launch({ key: false });
    const seqs = await driver.lua<Record<string, string>>(`
      local a = require("flemma.ui.attention")
      return {
        osc777 = a.sequence("osc777", "a.chat: done"),
        osc9 = a.sequence("osc9", "a.chat: done"),
        bell = a.sequence("bell", "a.chat: done", true),
        tmux777 = a.sequence("osc777", "a.chat: done", true),
        tmux9 = a.sequence("osc9", "x", true),
        hostile = a.sequence("osc777", "evil\\027]52;c;AAAA\\007name\\n"),
        long = #a.sequence("osc9", string.rep("é", 300)),
      }`);
    expect(seqs['osc777']).toBe('\x1b]777;notify;Flemma;a.chat: done\x07');
    expect(seqs['osc9']).toBe('\x1b]9;Flemma: a.chat: done\x07');
    expect(seqs['bell']).toBe('\x07');
    expect(seqs['tmux777']).toBe('\x1bPtmux;\x1b\x1b]777;notify;Flemma;a.chat: done\x07\x1b\\');
    expect(seqs['tmux9']).toBe('\x1bPtmux;\x1b\x1b]9;Flemma: x\x07\x1b\\');
    // Control characters in a name cannot end the sequence early.
    expect(seqs['hostile']).toBe('\x1b]777;notify;Flemma;evil ]52;c;AAAA name \x07');
    // At most 200 bytes of text, cut at a whole character.
    expect(seqs['long']).toBe('\x1b]9;Flemma: '.length + 200 + 1);
  });

  it('picks the notification the terminal understands from its environment', async () => {
    const { d: driver } = await launch({ key: false });
    const picks = await driver.lua<unknown[]>(`
      local detect = require("flemma.ui.attention").detect
      return {
        detect({ TERM_PROGRAM = "iTerm.app" }) or false,
        detect({ TERM = "xterm-kitty" }) or false,
        detect({ TERM_PROGRAM = "tmux", KITTY_WINDOW_ID = "1" }) or false,
        detect({ TERM_PROGRAM = "WezTerm" }) or false,
        detect({ TERM = "xterm-ghostty" }) or false,
        detect({ TERM = "foot" }) or false,
        detect({ TERM = "rxvt-unicode-256color" }) or false,
        detect({ TERM = "xterm-256color" }) or false,
      }`);
    expect(picks).toEqual(['osc9', 'osc9', 'osc9', 'osc777', 'osc777', 'osc777', 'osc777', false]);
  });
});
