// MCP end to end: servers started by the test (the SDK-built fixture, over stdio and over
// Streamable HTTP on 127.0.0.1) whose tools the fake provider calls through a `.chat` cycle; the
// result in the buffer and in the follow-up request; a server that exits and comes back;
// `:Flemma mcp:status` as a user reads it; a send made during discovery waits for it.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicReply as reply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeRequest } from '../helpers/fake-provider.js';
import {
  MCP_FIXTURE,
  type McpControl,
  spawnHttpFixture,
  startMcpControl,
} from '../helpers/mcp-fixture.js';
import { toolResult } from '../helpers/chat-lines.js';

let control: McpControl | undefined;
const children: ChildProcess[] = [];

// Declared before the launcher's: after hooks run last-declared first, so Neovim quits and
// the fake provider stops before this runs.
afterEach(async () => {
  for (const child of children.splice(0)) child.kill();
  await control?.close();
  control = undefined;
});

const launch = launcher();

type ToolSpec = { name: string; description: string; input_schema: Record<string, unknown> };
type Message = { role: string; content: { type: string; [key: string]: unknown }[] };

function toolsOf(request: FakeRequest): ToolSpec[] {
  return (request.body as { tools?: ToolSpec[] }).tools ?? [];
}

/**
 * The name the provider was given for a server's tool, found by its description (`[MCP:<server>]
 * <description>`): whatever provider-safe name the adapter uses, calling it by that name works.
 */
function mcpTool(request: FakeRequest, server: string, description: string): ToolSpec {
  const found = toolsOf(request).find((t) => t.description === `[MCP:${server}] ${description}`);
  if (found === undefined) {
    throw new Error(
      `no [MCP:${server}] ${description} among ${toolsOf(request)
        .map((t) => t.name)
        .join(', ')}`,
    );
  }
  return found;
}

function lastUserContent(request: FakeRequest): Message['content'] {
  const messages = (request.body as { messages: Message[] }).messages;
  return messages[messages.length - 1]?.content ?? [];
}

const lua = (value: string): string => JSON.stringify(value);

async function appendUserMessage(d: Driver, text: string): Promise<void> {
  // The buffer ends with an empty `@You:` message after a reply.
  await d.lua(`vim.api.nvim_buf_set_lines(0, -2, -1, false, { ${lua(text)} })`);
}

