// Templates and file references, end to end: what the user wrote in `@System:` / `@You:` reaches
// the provider rendered (`{{ }}`, `{% %}`, include) and with the referenced files read.
import { utimesSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { messageStart, textDeltas, textDelta, endMessage } from '../helpers/anthropic-script.js';
import { launcher, sendChat, type Session } from '../helpers/e2e.js';
import { type Driver } from '../helpers/driver.js';
import { type FakeProvider, type FakeStream } from '../helpers/fake-provider.js';

const launch = launcher();

async function reply(stream: FakeStream): Promise<void> {
  await stream.sse('message_start', messageStart({ input: 1 }));
  await textDeltas(stream, []);
  await textDelta(stream, 'ok');
  await endMessage(stream, { outputTokens: 1 });
}

/** Neovim with the project's `files`; then the chat, sent as `sendChat` does. The session. */
async function sent(
  name: string,
  lines: string[],
  options: { files?: Record<string, string | Uint8Array>; trust?: boolean; boot?: boolean } = {},
): Promise<Session> {
  const session = await launch({ files: options.files ?? {} });
  await sendChat(session, name, lines, options);
  return session;
}

/** Nothing was sent: the message matching `pattern` says why, with each of `parts`. */
async function refused(
  { d, f }: { d: Driver; f: FakeProvider },
  pattern: RegExp,
  ...parts: string[]
): Promise<void> {
  const note = await d.waitForNotification(pattern);
  for (const part of parts) expect(note.message).toContain(part);
  expect(f.requests).toHaveLength(0);
}

interface Body {
  system?: { text: string }[] | string;
  messages: { role: string; content: { type: string; text?: string; source?: unknown }[] }[];
}

/** The text of the body's last user message. */
function lastUserText(body: Body): string {
  const last = body.messages[body.messages.length - 1];
  return (last?.content ?? []).map((part) => part.text ?? '').join('');
}

// A 1×1 transparent PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

describe('templates', () => {
  it('render frontmatter variables, loops and trimming into the request', async () => {
    const { d, f } = await sent(
      'tpl.chat',
      [
        '```lua',
        'customer = "Ana"',
        'items = { "lamp", "desk" }',
        '```',
        '@System:',
        'You help {{ customer }}.',
        '@You:',
        'Items:',
        '{% for i, item in ipairs(items) do -%}',
        '- {{ i }}. {{ item }}',
        '{% end -%}',
        'Total: {{ #items }}',
      ],
      { trust: true },
    );
    const request = await f.nextRequest({ path: '/v1/messages' });
    const body = request.body as Body;
    expect(JSON.stringify(body.system)).toContain('You help Ana.');
    expect(lastUserText(body)).toBe('Items:\n- 1. lamp\n- 2. desk\nTotal: 2');
    await reply(request.stream());
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('include() renders another file, and a cycle is an error', async () => {
    const { d, f } = await sent(
      'inc.chat',
      ['```json', '{ "name": "Ana" }', '```', '@You:', '{{ include("parts/greeting.md") }}'],
      {
        files: {
          'parts/greeting.md': 'Hello {{ name }}!',
          'parts/loop.md': '{{ include("loop.md") }}',
        },
        trust: true,
      },
    );
    const request = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserText(request.body as Body)).toBe('Hello Ana!');
    await reply(request.stream());
    await d.waitForEvent('FlemmaRequestFinished');

    await d.lua(
      'vim.api.nvim_buf_set_lines(0, -1, -1, false, { "{{ include(\\"parts/loop.md\\") }}" })',
    );
    await d.command('Flemma send');
    const note = await d.waitForNotification(/include cycle/);
    expect(note.message).toContain('loop.md → ');
    expect(f.requests).toHaveLength(1);
  });

  it('templates and the Lua frontmatter run in the restricted environment each always had', async () => {
    const { d, f } = await sent(
      'env.chat',
      [
        '```lua',
        'fm = table.concat({ type(assert), type(io), type(require), type(vim.tbl_map),',
        '  type(vim.deepcopy), type(vim.fn), type(os.date), type(os.execute), type(string.upper) }, " ")',
        'string.upper = nil',
        '```',
        '@You:',
        '{{ fm }}',
        '{{ table.concat({ type(vim.inspect), type(vim.json.encode), type(vim.tbl_map), type(vim.deepcopy),',
        '  type(os.getenv), type(os.remove), type(string.upper), type(select) }, " ") }}',
        '{% string.format = nil %}{{ select(2, pcall(function() return io end)) }}',
      ],
      { trust: true },
    );
    const request = await f.nextRequest({ path: '/v1/messages' });
    const [fm, template, undefinedName] = lastUserText(request.body as Body).split('\n');
    expect(fm).toBe('function nil nil function function nil function nil function');
    expect(template).toBe('table function nil nil function nil function function');
    expect(undefinedName).toMatch(/undefined variable 'io'$/);
    // Each changed its own copy of `string`.
    expect(await d.lua('return { type(string.upper), type(string.format) }')).toEqual([
      'function',
      'function',
    ]);
    await reply(request.stream());
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('an undefined variable is an error naming its line, and nothing is sent', async () => {
    const lines = ['@You:', 'Hello', '{{ nobody }}'];
    const { d, f, buf } = await sent('undef.chat', lines, { trust: true });
    await refused({ d, f }, /undefined variable 'nobody'/, 'line 3');
    expect(await d.lines(buf)).toEqual(lines);
  });

  it('do not run in an untrusted file', async () => {
    const { d, f } = await sent('untrusted-tpl.chat', ['@You:', '{{ 1 + 1 }}']);
    await refused({ d, f }, /to run its templates/, ':trust');
  });
});

describe('personalities', () => {
  it('coding-assistant lists the request’s tools, the environment and the project’s instructions, the same every turn', async () => {
    const { d, f } = await sent(
      'persona.chat',
      ['@System:', '{{ include("urn:flemma:personality:coding-assistant") }}', '@You:', 'Hello'],
      {
        files: {
          'AGENTS.md': 'Run npm test before you finish.',
          'CLAUDE.md': 'Run npm test before you finish.',
        },
        trust: true,
        boot: true,
      },
    );
    const first = await f.nextRequest({ path: '/v1/messages' });
    const system = JSON.stringify((first.body as Body).system);
    expect(system).toContain('## Available tools');
    expect(system).toContain('- bash: run a shell command');
    expect(system).toContain('- read: ');
    expect(system).toContain('## Environment');
    expect(system).toContain('### AGENTS.md');
    expect(system).toContain('Run npm test before you finish.');
    // Identical instruction files appear once.
    expect(system).not.toContain('### CLAUDE.md');
    await reply(first.stream());
    await d.waitForEvent('FlemmaRequestFinished');
    await d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Again." })');
    const before = d.eventCount;
    await d.command('Flemma send');
    const second = await f.nextRequest({ path: '/v1/messages' });
    expect(JSON.stringify((second.body as Body).system)).toBe(system);
    await reply(second.stream());
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
  });

  it('an unknown personality is an error with a suggestion', async () => {
    const { d, f } = await sent(
      'persona-typo.chat',
      ['@System:', '{{ include("urn:flemma:personality:coding-asistant") }}', '@You:', 'Hello'],
      { trust: true },
    );
    await refused({ d, f }, /unknown personality/, "did you mean 'coding-assistant'", 'line 2');
  });
});

describe('file references', () => {
  it('inline a text file and attach a PNG as an image part', async () => {
    const { d, f } = await sent(
      'refs.chat',
      ['@You:', 'Read @./notes.txt and look at @./pic.png.'],
      { files: { 'notes.txt': 'The lamp is blue.\n', 'pic.png': PNG } },
    );
    const request = await f.nextRequest({ path: '/v1/messages' });
    const body = request.body as Body;
    const content = body.messages[body.messages.length - 1]?.content ?? [];
    expect(content.map((part) => part.type)).toEqual(['text', 'text', 'text', 'image', 'text']);
    expect(content[1]?.text).toContain('The lamp is blue.');
    expect(content[3]?.source).toEqual({
      type: 'base64',
      media_type: 'image/png',
      data: PNG.toString('base64'),
    });
    expect(content[4]?.text).toBe('.');
    await reply(request.stream());
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('are read again at each send: an edit between two sends is in the second request', async () => {
    const { d, f } = await launch();
    const path = d.writeFile('notes.txt', 'The lamp is blue.\n');
    // A modification time in whole seconds, which the edit below can put back exactly.
    const mtime = new Date('2020-01-01T00:00:00Z');
    utimesSync(path, mtime, mtime);
    const buf = await d.openChat('again.chat', ['@You:', 'Read @./notes.txt']);
    await d.command('Flemma send');
    const first = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserText(first.body as Body)).toContain('The lamp is blue.');
    await reply(first.stream());
    await d.waitForEvent('FlemmaRequestFinished');
    // The same size, and the modification time put back (as `cp -p` or `touch -d` leave it).
    writeFileSync(path, 'The lamp is gray.\n');
    utimesSync(path, mtime, mtime);
    await d.lua(
      'vim.api.nvim_buf_set_lines(..., -1, -1, false, { "Read @./notes.txt again" })',
      buf,
    );
    await d.command('Flemma send');
    const second = await f.nextRequest({ path: '/v1/messages' });
    expect(lastUserText(second.body as Body)).toContain('The lamp is gray.');
    const after = d.eventCount;
    await reply(second.stream());
    await d.waitForEvent('FlemmaRequestFinished', { after });
  });

  it('a later send carries what changed in earlier messages: an edit, a template’s value, a file', async () => {
    // A chat's unchanged messages keep their wire form between sends (wire-cache.ts): whatever
    // changed in them since must still reach the next request.
    const { d, f } = await launch({ files: { 'notes.txt': 'The lamp is blue.\n' } });
    await d.lua('vim.env.FLEMMA_WHO = "Ana"');
    const buf = await d.openChat('later.chat', [
      '@You:',
      'Hello {{ os.getenv("FLEMMA_WHO") }}, read @./notes.txt',
      '@Assistant:',
      'Fine.',
      '@You:',
      'Next?',
    ]);
    await d.command('trust');
    const texts = (body: Body): string[] =>
      body.messages.map((message) => message.content.map((part) => part.text ?? '').join(''));
    const sendOnce = async (): Promise<string[]> => {
      const after = d.eventCount;
      await d.command('Flemma send');
      const request = await f.nextRequest({ path: '/v1/messages' });
      await reply(request.stream());
      await d.waitForEvent('FlemmaRequestFinished', { after });
      return texts(request.body as Body);
    };
    const first = await sendOnce();
    expect(first[0]).toContain('Hello Ana, read');
    expect(first[0]).toContain('The lamp is blue.');
    expect(first[1]).toBe('Fine.');
    await d.lua('vim.env.FLEMMA_WHO = "Bo"');
    d.writeFile('notes.txt', 'The lamp is now a much brighter green.\n');
    await d.lua('vim.api.nvim_buf_set_lines(..., 3, 4, false, { "Fine, and more." })', buf);
    await d.lua('vim.api.nvim_buf_set_lines(..., -1, -1, false, { "And now?" })', buf);
    const second = await sendOnce();
    expect(second[0]).toContain('Hello Bo, read');
    expect(second[0]).toContain('The lamp is now a much brighter green.');
    expect(second[1]).toBe('Fine, and more.');
    expect(second[second.length - 1]).toBe('And now?');
  });

  it('a missing file is an error that names it, and nothing is sent', async () => {
    const lines = ['@You:', 'See @./missing.md please'];
    const { d, f, buf } = await sent('missing.chat', lines);
    const note = await d.waitForNotification(/missing\.md/);
    expect(note.message).toMatch(/line 2: @\.\/missing\.md: no such file/);
    expect(f.requests).toHaveLength(0);
    expect(await d.lines(buf)).toEqual(lines);
  });
});
