// CodeCompanion-style tools end to end (issue 9, point 4): a scripted fake Anthropic server asks
// for tools defined as CodeCompanion tables (`cmds`, `env`, `handlers`, `output`, `opts`), the
// approval chain asks their `requires_approval`, previews show `output.prompt`, a rejection
// reaches the model as `output.rejected`'s text, and in XML tool calling the model's XML block
// runs through the same cycle.
import { describe, expect, it } from 'vitest';
import { MESSAGE_START, textDeltas, textDelta } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { fenceLineOf, jsonChat, toolResult } from '../helpers/chat-lines.js';
import { editFence, launcher, type Session } from '../helpers/e2e.js';
import { type FakeRequest } from '../helpers/fake-provider.js';

const launch = launcher();

interface Call {
  id: string;
  name: string;
  /** An object, or the raw JSON text the model sent (possibly broken). */
  input: Record<string, unknown> | string;
}

/** Streams a reply: a text block (in `chunks`), then one tool_use block per call. */
async function reply(
  request: FakeRequest,
  text: string | string[],
  calls: Call[] = [],
): Promise<void> {
  const s = request.stream();
  await s.sse('message_start', MESSAGE_START);
  await textDeltas(s, []);
  for (const chunk of typeof text === 'string' ? [text] : text) {
    await textDelta(s, chunk);
  }
  await s.sse('content_block_stop', { type: 'content_block_stop', index: 0 });
  for (const [i, call] of calls.entries()) {
    const index = i + 1;
    await s.sse('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
    });
    await s.sse('content_block_delta', {
      type: 'content_block_delta',
      index,
      delta: {
        type: 'input_json_delta',
        partial_json: typeof call.input === 'string' ? call.input : JSON.stringify(call.input),
      },
    });
    await s.sse('content_block_stop', { type: 'content_block_stop', index });
  }
  await s.sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: 5 },
  });
  await s.sse('message_stop', { type: 'message_stop' });
  await s.end();
}

/** A CodeCompanion tool's `schema` field (Lua): a function `name` taking `properties`, `required`. */
function schema(name: string, description: string, properties: string, required: string): string {
  return `schema = {
    type = "function",
    ["function"] = {
      name = "${name}",
      description = "${description}",
      parameters = { type = "object", properties = ${properties}, required = { ${required} } },
    },
  },`;
}

// A command-based tool: two commands, `${var}` from env(), handlers counting their calls.
const GREET_TOOL = `
_G.cc_log = {}
require("flemma.tools").register("greet", {
  ${schema('greet', 'Greet someone from the shell', '{ who = { type = "string" } }', '"who"')}
  env = function(args)
    return { who = args.who, greeting = "hello" }
  end,
  cmds = {
    { "printf", "%s, %s", "\${greeting}", "\${who}" },
    { "sh", "-c", "echo from \${who} >&1" },
  },
  handlers = {
    setup = function(self) table.insert(_G.cc_log, "setup " .. self.args.who) end,
    on_exit = function(self) table.insert(_G.cc_log, "on_exit") end,
  },
  output = {
    success = function(self, cmd, stdout) table.insert(_G.cc_log, "success " .. #stdout) end,
  },
  opts = { requires_approval = false },
})`;

// A function-based tool with an approval function and the four output formatters.
const CALCULATOR_TOOL = `
_G.cc_success, _G.cc_ran = 0, {}
require("flemma.tools").register("calculator", {
  ${schema(
    'calculator',
    'Do a calculation on two numbers',
    `{
          num1 = { type = "number" },
          num2 = { type = "number" },
          operation = { type = "string", enum = { "add", "multiply" } },
        }`,
    '"num1", "num2", "operation"',
  )}
  system_prompt = function(schema)
    return "## Calculator (" .. schema["function"].name .. ")\\nOnly for arithmetic."
  end,
  cmds = {
    function(self, args, input)
      table.insert(_G.cc_ran, args.num1)
      if args.operation == "add" then
        return { status = "success", data = args.num1 + args.num2 }
      end
      return { status = "success", data = args.num1 * args.num2 }
    end,
    function(self, args, input, output_handler)
      -- Asynchronous, and answers twice: only the first answer counts.
      vim.defer_fn(function()
        output_handler({ status = "success", data = string.format("%d", input) })
        output_handler({ status = "error", data = "second answer" })
      end, 10)
    end,
  },
  output = {
    success = function(self, cmd, stdout) _G.cc_success = _G.cc_success + 1 end,
    prompt = function(self)
      local a = self.args
      return string.format("Perform %d %s %d?", a.num1, a.operation, a.num2)
    end,
  },
  opts = {
    require_approval_before = function(input, ctx)
      return input.num1 >= 1000
    end,
  },
})`;

