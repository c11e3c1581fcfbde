// Flynn-style tools end to end (docs/policy.md): a tool policy in the frontmatter takes a tool out of the request
// and refuses a call to it anyway; the `log` hook approves and audits; a JavaScript module's
// Flynn-style tool reaches the provider under its API name and the buffer under its own name;
// a `.chat` file holding the API name still runs; a `confirm` hook asks, and the approved call
// runs once while the rejected one never does (F-12). F-14 (a timeout stops the process tree) is
// in test/unit/tools-bash.test.ts, X-06 (concurrent calls, results in tool-use order) in
// test/nvim/approval.test.ts.
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { anthropicReply as reply } from '../helpers/anthropic-script.js';
import { afterEach, describe, expect, it } from 'vitest';
import { callChat, jsonChat } from '../helpers/chat-lines.js';
import { launcher, type Session, untilApproval } from '../helpers/e2e.js';
import { type FakeRequest } from '../helpers/fake-provider.js';

let server: Server | undefined;

// Declared before the launcher's: after hooks run last-declared first, so Neovim and the fake
// provider stop before this server does.
afterEach(async () => {
  await new Promise<void>((resolve) => {
    if (server === undefined) resolve();
    else
      server.close(() => {
        resolve();
      });
  });
  server = undefined;
});

const launch = launcher();

type Block = { type: string; [key: string]: unknown };
type Body = { tools?: { name: string }[]; messages: { role: string; content: Block[] | string }[] };

function toolNames(request: FakeRequest): string[] {
  return ((request.body as Body).tools ?? []).map((tool) => tool.name);
}

function blocks(request: FakeRequest): Block[] {
  return (request.body as Body).messages.flatMap((m) =>
    typeof m.content === 'string' ? [] : m.content,
  );
}

async function start(tools: string, envFake = true): Promise<Session> {
  const session = await launch(envFake ? {} : { key: false });
  const d = session.d;
  const notes = d.writeFile(
    'js/notes.mjs',
    `export const tool = {
       name: 'note.add',
       description: 'Adds a note',
       inputSchema: { type: 'object', properties: { text: { type: 'string' }, api_key: { type: 'string' } }, required: ['text'] },
       execute: async (args) => ({ success: true, output: 'noted ' + args.text }),
     };`,
  );
  await d.lua(
    `require("flemma").setup({ tools = vim.tbl_extend("force", { autopilot = false, modules = { "${notes}" } }, ${tools}) })`,
  );
  return session;
}

