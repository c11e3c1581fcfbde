// Nothing stale on screen: the "Approval needed" message goes once the call is resolved, the
// preview line of a waiting call stays under its opening fence after `:Flemma tool:approve`, and
// the trust diagnostics go the moment the file is trusted. Each in a Neovim with a UI of 80
// columns, read from what it draws where that is what the user sees.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Driver, startDriver } from '../helpers/driver.js';
import { echoTool } from '../helpers/e2e.js';
import type { Screen } from '../helpers/screen.js';
import { toolUse } from '../helpers/chat-lines.js';

let driver: Driver | undefined;
const dirs: string[] = [];

afterEach(async () => {
  await driver?.quit();
  driver = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const WIDTH = 80;
const HEIGHT = 24;

const ECHO_TOOL = `
${echoTool({ strict: true, more: `format_preview = function(input) return '"' .. input.text .. '"' end,` })}`;

/**
 * Like nvim-notify: `notify(message, level, opts)` shows the message in a floating window (given
 * to `opts.on_open`) and returns a record `{ id }`; `opts.replace` replaces a notification still
 * open, in its window. `_G.notify_calls` records each call with its window.
 */
const NVIM_NOTIFY = `
local M = {}
_G.notify_calls = {}
local open = {}
function M.notify(message, level, opts)
  opts = opts or {}
  local replace = type(opts.replace) == "table" and opts.replace.id or opts.replace
  if replace ~= nil and not open[replace] then error("No matching notification found to replace") end
  local id = #_G.notify_calls + 1
  local win = replace and open[replace]
  if win then
    vim.api.nvim_buf_set_lines(vim.api.nvim_win_get_buf(win), 0, -1, false, { message })
  else
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { message })
    win = vim.api.nvim_open_win(buf, false, { relative = "editor", row = 1, col = 40, width = 38, height = 1 })
    if opts.on_open then opts.on_open(win) end
  end
  table.insert(_G.notify_calls, { id = id, message = message, level = level, replace = replace, win = win })
  if replace ~= nil then open[replace] = nil end
  open[id] = win
  return { id = id }
end
function M.dismiss() end
return setmetatable(M, { __call = function(_, ...) return M.notify(...) end })`;

/** A chat whose last reply asks for `echo_tool`, with no result yet. */
const ASKS = [
  '@You:',
  'Echo.',
  '',
  '@Assistant:',
  ...toolUse('echo_tool', 'toolu_A', '{"text":"look"}'),
  '',
  '@You:',
  '',
];

async function start(options: { rtp?: string[]; before?: string } = {}): Promise<Driver> {
  driver = await startDriver({
    ui: { width: WIDTH, height: HEIGHT },
    ...(options.rtp === undefined ? {} : { rtp: options.rtp }),
    setup: `${options.before ?? ''}
vim.o.cmdheight = 1
require("flemma").setup({ tools = { autopilot = false } })
${ECHO_TOOL}`,
  });
  return driver;
}

/** The command line: the screen's last row. */
function commandLine(screen: Screen): string {
  return screen.row(HEIGHT - 1);
}

/** `<C-]>` on the chat: Phase 1 writes the pending placeholder and says approval is needed. */
async function waitingCall(d: Driver): Promise<void> {
  await d.openChat('wait.chat', ASKS);
  await d.waitForEvent('FlemmaBootComplete');
  const before = d.notificationCount;
  await d.press('<C-]>');
  await d.waitForEvent('FlemmaApprovalNeeded');
  await d.waitForNotification(/Approval needed: echo_tool/, { after: before });
}

/** The 0-based row of a line of the current buffer. */
async function rowOf(d: Driver, text: string): Promise<number> {
  const lines = await d.lines();
  const row = lines.indexOf(text);
  if (row < 0) throw new Error(`no line ${text} in ${JSON.stringify(lines)}`);
  return row;
}

describe('the "Approval needed" message', () => {
  it('leaves the command line once <M-CR> has run the call', async () => {
    const d = await start();
    await waitingCall(d);
    await d.waitForScreen((screen) => commandLine(screen).includes('Approval needed: echo_tool'), {
      what: 'the message on the command line',
    });
    await d.press('<M-CR>');
    await d.waitForEvent('FlemmaToolCompleted');
    await d.waitForScreen((screen) => !commandLine(screen).includes('Approval needed'), {
      what: 'the message gone from the command line',
    });
    // It stays in the message history.
    expect(await d.commandOutput('messages')).toContain('Flemma: Approval needed: echo_tool');
  });

  it('leaves the command line when the placeholder is deleted', async () => {
    const d = await start();
    await waitingCall(d);
    await d.waitForScreen((screen) => commandLine(screen).includes('Approval needed: echo_tool'), {
      what: 'the message on the command line',
    });
    const header = await rowOf(d, '**Tool Result:** `toolu_A`');
    // As a user's edit that prints nothing: the block, header to closing fence, deleted.
    await d.lua(
      `vim.api.nvim_buf_set_lines(0, ${String(header)}, ${String(header + 4)}, false, {})`,
    );
    await d.waitForScreen((screen) => !commandLine(screen).includes('Approval needed'), {
      what: 'the message gone from the command line',
    });
  });

  it('is closed in nvim-notify once the call is approved or rejected', async () => {
    const plugin = mkdtempSync(join(tmpdir(), 'flemma-notify-'));
    dirs.push(plugin);
    mkdirSync(join(plugin, 'lua'));
    writeFileSync(join(plugin, 'lua', 'notify.lua'), NVIM_NOTIFY);
    const d = await start({ rtp: [plugin], before: 'vim.notify = require("notify")' });
    await d.openChat('wait.chat', [
      ...ASKS.slice(0, -2),
      '',
      ...toolUse('echo_tool', 'toolu_B', '{"text":"again"}'),
      '',
      '@You:',
      '',
    ]);
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaApprovalNeeded');
    type Call = { id: number; message: string; replace?: number; win: number };
    const calls = (): Promise<Call[]> => d.lua<Call[]>('return _G.notify_calls');
    await d.waitUntil(
      'for _, c in ipairs(_G.notify_calls) do if c.message:find("Approval needed") then return true end end',
    );
    const shown = (await calls()).find((call) => call.message.includes('Approval needed'));
    expect(shown?.message).toBe('Approval needed: 2 calls (echo_tool)');
    // One of the two resolved: it still waits for the other.
    await d.command(`normal! ${String((await rowOf(d, '**Tool Result:** `toolu_A`')) + 1)}G`);
    await d.command('Flemma tool:approve');
    await d.waitUntil(
      'return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), "```flemma:tool status=approved")',
    );
    await d.afterScheduled();
    const win = shown?.win ?? -1;
    expect(await d.lua('return vim.api.nvim_win_is_valid(...)', win)).toBe(true);
    // The other rejected: nothing waits, the notification's window closes at once.
    await d.command(`normal! ${String((await rowOf(d, '**Tool Result:** `toolu_B`')) + 1)}G`);
    await d.command('Flemma tool:reject');
    await d.waitUntil('return not vim.api.nvim_win_is_valid(...)', { args: [win] });
    expect((await calls()).filter((call) => call.replace === shown?.id)).toEqual([]);
  });
});

describe('the preview line of a waiting call', () => {
  it('stays under its opening fence after :Flemma tool:approve', async () => {
    const d = await start();
    await waitingCall(d);
    const fence = await rowOf(d, '```flemma:tool status=pending');
    let marks = await d.waitForExtmarks('flemma_tool_preview');
    expect(marks.map((mark) => mark[1])).toEqual([fence]);
    await d.command('Flemma tool:approve');
    await d.waitUntil(
      'return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), "```flemma:tool status=approved")',
    );
    await d.afterScheduled();
    marks = await d.waitForExtmarks('flemma_tool_preview', {
      until: '#marks == 1 and marks[1][2] == value',
      value: fence,
    });
    expect(marks.map((mark) => mark[1])).toEqual([fence]);
    // On screen: the preview right under the fence.
    await d.waitForScreen(
      (screen) => {
        // Rows without the turn gutter's mark (its column is drawn before the text).
        const rows = screen.rows().map((row) => row.replace(/^[╭│╰┊╯] /u, ''));
        const at = rows.findIndex((row) => row.startsWith('```flemma:tool status=approved'));
        return at >= 0 && (rows[at + 1] ?? '').trim() === 'echo_tool: "look"';
      },
      { what: 'the preview under the approved fence' },
    );
  });
});

describe('the trust diagnostics', () => {
  const FILES: Record<string, string[]> = {
    json: [
      '```json',
      '{ "name": "x", "flemma": { "tools": { "require_approval": false } } }',
      '```',
    ],
    lua: ['```lua', 'name = "x"', '```'],
  };

  it.each(Object.keys(FILES))(
    'of a %s frontmatter go the moment the file is trusted, and come back with ++remove',
    async (language) => {
      const d = await start();
      d.writeFile('outside.txt', 'secret\n');
      d.writeFile(
        'chats/shared.chat',
        [...(FILES[language] ?? []), '@You:', 'Hello {{ name }}, see @../outside.txt'].join('\n') +
          '\n',
      );
      await d.openChat('chats/shared.chat');
      await d.waitForEvent('FlemmaBootComplete');
      const count = `return #vim.diagnostic.get(0, { namespace = vim.api.nvim_create_namespace("flemma.frontmatter") })`;
      await d.waitUntil(`${count} >= 3`);
      // The warnings' sign is drawn in the sign column.
      await d.waitForScreen((screen) => screen.rows().some((row) => row.startsWith('W ')), {
        what: 'a warning sign',
      });
      const tick = await d.lua<number>('return vim.b.changedtick');
      await d.command('trust');
      await d.waitUntil(`${count} == 0`);
      await d.waitForScreen((screen) => !screen.rows().some((row) => row.startsWith('W ')), {
        what: 'no warning sign',
      });
      // Without any edit.
      expect(await d.lua<number>('return vim.b.changedtick')).toBe(tick);
      await d.command('trust ++remove');
      await d.waitUntil(`${count} >= 3`);
    },
  );
});
