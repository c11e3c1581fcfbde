// Declarative tools end to end (docs/tools.md, "Declarative tools"): a YAML `http` tool in a configured directory,
// called by the model (the fake provider) in a `.chat` cycle, hitting a local HTTP server, with
// its result in the buffer and sent back; and path escapes through `file_read`, `file_write` and
// the built-in `read` refused under `sandbox.roots`.
import { type Server, createServer } from 'node:http';
import { realpathSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MESSAGE_START, textDeltas, textDelta } from '../helpers/anthropic-script.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeRequest } from '../helpers/fake-provider.js';
import { closeServer } from '../helpers/http.js';
import { callChat, jsonChat, toolUse, toolResult } from '../helpers/chat-lines.js';

let server: Server | undefined;
let dir: string | undefined;

// Declared before the launcher's: after hooks run last-declared first, so Neovim quits and
// the fake provider stops before this runs.
afterEach(async () => {
  await closeServer(server);
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  server = undefined;
  dir = undefined;
});

const launch = launcher();

async function reply(
  request: FakeRequest,
  text: string,
  call?: { id: string; name: string; input: Record<string, unknown> },
): Promise<void> {
  const s = request.stream();
  await s.sse('message_start', MESSAGE_START);
  await textDeltas(s, []);
  await textDelta(s, text);
  await s.sse('content_block_stop', { type: 'content_block_stop', index: 0 });
  if (call !== undefined) {
    await s.sse('content_block_start', {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
    });
    await s.sse('content_block_delta', {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) },
    });
    await s.sse('content_block_stop', { type: 'content_block_stop', index: 1 });
  }
  await s.sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: call === undefined ? 'end_turn' : 'tool_use', stop_sequence: null },
    usage: { output_tokens: 5 },
  });
  await s.sse('message_stop', { type: 'message_stop' });
  await s.end();
}

type Message = { role: string; content: { type: string; [key: string]: unknown }[] };