describe('tool policy end to end', () => {
  it('a frontmatter policy removes bash from the request, and a call to it gets the policy error unrun', async () => {
    // auto_approve names bash: the policy resolver (200) must still win over it (100), X-01.
    const { d, f } = await start('{ auto_approve = { "bash" } }');
    await d.openChat(
      'policy.chat',
      jsonChat(
        '{"flemma": {"tools": {"$set": ["read", "bash"], "policy": {"deny": ["shell.*"]}}}}',
        ['@You:', 'Go.'],
      ),
    );
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    const first = await f.nextRequest({ path: '/v1/messages' });
    // X-04 and the policy: exactly one schema, `read`.
    expect(toolNames(first)).toEqual(['read']);
    await reply(first, 'Trying anyway.', [
      {
        id: 'toolu_B',
        name: 'bash',
        input: { command: 'touch ran.txt', label: 'touch', timeout: 5 },
      },
    ]);
    await d.waitForEvent('FlemmaRequestFinished');
    await d.press('<C-]>');
    const second = await f.nextRequest({ path: '/v1/messages' });
    const result = blocks(second).find((b) => b.type === 'tool_result');
    expect(result).toMatchObject({ tool_use_id: 'toolu_B', is_error: true });
    expect(JSON.stringify(result?.['content'])).toContain(
      "Tool 'bash' is not allowed by tool policy",
    );
    const lines = await d.lines();
    expect(lines).toContain("Tool 'bash' is not allowed by tool policy");
    expect(existsSync(join(d.home, 'work', 'ran.txt'))).toBe(false);
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(0);
    await reply(second, 'OK.');
    await d.waitForEvent('FlemmaRequestFinished');
    // :Flemma tool:why names the policy and the pattern.
    const row = lines.indexOf('**Tool Use:** `bash` (`toolu_B`)') + 1;
    await d.command(`normal! ${String(row)}G`);
    await d.command('Flemma tool:why');
    await d.waitForNotification(/bash \(toolu_B\): deny — urn:flemma:approval:policy/);
  });

  it('the log hook approves without asking and writes one audit entry per call, secrets redacted (F-19)', async () => {
    server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`hello from ${req.method ?? ''} ${req.url ?? ''}`);
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const { d, f } = await start(
      '{ hooks = { log = { "web.*", "note.*" }, audit_file = vim.fn.expand("~/state/audit.jsonl") } }',
    );
    await d.openChat(
      'log.chat',
      jsonChat('{"flemma": {"tools": {"$append": ["web_fetch", "note.add"]}}}', [
        '@You:',
        'Fetch and note.',
      ]),
    );
    // Adding tools needs trust (docs/security.md).
    await d.command('trust');
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    const first = await f.nextRequest({ path: '/v1/messages' });
    // The module's `note.add` goes out under its API name.
    expect(toolNames(first)).toEqual(expect.arrayContaining(['web_fetch', 'note_add']));
    expect(toolNames(first)).not.toContain('note.add');
    await reply(first, 'Two calls.', [
      {
        id: 'toolu_W',
        name: 'web_fetch',
        input: {
          url: `http://127.0.0.1:${String(port)}/page`,
          headers: { Authorization: 'Bearer abcdefghijklmnopqrstuvwxyz' },
        },
      },
      { id: 'toolu_N', name: 'note_add', input: { text: 'hi', api_key: 'k-12345' } },
    ]);
    await d.waitForEvent('FlemmaRequestFinished');
    // The buffer shows the tool's own name.
    expect(await d.lines()).toContain('**Tool Use:** `note.add` (`toolu_N`)');
    await d.press('<C-]>');
    const done = await Promise.all(
      ['toolu_W', 'toolu_N'].map((id) =>
        d.waitForEvent('FlemmaToolCompleted', { match: (e) => e.data['tool_id'] === id }),
      ),
    );
    expect(done.map((e) => e.data['status'])).toEqual(['success', 'success']);
    expect(d.notifications().some((n) => /Approval needed/.test(n.message))).toBe(false);
    const lines = await d.lines();
    expect(lines).toContain(`hello from GET /page`);
    expect(lines).toContain('noted hi');
    const audit = readFileSync(join(d.home, 'state', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const web = audit.filter((entry) => entry['tool'] === 'web_fetch');
    expect(web).toHaveLength(1);
    expect(web[0]).toMatchObject({
      id: 'toolu_W',
      success: true,
      args: { headers: { Authorization: '[REDACTED]' } },
    });
    expect(typeof web[0]?.['durationMs']).toBe('number');
    expect(audit.find((entry) => entry['tool'] === 'note.add')).toMatchObject({
      args: { text: 'hi', api_key: '[REDACTED]' },
    });
    // The results go back under the API names too.
    await d.press('<C-]>');
    const second = await f.nextRequest({ path: '/v1/messages' });
    const uses = blocks(second).filter((b) => b.type === 'tool_use');
    expect(uses.map((b) => b['name'])).toEqual(['web_fetch', 'note_add']);
    await reply(second, 'Done.');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('F-12: a confirm hook asks even under autonomy; the approved call runs once, the rejected one never', async () => {
    // `autonomous` would approve note.add (not dangerous) at 60; `confirm` (80) asks first.
    const { d, f } = await start('{ autonomy = "autonomous", hooks = { confirm = { "note.*" } } }');
    await d.openChat('confirm.chat', ['@You:', 'Two notes.']);
    await d.waitForEvent('FlemmaBootComplete');
    let lines = await untilApproval(d, f, 'Noting.', [
      { id: 'toolu_A', name: 'note_add', input: { text: 'yes' } },
      { id: 'toolu_R', name: 'note_add', input: { text: 'no' } },
    ]);
    expect(lines.filter((line) => line === '```flemma:tool status=pending')).toHaveLength(2);
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(0);
    const rowOf = (id: string): number => lines.indexOf(`**Tool Result:** \`${id}\``) + 1;
    await d.command(`normal! ${String(rowOf('toolu_A'))}G`);
    await d.command('Flemma tool:approve');
    lines = await d.lines();
    await d.command(`normal! ${String(rowOf('toolu_R'))}G`);
    await d.command('Flemma tool:reject Not this one.');
    await d.press('<C-]>');
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data['tool_id']).toBe('toolu_A');
    await d.press('<C-]>');
    const follow = await f.nextRequest({ path: '/v1/messages' });
    const results = blocks(follow).filter((b) => b.type === 'tool_result');
    expect(results.map((r) => [r['tool_use_id'], r['content'], r['is_error'] === true])).toEqual([
      ['toolu_A', 'noted yes', false],
      ['toolu_R', 'Not this one.', true],
    ]);
    expect(d.eventsSeen('FlemmaToolExecuting')).toHaveLength(1);
    await reply(follow, 'Done.');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('a .chat file that holds the API name of a tool still runs it', async () => {
    const { d } = await start('{}', false);
    await d.openChat(
      'api-name.chat',
      callChat('Note.', [['note_add', 'toolu_A', '{"text":"old file"}']], 'approved'),
    );
    await d.waitForEvent('FlemmaBootComplete');
    // The chat is the user's: its `approved` stands (in a file not trusted the chain judges it).
    await d.command('trust');
    await d.press('<C-]>');
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data['status']).toBe('success');
    expect((await d.lines()).slice(-3)).toEqual(['```', 'noted old file', '```']);
  });
});
