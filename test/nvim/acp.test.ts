// Agents of the Agent Client Protocol as a chat's provider (docs/agents.md), against the fake agent
// built with the SDK's agent side (test/helpers/fake-acp-agent.mjs): a streamed turn in the buffer,
// the process ended with the buffer, a crash, cancel, an untrusted chat that cannot start one.
import { describe, expect, it } from 'vitest';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { launch as launchOnce, launcher } from '../helpers/e2e.js';
import {
  type FakeAgent,
  type Step,
  agentConfig,
  fakeAgent,
  say,
  think,
} from '../helpers/fake-acp.js';
import type { UserEvent } from '../helpers/driver.js';
import { isAlive, waitForExit } from '../helpers/processes.js';
import { tempDirs } from '../helpers/temp.js';
import { usageBar } from '../helpers/usage.js';

const temp = tempDirs();
const launch = launcher();

type Session = Awaited<ReturnType<typeof launchOnce>>;

/** A fake agent with `script` and a session whose chat is `chat`, set up to talk to it. */
async function agentChat(
  script: Record<string, unknown>,
  chat: string[],
  options: { extra?: string; files?: Record<string, string> } = {},
): Promise<{ t: Session; agent: FakeAgent }> {
  const agent = fakeAgent(temp('flemma-acp-'), script);
  const t = await launch({
    provider: false,
    config: agentConfig(agent, options.extra),
    ...(options.files === undefined ? {} : { files: options.files }),
    chat,
  });
  return { t, agent };
}

/** `:Flemma send`, and the reply's end (`FlemmaRequestFinished`). */
async function sendAndWait(t: Session): Promise<UserEvent> {
  const after = t.d.eventCount;
  await t.d.command('Flemma send');
  return t.d.waitForEvent('FlemmaRequestFinished', { after });
}

/** The chat's last line (the empty one under `@You:`) becomes `text`. */
async function writeLast(t: Session, text: string): Promise<void> {
  await t.d.lua('vim.api.nvim_buf_set_lines(0, -2, -1, false, { ... })', text);
}

const TURN = [
  think('The user wants a file read.'),
  say('Reading it'),
  say(' now.'),
  {
    update: {
      sessionUpdate: 'plan',
      entries: [
        { content: 'Read the notes', priority: 'high', status: 'in_progress' },
        { content: 'Fix the typo', priority: 'medium', status: 'pending' },
      ],
    },
  },
  {
    update: {
      sessionUpdate: 'tool_call',
      toolCallId: 'call_1',
      title: 'Read notes.txt',
      kind: 'read',
      status: 'pending',
    },
  },
  {
    update: {
      sessionUpdate: 'tool_call_update',
      toolCallId: 'call_1',
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text: 'teh milk' } }],
    },
  },
  {
    update: {
      sessionUpdate: 'tool_call',
      toolCallId: 'call_2',
      title: 'Edit notes.txt',
      kind: 'edit',
      status: 'in_progress',
    },
  },
  {
    update: {
      sessionUpdate: 'tool_call_update',
      toolCallId: 'call_2',
      status: 'completed',
      content: [{ type: 'diff', path: 'notes.txt', oldText: 'teh milk', newText: 'the milk' }],
    },
  },
  say('Done.'),
];

describe('an ACP agent as the provider', () => {
  it('streams a turn into the reply: thinking, text, the plan, two tool calls and their results', async () => {
    const { t, agent } = await agentChat({ turns: [{ steps: TURN }] }, ['@You:', 'Fix my notes.']);
    const finished = await sendAndWait(t);
    expect(finished.data).toMatchObject({ status: 'completed' });
    expect(await t.lines()).toEqual([
      '@You:',
      'Fix my notes.',
      '',
      '@Assistant:',
      '',
      '<thinking>',
      'The user wants a file read.',
      '</thinking>',
      '',
      'Reading it now.',
      '',
      '**Plan:**',
      '',
      '- [~] Read the notes',
      '- [ ] Fix the typo',
      '',
      '**Agent Tool:** `read` (`call_1`) Read notes.txt',
      '',
      '**Agent Result:** `call_1` (completed)',
      '',
      '```',
      'teh milk',
      '```',
      '',
      '**Agent Tool:** `edit` (`call_2`) Edit notes.txt',
      '',
      '**Agent Result:** `call_2` (completed)',
      '',
      '```diff',
      '--- a/notes.txt',
      '+++ b/notes.txt',
      '@@ -1,1 +1,1 @@',
      '-teh milk',
      '+the milk',
      '```',
      '',
      'Done.',
      '',
      '@You:',
      '',
    ]);
    expect(agent.events('prompt')).toMatchObject([{ text: 'Fix my notes.' }]);
    // The agent's tool calls are not ours: nothing waits for approval, nothing ran.
    expect(t.d.eventsSeen('FlemmaApprovalNeeded')).toHaveLength(0);
  });
});