async function setup(options: {
  tools?: string;
  lines?: string[];
  define: string;
}): Promise<Session> {
  return launch({
    config: `{ tools = ${options.tools ?? '{}'} }`,
    lua: options.define,
    chat: { name: 'cc.chat', lines: options.lines ?? ['@You:', 'Go.'] },
  });
}

type Message = { role: string; content: { type: string; [key: string]: unknown }[] | string };
type Body = { messages: Message[]; system?: unknown; tools?: unknown[] };

function lastUserContent(request: FakeRequest): { type: string; [key: string]: unknown }[] {
  const messages = (request.body as Body).messages;
  const content = messages[messages.length - 1]?.content ?? [];
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function systemText(request: FakeRequest): string {
  const system = (request.body as Body).system;
  if (typeof system === 'string') return system;
  return Array.isArray(system) ? system.map((block: { text: string }) => block.text).join('') : '';
}

describe('CodeCompanion-style tools', () => {
  it('a command-based tool with ${var} from env() runs through <C-]>, its output in the result', async () => {
    const { d, f, buf } = await setup({ tools: '{ autopilot = false }', define: GREET_TOOL });
    await d.press('<C-]>');
    const first = await f.nextRequest({ path: '/v1/messages' });
    // Offered natively, with the parameters of its OpenAI-style schema.
    expect((first.body as Body).tools).toContainEqual(
      expect.objectContaining({
        name: 'greet',
        description: 'Greet someone from the shell',
        input_schema: expect.objectContaining({ required: ['who'] }) as unknown,
      }),
    );
    let before = d.eventCount;
    await reply(first, 'Greeting.', [{ id: 'toolu_G', name: 'greet', input: { who: 'Ada' } }]);
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    // <C-]>: requires_approval = false approves it, and it runs.
    before = d.eventCount;
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaToolCompleted', { after: before });
    const lines = await d.lines(buf);
    const header = lines.indexOf('**Tool Result:** `toolu_G`');
    expect(header).toBeGreaterThan(0);
    expect(lines.slice(header, header + 6)).toEqual(
      toolResult('toolu_G', ['hello, Ada', 'from Ada']),
    );
    expect(await d.lua('return _G.cc_log')).toEqual([
      'setup Ada',
      'success 1',
      'success 2',
      'on_exit',
    ]);
    // The next <C-]> sends the result.
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow)[0]).toMatchObject({
      type: 'tool_result',
      tool_use_id: 'toolu_G',
      content: 'hello, Ada\nfrom Ada',
    });
    await reply(follow, 'Done.');
  });

  it('approval function, output.prompt in the preview, output.rejected, not found, bad arguments', async () => {
    const { d, f, buf } = await setup({ tools: '{ autopilot = false }', define: CALCULATOR_TOOL });
    await d.press('<C-]>');
    const first = await f.nextRequest({ path: '/v1/messages' });
    // C-15: the tool's system prompt is in the system prompt once.
    expect(systemText(first).split('## Calculator (calculator)').length - 1).toBe(1);
    let before = d.eventCount;
    await reply(first, 'Four calls.', [
      { id: 'toolu_A', name: 'calculator', input: { num1: 100, operation: 'multiply', num2: 50 } },
      { id: 'toolu_B', name: 'calculator', input: { num1: 2000, operation: 'add', num2: 1 } },
      { id: 'toolu_C', name: 'foo', input: {} },
      { id: 'toolu_D', name: 'calculator', input: '{"num1":' },
    ]);
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    before = d.eventCount;
    await d.press('<C-]>');
    const needed = await d.waitForEvent('FlemmaApprovalNeeded', { after: before });
    expect(needed.data).toMatchObject({ tool_ids: ['toolu_B'] });
    let lines = await d.lines(buf);
    expect(lines[fenceLineOf(lines, 'toolu_A') - 1]).toBe('```flemma:tool status=approved');
    expect(lines[fenceLineOf(lines, 'toolu_B') - 1]).toBe('```flemma:tool status=pending');
    // The pending call's preview shows output.prompt.
    const previews = await d.lua<string[]>(`
      local ns = vim.api.nvim_get_namespaces()["flemma_tool_preview"]
      local out = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(${buf}, ns, 0, -1, { details = true })) do
        out[#out + 1] = m[4].virt_lines[1][1][1]
      end
      return out`);
    expect(previews).toContain('  calculator: Perform 2000 add 1?');
    expect(await d.lua('return _G.cc_ran')).toEqual([]);

    // The user rejects the pending call with a reason; <C-]> resolves it and runs the approved one.
    await editFence(d, 'toolu_B', '```flemma:tool status=rejected', 'too risky');
    before = d.eventCount;
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaToolCompleted', { after: before });
    // 100 * 50, through both functions, success called after each; the rejected one never ran.
    lines = await d.lines(buf);
    const a = lines.indexOf('**Tool Result:** `toolu_A`');
    expect(lines.slice(a, a + 5)).toEqual(toolResult('toolu_A', ['5000']));
    expect(await d.lua('return _G.cc_success')).toBe(2);
    expect(await d.lua('return _G.cc_ran')).toEqual([100]);
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    const content = lastUserContent(follow);
    expect(content.map((c) => c['tool_use_id'])).toEqual([
      'toolu_A',
      'toolu_B',
      'toolu_C',
      'toolu_D',
    ]);
    expect(content[0]).toMatchObject({ content: '5000' });
    expect(content[1]).toMatchObject({
      is_error: true,
      content: 'The user rejected the execution of the calculator tool: "too risky"',
    });
    expect(content[2]).toMatchObject({ is_error: true });
    expect(String(content[2]?.['content'])).toMatch(
      /^Tool `foo` not found\. The available tools are: `bash`, `calculator`, `edit`, /,
    );
    expect(content[3]).toMatchObject({
      is_error: true,
      content: 'You made an error in calling the calculator tool: "Unexpected end of JSON input"',
    });
    expect(await d.lua('return _G.cc_ran')).toEqual([100]);
    await reply(follow, 'Done.');
  });

  it('XML tool calling (set in the frontmatter): the XML block runs through the cycle, results go back as text', async () => {
    const { d, f, buf } = await setup({
      define: CALCULATOR_TOOL,
      lines: jsonChat('{ "flemma": { "tools": { "calling": "xml" } } }', [
        '@You:',
        'What is 100*50?',
      ]),
    });
    await d.press('<C-]>');
    const first = await f.nextRequest({ path: '/v1/messages' });
    const body = first.body as Body;
    // No native tools; the system prompt describes the format and the tools.
    expect(body.tools ?? []).toEqual([]);
    const system = systemText(first);
    expect(system).toContain('To call a tool, reply with an XML code block');
    expect(system.split('## Calculator (calculator)').length - 1).toBe(1);
    expect(system).toContain('### `bash`');
    const before = d.eventCount;
    await reply(first, [
      'Let me work it out.\n\n```xml\n<tool name="calculator">\n  <action>\n',
      '    <num1>100</num1>\n    <num2>50</num2>\n    <operation>multiply</operation>\n',
      '  </action>\n</tool>\n```\n',
    ]);
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    // Autopilot runs it (approved by its own default) and sends the result.
    const follow = await f.nextRequest({ path: '/v1/messages' });
    const lines = await d.lines(buf);
    const use = lines.findIndex((line) =>
      /^\*\*Tool Use:\*\* `calculator` \(`xml_[0-9a-f]+`\)$/.test(line),
    );
    expect(use).toBeGreaterThan(0);
    expect(lines[use - 2]).toBe('Let me work it out.');
    expect(lines.slice(use + 2, use + 5)).toEqual([
      '```json',
      '{"num1":100,"num2":50,"operation":"multiply"}',
      '```',
    ]);
    expect(lines.some((line) => line.includes('<tool name='))).toBe(false);
    const messages = (follow.body as Body).messages;
    expect((follow.body as Body).tools ?? []).toEqual([]);
    const assistant = messages[messages.length - 2];
    const assistantText = JSON.stringify(assistant?.content);
    expect(assistantText).toContain('<tool name=\\"calculator\\">');
    expect(assistantText).not.toContain('tool_use');
    expect(lastUserContent(follow)).toEqual([
      {
        type: 'text',
        text: '<tool_result name="calculator" status="success">\n5000\n</tool_result>',
      },
    ]);
    // Byte-stable system prompt across the two requests (C-15).
    expect(systemText(follow)).toBe(system);
    await reply(follow, 'It is 5000.');
  });
});

