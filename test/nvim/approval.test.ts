// The approval cycle end to end: a scripted fake Anthropic server asks for tools, the approval
// chain writes the placeholders, the user approves or rejects by editing the fence, <C-]> runs
// and sends, and autopilot chains the turns by itself.
import {
  anthropicReply as reply,
  type ScriptedCall,
  lastUserContent,
} from '../helpers/anthropic-script.js';
import { describe, expect, it } from 'vitest';
import { fenceLineOf, placeholder, toolResult } from '../helpers/chat-lines.js';
import {
  echoTool,
  editFence,
  finishGated,
  GATED_TOOL,
  launcher,
  type Session,
  untilApproval,
} from '../helpers/e2e.js';

const launch = launcher();

const ECHO_TOOL = `
${echoTool({ strict: true })}
require("flemma.tools").register("danger", {
  name = "danger",
  description = "Never runs",
  input_schema = { type = "object", properties = {} },
  execute = function() _G.danger_ran = true; return { success = true, output = "ran" } end,
})`;

function setup(options: { tools?: string; lines?: string[] }): Promise<Session> {
  return launch({
    config: `{ tools = ${options.tools ?? '{}'} }`,
    lua: ECHO_TOOL,
    files: { 'notes.txt': 'remember the milk\n' },
    chat: { name: 'approval.chat', lines: options.lines ?? ['@You:', 'Go.'] },
  });
}

