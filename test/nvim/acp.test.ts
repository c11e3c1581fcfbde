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
  return { permission: { toolCall: { toolCallId: id, title: `${kind} ${id}`, kind, ...fields } } };
}

describe('the agent’s permission requests', () => {
  it('are judged by the approval chain (a preset approves, a preset’s deny refuses); the rest wait for the user, who answers with <M-CR> and the approve/reject commands', async () => {
    const { t, agent } = await agentChat(
      {
        turns: [
          {
            steps: [
              asks('edit_1', 'edit', { locations: [{ path: 'notes.txt' }] }),
              asks('fetch_1', 'fetch', { rawInput: { url: 'https://example.test/' } }),
              asks('rm_1', 'execute', { rawInput: { command: 'rm -rf build' } }),
              asks('ls_1', 'execute', { rawInput: { command: 'ls' } }),
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
    await t.d.command('Flemma tool:reject');
    // bash waits for the user, who allows it with <M-CR> while the reply streams.
    await t.d.waitForNotification(/fake asks: execute: execute ls_1/);
    await t.d.press('<M-CR>');
    // A sensitive place is never approved automatically: the user allows it always.
    await t.d.waitForNotification(/fake asks: edit: edit env_1/);
    await t.d.command('Flemma tool:approve-always');
    await t.d.waitForEvent('FlemmaRequestFinished', { after });
    const outcomes = Object.fromEntries(
      agent
        .events('permission')
        .map((e): [string, unknown] => [String(e['toolCallId']), e['outcome']]),
    );
    expect(outcomes).toEqual({
      // `$default` approves an edit inside the project.
      edit_1: { outcome: 'selected', optionId: 'allow-once' },
      // A preset's deny refuses it without asking.
      fetch_1: { outcome: 'selected', optionId: 'reject-once' },
      rm_1: { outcome: 'selected', optionId: 'reject-once' },
      ls_1: { outcome: 'selected', optionId: 'allow-once' },
      env_1: { outcome: 'selected', optionId: 'allow-always' },
    });
    // The reply records what was asked and the answer.
    const lines = await t.lines();
    expect(lines).toContain('**Agent Permission:** `ls_1` (waiting) execute: execute ls_1');
    expect(lines).toContain('**Agent Permission:** `ls_1` (allowed once)');
    expect(lines).toContain('**Agent Permission:** `rm_1` (rejected)');
    expect(lines).toContain('**Agent Permission:** `env_1` (always allowed)');
  });

  it('<C-c> while one waits for the user answers it cancelled', async () => {
    const { t, agent } = await agentChat(
      { turns: [{ steps: [asks('ls_1', 'execute', { rawInput: { command: 'ls' } })] }] },
      ['@You:', 'List.'],
    );
    const after = t.d.eventCount;
    await t.d.command('Flemma send');
    await t.d.waitForNotification(/fake asks: execute: execute ls_1/);
    await t.d.press('<C-c>');
    await t.d.waitForEvent('FlemmaRequestFinished', { after });
    await expect
      .poll(() => agent.events('permission'))
      .toMatchObject([{ toolCallId: 'ls_1', outcome: { outcome: 'cancelled' } }]);
  });
});

describe('the chat file stays the record', () => {
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