/** Runs a CodeCompanion tool table's cmds in Neovim (no provider) and returns what came back. */
async function runTool(
  d: Driver,
  tool: string,
  args: Record<string, unknown>,
): Promise<{
  result: { success: boolean; output?: string; error?: string };
  log: string[];
}> {
  return d.lua(
    `local args = ...
    _G.cc_log = {}
    local tool = ${tool}
    local ctx = require("flemma.tools").context({ bufnr = 0, cwd = vim.fn.getcwd() }, "t")
    local results = {}
    require("flemma.tools.codecompanion").run(tool, "t", args, ctx, function(r)
      results[#results + 1] = r
    end)
    vim.wait(10000, function() return #results > 0 end, 5)
    -- A second answer would arrive on a later tick: let the loop run once more.
    local ticked = false
    vim.schedule(function() ticked = true end)
    vim.wait(10000, function() return ticked end, 5)
    assert(#results == 1, "callback called " .. #results .. " times")
    return { result = results[1], log = _G.cc_log }`,
    args,
  );
}

describe('the cmds runner', () => {
  it('C-03: a failing command stops the chain; the error has the exit code and stderr; output.error once', async () => {
    const { d: driver } = await launch({ key: false });
    const marker = `${driver.home}/work/should-not-exist`;
    const { result, log } = await runTool(
      driver,
      `{
        cmds = { { "sh", "-c", "echo oops >&2; exit 3" }, { "touch", "${marker}" } },
        output = {
          error = function(self, cmd, stderr, stdout) table.insert(_G.cc_log, "error " .. #stderr) end,
          success = function() table.insert(_G.cc_log, "success") end,
        },
        handlers = { on_exit = function() table.insert(_G.cc_log, "on_exit") end },
      }`,
      {},
    );
    expect(result.success).toBe(false);
    expect(result.error).toBe(
      'Command `sh -c echo oops >&2; exit 3` failed with exit code 3:\noops',
    );
    expect(log).toEqual(['error 1', 'on_exit']);
    expect(await driver.lua('return vim.uv.fs_stat(...) == nil', marker)).toBe(true);
  });

  it('C-04: opts.timeout (ms) stops a slow command', async () => {
    const { d: driver } = await launch({ key: false });
    // The command outlasts the test: only the timeout can end it.
    const { result } = await runTool(
      driver,
      `{ cmds = { { "sleep", "300" } }, opts = { timeout = 100 } }`,
      {},
    );
    expect(result).toEqual({
      success: false,
      error: 'Command timed out after 100ms and was terminated',
    });
  });

  it('C-01/C-02: a synchronous function, an asynchronous one answering twice, output.success per step', async () => {
    const { d: driver } = await launch({ key: false });
    const { result, log } = await runTool(
      driver,
      `{
        cmds = {
          function(self, args) return { status = "success", data = args.num1 * args.num2 } end,
          function(self, args, input, output_handler)
            vim.defer_fn(function()
              output_handler({ status = "success", data = "result " .. input })
              output_handler({ status = "error", data = "ignored" })
            end, 5)
          end,
        },
        output = { success = function(self, cmd, stdout) table.insert(_G.cc_log, "success " .. #stdout) end },
      }`,
      { num1: 100, num2: 50 },
    );
    expect(result).toEqual({ success: true, output: 'result 5000' });
    expect(log).toEqual(['success 1', 'success 2']);
  });

  it('output.success and output.error may give the text; ${var} env() does not define is an error', async () => {
    const { d: driver } = await launch({ key: false });
    const ok = await runTool(
      driver,
      `{ cmds = { { "echo", "\${a}" } }, env = function(args) return { a = args.x } end,
         output = { success = function(self, cmd, stdout) return "said " .. stdout[1] end } }`,
      { x: 'hi' },
    );
    expect(ok.result).toEqual({ success: true, output: 'said hi' });
    const missing = await runTool(
      driver,
      `{ cmds = { { "echo", "\${nope}" } }, env = function() return {} end }`,
      {},
    );
    expect(missing.result).toEqual({
      success: false,
      error: "cmds[1]: ${nope} is not defined by the tool's env()",
    });
    const custom = await runTool(
      driver,
      `{ cmds = { function() return { status = "error", data = "bad input" } end },
         output = { error = function(self, cmd, stderr) return "Failed: " .. stderr[1] end } }`,
      {},
    );
    expect(custom.result).toEqual({ success: false, error: 'Failed: bad input' });
  });

  it('C-13: requires_approval as a function gets the input and a context with path helpers', async () => {
    const { d: driver } = await launch({ key: false });
    const answers = await driver.lua<unknown[]>(`
      local tools = require("flemma.tools")
      tools.register("reader", {
        schema = { type = "function", ["function"] = { name = "reader", description = "Read",
          parameters = { type = "object", properties = { path = { type = "string" } } } } },
        cmds = { function() return { status = "success", data = "" } end },
        opts = { requires_approval = function(input, ctx)
          return not ctx.path.is_inside(input.path, ctx.cwd)
        end },
      })
      local out = {}
      for _, path in ipairs({ "src/a.ts", "/etc/hosts", "../elsewhere" }) do
        out[#out + 1] = tools.require_approval({ name = "reader", input = { path = path }, bufnr = 0, tool_id = "t" }).value
      end
      return out`);
    expect(answers).toEqual([false, true, true]);
  });
});
