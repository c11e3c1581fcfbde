// `:Flemma compact`, end to end: the chat's own model (the real Anthropic SDK in the host, a fake
// server on 127.0.0.1) summarises the chat; the summary goes into a new file beside the old one,
// which is opened, and the old file is left exactly as it was. Cancel and errors leave nothing.
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { textDeltas, textDelta } from '../helpers/anthropic-script.js';
import { DEFAULT_COMPACT_PROMPT } from '../../src/core/context/compact.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeProvider, type FakeStream } from '../helpers/fake-provider.js';

const launch = launcher();

const START = {
  type: 'message_start',
  message: {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model: 'claude-haiku-4-5',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 40, output_tokens: 1 },
  },
};

async function text(stream: FakeStream, deltas: string[]): Promise<void> {
  await stream.sse('message_start', START);
  await textDeltas(stream, []);
  for (const delta of deltas) {
    await textDelta(stream, delta);
  }
}

async function finish(stream: FakeStream, stop = 'end_turn'): Promise<void> {
  await stream.sse('content_block_stop', { type: 'content_block_stop', index: 0 });
  await stream.sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stop, stop_sequence: null },
    usage: { output_tokens: 30 },
  });
  await stream.sse('message_stop', { type: 'message_stop' });
  await stream.end();
}

const FRONTMATTER = ['```json', '{ "flemma": { "model": "claude-haiku-4-5" } }', '```'];

const CHAT = [
  ...FRONTMATTER,
  'Scratch notes that stay in this file.',
  '',
  '@System:',
  'You are a careful engineer.',
  '',
  '@You:',
  'Rename parse() to parseChat() in src/parser.ts.',
  '',
  '@Assistant:',
  'Done: parse() is now parseChat().',
  '',
  '@You:',
  'Now update the callers in src/cli.ts.',
];

async function setup(
  lines = CHAT,
): Promise<{ d: Driver; f: FakeProvider; buf: number; file: string }> {
  const { d, f } = await launch();
  const buf = await d.openChat('notes.chat', lines);
  return { d, f, buf, file: join(d.home, 'work', 'notes.chat') };
}

function workFiles(d: Driver): string[] {
  return readdirSync(join(d.home, 'work')).sort();
}