describe('the approval cycle', () => {
  it('three parallel calls: approved, pending and denied; approve by editing; results go back in order', async () => {
    const { d, f, buf } = await setup({
      tools: `{ presets = { ["$no-danger"] = { deny = { "danger" } } }, auto_approve = { "$default", "$no-danger" } }`,
    });
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Three things.', [
      {
        id: 'toolu_R',
        name: 'read',
        input: { label: 'notes', path: 'notes.txt', offset: null, limit: null },
      },
      { id: 'toolu_E', name: 'echo_tool', input: { text: 'hi' } },
      { id: 'toolu_D', name: 'danger', input: {} },
    ]);
    // Autopilot runs Phase 1 by itself and stops at the pending call.
    const needed = await d.waitForEvent('FlemmaApprovalNeeded');
    expect(needed.data).toMatchObject({
      bufnr: buf,
      tool_ids: ['toolu_E'],
      tool_names: ['echo_tool'],
    });
    await d.waitForNotification(/Approval needed: echo_tool \(<M-CR> runs it\)/);
    let lines = await d.lines(buf);
    expect(lines[fenceLineOf(lines, 'toolu_R') - 1]).toBe('```flemma:tool status=approved');
    expect(lines[fenceLineOf(lines, 'toolu_E') - 1]).toBe('```flemma:tool status=pending');
    expect(lines[fenceLineOf(lines, 'toolu_D') - 1]).toBe('```flemma:tool status=denied');
    // The cursor waits on the pending call.
    const cursor = await d.lua<number>('return vim.api.nvim_win_get_cursor(0)[1]');
    expect(lines[cursor - 1]).toBe('**Tool Result:** `toolu_E`');
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(0);

    // The user approves by editing the fence, then presses <C-]>.
    await editFence(d, 'toolu_E', '```flemma:tool status=approved');
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    const content = lastUserContent(follow);
    expect(content.map((c) => c['tool_use_id'])).toEqual(['toolu_R', 'toolu_E', 'toolu_D']);
    expect(content[0]).toMatchObject({ type: 'tool_result', content: 'remember the milk' });
    expect(content[1]).toMatchObject({ type: 'tool_result', content: 'echo: hi' });
    expect(content[2]).toMatchObject({
      type: 'tool_result',
      is_error: true,
      content: 'The tool was denied by a policy.',
    });
    expect(await d.lua('return _G.danger_ran')).toBe(null);
    const before = d.eventCount;
    await reply(follow, 'Done.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    lines = await d.lines(buf);
    expect(lines.slice(-4)).toEqual(['Done.', '', '@You:', '']);
  });

  it('approved calls run at most max_concurrent at a time; results land in tool-use order', async () => {
    const { d, f, buf } = await setup({});
    // A slow tool that counts how many of it run at once; later calls finish sooner.
    await d.lua(`
      _G.slow_now, _G.slow_peak, _G.slow_order = 0, 0, {}
      require("flemma.tools").register("slow", {
        name = "slow",
        description = "Wait, then answer",
        input_schema = { type = "object", properties = { ms = { type = "number" } }, required = { "ms" } },
        execute = function(input, ctx, callback)
          _G.slow_now = _G.slow_now + 1
          _G.slow_peak = math.max(_G.slow_peak, _G.slow_now)
          vim.defer_fn(function()
            _G.slow_now = _G.slow_now - 1
            table.insert(_G.slow_order, ctx.tool_id)
            callback({ success = true, output = "waited " .. input.ms })
          end, input.ms)
        end,
      })
      require("flemma").setup({ tools = { auto_approve = { "slow" } } })`);
    await d.press('<C-]>');
    const delays = [120, 60, 90, 30, 10];
    await reply(
      await f.nextRequest({ path: '/v1/messages' }),
      'Five at once.',
      delays.map((ms, i) => ({ id: `toolu_S${String(i)}`, name: 'slow', input: { ms } })),
    );
    const follow = await f.nextRequest({ path: '/v1/messages' });
    const content = lastUserContent(follow);
    expect(content.map((c) => [c['tool_use_id'], c['content']])).toEqual(
      delays.map((ms, i) => [`toolu_S${String(i)}`, `waited ${String(ms)}`]),
    );
    expect(await d.lua('return _G.slow_peak')).toBe(2);
    // They did not finish in tool-use order, and each ran.
    const order = await d.lua<string[]>('return _G.slow_order');
    expect([...order].sort()).toEqual(delays.map((_, i) => `toolu_S${String(i)}`));
    expect(order).not.toEqual([...order].sort());
    const lines = await d.lines(buf);
    const headers = lines.filter((line) => line.startsWith('**Tool Result:**'));
    expect(headers).toEqual(delays.map((_, i) => `**Tool Result:** \`toolu_S${String(i)}\``));
    expect(lines.some((line) => line.startsWith('```flemma:tool'))).toBe(false);
    await reply(follow, 'Done.');
  });

  it('X-05: a calculator call is placed as pending, runs on <M-CR>, and its result goes back with its id', async () => {
    const { d, f } = await setup({ tools: '{ "calculator", autopilot = false }' });
    await d.press('<C-]>');
    const first = await f.nextRequest({ path: '/v1/messages' });
    expect(((first.body as { tools?: { name: string }[] }).tools ?? []).map((t) => t.name)).toEqual(
      ['calculator'],
    );
    await reply(first, 'Computing.', [
      { id: 'toolu_C', name: 'calculator', input: { expression: '100 * 50' } },
    ]);
    await d.waitForEvent('FlemmaRequestFinished');
    let lines = await d.lines();
    expect(lines).toContain('**Tool Use:** `calculator` (`toolu_C`)');
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaApprovalNeeded');
    lines = await d.lines();
    expect(lines.slice(-5)).toEqual([...placeholder('toolu_C', 'pending'), '']);
    // The cursor is on the pending block: <M-CR> runs it.
    await d.press('<M-CR>');
    await d.waitForEvent('FlemmaToolCompleted');
    lines = await d.lines();
    expect(lines.slice(-6)).toEqual(['**Tool Result:** `toolu_C`', '', '```', '5000', '```', '']);
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow)).toEqual([
      expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_C', content: '5000' }),
    ]);
    await reply(follow, 'It is 5000.');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('a slow call started with a quick one gets its placeholder and spinner while it runs', async () => {
    const { d, f, buf } = await setup({});
    await d.lua(`${GATED_TOOL}
      require("flemma").setup({ tools = { auto_approve = { "$default", "gated_tool" } } })`);
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'One quick, one slow.', [
      {
        id: 'toolu_Q',
        name: 'read',
        input: { label: 'n', path: 'notes.txt', offset: null, limit: null },
      },
      { id: 'toolu_S', name: 'gated_tool', input: {} },
    ]);
    // The slow call shows the spinner on its placeholder's header (a Lua timer animates it).
    const spinnerRow = async (): Promise<number | undefined> => {
      const lines = await d.lines(buf);
      const row = lines.indexOf('**Tool Result:** `toolu_S`');
      const marks = await d.extmarks('flemma.tool_status', buf);
      const mark = marks.find((m) => m[1] === row);
      return mark !== undefined && JSON.stringify(mark[3]['virt_text']).includes('Executing')
        ? row
        : undefined;
    };
    await d.waitForExtmarks('flemma.tool_status', {
      bufnr: buf,
      until: `(function()
        local row = vim.fn.index(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "**Tool Result:** \`toolu_S\`")
        for _, mark in ipairs(marks) do
          if mark[2] == row and vim.inspect(mark[4].virt_text):find("Executing", 1, true) then return true end
        end
        return false
      end)()`,
    });
    const row = await spinnerRow();
    expect(row).toBeDefined();
    const lines = await d.lines(buf);
    expect(lines.slice(row, (row ?? 0) + 4)).toEqual([
      '**Tool Result:** `toolu_S`',
      '',
      '```flemma:tool status=approved',
      '```',
    ]);
    await finishGated(d, 'done at last');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow).map((c) => [c['tool_use_id'], c['content']])).toEqual([
      ['toolu_Q', 'remember the milk'],
      ['toolu_S', 'done at last'],
    ]);
    await reply(follow, 'Both in.');
    await d.waitForEvent('FlemmaRequestFinished', { after: d.eventCount - 1 });
  });

  it('cancelling all tools also drops the calls still waiting for a slot', async () => {
    const { d, f, buf } = await setup({});
    await d.lua(`
      require("flemma.tools").register("hang", {
        name = "hang",
        description = "Never answers by itself",
        input_schema = { type = "object", properties = {} },
        execute = function(_, _, callback)
          return function() callback({ success = false, error = "stopped" }) end
        end,
      })
      require("flemma").setup({ tools = { auto_approve = { "hang" }, max_concurrent = 1 } })`);
    await d.press('<C-]>');
    const ids = ['toolu_H0', 'toolu_H1', 'toolu_H2'];
    await reply(
      await f.nextRequest({ path: '/v1/messages' }),
      'Three, one at a time.',
      ids.map((id) => ({ id, name: 'hang', input: {} })),
    );
    await d.waitForEvent('FlemmaToolExecuting');
    const before = d.eventCount;
    await d.press(':Flemma tool:cancel-all<CR>');
    await d.waitForEvent('FlemmaToolCompleted', { after: before });
    // A queued call would have started as the slot freed, before the result was written.
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(1);
    const lines = await d.lines(buf);
    expect(lines.filter((line) => line === '```flemma:tool status=approved')).toHaveLength(2);
    expect(lines).toContain('**Tool Result:** `toolu_H0` (error)');
  });

  it('a rejection with a message reaches the model as that message', async () => {
    const { d, f } = await setup({ tools: '{ autopilot = false }' });
    await untilApproval(d, f, 'Risky.', [
      { id: 'toolu_X', name: 'echo_tool', input: { text: 'x' } },
    ]);
    await editFence(d, 'toolu_X', '```flemma:tool status=rejected', 'Not today, thanks.');
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow)[0]).toMatchObject({
      type: 'tool_result',
      tool_use_id: 'toolu_X',
      is_error: true,
      content: 'Not today, thanks.',
    });
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(0);
    await follow.respond(400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'enough' },
    });
  });

  it('text typed into a pending block is sent as the result; an edited approved block is not run', async () => {
    const { d, f } = await setup({ tools: '{ autopilot = false }' });
    await untilApproval(d, f, 'Two.', [
      { id: 'toolu_P', name: 'echo_tool', input: { text: 'p' } },
      { id: 'toolu_A', name: 'echo_tool', input: { text: 'a' } },
    ]);
    // toolu_A: approved, but with content of the user's: protected.
    await editFence(d, 'toolu_A', '```flemma:tool status=approved', 'my own output');
    let lines = await d.lines();
    const fence = fenceLineOf(lines, 'toolu_P');
    await d.lua(
      `vim.api.nvim_buf_set_lines(0, ${fence}, ${fence}, false, { "I ran it myself: 42" })`,
    );
    await d.press('<C-]>');
    await d.waitForNotification(/1 approved block has your text: not run/);
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(0);
    lines = await d.lines();
    // The pending block became an ordinary result; the approved one is untouched.
    const header = lines.indexOf('**Tool Result:** `toolu_P`');
    expect(lines.slice(header, header + 5)).toEqual(toolResult('toolu_P', ['I ran it myself: 42']));
    expect(lines).toContain('my own output');
    expect(f.requests).toHaveLength(1);
  });

  it(':Flemma tool:approve rewrites the status and :Flemma tool:why names the resolver', async () => {
    const { d, f } = await setup({ tools: '{ autopilot = false }' });
    await untilApproval(d, f, 'One.', [
      {
        id: 'toolu_W',
        name: 'read',
        input: { label: 'n', path: 'notes.txt', offset: null, limit: null },
      },
      { id: 'toolu_Q', name: 'echo_tool', input: { text: 'q' } },
    ]);
    // The cursor is on toolu_Q's block (pending).
    await d.press(':Flemma tool:why<CR>');
    await d.waitForNotification(/echo_tool \(toolu_Q\): require_approval — no resolver decided/);
    await d.press(':Flemma tool:approve<CR>');
    await d.waitUntil(
      `local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
      return vim.tbl_contains(lines, "\`\`\`flemma:tool status=approved")
        and not vim.tbl_contains(lines, "\`\`\`flemma:tool status=pending")`,
    );
    const lines = await d.lines();
    expect(lines[fenceLineOf(lines, 'toolu_Q') - 1]).toBe('```flemma:tool status=approved');
    const row = lines.indexOf('**Tool Result:** `toolu_W`') + 1;
    await d.command(`normal! ${String(row)}G`);
    await d.press(':Flemma tool:why<CR>');
    await d.waitForNotification(/read \(toolu_W\): approve — urn:flemma:approval:config/);
  });
});

