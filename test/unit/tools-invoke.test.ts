// The second part of running a call (src/host/tools/invoke.ts), over fakes: `tool:executing`
// fires, the input is checked against the schema, the executor's timeout and a cancel stop the
// tool, and `tools.background_after` moves it to the background (where no timeout applies).
import { afterEach, expect, it, vi } from 'vitest';
import { createExecutionContext } from '../../src/core/tools/context.js';
import type { ToolDefinition, ToolOutcome } from '../../src/core/tools/registry.js';
import { type InvokePorts, invokeCall } from '../../src/host/tools/invoke.js';
import { CANCELLED_TEXT } from '../../src/host/tools/lua-tools.js';
import type { PreparedCall } from '../../src/host/tools/prepare.js';
import { config, fakePorts } from '../helpers/executor-fakes.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A tool that answers when its signal aborts, or when `finish` is called. */
function waitingTool(): {
  def: ToolDefinition;
  ran: string[];
  started: Promise<void>;
  finish: (o: ToolOutcome) => void;
} {
  const ran: string[] = [];
  let finish: (outcome: ToolOutcome) => void = () => undefined;
  let begun: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    begun = resolve;
  });
  const def: ToolDefinition = {
    name: 'wait',
    description: 'waits',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    execute: (input, ctx) =>
      new Promise<ToolOutcome>((resolve) => {
        ran.push(JSON.stringify(input));
        finish = resolve;
        begun();
        ctx.signal.addEventListener('abort', () => {
          resolve({ ok: false, error: 'stopped by its signal' });
        });
      }),
  };
  return {
    def,
    ran,
    started,
    finish: (outcome) => {
      finish(outcome);
    },
  };
}

function setup(def: ToolDefinition) {
  const fake = fakePorts([def]);
  const ports: InvokePorts = fake.deps;
  const run = { controller: new AbortController(), cancelled: false, background: false };
  const prepared: PreparedCall = {
    def,
    toolConfig: undefined,
    execCtx: createExecutionContext(
      { bufnr: 1, cwd: '/work', timeout: 5, toolId: 't', signal: run.controller.signal },
      '/home/u',
    ),
  };
  return { fake, ports, run, prepared };
}

const call = (input: unknown) => ({ bufnr: 1, id: 't', name: 'wait', input });

it('fires tool:executing as the tool starts, runs it and says how long it took', async () => {
  const tool = waitingTool();
  const { fake, ports, run, prepared } = setup(tool.def);
  const invoking = invokeCall(call({ n: 1 }), prepared, run, config().tools, ports, () => {
    throw new Error('not moved');
  });
  // Nothing is said before the input is checked.
  expect(fake.journal.entries).toEqual([]);
  await tool.started;
  expect(fake.journal.entries).toEqual([
    'hook tool:executing {"bufnr":1,"tool_name":"wait","tool_id":"t"}',
  ]);
  tool.finish({ ok: true, output: 'fine' });
  const invoked = await invoking;
  expect(invoked.outcome).toEqual({ ok: true, output: 'fine' });
  expect(invoked.durationMs).toBeGreaterThanOrEqual(0);
});

it('an input the schema refuses is an error result; the tool does not run', async () => {
  const tool = waitingTool();
  const { fake, ports, run, prepared } = setup(tool.def);
  const invoked = await invokeCall(call({}), prepared, run, config().tools, ports, () => undefined);
  expect(invoked.outcome.ok).toBe(false);
  expect(tool.ran).toEqual([]);
  expect(fake.journal.entries).toEqual([]);
});

it('a cancel stops the tool and the result says so', async () => {
  const tool = waitingTool();
  const { ports, run, prepared } = setup(tool.def);
  const invoking = invokeCall(
    call({ n: 1 }),
    prepared,
    run,
    config().tools,
    ports,
    () => undefined,
  );
  await tool.started;
  run.cancelled = true;
  run.controller.abort(new Error(CANCELLED_TEXT));
  expect((await invoking).outcome).toEqual({ ok: false, error: CANCELLED_TEXT });
});

it('the executor’s timeout stops a tool; after background_after the tool moves instead', async () => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  const tool = waitingTool();
  const { ports, run, prepared } = setup(tool.def);
  const tools = config({ default_timeout: 2 }).tools;
  const timing = invokeCall(call({ n: 1 }), prepared, run, tools, ports, () => undefined);
  await tool.started;
  await vi.advanceTimersByTimeAsync(2000);
  expect((await timing).outcome).toEqual({ ok: false, error: 'Tool timed out after 2 seconds.' });

  const again = waitingTool();
  const second = setup(again.def);
  const moved: string[] = [];
  const slow = config({ default_timeout: 2, background_after: 1 }).tools;
  const moving = invokeCall(call({ n: 2 }), second.prepared, second.run, slow, second.ports, () => {
    moved.push('t');
    second.run.background = true;
  });
  await again.started;
  await vi.advanceTimersByTimeAsync(5000);
  expect(moved).toEqual(['t']);
  again.finish({ ok: true, output: 'late but fine' });
  expect((await moving).outcome).toEqual({ ok: true, output: 'late but fine' });
});
