// Test helpers for people who write tools and middleware (Vega's `NewMockTools`), also built as
// `dist/testing.mjs`:
//
//   import { createMockTools } from '<flemma>/dist/testing.mjs';
//   const mock = createMockTools();
//   mock.on('web.search').returns('mock results');
//   mock.on('flaky').fails('busy', { retryable: true }).times(2).then.returns('ok');
//   await mock.execute('web.search', { query: 'x' });   // { ok: true, output: 'mock results' }
//   mock.calls('web.search');                           // [{ query: 'x' }]
//
// A mock's definitions can be registered in a `ToolRegistry` (`mock.register(registry)`), and
// `testContext()` builds an ExecutionContext without an editor.

import { type ContextInit, type ExecutionContext, createExecutionContext } from './context.js';
import { type ToolHandler, type ToolMiddleware, compose } from './middleware.js';
import { type ToolDefinition, type ToolOutcome, ToolRegistry } from './registry.js';

type Responder = (
  input: Record<string, unknown>,
  ctx: ExecutionContext,
) => ToolOutcome | Promise<ToolOutcome>;

export interface MockBehaviour {
  /** Answer `output` (a string, or an object written as JSON). */
  returns(output: string | Record<string, unknown>): MockBehaviour;
  /** Fail with `error`. */
  fails(error: string, options?: { retryable?: boolean }): MockBehaviour;
  /** Answer with a function of the input. */
  handles(fn: Responder): MockBehaviour;
  /** The last behaviour set applies to this many calls only; `then` sets what follows. */
  times(count: number): MockBehaviour;
  readonly then: MockBehaviour;
}

export interface MockTools {
  /** Declare (or find) the mock tool `name`. */
  on(
    name: string,
    options?: { description?: string; inputSchema?: Record<string, unknown> },
  ): MockBehaviour;
  /** The inputs of every call of `name`, oldest first. */
  calls(name: string): Record<string, unknown>[];
  /** Runs `name` like the executor would (through `use`d middleware). */
  execute(
    name: string,
    input?: Record<string, unknown>,
    ctx?: ExecutionContext,
  ): Promise<ToolOutcome>;
  /** Adds middleware (first added = outermost). */
  use(...middleware: ToolMiddleware[]): void;
  /** The mocks as registry definitions. */
  definitions(): ToolDefinition[];
  /** Registers every mock in `registry` (a new one when omitted) and returns it. */
  register(registry?: ToolRegistry): ToolRegistry;
  /** Forget recorded calls. */
  reset(): void;
}

interface Step {
  respond: Responder;
  remaining: number;
}

/** An ExecutionContext for tests: a temp-free default cwd, no sandbox, a fresh signal. */
export function testContext(init: Partial<ContextInit> = {}): ExecutionContext {
  return createExecutionContext(
    { bufnr: 0, cwd: process.cwd(), timeout: 30, toolId: 'toolu_test', ...init },
    process.env['HOME'] ?? '/',
  );
}

/** The builder of a mocked tool's steps: each call says what the next calls answer. */
function behaviourOn(list: Step[]): MockBehaviour {
  let appending = false;
  const set = (fn: Responder): MockBehaviour => {
    const last = list[list.length - 1];
    // A behaviour replaces an unlimited one; after `then` (or `times`) it is appended.
    if (last !== undefined && last.remaining === -1 && !appending) list.pop();
    list.push({ respond: fn, remaining: -1 });
    appending = false;
    return api;
  };
  const api: MockBehaviour = {
    returns: (output) => set(() => ({ ok: true, output })),
    fails: (error, options = {}) =>
      set(() =>
        options.retryable === true ? { ok: false, error, retryable: true } : { ok: false, error },
      ),
    handles: (fn) => set(fn),
    times: (count) => {
      const last = list[list.length - 1];
      if (last !== undefined) last.remaining = Math.max(0, Math.floor(count));
      appending = true;
      return api;
    },
    get then() {
      appending = true;
      return api;
    },
  };
  return api;
}

export function createMockTools(): MockTools {
  const steps = new Map<string, Step[]>();
  const recorded = new Map<string, Record<string, unknown>[]>();
  const schemas = new Map<string, { description: string; inputSchema: Record<string, unknown> }>();
  const middleware: ToolMiddleware[] = [];

  const respond = async (
    name: string,
    input: Record<string, unknown>,
    ctx: ExecutionContext,
  ): Promise<ToolOutcome> => {
    const list = steps.get(name);
    if (list === undefined) {
      const known = [...steps.keys()].sort().join(', ') || '(none)';
      return { ok: false, error: `No mock for tool '${name}' (mocked: ${known})` };
    }
    recorded.get(name)?.push(structuredClone(input));
    const step = list.find((s) => s.remaining !== 0);
    if (step === undefined) return { ok: false, error: `Mock '${name}' has no behaviour left` };
    if (step.remaining > 0) step.remaining -= 1;
    return step.respond(input, ctx);
  };

  const behaviour = (name: string): MockBehaviour => {
    const list = steps.get(name) ?? [];
    steps.set(name, list);
    return behaviourOn(list);
  };

  const definitionOf = (name: string): ToolDefinition => {
    const schema = schemas.get(name);
    return {
      name,
      description: schema?.description ?? `Mock of ${name}`,
      inputSchema: schema?.inputSchema ?? { type: 'object', properties: {} },
      execute: (input, ctx) => respond(name, (input ?? {}) as Record<string, unknown>, ctx),
    };
  };

  return {
    on: (name, options = {}) => {
      if (!recorded.has(name)) recorded.set(name, []);
      if (
        !schemas.has(name) ||
        options.description !== undefined ||
        options.inputSchema !== undefined
      ) {
        schemas.set(name, {
          description: options.description ?? `Mock of ${name}`,
          inputSchema: options.inputSchema ?? { type: 'object', properties: {} },
        });
      }
      return behaviour(name);
    },
    calls: (name) => [...(recorded.get(name) ?? [])],
    execute: (name, input = {}, ctx = testContext()) => {
      const handler: ToolHandler = (call) => respond(call.name, call.input, call.ctx);
      return compose(middleware, handler)({ name, input, ctx });
    },
    use: (...more) => {
      middleware.push(...more);
    },
    definitions: () => [...steps.keys()].sort().map(definitionOf),
    register: (registry = new ToolRegistry()) => {
      for (const name of [...steps.keys()].sort()) registry.register(definitionOf(name));
      return registry;
    },
    reset: () => {
      for (const list of recorded.values()) list.length = 0;
    },
  };
}

export { compose } from './middleware.js';
export {
  loggingMiddleware,
  rateLimitMiddleware,
  retryMiddleware,
  timeoutMiddleware,
  type ToolCall,
  type ToolHandler,
  type ToolMiddleware,
} from './middleware.js';
export { SandboxRoots, SandboxViolation } from './sandbox/roots.js';
export { filterTools, ToolFilterError } from './filter.js';
