// The host runs no code of the repository's (docs/security.md, "What the host itself starts"):
// the review's `git status` (at a send that starts a turn, and at `:Flemma review`) never runs a
// `core.fsmonitor` command or a filter driver the repository's config names, however that config
// got there — a `write` the user approved, a sandboxed `bash`, or shipped with the directory — nor
// one `GIT_CONFIG_*` in Neovim's environment names.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ScriptedCall, anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher, type Session } from '../helpers/e2e.js';
import { type FakeProvider } from '../helpers/fake-provider.js';
import { gitIn, trackedRepository } from '../helpers/git.js';

let home: string | undefined;

// Declared before the launcher's: after hooks run last-declared first, so Neovim quits and
// the fake provider stops before this runs.
afterEach(() => {
  if (home !== undefined) rmSync(home, { recursive: true, force: true });
  home = undefined;
});

const launch = launcher();

const SETUP = 'require("flemma").setup({ tools = { autopilot = false } })';
const MARKED = 'changed during the turn (git status; by a command, exact change unknown)';

/** A private directory for Neovim (the driver's `home`), its `work/` a git repository. */
function repository(): { home: string; work: string } {
  home = mkdtempSync(join(tmpdir(), 'flemma-e2e-'));
  return { home, work: trackedRepository(home, 'one\n') };
}

function git(work: string, ...args: string[]): string {
  return gitIn(home ?? '', work, ...args);
}

/** A shell command that leaves `marker` behind; git goes on as if the monitor failed. */
const touching = (marker: string): string => `touch ${marker}; false`;

async function start(env: Record<string, string> = {}, setup = SETUP): Promise<Session> {
  return launch({ home: home ?? '', key: 'sk-ant-test-key', env, setup });
}

/**
 * Sends a new turn (the host notes git's state when the reply begins), answers with `calls` and
 * a `bash` call that writes `made.txt`, runs each with <M-CR> as the user would, and runs
 * `:Flemma review`: the quickfix list then holds `made.txt`, which only git can have found.
 */
async function turnAndReview(
  d: Driver,
  f: FakeProvider,
  given: ScriptedCall[] = [],
): Promise<string[]> {
  const made: ScriptedCall = {
    id: 'toolu_M1',
    name: 'bash',
    input: { label: 'make', command: 'echo made > made.txt', timeout: null },
  };
  const calls = [...given, made];
  await d.openChat('git.chat', ['@You:', 'Change things.']);
  await d.waitForEvent('FlemmaBootComplete');
  await d.press('<C-]>');
  const request = await f.nextRequest({ path: '/v1/messages' });
  await anthropicReply(request, '', calls);
  await d.waitForEvent('FlemmaRequestFinished');
  for (const call of calls) {
    const row = (await d.lines()).findIndex((line) => line.includes(`(\`${call.id}\`)`)) + 1;
    const count = d.eventCount;
    await d.command(`normal! ${String(row)}G`);
    await d.press('<M-CR>');
    const done = await d.waitForEvent('FlemmaToolCompleted', { after: count });
    expect(done.data['status'], JSON.stringify(await d.lines())).toBe('success');
  }
  await d.command('Flemma review');
  await d.waitUntil('return #vim.fn.getqflist() > 0');
  return d.lua<string[]>(`
    local out = {}
    for _, item in ipairs(vim.fn.getqflist()) do
      out[#out + 1] = vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ":t") .. ": " .. item.text
    end
    return out`);
}

/** The config's program has not run (no `marker`); it is live: plain git in `work` runs it. */
function notRunButLive(work: string, marker: string): void {
  expect(existsSync(marker)).toBe(false);
  git(work, 'status', '--porcelain');
  expect(existsSync(marker)).toBe(true);
}

