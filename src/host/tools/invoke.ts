// The second part of running an approved call: invoking it. Its input validated against the
// schema, the middleware around it, the executor's timeout (a grace period for tools that time
// themselves out) and cancellation (a tool that ignores its signal still gets a result), the move
// to the background after `tools.background_after`, and whatever it returns normalised.
import type { createExecutionContext } from '../../core/tools/context.js';
import { compose } from '../../core/tools/middleware.js';
import type { ToolDefinition, ToolOutcome } from '../../core/tools/registry.js';
import type { SchemaValidator } from '../../core/tools/validate.js';
import type { HookEmitter } from '../../editor/hooks.js';
import type { MiddlewareStack } from '../tool-extras.js';
import type { ToolCatalogue } from './catalogue.js';
import { CANCELLED_TEXT } from './lua-tools.js';
import { describeError, normalizeOutcome, renderPartial } from './outcome.js';
import type { CallRef, PreparedCall } from './prepare.js';
import type { ToolsConfig } from '../../core/config/config.js';
import { secondsMs, timerMs } from '../../core/util/timer.js';

/** What a running call keeps that a timeout or a cancel reads. */
export interface RunState {
  readonly controller: AbortController;
  /** Set when the user cancelled (the result then says so, whatever the tool returns). */
  cancelled: boolean;
  /** Moved to the background: the executor's timeout no longer applies. */
  background: boolean;
}

