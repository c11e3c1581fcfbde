// Warming the tool loop (src/host/warmup.ts): what it prepares is what the loop then finds ready,
// it runs no user code, and the loop's answers stay as they were.
import { beforeEach, describe, expect, it } from 'vitest';
import { Probes } from '../../src/core/tools/probes.js';
import type { ToolDefinition } from '../../src/core/tools/registry.js';
import { createSandboxBackends } from '../../src/core/tools/sandbox/bwrap.js';
import { SchemaValidator } from '../../src/core/tools/validate.js';
import { type LoopWarmupInput, type WarmupServices, warmToolLoop } from '../../src/host/warmup.js';

/** The host's objects, made afresh for each test. */
let services: WarmupServices;

beforeEach(() => {
  services = {
    validator: new SchemaValidator(),
    sandboxBackends: createSandboxBackends(),
    probes: new Probes(),
  };
});

function warm(input: LoopWarmupInput, over?: () => boolean): Promise<void> {
  return warmToolLoop(input, services, over);
}

function validateInput(
  def: ToolDefinition,
  input: unknown,
): ReturnType<SchemaValidator['validateInput']> {
  return services.validator.validateInput(def, input);
}

function tool(name: string, inputSchema: Record<string, unknown>): ToolDefinition {
  return { name, description: `the ${name} tool`, inputSchema };
}

const PATH_SCHEMA = {
  type: 'object',
  properties: { path: { type: 'string' } },
  required: ['path'],
};

/** A schema that counts how often its properties are read (compiling reads them all). */
function countingSchema(): { schema: Record<string, unknown>; reads: () => number } {
  let reads = 0;
  const schema = new Proxy<Record<string, unknown>>(structuredClone(PATH_SCHEMA), {
    get(target, key, receiver) {
      reads += 1;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { schema, reads: () => reads };
}

/** A test backend in this test's registry, counting its probes. */
function backend(
  name: string,
  options: { builtin: boolean; priority: number; ok?: boolean },
): { probes: () => number } {
  let probes = 0;
  services.sandboxBackends.register(
    {
      name,
      priority: options.priority,
      available: () => {
        probes += 1;
        return options.ok ?? true;
      },
      wrap: (argv) => [...argv],
    },
    { builtin: options.builtin },
  );
  return { probes: () => probes };
}

describe('warmToolLoop', () => {
  it('compiles the offered schemas, so that the call finds its validator ready', async () => {
    const { schema, reads } = countingSchema();
    const def = tool('reader', schema);
    await warm({ tools: [def], sandbox: { enabled: false } });
    const afterWarming = reads();
    expect(afterWarming).toBeGreaterThan(0);
    expect(validateInput(def, { path: 'a.txt' })).toEqual({ ok: true });
    expect(validateInput(def, {})).toEqual({
      ok: false,
      message: "Invalid input for tool 'reader': must have required property 'path'",
    });
    expect(reads()).toBe(afterWarming);
  });

  it('leaves a schema that does not compile for the call to report', async () => {
    const def = tool('broken', { type: 'object', properties: { n: { type: 'no-such-type' } } });
    await expect(warm({ tools: [def], sandbox: { enabled: false } })).resolves.toBe(undefined);
    const result = validateInput(def, { n: 1 });
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.message).toMatch(
      /^Tool 'broken' has an invalid input schema, so its input cannot be checked: /,
    );
  });

  it('probes the built-in backend the sandbox would use, once', async () => {
    const first = backend('warm-builtin', { builtin: true, priority: 10_000 });
    const def = tool('reader', PATH_SCHEMA);
    await warm({ tools: [def], sandbox: {} });
    await warm({ tools: [def], sandbox: {} });
    expect(first.probes()).toBe(1);
    // The loop's own question is answered from what warming found.
    await expect(services.sandboxBackends.availability('warm-builtin', {})).resolves.toEqual({
      ok: true,
    });
    expect(first.probes()).toBe(1);
  });

  it('goes on to the next built-in backend when one is not available, as `auto` does', async () => {
    const missing = backend('warm-missing', { builtin: true, priority: 10_001, ok: false });
    const next = backend('warm-next', { builtin: true, priority: 10_000 });
    await warm({ tools: [tool('reader', PATH_SCHEMA)], sandbox: {} });
    expect([missing.probes(), next.probes()]).toEqual([1, 1]);
  });

  it("runs no user backend's code, and probes nothing behind it", async () => {
    const user = backend('warm-user', { builtin: false, priority: 20_000 });
    const builtin = backend('warm-builtin', { builtin: true, priority: 10_000 });
    await warm({ tools: [tool('reader', PATH_SCHEMA)], sandbox: {} });
    await warm({
      tools: [tool('reader', PATH_SCHEMA)],
      sandbox: { backend: 'warm-user' },
    });
    expect([user.probes(), builtin.probes()]).toEqual([0, 0]);
  });

  it('probes a built-in backend named by the configuration', async () => {
    backend('warm-first', { builtin: true, priority: 10_001 });
    const named = backend('warm-named', { builtin: true, priority: 10_000 });
    await warm({
      tools: [tool('reader', PATH_SCHEMA)],
      sandbox: { backend: 'warm-named', backends: { 'warm-named': { flavour: 'strict' } } },
    });
    expect(named.probes()).toBe(1);
    await services.sandboxBackends.availability('warm-named', { flavour: 'strict' });
    expect(named.probes()).toBe(1);
  });

  it('stops once the reply is over: the loop asks for the rest itself', async () => {
    const { schema, reads } = countingSchema();
    const probe = backend('warm-builtin', { builtin: true, priority: 10_000 });
    await warm({ tools: [tool('reader', schema)], sandbox: {} }, () => true);
    expect([reads(), probe.probes()]).toEqual([0, 0]);
    // Over after the schemas: the sandbox is left to the loop.
    let steps = 0;
    await warm({ tools: [tool('reader', schema)], sandbox: {} }, () => ++steps > 2);
    expect(reads()).toBeGreaterThan(0);
    expect(probe.probes()).toBe(0);
  });

  it('probes nothing when the sandbox is off for the buffer, or no tool is offered', async () => {
    const probe = backend('warm-builtin', { builtin: true, priority: 10_000 });
    await warm({ tools: [tool('reader', PATH_SCHEMA)], sandbox: { enabled: false } });
    await warm({
      tools: [tool('reader', PATH_SCHEMA)],
      sandbox: {},
      sandboxOverride: false,
    });
    await warm({ tools: [], sandbox: {} });
    expect(probe.probes()).toBe(0);
  });
});
