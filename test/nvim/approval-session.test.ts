// Session approvals and cancelling waiting calls end to end (docs/approval.md, "Always, YOLO and cancel"): a
// scripted fake Anthropic server asks for tools; the user answers with `:Flemma tool:approve-always`,
// `:Flemma tool:yolo`, `<C-c>` and `:Flemma tool:cancel-pending`, and we look at what the model
// gets back.
import { existsSync } from 'node:fs';
import {
  anthropicReply as reply,
  type ScriptedCall,
  lastUserContent,
} from '../helpers/anthropic-script.js';
import { describe, expect, it } from 'vitest';
import { jsonChat } from '../helpers/chat-lines.js';
import { launcher, type Session } from '../helpers/e2e.js';

const launch = launcher();

// Two plain Lua tools and a CodeCompanion-style one with its own cancellation text.
const TOOLS = `
_G.ran = {}
require("flemma.tools").register("echo_tool", {
  name = "echo_tool",
  description = "Echo the text back",
  input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  execute = function(input) table.insert(_G.ran, "echo_tool"); return { success = true, output = "echo: " .. input.text } end,
})
require("flemma.tools").register("danger", {
  name = "danger",
  description = "Never runs",
  input_schema = { type = "object", properties = {} },
  execute = function() table.insert(_G.ran, "danger"); return { success = true, output = "ran" } end,
})
require("flemma.tools").register("cc_tool", {
  schema = { type = "function", ["function"] = { name = "cc_tool", description = "A CodeCompanion tool",
    parameters = { type = "object", properties = {} } } },
  cmds = { function() table.insert(_G.ran, "cc_tool"); return { status = "success", data = "cc ran" } end },
  output = { cancelled = function(self) return "cc_tool: the user said no more" end },
  opts = { requires_approval = true },
})`;

function setup(tools: string, lines: string[] = ['@You:', 'Go.']): Promise<Session> {
  return launch({
    config: `{ tools = ${tools} }`,
    lua: TOOLS,
    files: { 'notes.txt': 'remember the milk\n' },
    chat: { name: 'a.chat', lines },
  });
}

/** The fence line of a placeholder (1-based), by tool id. */
function fenceOf(lines: string[], id: string): string | undefined {
  const header = lines.indexOf(`**Tool Result:** \`${id}\``);
  return header < 0 ? undefined : lines[header + 2];
}

const read = (id: string, path = 'notes.txt'): ScriptedCall => ({
  id,
  name: 'read',
  input: { label: 'notes', path, offset: null, limit: null },
});
const bash = (id: string, command: string): ScriptedCall => ({
  id,
  name: 'bash',
  input: { label: command, command, timeout: null },
});

describe('C-07: cancelling the calls that wait', () => {
  it('<C-c> with nothing running: no call runs, each gets "The user cancelled …", autopilot sends', async () => {
    const { d, f, buf } = await setup('{}');
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Four things.', [
      read('toolu_R'),
      { id: 'toolu_E', name: 'echo_tool', input: { text: 'hi' } },
      { id: 'toolu_D', name: 'danger', input: {} },
      { id: 'toolu_C', name: 'cc_tool', input: {} },
    ]);
    const needed = await d.waitForEvent('FlemmaApprovalNeeded');
    expect(needed.data).toMatchObject({ tool_ids: ['toolu_E', 'toolu_D', 'toolu_C'] });
    // read was approved, but waits behind the pending ones.
    expect(fenceOf(await d.lines(buf), 'toolu_R')).toBe('```flemma:tool status=approved');

    await d.press('<C-c>');
    await d.waitForNotification(/Cancelled 4 waiting tool call\(s\)/);
    const follow = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow)).toEqual([
      expect.objectContaining({
        tool_use_id: 'toolu_R',
        is_error: true,
        content: 'The user cancelled the execution of the read tool',
      }),
      expect.objectContaining({
        tool_use_id: 'toolu_E',
        is_error: true,
        content: 'The user cancelled the execution of the echo_tool tool',
      }),
      expect.objectContaining({
        tool_use_id: 'toolu_D',
        is_error: true,
        content: 'The user cancelled the execution of the danger tool',
      }),
      // A CodeCompanion tool's output.cancelled wins.
      expect.objectContaining({
        tool_use_id: 'toolu_C',
        is_error: true,
        content: 'cc_tool: the user said no more',
      }),
    ]);
    expect(await d.lua('return #_G.ran')).toBe(0);
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(0);
    const before = d.eventCount;
    await reply(follow, 'Understood.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
  });

  it(':Flemma tool:cancel-pending without autopilot writes the results; <C-]> sends them', async () => {
    const { d, f, buf } = await setup('{ autopilot = false }');
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Three.', [
      { id: 'toolu_E1', name: 'echo_tool', input: { text: 'a' } },
      { id: 'toolu_E2', name: 'echo_tool', input: { text: 'b' } },
      { id: 'toolu_D', name: 'danger', input: {} },
    ]);
    await d.waitForEvent('FlemmaRequestFinished');
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaApprovalNeeded');
    const before = d.notificationCount;
    await d.command('Flemma tool:cancel-pending');
    await d.waitForNotification(/Cancelled 3 waiting tool call\(s\)/, { after: before });
    const lines = await d.lines(buf);
    expect(lines.some((line) => line.startsWith('```flemma:tool'))).toBe(false);
    expect(lines).toContain('The user cancelled the execution of the danger tool');
    // Nothing more to cancel.
    await d.command('Flemma tool:cancel-pending');
    await d.waitForNotification(/No tool call is waiting/);
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow).map((c) => c['content'])).toEqual([
      'The user cancelled the execution of the echo_tool tool',
      'The user cancelled the execution of the echo_tool tool',
      'The user cancelled the execution of the danger tool',
    ]);
    expect(await d.lua('return #_G.ran')).toBe(0);
    await reply(follow, 'OK.');
  });
});

