// The third part of running a call (src/host/tools/settle.ts), over fakes: the undo record, the
// audit, a long output cut, the result written after the placeholder, the spinner, the cursor,
// the hooks, and the `settled` event once the buffer's last call is done.
import { expect, it } from 'vitest';
import type { ToolOutcome } from '../../src/core/tools/registry.js';
import { WriteJournal, createExecutionContext } from '../../src/core/tools/context.js';
import { Emitter } from '../../src/core/util/emitter.js';
import type { PreparedCall } from '../../src/host/tools/prepare.js';
import type { ExecutorEvents, Running } from '../../src/host/tools/runs.js';
import { type AuditFields, Settler, type SettlePorts } from '../../src/host/tools/settle.js';
import { FACTS, config, deferred, fakePorts, quickTool } from '../helpers/executor-fakes.js';

interface Harness {
  settler: Settler;
  journal: ReturnType<typeof fakePorts>['journal'];
  audits: AuditFields[];
  events: string[];
  /** Runs still going in the buffer (the `idle` answer). */
  others: { count: number };
}

function harness(
  options: { builtin?: string[]; injected?: boolean; heldBack?: boolean } = {},
): Harness {
  const fake = fakePorts([], options);
  const audits: AuditFields[] = [];
  const events: string[] = [];
  const others = { count: 0 };
  const emitter = new Emitter<ExecutorEvents>();
  emitter.subscribe({
    settled: ({ bufnr }) => events.push(`settled ${String(bufnr)}`),
    cancelled: ({ bufnr }) => events.push(`cancelled ${String(bufnr)}`),
    output: () => undefined,
    stopped: () => undefined,
  });
  const results: SettlePorts['results'] = {
    inject: (bufnr, id, outcome, replace, queued) => {
      fake.journal.add(`inject ${id} ${JSON.stringify(outcome)} replace=${String(replace)}`);
      queued?.();
      return Promise.resolve(options.injected ?? true);
    },
  };
  const ports: SettlePorts = {
    ...fake.deps,
    results,
    // What rides with the result's write; `heldBack`: its batch was held back.
    writes: {
      noticeAfterWrites: (method, params) => {
        fake.journal.add(`ride ${method} ${JSON.stringify(params)}`);
        return Promise.resolve(options.heldBack !== true);
      },
    },
    audit: (_config, fields) => {
      audits.push(fields);
      return Promise.resolve();
    },
    runs: {
      returned: (run) => {
        fake.journal.add(`returned ${run.id}`);
      },
      alone: () => others.count === 0,
      release: (run, options) => {
        fake.journal.add(`release ${run.id}${options?.followed === true ? ' followed' : ''}`);
      },
      idle: () => others.count === 0,
      backgroundCount: () => 0,
    },
    events: emitter,
  };
  return { settler: new Settler(ports), journal: fake.journal, audits, events, others };
}

function running(id: string, extra: Partial<Running> = {}): Running {
  return {
    id,
    name: 'tool',
    bufnr: 1,
    startedAt: 0,
    controller: new AbortController(),
    background: false,
    cancelled: false,
    ...extra,
  };
}

function prepared(name: string, journal?: WriteJournal): PreparedCall {
  const def = quickTool(name);
  const execCtx = createExecutionContext(
    { bufnr: 1, cwd: '/work', timeout: 5, toolId: 't' },
    '/home/u',
  );
  return {
    def,
    toolConfig: undefined,
    execCtx,
    ...(journal === undefined
      ? {}
      : {
          journal: {
            entries: journal,
            limits: { enabled: true, max_bytes: 10, max_total_bytes: 100, max_age_days: 1 },
          },
        }),
  };
}

const call = (id: string, name = 'tool') => ({ bufnr: 1, id, name, input: { q: 1 } });

function context(
  placed: Promise<unknown> = Promise.resolve(),
  tools: Record<string, unknown> = {},
) {
  return { config: config(tools), facts: FACTS, replaceFinished: false, placed };
}

const outcome = (value: ToolOutcome) => ({ outcome: value, durationMs: 12 });

/** Settle the call `id` of a `tool` with `value`, its placeholder in, with these `tools` settings. */
function settleCall(
  h: Harness,
  id: string,
  value: ToolOutcome,
  tools: Record<string, unknown> = {},
) {
  return h.settler.settle(
    call(id),
    running(id),
    prepared('tool'),
    outcome(value),
    context(Promise.resolve(), tools),
  );
}

