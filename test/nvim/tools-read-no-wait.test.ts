// A call that only reads does not wait for the turn's `git status` note (docs/tools.md, "Undo
// and review"): the note exists so that what a call changes is never part of the turn's start,
// and a `read` changes nothing. Here git is held (a `git` first on PATH that waits for the test)
// for as long as the turn's note would take; the `read` the reply asks for runs and its result
// is written while git still waits, and autopilot's follow-up carries it.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { anthropicMessages, anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver, startDriver } from '../helpers/driver.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';

let driver: Driver | undefined;
let fake: FakeProvider | undefined;
let home: string | undefined;

afterEach(async () => {
  // The held git goes on (and ends) whatever the test found.
  if (home !== undefined) writeFileSync(join(home, 'gate-open'), '');
  await driver?.quit();
  driver = undefined;
  await fake?.close();
  fake = undefined;
  if (home !== undefined) rmSync(home, { recursive: true, force: true });
  home = undefined;
});

function git(work: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], {
    cwd: work,
    env: { ...process.env, HOME: home ?? '' },
    stdio: 'ignore',
  });
}

/**
 * A `git` that, once `gate-armed` exists, writes its pid to `git-held` and waits for
 * `gate-open` before it runs the real git.
 */
function heldGit(dir: string): string {
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const script = [
    '#!/bin/sh',
    `if [ -e '${dir}/gate-armed' ]; then`,
    `  echo $$ > '${dir}/git-held'`,
    `  while [ ! -e '${dir}/gate-open' ]; do sleep 0.02; done`,
    'fi',
    `exec '${real}' "$@"`,
  ].join('\n');
  writeFileSync(join(bin, 'git'), `${script}\n`);
  chmodSync(join(bin, 'git'), 0o755);
  return bin;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it('a read runs and its result is written while the turn’s git note still waits', async () => {
  home = mkdtempSync(join(tmpdir(), 'flemma-e2e-'));
  const work = join(home, 'work');
  mkdirSync(work);
  git(work, 'init', '-q');
  writeFileSync(join(work, 'tracked.txt'), 'the tracked line\n');
  git(work, 'add', 'tracked.txt');
  git(work, 'commit', '-q', '-m', 'start');
  const bin = heldGit(home);
  fake = await startFakeProvider();
  const d = await startDriver({
    home,
    env: {
      ANTHROPIC_API_KEY: 'sk-ant-test-key',
      ANTHROPIC_BASE_URL: fake.url,
      PATH: `${bin}:${process.env['PATH'] ?? ''}`,
    },
    setup: 'require("flemma").setup({})',
  });
  driver = d;
  await d.openChat('read.chat', ['@You:', 'Read tracked.txt.']);
  await d.waitForEvent('FlemmaBootComplete');
  // From here git waits: the note the reply's start takes cannot finish.
  writeFileSync(join(home, 'gate-armed'), '');
  await d.press('<C-]>');
  const request = await fake.nextRequest({ path: '/v1/messages' });
  await anthropicReply(request, '', [
    {
      id: 'toolu_R1',
      name: 'read',
      input: { label: 'read it', path: 'tracked.txt', offset: null, limit: null },
    },
  ]);
  const done = await d.waitForEvent('FlemmaToolCompleted');
  expect(done.data['status'], JSON.stringify(await d.lines())).toBe('success');
  // The note was being taken (its git started) and still waits: the read did not wait for it.
  const held = Number(readFileSync(join(home, 'git-held'), 'utf8').trim());
  expect(alive(held)).toBe(true);
  expect(existsSync(join(home, 'gate-open'))).toBe(false);
  const followUp = await fake.nextRequest({ path: '/v1/messages' });
  expect(JSON.stringify(anthropicMessages(followUp))).toContain('the tracked line');
  writeFileSync(join(home, 'gate-open'), '');
  await anthropicReply(followUp, 'Read.');
  await d.waitForEvent('FlemmaRequestFinished', {
    match: (event) => event.data['status'] === 'completed',
    after: d.eventCount - 1,
  });
});