describe('C-08: "always" is remembered per buffer', () => {
  it('a second read in buffer A runs unasked; a read in buffer B asks', async () => {
    const { d, f, buf } = await setup('{ auto_approve = {} }');
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Reading.', [read('toolu_A1')]);
    await d.waitForEvent('FlemmaApprovalNeeded');
    // The command goes on by itself once no call waits: the read may have run and replaced the
    // approved fence before the message is seen. The lines it writes are recorded as written.
    await d.lua(
      `_G.written = {}
      vim.api.nvim_buf_attach(..., false, { on_lines = function(_, b, _, first, _, last)
        vim.list_extend(_G.written, vim.api.nvim_buf_get_lines(b, first, last, false))
      end })`,
      buf,
    );
    // The cursor is on the pending block.
    await d.command('Flemma tool:approve-always');
    await d.waitForNotification(/Approved always in this buffer: read/);
    expect(await d.lua('return _G.written')).toContain('```flemma:tool status=approved');
    await d.press('<C-]>');
    // Autopilot sends the result and the model asks for a second read.
    const second = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(second)[0]).toMatchObject({ content: 'remember the milk' });
    await reply(second, 'Again.', [read('toolu_A2')]);
    const third = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(third)[0]).toMatchObject({
      tool_use_id: 'toolu_A2',
      content: 'remember the milk',
    });
    expect(d.eventsSeen('FlemmaApprovalNeeded')).toHaveLength(1);
    const before = d.eventCount;
    await reply(third, 'Done in A.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    await d.command('Flemma tool:always');
    await d.waitForNotification(/Approved "always" in this buffer: read\nYOLO mode: off/);

    // Buffer B: the same tool asks.
    const b = await d.openChat('b.chat', ['@You:', 'Read too.']);
    expect(b).not.toBe(buf);
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Reading in B.', [read('toolu_B1')]);
    const needed = await d.waitForEvent('FlemmaApprovalNeeded', {
      match: (e) => (e.data as { bufnr?: number } | undefined)?.bufnr === b,
    });
    expect(needed.data).toMatchObject({ tool_ids: ['toolu_B1'] });
    expect(fenceOf(await d.lines(b), 'toolu_B1')).toBe('```flemma:tool status=pending');

    // Forgetting in A makes A ask again.
    await d.command(`buffer ${String(buf)}`);
    await d.command('Flemma tool:forget-always');
    await d.waitForNotification(/Forgot 1 "always" approval\(s\)/);
    await d.command('Flemma tool:always');
    await d.waitForNotification(/Nothing is approved "always" in this buffer/);
  });
});

describe('C-09: per-command "always" for bash', () => {
  it('"always" on ls -la: ls -la runs by itself, rm x asks', async () => {
    const { d, f, buf } = await setup('{ auto_approve_sandboxed = false }');
    const x = d.writeFile('x', 'keep me\n');
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Listing.', [
      bash('toolu_L1', 'ls -la'),
    ]);
    await d.waitForEvent('FlemmaApprovalNeeded');
    await d.command('Flemma tool:approve-always');
    await d.waitForNotification(/Approved always in this buffer: bash: ls -la/);
    await d.press('<C-]>');
    const second = await f.nextRequest({ path: '/v1/messages' });
    expect(String(lastUserContent(second)[0]?.['content'])).toContain('notes.txt');
    // ls -la again: approved by the session, runs without asking.
    await reply(second, 'Once more.', [bash('toolu_L2', 'ls -la')]);
    const third = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(third)[0]).toMatchObject({ tool_use_id: 'toolu_L2' });
    expect(String(lastUserContent(third)[0]?.['content'])).toContain('notes.txt');
    expect(d.eventsSeen('FlemmaApprovalNeeded')).toHaveLength(1);
    // rm x: another command, it asks.
    await reply(third, 'Cleaning.', [bash('toolu_X', 'rm x')]);
    const needed = await d.waitForEvent('FlemmaApprovalNeeded', {
      match: (e) => (e.data as { tool_ids?: string[] }).tool_ids?.[0] === 'toolu_X',
    });
    expect(needed.data).toMatchObject({ tool_names: ['bash'] });
    expect(fenceOf(await d.lines(buf), 'toolu_X')).toBe('```flemma:tool status=pending');
    expect(existsSync(x)).toBe(true);
  });
});