export interface InvokedCall {
  def: ToolDefinition;
  input: unknown;
  execCtx: ReturnType<typeof createExecutionContext>;
  run: RunState;
  toolConfig: Record<string, unknown> | undefined;
  defaultTimeout: number;
  tools: ToolsConfig;
  /** The tool is about to run (its input valid, not cancelled meanwhile). */
  starting?: () => void;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Tools that enforce their own timeout get this much longer before the executor steps in. */
const SELF_TIMED_GRACE_MS = 5000;

/** After an abort, how long a tool may take to wind down before its result is forced. */
const ABORT_GRACE_MS = 2000;

function timeoutFor(
  def: ToolDefinition,
  input: unknown,
  toolConfig: Record<string, unknown> | undefined,
  fallback: number,
): number {
  const configured = toolConfig?.['timeout'];
  if (typeof configured === 'number' && configured > 0) return configured;
  const properties = asRecord(def.inputSchema['properties']);
  const fromInput = asRecord(input)?.['timeout'];
  if (properties?.['timeout'] !== undefined && typeof fromInput === 'number' && fromInput > 0) {
    return fromInput;
  }
  // A tool that knows how long it may take (a declarative tool's timeout and retries).
  if (typeof def.timeoutSeconds === 'number' && def.timeoutSeconds > fallback) {
    return def.timeoutSeconds;
  }
  return fallback;
}

function abortText(run: RunState, timedOut: boolean, timeoutSec: number): string {
  if (timedOut && !run.cancelled) return `Tool timed out after ${timeoutSec} seconds.`;
  return CANCELLED_TEXT;
}

/** Validate, run with timeout and cancellation, and normalise whatever comes back. */
export async function invokeTool(
  call: InvokedCall,
  catalogue: Pick<ToolCatalogue, 'middleware' | 'isBuiltin'>,
  validator: SchemaValidator,
): Promise<ToolOutcome> {
  const { def, input, execCtx, run, toolConfig, defaultTimeout, tools } = call;
  await validator.load();
  const validation = validator.validateInput(def, input);
  if (!validation.ok) return { ok: false, error: validation.message };
  const inner = def.execute;
  if (inner === undefined) return { ok: false, error: `Tool ${def.name} cannot be executed` };
  // The middleware stack (tools.middleware, modules' middleware) around the tool itself; the
  // executor's timeout and cancellation below bound all of it.
  let stack: ReturnType<MiddlewareStack['chain']>;
  try {
    stack = catalogue.middleware.chain(tools['middleware']);
  } catch (error) {
    return { ok: false, error: describeError(error) };
  }
  const handler = compose(stack, (call) => inner(call.input, call.ctx));
  const execute = (value: unknown, context: typeof execCtx): Promise<ToolOutcome> =>
    handler({ name: def.name, input: asRecord(value) ?? {}, ctx: context });
  const timeoutSec = timeoutFor(def, input, toolConfig, defaultTimeout);
  const selfTimed = catalogue.isBuiltin(def.name) && def.async === true;
  const limitMs = timerMs(timeoutSec * 1000 + (selfTimed ? SELF_TIMED_GRACE_MS : 0));
  const flags = { timedOut: false };
  const timer = setTimeout(() => {
    if (run.background) return;
    flags.timedOut = true;
    run.controller.abort(new Error(`Tool timed out after ${timeoutSec} seconds.`));
  }, limitMs);
  if (run.controller.signal.aborted) {
    // Cancelled while it was being prepared: it does not start.
    clearTimeout(timer);
    return { ok: false, error: abortText(run, flags.timedOut, timeoutSec) };
  }
  const aborted = new Promise<ToolOutcome>((resolve) => {
    run.controller.signal.addEventListener(
      'abort',
      () => {
        // A tool that ignores its signal still gets a result, a little later.
        setTimeout(() => {
          resolve({ ok: false, error: abortText(run, flags.timedOut, timeoutSec) });
        }, ABORT_GRACE_MS).unref();
      },
      { once: true },
    );
  });
  call.starting?.();
  try {
    const settled: Promise<ToolOutcome> = Promise.resolve()
      .then(() => execute(input, execCtx))
      .then(
        (value) => normalizeOutcome(value),
        (error: unknown): ToolOutcome => ({ ok: false, error: describeError(error) }),
      );
    const result = await Promise.race([settled, aborted]);
    // Both flags are set by callbacks while the tool runs.
    const stopped: boolean = run.cancelled || flags.timedOut;
    if (stopped) {
      const partial = result.ok ? renderPartial(result.output) : result.partialOutput;
      const error = abortText(run, flags.timedOut, timeoutSec);
      // A tool that reported its own timeout or cancellation keeps its wording.
      if (!result.ok && (result.error.includes('timed out') || result.error === CANCELLED_TEXT)) {
        return result;
      }
      return partial === undefined || partial === ''
        ? { ok: false, error }
        : { ok: false, error, partialOutput: partial };
    }
    return result;
  } finally {
    clearTimeout(timer);
  }
}

export interface InvokePorts {
  hooks: Pick<HookEmitter, 'post'>;
  catalogue: Pick<ToolCatalogue, 'middleware' | 'isBuiltin'>;
  validator: SchemaValidator;
}

/** What an invoked call came back with, and how long it ran. */
export interface Invoked {
  outcome: ToolOutcome;
  durationMs: number;
}

/**
 * Invoke a prepared call: the tool runs, `tool:executing` fires as it starts (not awaited: the
 * event keeps its place on the channel, before anything the tool sends, and the tool need not
 * wait for every listener), and after `tools.background_after` seconds `toBackground` moves it
 * to the background.
 */
export async function invokeCall(
  call: CallRef,
  prepared: PreparedCall,
  run: RunState,
  tools: ToolsConfig,
  ports: InvokePorts,
  toBackground: () => void,
): Promise<Invoked> {
  const after = tools.background_after;
  const timer =
    typeof after === 'number' && after > 0 ? setTimeout(toBackground, secondsMs(after)) : undefined;
  const startedAt = performance.now();
  try {
    const outcome = await invokeTool(
      {
        def: prepared.def,
        input: call.input,
        execCtx: prepared.execCtx,
        run,
        toolConfig: prepared.toolConfig,
        defaultTimeout: tools.default_timeout,
        tools,
        starting: () => {
          const { bufnr, name, id } = call;
          ports.hooks.post('tool:executing', { bufnr, tool_name: name, tool_id: id });
        },
      },
      ports.catalogue,
      ports.validator,
    );
    return { outcome, durationMs: performance.now() - startedAt };
  } finally {
    clearTimeout(timer);
  }
}
