// The `task` tool (issue 31, docs/tasks.md): a model delegates work to child chats that run in
// their own files beside the parent, at the same time, and their results come back; `<C-c>` in
// the parent and the spend cap stop them; a child never gets more than its parent.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  anthropicBlocks,
  anthropicReply,
  anthropicStream,
  replyBlocks,
  type ScriptedCall,
} from '../helpers/anthropic-script.js';
import { launcher, MESSAGES, type Session } from '../helpers/e2e.js';
import type { FakeRequest } from '../helpers/fake-provider.js';

const launch = launcher();

/** Tools offered to the parent: the read-only ones, `bash` and `task`, with `task` approved. */
const CONFIG = `{
  tools = { "read", "grep", "find", "ls", "bash", "task", auto_approve = { "$default", "task" } },
  agents = { builder = { description = "Builds things.", tools = { "read", "bash" } } },
}`;

function task(id: string, prompt: string, extra: Record<string, unknown> = {}): ScriptedCall {
  return { id, name: 'task', input: { label: prompt, prompt, agent: null, name: null, ...extra } };
}

/** The text of a request's messages, to tell the parent's requests from each child's. */
function text(request: FakeRequest): string {
  return request.rawBody;
}

/** The names of the tools a request offers. */
function offered(request: FakeRequest): string[] {
  const body = request.body as { tools?: { name: string }[] };
  return (body.tools ?? []).map((tool) => tool.name).sort();
}

/** The next `count` requests to the model, by the word each one's text holds. */
async function requests(s: Session, words: string[]): Promise<Map<string, FakeRequest>> {
  const out = new Map<string, FakeRequest>();
  while (out.size < words.length) {
    const request = await s.f.nextRequest({ path: MESSAGES });
    const word = words.find((w) => !out.has(w) && text(request).includes(w));
    if (word === undefined)
      throw new Error(`an unexpected request: ${text(request).slice(0, 300)}`);
    out.set(word, request);
  }
  return out;
}

/** A task's file, read from the work directory. */
function taskFile(s: Session, name: string): string {
  return readFileSync(join(s.d.home, 'work', 'parent.tasks', name), 'utf8');
}

/** A parent whose `builder` child waits for its `bash` call to be approved (not sandboxed). */
async function childWaiting(): Promise<Session> {
  const s = await launch({
    config: CONFIG.replace('auto_approve =', 'auto_approve_sandboxed = false, auto_approve ='),
  });
  await s.d.command('doautocmd FocusLost');
  await delegate(s, [task('toolu_A', 'Build alpha', { agent: 'builder' })]);
  const [child] = (await requests(s, ['Build alpha'])).values();
  if (child === undefined) throw new Error('no child request');
  const bash = { id: 'toolu_S', name: 'bash', input: { label: 'b', command: 'echo built-ok' } };
  await anthropicReply(child, 'Running.', [{ ...bash, input: { ...bash.input, timeout: null } }]);
  return s;
}

/** The cursor on the line `line` of the buffer `buf`, in the current window. */
async function cursorOn(s: Session, buf: number, line: string): Promise<void> {
  const row = (await s.d.lines(buf)).indexOf(line) + 1;
  expect(row).toBeGreaterThan(0);
  await s.d.command(`buffer ${String(buf)} | ${String(row)}`);
}

/** `<M-CR>` on the line `line` of the buffer `buf`, in its window. */
async function pressRunOn(s: Session, buf: number, line: string): Promise<void> {
  await cursorOn(s, buf, line);
  await s.d.press('<M-CR>');
}

/** A Lua expression: the windows of the first tab, but floating ones (messages, progress). */
const WINDOWS = `vim.tbl_filter(function(win) return vim.api.nvim_win_get_config(win).relative == "" end,
  vim.api.nvim_tabpage_list_wins(vim.api.nvim_list_tabpages()[1]))`;

