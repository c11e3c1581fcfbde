// Slash commands (docs/slash-commands.md): `/name args` lines of a `@You:` message change that
// request only (`/thinking off`, `/model …`, `/tools -bash`) and are never sent as text; a
// user's command registered in Lua rewrites its line; an unknown name is a diagnostic and
// nothing is sent; an untrusted chat gets no option through them that needs trust; an action
// command (`/compact`) runs its `:Flemma` command instead of the send.
import { describe, expect, it } from 'vitest';
import { DEFAULT_COMPACT_PROMPT } from '../../src/core/context/compact.js';
import { anthropicMessages } from '../helpers/anthropic-script.js';
import { launcher, type Session } from '../helpers/e2e.js';
import type { FakeRequest } from '../helpers/fake-provider.js';

const launch = launcher();

const PIRATE = `require("flemma.slash").register("pirate", {
  description = "answer as a pirate",
  rewrite = function(ctx) return "Answer as a pirate" .. (ctx.args ~= "" and (", about " .. ctx.args) or "") .. "." end,
})
require("flemma.slash").register("shout", { rewrite = "SAY IT LOUD: $ARGUMENTS" })
require("flemma.slash").register("gone", { action = "nowhere" })
require("flemma.slash").register("endpoint", {
  options = { parameters = { anthropic = { base_url = "http://127.0.0.1:9/evil" } } },
})`;

function start(name: string, lines: string[]): Promise<Session> {
  return launch({
    key: 'sk-ant-test-key',
    config: '{ parameters = { thinking = "high" } }',
    lua: PIRATE,
    chat: { name, lines },
  });
}

type Body = {
  model: string;
  thinking?: unknown;
  tools?: { name: string }[];
  messages: { role: string; content: unknown }[];
};

const bodyOf = (request: FakeRequest): Body => request.body as Body;
const toolNames = (request: FakeRequest): string[] =>
  (bodyOf(request).tools ?? []).map((tool) => tool.name).sort();

/** The request of the chat's next `<C-]>`, answered with `reply`. */
async function exchange(session: Session, reply: string): Promise<FakeRequest> {
  const request = await session.send();
  await session.replyAndWait(reply);
  return request;
}

/** Type a new `@You:` message at the end of the chat. */
async function ask(session: Session, ...lines: string[]): Promise<void> {
  await session.d.lua(
    'local b = ... vim.api.nvim_buf_set_lines(b, -1, -1, false, { select(2, ...) })',
    session.buf,
    ...lines,
  );
}

describe('options commands', () => {
  // Each command, what it changes, and the fields of the body that follow from it (thinking
  // comes with its effort; another model has its own output limit and no effort).
  it.each([
    [
      '/thinking off',
      ['thinking', 'output_config'],
      (body: Body) => {
        expect(body.thinking).toBeUndefined();
      },
    ],
    [
      '/model claude-haiku-4-5',
      ['model', 'max_tokens', 'thinking', 'output_config'],
      (body: Body) => {
        expect(body.model).toBe('claude-haiku-4-5');
      },
    ],
    [
      '/flemma:model anthropic/claude-haiku-4-5',
      ['model', 'max_tokens', 'thinking', 'output_config'],
      (body: Body) => {
        expect(body.model).toBe('claude-haiku-4-5');
      },
    ],
  ])('%s changes that request only, and is not sent as text', async (command, follows, changed) => {
    const session = await start('options.chat', ['@You:', 'One.']);
    const plain = bodyOf(await exchange(session, 'First.'));
    await ask(session, 'Two.', command, 'Three.');
    const own = bodyOf(await exchange(session, 'Second.'));
    changed(own);
    expect(own.messages.at(-1)?.content).toEqual([{ type: 'text', text: 'Two.\nThree.' }]);
    // Nothing else differs from the request without the command.
    const rest = (body: Body): Record<string, unknown> =>
      Object.fromEntries(
        Object.entries(body).filter(([key]) => key !== 'messages' && !follows.includes(key)),
      );
    expect(rest(own)).toEqual(rest(plain));
    // The next request is back to the chat's own settings; the line stays in the chat.
    await ask(session, 'Four.');
    const next = bodyOf(await exchange(session, 'Third.'));
    expect({ ...next, messages: [] }).toEqual({ ...plain, messages: [] });
    expect(await session.lines()).toContain(command);
  });

  it('holds for the follow-ups of its turn, not for the next message', async () => {
    const session = await launch({
      key: 'sk-ant-test-key',
      config: '{ parameters = { thinking = "high" } }',
      files: { 'a.txt': 'hello\n' },
      chat: { name: 'turn.chat', lines: ['@You:', '/thinking off', 'Read a.txt.'] },
    });
    expect(bodyOf(await session.send()).thinking).toBeUndefined();
    // The model reads a file (approved by the default policy); autopilot sends the result.
    await session.reply('Reading.', [{ id: 'toolu_A', name: 'read', input: { path: 'a.txt' } }]);
    const follow = bodyOf(await session.request());
    expect(JSON.stringify(follow.messages.at(-1)?.content)).toContain('tool_result');
    expect(follow.thinking).toBeUndefined();
    await session.replyAndWait('It says hello.');
    await ask(session, 'Thanks.');
    expect(bodyOf(await exchange(session, 'Welcome.')).thinking).toBeDefined();
  });

  it('/tools -bash leaves bash out of that request only', async () => {
    const session = await start('tools.chat', ['@You:', '/tools -bash', 'List files.']);
    const own = await exchange(session, 'No bash.');
    expect(toolNames(own)).not.toContain('bash');
    expect(toolNames(own)).toContain('read');
    await ask(session, 'Again.');
    expect(toolNames(await exchange(session, 'Bash again.'))).toContain('bash');
  });
});