/** The pid the fake agent logged when it started (the `n`th start). */
async function agentPid(agent: FakeAgent, n = 0): Promise<number> {
  await expect.poll(() => agent.events('started').length).toBeGreaterThan(n);
  return agent.events('started')[n]?.['pid'] as number;
}

describe('the agent process', () => {
  it('gets the credentials its env names through the credential chain; one not found is said, and nothing starts', async () => {
    const agent = fakeAgent(temp('flemma-acp-env-'), {});
    const entry = agent.entry.replace(
      / \}$/,
      ', env = { FAKE_AGENT_ENV = "${secret:token:fakeagent}" } }',
    );
    const t = await launch({
      provider: false,
      config: agentConfig(agent).replace(agent.entry, entry),
      chat: ['@You:', 'One.'],
    });
    // Not found: the send fails before the agent starts, naming the setting and the reference.
    await sendAndWait(t);
    const missing = await t.d.waitForNotification(/acp\.agents\.fake\.env\.FAKE_AGENT_ENV/);
    expect(missing.message).toContain('no credential token for fakeagent was found');
    expect(agent.events('started')).toEqual([]);
    // Found (here in Neovim's environment, as `{SERVICE}_{KIND}`): the agent gets it.
    await t.d.lua('vim.env.FAKEAGENT_TOKEN = "tok-4c9e1f"');
    await sendAndWait(t);
    expect(agent.events('started')).toMatchObject([{ env: 'tok-4c9e1f' }]);
    const log = readFileSync(join(t.d.home, 'state', 'nvim', 'flemma.log'), 'utf8');
    expect(log).not.toContain('tok-4c9e1f');
  });

  it('is started on the first send, kept for the next, and ends when the buffer is wiped', async () => {
    const { t, agent } = await agentChat({}, ['@You:', 'One.']);
    expect(agent.events('started')).toHaveLength(0);
    await sendAndWait(t);
    await writeLast(t, 'Two.');
    await sendAndWait(t);
    expect(agent.events('started')).toHaveLength(1);
    expect(agent.events('prompt').map((e) => e['text'])).toEqual(['One.', 'Two.']);
    const pid = await agentPid(agent);
    expect(isAlive(pid)).toBe(true);
    await t.d.command('bwipeout!');
    await waitForExit(pid);
  });

  it('ends when Neovim quits: no orphan', async () => {
    const { t, agent } = await agentChat({}, ['@You:', 'One.']);
    await sendAndWait(t);
    const pid = await agentPid(agent);
    await t.close();
    await waitForExit(pid);
  });

  it('a crash keeps the partial reply with the aborted marker, says so, and the next send starts a new one', async () => {
    const { t, agent } = await agentChat(
      { turns: [{ match: 'crash', steps: [say('Half a repl'), { crash: 7 }] }] },
      ['@You:', 'Please crash.'],
    );
    const finished = await sendAndWait(t);
    expect(finished.data).toMatchObject({ status: 'errored' });
    const message = await t.d.waitForNotification(/exit code 7/);
    expect(message.message).toContain('a new one starts on the next send');
    const lines = await t.lines();
    expect(lines).toContain('Half a repl');
    expect(lines.find((line) => line.startsWith('<!-- flemma:aborted:'))).toMatch(/exit code 7/);
    await writeLast(t, 'Again.');
    await sendAndWait(t);
    expect(agent.events('started')).toHaveLength(2);
    expect((await t.lines()).slice(-4)).toEqual(['OK', '', '@You:', '']);
    // The new session got the chat so far as context, in the one message it was sent.
    expect(agent.events('prompt')[1]?.['text']).toMatch(
      /^This conversation started in an earlier session[\s\S]*User: Please crash\.[\s\S]*Again\.$/,
    );
  });

  it('<C-c> sends session/cancel and ends the reply as interrupted', async () => {
    const { t, agent } = await agentChat(
      { turns: [{ steps: [say('Working on it'), { waitCancel: true }] }] },
      ['@You:', 'Go.'],
    );
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    await t.d.waitUntil(
      'return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), "Working on it")',
    );
    await t.d.press('<C-c>');
    const finished = await t.d.waitForEvent('FlemmaRequestFinished', { after });
    expect(finished.data).toMatchObject({ status: 'cancelled' });
    await expect.poll(() => agent.events('cancel')).toHaveLength(1);
    expect(await t.lines()).toContain('<!-- flemma:aborted: Response interrupted by the user. -->');
  });
});