/** The commands that decide the child's waiting bash, and what the child's model gets then. */
const DECISIONS: [string, { seen: string; answer?: string }][] = [
  ['tool:approve', { seen: 'built-ok' }],
  // Rejected, bash never ran: the child's model got the reason as the call's error result.
  ['tool:reject not now', { seen: '"content":"not now","is_error":true', answer: 'Skipped.' }],
];

/** The child's file, opened in the current window once it waits; its buffer. */
async function openChild(s: Session): Promise<number> {
  await s.d.waitForEvent('FlemmaAttention');
  const child = await s.d.openChat('parent.tasks/01-build-alpha.chat');
  await s.d.waitUntil(
    'return vim.bo[...].filetype == "chat" and #vim.api.nvim_buf_get_lines(..., 0, -1, false) > 5',
    { args: [child] },
  );
  return child;
}

/** The parent's window: its id, its buffer and its cursor. */
async function parentView(
  s: Session,
  win = 0,
): Promise<{ win: number; buf: number; cursor: [number, number] }> {
  return s.d.lua(
    `local win = ... ~= 0 and ... or vim.api.nvim_get_current_win()
    return { win = win, buf = vim.api.nvim_win_get_buf(win), cursor = vim.api.nvim_win_get_cursor(win) }`,
    win,
  );
}

/**
 * `<M-CR>` on the parent's waiting `task` call: the child opens in a second window, where the
 * user goes. The parent's window as it was before (it must stay so).
 */
async function showFromParent(
  s: Session,
): Promise<{ win: number; buf: number; cursor: [number, number] }> {
  await cursorOn(s, s.buf, '**Tool Result:** `toolu_A`');
  const parent = await parentView(s);
  await s.d.press('<M-CR>');
  // In the first tab (a diff opens in a tab of its own).
  await s.d.waitUntil(
    `local wins = ${WINDOWS}
    for _, win in ipairs(wins) do
      local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win))
      if name:find("parent.tasks/01-", 1, true) then return #wins == 2 end
    end
    return false`,
  );
  return parent;
}

/**
 * Decided, the child's next request carries `seen` (approved: what bash printed), its model
 * answers `answer`, and that answer reaches the parent, whose follow-up goes out; `beforeDone`
 * runs while it is at the server, before its reply `Done.` ends the parent's turn.
 */
async function childGoesOn(
  s: Session,
  { seen = 'built-ok', answer = 'Built.', file = '01-build-alpha' } = {},
  beforeDone: () => Promise<void> = () => Promise.resolve(),
): Promise<FakeRequest> {
  const next = await s.f.nextRequest({ path: MESSAGES });
  expect(text(next)).toContain(seen);
  await anthropicReply(next, answer);
  const followUp = await s.f.nextRequest({ path: MESSAGES });
  expect(text(followUp)).toContain(`${answer}\\n\\nThe task's chat: parent.tasks/${file}.chat`);
  await beforeDone();
  await anthropicReply(followUp, 'Done.');
  return next;
}

async function delegate(s: Session, calls: ScriptedCall[], chat = ['@You:', 'Delegate.']) {
  await s.open('parent.chat', chat);
  await s.send();
  await s.reply('Delegating.', calls);
}

