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
import { anthropicMessages } from '../helpers/anthropic-script.js';
import { launcher } from '../helpers/e2e.js';
import { trackedRepository } from '../helpers/git.js';

let home: string | undefined;

afterEach(() => {
  if (home !== undefined) rmSync(home, { recursive: true, force: true });
  home = undefined;
});

const launch = launcher();

afterEach(() => {
  // The held git goes on (and ends) whatever the test found, before Neovim quits.
  if (home !== undefined) writeFileSync(join(home, 'gate-open'), '');
});

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
  trackedRepository(home, 'the tracked line\n');
  const bin = heldGit(home);
  const t = await launch({
    home,
    key: 'sk-ant-test-key',
    env: { PATH: `${bin}:${process.env['PATH'] ?? ''}` },
    config: '{}',
    chat: { name: 'read.chat', lines: ['@You:', 'Read tracked.txt.'] },
  });
  const { d } = t;
  // From here git waits: the note the reply's start takes cannot finish.
  writeFileSync(join(home, 'gate-armed'), '');
  await t.send();
  await t.reply('', [
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
  const followUp = await t.request();
  expect(JSON.stringify(anthropicMessages(followUp))).toContain('the tracked line');
  writeFileSync(join(home, 'gate-open'), '');
  await t.reply('Read.');
  await d.waitForEvent('FlemmaRequestFinished', {
    match: (event) => event.data['status'] === 'completed',
    after: d.eventCount - 1,
  });
});