describe('what an agent chat does not do', () => {
  it(':Flemma compact says the agent keeps its own context, and sends it nothing', async () => {
    const { t, agent } = await agentChat({}, ['@You:', 'One.']);
    await sendAndWait(t);
    await t.d.command('Flemma compact');
    await t.d.waitForNotification(/an agent keeps its own context/);
    expect(agent.events('prompt')).toHaveLength(1);
  });
});

describe('trust', () => {
  it('a chat that is not trusted cannot start an agent: its provider and agent are refused', async () => {
    const agent = fakeAgent(temp('flemma-acp-untrusted-'), {});
    // The user's setup has the agent, but uses another provider.
    const config = `{ provider = "anthropic", acp = { agents = { fake = ${agent.entry} } } }`;
    const t = await launch({
      provider: false,
      config,
      chat: [
        '```json',
        '{ "flemma": { "provider": "acp", "parameters": { "acp": { "agent": "fake" } } } }',
        '```',
        '@You:',
        'Hello.',
      ],
    });
    await t.d.command('Flemma send');
    const message = await t.d.waitForNotification(/may not start an agent/);
    expect(message.message).toContain('review it, then :trust');
    expect(agent.events('started')).toHaveLength(0);
  });
});

/** A permission request of the fake agent for a call of `kind`. */
function asks(id: string, kind: string, fields: Record<string, unknown>): Step {
  return { permission: permissionCall(id, kind, fields) };
}

function permissionCall(
  id: string,
  kind: string,
  fields: Record<string, unknown>,
): Record<string, unknown> {
  return { toolCall: { toolCallId: id, title: `${kind} ${id}`, kind, ...fields } };
}

/** The placeholder of request `id` (of `kind`, titled as `asks` titles it) with fence `status`. */
function placeholder(id: string, kind: string, status: string): string {
  return [
    `**Agent Permission:** \`${id}\` ${kind}: ${kind} ${id}`,
    '',
    `\`\`\`flemma:tool ${status}`,
    '```',
  ].join('\n');
}

/** Waits until the chat shows `text` (whole lines). */
async function waitForText(t: Session, text: string): Promise<void> {
  await t.d.waitUntil(
    'return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\\n"):find(..., 1, true) ~= nil',
    { args: [text] },
  );
}

/** The outcome the agent logged for each request, by its call id. */
function outcomes(agent: FakeAgent): Record<string, unknown> {
  return Object.fromEntries(
    agent
      .events('permission')
      .map((e): [string, unknown] => [String(e['toolCallId']), e['outcome']]),
  );
}

/** The permission placeholders the scan finds in the chat: id and status. */
async function scanned(t: Session): Promise<{ id: string; status: string }[]> {
  return t.d.lua(`local out = {}
    for _, b in ipairs(require("flemma.ui").read(0).blocks) do
      if b.kind == "permission" then out[#out + 1] = { id = b.id, status = b.status } end
    end
    return out`);
}

