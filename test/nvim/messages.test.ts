// Flemma's messages on an 80-column command line with 'cmdheight' 1: the usual ones fit whole,
// a long one is shortened in the middle instead of stopping Neovim with a hit-enter prompt, and
// its full text is in `:Flemma status` and the log. The trust messages are true (and short) for
// each frontmatter language.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { toolUse } from '../helpers/chat-lines.js';
import { type Driver } from '../helpers/driver.js';
import { ECHO_TOOL, launcher, type Session } from '../helpers/e2e.js';

const launch = launcher();

const WIDTH = 80;
const HEIGHT = 24;

/** Neovim with a UI and `echo_tool`; with `name`, that chat asking `Go.` open and booted. */
function start(name?: string): Promise<Session> {
  return launch({
    ui: { width: WIDTH, height: HEIGHT },
    key: 'sk-ant-test-key',
    setup: `vim.o.cmdheight = 1
require("flemma").setup({ tools = { autopilot = false } })
${ECHO_TOOL}`,
    ...(name === undefined ? {} : { chat: { name, lines: ['@You:', 'Go.'] } }),
  });
}

/**
 * Waits for a message matching `pattern` (after `after`), checks that Neovim does not wait at a
 * hit-enter prompt, and that the command line shows the message whole (as it reached
 * `vim.notify`). Returns the message.
 */
async function shown(d: Driver, pattern: RegExp, after: number): Promise<string> {
  const note = await d.waitForNotification(pattern, { after });
  const mode = (await d.nvim.request('nvim_get_mode', [])) as { mode: string; blocking: boolean };
  if (mode.blocking) await d.nvim.input('<CR>');
  expect(mode, `a hit-enter prompt for: ${note.message}`).toEqual({ mode: 'n', blocking: false });
  expect(await d.lua<number>('return vim.fn.strdisplaywidth(...)', note.message)).toBeLessThan(
    WIDTH - 11,
  );
  await d.waitForScreen((screen) => screen.row(HEIGHT - 1).trimEnd() === note.message, {
    what: `the command line showing ${JSON.stringify(note.message)}`,
  });
  return note.message;
}

describe('on an 80-column command line', () => {
  it('the messages of a tool loop and of a busy request fit whole', async () => {
    const { d, f } = await start('loop.chat');
    let mark = d.notificationCount;
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    // A send again while the reply is on its way.
    await d.command('Flemma send');
    expect(await shown(d, /already in progress/, mark)).toBe(
      'Flemma: A request is already in progress (<C-c> cancels it)',
    );
    await anthropicReply(request, 'Two calls.', [
      { id: 'toolu_1', name: 'echo_tool', input: { text: 'a' } },
      { id: 'toolu_2', name: 'echo_tool', input: { text: 'b' } },
    ]);
    await d.waitForEvent('FlemmaRequestFinished');
    mark = d.notificationCount;
    await d.press('<C-]>');
    expect(await shown(d, /Approval needed/, mark)).toBe(
      'Flemma: Approval needed: 2 calls (echo_tool)',
    );
    // Both approved, one with text typed into it: that one is kept from running.
    const lines = await d.lines();
    const fences = lines.flatMap((line, row) =>
      line === '```flemma:tool status=pending' ? [row] : [],
    );
    await d.lua(
      `local a, b = ...
      vim.api.nvim_buf_set_lines(0, b, b + 1, false, { "\`\`\`flemma:tool status=approved", "my text" })
      vim.api.nvim_buf_set_lines(0, a, a + 1, false, { "\`\`\`flemma:tool status=approved" })`,
      fences[0],
      fences[1],
    );
    mark = d.notificationCount;
    await d.press('<C-]>');
    expect(await shown(d, /approved block/, mark)).toBe(
      'Flemma: 1 approved block has your text: not run (plain ``` sends it)',
    );
  });

  it('a long error is shortened in the middle; :Flemma status and the log have it whole', async () => {
    const { d, f } = await start('long.chat');
    const mark = d.notificationCount;
    await d.press('<C-]>');
    const detail =
      'the model claude-sonnet-4-6 does not accept this request because its prompt is far too long for it, trim the chat';
    await (
      await f.nextRequest({ path: '/v1/messages' })
    ).respondError(400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: detail },
    });
    const text = await shown(d, /anthropic/, mark);
    expect(text).toMatch(/^Flemma: anthropic.* … .*trim the chat$/);
    // The history holds what was shown.
    expect(await d.commandOutput('messages')).toContain(text);
    // The full text: at the end of :Flemma status, and in the log.
    await d.command('Flemma status');
    await d.waitUntil('return vim.fn.bufnr("flemma://status") ~= -1');
    const status = await d.lua<string[]>(
      'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://status"), 0, -1, false)',
    );
    const at = status.indexOf('messages shortened on the command line, in full:');
    expect(at).toBeGreaterThan(0);
    expect(status[at + 1]).toMatch(/^ {2}\d\d:\d\d:\d\d Flemma: anthropic/);
    expect(status[at + 1]).toContain(detail);
    const log = readFileSync(join(d.home, 'state', 'nvim', 'flemma.log'), 'utf8');
    expect(log).toContain(detail);
  });
});

