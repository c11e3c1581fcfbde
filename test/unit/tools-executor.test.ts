// The tool executor over fakes of its ports (no Neovim): calls start without any round trip,
// `tools.max_concurrent` throttles them, a cancel is said as an event, and so is the end of the
// buffer's last running call; a call that may not run gets an error result.
import { expect, it } from 'vitest';
import { CANCELLED_TEXT } from '../../src/host/tools/lua-tools.js';
import { ToolExecutor, type ExecutorEvents } from '../../src/host/tools/executor.js';
import { FACTS, HeldTool, config, gate, fakePorts, quickTool } from '../helpers/executor-fakes.js';

/** An executor over fakes, with the events it emitted. */
function executorWith(...args: Parameters<typeof fakePorts>) {
  const fake = fakePorts(...args);
  const executor = new ToolExecutor(fake.deps);
  const events: string[] = [];
  const settled: ExecutorEvents['settled'][] = [];
  executor.events.subscribe({
    settled: (payload) => {
      events.push(`settled ${String(payload.bufnr)}`);
      settled.push(payload);
    },
    cancelled: ({ bufnr }) => events.push(`cancelled ${String(bufnr)}`),
    output: () => undefined,
    stopped: () => undefined,
  });
  return { fake, executor, events, settled };
}

/** Lets the promises that are ready run (no time passes). */
async function turn(times = 5): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

it('starts an approved call without asking the editor anything, the placeholder written while it runs', async () => {
  const tool = new HeldTool('slow');
  const { fake, executor } = executorWith([tool.def()]);
  const done = executor.execute(1, 't1', 'slow', { n: 1 }, config(), {
    replaceFinished: false,
    facts: FACTS,
  });
  // The tool runs while its placeholder is still being written.
  await tool.startedCount(1);
  expect(fake.journal.entries).toContain('placeholder t1');
  expect(fake.journal.entries).not.toContain('placed t1');
  tool.release('t1');
  await turn();
  // Its result waits for the placeholder, then takes its place.
  expect(fake.journal.of('inject')).toEqual([]);
  fake.place('t1');
  await done;
  const order = fake.journal.entries.filter((e) =>
    /^(placed|inject|lua tools.cursor|hook|lua hooks.emit)/.test(e),
  );
  expect(order).toEqual([
    'hook tool:executing {"bufnr":1,"tool_name":"slow","tool_id":"t1"}',
    'placed t1',
    'inject t1 {"ok":true,"output":"done t1"}',
    'lua tools.cursor {"bufnr":1,"tool_id":"t1","mode":"result"}',
    'lua hooks.emit {"name":"tool:completed","data":{"bufnr":1,"tool_name":"slow","tool_id":"t1","status":"success"}}',
  ]);
  // The tool had returned before its placeholder was in: no spinner ran, it only ends.
  expect(fake.journal.of('lua tools.spinner')).toEqual([
    'lua tools.spinner {"bufnr":1,"tool_id":"t1","state":"success"}',
  ]);
  expect(fake.journal.of('lua buffer.')).toEqual([
    'lua buffer.lock {"bufnr":1,"owner":"tools"}',
    'lua buffer.unlock {"bufnr":1,"owner":"tools"}',
  ]);
});

it('shows the spinner on the placeholder’s row while the call runs', async () => {
  const tool = new HeldTool('slow');
  const { fake, executor } = executorWith([tool.def()]);
  const done = executor.execute(1, 't1', 'slow', {}, config(), {
    replaceFinished: false,
    facts: FACTS,
  });
  await tool.startedCount(1);
  fake.place('t1', 8);
  await turn();
  tool.release('t1');
  await done;
  expect(fake.journal.of('lua tools.spinner')).toEqual([
    'lua tools.spinner {"bufnr":1,"tool_id":"t1","row":8,"state":"running"}',
    'lua tools.spinner {"bufnr":1,"tool_id":"t1","state":"success"}',
  ]);
});

it('runs at most max_concurrent calls of a buffer, the rest as slots free up, and settles once', async () => {
  const tool = new HeldTool('slow');
  const { fake, executor, events, settled } = executorWith([tool.def()]);
  const calls = ['a', 'b', 'c'].map((id) => ({ id, name: 'slow', input: {} }));
  const used = config({ max_concurrent: 2 });
  executor.dispatch(7, calls, used, FACTS, true);
  await tool.startedCount(2);
  expect(tool.started).toEqual(['a', 'b']);
  expect(executor.hasQueue(7)).toBe(true);
  expect(executor.busy(7)).toBe(true);
  const key = { key: 'tools:throttled:7' };
  expect(fake.journal.of('notify')).toEqual([
    `notify info Executing 2/3 tools (max_concurrent=2) ${JSON.stringify(key)}`,
  ]);
  tool.release('a');
  await tool.startedCount(3);
  expect(executor.hasQueue(7)).toBe(false);
  tool.release('b');
  await turn();
  expect(events).toEqual([]);
  expect(fake.journal.of('lua notify.retract')).toEqual([]);
  tool.release('c');
  await turn();
  expect(events).toEqual(['settled 7']);
  expect(settled[0]?.config).toBe(used);
  expect(executor.isRunning(7)).toBe(false);
  expect(fake.journal.of('inject').length).toBe(3);
  // The message is taken back once the tools have ended, not before.
  expect(fake.journal.of('lua notify.retract')).toEqual([
    `lua notify.retract ${JSON.stringify(key)}`,
  ]);
});

