// Middleware around tool execution, tool filters, retryable results and the mock-tool helper
// (docs/tools.md, "Middleware"): a declarative http tool behind rate-limit,
// timeout and logging middleware against a slow local server.
import { type Server, createServer } from 'node:http';
import { realpathSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { loadDeclarativeDirs } from '../../src/core/tools/declarative/index.js';
import { ToolFilterError, filterTools } from '../../src/core/tools/filter.js';
import {
  type ToolLogRecord,
  type ToolMiddleware,
  compose,
  loggingMiddleware,
  rateLimitMiddleware,
  retryMiddleware,
  timeoutMiddleware,
} from '../../src/core/tools/middleware.js';
import { ToolRegistry } from '../../src/core/tools/registry.js';
import { createBuiltinTools } from '../../src/core/tools/builtins.js';
import { ProcessManager } from '../../src/core/tools/background.js';
import { Probes } from '../../src/core/tools/probes.js';
import { createMockTools, testContext } from '../../src/core/tools/testing.js';
import { closeServer } from '../helpers/http.js';

let server: Server | undefined;
let dir: string | undefined;

afterEach(async () => {
  await closeServer(server);
  server = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const ok = (output: string) => () => Promise.resolve({ ok: true as const, output });

describe('middleware', () => {
  it('V-21: the first middleware is the outermost', async () => {
    const trace: string[] = [];
    const mark =
      (name: string): ToolMiddleware =>
      (next) =>
      async (call) => {
        trace.push(`${name}>`);
        const out = await next(call);
        trace.push(`<${name}`);
        return out;
      };
    const handler = compose([mark('A'), mark('B')], () => {
      trace.push('tool');
      return Promise.resolve({ ok: true, output: 'x' });
    });
    expect(await handler({ name: 't', input: {}, ctx: testContext() })).toEqual({
      ok: true,
      output: 'x',
    });
    expect(trace).toEqual(['A>', 'B>', 'tool', '<B', '<A']);
  });

  it('a throwing tool or middleware becomes an error result the outer ones see', async () => {
    const seen: boolean[] = [];
    const outer: ToolMiddleware = (next) => async (call) => {
      const out = await next(call);
      seen.push(out.ok);
      return out;
    };
    const boom: ToolMiddleware = () => () => Promise.reject(new Error('middleware broke'));
    expect(
      await compose([outer, boom], ok('x'))({ name: 't', input: {}, ctx: testContext() }),
    ).toEqual({
      ok: false,
      error: 'middleware broke',
    });
    expect(seen).toEqual([false]);
  });

  it('V-22: rate limit in wait mode spaces one tool, leaves others alone; fail mode refuses', async () => {
    // A fake clock: the calls are spaced by the limiter, not by how busy the machine is.
    vi.useFakeTimers();
    try {
      const wait = compose([rateLimitMiddleware({ limits: { 'web.fetch': '1/s' } })], (call) =>
        Promise.resolve({ ok: true, output: call.name }),
      );
      const start = performance.now();
      const done: number[] = [];
      const calls = [0, 1, 2].map(() =>
        wait({ name: 'web.fetch', input: {}, ctx: testContext() }).then(() =>
          done.push(performance.now() - start),
        ),
      );
      // Another tool answers with the clock standing still.
      expect(await wait({ name: 'read', input: {}, ctx: testContext() })).toEqual({
        ok: true,
        output: 'read',
      });
      expect(performance.now() - start).toBe(0);
      await vi.advanceTimersByTimeAsync(0);
      expect(done).toEqual([0]);
      await vi.advanceTimersByTimeAsync(999);
      expect(done).toEqual([0]);
      await vi.advanceTimersByTimeAsync(1);
      expect(done).toEqual([0, 1000]);
      await vi.advanceTimersByTimeAsync(1000);
      await Promise.all(calls);
      expect(done).toEqual([0, 1000, 2000]);
    } finally {
      vi.useRealTimers();
    }

    const fail = compose(
      [rateLimitMiddleware({ limits: { 'web.fetch': '1/s' }, mode: 'fail' })],
      ok('y'),
    );
    const results = await Promise.all(
      [0, 1, 2].map(() => fail({ name: 'web.fetch', input: {}, ctx: testContext() })),
    );
    expect(results[0]).toEqual({ ok: true, output: 'y' });
    for (const r of results.slice(1)) {
      expect(r).toMatchObject({
        ok: false,
        error: expect.stringMatching(/rate limited/) as unknown,
      });
    }
  });

  it('a call waiting for its rate-limit token ends when it is cancelled', async () => {
    const limited = compose([rateLimitMiddleware({ limits: { slow: '1/h' } })], ok('ran'));
    await limited({ name: 'slow', input: {}, ctx: testContext() });
    const controller = new AbortController();
    const pending = limited({
      name: 'slow',
      input: {},
      ctx: testContext({ signal: controller.signal }),
    });
    controller.abort();
    expect(await pending).toMatchObject({
      ok: false,
      error: expect.stringMatching(/cancelled/) as unknown,
    });
  });

  it('V-23: one log record per call, with secrets redacted', async () => {
    const records: ToolLogRecord[] = [];
    const handler = compose([loggingMiddleware((r) => records.push(r))], ok('done'));
    await handler({
      name: 'web.fetch',
      input: { url: 'https://x', api_key: 'sk-123', headers: { Authorization: 'Bearer t' } },
      ctx: testContext(),
    });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ tool: 'web.fetch', success: true });
    expect(typeof records[0]?.durationMs).toBe('number');
    expect(records[0]?.args).toEqual({
      url: 'https://x',
      api_key: '[REDACTED]',
      headers: { Authorization: '[REDACTED]' },
    });
    expect(JSON.stringify(records)).not.toContain('sk-123');
  });

  it('timeout aborts the signal, answers at once and ignores the late result', async () => {
    vi.useFakeTimers();
    try {
      let aborted = false;
      let late = false;
      const handler = compose([timeoutMiddleware(50)], (call) => {
        call.ctx.signal.addEventListener('abort', () => (aborted = true));
        return new Promise((resolve) =>
          setTimeout(() => {
            late = true;
            resolve({ ok: true, output: 'too late' });
          }, 300),
        );
      });
      let answer: unknown;
      void handler({ name: 't', input: {}, ctx: testContext() }).then((outcome) => {
        answer = outcome;
      });
      await vi.advanceTimersByTimeAsync(49);
      expect([answer, aborted]).toEqual([undefined, false]);
      await vi.advanceTimersByTimeAsync(1);
      expect(answer).toEqual({ ok: false, error: 'Tool timed out after 50ms' });
      expect(aborted).toBe(true);
      expect(late).toBe(false);
      // The tool's own answer comes later and changes nothing.
      await vi.advanceTimersByTimeAsync(250);
      expect(late).toBe(true);
      expect(answer).toEqual({ ok: false, error: 'Tool timed out after 50ms' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('V-25: retryable failures are retried with backoff; others run once', async () => {
    const mock = createMockTools();
    mock.on('flaky').fails('busy', { retryable: true }).times(2).then.returns('finally');
    mock.on('broken').fails('no such thing');
    mock.use(retryMiddleware({ attempts: 3, backoffMs: 5 }));
    expect(await mock.execute('flaky')).toEqual({ ok: true, output: 'finally' });
    expect(mock.calls('flaky')).toHaveLength(3);
    expect(await mock.execute('broken')).toEqual({ ok: false, error: 'no such thing' });
    expect(mock.calls('broken')).toHaveLength(1);
  });
});

describe('filter', () => {
  it('V-24: a filter offers and runs only its tools; an unknown name suggests the right one', () => {
    const registry = new ToolRegistry();
    const builtins = createBuiltinTools({ processes: new ProcessManager(), probes: new Probes() });
    for (const def of builtins) registry.register(def);
    // `web.search` is the alias of the built-in `web_fetch`; a dotted name of its own stands in.
    registry.register({
      name: 'web.search',
      description: 'Search',
      inputSchema: { type: 'object' },
    });
    const filter = filterTools(registry, ['read', 'web.search']);
    expect(filter.specs().map((s) => s.name)).toEqual(['read', 'web.search']);
    expect(filter.get('write')).toBeUndefined();
    expect(filter.refusal('write')).toBe(
      "Tool 'write' is not available here. The available tools are: `read`, `web.search`",
    );
    expect(filter.refusal('read')).toBeUndefined();
    expect(() => filterTools(registry, ['raed'])).toThrow(ToolFilterError);
    expect(() => filterTools(registry, ['raed'])).toThrow(
      "unknown tool 'raed' (did you mean 'read'?)",
    );
  });
});

describe('mock tools', () => {
  it('V-26: on(name).returns(output), calls(name)', async () => {
    const mock = createMockTools();
    mock.on('web.search').returns('mock results');
    expect(await mock.execute('web.search', { query: 'flemma' })).toEqual({
      ok: true,
      output: 'mock results',
    });
    expect(mock.calls('web.search')).toEqual([{ query: 'flemma' }]);
    expect(mock.calls('web.search').length).toBe(1);
    // The mocks register like real tools.
    const registry = mock.register();
    expect(registry.has('web.search')).toBe(true);
    expect(await mock.execute('nope')).toEqual({
      ok: false,
      error: "No mock for tool 'nope' (mocked: web.search)",
    });
  });
});

describe('dist/testing.mjs (needs a build)', () => {
  it("exports the mock helper for users' tests", async () => {
    const url = new URL('../../dist/testing.mjs', import.meta.url).href;
    const mod = (await import(url)) as { createMockTools: typeof createMockTools };
    const mock = mod.createMockTools();
    mock.on('web.search').returns('mock results');
    expect(await mock.execute('web.search', {})).toEqual({ ok: true, output: 'mock results' });
    expect(mock.calls('web.search')).toHaveLength(1);
  });
});

describe('X-07: a declarative http tool behind logging, rate-limit and timeout middleware', () => {
  it('the second call waits for its token, both are bounded by the timeout, two log entries', async () => {
    let requests = 0;
    let onRequest: (() => void) | undefined;
    const nextRequest = (): Promise<void> =>
      new Promise((resolve) => {
        onRequest = resolve;
      });
    // Slow: it never answers (the timeout does).
    server = createServer(() => {
      requests += 1;
      onRequest?.();
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    dir = realpathSync(await mkdtemp(join(tmpdir(), 'flemma-x07-')));
    await writeFile(
      join(dir, 'fetch.yaml'),
      `name: web.fetch\ndescription: Fetch\nimplementation: { type: http, url: "http://127.0.0.1:${String(port)}/" }\n`,
    );
    const loaded = await loadDeclarativeDirs([dir]);
    const tool = loaded.tools[0];
    if (tool?.execute === undefined) throw new Error('not loaded');
    const execute = tool.execute;
    // A fake clock for the middleware (the token and the timeouts); the requests are real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const log: ToolLogRecord[] = [];
      const handler = compose(
        [
          loggingMiddleware((r) => log.push(r)),
          rateLimitMiddleware({ limits: { 'web.fetch': '1/300ms' } }),
          timeoutMiddleware(200),
        ],
        (call) => execute(call.input, call.ctx),
      );
      const start = performance.now();
      const finished: number[] = [];
      const first = nextRequest();
      const results = [0, 1].map((i) =>
        handler({ name: 'web.fetch', input: {}, ctx: testContext() }).then((r) => {
          finished.push(i, performance.now() - start);
          return r;
        }),
      );
      // The first call is at the server; the second waits for its token.
      await first;
      expect(requests).toBe(1);
      await vi.advanceTimersByTimeAsync(200);
      expect(finished).toEqual([0, 200]);
      const second = nextRequest();
      await vi.advanceTimersByTimeAsync(100);
      await second;
      expect(requests).toBe(2);
      await vi.advanceTimersByTimeAsync(200);
      // First: the timeout at 200 ms. Second: its token at 300 ms, then the timeout.
      expect(await Promise.all(results)).toEqual([
        { ok: false, error: 'Tool timed out after 200ms' },
        { ok: false, error: 'Tool timed out after 200ms' },
      ]);
      expect(finished).toEqual([0, 200, 1, 500]);
      expect(log).toHaveLength(2);
      expect(log.every((r) => r.tool === 'web.fetch' && !r.success)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