/** Moves the cursor into the placeholder of `id`. */
async function cursorOn(t: Session, id: string): Promise<void> {
  const row = (await t.lines()).findIndex((line) =>
    line.startsWith(`**Agent Permission:** \`${id}\``),
  );
  await t.d.lua('vim.api.nvim_win_set_cursor(0, { ..., 0 })', row + 3);
}

const LS = asks('ls_1', 'execute', { rawInput: { command: 'ls' } });
const LS2 = asks('ls_2', 'execute', { rawInput: { command: 'ls -a' } });

describe('the agent’s permission requests', () => {
  it('are judged by the approval chain (a preset approves, a preset’s deny refuses); the rest wait as placeholders the user answers with <M-CR> and the approve/reject commands', async () => {
    const { t, agent } = await agentChat(
      {
        turns: [
          {
            steps: [
              asks('edit_1', 'edit', { locations: [{ path: 'notes.txt' }] }),
              asks('fetch_1', 'fetch', { rawInput: { url: 'https://example.test/' } }),
              asks('rm_1', 'execute', { rawInput: { command: 'rm -rf build' } }),
              LS,
              asks('env_1', 'edit', { locations: [{ path: '.env' }] }),
              say('Asked.'),
            ],
          },
        ],
      },
      ['@You:', 'Tidy up.'],
      {
        extra: `tools = {
          bash = { deny = { "rm *" } },
          presets = { ["$nofetch"] = { deny = { "web_fetch" } } },
          auto_approve = { "$default", "$nofetch" },
        }`,
        files: { 'notes.txt': 'teh milk\n' },
      },
    );
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    // `tools.bash.deny`: never approved automatically; the user rejects it.
    await t.d.waitForNotification(
      /fake asks: execute: execute rm_1 \(<M-CR> or :Flemma tool:approve/,
    );
    await waitForText(t, placeholder('rm_1', 'execute', 'status=pending'));
    await t.d.command('Flemma tool:reject');
    // bash waits for the user in its placeholder, found by the scan; <M-CR> allows it.
    await t.d.waitForNotification(/fake asks: execute: execute ls_1/);
    await waitForText(t, placeholder('ls_1', 'execute', 'status=pending'));
    expect(await scanned(t)).toEqual([
      { id: 'rm_1', status: 'rejected' },
      { id: 'ls_1', status: 'pending' },
    ]);
    await t.d.press('<M-CR>');
    // A sensitive place is never approved automatically: the user allows it always.
    await t.d.waitForNotification(/fake asks: edit: edit env_1/);
    await t.d.command('Flemma tool:approve-always');
    await t.d.waitForEvent('FlemmaRequestFinished', { after });
    expect(outcomes(agent)).toEqual({
      // `$default` approves an edit inside the project.
      edit_1: { outcome: 'selected', optionId: 'allow-once' },
      // A preset's deny refuses it without asking.
      fetch_1: { outcome: 'selected', optionId: 'reject-once' },
      rm_1: { outcome: 'selected', optionId: 'reject-once' },
      ls_1: { outcome: 'selected', optionId: 'allow-once' },
      env_1: { outcome: 'selected', optionId: 'allow-always' },
    });
    // Each placeholder was rewritten in place to its answer; only the waiting ones were written.
    const text = (await t.lines()).join('\n');
    expect(text).toContain(placeholder('rm_1', 'execute', 'status=rejected'));
    expect(text).toContain(placeholder('ls_1', 'execute', 'status=approved'));
    expect(text).toContain(placeholder('env_1', 'edit', 'status=approved scope=always'));
    expect(text).not.toContain('edit_1');
    expect(text).not.toContain('status=pending');
    // Not our tool calls: nothing waited for approval in the tool loop.
    expect(t.d.eventsSeen('FlemmaApprovalNeeded')).toHaveLength(0);
  });

  it('several at once each get their own placeholder, answered one by one; a cancel answers the rest cancelled and their placeholders say so', async () => {
    const ids = ['ls_a', 'ls_b', 'ls_c'];
    const { t, agent } = await agentChat(
      {
        turns: [
          {
            steps: [
              {
                permissions: ids.map((id) =>
                  permissionCall(id, 'execute', { rawInput: { command: `ls ${id}` } }),
                ),
              },
            ],
          },
        ],
      },
      ['@You:', 'List.'],
    );
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    for (const id of ids) await waitForText(t, placeholder(id, 'execute', 'status=pending'));
    // The one under the cursor is answered, not the first.
    await cursorOn(t, 'ls_b');
    await t.d.command('Flemma tool:reject');
    await waitForText(t, placeholder('ls_b', 'execute', 'status=rejected'));
    await expect
      .poll(() => outcomes(agent))
      .toEqual({
        ls_b: { outcome: 'selected', optionId: 'reject-once' },
      });
    expect(await scanned(t)).toEqual([
      { id: 'ls_a', status: 'pending' },
      { id: 'ls_b', status: 'rejected' },
      { id: 'ls_c', status: 'pending' },
    ]);
    await cursorOn(t, 'ls_c');
    await t.d.press('<M-CR>');
    await waitForText(t, placeholder('ls_c', 'execute', 'status=approved'));
    // The command, not the key: a <C-c> typed while Neovim is busy drawing can be taken as an
    // interrupt instead of the mapping (seen under load; the key's own test is above).
    await t.d.command('Flemma cancel');
    await t.d.waitForEvent('FlemmaRequestFinished', { after });
    await expect
      .poll(() => outcomes(agent))
      .toEqual({
        ls_a: { outcome: 'cancelled' },
        ls_b: { outcome: 'selected', optionId: 'reject-once' },
        ls_c: { outcome: 'selected', optionId: 'allow-once' },
      });
    const text = (await t.lines()).join('\n');
    expect(text).toContain(placeholder('ls_a', 'execute', 'status=cancelled'));
    expect(text).toContain('<!-- flemma:aborted: Response interrupted by the user. -->');
  });

  it('an agent that crashes while one waits: its placeholder says cancelled', async () => {
    const { t } = await agentChat(
      {
        turns: [
          {
            steps: [
              {
                permissions: ['ls_a', 'ls_b'].map((id) =>
                  permissionCall(id, 'execute', { rawInput: { command: `ls ${id}` } }),
                ),
                crashOnAnswer: 7,
              },
            ],
          },
        ],
      },
      ['@You:', 'List.'],
    );
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    await waitForText(t, placeholder('ls_b', 'execute', 'status=pending'));
    await cursorOn(t, 'ls_a');
    await t.d.press('<M-CR>');
    const finished = await t.d.waitForEvent('FlemmaRequestFinished', { after });
    expect(finished.data).toMatchObject({ status: 'errored' });
    const text = (await t.lines()).join('\n');
    expect(text).toContain(placeholder('ls_a', 'execute', 'status=approved'));
    expect(text).toContain(placeholder('ls_b', 'execute', 'status=cancelled'));
    expect(text).toMatch(/<!-- flemma:aborted: .*exit code 7/);
  });

  it('<C-]> while one waits goes to its placeholder and says it waits; a status edited in it is its answer', async () => {
    const { t, agent } = await agentChat({ turns: [{ steps: [LS, LS2] }] }, ['@You:', 'List.']);
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    await waitForText(t, placeholder('ls_1', 'execute', 'status=pending'));
    await t.d.lua('vim.api.nvim_win_set_cursor(0, { 1, 0 })');
    await t.d.press('<C-]>');
    await t.d.waitForNotification(/Approval needed: fake asks: execute: execute ls_1/);
    const lines = await t.lines();
    const fence = lines.indexOf('```flemma:tool status=pending');
    // The cursor is on its status line.
    expect(await t.d.lua('return vim.api.nvim_win_get_cursor(0)[1]')).toBe(fence + 1);
    expect(agent.events('permission')).toHaveLength(0);
    expect(agent.events('prompt')).toHaveLength(1);
    // Editing the status by hand: the reply is locked while it streams, and says how to answer.
    await t.d.press('ciw');
    await t.d.waitForNotification(
      /^Flemma: read-only: the agent's request waits \(<M-CR> allows, :Flemma tool:reject rejects\)$/,
    );
    await t.d.press('<Esc>');
    expect(await t.lines()).toContain('```flemma:tool status=pending');
    // A status edited anyway (here through the API, as a
    // plugin could) is honoured by the next <C-]>.
    await t.d.lua(
      `local row = ...
      vim.bo.modifiable = true
      vim.api.nvim_buf_set_lines(0, row, row + 1, false, { "\`\`\`flemma:tool status=rejected" })
      vim.bo.modifiable = false`,
      fence,
    );
    await t.d.press('<C-]>');
    await waitForText(t, placeholder('ls_2', 'execute', 'status=pending'));
    expect(outcomes(agent)).toEqual({ ls_1: { outcome: 'selected', optionId: 'reject-once' } });
    await t.d.command('Flemma tool:approve');
    await t.d.waitForEvent('FlemmaRequestFinished', { after });
    expect(outcomes(agent)).toMatchObject({
      ls_2: { outcome: 'selected', optionId: 'allow-once' },
    });
  });

  it('<M-CR> in Insert mode allows it, and Insert mode comes back', async () => {
    const { t, agent } = await agentChat({ turns: [{ steps: [LS, { waitCancel: true }] }] }, [
      '@You:',
      'List.',
    ]);
    await t.d.command('Flemma send');
    await waitForText(t, placeholder('ls_1', 'execute', 'status=pending'));
    await t.d.press('i');
    await t.d.press('<M-CR>');
    await waitForText(t, placeholder('ls_1', 'execute', 'status=approved'));
    expect(outcomes(agent)).toEqual({ ls_1: { outcome: 'selected', optionId: 'allow-once' } });
    await t.d.waitUntil('return vim.api.nvim_get_mode().mode == "i"');
  });

  it('an edit that carries its diff opens in the diff view, whose approve allows it once', async () => {
    const diff = { type: 'diff', path: 'notes.txt', oldText: 'teh milk\n', newText: 'the milk\n' };
    const { t, agent } = await agentChat(
      {
        turns: [
          {
            steps: [
              asks('edit_1', 'edit', { locations: [{ path: '.env' }], content: [diff] }),
              asks('edit_2', 'edit', { locations: [{ path: '.env' }], content: [diff] }),
            ],
          },
        ],
      },
      ['@You:', 'Fix it.'],
    );
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    for (const [id, key, answer] of [
      ['edit_1', 'ga', 'allow-once'],
      ['edit_2', 'gr', 'reject-once'],
    ] as const) {
      await waitForText(t, placeholder(id, 'edit', 'status=pending'));
      const chat = await t.d.lua<number>('return vim.api.nvim_get_current_buf()');
      await cursorOn(t, id);
      await t.d.press('gD');
      await t.d.waitUntil(
        'return vim.api.nvim_buf_get_name(0):find("flemma://proposed/notes.txt", 1, true) ~= nil',
      );
      expect(await t.d.lines()).toEqual(['the milk']);
      await t.d.press(key);
      await expect
        .poll(() => outcomes(agent)[id])
        .toEqual({ outcome: 'selected', optionId: answer });
      await t.d.waitUntil('return vim.api.nvim_get_current_buf() == ...', { args: [chat] });
    }
    await t.d.waitForEvent('FlemmaRequestFinished', { after });
    const text = (await t.lines()).join('\n');
    expect(text).toContain(placeholder('edit_1', 'edit', 'status=approved'));
    expect(text).toContain(placeholder('edit_2', 'edit', 'status=rejected'));
  });

  it('a reply with answered requests reads back cleanly: reopened, its text goes to a new session as the transcript', async () => {
    const agent = fakeAgent(temp('flemma-acp-perm-resume-'), {
      turns: [{ match: 'List', steps: [LS, say('Listed.')] }],
    });
    const config = agentConfig(agent);
    const first = await launchOnce({ provider: false, config, chat: ['@You:', 'List.'] });
    const home = first.d.home;
    try {
      const after = first.d.eventCount;
      await first.d.command('Flemma send');
      await waitForText(first, placeholder('ls_1', 'execute', 'status=pending'));
      await first.d.press('<M-CR>');
      await first.d.waitForEvent('FlemmaRequestFinished', { after });
      await first.d.command('write');
      await first.d.quit({ keepHome: true });
      const second = await launchOnce({ provider: false, config, home });
      try {
        await second.open('test.chat');
        expect(await scanned(second)).toEqual([{ id: 'ls_1', status: 'approved' }]);
        await writeLast(second, 'Again.');
        await sendAndWait(second);
        expect(String(agent.events('prompt')[1]?.['text'])).toContain(
          `Assistant: ${placeholder('ls_1', 'execute', 'status=approved')}\n\nListed.`,
        );
      } finally {
        await second.close();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('an untrusted chat on the agent of your setup()', () => {
  it('works, and its agent’s requests are judged as its own tools would be: its frontmatter may narrow approval, never widen it', async () => {
    const { t, agent } = await agentChat(
      { turns: [{ steps: [asks('edit_1', 'edit', { locations: [{ path: 'notes.txt' }] }), LS] }] },
      [
        '```json',
        '{ "flemma": { "tools": { "auto_approve": ["$default", "bash"], "policy": { "deny": ["edit"] } } } }',
        '```',
        '@You:',
        'Tidy up.',
      ],
      { files: { 'notes.txt': 'teh milk\n' } },
    );
    expect(await t.d.lua('return require("flemma.config.trust").state(0).trusted')).toBe(false);
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    await t.d.waitForNotification(/tools.auto_approve not applied until :trust/);
    // Its approval of bash is not applied (it would widen): ls waits for the user.
    await waitForText(t, placeholder('ls_1', 'execute', 'status=pending'));
    await t.d.press('<M-CR>');
    await t.d.waitForEvent('FlemmaRequestFinished', { after });
    expect(outcomes(agent)).toEqual({
      // Its tool policy's deny narrows, so it holds: setup()'s `$default` would approve it.
      edit_1: { outcome: 'selected', optionId: 'reject-once' },
      ls_1: { outcome: 'selected', optionId: 'allow-once' },
    });
  });

  it.each([
    [
      'parameters.acp.agent',
      /parameters\.acp\.agent not applied until :trust/,
      '{ "flemma": { "parameters": { "acp": { "agent": "other" } } } }',
    ],
    [
      'acp.agents',
      /2 options not applied until :trust/,
      '{ "flemma": { "acp": { "agents": { "fake": { "command": "sh", "args": ["-c", "touch pwned"] } } } } }',
    ],
  ])(
    'whose frontmatter sets %s: refused with a message; your agent answers',
    async (_option, message, frontmatter) => {
      const { t, agent } = await agentChat({}, ['```json', frontmatter, '```', '@You:', 'Hello.']);
      await sendAndWait(t);
      await t.d.waitForNotification(message);
      // The agent of your setup() ran, not the one the file names.
      expect(agent.events('started')).toHaveLength(1);
      expect(await t.d.lua('return vim.fn.filereadable("pwned")')).toBe(0);
    },
  );
});

describe('the chat file stays the record', () => {
  it('an earlier turn edited: a new session, which gets the chat so far as it now reads, in one message', async () => {
    const { t, agent } = await agentChat({ loadSession: true }, ['@You:', 'One.']);
    await sendAndWait(t);
    // The first message is rewritten after its reply: the agent's session no longer matches it.
    await t.d.lua(
      'local l = vim.api.nvim_buf_get_lines(0, 0, -1, false); for i, s in ipairs(l) do if s == "One." then vim.api.nvim_buf_set_lines(0, i - 1, i, false, { "Uno." }) end end',
    );
    await writeLast(t, 'Two.');
    await sendAndWait(t);
    const [first, second] = agent.events('session/new');
    expect(second?.['sessionId']).not.toBe(first?.['sessionId']);
    expect(agent.events('session/load')).toEqual([]);
    const prompts = agent.events('prompt');
    expect(prompts).toHaveLength(2);
    expect(prompts[1]?.['sessionId']).toBe(second?.['sessionId']);
    expect(String(prompts[1]?.['text'])).toMatch(/User: Uno\.\n\nAssistant: OK[\s\S]*Two\.$/);
    expect(String(prompts[1]?.['text'])).not.toContain('One.');
  });

  it.each([
    [true, 'loads its session (session/load) and sends only the new message'],
    [
      false,
      'starts a new session with the chat so far, in one message, when the agent cannot load',
    ],
  ])('reopened in a new Neovim, a chat (loadSession %s) %s', async (loadSession) => {
    const agent = fakeAgent(temp('flemma-acp-resume-'), { loadSession });
    const config = agentConfig(agent);
    const first = await launchOnce({ provider: false, config, chat: ['@You:', 'One.'] });
    const home = first.d.home;
    try {
      await sendAndWait(first);
      await first.d.command('write');
      const [created] = agent.events('session/new');
      await first.d.quit({ keepHome: true });
      const second = await launchOnce({ provider: false, config, home });
      try {
        await second.open('test.chat');
        await writeLast(second, 'Two.');
        await sendAndWait(second);
        const prompts = agent.events('prompt');
        if (loadSession) {
          expect(agent.events('session/load')).toMatchObject([
            { sessionId: created?.['sessionId'] },
          ]);
          expect(prompts[1]).toMatchObject({ sessionId: created?.['sessionId'], text: 'Two.' });
        } else {
          expect(agent.events('session/new')).toHaveLength(2);
          expect(String(prompts[1]?.['text'])).toMatch(/User: One\.\n\nAssistant: OK[\s\S]*Two\.$/);
        }
      } finally {
        await second.close();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

/** A `usage_update` of the agent: `used` of a 200k window, and its running cost if any. */
function usageUpdate(used: number, dollars?: number): Step {
  return {
    update: {
      sessionUpdate: 'usage_update',
      used,
      size: 200_000,
      ...(dollars === undefined ? {} : { cost: { amount: dollars, currency: 'USD' } }),
    },
  };
}

describe('usage and cost the agent reports', () => {
  it('shows its tokens and its own cost after each turn, into the session and the ledger; without a cost, the cost is unknown', async () => {
    const answer = { answerUsage: { inputTokens: 3000, outputTokens: 420 } };
    const { t } = await agentChat(
      {
        turns: [
          { match: 'One', steps: [say('A.'), usageUpdate(12_000, 0.05), answer] },
          { match: 'Two', steps: [say('B.'), usageUpdate(30_000, 0.08)] },
          { match: 'Three', steps: [say('C.'), usageUpdate(40_000)] },
        ],
      },
      ['@You:', 'One.'],
    );
    await sendAndWait(t);
    // Its tokens, its window and its running cost less what it was before: $0.05, then $0.03.
    expect(await usageBar(t.d)).toBe(
      ' fake (acp) │ $0.0500 ↑3k / 200k (6%) ↓420 │ Σ1 $0.0500 ↑3k ↓420 ',
    );
    await writeLast(t, 'Two.');
    await sendAndWait(t);
    expect(await usageBar(t.d)).toMatch(
      /^ fake \(acp\) │ \$0\.0300 ↑30k \/ 200k \(15%\) ↓0 │ Σ2 \$0\.0800 /,
    );
    await writeLast(t, 'Three.');
    await sendAndWait(t);
    expect(await usageBar(t.d)).toMatch(/^ fake \(acp\) │ cost unknown ↑40k .* │ Σ3 \$0\.0800 /);
    // The costs it reported are in the usage ledger (the picker's costs): never one of our own.
    const ledger = readFileSync(join(t.d.home, 'state', 'nvim', 'flemma', 'usage.jsonl'), 'utf8');
    const lines = ledger
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toMatchObject([
      { provider: 'acp', model: 'fake', input: 3000, output: 420, cost: 0.05 },
      { provider: 'acp', model: 'fake', cost: expect.closeTo(0.03, 10) as number },
    ]);
  });
});