describe(':Flemma compact', () => {
  it('writes the summary into a new chat beside the old one, opens it, and leaves the old file alone', async () => {
    const { d, f, buf, file } = await setup();
    const before = readFileSync(file);
    const mtime = statSync(file).mtimeMs;
    await d.press(':Flemma compact<CR>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    // The chat's own model (from its frontmatter), system prompt and conversation, then the prompt.
    expect(request.apiKey()).toBe('sk-test-key');
    const body = request.body as {
      model: string;
      system: unknown;
      messages: { role: string; content: { type: string; text?: string }[] }[];
    };
    expect(body.model).toBe('claude-haiku-4-5');
    expect(JSON.stringify(body.system)).toContain('You are a careful engineer.');
    expect(body.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    const last = body.messages[2]?.content.map((part) => part.text);
    expect(last).toEqual(['Now update the callers in src/cli.ts.', DEFAULT_COMPACT_PROMPT]);
    const stream = request.stream();
    await text(stream, ['## Goal\nRename ', 'parse() everywhere.\n\n', '@You:\nnot a marker']);
    await finish(stream);
    const finished = await d.waitForEvent('FlemmaCompactFinished');
    const next = join(d.home, 'work', 'notes.v2.chat');
    expect(finished.data).toMatchObject({ bufnr: buf, status: 'completed', file: next });
    expect(readFileSync(next, 'utf8')).toBe(
      [
        ...FRONTMATTER,
        'Continues notes.chat (compacted with :Flemma compact; the earlier conversation is there).',
        '',
        '@System:',
        'You are a careful engineer.',
        '',
        '@You:',
        'The conversation so far is in notes.chat; it grew too long to go on there. Summarise it so that the work can continue here.',
        '',
        '@Assistant:',
        '## Goal',
        'Rename parse() everywhere.',
        '',
        // A line that would start a message gets the format's escape.
        '\\@You:',
        'not a marker',
        '',
        '@You:',
        'Now update the callers in src/cli.ts.',
        '',
      ].join('\n'),
    );
    // The old file: the same bytes, never written again.
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(statSync(file).mtimeMs).toBe(mtime);
    expect(workFiles(d)).toEqual(['notes.chat', 'notes.v2.chat']);
    // The new chat is open in the window; the old buffer stays loaded and listed.
    expect(await d.lua('return vim.api.nvim_buf_get_name(0)')).toBe(next);
    expect(await d.lua('return vim.bo.filetype')).toBe('chat');
    expect(
      await d.lua(
        'local b = ... return vim.bo[b].buflisted and vim.api.nvim_buf_is_loaded(b)',
        buf,
      ),
    ).toBe(true);
    expect(await d.lua('return vim.bo[...].modified', buf)).toBe(false);
    const note = await d.waitForNotification(/Compacted into notes\.v2\.chat/);
    expect(note.message).toContain('notes.chat is unchanged');
    expect(await d.extmarks('flemma.progress', buf)).toEqual([]);
    // A second compaction of the same chat takes the next name.
    await d.command(`buffer ${String(buf)}`);
    await d.press(':Flemma compact<CR>');
    const again = (await f.nextRequest({ path: '/v1/messages' })).stream();
    await text(again, ['Second summary.']);
    await finish(again);
    await d.waitForEvent('FlemmaCompactFinished', {
      match: (event) => (event.data as { file?: string }).file?.endsWith('notes.v3.chat') === true,
    });
    expect(workFiles(d)).toEqual(['notes.chat', 'notes.v2.chat', 'notes.v3.chat']);
  });

  it('cancels with <C-c> while the summary streams: no new file, no temporary file', async () => {
    const { d, f, buf, file } = await setup();
    const before = readFileSync(file);
    await d.press(':Flemma compact<CR>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    const stream = request.stream();
    await text(stream, ['## Goal\n', 'Rename parse()']);
    // The indicator shows the summary's progress on the chat's last line.
    await d.waitForExtmarks('flemma.progress', {
      bufnr: buf,
      until: `(function()
        for _, mark in ipairs(marks) do
          for _, chunk in ipairs(mark[4].virt_text or {}) do
            if chunk[1]:find("Compacting… 22 characters", 1, true) then return mark[2] == value end
          end
        end
        return false
      end)()`,
      value: CHAT.length - 1,
    });
    await d.press('<C-c>');
    const finished = await d.waitForEvent('FlemmaCompactFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'cancelled' });
    expect(await stream.closed).toBe('client');
    await d.waitForNotification(/compact cancelled, nothing written/);
    expect(workFiles(d)).toEqual(['notes.chat']);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(await d.lua('return vim.api.nvim_get_current_buf()')).toBe(buf);
    expect(await d.extmarks('flemma.progress', buf)).toEqual([]);
  });

  it('says so when the provider fails, and writes nothing', async () => {
    const { d, f, buf } = await setup();
    await d.press(':Flemma compact<CR>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    await request.respondError(400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'prompt is too long' },
    });
    const finished = await d.waitForEvent('FlemmaCompactFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const note = await d.waitForNotification(/compact failed, nothing written/);
    expect(note.level).toBe(4);
    expect(note.message).toContain('prompt is too long');
    expect(workFiles(d)).toEqual(['notes.chat']);
    expect(await d.lua('return vim.api.nvim_get_current_buf()')).toBe(buf);
  });

  it('says so when the connection drops mid-summary, and writes nothing', async () => {
    const { d, f, buf } = await setup();
    await d.press(':Flemma compact<CR>');
    const stream = (await f.nextRequest({ path: '/v1/messages' })).stream();
    await text(stream, ['## Goal\n', 'half a summ']);
    stream.drop();
    const finished = await d.waitForEvent('FlemmaCompactFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    await d.waitForNotification(/compact failed, nothing written/);
    expect(workFiles(d)).toEqual(['notes.chat']);
  });

  it('says so when the new file cannot be written, and leaves no temporary file', async () => {
    const { d, f } = await launch();
    const buf = await d.openChat('gone/notes.chat', CHAT);
    await d.press(':Flemma compact<CR>');
    const stream = (await f.nextRequest({ path: '/v1/messages' })).stream();
    await text(stream, ['Summary.']);
    // The chat's directory goes away before the summary is complete: there is nowhere to write.
    rmSync(join(d.home, 'work', 'gone'), { recursive: true });
    await finish(stream);
    const finished = await d.waitForEvent('FlemmaCompactFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const note = await d.waitForNotification(/compact failed, nothing written: ENOENT/);
    expect(note.level).toBe(4);
    expect(workFiles(d)).toEqual([]);
    expect(await d.lua('return vim.api.nvim_get_current_buf()')).toBe(buf);
  });

  it('compacts what an unsaved buffer holds and says that the file on disk is behind', async () => {
    const { d, f, buf, file } = await setup();
    const before = readFileSync(file);
    await d.lua('vim.api.nvim_buf_set_lines(..., -1, -1, false, { "Also add a test." })', buf);
    await d.press(':Flemma compact<CR>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    expect(request.rawBody).toContain('Also add a test.');
    const stream = request.stream();
    await text(stream, ['Summary.']);
    await finish(stream);
    await d.waitForEvent('FlemmaCompactFinished');
    const note = await d.waitForNotification(/notes\.chat on disk is behind/);
    expect(note.level).toBe(3);
    expect(readFileSync(join(d.home, 'work', 'notes.v2.chat'), 'utf8')).toMatch(
      /@You:\nNow update the callers in src\/cli\.ts\.\nAlso add a test\.\n$/,
    );
    // The old buffer keeps its changes, unwritten; its file is as it was.
    expect(await d.lua('return vim.bo[...].modified', buf)).toBe(true);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('in a trusted chat, runs its Lua frontmatter (its own prompt too), and the new chat, trusted, sends on', async () => {
    const lua = [
      '```lua',
      'flemma.opt.model = "claude-haiku-4-5"',
      'flemma.opt.context.compact.prompt = "Summarise in one line."',
      '```',
    ];
    const { d, f, buf } = await setup([
      ...lua,
      '@You:',
      'Hi',
      '@Assistant:',
      'Hello',
      '@You:',
      'Go on.',
    ]);
    await d.command('trust');
    await d.press(':Flemma compact<CR>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    const body = request.body as {
      model: string;
      messages: { content: { text?: string }[] }[];
    };
    expect(body.model).toBe('claude-haiku-4-5');
    expect(body.messages.at(-1)?.content.map((part) => part.text)).toEqual([
      'Go on.',
      'Summarise in one line.',
    ]);
    const stream = request.stream();
    await text(stream, ['We said hello.']);
    await finish(stream);
    const finished = await d.waitForEvent('FlemmaCompactFinished');
    const created = (finished.data as { new_bufnr: number }).new_bufnr;
    expect(created).not.toBe(buf);
    expect(await d.lua('return vim.api.nvim_get_current_buf()')).toBe(created);
    expect(await d.lua('return require("flemma.config.trust").state(...).trusted', created)).toBe(
      true,
    );
    // The next <C-]> continues the work from the new chat: its frontmatter runs, and the model
    // gets the summary as its own reply, then the message carried over.
    await d.press('<C-]>');
    const next = await f.nextRequest({ path: '/v1/messages' });
    const sent = next.body as {
      model: string;
      messages: { role: string; content: { text?: string }[] }[];
    };
    expect(sent.model).toBe('claude-haiku-4-5');
    expect(
      sent.messages.map((message) => [message.role, message.content.map((part) => part.text)]),
    ).toEqual([
      [
        'user',
        [
          'The conversation so far is in notes.chat; it grew too long to go on there. Summarise it so that the work can continue here.',
        ],
      ],
      ['assistant', ['We said hello.']],
      ['user', ['Go on.']],
    ]);
    const reply = next.stream();
    await text(reply, ['Going on.']);
    await finish(reply);
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('refuses a chat whose Lua frontmatter may not run, and writes nothing', async () => {
    const { d, f } = await setup([
      '```lua',
      'flemma.opt.model = "claude-haiku-4-5"',
      '```',
      '@You:',
      'Hi',
    ]);
    await d.press(':Flemma compact<CR>');
    await d.waitForNotification(/notes\.chat: review it, then :trust to run its Lua frontmatter/);
    expect(f.requests).toHaveLength(0);
    expect(workFiles(d)).toEqual(['notes.chat']);
  });

  it('writes a summary cut at the output limit as it came, and says it was cut', async () => {
    const { d, f } = await setup();
    await d.press(':Flemma compact<CR>');
    const stream = (await f.nextRequest({ path: '/v1/messages' })).stream();
    await text(stream, ['## Goal\nRename parse() every']);
    await finish(stream, 'max_tokens');
    const note = await d.waitForNotification(/Compacted into notes\.v2\.chat/);
    expect(note.level).toBe(3);
    expect(note.message).toContain('max output tokens');
    expect(readFileSync(join(d.home, 'work', 'notes.v2.chat'), 'utf8')).toContain(
      '@Assistant:\n## Goal\nRename parse() every\n\n@You:\n',
    );
  });

  it('ends the new chat with an empty @You: when the chat ends with a reply', async () => {
    const { d, f } = await setup(['@You:', 'Hi', '', '@Assistant:', 'Hello!', '', '@You:', '']);
    await d.press(':Flemma compact<CR>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    const stream = request.stream();
    await text(stream, ['We greeted each other.']);
    await finish(stream);
    const note = await d.waitForNotification(/Compacted into notes\.v2\.chat/);
    expect(note.message).toContain('no unanswered message to carry over');
    expect(readFileSync(join(d.home, 'work', 'notes.v2.chat'), 'utf8')).toMatch(
      /\n@Assistant:\nWe greeted each other\.\n\n@You:\n\n$/,
    );
    expect(
      await d.lua('return vim.api.nvim_win_get_cursor(0)[1] == vim.api.nvim_buf_line_count(0)'),
    ).toBe(true);
  });

  it('refuses a chat with no file, and one whose tool call waits for its result', async () => {
    const { d, f } = await launch();
    await d.command('enew');
    await d.command('setfiletype chat');
    await d.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, { "@You:", "Hello" })');
    await d.press(':Flemma compact<CR>');
    await d.waitForNotification(/compact: this chat has no file yet/);
    await d.openChat('tools.chat', [
      '@You:',
      'List the files.',
      '',
      '@Assistant:',
      '**Tool Use:** `bash` (`toolu_01`)',
      '',
      '```json',
      '{"command":"ls"}',
      '```',
      '',
      '@You:',
      '**Tool Result:** `toolu_01`',
      '',
      '```flemma:tool status=pending',
      '```',
    ]);
    await d.press(':Flemma compact<CR>');
    await d.waitForNotification(/compact: bash \(line 5\) waits for its result/);
    expect(f.requests).toHaveLength(0);
    expect(workFiles(d)).toEqual(['tools.chat']);
  });
});