describe('a message about work in progress', () => {
  it('"Executing 1/2 tools" leaves the command line when the tools have ended', async () => {
    const { d } = await launch({
      ui: { width: WIDTH, height: HEIGHT },
      key: 'sk-ant-test-key',
      setup: `vim.o.cmdheight = 1
require("flemma").setup({ tools = { autopilot = false, max_concurrent = 1, auto_approve = { "wait_tool" } } })
_G.waiting = {}
require("flemma.tools").register("wait_tool", {
  name = "wait_tool",
  description = "Answers when the test says so",
  input_schema = { type = "object", properties = {} },
  execute = function(input, ctx, callback)
    table.insert(_G.waiting, function() callback({ success = true, output = "done" }) end)
  end,
})`,
    });
    await d.openChat('busy.chat', [
      '@You:',
      'Work.',
      '',
      '@Assistant:',
      ...toolUse('wait_tool', 'toolu_1'),
      '',
      ...toolUse('wait_tool', 'toolu_2'),
    ]);
    await d.waitForEvent('FlemmaBootComplete');
    const mark = d.notificationCount;
    await d.press('<C-]>');
    expect(await shown(d, /Executing/, mark)).toBe(
      'Flemma: Executing 1/2 tools (max_concurrent=1)',
    );
    for (const n of [1, 2]) {
      await d.waitUntil(`return #_G.waiting == ${String(n)}`);
      await d.lua(`_G.waiting[${String(n)}]()`);
    }
    await d.waitForScreen((screen) => !screen.row(HEIGHT - 1).includes('Executing'), {
      what: 'the command line without the message',
    });
  });
});

describe('the trust messages', () => {
  const TEMPLATE = ['@You:', 'Hello {{ name }}.'];
  const cases: [string, string[], RegExp][] = [
    ['no', [], /^Flemma: t\.chat: review it, then :trust to run its templates$/],
    [
      'a JSON',
      ['```json', '{ "name": "x", "flemma": { "temperature": 0.2 } }', '```'],
      /^Flemma: t\.chat: review it, then :trust to run its templates$/,
    ],
    [
      'a YAML',
      ['```yaml', 'name: x', 'flemma:', '  temperature: 0.2', '```'],
      /^Flemma: t\.chat: review it, then :trust to run its templates$/,
    ],
    [
      'a Lua',
      ['```lua', 'name = "x"', '```'],
      /^Flemma: t\.chat: review it, then :trust to run its Lua frontmatter$/,
    ],
  ];

  it.each(cases)('with %s frontmatter say what waits for :trust, and fit', async (_, fm, want) => {
    const { d } = await start();
    d.writeFile('t.chat', [...fm, ...TEMPLATE].join('\n') + '\n');
    await d.openChat('t.chat');
    await d.waitForEvent('FlemmaBootComplete');
    // The chat as a user sees it before sending: its trust diagnostics drawn. (On Neovim 0.10 a
    // message shown before the diagnostics' signs first appear can be wiped by that redraw.)
    await d.waitUntil('return #vim.diagnostic.get(0) > 0');
    const mark = d.notificationCount;
    await d.press('<C-]>');
    const text = await shown(d, /:trust/, mark);
    expect(text).toMatch(want);
    expect(text).not.toMatch(/JSON|no trust/);
  });

  it('an option the file may not set: named, fits', async () => {
    const { d, f } = await start();
    d.writeFile(
      'opt.chat',
      ['```json', '{ "flemma": { "tools": { "require_approval": false } } }', '```', '@You:', 'Hi.']
        .join('\n')
        .concat('\n'),
    );
    await d.openChat('opt.chat');
    await d.waitForEvent('FlemmaBootComplete');
    const mark = d.notificationCount;
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    expect(await shown(d, /not applied/, mark)).toBe(
      'Flemma: opt.chat: tools.require_approval not applied until :trust',
    );
    await anthropicReply(request, 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished');
  });
});
