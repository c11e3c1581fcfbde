// Command rules for `bash` (issue 22, point 5) end to end: `tools.bash.allow` approves commands
// whose every simple command matches, `tools.bash.deny` makes a command ask whichever resolver
// approved it (the sandbox's included), an untrusted frontmatter may add a deny rule but not an
// allow rule, and `:Flemma tool:why` names the rule. A scripted fake Anthropic server plays the
// model; the calls go through the real approval chain.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicReply as reply, type ScriptedCall as Call } from '../helpers/anthropic-script.js';
import { jsonChat } from '../helpers/chat-lines.js';
import { type Driver } from '../helpers/driver.js';
import { launcher, untilApproval } from '../helpers/e2e.js';
import { type FakeProvider } from '../helpers/fake-provider.js';

const launch = launcher();

/** Neovim with `options`; a chat (with the JSON frontmatter `json`) where the user says Go. */
async function setup(
  options: string,
  json?: string,
): Promise<{ d: Driver; f: FakeProvider; buf: number }> {
  const { d: driver, f: fake } = await launch({
    key: 'sk-ant-test-key',
    setup: `require("flemma").setup(${options})`,
  });
  const chat = ['@You:', 'Go.'];
  const buf = await driver.openChat('rules.chat', json === undefined ? chat : jsonChat(json, chat));
  await driver.waitForEvent('FlemmaBootComplete');
  return { d: driver, f: fake, buf };
}

const bash = (id: string, command: string): Call => ({
  id,
  name: 'bash',
  input: { label: 'x', command, timeout: null },
});

/** The status on a placeholder's fence, by tool id. */
function statusOf(lines: string[], id: string): string | undefined {
  const header = lines.indexOf(`**Tool Result:** \`${id}\``);
  if (header < 0) throw new Error(`no result block for ${id}`);
  return /^```flemma:tool status=(\w+)/.exec(lines[header + 2] ?? '')?.[1];
}

/** Sends, answers with `calls`, and runs Phase 1 (autopilot is off): the placeholders are written. */
function ask(d: Driver, f: FakeProvider, calls: Call[]): Promise<string[]> {
  return untilApproval(d, f, 'Running.', calls);
}

/** Asks with a bash call per `[id, command]`; the status of each one's placeholder, in order. */
async function statuses(
  d: Driver,
  f: FakeProvider,
  calls: [id: string, command: string][],
): Promise<(string | undefined)[]> {
  const lines = await ask(
    d,
    f,
    calls.map(([id, command]) => bash(id, command)),
  );
  return calls.map(([id]) => statusOf(lines, id));
}

async function why(d: Driver, id: string): Promise<string> {
  const row = (await d.lines()).indexOf(`**Tool Result:** \`${id}\``) + 1;
  await d.command(`normal! ${String(row)}G`);
  const before = d.notificationCount;
  await d.press(':Flemma tool:why<CR>');
  return (await d.waitForNotification(new RegExp(`\\(${id}\\)`), { after: before })).message;
}

