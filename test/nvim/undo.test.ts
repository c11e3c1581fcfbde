// One `u` undoes a whole reply (docs/ui.md, "Undo"): what Flemma writes while a buffer is locked
// (a streamed reply, a run of tools' results) is one undo step, however many batches it took,
// and the user's own edits before it stay their own steps.
import { describe, expect, it } from 'vitest';
import { anthropicStream } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeProvider } from '../helpers/fake-provider.js';

const launch = launcher();

async function start(setupLua = ''): Promise<{ d: Driver; f: FakeProvider }> {
  const { d: driver, f: fake } = await launch({
    setup: setupLua,
  });
  return { d: driver, f: fake };
}

/** Waits until the buffer's last line is `text` (a batch of the stream is in). */
async function lastLine(d: Driver, text: string): Promise<void> {
  await d.waitUntil('return vim.fn.getline("$") == ...', { args: [text] });
}

async function errors(d: Driver): Promise<string[]> {
  return (await d.commandOutput('messages')).split('\n').filter((line) => /E\d+:/.test(line));
}

/** Each of `steps` in turn: its keys (undo, redo), then the chat's lines; no error after. */
async function undoRedo(d: Driver, buf: number, steps: [string, string[]][]): Promise<void> {
  for (const [keys, lines] of steps) {
    await d.press(keys);
    expect(await d.lines(buf)).toEqual(lines);
  }
  expect(await errors(d)).toEqual([]);
}

describe('undoing what Flemma wrote', () => {
  it('one u undoes a streamed reply; the edits made before it stay steps of their own', async () => {
    const { d, f } = await start();
    const buf = await d.openChat('undo.chat', ['@You:', 'Hello']);
    await d.press('GA there<Esc>');
    // The second edit is still being typed (its undo block open) when <C-]> sends.
    await d.press('oSecond line');
    await d.press('<C-]>');
    const s = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    // <C-]> from Insert mode comes back to Insert mode once the reply is in: a witness of it.
    await d.lua(
      'vim.api.nvim_create_autocmd("InsertEnter", { once = true, callback = function() vim.schedule(function() vim.api.nvim_exec_autocmds("User", { pattern = "TestInsertAgain" }) end) end })',
    );
    // Each line in a batch of its own: the next is sent once the last is in.
    for (let i = 1; i <= 8; i++) {
      await s.text(`\nreply line ${String(i)}`);
      await lastLine(d, `reply line ${String(i)}`);
    }
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
    await d.waitForEvent('TestInsertAgain');
    await d.press('<Esc>');
    const replied = await d.lines(buf);
    expect(replied.slice(0, 5)).toEqual(['@You:', 'Hello there', 'Second line', '', '@Assistant:']);
    expect(replied.slice(-2)).toEqual(['@You:', '']);

    await undoRedo(d, buf, [
      ['u', ['@You:', 'Hello there', 'Second line']],
      ['u', ['@You:', 'Hello there']],
      ['u', ['@You:', 'Hello']],
      ['<C-r><C-r>', ['@You:', 'Hello there', 'Second line']],
      ['<C-r>', replied],
    ]);
  });

  it('a send from Insert mode does not take the text being typed into its undo step', async () => {
    const { d, f } = await start();
    const buf = await d.openChat('insert.chat', ['@You:', 'Hello']);
    // A user's own mapping that sends without leaving Insert mode.
    await d.lua('vim.keymap.set("i", "<F5>", "<Cmd>Flemma send<CR>", { buffer = true })');
    await d.press('GoSecond line<F5>');
    const s = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    await s.text('The reply.');
    await lastLine(d, 'The reply.');
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
    await d.press('<Esc>');
    await d.press('u');
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello', 'Second line']);
    await d.press('u');
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
  });

  it('a cancelled reply goes with one u too', async () => {
    const { d, f } = await start();
    const buf = await d.openChat('cancel.chat', ['@You:', 'Hello']);
    await d.press('<C-]>');
    const s = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    for (let i = 1; i <= 4; i++) {
      await s.text(`\nline ${String(i)}`);
      await lastLine(d, `line ${String(i)}`);
    }
    await d.press('<C-c>');
    await d.waitForEvent('FlemmaRequestFinished');
    expect((await d.lines(buf)).join('\n')).toContain('line 4');
    await d.press('u');
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
  });

  it('with editing.auto_write, the writes while it streams do not split it: one u undoes it', async () => {
    const { d, f } = await start('require("flemma").setup({ editing = { auto_write = true } })');
    const chat = ['@You:', 'Hello'];
    const buf = await d.openChat('written.chat', chat);
    const file = `${d.home}/work/written.chat`;
    /** Waits until the chat's file on disk holds `text` (a write during the stream). */
    const onDisk = (text: string): Promise<void> =>
      d.waitUntil(
        'return table.concat(vim.fn.readfile(select(1, ...)), "\\n"):find(select(2, ...), 1, true) ~= nil',
        { args: [file, text] },
      );
    await d.press('<C-]>');
    const s = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    // Longer than the write interval: the file is written with the first piece, and again a
    // second later, each while more of the reply is still to come.
    await s.text('first part\n');
    await onDisk('first part');
    await s.text('second part\n');
    await onDisk('second part');
    // The user's own :w while it streams counts no more.
    await d.command('write');
    await s.text('third part\n');
    await onDisk('third part');
    await s.text('last part');
    await lastLine(d, 'last part');
    await s.finish();
    await d.waitForEvent('FlemmaRequestFinished');
    await d.waitUntil('return not vim.bo.modified');
    const replied = await d.lines(buf);
    expect(replied).toContain('third part');
    await undoRedo(d, buf, [
      ['u', chat],
      ['<C-r>', replied],
    ]);
  });

  it('an undo by someone else while it streams does not break the stream (no E790)', async () => {
    const { d, f } = await start();
    const buf = await d.openChat('other.chat', ['@You:', 'Hello']);
    await d.press('<C-]>');
    const s = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    await s.text('first part\n');
    await lastLine(d, '');
    // Another plugin undoes while the buffer is locked.
    await d.lua(`vim.bo.modifiable = true
      vim.cmd("silent undo")
      vim.bo.modifiable = false`);
    await s.text('second part\n');
    await d.waitUntil('return vim.fn.search("second part", "n") > 0');
    await s.text('third part\n');
    await d.waitUntil('return vim.fn.search("third part", "n") > 0');
    await s.finish();
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data['status']).toBe('completed');
    expect(await d.lines(buf)).toContain('third part');
    await d.press('u');
    expect(await errors(d)).toEqual([]);
  });
});

