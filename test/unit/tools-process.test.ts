// runProcess with real programs: exit codes, stderr handling, start failures, and stopping a
// process group on timeout or cancel (including a group that ignores SIGTERM).
//
// Handshakes go through a named pipe: the command writes a line to it once it has reached the
// point under test, and the test acts when that line arrives, so nothing depends on how fast the
// machine is. Only the death of a process the test did not start has no event to wait on; for
// that `waitForExit` polls briefly.
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { type RunOptions, runProcess } from '../../src/core/tools/process.js';
import { cleanUpRuns, firstLine, isAlive, makeFifo, waitForExit } from '../helpers/processes.js';

let dir: string;
const pidsToKill: number[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flemma-process-'));
});

afterEach(async () => {
  await cleanUpRuns(pidsToKill, dir);
});

describe('runProcess: finished programs', () => {
  it('reports the exit code and stdout', async () => {
    const ok = await runProcess(['sh', '-c', 'echo hello'], { cwd: dir });
    expect(ok).toEqual({
      exitCode: 0,
      signal: null,
      output: 'hello\n',
      stderr: '',
      timedOut: false,
      cancelled: false,
    });
    const failed = await runProcess(['sh', '-c', 'exit 7'], { cwd: dir });
    expect(failed.exitCode).toBe(7);
    expect(failed.startError).toBeUndefined();
  });

  it('keeps stderr apart unless asked to merge it', async () => {
    const script = 'echo out; echo err >&2';
    const apart = await runProcess(['sh', '-c', script], { cwd: dir });
    expect(apart.output).toBe('out\n');
    expect(apart.stderr).toBe('err\n');

    const merged = await runProcess(['sh', '-c', script], { cwd: dir, mergeStderr: true });
    // Two pipes give no ordering guarantee between them, so only the content is checked.
    expect(merged.output.split('\n').sort()).toEqual(['', 'err', 'out']);
  });

  it('runs in cwd, merges env into the inherited environment, and feeds input', async () => {
    const result = await runProcess(['sh', '-c', 'pwd; echo "$FLEMMA_X:$PATH"; cat'], {
      cwd: dir,
      env: { FLEMMA_X: 'set' },
      input: 'from stdin',
    });
    expect(result.output).toBe(`${dir}\nset:${process.env['PATH'] ?? ''}\nfrom stdin`);
  });

  it.each([false, true])('collects 5 MB of output whole (bytes: %s)', async (bytes) => {
    const result = await runProcess(
      ['sh', '-c', "head -c 5000000 /dev/zero | tr '\\0' x; echo apart >&2"],
      { cwd: dir, bytes },
    );
    expect(result.exitCode).toBe(0);
    // With `bytes`, stdout comes as it was written, and stderr still as text.
    const output = bytes ? Buffer.from(result.bytes ?? []).toString('latin1') : result.output;
    expect(result.output).toBe(bytes ? '' : output);
    expect(output.length).toBe(5_000_000);
    expect(/^x+$/.test(output)).toBe(true);
    expect(result.stderr).toBe('apart\n');
  });

  it.each([false, true])(
    'hands the output to onOutput as it comes, as its bytes (merged: %s)',
    async (mergeStderr) => {
      const chunks: Buffer[] = [];
      const result = await runProcess(
        ['sh', '-c', "head -c 2000000 /dev/zero | tr '\\0' x | sed 's/x/é/g'; echo end >&2"],
        { cwd: dir, mergeStderr, onOutput: (chunk) => chunks.push(Buffer.from(chunk)) },
      );
      expect(chunks.length).toBeGreaterThan(1);
      expect(Buffer.concat(chunks).toString('utf8')).toBe(result.output);
      expect(result.output.startsWith('é'.repeat(1000))).toBe(true);
    },
  );

  it('leaves background children alone after a normal exit', async () => {
    const result = await runProcess(['sh', '-c', 'sleep 30 >/dev/null 2>&1 & echo $!'], {
      cwd: dir,
    });
    const pid = Number(result.output.trim());
    pidsToKill.push(pid);
    expect(result.exitCode).toBe(0);
    expect(isAlive(pid)).toBe(true);
  });
});

describe('runProcess: programs that cannot start', () => {
  it('reports a missing program', async () => {
    const result = await runProcess(['/nonexistent/flemma-no-such-program'], { cwd: dir });
    expect(result.exitCode).toBeNull();
    expect(result.startError).toMatch(/ENOENT|not found|no such file/i);
    expect(result.timedOut).toBe(false);
  });

  it('reports a working directory that does not exist', async () => {
    const result = await runProcess(['sh', '-c', 'true'], { cwd: join(dir, 'missing') });
    expect(result.startError).toBeDefined();
    expect(result.exitCode).toBeNull();
  });

  it('reports an empty argv', async () => {
    const result = await runProcess([], { cwd: dir });
    expect(result.startError).toBe('no program given');
  });
});

