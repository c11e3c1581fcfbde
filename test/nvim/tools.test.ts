// Tools end to end: tools registered from Lua in the user's config, run from their placeholders
// by <C-]> and <M-CR>, with the spinner, cancellation, previews and the execution context.
import { describe, expect, it } from 'vitest';
import { callChat, toolResult } from '../helpers/chat-lines.js';
import { type Driver } from '../helpers/driver.js';
import {
  echoTool,
  GATED_TOOL,
  neovimLauncher,
  openBooted,
  runCallAt,
  finishGated,
} from '../helpers/e2e.js';

const launch = neovimLauncher();

const ECHO_TOOL = `
local tools = require("flemma.tools")
${echoTool({
  strict: true,
  more: `format_preview = function(input, max_length)
    return '"' .. input.text .. '" (max ' .. tostring(max_length > 0) .. ')'
  end,`,
})}
_G.cancelled = false
tools.register("slow_tool", {
  name = "slow_tool",
  description = "Answers after a long time",
  input_schema = { type = "object", properties = {} },
  execute = function(input, ctx, callback)
    local timer = vim.uv.new_timer()
    timer:start(60000, 0, function() callback({ success = true, output = "late" }) end)
    return function()
      _G.cancelled = true
      timer:stop()
      timer:close()
    end
  end,
})
${GATED_TOOL}
tools.register("ctx_tool", {
  name = "ctx_tool",
  description = "Reports its execution context",
  input_schema = { type = "object", properties = {} },
  execute = function(input, ctx)
    local cfg = ctx:get_config()
    cfg.changed = true
    return {
      success = true,
      output = {
        bufnr = ctx.bufnr,
        cwd = ctx.cwd,
        timeout = ctx.timeout,
        dirname = ctx.__dirname,
        filename = ctx.__filename,
        resolved = ctx.path.resolve("sub/file.txt"),
        absolute = ctx.path.resolve("/etc/hosts"),
        max_lines = ctx.truncate.MAX_LINES,
        max_bytes = ctx.truncate.MAX_BYTES,
        size = ctx.truncate.format_size(12345),
        config = ctx:get_config(),
        writable_inside = ctx.sandbox.is_path_writable(ctx.cwd .. "/x.txt"),
        writable_escape = ctx.sandbox.is_path_writable("../../../../../../etc/passwd"),
        writable_etc = ctx.sandbox.is_path_writable("/etc/hosts"),
        writable_dangling = (function()
          vim.uv.fs_symlink("/etc/flemma-never-created", ctx.cwd .. "/dangling")
          return ctx.sandbox.is_path_writable(ctx.cwd .. "/dangling")
        end)(),
      },
    }
  end,
})
`;

function setupCode(extra = ''): string {
  return `require("flemma").setup({ tools = { autopilot = false, ctx_tool = { limit = 3 } } })
${ECHO_TOOL}
${extra}`;
}

/** Neovim set up with the tools above (`setup`: other start-up Lua), the chat open and booted. */
async function opened(
  name: string,
  lines: string[],
  setup = setupCode(),
): Promise<{ d: Driver; buf: number }> {
  const d = await launch({ setup });
  return { d, buf: await openBooted(d, name, lines) };
}