const GATE_TOOL = `
_G.gates = {}
require("flemma.tools").register("gate_tool", {
  name = "gate_tool",
  description = "Answers when the test says so",
  input_schema = { type = "object", properties = { key = { type = "string" } } },
  execute = function(input, ctx, callback)
    _G.gates[input.key] = function(text) callback({ success = true, output = text }) end
  end,
})`;

function toolUse(id: string, key: string): string[] {
  return [`**Tool Use:** \`gate_tool\` (\`${id}\`)`, '', '```json', `{"key":"${key}"}`, '```'];
}

function placeholder(id: string): string[] {
  return [`**Tool Result:** \`${id}\``, '', '```flemma:tool status=approved', '```'];
}

describe('undoing tool results', () => {
  it('the results of one run of tools are one undo step, back to whole placeholders', async () => {
    const { d } = await start(
      `require("flemma").setup({ tools = { autopilot = false } })
      ${GATE_TOOL}`,
    );
    const chat = [
      '@You:',
      'Run both.',
      '',
      '@Assistant:',
      ...toolUse('toolu_1', 'one'),
      '',
      ...toolUse('toolu_2', 'two'),
      '',
      '@You:',
      '',
      ...placeholder('toolu_1'),
      '',
      ...placeholder('toolu_2'),
    ];
    const buf = await d.openChat('tools.chat', chat);
    await d.waitForEvent('FlemmaBootComplete');
    // The chat is the user's: its `approved` stands (in a file not trusted the chain judges it).
    await d.command('trust');
    await d.press('<C-]>');
    await d.waitUntil('return _G.gates.one ~= nil and _G.gates.two ~= nil');
    // The results come in apart, each in its own batch.
    await d.lua('_G.gates.one("first result")');
    await d.waitUntil('return vim.fn.search("first result", "n") > 0');
    await d.lua('_G.gates.two("second result")');
    await d.waitUntil('return vim.fn.search("second result", "n") > 0');
    await d.waitUntil('return vim.bo.modifiable');
    await d.press('u');
    expect(await d.lines(buf)).toEqual(chat);
    await d.press('<C-r>');
    const redone = (await d.lines(buf)).join('\n');
    expect(redone).toContain('first result');
    expect(redone).toContain('second result');
  });

  it('with autopilot, each reply and each run of tools is one step, in order', async () => {
    const { d, f } = await start(
      `require("flemma").setup({ tools = { auto_approve = { "gate_tool" } } })
      ${GATE_TOOL}
      _G.snapshots = {}
      for _, pattern in ipairs({ "FlemmaRequestFinished", "FlemmaToolCompleted" }) do
        vim.api.nvim_create_autocmd("User", { pattern = pattern, callback = function()
          table.insert(_G.snapshots, vim.api.nvim_buf_get_lines(0, 0, -1, false))
        end })
      end`,
    );
    const chat = ['@You:', 'Run the tool.'];
    const buf = await d.openChat('loop.chat', chat);
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    const first = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    await first.text('I will run it.\n');
    await lastLine(d, '');
    await first.toolUse({ id: 'toolu_A', name: 'gate_tool', input: { key: 'a' } });
    await first.finish();
    await d.waitUntil('return _G.gates.a ~= nil');
    await d.lua('_G.gates.a("tool output")');
    const second = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
    await second.text('It said ');
    await d.waitUntil('return vim.fn.getline("$") == "It said "');
    await second.text('"tool output".');
    await second.finish();
    await d.waitUntil('return #_G.snapshots == 3');
    const [afterReply, afterTool, afterSecond] = await d.lua<string[][]>('return _G.snapshots');
    expect(await d.lines(buf)).toEqual(afterSecond);
    expect(afterTool?.join('\n')).toContain('tool output');
    await d.press('u');
    expect(await d.lines(buf)).toEqual(afterTool);
    await d.press('u');
    expect(await d.lines(buf)).toEqual(afterReply);
    expect(afterReply?.join('\n')).not.toContain('**Tool Result:**');
    await d.press('u');
    expect(await d.lines(buf)).toEqual(chat);
    expect(await errors(d)).toEqual([]);
  });
});