describe('MCP servers', () => {
  it('stdio: a server tool runs in a <C-]> cycle, its result is in the buffer and the follow-up; the server exits and comes back', async () => {
    control = await startMcpControl();
    const { d: driver, f: fake } = await launch({
      setup: `require("flemma").setup({
        tools = { auto_approve = { "mcp:local:echo" } },
        mcp = {
          servers = {
            ["local"] = {
              command = ${lua(process.execPath)},
              args = { ${lua(MCP_FIXTURE)} },
              env = { MCP_FIXTURE_CONTROL = "${String(control.port)}", MCP_FIXTURE_STUBBORN = "1" },
              exclude = { "secret_*" },
            },
          },
          reconnect = { initial_delay = 50, max_delay = 200, max_attempts = 20 },
        },
      })`,
    });
    const d = driver;
    const buf = await d.openChat('mcp.chat', ['@You:', 'Echo hi through MCP.']);
    const first = await control.next();
    await d.waitForEvent('FlemmaBootComplete');

    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    const echo = mcpTool(request, 'local', 'Echo the text back');
    expect(echo.input_schema).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string', description: 'What to echo' } },
      required: ['text'],
    });
    // `exclude` kept the secret tool out of what the model is offered.
    expect(toolsOf(request).some((t) => t.description.includes('Should be excluded'))).toBe(false);
    await reply(request, 'Calling the server.', [
      { id: 'toolu_M1', name: echo.name, input: { text: 'hi' } },
    ]);

    // Autopilot runs the auto-approved call and sends its result.
    const follow = await fake.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow)).toMatchObject([
      { type: 'tool_result', tool_use_id: 'toolu_M1', content: 'echo: hi' },
    ]);
    const lines = await d.lines(buf);
    const header = lines.indexOf('**Tool Result:** `toolu_M1`');
    expect(header).toBeGreaterThan(0);
    expect(lines.slice(header, header + 5)).toEqual(toolResult('toolu_M1', ['echo: hi']));
    const done = d.eventCount;
    await reply(follow, 'Done.');
    await d.waitForEvent('FlemmaRequestFinished', { after: done });

    // :Flemma mcp:status, as the user reads it.
    let notes = d.notificationCount;
    await d.command('Flemma mcp:status');
    const status = await d.waitForNotification(/MCP servers \(1\):/, { after: notes });
    const statusLines = status.message.split('\n');
    expect(statusLines[1]).toMatch(
      /^ {2}local {2}stdio, connected, 4 tools, 1 filtered out, up \d/,
    );
    expect(statusLines[2]).toBe(`         ${process.execPath} ${MCP_FIXTURE}`);

    // The server process exits: the user is told, the host starts it again.
    notes = d.notificationCount;
    first.exit();
    await d.waitForNotification(
      /MCP server 'local' stopped \(the server process exited\): its 4 tool\(s\) are unavailable; reconnecting$/,
      {
        after: notes,
      },
    );
    const second = await control.next();
    expect(second.pid).not.toBe(first.pid);
    await d.waitForNotification(/MCP server 'local' is back \(4 tool\(s\)\)$/, { after: notes });
    expect((await d.waitForEvent('FlemmaMcpDisconnected')).data).toEqual({
      server: 'local',
      reason: 'the server process exited',
    });
    expect(
      (await d.waitForEvent('FlemmaMcpConnected', { match: (e) => e.data['reconnected'] === true }))
        .data,
    ).toEqual({ server: 'local', tools: 4, reconnected: true });
    notes = d.notificationCount;
    await d.command('Flemma mcp:status');
    const after = await d.waitForNotification(/MCP servers \(1\):/, { after: notes });
    expect(after.message).toMatch(/local {2}stdio, connected, 4 tools/);

    // Neovim quits: the host stops its server (one that would outlive its client), no process
    // is left behind.
    await d.quit();
    await second.exited;
  });

  it('an MCP tool gets the preview line, the approval placeholder and the output truncation of any tool', async () => {
    control = await startMcpControl();
    const { d: driver } = await launch({
      key: false,
      setup: `require("flemma").setup({
        tools = { autopilot = false },
        mcp = { servers = { ["local"] = {
          command = ${lua(process.execPath)},
          args = { ${lua(MCP_FIXTURE)} },
          env = { MCP_FIXTURE_CONTROL = "${String(control.port)}" },
        } } },
      })`,
    });
    const d = driver;
    await d.openChat('big.chat', [
      '@You:',
      'Big.',
      '',
      '@Assistant:',
      '**Tool Use:** `mcp:local:big` (`toolu_B`)',
      '',
      '```json',
      '{"lines":5000}',
      '```',
      '',
      '@You:',
      '',
      '**Tool Result:** `toolu_B`',
      '',
      '```flemma:tool status=pending',
      '```',
    ]);
    await d.waitForEvent('FlemmaBootComplete');
    const marks = await d.waitForExtmarks('flemma_tool_preview');
    expect(JSON.stringify(marks[0]?.[3]['virt_lines'])).toContain('mcp:local:big: ');
    await d.command('normal! 15G');
    await d.press('<M-CR>');
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data).toMatchObject({ tool_name: 'mcp:local:big', status: 'success' });
    const text = (await d.lines()).join('\n');
    expect(text).toContain('line 1\nline 2\n');
    expect(text).not.toContain('line 5000');
    expect(text).toMatch(/\[Showing lines 1-\d+ of 5000/);
  });

  it('Streamable HTTP: approval as for any tool, a header from ${ENV}, and while the server is down the next request omits its tools (F-18)', async () => {
    control = await startMcpControl();
    const token = 'tok-secret-4242';
    children.push(spawnHttpFixture(control, 0, { MCP_FIXTURE_TOKEN: token }));
    const server = await control.next();
    const { d: driver, f: fake } = await launch({
      env: { MCP_TEST_TOKEN: token },
      setup: `require("flemma").setup({
        tools = { autopilot = false },
        mcp = {
          servers = {
            web = {
              url = "http://127.0.0.1:${String(server.port)}/mcp",
              headers = { Authorization = "Bearer \${MCP_TEST_TOKEN}" },
              include = { "echo", "fail" },
            },
          },
          reconnect = { initial_delay = 50, max_delay = 200, max_attempts = 200 },
        },
      })`,
    });
    const d = driver;
    const buf = await d.openChat('web.chat', ['@You:', 'Echo over HTTP.']);
    await d.waitForEvent('FlemmaBootComplete');

    await d.press('<C-]>');
    const request = await fake.nextRequest({ path: '/v1/messages' });
    const mcpNames = toolsOf(request)
      .filter((t) => t.description.startsWith('[MCP:web]'))
      .map((t) => t.description);
    expect(mcpNames.sort()).toEqual(['[MCP:web] Always fails', '[MCP:web] Echo the text back']);
    const echo = mcpTool(request, 'web', 'Echo the text back');
    const fail = mcpTool(request, 'web', 'Always fails');
    let finished = d.eventCount;
    await reply(request, 'Two calls.', [
      { id: 'toolu_H1', name: echo.name, input: { text: 'over http' } },
      { id: 'toolu_H2', name: fail.name, input: {} },
    ]);
    await d.waitForEvent('FlemmaRequestFinished', { after: finished });

    // Not auto-approved: the approval chain asks, as for any tool.
    await d.press('<C-]>');
    const needed = await d.waitForEvent('FlemmaApprovalNeeded');
    expect(needed.data['tool_ids']).toEqual(['toolu_H1', 'toolu_H2']);
    // The user approves both by editing their fences.
    for (const id of ['toolu_H1', 'toolu_H2']) {
      const lines = await d.lines(buf);
      const fence = lines.indexOf(`**Tool Result:** \`${id}\``) + 2;
      expect(lines[fence]).toBe('```flemma:tool status=pending');
      await d.lua(
        `vim.api.nvim_buf_set_lines(0, ${String(fence)}, ${String(fence + 1)}, false, { "\`\`\`flemma:tool status=approved" })`,
      );
    }
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaToolCompleted', {
      match: (e) => e.data['tool_id'] === 'toolu_H2',
    });
    await d.waitForEvent('FlemmaToolCompleted', {
      match: (e) => e.data['tool_id'] === 'toolu_H1',
    });
    const text = (await d.lines(buf)).join('\n');
    expect(text).toContain('**Tool Result:** `toolu_H1`\n\n```\necho: over http\n```');
    expect(text).toContain('**Tool Result:** `toolu_H2` (error)');
    expect(text).toContain('the fixture failed on purpose');
    await d.press('<C-]>');
    const follow = await fake.nextRequest({ path: '/v1/messages' });
    expect(lastUserContent(follow)).toEqual([
      expect.objectContaining({ tool_use_id: 'toolu_H1', content: 'echo: over http' }),
      expect.objectContaining({
        tool_use_id: 'toolu_H2',
        is_error: true,
        content: expect.stringContaining('the fixture failed on purpose') as unknown,
      }),
    ]);
    finished = d.eventCount;
    await reply(follow, 'Done.');
    await d.waitForEvent('FlemmaRequestFinished', { after: finished });

    // The server goes away: its tools leave at once, and the next request goes without them.
    let notes = d.notificationCount;
    server.exit();
    await d.waitForNotification(
      /MCP server 'web' stopped \(.*\): its 2 tool\(s\) are unavailable; reconnecting$/,
      {
        after: notes,
      },
    );
    await appendUserMessage(d, 'Again, while it is down.');
    await d.press('<C-]>');
    const without = await fake.nextRequest({ path: '/v1/messages' });
    expect(toolsOf(without).length).toBeGreaterThan(0);
    expect(toolsOf(without).filter((t) => t.description.startsWith('[MCP:web]'))).toEqual([]);
    finished = d.eventCount;
    await reply(without, 'No MCP tools now.');
    await d.waitForEvent('FlemmaRequestFinished', { after: finished });

    notes = d.notificationCount;
    await d.command('Flemma mcp:status');
    const down = await d.waitForNotification(/MCP servers \(1\):/, { after: notes });
    expect(down.message).toMatch(
      /web {2}http, reconnecting, 0 tools, 3 filtered out, next attempt/,
    );
    expect(down.message).toContain(`http://127.0.0.1:${String(server.port)}/mcp`);
    expect(down.message).toMatch(/last error: /);

    // It comes back on the same port: the tools return, and so do they in the next request.
    children.push(spawnHttpFixture(control, server.port, { MCP_FIXTURE_TOKEN: token }));
    await control.next();
    await d.waitForNotification(/MCP server 'web' is back \(2 tool\(s\)\)$/, { after: notes });
    await appendUserMessage(d, 'And now?');
    await d.press('<C-]>');
    const back = await fake.nextRequest({ path: '/v1/messages' });
    expect(toolsOf(back).filter((t) => t.description.startsWith('[MCP:web]'))).toHaveLength(2);
    await reply(back, 'Back.');

    // The token reached the server (it answers 401 otherwise) and no message showed it.
    expect(d.notifications().some((note) => note.message.includes(token))).toBe(false);
  });

  it('a send made during discovery waits for the server, then goes out with its tools', async () => {
    control = await startMcpControl();
    const { d: driver, f: fake } = await launch({
      setup: `require("flemma").setup({
        mcp = { servers = { slow = {
          command = ${lua(process.execPath)},
          args = { ${lua(MCP_FIXTURE)} },
          env = { MCP_FIXTURE_CONTROL = "${String(control.port)}", MCP_FIXTURE_HOLD = "1" },
        } } },
      })`,
    });
    const d = driver;
    await d.openChat('slow.chat', ['@You:', 'Hello.']);
    const held = await control.next();
    await d.press('<C-]>');
    await d.waitForNotification(/Waiting for tool definitions to load\.\.\.$/);
    expect(fake.requests).toHaveLength(0);
    expect(d.eventsSeen('FlemmaBootComplete')).toHaveLength(0);
    held.go();
    const request = await fake.nextRequest({ path: '/v1/messages' });
    expect(mcpTool(request, 'slow', 'Echo the text back').input_schema).toMatchObject({
      required: ['text'],
    });
    await reply(request, 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('mcp:restart completes server names; an unknown one is a clear error', async () => {
    control = await startMcpControl();
    const { d: driver } = await launch({
      key: false,
      setup: `require("flemma").setup({
        mcp = { servers = {
          alpha = { command = ${lua(process.execPath)}, args = { ${lua(MCP_FIXTURE)} },
                    env = { MCP_FIXTURE_CONTROL = "${String(control.port)}" } },
          beta = { url = "http://127.0.0.1:9/mcp", enabled = false },
        } },
      })`,
    });
    const d = driver;
    expect(await d.lua('return vim.fn.getcompletion("Flemma mcp:", "cmdline")')).toEqual([
      'mcp:prompt',
      'mcp:resources',
      'mcp:restart',
      'mcp:status',
    ]);
    expect(await d.lua('return vim.fn.getcompletion("Flemma mcp:restart ", "cmdline")')).toEqual([
      'alpha',
      'beta',
    ]);
    await d.openChat('r.chat', ['@You:', 'x']);
    const first = await control.next();
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('Flemma mcp:restart nope');
    await d.waitForNotification(
      /mcp:restart: .*unknown MCP server 'nope' \(configured: alpha, beta\)/,
    );
    let notes = d.notificationCount;
    await d.command('Flemma mcp:restart alpha');
    const before = d.eventCount;
    await d.waitForNotification(/MCP: restarting alpha$/, { after: notes });
    const second = await control.next();
    expect(second.pid).not.toBe(first.pid);
    const connected = await d.waitForEvent('FlemmaMcpConnected', { after: before });
    expect(connected.data).toEqual({ server: 'alpha', tools: 5, reconnected: false });
    notes = d.notificationCount;
    await d.command('Flemma mcp:status');
    const status = await d.waitForNotification(/MCP servers \(2\):/, { after: notes });
    expect(status.message.split('\n').slice(1)).toEqual([
      expect.stringMatching(/^ {2}alpha {2}stdio, connected, 5 tools, up /),
      `         ${process.execPath} ${MCP_FIXTURE}`,
      '  beta   disabled (enabled = false)',
    ]);

    // :checkhealth flemma has an MCP section saying the same.
    await d.command('checkhealth flemma');
    const report = await d.lua<string[]>(`
      for _, buf in ipairs(vim.api.nvim_list_bufs()) do
        if vim.bo[buf].filetype == "checkhealth" then
          return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        end
      end
      return {}`);
    const section = report.slice(report.findIndex((line) => /^MCP\b/.test(line)));
    expect(section.join('\n')).toMatch(/OK:? MCP server 'alpha' \(stdio\): connected, 5 tool\(s\)/);
    expect(section.join('\n')).toContain("MCP server 'beta' is disabled (enabled = false)");
  });
});