describe('tools registered from Lua', () => {
  it('run from an approved placeholder on <C-]> and the result replaces it', async () => {
    const chat = callChat('Echo hi.', [['echo_tool', 'toolu_01', '{"text":"hi"}']], 'approved');
    const { d } = await opened('run.chat', chat);
    // A file read from disk is the user's once trusted; until then its `approved` is judged by
    // the chain as if pending (test/nvim/approval-trust.test.ts).
    await d.command('trust');
    await d.press('<C-]>');
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data).toMatchObject({
      tool_name: 'echo_tool',
      tool_id: 'toolu_01',
      status: 'success',
    });
    const lines = await d.lines();
    expect(lines.slice(-5)).toEqual(toolResult('toolu_01', ['echo: hi']));
    expect(await d.lua('return vim.bo.modifiable')).toBe(true);
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(1);
  });

  it('tool:completed hears of a result the user already sees: in the buffer, unlocked, the cursor on it', async () => {
    const listener = `
_G.seen = {}
require("flemma.hooks").on("tool:completed", function(data)
  local lines = vim.api.nvim_buf_get_lines(data.bufnr, 0, -1, false)
  local marks = vim.api.nvim_buf_get_extmarks(data.bufnr, vim.api.nvim_get_namespaces()["flemma.tool_status"] or -1, 0, -1, { details = true })
  local spinning = 0
  for _, mark in ipairs(marks) do
    if vim.inspect(mark[4].virt_text):find("Executing", 1, true) then spinning = spinning + 1 end
  end
  table.insert(_G.seen, {
    result = vim.tbl_contains(lines, "echo: hi"),
    modifiable = vim.bo[data.bufnr].modifiable,
    cursor = vim.api.nvim_win_get_cursor(0)[1],
    spinning = spinning,
  })
end)`;
    // The call's result in the middle of the chat: `next` goes to the message after it.
    const chat = [
      ...callChat('Echo hi.', [['echo_tool', 'toolu_01', '{"text":"hi"}']], 'approved'),
      '',
      '@Assistant:',
      'Said it.',
      '',
      '@You:',
      'Thanks.',
    ];
    for (const mode of ['result', 'next'] as const) {
      const setup = `require("flemma").setup({ tools = { autopilot = false, cursor_after_result = "${mode}" } })
${ECHO_TOOL}
${listener}`;
      const { d } = await opened(`hook-${mode}.chat`, chat, setup);
      await runCallAt(d, 5);
      await d.waitForEvent('FlemmaToolCompleted');
      const lines = await d.lines();
      const row =
        mode === 'result'
          ? lines.indexOf('**Tool Result:** `toolu_01`') + 1
          : lines.lastIndexOf('@Assistant:') + 1;
      expect(row).toBeGreaterThan(12);
      expect(await d.lua('return _G.seen')).toEqual([
        { result: true, modifiable: true, cursor: row, spinning: 0 },
      ]);
    }
  });

  it('<M-CR> runs the call under the cursor, writing a result block where there was none', async () => {
    const { d } = await opened(
      'mcr.chat',
      callChat('Echo two things.', [
        ['echo_tool', 'toolu_A', '{"text":"first"}'],
        ['echo_tool', 'toolu_B', '{"text":"second"}'],
      ]),
    );
    await runCallAt(d, 11);
    await d.waitForEvent('FlemmaToolCompleted');
    const lines = await d.lines();
    expect(lines.slice(12)).toEqual([
      '```json',
      '{"text":"second"}',
      '```',
      '',
      '@You:',
      '',
      ...toolResult('toolu_B', ['echo: second']),
    ]);
    // cursor_after_result = "result": the cursor is on the result's header.
    expect(await d.lua('return vim.api.nvim_win_get_cursor(0)[1]')).toBe(19);
  });

  it('an invalid input becomes an error result that tells the model what was wrong', async () => {
    const chat = callChat('Echo.', [['echo_tool', 'toolu_X', '{"txt":"oops"}']]);
    const { d } = await opened('invalid.chat', chat);
    await runCallAt(d, 6);
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data['status']).toBe('error');
    const text = (await d.lines()).join('\n');
    expect(text).toContain('**Tool Result:** `toolu_X` (error)');
    expect(text).toMatch(/text/);
  });

  it('an async tool shows the spinner, locks the buffer, and <C-c> cancels it', async () => {
    const { d } = await opened('slow.chat', callChat('Wait.', [['slow_tool', 'toolu_S']]));
    await runCallAt(d, 6);
    await d.waitForEvent('FlemmaToolExecuting');
    // The indicator: end-of-line virtual text on the result header, animated by a Lua timer.
    const marks = await d.waitForExtmarks('flemma.tool_status');
    expect(marks).toHaveLength(1);
    const frame = marks[0]?.[3]['virt_text'];
    const first = JSON.stringify(frame);
    expect(first).toContain('Executing');
    expect(await d.lua('return vim.bo.modifiable')).toBe(false);
    // The frame changes (a Lua timer redraws it every 200 ms).
    const later = await d.waitForExtmarks('flemma.tool_status', {
      until: '#marks == 1 and not vim.deep_equal(marks[1][4].virt_text, value)',
      value: frame,
    });
    expect(JSON.stringify(later[0]?.[3]['virt_text'])).not.toBe(first);
    await d.press('<C-c>');
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data['status']).toBe('error');
    expect(await d.lua('return _G.cancelled')).toBe(true);
    const lines = await d.lines();
    expect(lines.slice(-5)).toEqual(toolResult('toolu_S', ['User aborted tool execution.'], true));
    expect(await d.lua('return vim.bo.modifiable')).toBe(true);
  });

  it('a pending placeholder shows a preview line that goes once the result arrives', async () => {
    const d = await launch({ setup: setupCode() });
    await d.openChat(
      'preview.chat',
      callChat('Echo.', [['echo_tool', 'toolu_P', '{"text":"look"}']], 'pending'),
    );
    const marks = await d.waitForExtmarks('flemma_tool_preview');
    expect(marks).toHaveLength(1);
    // Under the opening fence (0-based row 14): inside the empty block.
    expect(marks[0]?.[1]).toBe(14);
    expect(JSON.stringify(marks[0]?.[3]['virt_lines'])).toContain(
      'echo_tool: \\"look\\" (max true)',
    );
    await runCallAt(d, 14);
    await d.waitForEvent('FlemmaToolCompleted');
    expect(await d.waitForExtmarks('flemma_tool_preview', { until: '#marks == 0' })).toHaveLength(
      0,
    );
  });

  it('gives Lua tools the execution context of docs/tools.md', async () => {
    const { d, buf } = await opened('ctx.chat', callChat('Context?', [['ctx_tool', 'toolu_C']]));
    await runCallAt(d, 6);
    await d.waitForEvent('FlemmaToolCompleted');
    const lines = await d.lines();
    const json = JSON.parse(lines[lines.length - 2] ?? '') as Record<string, unknown>;
    const cwd = await d.lua<string>('return vim.fn.getcwd()');
    const file = await d.lua<string>('return vim.api.nvim_buf_get_name(0)');
    expect(json).toMatchObject({
      bufnr: buf,
      timeout: 30,
      filename: file,
      dirname: cwd,
      resolved: `${cwd}/sub/file.txt`,
      absolute: '/etc/hosts',
      max_lines: 2000,
      max_bytes: 51200,
      size: '12.1KB',
      config: { limit: 3 },
      writable_inside: true,
      writable_escape: false,
      writable_etc: false,
      writable_dangling: false,
    });
    // A deep copy: the tool's change did not reach the configuration.
    expect(await d.lua('return require("flemma.config").get().tools.ctx_tool.changed')).toBe(null);
  });
});