describe('resolvers registered from Lua', () => {
  it('decide over the bridge by priority; get_all lists them with the built-ins', async () => {
    const { d, f } = await setup({ tools: '{ autopilot = false }' });
    const names = await d.lua<string[]>(`
      local approval = require("flemma.tools.approval")
      approval.register("test:deny-echo", {
        priority = 200,
        description = "no echo",
        resolve = function(tool_name, input, ctx)
          _G.seen_ctx = ctx
          if tool_name == "echo_tool" then return "deny" end
          return nil
        end,
      })
      approval.register("test:junk", { priority = 150, resolve = function() return 42 end })
      approval.register("test:gone", { resolve = function() return "approve" end })
      assert(approval.unregister("test:gone") == true)
      assert(approval.unregister("test:gone") == false)
      local out = {}
      for _, entry in ipairs(approval.get_all()) do out[#out + 1] = entry.name .. "@" .. entry.priority end
      return out`);
    expect(names).toEqual([
      'test:deny-echo@200',
      'test:junk@150',
      'urn:flemma:approval:config@100',
      'urn:flemma:approval:session@95',
      'urn:flemma:approval:yolo@92',
      'urn:flemma:approval:frontmatter@90',
      'urn:flemma:approval:sandbox@25',
      'urn:flemma:approval:tool-default@10',
    ]);
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Two.', [
      { id: 'toolu_E1', name: 'echo_tool', input: { text: 'e' } },
      {
        id: 'toolu_R1',
        name: 'read',
        input: { label: 'n', path: 'notes.txt', offset: null, limit: null },
      },
    ]);
    await d.waitForEvent('FlemmaRequestFinished');
    await d.press('<C-]>');
    // Denied by the Lua resolver; read approved by the config (the junk resolver is skipped).
    // Without autopilot, the next <C-]> sends the results.
    await d.waitForEvent('FlemmaToolCompleted');
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    const content = lastUserContent(follow);
    expect(content[0]).toMatchObject({
      tool_use_id: 'toolu_E1',
      is_error: true,
      content: 'The tool was denied by a policy.',
    });
    expect(content[1]).toMatchObject({ tool_use_id: 'toolu_R1', content: 'remember the milk' });
    expect(await d.lua('return _G.seen_ctx.tool_id')).toBe('toolu_R1');
    await follow.respond(400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'enough' },
    });
  });
});

