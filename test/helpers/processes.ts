// Named-pipe handshakes and process liveness, for the tests that run real programs: the command
// writes a line to the pipe once it has reached the point under test, and the test acts when
// that line arrives.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  constants,
  createReadStream,
  existsSync,
  openSync,
  readFileSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunResult } from '../../src/core/tools/process.js';

/** A named pipe `fifo` in the directory `dir`. */
export function makeFifo(dir: string): string {
  const path = join(dir, 'fifo');
  execFileSync('mkfifo', [path]);
  return path;
}

/** Unblocks a reader still waiting for a writer (a test that failed before the handshake). */
export function releaseFifo(path: string): void {
  if (!existsSync(path)) return;
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // No reader waiting.
  }
}

/** The first line written to the pipe at `path`. */
export function firstLine(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stream = createReadStream(path, { encoding: 'utf8' });
    let buffered = '';
    stream.on('data', (chunk) => {
      buffered += String(chunk);
      const end = buffered.indexOf('\n');
      if (end !== -1) {
        stream.destroy();
        resolve(buffered.slice(0, end));
      }
    });
    stream.on('end', () => {
      resolve(buffered);
    });
    stream.on('error', reject);
  });
}

/** `true` while `pid` names a process that has not exited (a zombie counts as exited). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).charAt(0);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Resolves once `pid` has exited; rejects if it is still running after `ms`. */
export async function waitForExit(pid: number, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} is still running`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * A process that swaps the symlink `link` between `a` and `b` as fast as it goes (a new link
 * under a temporary name, renamed over the old one, so the link always exists); it writes a line
 * to its stdout once it is flipping. The caller kills it.
 */
export function linkFlipper(link: string, a: string, b: string): ChildProcess {
  return spawn(
    process.execPath,
    [
      '-e',
      `const fs = require('node:fs');
        const [link, a, b] = process.argv.slice(1);
        // As fast as it goes: a new link under a temporary name, renamed over the old one (so the
        // link always exists), pointing alternately inside and outside.
        for (let n = 0; ; n++) {
          const tmp = link + '.' + (n % 2);
          try { fs.symlinkSync(n % 2 ? a : b, tmp); fs.renameSync(tmp, link); } catch {}
          if (n === 1) fs.writeSync(1, 'flipping\\n');
        }`,
      link,
      a,
      b,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
}

/** What a process that ran and exited 0 without a word gives back. */
export const RUN_OK: RunResult = {
  exitCode: 0,
  signal: null,
  output: '',
  stderr: '',
  timedOut: false,
  cancelled: false,
};

/**
 * After a test that ran real programs: kills what is left of `pids` (emptying it), unblocks the
 * pipe `fifo` in `dir` if a reader still waits on it, and removes `dir`.
 */
export async function cleanUpRuns(pids: number[], dir: string): Promise<void> {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  releaseFifo(join(dir, 'fifo'));
  await rm(dir, { recursive: true, force: true });
}
