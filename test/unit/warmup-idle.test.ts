// Warming the tool loop once the host is idle after its start (src/host/warmup.ts,
// `warmWhenIdle`): nothing runs before the host is idle, every step waits for idle again, the
// loop then finds its schemas compiled, and the host hears when it is over (its code cache).
import { describe, expect, it, vi } from 'vitest';
import { Probes } from '../../src/core/tools/probes.js';
import type { ToolDefinition } from '../../src/core/tools/registry.js';
import { createSandboxBackends } from '../../src/core/tools/sandbox/index.js';
import { SchemaValidator } from '../../src/core/tools/validate.js';
import { IdleWatch, type IdleWarmupDeps, warmWhenIdle } from '../../src/host/warmup.js';

/** A watch whose idle moments the test hands out one at a time. */
class Gate {
  waiting = 0;
  private opens: (() => void)[] = [];

  idle(): Promise<void> {
    this.waiting += 1;
    return new Promise((resolve) => this.opens.push(resolve));
  }

  /** Lets the oldest waiter go; resolves once warming asks for idle again. */
  async open(): Promise<void> {
    const before = this.waiting;
    this.opens.shift()?.();
    while (this.waiting === before) await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A schema that counts how often its properties are read (compiling reads them all). */
function countingSchema(): { schema: Record<string, unknown>; reads: () => number } {
  let reads = 0;
  const schema = new Proxy<Record<string, unknown>>(
    { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    {
      get(target, key, receiver) {
        reads += 1;
        return Reflect.get(target, key, receiver) as unknown;
      },
    },
  );
  return { schema, reads: () => reads };
}

function deps(tools: ToolDefinition[], done: () => void): IdleWarmupDeps {
  return {
    validator: new SchemaValidator(),
    sandboxBackends: createSandboxBackends(),
    probes: new Probes(),
    tools: () => tools,
    sandbox: () => ({ enabled: false }),
    done,
  };
}

describe('warmWhenIdle', () => {
  it('waits for idle before each step, compiles the tools’ schemas, then says it is over', async () => {
    const { schema, reads } = countingSchema();
    const def: ToolDefinition = { name: 'reader', description: 'reads', inputSchema: schema };
    let over = 0;
    const services = deps([def], () => {
      over += 1;
    });
    const gate = new Gate();
    const warming = warmWhenIdle(gate, services);
    // Not idle yet: nothing is loaded or compiled.
    await new Promise((resolve) => setImmediate(resolve));
    expect(gate.waiting).toBe(1);
    expect(reads()).toBe(0);
    expect(() => services.validator.validateInput(def, {})).toThrow(/not loaded/);
    // Each idle moment lets one step go, and the next waits for idle again.
    let steps = 0;
    while (over === 0) {
      await Promise.race([gate.open(), warming]);
      steps += 1;
    }
    await warming;
    expect(steps).toBeGreaterThan(3);
    expect(over).toBe(1);
    const compiled = reads();
    expect(compiled).toBeGreaterThan(0);
    expect(services.validator.validateInput(def, { path: 'a' })).toEqual({ ok: true });
    expect(reads()).toBe(compiled);
  });

  it('says it is over even when there is nothing to warm', async () => {
    let over = 0;
    await warmWhenIdle(
      new IdleWatch(0),
      deps([], () => (over += 1)),
    );
    expect(over).toBe(1);
  });
});

describe('IdleWatch', () => {
  it('is idle once no message came for its time, and a message starts the wait again', async () => {
    const watch = new IdleWatch(5);
    const started = performance.now();
    watch.touch();
    await watch.idle();
    expect(performance.now() - started).toBeGreaterThanOrEqual(4);
    let idle = false;
    const waiting = watch.idle().then(() => {
      idle = true;
    });
    watch.touch();
    expect(idle).toBe(false);
    await waiting;
    expect(idle).toBe(true);
  });

  it('is not idle while a request is unanswered, however long it takes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'hrtime'] });
    try {
      const watch = new IdleWatch(50);
      const answered = watch.request();
      let idle = false;
      void watch.idle().then(() => {
        idle = true;
      });
      // Far longer than the watch's time: the request (a listing, say) is still not answered.
      await vi.advanceTimersByTimeAsync(1000);
      expect(idle).toBe(false);
      answered();
      await vi.advanceTimersByTimeAsync(49);
      expect(idle).toBe(false);
      await vi.advanceTimersByTimeAsync(60);
      expect(idle).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('is not idle while it is busy (a tool call runs), however quiet Neovim is', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'hrtime'] });
    try {
      let busy = true;
      const watch = new IdleWatch(50, () => busy);
      let idle = false;
      void watch.idle().then(() => {
        idle = true;
      });
      // Neovim says nothing meanwhile: the call alone keeps the host from being idle.
      await vi.advanceTimersByTimeAsync(1000);
      expect(idle).toBe(false);
      busy = false;
      await vi.advanceTimersByTimeAsync(110);
      expect(idle).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
