// A git repository for the end-to-end tests of what the host does with one.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Runs git in `work` with `home` as HOME and an identity of its own; returns its stdout. */
export function gitIn(home: string, work: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], {
    cwd: work,
    encoding: 'utf8',
    env: { ...process.env, HOME: home },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
}

/** Makes `home/work` a git repository whose one commit holds `tracked.txt` (`text`); its path. */
export function trackedRepository(home: string, text: string): string {
  const work = join(home, 'work');
  mkdirSync(work);
  gitIn(home, work, 'init', '-q');
  writeFileSync(join(work, 'tracked.txt'), text);
  gitIn(home, work, 'add', 'tracked.txt');
  gitIn(home, work, 'commit', '-q', '-m', 'start');
  return work;
}