describe('background jobs', () => {
  it(':Flemma tool:background unlocks the buffer; the result lands in the block when done', async () => {
    const { d } = await opened('bg.chat', callChat('Work.', [['gated_tool', 'toolu_G']]));
    await runCallAt(d, 6);
    await d.waitForEvent('FlemmaToolExecuting');
    expect(await d.lua('return vim.bo.modifiable')).toBe(false);
    await d.press(':Flemma tool:list<CR>');
    await d.waitForNotification(/gated_tool/);
    await d.press(':Flemma tool:background<CR>');
    const submitted = await d.waitForEvent('FlemmaJobSubmitted');
    expect(submitted.data).toMatchObject({
      tool_id: 'toolu_G',
      tool_name: 'gated_tool',
      active_count: 1,
    });
    expect(await d.lua('return vim.bo.modifiable')).toBe(true);
    // The block says the job runs in the background.
    const marks = await d.extmarks('flemma.tool_status');
    expect(JSON.stringify(marks[0]?.[3]['virt_text'])).toMatch(
      /Running in the background \(job 1\)/,
    );
    // The user goes on writing meanwhile.
    await d.lua('vim.api.nvim_buf_set_lines(0, 1, 2, false, { "Work, please." })');
    // The tool's execute has run in Lua (the host may still have been loading its validator).
    await finishGated(d, 'finished late');
    const completed = await d.waitForEvent('FlemmaJobCompleted');
    expect(completed.data).toMatchObject({ tool_id: 'toolu_G', success: true, active_count: 0 });
    const lines = await d.lines();
    expect(lines[1]).toBe('Work, please.');
    expect(lines.slice(-5)).toEqual(toolResult('toolu_G', ['finished late']));
  });
});

