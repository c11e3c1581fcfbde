// MCP resources and prompts end to end (docs/mcp.md): the SDK-built fixture server over stdio;
// `@mcp:<server>:<uri>` references read into the request the fake provider receives (text
// inlined, an image and a PDF attached), refused in a file that is not trusted, and failing with
// a message that names the server and the URI; `:Flemma mcp:resources`; `:Flemma mcp:prompt`
// inserting a prompt as chat text; a server that changes its lists is followed.
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicMessages, anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeProvider, type FakeRequest } from '../helpers/fake-provider.js';
import {
  type FixtureProcess,
  MCP_FIXTURE,
  type McpControl,
  startMcpControl,
} from '../helpers/mcp-fixture.js';

let control: McpControl | undefined;

// Declared before the launcher's: after hooks run last-declared first, so Neovim quits and
// the fake provider stops before this runs.
afterEach(async () => {
  await control?.close();
  control = undefined;
});

const launch = launcher();

const lua = (value: string): string => JSON.stringify(value);

/** The fixture's 1×1 PNG (test/fixtures/mcp-server.mjs). */
const PIXEL =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/**
 * Neovim with the fixture configured as the server `local`; `server` settles when the fixture
 * serves (the host, and with it the server, starts with the first chat buffer).
 */
async function start(): Promise<{ d: Driver; f: FakeProvider; server: Promise<FixtureProcess> }> {
  const fixture = await startMcpControl();
  control = fixture;
  const { d, f } = await launch({
    setup: `require("flemma").setup({
      mcp = {
        servers = {
          ["local"] = {
            command = ${lua(process.execPath)},
            args = { ${lua(MCP_FIXTURE)} },
            env = { MCP_FIXTURE_CONTROL = "${String(fixture.port)}" },
          },
        },
      },
    })`,
  });
  return { d, f, server: fixture.next() };
}

async function next(d: Driver, f: FakeProvider): Promise<FakeRequest> {
  try {
    return await f.nextRequest({ path: '/v1/messages' });
  } catch (error) {
    const said = d.notifications().map((note) => note.message);
    throw new Error(`${String(error)}; notifications: ${JSON.stringify(said)}`);
  }
}

/** Completion of a `:Flemma` command line, as <Tab> offers it. */
async function complete(d: Driver, cmdline: string): Promise<string[]> {
  return d.lua<string[]>(`return vim.fn.getcompletion(..., "cmdline")`, cmdline);
}

/** Waits until completing `cmdline` offers `item` (Lua's copy of the catalogue arrived). */
async function waitForCompletion(d: Driver, cmdline: string, item: string): Promise<void> {
  await d.waitUntil(`return vim.tbl_contains(vim.fn.getcompletion(...), select(3, ...))`, {
    args: [cmdline, 'cmdline', item],
  });
}

/** Sends the chat and waits for the notification that stopped it; nothing reached the server. */
async function refused(d: Driver, f: FakeProvider, pattern: RegExp): Promise<string> {
  const before = d.notificationCount;
  const requests = f.requests.length;
  await d.command('Flemma send');
  const note = await d.waitForNotification(pattern, { after: before });
  expect(f.requests).toHaveLength(requests);
  return note.message;
}