describe('command rules for bash', () => {
  it('sandbox off: an allowed command is approved, a list that hides another command asks', async () => {
    const { d, f } = await setup(
      '{ sandbox = { enabled = false }, tools = { autopilot = false, bash = { allow = { "ls *", "echo *" } } } }',
    );
    expect(
      await statuses(d, f, [
        ['toolu_A', 'ls -la | echo done'],
        ['toolu_H', 'ls && rm -rf ~'],
        ['toolu_S', 'echo $(rm -rf ~)'],
      ]),
    ).toEqual(['approved', 'pending', 'pending']);
    const allowed = await why(d, 'toolu_A');
    expect(allowed).toMatch(/bash \(toolu_A\): approve — urn:flemma:approval:bash-rules/);
    expect(allowed).toContain('allowed by tools.bash.allow "ls *", "echo *"');
    expect(await why(d, 'toolu_H')).toContain('`rm -rf ~` matches no allow rule');
    expect(await why(d, 'toolu_S')).toContain('cannot be parsed with confidence');
  });

  it('sandbox off: an allowed command runs and its output goes back without a question', async () => {
    const { d, f } = await setup(
      // A leading assignment is part of the command: the rule names it (issue 28).
      '{ sandbox = { enabled = false }, tools = { bash = { allow = { "FOO=1 echo *" } } } }',
    );
    await d.press('<C-]>');
    await reply(await f.nextRequest({ path: '/v1/messages' }), 'Running.', [
      bash('toolu_R', 'FOO=1 echo "allowed ran" 2>&1'),
    ]);
    // Autopilot runs the approved call and sends its result by itself.
    const follow = await f.nextRequest({ path: '/v1/messages' });
    const messages = (follow.body as { messages: { content: { [key: string]: unknown }[] }[] })
      .messages;
    const result = messages[messages.length - 1]?.content[0];
    expect(result).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_R' });
    expect(JSON.stringify(result)).toContain('allowed ran');
    const before = d.eventCount;
    await reply(follow, 'Done.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
  });

  it('sandbox on: a denied command, alone or hidden in a list, is not approved by the sandbox', async () => {
    const { d, f } = await setup('{ tools = { autopilot = false, bash = { deny = { "rm *" } } } }');
    const asked = await statuses(d, f, [
      ['toolu_E', 'echo hi'],
      ['toolu_D', 'rm -f notes.txt'],
      ['toolu_L', 'echo hi; rm -f notes.txt'],
    ]);
    // Without a deny match the sandbox approves bash as before.
    expect(asked).toEqual(['approved', 'pending', 'pending']);
    const denied = await why(d, 'toolu_L');
    expect(denied).toMatch(/bash \(toolu_L\): require_approval — urn:flemma:approval:bash-deny/);
    expect(denied).toContain('`rm -f notes.txt` matches the deny rule "rm *"');
    expect(denied).toContain('urn:flemma:approval:sandbox approved it');
  });

  it('an untrusted frontmatter adds a deny rule but not an allow rule', async () => {
    const { d, f } = await setup(
      '{ sandbox = { enabled = false }, tools = { autopilot = false, bash = { allow = { "git *" } } } }',
      '{ "flemma": { "tools": { "bash": { "allow": { "$append": "cat *" }, "deny": { "$append": "git push*" } } } } }',
    );
    expect(
      await statuses(d, f, [
        ['toolu_G', 'git status'],
        ['toolu_P', 'git push --force'],
        ['toolu_C', 'cat notes.txt'],
      ]),
    ).toEqual(['approved', 'pending', 'pending']);
    expect(await why(d, 'toolu_P')).toContain('matches the deny rule "git push*"');
    const diagnostics = await d.lua<string[]>(
      `local ns = vim.api.nvim_create_namespace("flemma.frontmatter")
      vim.wait(5000, function() return #vim.diagnostic.get(0, { namespace = ns }) > 0 end)
      return vim.tbl_map(function(x) return x.message end, vim.diagnostic.get(0, { namespace = ns }))`,
    );
    expect(diagnostics.join('\n')).toContain('flemma.opt.tools.bash.allow is not applied');
    expect(diagnostics.join('\n')).not.toContain('tools.bash.deny');
  });
});

/** Cancels the waiting calls, sends the results, and answers the model: nothing else runs. */
async function cancelAndSend(d: Driver, f: FakeProvider): Promise<void> {
  const before = d.notificationCount;
  await d.command('Flemma tool:cancel-pending');
  await d.waitForNotification(/Cancelled \d+ waiting tool call/, { after: before });
  await d.press('<C-]>');
  const follow = await f.nextRequest({ path: '/v1/messages' });
  const after = d.eventCount;
  await reply(follow, 'OK.');
  await d.waitForEvent('FlemmaRequestFinished', { after });
}

describe('issue 28: command rules see the whole command', () => {
  it('sandbox off: a leading GIT_CONFIG_* or LD_PRELOAD assignment is not allowed by `git status*` or `ls *`', async () => {
    const { d, f } = await setup(
      '{ sandbox = { enabled = false }, tools = { autopilot = false, bash = { allow = { "git status*", "ls *" } } } }',
    );
    await d.lua('vim.fn.system({ "git", "init", "-q" })');
    const marker = join(d.home, 'work', 'fsmonitor-ran');
    const lines = await ask(d, f, [
      bash(
        'toolu_G',
        `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0="touch ${marker}" git status`,
      ),
      bash('toolu_L', 'LD_PRELOAD=/nonexistent/x.so ls'),
      // Asks on any version: the step stops here either way.
      bash('toolu_W', 'whoami'),
    ]);
    expect(statusOf(lines, 'toolu_G')).toBe('pending');
    expect(statusOf(lines, 'toolu_L')).toBe('pending');
    expect(await why(d, 'toolu_G')).toContain('matches no allow rule');
    await cancelAndSend(d, f);
    expect(existsSync(marker)).toBe(false);
  });

  it('sandbox off: `git diff --output=/outside` under `git diff*` and `cat .env` under `cat *` ask', async () => {
    const { d, f } = await setup(
      '{ sandbox = { enabled = false }, tools = { autopilot = false, bash = { allow = { "git diff*", "cat *" } } } }',
    );
    await d.lua('vim.fn.system({ "git", "init", "-q" })');
    d.writeFile('.env', 'API_KEY=secret\n');
    const outside = join(d.home, 'outside.patch');
    const lines = await ask(d, f, [
      bash('toolu_O', `git diff --output=${outside}`),
      bash('toolu_E', 'cat .env'),
      bash('toolu_N', 'cat rules.chat'),
      bash('toolu_W', 'whoami'),
    ]);
    expect(statusOf(lines, 'toolu_O')).toBe('pending');
    expect(statusOf(lines, 'toolu_E')).toBe('pending');
    // A file in the project is still allowed.
    expect(statusOf(lines, 'toolu_N')).toBe('approved');
    expect(await why(d, 'toolu_O')).toContain('is outside the project');
    expect(await why(d, 'toolu_E')).toContain('touches a sensitive place, .env* (built in)');
    await cancelAndSend(d, f);
    expect(existsSync(outside)).toBe(false);
    expect(JSON.stringify(f.requests.map((r) => r.body))).not.toContain('API_KEY=secret');
  });

  it('sandbox on: `find -delete`, `unlink`, `python3 -c` and `perl -e` are held by the deny rule `rm *`', async () => {
    const { d, f } = await setup('{ tools = { autopilot = false, bash = { deny = { "rm *" } } } }');
    for (const name of ['a.tmp', 'b.txt', 'c.txt', 'd.txt', 'e.txt']) d.writeFile(name, 'keep\n');
    const lines = await ask(d, f, [
      bash('toolu_F', 'find . -name "*.tmp" -delete'),
      bash('toolu_U', 'unlink b.txt'),
      bash('toolu_P', `python3 -c "import os; os.remove('c.txt')"`),
      bash('toolu_R', `perl -e 'unlink "d.txt"'`),
      bash('toolu_S', 'sudo rm -f e.txt'),
      bash('toolu_E', 'echo hi'),
    ]);
    for (const id of ['toolu_F', 'toolu_U', 'toolu_P', 'toolu_R', 'toolu_S']) {
      expect(statusOf(lines, id), id).toBe('pending');
    }
    // Without a deny match the sandbox approves bash as before.
    expect(statusOf(lines, 'toolu_E')).toBe('approved');
    expect(await why(d, 'toolu_F')).toContain(
      '`find . -name *.tmp -delete` does the job of `rm` (`find *-delete*`), so it matches the deny rule "rm *"',
    );
    expect(await why(d, 'toolu_P')).toContain('runs code given on its command line');
    expect(await why(d, 'toolu_S')).toContain('runs `rm -f e.txt`, which matches the deny rule');
    await cancelAndSend(d, f);
    for (const name of ['a.tmp', 'b.txt', 'c.txt', 'd.txt', 'e.txt']) {
      expect(existsSync(join(d.home, 'work', name)), name).toBe(true);
    }
  });
});