describe('tool sources', () => {
  it('a send while async sources load waits, then goes out by itself; boot:complete follows', async () => {
    const d = await launch({
      setup: setupCode(`
        require("flemma.tools").register({
          timeout = 20,
          resolve = function(register, done)
            _G.finish_source = function()
              register("late_tool", { name = "late_tool", description = "Late", input_schema = { type = "object", properties = {} } })
              done()
              done() -- a second call does nothing
            end
          end,
        })
      `),
      env: { ANTHROPIC_API_KEY: '' },
    });
    await d.openChat('wait.chat', ['@You:', 'Hi']);
    await d.press('<C-]>');
    await d.waitForNotification(/Waiting for tool definitions to load\.\.\./);
    expect(d.eventsSeen('FlemmaBootComplete')).toHaveLength(0);
    await d.lua('_G.finish_source()');
    await d.waitForEvent('FlemmaBootComplete');
    // The queued send went out by itself: here it stops at the missing API key.
    await d.waitForNotification(/no credential for the Anthropic API key/);
  });

  it('a throwing resolve and a source that never finishes are reported and do not block', async () => {
    const d = await launch({
      setup: setupCode(`
        local tools = require("flemma.tools")
        tools.register(function(register, done) error("cannot list tools") end)
        tools.register({ timeout = 1, resolve = function(register, done) end })
      `),
    });
    await d.waitForNotification(/tool source function source failed: .*cannot list tools/);
    await d.openChat('boot.chat', ['@You:', 'Hi']);
    await d.waitForNotification(/timed out after 1 s/);
    await d.waitForEvent('FlemmaBootComplete');
    expect(await d.lua('return require("flemma.tools").is_ready()')).toBe(true);
  });

  it('registers every form: module with definitions, module with resolve, a list', async () => {
    const d = await launch({ setup: 'require("flemma").setup({})' });
    d.writeFile(
      'rtp/lua/my_tools/defs.lua',
      `return { definitions = {
      { name = "mod_a", description = "A", input_schema = { type = "object", properties = {} } },
    } }`,
    );
    d.writeFile(
      'rtp/lua/my_tools/async.lua',
      `local M = {}
      function M.resolve(register, done)
        register("mod_b", { name = "mod_b", description = "B", input_schema = { type = "object", properties = {} } })
        register("mod_c", { name = "mod_c", description = "C", input_schema = { type = "object", properties = {} } })
        done()
      end
      M.timeout = 5
      return M`,
    );
    const names = await d.lua<string[]>(`
      vim.opt.rtp:append(vim.fn.getcwd() .. "/rtp")
      local tools = require("flemma.tools")
      tools.register("my_tools.defs")
      tools.register("my_tools.async")
      tools.register({
        { name = "list_a", description = "LA", input_schema = { type = "object", properties = {} } },
        { name = "list_b", description = "LB", input_schema = { type = "object", properties = {} } },
      })
      local ok, err = pcall(tools.register, "my_tools.missing")
      assert(not ok and tostring(err):find("cannot load module"), tostring(err))
      ok, err = pcall(tools.register, "bad name", { description = "x" })
      assert(not ok and tostring(err):find("invalid tool name"), tostring(err))
      return tools.names()`);
    expect(names).toEqual(['list_a', 'list_b', 'mod_a', 'mod_b', 'mod_c']);
  });
});