describe('a command registered in Lua', () => {
  it('rewrites its line, in the message sent and in later requests alike', async () => {
    const message = ['/pirate treasure', 'Where is it?', '/shout now'];
    const session = await start('pirate.chat', ['@You:', ...message]);
    const request = await exchange(session, 'Arr.');
    const text = 'Answer as a pirate, about treasure.\nWhere is it?\nSAY IT LOUD: now';
    expect(anthropicMessages(request).at(-1)?.content).toEqual([{ type: 'text', text }]);
    await ask(session, 'More.');
    const next = await exchange(session, 'Arr arr.');
    expect(anthropicMessages(next)[0]?.content).toEqual([{ type: 'text', text }]);
  });
});

describe('an unknown command', () => {
  it('is a diagnostic on its line, and <C-]> sends nothing', async () => {
    const session = await start('unknown.chat', ['@You:', 'Hello.', '/thinkin off']);
    const { d, f, buf } = session;
    await d.waitUntil(`return #vim.diagnostic.get(${String(buf)}, { lnum = 2 }) > 0`);
    const [diagnostic] = await d.lua<{ message: string }[]>(
      `return vim.diagnostic.get(${String(buf)}, { lnum = 2 })`,
    );
    expect(diagnostic?.message).toBe('unknown slash command /thinkin (did you mean /thinking?)');
    await d.press('<C-]>');
    const note = await d.waitForNotification(/Nothing sent/);
    expect(note.message).toContain('line 3: unknown slash command /thinkin');
    const seen = d.notifications().length;
    await d.press(':Flemma send<CR>');
    await d.waitForNotification(/Nothing sent/, { after: seen });
    expect(f.requests).toHaveLength(0);
  });
});

describe('a short name two commands have', () => {
  it('is a diagnostic listing both, and <C-]> sends nothing', async () => {
    const session = await start('ambiguous.chat', ['@You:', '/compact', 'Hi.']);
    const { d, f, buf } = session;
    await d.lua('require("flemma.slash").register("compact", { rewrite = "Be brief." })');
    // The diagnostics follow the next edit.
    await d.lua(`vim.api.nvim_buf_set_lines(${String(buf)}, -1, -1, false, { "" })`);
    await d.waitUntil(`return #vim.diagnostic.get(${String(buf)}, { lnum = 1 }) > 0`);
    const [diagnostic] = await d.lua<{ message: string }[]>(
      `return vim.diagnostic.get(${String(buf)}, { lnum = 1 })`,
    );
    expect(diagnostic?.message).toBe('/compact is ambiguous: /flemma:compact, /user:compact');
    await d.press('<C-]>');
    expect((await d.waitForNotification(/Nothing sent/)).message).toContain('is ambiguous');
    expect(f.requests).toHaveLength(0);
  });
});

