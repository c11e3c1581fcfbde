import { describe, expect, it } from 'vitest';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import { actions, dispatch } from '../../src/host/actions.js';
import type { HostContext } from '../../src/host/context.js';
import { createFileLogger } from '../../src/host/log.js';

function context(): HostContext {
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('these actions must not touch the editor');
      },
    },
  );
  return {
    nvim: unused,
    lua: unused,
    hooks: unused,
    writes: unused,
    sdks: new SdkLoader(),
    logger: createFileLogger(undefined, 'error'),
    startedAt: Date.now() - 1500,
    logFile: '/tmp/flemma.log',
  } as unknown as HostContext;
}

describe('the host dispatch table', () => {
  it('answers ping with who the host is, without touching the editor', async () => {
    const info = (await dispatch(context(), 'ping', null)) as Record<string, unknown>;
    expect(info).toMatchObject({
      pid: process.pid,
      node: process.version,
      log_file: '/tmp/flemma.log',
    });
    expect(info['uptime_ms']).toBeGreaterThanOrEqual(1500);
    expect(info['actions']).toEqual(Object.keys(actions).sort());
  });

  it('rejects an unknown method, naming the ones that exist', async () => {
    await expect(dispatch(context(), 'no:such-thing', null)).rejects.toThrow(
      /unknown method 'no:such-thing' \(known: .*ping/,
    );
    await expect(dispatch(context(), 'toString', null)).rejects.toThrow(/unknown method/);
  });

  it('sets the log level, and refuses one that does not exist', async () => {
    const ctx = context();
    expect(await dispatch(ctx, 'log:level', { level: 'debug' })).toEqual({ level: 'debug' });
    expect(ctx.logger.level).toBe('debug');
    await expect(dispatch(ctx, 'log:level', { level: 'loud' })).rejects.toThrow(
      'unknown log level "loud"',
    );
    expect(ctx.logger.level).toBe('debug');
  });
});