describe('built-in tools', () => {
  const sandboxed = `require("flemma").setup({
    tools = { autopilot = false },
    sandbox = { policy = { rw_paths = { "urn:flemma:cwd" } } },
  })`;

  it('bash runs in bubblewrap: it can write in the project directory and nowhere else', async () => {
    const d = await launch({ setup: sandboxed });
    const outsideFile = d.writeFile('../outside/existing.txt', 'untouched\n');
    const outsideDir = outsideFile.slice(0, outsideFile.lastIndexOf('/'));
    const command = `touch inside.txt && echo made-inside; echo changed > ${outsideDir}/existing.txt; touch ${outsideDir}/new.txt; echo done`;
    const input = JSON.stringify({ label: 'try', command, timeout: null });
    await openBooted(
      d,
      'sandbox.chat',
      callChat('Try it.', [['bash', 'toolu_B1', input]], 'approved'),
    );
    await d.press('<C-]>');
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data).toMatchObject({ tool_name: 'bash', status: 'success' });
    const text = (await d.lines()).join('\n');
    expect(text).toContain('made-inside');
    expect(text).toMatch(/Read-only file system/);
    expect(text).toContain('done');
    const { existsSync, readFileSync } = await import('node:fs');
    const workDir = await d.lua<string>('return vim.fn.getcwd()');
    expect(existsSync(`${workDir}/inside.txt`)).toBe(true);
    expect(readFileSync(outsideFile, 'utf8')).toBe('untouched\n');
    expect(existsSync(`${outsideDir}/new.txt`)).toBe(false);
  });

  it('write refuses a path outside the writable directories, and :Flemma sandbox:disable lifts it', async () => {
    const d = await launch({ setup: sandboxed });
    const outsideFile = d.writeFile('../outside/keep.txt', 'keep\n');
    const input = JSON.stringify({
      label: 'escape',
      path: '../outside/keep.txt',
      content: 'gone\n',
    });
    await openBooted(d, 'write.chat', callChat('Write.', [['write', 'toolu_W1', input]]));
    await runCallAt(d, 6);
    const first = await d.waitForEvent('FlemmaToolCompleted');
    expect(first.data['status']).toBe('error');
    const count = d.eventCount;
    expect((await d.lines()).join('\n')).toContain(
      'Sandbox: write denied – path is outside writable directories',
    );
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(outsideFile, 'utf8')).toBe('keep\n');
    await d.press(':Flemma sandbox:disable<CR>');
    await runCallAt(d, 6);
    await d.waitForEvent('FlemmaToolCompleted', { after: count });
    expect(readFileSync(outsideFile, 'utf8')).toBe('gone\n');
  });

  it('a long bash output is cut, with the full output saved to the file the result names', async () => {
    const input = JSON.stringify({ label: 'count', command: 'seq 1 5000', timeout: null });
    const { d } = await opened(
      'long.chat',
      callChat('Count.', [['bash', 'toolu_L', input]]),
      'require("flemma").setup({ tools = { autopilot = false } })',
    );
    await runCallAt(d, 6);
    await d.waitForEvent('FlemmaToolCompleted');
    const text = (await d.lines()).join('\n');
    expect(text).toContain('\n5000\n');
    expect(text).not.toContain('\n1000\n');
    const saved = /Full output: (\S+?)\]/.exec(text)?.[1];
    expect(saved).toBeDefined();
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(saved ?? '', 'utf8').split('\n')[999]).toBe('1000');
  });

  it('a bash preview shows the command and label, and the sandbox status is reported', async () => {
    const d = await launch({ setup: sandboxed });
    const input = JSON.stringify({ label: 'running tests', command: 'make test', timeout: null });
    await d.openChat(
      'bashpreview.chat',
      callChat('Test.', [['bash', 'toolu_P2', input]], 'pending'),
    );
    const marks = await d.waitForExtmarks('flemma_tool_preview');
    expect(JSON.stringify(marks[0]?.[3]['virt_lines'])).toContain(
      'bash: $ make test  # running tests',
    );
    await d.press(':Flemma sandbox:status<CR>');
    await d.waitForNotification(/bwrap/);
  });
});

describe('JavaScript tool modules', () => {
  it('loads a module named in tools.modules and runs its tool in the host', async () => {
    const d = await launch();
    const path = d.writeFile(
      'js/upper.mjs',
      `export const definitions = [{
        name: 'upper',
        description: 'Upper-cases text',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
        formatPreview: (input) => ({ detail: String(input.text), label: 'shout' }),
        execute: async (input, ctx) => ({ success: true, output: input.text.toUpperCase() + ' in ' + ctx.cwd + ' limit=' + ctx.get_config().limit }),
      }];`,
    );
    await d.lua(
      `require("flemma").setup({ tools = { autopilot = false, modules = { "${path}" }, upper = { limit = 7 } } })`,
    );
    const chat = callChat('Shout.', [['upper', 'toolu_J', '{"text":"hey"}']], 'pending');
    await openBooted(d, 'js.chat', chat);
    // The module's own preview replaces the generic one once the module has loaded.
    const shown = (): Promise<string> =>
      d
        .extmarks('flemma_tool_preview')
        .then((marks) => JSON.stringify(marks[0]?.[3]['virt_lines'] ?? []));
    await d.waitForExtmarks('flemma_tool_preview', {
      until:
        '#marks > 0 and vim.inspect(marks[1][4].virt_lines):find("upper: hey  # shout", 1, true) ~= nil',
    });
    expect(await shown()).toContain('upper: hey  # shout');
    await runCallAt(d, 14);
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data['status']).toBe('success');
    const cwd = await d.lua<string>('return vim.fn.getcwd()');
    expect((await d.lines()).slice(-3)).toEqual(['```', `HEY in ${cwd} limit=7`, '```']);
  });
});