describe('an untrusted chat', () => {
  it('gets no option that needs trust through a slash command', async () => {
    const session = await start('shared.chat', ['@You:', '/endpoint', 'Hi.']);
    const { d, f } = session;
    await d.press('<C-]>');
    const note = await d.waitForNotification(/Nothing sent/);
    expect(note.message).toBe(
      'Flemma: Nothing sent: line 2: flemma.opt.parameters.anthropic.base_url is not applied: this chat file is not trusted (:trust applies it)',
    );
    expect(f.requests).toHaveLength(0);
  });
});

describe('an action command', () => {
  it('/compact leaves the chat as one undo step and runs :Flemma compact', async () => {
    const session = await start('long.chat', ['@You:', 'One.']);
    const { d } = session;
    await exchange(session, 'First.');
    const before = await session.lines();
    await ask(session, '/compact');
    await d.press('<C-]>');
    const request = await session.request();
    // The summary's request, not the chat's: its last message asks for the summary.
    expect(anthropicMessages(request).at(-1)?.content).toEqual([
      { type: 'text', text: DEFAULT_COMPACT_PROMPT },
    ]);
    await session.reply('We said hello.');
    const finished = await d.waitForEvent('FlemmaCompactFinished');
    expect(finished.data).toMatchObject({ bufnr: session.buf, status: 'completed' });
    // The command's line left the chat, and `u` brings it back.
    const old = String(session.buf);
    expect(await d.lua(`return vim.api.nvim_buf_get_lines(${old}, 0, -1, false)`)).toEqual(before);
    await d.lua(`vim.api.nvim_buf_call(${old}, function() vim.cmd("undo") end)`);
    expect(await d.lua(`return vim.api.nvim_buf_get_lines(${old}, 0, -1, false)`)).toEqual([
      ...before,
      '/compact',
    ]);
  });

  it('names a :Flemma command that does not exist: an error, and nothing is sent', async () => {
    const session = await start('gone.chat', ['@You:', 'Hi.', '/gone']);
    await session.d.press('<C-]>');
    const note = await session.d.waitForNotification(/does not exist/);
    expect(note.message).toBe('Flemma: /gone: :Flemma nowhere does not exist here; nothing sent');
    expect(session.f.requests).toHaveLength(0);
    expect(await session.lines()).toContain('/gone');
  });

  it('/retry asks again and puts the new reply in place of the last one', async () => {
    const session = await start('retry.chat', ['@You:', 'Say hello.']);
    const original = await exchange(session, 'First try.');
    await ask(session, '/retry');
    const again = await session.send();
    expect(again.body).toEqual(original.body);
    await session.replyAndWait('Second try.');
    const lines = await session.lines();
    expect(lines).toContain('Second try.');
    expect(lines).not.toContain('First try.');
    expect(lines).not.toContain('/retry');
  });

  it('/fork opens a new chat holding the conversation up to its message, and sends nothing', async () => {
    const session = await start('fork.chat', ['@You:', 'Hi.']);
    await exchange(session, 'Hello.');
    await ask(session, 'Branch here.', '/fork');
    await session.d.press('<C-]>');
    await session.d.waitUntil('return vim.fn.expand("%:t") == "fork.fork-1.chat"');
    const fork = await session.d.lua<string[]>(
      'return vim.api.nvim_buf_get_lines(0, 0, -1, false)',
    );
    expect(fork.slice(0, 5)).toEqual(['@You:', 'Hi.', '', '@Assistant:', 'Hello.']);
    expect(fork).toContain('Branch here.');
    expect(fork).not.toContain('/fork');
    expect(session.f.requests).toHaveLength(1);
  });
});