describe('runProcess: stopping', () => {
  /** `script` run under sh with a fresh fifo in $FIFO and an abort signal, with `options`. */
  function abortable(script: string, options: Partial<RunOptions> = {}) {
    const fifo = makeFifo(dir);
    const controller = new AbortController();
    const running = runProcess(['sh', '-c', script], {
      cwd: dir,
      env: { FIFO: fifo },
      signal: controller.signal,
      ...options,
    });
    return { fifo, controller, running };
  }

  it('stops the whole process group when the timeout expires', async () => {
    const result = await runProcess(['sh', '-c', 'sleep 30 & echo $!; wait'], {
      cwd: dir,
      timeoutMs: 200,
    });
    const child = Number(result.output.trim());
    pidsToKill.push(child);
    expect(result.timedOut).toBe(true);
    expect(result.cancelled).toBe(false);
    expect(result.exitCode).toBeNull();
    expect(result.signal).toBe('SIGTERM');
    expect(child).toBeGreaterThan(0);
    await waitForExit(child);
  });

  it('stops the group when the signal is aborted', async () => {
    const { fifo, controller, running } = abortable('sleep 30 & echo $! > "$FIFO"; wait');
    const child = Number(await firstLine(fifo));
    pidsToKill.push(child);
    expect(isAlive(child)).toBe(true);
    controller.abort();
    const result = await running;
    expect(result.cancelled).toBe(true);
    expect(result.timedOut).toBe(false);
    await waitForExit(child);
  });

  it('does not start a program when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const marker = join(dir, 'ran');
    const result = await runProcess(['sh', '-c', `touch '${marker}'`], {
      cwd: dir,
      signal: controller.signal,
    });
    expect(result.cancelled).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });

  it('sends SIGKILL after the grace period to a group that ignores SIGTERM', async () => {
    // A fake clock for the grace period, and the signals as they are sent (they still are).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const kill = vi.spyOn(process, 'kill');
    try {
      const { fifo, controller, running } = abortable(`trap '' TERM; echo $$ > "$FIFO"; sleep 30`, {
        killGraceMs: 300,
      });
      const shell = Number(await firstLine(fifo));
      pidsToKill.push(shell);
      const sent = (): unknown[] =>
        kill.mock.calls.filter(([pid]) => pid === -shell).map(([, signal]) => signal);
      controller.abort();
      expect(sent()).toEqual(['SIGTERM']);
      await vi.advanceTimersByTimeAsync(299);
      expect(sent()).toEqual(['SIGTERM']);
      expect(isAlive(shell)).toBe(true);
      await vi.advanceTimersByTimeAsync(1);
      // (Once the call is over, a group still alive gets another SIGKILL.)
      expect(sent().slice(0, 3)).toEqual(['SIGTERM', 0, 'SIGKILL']);
      const result = await running;
      expect(result.signal).toBe('SIGKILL');
      expect(result.cancelled).toBe(true);
      await waitForExit(shell);
    } finally {
      kill.mockRestore();
      vi.useRealTimers();
    }
  });

  it('does not wait for the grace period when SIGTERM is obeyed', async () => {
    const { fifo, controller, running } = abortable('echo ready > "$FIFO"; sleep 30', {
      killGraceMs: 20_000,
    });
    await firstLine(fifo);
    controller.abort();
    const result = await running;
    expect(result.cancelled).toBe(true);
    expect(result.signal).toBe('SIGTERM');
  });
});

describe('runProcess with background children', () => {
  it('returns soon after the command exits even when a background job holds the output open', async () => {
    const result = await runProcess(['bash', '-c', 'sleep 30 & echo "started $!"'], {
      cwd: tmpdir(),
      drainMs: 50,
    });
    const pid = Number(/^started (\d+)\n$/.exec(result.output)?.[1]);
    pidsToKill.push(pid);
    expect(result.exitCode).toBe(0);
    expect(pid).toBeGreaterThan(0);
    // It returned while the job that holds the output open still runs.
    expect(isAlive(pid)).toBe(true);
    process.kill(pid, 'SIGKILL');
  });
});

describe('runProcess with its output in a file', () => {
  /** Runs `command` with its output in a new file; the result and what the file then holds. */
  async function intoFile(command: string, options: Partial<RunOptions> = {}) {
    const path = join(dir, 'out.txt');
    const fd = openSync(path, 'ax+', 0o600);
    try {
      const result = await runProcess(['sh', '-c', command], {
        cwd: dir,
        outputFd: fd,
        ...options,
      });
      return { result, text: readFileSync(path, 'utf8') };
    } finally {
      closeSync(fd);
    }
  }

  it('writes stdout and stderr to the file, in the order written, and reads nothing', async () => {
    const { result, text } = await intoFile('echo out; echo err >&2; echo again', { bytes: true });
    expect(result).toMatchObject({ exitCode: 0, output: '', stderr: '' });
    expect(result.bytes).toBeUndefined();
    expect(text).toBe('out\nerr\nagain\n');
  });

  it('waits for what a background job prints after the leader exited', async () => {
    // Long enough that only the job's end can end the wait.
    const { result, text } = await intoFile('(sleep 0.2; echo late) & echo early', {
      drainMs: 60_000,
    });
    expect(result.exitCode).toBe(0);
    expect(text).toBe('early\nlate\n');
  });

  it('returns soon after the exit when a background job keeps running', async () => {
    const { result, text } = await intoFile('sleep 30 & echo "started $!"', { drainMs: 50 });
    const pid = Number(/^started (\d+)\n$/.exec(text)?.[1]);
    pidsToKill.push(pid);
    expect(result.exitCode).toBe(0);
    expect(isAlive(pid)).toBe(true);
    process.kill(pid, 'SIGKILL');
  });

  it('stops the group through its limit signal, and says so', async () => {
    const fifo = makeFifo(dir);
    const limit = new AbortController();
    const running = intoFile('sleep 30 & echo $! > "$FIFO"; wait', {
      env: { FIFO: fifo },
      limit: limit.signal,
    });
    const child = Number(await firstLine(fifo));
    pidsToKill.push(child);
    limit.abort();
    const { result } = await running;
    expect(result).toMatchObject({ limited: true, cancelled: false, timedOut: false });
    expect(result.signal).toBe('SIGTERM');
    expect(result.startError).toBeUndefined();
    await waitForExit(child);
  });
});