describe('autopilot', () => {
  const readCall = (n: number): ScriptedCall => ({
    id: `toolu_${String(n)}`,
    name: 'read',
    input: { label: 'n', path: 'notes.txt', offset: null, limit: null },
  });

  it('runs five turns of approved tools with no key press', async () => {
    const { d, f } = await setup({});
    await d.press('<C-]>');
    for (let turn = 1; turn <= 5; turn++) {
      await reply(await f.nextRequest({ path: '/v1/messages' }), `Turn ${String(turn)}.`, [
        readCall(turn),
      ]);
    }
    const last = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(last)).toMatchObject([
      { type: 'tool_result', tool_use_id: 'toolu_5', content: 'remember the milk' },
    ]);
    const before = d.eventCount;
    await reply(last, 'All done.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    expect(d.eventsSeen('FlemmaToolCompleted')).toHaveLength(5);
    expect(d.eventsSeen('FlemmaAutopilotResumed').length).toBeGreaterThanOrEqual(10);
  });

  it('parallel calls that finish together schedule one continue, not one each', async () => {
    const { d, f } = await setup({});
    await d.press('<C-]>');
    const calls = [1, 2, 3, 4].map(readCall);
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Four reads.', calls);
    const follow = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow).map((c) => c['tool_use_id'])).toEqual(calls.map((c) => c.id));
    const before = d.eventCount;
    await reply(follow, 'Done.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    // One after the reply, one after the tools.
    expect(d.eventsSeen('FlemmaAutopilotResumeScheduled')).toHaveLength(2);
    expect(d.eventsSeen('FlemmaAutopilotResumed')).toHaveLength(2);
  });

  it('stops after max_turns consecutive tool turns, with a warning', async () => {
    const { d, f } = await setup({ tools: '{ autopilot = { max_turns = 3 } }' });
    await d.press('<C-]>');
    for (let turn = 1; turn <= 4; turn++) {
      await reply(await f.nextRequest({ path: '/v1/messages' }), `Turn ${String(turn)}.`, [
        readCall(turn),
      ]);
    }
    await d.waitForNotification(/Autopilot stopped – exceeded 3 consecutive turns/);
    expect(f.requests).toHaveLength(4);
    // The fourth reply's call got no placeholder.
    expect(
      (await d.lines()).some(
        (line) => line.includes('`toolu_4`') && line.startsWith('**Tool Result:**'),
      ),
    ).toBe(false);
    expect(d.eventsSeen('FlemmaToolCompleted')).toHaveLength(3);
  });

  it('typing during the resume delay cancels the automatic continue', async () => {
    const { d, f } = await setup({ tools: '{ autopilot = { resume_delay = 60000 } }' });
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'One.', [readCall(1)]);
    const scheduled = await d.waitForEvent('FlemmaAutopilotResumeScheduled');
    expect(scheduled.data['delay_ms']).toBe(60000);
    await d.press('Go');
    await d.type('wait, let me think');
    await d.press('<Esc>');
    await d.waitForEvent('FlemmaAutopilotResumeCancelled');
    expect(d.eventsSeen('FlemmaAutopilotResumed')).toHaveLength(0);
    expect((await d.lines()).some((line) => line.startsWith('**Tool Result:**'))).toBe(false);
    expect(await d.lua('return vim.api.nvim_get_current_line()')).toBe('wait, let me think');
  });
});