describe('/model', () => {
  it.each([
    ['claude-haiku-4-5', { model: 'claude-haiku-4-5' }],
    ['gpt-5.4', { provider: 'openai', model: 'gpt-5.4' }],
    ['openai/gpt-5.4', { provider: 'openai', model: 'gpt-5.4' }],
    ['my-own-model', { model: 'my-own-model' }],
  ])('%s: the options it sets', async (args, expected) => {
    const session = await start('model.chat', ['@You:', '']);
    const ops = await session.d.lua<{ path: string[]; value: unknown }[]>(
      `local r = require("flemma.slash").resolve({ bufnr = ${String(session.buf)},
        commands = { { name = "model", args = ..., line = 2, last = true } } }).results[1]
      return r.ops`,
      args,
    );
    expect(Object.fromEntries(ops.map((op) => [op.path.join('.'), op.value]))).toEqual(expected);
  });
});

describe('register', () => {
  it.each([
    ['"two words", { rewrite = "x" }', "invalid name 'two words'"],
    ['"a:b:c", { rewrite = "x" }', "invalid name 'a:b:c'"],
    ['"flemma:mine", { rewrite = "x" }', 'the flemma: namespace is for the built-in commands'],
    ['"both", { rewrite = "x", options = {} }', "'both' needs one of rewrite, options or action"],
  ])('refuses %s', async (args, message) => {
    const session = await start('register.chat', ['@You:', '']);
    const error = await session.d.lua<string>(
      `local ok, err = pcall(require("flemma.slash").register, ${args}) return tostring(err)`,
    );
    expect(error).toContain(message);
  });
});

describe('completion', () => {
  const complete = (session: Session, line: string): Promise<[unknown[], number]> =>
    session.d.lua(
      `local line = ... local items, col = require("flemma.slash").complete({ bufnr = ${String(session.buf)}, line = line, col = #line }) return { items, col }`,
      line,
    );

  it('offers names, full and short, then the arguments of a known name', async () => {
    const session = await start('complete.chat', ['@You:', '']);
    const [names, start0] = await complete(session, '/thi');
    expect(start0).toBe(0);
    expect(names).toEqual([
      expect.objectContaining({ word: '/thinking', kind: 'options', menu: '[slash]' }),
    ]);
    const [full] = await complete(session, '/flemma:th');
    expect(full).toEqual([expect.objectContaining({ word: '/flemma:thinking' })]);
    const [pirate] = await complete(session, '/pi');
    expect(pirate).toEqual([expect.objectContaining({ word: '/pirate', kind: 'rewrite' })]);
    const [levels, at] = await complete(session, '/thinking h');
    expect(at).toBe(10);
    expect(levels).toEqual([expect.objectContaining({ word: 'high' })]);
    const [tools] = await complete(session, '/tools -ba');
    expect(tools).toEqual([expect.objectContaining({ word: '-bash' })]);
    const [none] = await complete(session, 'text /thi');
    expect(none).toEqual([]);
    // Every command after a bare slash; only full names after a namespace.
    const [all] = (await complete(session, '/')) as [{ word: string }[], number];
    expect(all.map((item) => item.word)).toEqual(
      expect.arrayContaining(['/compact', '/flemma:compact', '/pirate', '/user:pirate']),
    );
    const [spaced] = (await complete(session, '/flemma:')) as [{ word: string }[], number];
    expect(spaced.every((item) => item.word.startsWith('/flemma:'))).toBe(true);
    expect(spaced).toHaveLength(6);
  });
});

describe('highlighting', () => {
  it('draws the name and the arguments of a command line', async () => {
    const session = await launch({
      key: 'sk-ant-test-key',
      setup: 'require("flemma").setup({ turns = { enabled = false } })',
      ui: { width: 80, height: 20 },
      chat: { name: 'drawn.chat', lines: ['@You:', '/thinking off', 'Hi.'] },
    });
    const { d } = session;
    // A colour of their own, so that the screen names them rather than where they link.
    await d.lua(`vim.api.nvim_set_hl(0, "FlemmaSlashCommand", { fg = 0x102030 })
      vim.api.nvim_set_hl(0, "FlemmaSlashArgs", { fg = 0x203040 })`);
    await d.redraw();
    const row = d.screen.find(/^\/thinking off/);
    expect(d.screen.groupsAt(row, 1)).toContain('FlemmaSlashCommand');
    expect(d.screen.groupsAt(row, '/thinking '.length)).toContain('FlemmaSlashArgs');
    expect(d.screen.groupsAt(row + 1, 0)).not.toContain('FlemmaSlashCommand');
  });
});