describe('CodeCompanion options for session approvals', () => {
  it('require_cmd_approval + output.cmd_string key "always"; allowed_in_yolo_mode = false asks under YOLO', async () => {
    const { d, f, buf } = await setup('{}');
    await d.lua(`
      require("flemma.tools").register("make", {
        schema = { type = "function", ["function"] = { name = "make", description = "Run make",
          parameters = { type = "object", properties = { target = { type = "string" } }, required = { "target" } } } },
        cmds = { function(self, args) table.insert(_G.ran, args.target); return { status = "success", data = "made " .. args.target } end },
        output = { cmd_string = function(self, args) return "make " .. args.target end },
        opts = { requires_approval = true, require_cmd_approval = true, allowed_in_yolo_mode = false },
      })`);
    await d.command('Flemma tool:yolo on');
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Building.', [
      { id: 'toolu_M1', name: 'make', input: { target: 'test' } },
    ]);
    // YOLO is on, but the tool opted out: it asks.
    await d.waitForEvent('FlemmaApprovalNeeded');
    await d.command('Flemma tool:approve-always');
    await d.waitForNotification(/Approved always in this buffer: make: make test/);
    await d.press('<C-]>');
    const second = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(second)[0]).toMatchObject({ content: 'made test' });
    await reply(second, 'Again, then deploy.', [
      { id: 'toolu_M2', name: 'make', input: { target: 'test' } },
      { id: 'toolu_M3', name: 'make', input: { target: 'deploy' } },
    ]);
    const needed = await d.waitForEvent('FlemmaApprovalNeeded', {
      match: (e) => (e.data as { tool_ids?: string[] }).tool_ids?.[0] === 'toolu_M3',
    });
    expect(needed.data).toMatchObject({ tool_ids: ['toolu_M3'] });
    const lines = await d.lines(buf);
    expect(fenceOf(lines, 'toolu_M2')).toBe('```flemma:tool status=approved');
    expect(fenceOf(lines, 'toolu_M3')).toBe('```flemma:tool status=pending');
    expect(await d.lua('return _G.ran')).toEqual(['test']);
  });
});

describe('C-10: YOLO mode', () => {
  it(':Flemma tool:yolo on: read runs unasked, bash (never auto-approved) asks', async () => {
    const { d, f, buf } = await setup('{ auto_approve = {}, auto_approve_sandboxed = false }');
    await d.command('Flemma tool:yolo on');
    await d.waitForNotification(/YOLO mode on in this buffer/);
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Both.', [
      read('toolu_R'),
      bash('toolu_B', 'echo hi'),
    ]);
    const needed = await d.waitForEvent('FlemmaApprovalNeeded');
    expect(needed.data).toMatchObject({ tool_ids: ['toolu_B'], tool_names: ['bash'] });
    const lines = await d.lines(buf);
    expect(fenceOf(lines, 'toolu_R')).toBe('```flemma:tool status=approved');
    expect(fenceOf(lines, 'toolu_B')).toBe('```flemma:tool status=pending');
    // :Flemma tool:why on the read call names the YOLO resolver.
    const row = lines.indexOf('**Tool Result:** `toolu_R`') + 1;
    await d.lua(`vim.api.nvim_win_set_cursor(0, { ${String(row)}, 0 })`);
    await d.command('Flemma tool:why');
    await d.waitForNotification(/read \(toolu_R\): approve — urn:flemma:approval:yolo/);
    // Approving bash and sending: both run; read was never asked about.
    await d.lua(
      `vim.api.nvim_win_set_cursor(0, { ${String(lines.indexOf('**Tool Result:** `toolu_B`') + 1)}, 0 })`,
    );
    await d.command('Flemma tool:approve');
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow).map((c) => c['tool_use_id'])).toEqual(['toolu_R', 'toolu_B']);
    expect(lastUserContent(follow)[0]).toMatchObject({ content: 'remember the milk' });
    await reply(follow, 'Done.');
  });

  it('tools.yolo in the (JSON) frontmatter; :Flemma tool:yolo off wins for the session', async () => {
    const { d, f } = await setup(
      '{ auto_approve = {}, autopilot = false }',
      jsonChat('{ "flemma": { "tools": { "yolo": true } } }', ['@You:', 'Go.']),
    );
    // Turning YOLO on widens approval: only a trusted file may (docs/security.md).
    await d.command('trust');
    await d.command('Flemma tool:always');
    await d.waitForNotification(/YOLO mode: on \(tools\.yolo\)/);
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Reading.', [read('toolu_R1')]);
    await d.waitForEvent('FlemmaRequestFinished');
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaToolCompleted');
    expect(d.eventsSeen('FlemmaApprovalNeeded')).toHaveLength(0);
    await d.command('Flemma tool:yolo off');
    await d.waitForNotification(/YOLO mode off in this buffer/);
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    const before = d.eventCount;
    await reply(follow, 'Again.', [read('toolu_R2')]);
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    await d.press('<C-]>');
    const needed = await d.waitForEvent('FlemmaApprovalNeeded');
    expect(needed.data).toMatchObject({ tool_ids: ['toolu_R2'] });
  });
});