it('writes the result after the placeholder; the spinner, the lock, the cursor and the hook ride with it', async () => {
  const h = harness();
  const placed = deferred<unknown>();
  const settling = h.settler.settle(
    call('a'),
    running('a'),
    prepared('tool'),
    outcome({ ok: true, output: 'fine' }),
    context(placed.promise),
  );
  await new Promise<void>((resolve) => setImmediate(resolve));
  // The slot is free once the tool returned; the result waits for its placeholder.
  expect(h.journal.entries).toEqual(['returned a']);
  placed.resolve(undefined);
  await settling;
  expect(h.journal.entries).toEqual([
    'returned a',
    'inject a {"ok":true,"output":"fine"} replace=false',
    'ride tools.spinner {"bufnr":1,"tool_id":"a","state":"success"}',
    // The run is over before the batch leaves.
    'release a followed',
    'ride buffer.unlock {"bufnr":1,"owner":"tools"}',
    'ride tools.cursor {"bufnr":1,"tool_id":"a","mode":"result"}',
    'ride hooks.emit {"name":"tool:completed","data":{"bufnr":1,"tool_name":"tool","tool_id":"a","status":"success"}}',
  ]);
  expect(h.events).toEqual(['settled 1']);
  expect(h.audits).toEqual([
    {
      tool: 'tool',
      id: 'a',
      bufnr: 1,
      args: { q: 1 },
      success: true,
      durationMs: 12,
      error: undefined,
    },
  ]);
});

it('says nothing while another call of the buffer runs; no cursor when the result did not land', async () => {
  const h = harness({ injected: false });
  h.others.count = 1;
  await settleCall(h, 'b', { ok: false, error: 'broke' }, { show_spinner: false });
  expect(h.journal.of('lua tools.cursor')).toEqual([]);
  expect(h.journal.of('lua tools.spinner')).toEqual([]);
  expect(h.journal.of('ride')).toEqual([]);
  expect(h.events).toEqual([]);
  expect(h.audits[0]?.error).toBe('broke');
});

it('with another call of the buffer running, what follows the result is sent after its write', async () => {
  const h = harness();
  h.others.count = 1;
  await settleCall(h, 'b', { ok: true, output: 'fine' }, { cursor_after_result: 'next' });
  expect(h.journal.entries.slice(1)).toEqual([
    'inject b {"ok":true,"output":"fine"} replace=false',
    'lua tools.spinner {"bufnr":1,"tool_id":"b","state":"success"}',
    'release b',
    'lua tools.cursor {"bufnr":1,"tool_id":"b","mode":"next"}',
    'lua hooks.emit {"name":"tool:completed","data":{"bufnr":1,"tool_name":"tool","tool_id":"b","status":"success"}}',
  ]);
});

it('when the batch was held back, what rode is sent again after the write (the cursor only to a written result)', async () => {
  const settleOne = async (injected: boolean) => {
    const h = harness({ heldBack: true, injected });
    await settleCall(h, 'c', { ok: false, error: 'broke' });
    return h.journal.entries.filter((entry) => !entry.startsWith('ride'));
  };
  const sent = [
    'lua tools.spinner {"bufnr":1,"tool_id":"c","state":"error"}',
    'lua buffer.unlock {"bufnr":1,"owner":"tools"}',
    'lua tools.cursor {"bufnr":1,"tool_id":"c","mode":"result"}',
    'lua hooks.emit {"name":"tool:completed","data":{"bufnr":1,"tool_name":"tool","tool_id":"c","status":"error"}}',
  ];
  expect((await settleOne(true)).slice(2)).toEqual(['release c followed', ...sent]);
  expect((await settleOne(false)).slice(2)).toEqual([
    'release c followed',
    ...sent.filter((entry) => !entry.includes('tools.cursor')),
  ]);
});

it('cuts a long output of a tool that is not built in, saving the whole of it; a built-in’s is kept', async () => {
  const long = Array.from({ length: 3000 }, (_, i) => `line ${String(i)}`).join('\n');
  const h = harness({ builtin: ['bash'] });
  const settleLong = (id: string, name: string) =>
    h.settler.settle(
      call(id, name),
      running(id),
      prepared(name),
      outcome({ ok: true, output: long }),
      context(),
    );
  await settleLong('c', 'mine');
  await settleLong('d', 'bash');
  const [cut, kept] = h.journal.of('inject');
  expect(cut?.length).toBeLessThan(long.length);
  expect(cut).toContain('line 0');
  expect(cut).not.toContain('line 2999');
  expect(kept).toContain('line 2999');
});

it('keeps what the files held before, even for a call that failed', async () => {
  const h = harness();
  const journal = new WriteJournal(10);
  journal.entries.set('/work/x', { kind: 'absent' });
  await h.settler.settle(
    call('e'),
    running('e'),
    prepared('tool', journal),
    outcome({ ok: false, error: 'half' }),
    context(),
  );
  expect(h.journal.of('record')).toEqual(['record e 1']);
});

it('a background job says it completed', async () => {
  const h = harness();
  await h.settler.settle(
    call('f'),
    running('f', { background: true, jobId: 4 }),
    prepared('tool'),
    outcome({ ok: true, output: 'ok' }),
    context(),
  );
  expect(h.journal.of('hook job:completed')).toEqual([
    'hook job:completed {"bufnr":1,"job_id":"4","tool_id":"f","tool_name":"tool","success":true,"active_count":0}',
  ]);
});

it('a refused call gets its error as the result', async () => {
  const h = harness();
  await h.settler.refuse(call('g'), 'not offered', context());
  expect(h.journal.entries).toEqual([
    'inject g {"ok":false,"error":"not offered"} replace=false',
    'hook tool:completed {"bufnr":1,"tool_name":"tool","tool_id":"g","status":"error"}',
  ]);
  expect(h.events).toEqual(['settled 1']);
});