describe('git runs none of the repository’s programs', () => {
  it('an fsmonitor a write the user approved put into .git/config', async () => {
    const { home: dir, work } = repository();
    const marker = join(dir, 'fsmonitor-ran');
    const { d, f } = await start();
    const config = readFileSync(join(work, '.git', 'config'), 'utf8');
    const entries = await turnAndReview(d, f, [
      {
        id: 'toolu_W1',
        name: 'write',
        input: {
          label: 'tune git',
          path: '.git/config',
          content: `${config}[core]\n\tfsmonitor = ${touching(marker)}\n`,
        },
      },
    ]);
    expect(readFileSync(join(work, '.git', 'config'), 'utf8')).toContain('fsmonitor');
    expect(entries).toContain(`made.txt: ${MARKED}`);
    notRunButLive(work, marker);
  });

  it('an fsmonitor a sandboxed bash put in a git directory of its own (.git/commondir)', async () => {
    const { home: dir, work } = repository();
    const marker = join(dir, 'fsmonitor-ran');
    const { d, f } = await start();
    // .git/config is read-only in the sandbox, but git reads the config of the common
    // directory `.git/commondir` names.
    const command = [
      'mkdir .git/other',
      'cp -r .git/objects .git/refs .git/HEAD .git/other/',
      `printf '[core]\\n\\tfsmonitor = ${touching(marker)}\\n' > .git/other/config`,
      'echo other > .git/commondir',
    ].join(' && ');
    const entries = await turnAndReview(d, f, [
      { id: 'toolu_B1', name: 'bash', input: { label: 'tune git', command, timeout: null } },
    ]);
    expect(entries).toContain(`made.txt: ${MARKED}`);
    notRunButLive(work, marker);
  });

  it('an fsmonitor and a clean filter shipped in the directory before Neovim started', async () => {
    const { home: dir, work } = repository();
    const monitor = join(dir, 'fsmonitor-ran');
    const filter = join(dir, 'filter-ran');
    writeFileSync(join(work, '.gitattributes'), '* filter=evil\n');
    git(work, 'add', '.gitattributes');
    git(work, 'commit', '-q', '-m', 'attributes');
    git(work, 'config', 'core.fsmonitor', touching(monitor));
    git(work, 'config', 'filter.evil.clean', `touch ${filter}; cat`);
    git(work, 'config', 'filter.evil.required', 'true');
    // Same content, new time: git must read the file (through the filter) to compare it.
    writeFileSync(join(work, 'tracked.txt'), 'one\n');
    const { d, f } = await start();
    const entries = await turnAndReview(d, f);
    expect(entries).toEqual([`made.txt: ${MARKED}`]);
    expect(existsSync(monitor)).toBe(false);
    expect(existsSync(filter)).toBe(false);
    git(work, 'status', '--porcelain');
    expect(existsSync(monitor)).toBe(true);
    expect(existsSync(filter)).toBe(true);
  });

  it('an fsmonitor GIT_CONFIG_COUNT/KEY/VALUE name in Neovim’s environment', async () => {
    const { home: dir } = repository();
    const marker = join(dir, 'fsmonitor-ran');
    const { d, f } = await start({
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'core.fsmonitor',
      GIT_CONFIG_VALUE_0: touching(marker),
    });
    const entries = await turnAndReview(d, f);
    expect(entries).toEqual([`made.txt: ${MARKED}`]);
    expect(existsSync(marker)).toBe(false);
  });

  it('an fsmonitor the find tool would meet in git ls-files, with the sandbox off', async () => {
    const { home: dir, work } = repository();
    const marker = join(dir, 'fsmonitor-ran');
    git(work, 'config', 'core.fsmonitor', touching(marker));
    const { d, f } = await start(
      {},
      'require("flemma").setup({ sandbox = { enabled = false }, tools = { autopilot = false } })',
    );
    const entries = await turnAndReview(d, f, [
      {
        id: 'toolu_F1',
        name: 'find',
        input: { label: 'look', pattern: '*.txt', path: null, limit: null },
      },
    ]);
    expect(entries).toEqual([`made.txt: ${MARKED}`]);
    expect(await d.lines()).toContain('tracked.txt');
    expect(existsSync(marker)).toBe(false);
  });
});