describe('declarative tools', () => {
  it('a YAML http tool is offered, called by the model, hits the server, and its result is sent back', async () => {
    const seen: string[] = [];
    server = createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${req.url ?? ''} ${String(req.headers['x-token'] ?? '')}`);
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('sunny in Paris');
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    dir = realpathSync(await mkdtemp(join(tmpdir(), 'flemma-decl-e2e-')));
    await writeFile(
      join(dir, 'weather.yaml'),
      `name: weather
description: The weather in a city
params:
  - name: city
    type: string
    description: The city
    required: true
implementation:
  type: http
  url: http://127.0.0.1:${String(port)}/weather
  query: { q: "{{city}}" }
  headers: { X-Token: "\${WEATHER_TOKEN}" }
  timeout: 5s
`,
    );
    await writeFile(
      join(dir, 'bad.yaml'),
      'name: bad\ndescription: Bad\nimplementation: { type: ftp }\n',
    );
    const { d: driver, f: fake } = await launch({
      env: { WEATHER_TOKEN: 'tok-1' },
      setup: `require("flemma").setup({ tools = {
        auto_approve = { "$default", "weather" },
        declarative = { dirs = { ${JSON.stringify(dir)} }, env = { "WEATHER_TOKEN" } },
      } })`,
    });
    const d = driver;
    const buf = await d.openChat('weather.chat', ['@You:', 'Weather in Paris?']);
    await d.waitForEvent('FlemmaBootComplete');
    // The bad file is reported by path; the good one loaded anyway.
    await d.waitForNotification(
      /Declarative tool .*bad\.yaml: implementation\.type must be one of/,
    );

    await d.press('<C-]>');
    const first = await fake.nextRequest({ path: '/v1/messages' });
    const offered =
      (first.body as { tools?: { name: string; input_schema: unknown }[] }).tools ?? [];
    const weather = offered.find((t) => t.name === 'weather');
    expect(weather?.input_schema).toEqual({
      type: 'object',
      properties: { city: { type: 'string', description: 'The city' } },
      required: ['city'],
      additionalProperties: false,
    });
    expect(offered.some((t) => t.name === 'bad')).toBe(false);
    await reply(first, 'Let me look.', {
      id: 'toolu_W',
      name: 'weather',
      input: { city: 'Paris' },
    });

    // Autopilot runs the approved call and sends its result.
    const follow = await fake.nextRequest({ path: '/v1/messages' });
    const messages = (follow.body as { messages: Message[] }).messages;
    const last = messages[messages.length - 1]?.content ?? [];
    expect(last[0]).toMatchObject({
      type: 'tool_result',
      tool_use_id: 'toolu_W',
      content: 'sunny in Paris',
    });
    expect(seen).toEqual(['GET /weather?q=Paris tok-1']);
    const before = d.eventCount;
    await reply(follow, 'It is sunny.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    const lines = await d.lines(buf);
    const header = lines.indexOf('**Tool Result:** `toolu_W`');
    expect(lines.slice(header, header + 5)).toEqual(toolResult('toolu_W', ['sunny in Paris']));
    // The token never reached the buffer.
    expect(lines.join('\n')).not.toContain('tok-1');
  });

  it('path escapes through file_read, file_write and the built-in read are refused under sandbox.roots', async () => {
    dir = realpathSync(await mkdtemp(join(tmpdir(), 'flemma-decl-e2e-')));
    const tools = join(dir, 'tools');
    const ws = join(dir, 'ws');
    await mkdir(tools);
    await mkdir(ws);
    await writeFile(join(ws, 'inside.txt'), 'inside\n');
    await writeFile(join(dir, 'outside.txt'), 'outside\n');
    await writeFile(
      join(tools, 'cat.yaml'),
      'name: cat\ndescription: Read a file\nparams: [{ name: path, type: string, required: true }]\nimplementation: { type: file_read }\n',
    );
    await writeFile(
      join(tools, 'save.yaml'),
      'name: save\ndescription: Save a file\nparams:\n  - { name: path, type: string, required: true }\n  - { name: content, type: string, required: true }\nimplementation: { type: file_write, mkdir: true }\n',
    );
    const { d: driver } = await launch({
      key: false,
      setup: `require("flemma").setup({
        tools = { autopilot = false, max_concurrent = 0, declarative = { dirs = { ${JSON.stringify(tools)} } } },
        sandbox = { roots = { { name = "ws", path = ${JSON.stringify(ws)} } } },
      })`,
    });
    const d = driver;
    const use = (name: string, id: string, input: unknown): string[] => [
      ...toolUse(name, id, JSON.stringify(input)),
      '',
    ];
    const result = (id: string): string[] => [
      `**Tool Result:** \`${id}\``,
      '',
      '```flemma:tool status=approved',
      '```',
      '',
    ];
    await d.openChat('escape.chat', [
      '@You:',
      'Try.',
      '',
      '@Assistant:',
      ...use('cat', 'toolu_1', { path: '../outside.txt' }),
      ...use('save', 'toolu_2', { path: '/tmp/flemma-escaped.txt', content: 'x' }),
      ...use('read', 'toolu_3', {
        label: 'x',
        path: join(dir, 'outside.txt'),
        offset: null,
        limit: null,
      }),
      ...use('cat', 'toolu_4', { path: 'inside.txt' }),
      '@You:',
      '',
      ...result('toolu_1'),
      ...result('toolu_2'),
      ...result('toolu_3'),
      ...result('toolu_4'),
    ]);
    await d.waitForEvent('FlemmaBootComplete');
    // The chat is the user's: its `approved` stands (in a file not trusted the chain judges it).
    await d.command('trust');
    await d.press('<C-]>');
    for (let i = 1; i <= 4; i++) {
      const id = `toolu_${String(i)}`;
      await d.waitForEvent('FlemmaToolCompleted', { match: (e) => e.data['tool_id'] === id });
    }
    const text = (await d.lines()).join('\n');
    for (const id of ['toolu_1', 'toolu_2', 'toolu_3']) {
      const at = text.indexOf(`**Tool Result:** \`${id}\` (error)`);
      expect(at, id).toBeGreaterThan(-1);
      expect(text.slice(at, at + 300)).toMatch(/Path escapes sandbox/);
    }
    expect(text).not.toContain('outside\n```');
    expect(text).toMatch(/\*\*Tool Result:\*\* `toolu_4`\n\n```\ninside\n/);
  });

  it('V-24: a tool the buffer does not offer is refused at execution, with the offered list', async () => {
    const { d: driver } = await launch({
      key: false,
      setup: 'require("flemma").setup({ tools = { autopilot = false } })',
    });
    const d = driver;
    await d.openChat(
      'filtered.chat',
      jsonChat(
        '{ "flemma": { "tools": { "$set": ["read", "ls"] } } }',
        callChat(
          'Write.',
          [['write', 'toolu_F', '{"label":"x","path":"x.txt","content":"x"}']],
          'approved',
        ),
      ),
    );
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    const ok = await d.lua<boolean>(
      'return vim.wait(5000, function() return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), "**Tool Result:** `toolu_F` (error)") end)',
    );
    expect(ok, JSON.stringify({ lines: await d.lines(), n: d.notifications() })).toBe(true);
    const text = (await d.lines()).join('\n');
    expect(text).toContain(
      "Tool 'write' is not available here. The available tools are: `ls`, `read`",
    );
    expect(await d.lua('return vim.fn.filereadable("x.txt")')).toBe(0);
  });
});