it('says a cancel as an event, and the result says the call was cancelled', async () => {
  const tool = new HeldTool('slow');
  const { fake, executor, events } = executorWith([tool.def()]);
  executor.dispatch(2, [{ id: 'x', name: 'slow', input: {} }], config(), FACTS, false);
  await tool.startedCount(1);
  expect(executor.list().map((run) => run.id)).toEqual(['x']);
  expect(executor.cancelOldest(2)).toBe(true);
  expect(events).toEqual(['cancelled 2']);
  expect(tool.signals.get('x')?.aborted).toBe(true);
  tool.release('x', { ok: false, error: 'stopped' });
  await turn();
  expect(fake.journal.of('inject')).toEqual([
    `inject x ${JSON.stringify({ ok: false, error: CANCELLED_TEXT })}`,
  ]);
  expect(events).toEqual(['cancelled 2', 'settled 2']);
  expect(executor.cancelOldest(2)).toBe(false);
});

it('a read-only built-in starts at once; a tool that may change files waits for the turn’s git note', async () => {
  const read = new HeldTool('read');
  const bash = new HeldTool('bash');
  const { fake, executor } = executorWith([read.def(), bash.def()], {
    builtin: ['read', 'bash'],
  });
  fake.note = gate();
  const calls = [
    { id: 'r', name: 'read', input: {} },
    { id: 'b', name: 'bash', input: {} },
  ];
  executor.dispatch(1, calls, config(), FACTS, false);
  await read.startedCount(1);
  await turn();
  expect(bash.started).toEqual([]);
  fake.note.resolve();
  await bash.startedCount(1);
  read.release('r');
  bash.release('b');
  await turn();
  expect(fake.journal.of('inject').length).toBe(2);
});

// A call while a request runs is refused by the loop (test/unit/loop.test.ts, "<M-CR>").
it('starts nothing for a tool it does not know', async () => {
  const { fake, executor } = executorWith([quickTool('calc')]);
  const options = { replaceFinished: false, facts: FACTS };
  await executor.execute(2, 'u', 'cal', {}, config(), options);
  expect(fake.journal.of('notify')).toEqual([
    "notify warn Unknown tool: cal (did you mean 'calc'?)",
  ]);
  expect(fake.journal.of('inject')).toEqual([]);
  expect(fake.journal.of('lua buffer.lock')).toEqual([]);
});

it('a call the buffer’s tool list does not offer gets an error result and settles the buffer', async () => {
  const { fake, executor, events } = executorWith([quickTool('calc')]);
  fake.deps.catalogue.filterRefusal = () => 'calc is not offered in this buffer';
  await executor.execute(4, 't', 'calc', {}, config(), { replaceFinished: false, facts: FACTS });
  expect(fake.journal.of('inject')).toEqual([
    'inject t {"ok":false,"error":"calc is not offered in this buffer"}',
  ]);
  expect(fake.journal.of('hook')).toEqual([
    'hook tool:completed {"bufnr":4,"tool_name":"calc","tool_id":"t","status":"error"}',
  ]);
  expect(events).toEqual(['settled 4']);
});

it('moves a call to the background: the buffer unlocks, the job settles the buffer when done', async () => {
  const tool = new HeldTool('slow');
  const { fake, executor, events } = executorWith([tool.def()]);
  executor.dispatch(3, [{ id: 'j', name: 'slow', input: {} }], config(), FACTS, false);
  await tool.startedCount(1);
  expect(await executor.background(3, null)).toBe(true);
  expect(executor.busy(3)).toBe(false);
  expect(executor.isRunning(3)).toBe(true);
  expect(fake.journal.of('lua buffer.unlock').length).toBe(1);
  expect(fake.journal.of('hook job:submitted')).toEqual([
    'hook job:submitted {"bufnr":3,"job_id":"1","tool_id":"j","tool_name":"slow","active_count":1}',
  ]);
  tool.release('j');
  await turn();
  expect(fake.journal.of('hook job:completed')).toEqual([
    'hook job:completed {"bufnr":3,"job_id":"1","tool_id":"j","tool_name":"slow","success":true,"active_count":0}',
  ]);
  expect(events).toEqual(['settled 3']);
});

it('task calls take no slot of max_concurrent, and cancelling one cancels every task of the buffer', async () => {
  const task = new HeldTool('task');
  const slow = new HeldTool('slow');
  const { executor, events } = executorWith([task.def(), slow.def()]);
  const calls = [
    { id: 't1', name: 'task', input: {} },
    { id: 't2', name: 'task', input: {} },
    { id: 't3', name: 'task', input: {} },
    { id: 's1', name: 'slow', input: {} },
  ];
  executor.dispatch(4, calls, config({ max_concurrent: 1 }), FACTS, false);
  await task.startedCount(3);
  await slow.startedCount(1);
  expect(executor.hasQueue(4)).toBe(false);
  expect(executor.cancelOldest(4)).toBe(true);
  expect(['t1', 't2', 't3', 's1'].map((id) => task.signals.get(id)?.aborted ?? false)).toEqual([
    true,
    true,
    true,
    false,
  ]);
  expect(slow.signals.get('s1')?.aborted).toBe(false);
  expect(events).toEqual(['cancelled 4', 'cancelled 4', 'cancelled 4']);
});
