// The background processes of the process_* tools: start, status, output, kill of the whole
// group, and the kill on host exit.
import { afterEach, describe, expect, it } from 'vitest';
import { ProcessManager } from '../../src/core/tools/background.js';
import { processTools } from '../../src/core/tools/definitions/process-tools.js';
import { createExecutionContext } from '../../src/core/tools/context.js';

let manager: ProcessManager | undefined;

afterEach(async () => {
  await manager?.dispose();
  manager = undefined;
});

/** Whether anything in the process group led by `pid` is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe('process tools', () => {
  it('start, status, output and kill through the tools; the group dies', async () => {
    manager = new ProcessManager();
    const m = manager;
    const [start, status, output, kill] = processTools(m);
    const ctx = createExecutionContext({ bufnr: 7, cwd: '/tmp', timeout: 30, toolId: 't' }, '/h');
    const started = await start?.execute?.({ command: 'echo ready; sleep 30 & wait' }, ctx);
    expect(started).toMatchObject({
      ok: true,
      output: expect.stringMatching(/^Started p1 .*running/) as unknown,
    });
    await until(() => (m.output('p1') ?? '').includes('ready'));
    expect(await output?.execute?.({ id: 'p1' }, ctx)).toMatchObject({
      ok: true,
      output: expect.stringContaining('ready') as unknown,
    });
    const listed = await status?.execute?.({}, ctx);
    expect(listed).toMatchObject({
      ok: true,
      output: expect.stringContaining('p1 (pid') as unknown,
    });
    const pid = m.info('p1')?.pid ?? 0;
    expect(await kill?.execute?.({ id: 'p1' }, ctx)).toMatchObject({
      ok: true,
      output: expect.stringMatching(/^Stopped p1 .*ended by SIGTERM/) as unknown,
    });
    // The backgrounded `sleep` was in the group: nothing is left.
    await until(() => !alive(pid));
    expect(alive(pid)).toBe(false);
    expect(m.info('p1')?.running).toBe(false);
    expect(await status?.execute?.({ id: 'p9' }, ctx)).toMatchObject({ ok: false });
    // Another buffer sees none of its own.
    const other = createExecutionContext({ bufnr: 8, cwd: '/tmp', timeout: 30, toolId: 't' }, '/h');
    expect(await status?.execute?.({}, other)).toEqual({
      ok: true,
      output: 'No background processes in this chat.',
    });
  });

  it('a program that cannot start is an error; killAllSync stops every live group', async () => {
    manager = new ProcessManager();
    const bad = await manager.start({
      bufnr: 1,
      argv: ['/nonexistent/prog'],
      command: 'x',
      cwd: '/tmp',
    });
    expect(bad.startError).toBeDefined();
    const ok = await manager.start({
      bufnr: 1,
      argv: ['sleep', '30'],
      command: 'sleep 30',
      cwd: '/tmp',
    });
    expect(ok.running).toBe(true);
    expect(manager.killAllSync()).toBe(1);
    await until(() => manager?.info(ok.id)?.running === false);
    expect(manager.info(ok.id)?.signal).toBe('SIGKILL');
  });
});
