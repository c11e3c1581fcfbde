import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { SdkLoader } from '../../src/core/provider/sdk.js';
import { actions, dispatch } from '../../src/host/actions.js';
import type { Host } from '../../src/host/wiring.js';
import { createFileLogger } from '../../src/host/log.js';
import { BASH_ROUND } from '../helpers/chat-lines.js';

/** The busy state `host:info` reports: a session's and the running tools. */
function work(busySessions = false, tools: unknown[] = []): Pick<Host, 'sessions' | 'executor'> {
  return {
    sessions: { any: () => busySessions },
    executor: { list: () => tools },
  } as unknown as Pick<Host, 'sessions' | 'executor'>;
}

function context(): Host {
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
    ...work(),
  } as unknown as Host;
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
    expect(info['busy']).toBe(false);
  });

  it('says it is busy while a session works or a tool (a background job too) runs', async () => {
    const busy = async (ctx: Host): Promise<unknown> =>
      ((await dispatch(ctx, 'host:info', null)) as Record<string, unknown>)['busy'];
    expect(await busy({ ...context(), ...work(true) })).toBe(true);
    expect(await busy({ ...context(), ...work(false, [{ id: 'toolu_1' }]) })).toBe(true);
    expect(await busy(context())).toBe(false);
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

describe('navigation questions (buffer:definition, buffer:hover)', () => {
  const CHAT = ['@You:', 'see @./notes.md and @./gone.md', '@Assistant:', ...BASH_ROUND];

  /** A context whose only part is a document store following buffer 3 with `CHAT`. */
  function withChat(): { ctx: Host; attached: number[] } {
    const attached: number[] = [];
    const documents = {
      attach: (bufnr: number) => {
        attached.push(bufnr);
        return Promise.resolve(
          bufnr === 3 ? { bufnr, lines: CHAT, tick: 1, document: parseLines(CHAT) } : undefined,
        );
      },
    };
    return { ctx: { ...context(), documents } as unknown as Host, attached };
  }

  it('answers from the followed tree, with paths from the chat file or the cwd', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flemma-nav-'));
    try {
      mkdirSync(join(dir, 'chats'));
      writeFileSync(join(dir, 'chats', 'notes.md'), 'twelve bytes');
      writeFileSync(join(dir, 'notes.md'), 'x');
      const { ctx, attached } = withChat();
      const at = (row: number, col: number, file = join(dir, 'chats', 'talk.chat')) => ({
        bufnr: 3,
        row,
        col,
        file,
        cwd: dir,
      });
      expect(await dispatch(ctx, 'buffer:definition', at(3, 0))).toEqual({ row: 8 });
      expect(await dispatch(ctx, 'buffer:definition', at(9, 0))).toEqual({ row: 3 });
      expect(await dispatch(ctx, 'buffer:definition', at(1, 6))).toEqual({
        path: join(dir, 'chats', 'notes.md'),
      });
      // A buffer without a name: references start at the cwd.
      expect(await dispatch(ctx, 'buffer:definition', at(1, 6, ''))).toEqual({
        path: join(dir, 'notes.md'),
      });
      expect(await dispatch(ctx, 'buffer:definition', { ...at(1, 22), files_only: true })).toEqual({
        message: `@./gone.md: no such file: ${join(dir, 'chats', 'gone.md')}`,
      });
      expect(
        await dispatch(ctx, 'buffer:definition', { ...at(3, 0), files_only: true }),
      ).toBeNull();
      expect(await dispatch(ctx, 'buffer:hover', at(1, 6))).toBe(
        `**@./notes.md**\n\n\`${join(dir, 'chats', 'notes.md')}\` (12 bytes)`,
      );
      expect(await dispatch(ctx, 'buffer:hover', at(10, 0))).toContain(
        '**Tool result** for `bash` (`t1`): finished',
      );
      expect(attached.every((bufnr) => bufnr === 3)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers null for a buffer it cannot follow, and refuses malformed params', async () => {
    const { ctx } = withChat();
    const params = { bufnr: 9, row: 0, col: 0, file: '', cwd: '/' };
    expect(await dispatch(ctx, 'buffer:definition', params)).toBeNull();
    expect(await dispatch(ctx, 'buffer:hover', params)).toBeNull();
    await expect(dispatch(ctx, 'buffer:definition', { bufnr: 3, row: -1 })).rejects.toThrow(
      /expected \{ bufnr, row, col, file, cwd \}/,
    );
  });
});

describe("a Lua tool's truncation (tools:truncate, tools:format-size)", () => {
  it('answers truncate.ts in the names Lua reads, absent fields left out', async () => {
    const ctx = context();
    expect(
      await dispatch(ctx, 'tools:truncate', { text: 'a\nb\nc', from: 'tail', max_lines: 2 }),
    ).toEqual({
      content: 'b\nc',
      truncated: true,
      truncated_by: 'lines',
      total_lines: 3,
      total_bytes: 5,
      shown_lines: 2,
      shown_bytes: 3,
      output_lines: 2,
      output_bytes: 3,
    });
    expect(
      await dispatch(ctx, 'tools:truncate', { text: 'abcdefghij', from: 'head', max_bytes: 4 }),
    ).toEqual({
      content: 'abcd',
      truncated: true,
      truncated_by: 'bytes',
      total_lines: 1,
      total_bytes: 10,
      shown_lines: 1,
      shown_bytes: 4,
      cut_line: { line: 1, line_bytes: 10, kept_bytes: 4 },
      output_lines: 1,
      output_bytes: 4,
    });
    // A limit that is not a number is the default, as the Lua API always took it.
    expect(
      await dispatch(ctx, 'tools:truncate', { text: 'x\n', from: 'head', max_lines: 'two' }),
    ).toEqual({
      content: 'x\n',
      truncated: false,
      total_lines: 1,
      total_bytes: 2,
      shown_lines: 1,
      shown_bytes: 2,
      output_lines: 1,
      output_bytes: 2,
    });
    await expect(dispatch(ctx, 'tools:truncate', { text: 1, from: 'middle' })).rejects.toThrow(
      /expected \{ text = <string>, from = "head" \| "tail" \}/,
    );
  });

  it('formats sizes; anything but a positive number is 0B', async () => {
    const ctx = context();
    expect(await dispatch(ctx, 'tools:format-size', { bytes: 12345 })).toBe('12.1KB');
    expect(await dispatch(ctx, 'tools:format-size', { bytes: 'big' })).toBe('0B');
    expect(await dispatch(ctx, 'tools:format-size', null)).toBe('0B');
  });
});

describe("a Lua tool's write policy (tools:writable)", () => {
  it('answers the sandbox paths rule: inside the writable paths, links followed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flemma-writable-'));
    try {
      mkdirSync(join(dir, 'work'));
      symlinkSync('/etc', join(dir, 'work', 'out'));
      const ctx = context();
      const ask = (path: string) =>
        dispatch(ctx, 'tools:writable', {
          path,
          base: join(dir, 'work'),
          rw_paths: [join(dir, 'work')],
        });
      expect(await ask('notes.txt')).toBe(true);
      expect(await ask('sub/new.txt')).toBe(true);
      expect(await ask('../elsewhere.txt')).toBe(false);
      expect(await ask('out/passwd')).toBe(false);
      expect(await ask('/etc/hosts')).toBe(false);
      await expect(dispatch(ctx, 'tools:writable', { path: 'x' })).rejects.toThrow(
        /expected \{ path = <string>, base = <string>, rw_paths = <list> \}/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