describe('the task tool', () => {
  it('two tasks in one reply run at once in their own files; the follow-up has both results', async () => {
    const s = await launch({ config: CONFIG });
    await delegate(s, [
      task('toolu_A', 'Find alpha in the code', { name: 'find alpha' }),
      task('toolu_B', 'Find beta in the code'),
    ]);
    // Both children's first requests are at the server before either is answered.
    const children = await requests(s, ['Find alpha', 'Find beta']);
    const alpha = children.get('Find alpha');
    const beta = children.get('Find beta');
    if (alpha === undefined || beta === undefined) throw new Error('no child requests');
    expect(offered(alpha)).toEqual(['find', 'grep', 'ls', 'read']);
    expect(text(alpha)).not.toContain('Delegate.');
    await anthropicReply(beta, 'Beta is in b.ts.');
    await anthropicReply(alpha, 'Alpha is in a.ts.');
    const followUp = await s.f.nextRequest({ path: MESSAGES });
    expect(text(followUp)).toContain('Alpha is in a.ts.');
    expect(text(followUp)).toContain('Beta is in b.ts.');
    expect(text(followUp)).toContain("The task's chat: parent.tasks/01-find-alpha.chat");
    expect(text(followUp)).toContain("The task's chat: parent.tasks/02-find-beta-in-the.chat");
    await anthropicReply(followUp, 'Both found.');
    await s.d.waitForEvent('FlemmaRequestFinished', {
      match: (event) => event.data['bufnr'] === s.buf,
    });
    const child = taskFile(s, '01-find-alpha.chat');
    expect(child).toContain('"agent": "explorer"');
    expect(child).toContain('"parent": "../parent.chat"');
    expect(child).toContain('@You:\nFind alpha in the code');
    expect(child).toContain('@Assistant:\nAlpha is in a.ts.');
    expect(taskFile(s, '02-find-beta-in-the.chat')).toContain('Beta is in b.ts.');
  });

  it('two tasks at once, one waiting for an approval the user gives from the parent: both results come back and the follow-up goes out', async () => {
    const s = await launch({
      config: CONFIG.replace('auto_approve =', 'auto_approve_sandboxed = false, auto_approve ='),
    });
    await s.d.command('doautocmd FocusLost');
    await delegate(s, [
      task('toolu_A', 'Build alpha', { agent: 'builder' }),
      task('toolu_B', 'Find beta in the code'),
    ]);
    const children = await requests(s, ['Build alpha', 'Find beta']);
    const alpha = children.get('Build alpha');
    const beta = children.get('Find beta');
    if (alpha === undefined || beta === undefined) throw new Error('no child requests');
    const bash = { label: 'b', command: 'echo built-ok', timeout: null };
    await anthropicReply(alpha, 'Running.', [{ id: 'toolu_S', name: 'bash', input: bash }]);
    await anthropicReply(beta, 'Beta is in b.ts.');
    // The builder's bash waits: the user is called and approves it from the parent.
    await s.d.waitForEvent('FlemmaAttention');
    expect(taskFile(s, '01-build-alpha.chat')).toContain('status=pending');
    await cursorOn(s, s.buf, '**Tool Result:** `toolu_A`');
    await s.d.command('Flemma tool:approve');
    const next = await s.f.nextRequest({ path: MESSAGES });
    expect(text(next)).toContain('built-ok');
    await anthropicReply(next, 'Built.');
    const followUp = await s.f.nextRequest({ path: MESSAGES });
    expect(text(followUp)).toContain(
      "Built.\\n\\nThe task's chat: parent.tasks/01-build-alpha.chat",
    );
    expect(text(followUp)).toContain(
      "Beta is in b.ts.\\n\\nThe task's chat: parent.tasks/02-find-beta-in-the.chat",
    );
    await anthropicReply(followUp, 'Both done.');
    await s.d.waitForEvent('FlemmaRequestFinished', {
      match: (event) => event.data['bufnr'] === s.buf,
    });
    expect(taskFile(s, '01-build-alpha.chat')).toContain('@Assistant:\nBuilt.');
  });

  it('<C-c> in the parent cancels its running children; their files keep the partial reply', async () => {
    const s = await launch({ config: CONFIG });
    await delegate(s, [task('toolu_A', 'Find alpha'), task('toolu_B', 'Find beta')]);
    const children = await requests(s, ['Find alpha', 'Find beta']);
    const streams = await Promise.all(
      [...children.values()].map(async (request) => {
        const stream = await anthropicStream(request);
        await stream.text('Looking');
        return stream;
      }),
    );
    expect(streams).toHaveLength(2);
    // Both children have their text before the cancel (it reaches their files as it streams).
    for (const name of ['01-find-alpha.chat', '02-find-beta.chat']) {
      await s.d.waitUntil(
        'local path = ... return vim.uv.fs_stat(path) ~= nil and table.concat(vim.fn.readfile(path), "\\n"):find("Looking", 1, true) ~= nil',
        { args: [join(s.d.home, 'work', 'parent.tasks', name)] },
      );
    }
    const after = s.d.eventCount;
    await s.d.command(`call win_gotoid(bufwinid(${String(s.buf)}))`);
    await s.d.press('<C-c>');
    await s.toolResult('toolu_A', after);
    await s.toolResult('toolu_B', after);
    const lines = (await s.lines()).join('\n');
    for (const file of ['01-find-alpha', '02-find-beta']) {
      expect(lines).toContain(`Partial output:\nThe task's chat: parent.tasks/${file}.chat`);
    }
    for (const name of ['01-find-alpha.chat', '02-find-beta.chat']) {
      // The child's run stops after the call's result: its file gets the marker then.
      await s.d.waitUntil(
        'return table.concat(vim.fn.readfile(...), "\\n"):find("flemma:aborted", 1, true) ~= nil',
        { args: [join(s.d.home, 'work', 'parent.tasks', name)] },
      );
      const child = taskFile(s, name);
      expect(child).toContain('Looking');
      expect(child).toMatch(/<!-- flemma:aborted/);
    }
  });

  it('the spend cap stops a child: its result says so and names its file', async () => {
    const s = await launch({
      config: CONFIG.replace('agents =', 'limits = { max_session_cost = 0.01 },\n  agents ='),
    });
    await delegate(s, [task('toolu_A', 'Find alpha')]);
    const [child] = (await requests(s, ['Find alpha'])).values();
    if (child === undefined) throw new Error('no child request');
    const after = s.d.eventCount;
    // A reply that costs far more than the cap, asking for a tool: the child goes no further.
    const read = { id: 'toolu_R', name: 'read', input: { label: 'r', path: 'x' } };
    await anthropicBlocks(child, replyBlocks('Reading.', [read]), { input: 200000, output: 10 });
    await s.toolResult('toolu_A', after);
    const lines = (await s.lines()).join('\n');
    expect(lines).toContain('The task stopped at its spending limit');
    expect(lines).toContain('parent.tasks/01-find-alpha.chat');
  });

  it('a child of an untrusted chat gets no more than the chat: no bash when the chat removed it', async () => {
    const s = await launch({ config: CONFIG });
    // Opened from disk, so not trusted: removing a tool applies in any file, defining a profile
    // (one that would bring bash back) does not.
    const options = {
      tools: { $remove: ['bash'] },
      agents: { evil: { description: 'Evil.', tools: ['bash'] } },
    };
    await delegate(
      s,
      [task('toolu_A', 'Build alpha', { agent: 'builder' })],
      ['```json', JSON.stringify({ flemma: options }), '```', '@You:', 'Delegate.'],
    );
    const [child] = (await requests(s, ['Build alpha'])).values();
    if (child === undefined) throw new Error('no child request');
    expect(s.f.requests[0]?.rawBody).not.toContain('- evil:');
    expect(offered(child)).toEqual(['read']);
    expect(taskFile(s, '01-build-alpha.chat')).toContain('"$set": [\n        "read"\n      ]');
    await anthropicReply(child, 'Built.');
    await s.toolResult('toolu_A');
    expect(existsSync(join(s.d.home, 'work', 'parent.tasks', '01-build-alpha.chat'))).toBe(true);
  });

  it('a child’s call that needs approval: the parent’s preview says so, the user is called, <M-CR> on the task shows the call, approved there it goes on', async () => {
    const s = await childWaiting();
    const attention = await s.d.waitForEvent('FlemmaAttention');
    expect(attention.data).toMatchObject({ reason: 'approval', bufnr: s.buf });
    await s.d.command('doautocmd FocusGained');
    const marks = await s.d.waitForExtmarks('flemma_tool_preview', {
      bufnr: s.buf,
      until: 'vim.inspect(marks):find(value, 1, true) ~= nil',
      value: 'task: waiting for approval: bash (<M-CR> shows it) · turn 1',
    });
    expect(marks.length).toBeGreaterThan(0);
    // The child's file holds the call waiting, and the parent's call still runs.
    expect(taskFile(s, '01-build-alpha.chat')).toContain('status=pending');
    const sent = s.f.requests.length;
    const parent = await showFromParent(s);
    // The child's call is on screen, under the cursor, its preview drawn; nothing ran.
    const child = await s.d.lua<number>('return vim.api.nvim_get_current_buf()');
    expect(await s.d.lua('return vim.api.nvim_get_current_line()')).toBe(
      '**Tool Result:** `toolu_S`',
    );
    await s.d.waitForExtmarks('flemma_tool_preview', {
      bufnr: child,
      until: 'vim.inspect(marks):find(value, 1, true) ~= nil',
      value: 'echo built-ok',
    });
    expect(taskFile(s, '01-build-alpha.chat')).toContain('status=pending');
    expect(s.f.requests.length).toBe(sent);
    expect(await parentView(s, parent.win)).toEqual(parent);
    await s.d.press('<M-CR>');
    await childGoesOn(s);
  });

  it.each([
    ['ga', 'ga', '', { seen: 'toolu_W', answer: 'Written.', file: '01-write-alpha' }, 'alpha\n'],
    // The proposal edited: the child's call is what was approved, and its file records it.
    [
      'ga, the proposal edited',
      'ga',
      'normal! ccbeta',
      { seen: '"content":"beta\\n"', answer: 'Ok.', file: '01-write-alpha' },
      'beta\n',
    ],
    [
      'gr',
      'gr',
      '',
      { seen: '"content":"not there","is_error":true', answer: 'Gave up.', file: '01-write-alpha' },
      undefined,
    ],
  ])(
    'a child’s waiting write: <M-CR> on the task opens its diff too, and deciding there (%s) lets the child go on',
    async (_, key, edit, outcome, written) => {
      const s = await launch({
        config: CONFIG.replace('"bash", "task"', '"bash", "write", "task"')
          .replace('"$default"', '"$readonly"')
          .replace(
            'agents = {',
            'agents = { writer = { description = "W.", tools = { "write" } },',
          ),
      });
      await s.d.command('doautocmd FocusLost');
      await delegate(s, [task('toolu_A', 'Write alpha', { agent: 'writer' })]);
      const [child] = (await requests(s, ['Write alpha'])).values();
      if (child === undefined) throw new Error('no child request');
      const input = { label: 'w', path: 'alpha.txt', content: 'alpha\n' };
      await anthropicReply(child, 'Writing.', [{ id: 'toolu_W', name: 'write', input }]);
      await s.d.waitForEvent('FlemmaAttention');
      const parent = await showFromParent(s);
      // The diff of the waiting call, in its own tab, with its keys; the child's window behind it.
      await s.d.waitUntil(
        'return vim.api.nvim_buf_get_name(0):find("flemma://proposed/alpha.txt", 1, true) ~= nil',
      );
      expect(await s.d.lua('return vim.api.nvim_get_current_line()')).toBe('alpha');
      expect(await s.d.lua('return #vim.api.nvim_list_tabpages()')).toBe(2);
      expect(taskFile(s, '01-write-alpha.chat')).toContain('status=pending');
      await s.d.lua('vim.ui.input = function(_, answer) answer("not there") end');
      if (edit !== '') await s.d.command(edit);
      await s.d.press(key);
      // Until the parent's turn is over its window stays as it was; then (the parent's <M-CR>
      // started that turn) its cursor goes to the empty line under the `@You:` at the end.
      await childGoesOn(s, outcome, async () => {
        expect(await parentView(s, parent.win)).toEqual(parent);
      });
      await s.d.waitUntil(
        `local win = ...
        local buf = vim.api.nvim_win_get_buf(win)
        local last = vim.api.nvim_buf_line_count(buf)
        return vim.api.nvim_win_get_cursor(win)[1] == last
          and vim.api.nvim_buf_get_lines(buf, last - 2, last, false)[1] == "@You:"`,
        { args: [parent.win] },
      );
      const path = join(s.d.home, 'work', 'parent.tasks', 'alpha.txt');
      expect(existsSync(path) ? readFileSync(path, 'utf8') : undefined).toBe(written);
    },
  );

  it.each(DECISIONS)(
    ':Flemma %s on the task decides the child’s waiting call from the parent, showing nothing',
    async (command, outcome) => {
      const s = await childWaiting();
      await s.d.waitForEvent('FlemmaAttention');
      await cursorOn(s, s.buf, '**Tool Result:** `toolu_A`');
      await s.d.command(`Flemma ${command}`);
      await childGoesOn(s, outcome);
      expect(await s.d.lua(`return #(${WINDOWS})`)).toBe(1);
    },
  );

  it('a child’s call that needs approval is approved with <M-CR> in the child’s own buffer too', async () => {
    const s = await childWaiting();
    const child = await openChild(s);
    await pressRunOn(s, child, '**Tool Result:** `toolu_S`');
    await childGoesOn(s);
  });

  it.each(DECISIONS)(
    ':Flemma %s in the child’s own buffer decides its call; the buffer is left as it was, the task goes on',
    async (command, outcome) => {
      const s = await childWaiting();
      const child = await openChild(s);
      await cursorOn(s, child, '**Tool Result:** `toolu_S`');
      await s.d.command(`Flemma ${command}`);
      await childGoesOn(s, outcome);
      // The decision went to the child's file, not into its buffer: nothing unsaved there.
      expect(await s.d.lua('return vim.bo[...].modified', child)).toBe(false);
    },
  );

  it('reads the project’s profiles only when the user opted in, and never lets one choose a provider', async () => {
    const files = {
      '.flemma/agents/summ.chat': [
        '```json',
        '{ "description": "Summarises a module.", "tools": ["read"] }',
        '```',
        '@System:',
        'You summarise code.',
      ].join('\n'),
      '.flemma/agents/away.chat': '```json\n{ "description": "x", "provider": "openai" }\n```\n',
    };
    const description = async (s: Session): Promise<string> => {
      const request = await s.send();
      const body = request.body as { tools: { name: string; description: string }[] };
      await s.reply('Hello.');
      return body.tools.find((tool) => tool.name === 'task')?.description ?? '';
    };
    const closed = await launch({ config: CONFIG, files });
    await closed.open('parent.chat', ['@You:', 'Hi.']);
    expect(await description(closed)).not.toContain('- summ:');
    const opted = await launch({
      config: CONFIG.replace('tools = {', 'tools = { task = { project_agents = true },'),
      files,
    });
    await delegate(opted, [task('toolu_A', 'Summarise alpha', { agent: 'summ' })]);
    const [child] = (await requests(opted, ['Summarise alpha'])).values();
    if (child === undefined) throw new Error('no child request');
    expect(text(child)).toContain('You summarise code.');
    expect(offered(child)).toEqual(['read']);
    // The parent was offered it; the file that chose a provider was left out.
    const first = opted.f.requests[0]?.rawBody ?? '';
    expect(first).toContain('- summ: Summarises a module.');
    expect(first).not.toContain('- away:');
    await anthropicReply(child, 'Summarised.');
    await opted.toolResult('toolu_A');
    expect((await opted.lines()).join('\n')).toContain('Summarised.');
  });

  it('offers the chat’s profiles in the task tool’s description and schema', async () => {
    const s = await launch({ config: CONFIG });
    await s.open('parent.chat', ['@You:', 'Hi.']);
    const request = await s.send();
    const body = request.body as {
      tools: { name: string; description: string; input_schema: Record<string, unknown> }[];
    };
    const tool = body.tools.find((entry) => entry.name === 'task');
    expect(tool?.description).toContain('- builder: Builds things.');
    expect(tool?.description).toContain('- explorer: Reads and searches the project');
    expect(JSON.stringify(tool?.input_schema)).toContain('"enum":["builder","explorer",null]');
    await s.reply('Hello.');
  });
});