describe('MCP resources', () => {
  it('inlines a text resource and attaches an image and a PDF; an untrusted file reads none until :trust; errors name the server and the URI', async () => {
    const { d, f } = await start();
    const lines = [
      '@You:',
      'Read @mcp:local:fixture://notes.md, look at @mcp:local:fixture://pixel.png',
      'and @mcp:local:fixture://doc.pdf.',
    ];
    await d.openChat('chats/res.chat', lines);
    await d.waitForEvent('FlemmaBootComplete');

    // Not trusted: each reference is a warning on its line, and a send stops at the first one.
    await d.waitUntil(
      `return #vim.diagnostic.get(0, { namespace = vim.api.nvim_create_namespace("flemma.frontmatter") }) == 3`,
    );
    const message = await refused(d, f, /not read/);
    expect(message).toContain(
      "line 2: @mcp:local:fixture://notes.md: not read: this chat file is not trusted and it reads from the MCP server 'local' (:trust reads it)",
    );
    expect(await d.lines()).toEqual(lines);

    await d.command('trust');
    await d.command('Flemma send');
    const request = await next(d, f);
    expect(request.rawBody).toContain('The fixture notes say MCP-NOTES-42.');
    const content = anthropicMessages(request).at(-1)?.content ?? [];
    expect(content).toContainEqual(
      expect.objectContaining({
        type: 'image',
        source: { type: 'base64', media_type: 'image/png', data: PIXEL },
      }),
    );
    expect(content).toContainEqual(
      expect.objectContaining({
        type: 'document',
        source: expect.objectContaining({ media_type: 'application/pdf' }) as unknown,
      }),
    );
    await anthropicReply(request, 'Read them.');
    await d.waitForEvent('FlemmaRequestFinished');

    // Errors: nothing is sent, and the message names the line, the server and the URI.
    const ask = async (text: string): Promise<void> => {
      await d.lua(`vim.api.nvim_buf_set_lines(0, -2, -1, false, { ${lua(text)} })`);
    };
    await ask('See @mcp:local:fixture://missing.txt');
    expect(await refused(d, f, /missing\.txt/)).toMatch(
      /@mcp:local:fixture:\/\/missing\.txt: MCP server 'local' could not read fixture:\/\/missing\.txt: .*Resource not found/,
    );
    await ask('See @mcp:nope:fixture://notes.md');
    expect(await refused(d, f, /nope/)).toContain(
      "@mcp:nope:fixture://notes.md: unknown MCP server 'nope' (configured: local)",
    );
    await ask('See @mcp:local:fixture://data.bin');
    expect(await refused(d, f, /data\.bin/)).toContain(
      "fixture://data.bin of MCP server 'local' is application/octet-stream, which cannot be sent",
    );
  });

  it('lists the resources and follows a server that changes its lists (tools, resources, prompts)', async () => {
    const started = await start();
    const { d, f } = started;
    await d.openChat('list.chat', ['@You:', 'Hello.']);
    const server = await started.server;
    await d.waitForEvent('FlemmaBootComplete');
    await waitForCompletion(d, 'Flemma mcp:prompt local ', 'review');

    let notes = d.notificationCount;
    await d.command('Flemma mcp:resources');
    const listing = (await d.waitForNotification(/MCP resources/, { after: notes })).message;
    expect(listing.split('\n')).toEqual([
      'Flemma: MCP resources (reference one in a message as @mcp:<server>:<uri>):',
      '  local (4 resources, 1 template)',
      '    fixture://notes.md      Fixture notes — Notes of the fixture (text/markdown)',
      '    fixture://pixel.png     pixel (image/png)',
      '    fixture://doc.pdf       doc (application/pdf)',
      '    fixture://data.bin      data (application/octet-stream)',
      '    fixture://pages/{name}  page — A page by name [template]',
    ]);
    expect(await complete(d, 'Flemma mcp:prompt local ')).toEqual(['hello', 'review']);

    // The server adds a tool, a resource and a prompt, and says so.
    server.change();
    await waitForCompletion(d, 'Flemma mcp:prompt local ', 'added');
    notes = d.notificationCount;
    await d.command('Flemma mcp:resources local');
    const after = (await d.waitForNotification(/MCP resources/, { after: notes })).message;
    expect(after).toContain('local (5 resources, 1 template)');
    expect(after).toMatch(/fixture:\/\/added\.txt +added \(text\/plain\)/);

    await d.command('Flemma send');
    const request = await next(d, f);
    const tools = (request.body as { tools?: { description: string }[] }).tools ?? [];
    expect(tools.map((tool) => tool.description)).toContain('[MCP:local] Added later');
    await anthropicReply(request, 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished');
  });
});

describe('MCP prompts', () => {
  it('inserts a prompt at the end as @You:/@Assistant: text in one undo step; names a missing argument; never in a locked chat', async () => {
    const { d, f } = await start();
    const lines = ['@You:', 'First question.', '', '@Assistant:', 'First answer.', '', '@You:', ''];
    const buf = await d.openChat('prompt.chat', lines);
    await d.waitForEvent('FlemmaBootComplete');
    await waitForCompletion(d, 'Flemma mcp:prompt local ', 'review');
    expect(await complete(d, 'Flemma mcp:prompt ')).toEqual(['local']);
    expect(await complete(d, 'Flemma mcp:prompt local review ')).toEqual(['file=', 'focus=']);
    expect(await complete(d, 'Flemma mcp:prompt local review file=a ')).toEqual(['focus=']);

    // A required argument missing: said, with the usage; nothing inserted.
    let notes = d.notificationCount;
    await d.command('Flemma mcp:prompt local review');
    const missing = await d.waitForNotification(/needs the argument/, { after: notes });
    expect(missing.message).toContain(
      "prompt 'review' of MCP server 'local' needs the argument file (usage: :Flemma mcp:prompt local review file=… [focus=…])",
    );
    expect(await d.lines(buf)).toEqual(lines);

    notes = d.notificationCount;
    await d.command('Flemma mcp:prompt local review file=src/a.ts focus=errors');
    await d.waitForNotification(/MCP prompt 'review' of local inserted/, { after: notes });
    expect(await d.lines(buf)).toEqual([
      ...lines.slice(0, 6),
      // The empty `@You:` at the end is filled.
      '@You:',
      'Please review src/a.ts, looking at errors.',
      '',
      '@Assistant:',
      'I will review src/a.ts.',
      '',
      '@You:',
      '@mcp:local:fixture://notes.md',
    ]);
    // One undo step takes it all away.
    await d.press('u');
    expect(await d.lines(buf)).toEqual(lines);

    // While a reply streams, the chat is locked: nothing is inserted.
    await d.lua(`vim.api.nvim_buf_set_lines(0, -2, -1, false, { "Second question." })`);
    await d.command('Flemma send');
    const request = await next(d, f);
    const streaming = await d.lines(buf);
    notes = d.notificationCount;
    await d.command('Flemma mcp:prompt local hello');
    const locked = await d.waitForNotification(/mcp:prompt: nothing inserted/, { after: notes });
    expect(locked.message).toContain('read-only while the reply streams in');
    expect(await d.lines(buf)).toEqual(streaming);
    await anthropicReply(request, 'Second answer.');
    await d.waitForEvent('FlemmaRequestFinished');

    // After the reply (the chat ends with an empty `@You:`) it goes in.
    notes = d.notificationCount;
    await d.command('Flemma mcp:prompt local hello');
    await d.waitForNotification(/MCP prompt 'hello' of local inserted/, { after: notes });
    expect((await d.lines(buf)).slice(-2)).toEqual(['@You:', 'Hello from the fixture']);
  });
});
