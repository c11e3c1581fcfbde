// Warming the tool loop while the host is idle after its start, and again while a request
// streams (docs/testing.md, "Where the time goes").
//
// A session's first tool call used to pay for work that every later call finds done: loading
// Ajv, compiling its meta-schema and the called tool's input schema, loading execa, probing the
// sandbox backend (bubblewrap is run once to see that it works) and, for `grep`, finding the
// search program; for `bash`, the scans of its output, which V8 compiles only once they ran on
// megabytes. Each of these is kept by the host's object that does it (the schema validator, the
// backend registry, the probes; execa by the module system; V8 the compiled scans), so warming
// means doing each once, early: while the host is idle after its start, and while the reply of a
// request that offers tools streams, rather than after it asked for one.
//
// Decisions (idle after the start, `warmWhenIdle`):
// - A reply can arrive all at once (a short one, a fast model), and then nothing can warm while
//   it streams: so the host warms as soon as it is idle after its start, which it mostly is while
//   the user writes the question. Idle is no request of Neovim's unanswered and no message from
//   Neovim for `IDLE_MS` (since the last answer too); every step waits for that again, so warming
//   never runs while Neovim asks for something (a buffer being typed into sends changes, and
//   warming waits for the pause; a listing that takes longer than `IDLE_MS`, `:Flemma chats` on
//   a host it just started, is not held up by a step in its middle). A request or a tool call
//   (not a background job) that runs is not idle either, however quiet Neovim is meanwhile: a
//   step landing between a command's end and its result delayed the result by the step's
//   length, and a session's first send (its SDK loading) had the schemas compiled in its middle.
// - It warms every tool the registry holds at that moment (the built-in ones, and whatever Lua
//   registered already), and the sandbox as the configuration the host holds sets it, else as the
//   defaults set it (on, `auto`: bubblewrap is probed, one `bwrap … true` run); it asks Neovim
//   for nothing, so that it never adds a message to a step's. A chat's frontmatter that turns the
//   sandbox on is warmed by its send, as before. Then the host writes its code cache if it started
//   without one (src/host/boot.ts: V8 keeps the code the start and the warm-up compiled).
//
// Decisions (while a reply streams, `toolLoopWarmup`):
// - It starts with the reply's first event, not with the send: until the request is out, the
//   host is busy with it (on a first send, loading the provider's SDK), and warming then would
//   delay the request itself. From the first event on, the host mostly waits for the network.
// - It yields to the event loop before every step, so the stream's events never wait for more
//   than one step (the longest, compiling the meta-schema, takes about 20 ms on a first run).
// - It stops when the reply is over (its `done` event): from then on the loop asks for what it
//   needs itself (a step in flight is shared, not repeated), and warming the rest would only
//   compete with it for the one thread.
// - It does only what the loop would do with the same configuration: it compiles the schemas of
//   the tools the request offers, and it probes the built-in sandbox backends when the sandbox is
//   on for the buffer. No user code runs early: a backend defined in Lua or in a module is left to
//   the loop (a user backend that comes first in `auto` ends the probing).
// - Nothing it meets is reported: a schema that does not compile or a backend that is missing
//   is cached as such, and the loop reports it when a tool is called, as before.
// - Warming again is cheap: every step is a cache hit, so it runs for every send that offers
//   tools (a tool added since, an MCP server's for instance, is warmed by the next send).
import { detectGrepBackend } from '../core/tools/definitions/grep.js';
import { warmOutputFacts } from '../core/tools/output-file.js';
import { loadExeca } from '../core/tools/process.js';
import type { Probes } from '../core/tools/probes.js';
import type { ToolDefinition } from '../core/tools/registry.js';
import { isAutoSelection } from '../core/tools/sandbox/backends.js';
import {
  type SandboxBackend,
  type SandboxBackendRegistry,
  parseSandboxSettings,
} from '../core/tools/sandbox/index.js';
import type { SchemaValidator } from '../core/tools/validate.js';
import { trace } from '../editor/trace.js';

/** How long the host must have had no message to count as idle, in ms. */
export const IDLE_MS = 50;

/**
 * A monotonic clock in ms. Not `performance.now()`: the global loads `node:perf_hooks` (≈ 0.5 ms)
 * on first use, and the watch starts with the host (docs/testing.md, "Where the time goes").
 */
function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** What one send offers and where its tools would run. */
export interface LoopWarmupInput {
  /** The definitions of the tools the request offers. */
  tools: readonly ToolDefinition[];
  /** The buffer's `sandbox` configuration, as sent by Lua. */
  sandbox: unknown;
  /** The buffer's `:Flemma sandbox:on/off` override, if any. */
  sandboxOverride?: boolean | null;
}

/** The host's objects whose caches warming fills (the loop then finds them full). */
export interface WarmupServices {
  validator: SchemaValidator;
  sandboxBackends: SandboxBackendRegistry;
  probes: Probes;
}

/**
 * What a built-in tool prepares once per host before its first run: `grep` finds its search
 * program on PATH; `bash` has the scans of a command's output compiled (output-file.ts), which a
 * first run otherwise pays for while it reads megabytes.
 */
const TOOL_WARMERS: Readonly<Record<string, (probes: Probes) => Promise<unknown>>> = {
  grep: (probes) => detectGrepBackend(undefined, probes),
  bash: () => {
    warmOutputFacts();
    return Promise.resolve();
  },
};

/** One turn of the event loop: whatever is queued (stream events, RPC) goes first. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    setImmediate(resolve);
  });
}

function isSchema(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Probes the backends the loop would try for `raw` (the first available of `auto` and
 * `required`, or the one named), as long as they are built in: a user's backend ends it.
 */
async function warmSandbox(
  raw: unknown,
  override: boolean | null | undefined,
  registry: SandboxBackendRegistry,
): Promise<void> {
  const settings = parseSandboxSettings(raw);
  if (!(override ?? settings.enabled)) return;
  const candidates: (SandboxBackend | undefined)[] = isAutoSelection(settings.backend)
    ? registry.list()
    : [registry.get(settings.backend)];
  for (const backend of candidates) {
    if (backend === undefined || !registry.isBuiltinInPlace(backend.name)) return;
    const answer = await registry.availability(backend.name, settings.backends[backend.name] ?? {});
    if (answer.ok) return;
  }
}

/**
 * Warms what the first tool call of `input` needs, step by step, until `over()` says to stop;
 * never rejects.
 */
export async function warmToolLoop(
  input: LoopWarmupInput,
  services: WarmupServices,
  over: () => boolean = () => false,
  pause: () => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  if (input.tools.length === 0) return;
  /** The next turn of the event loop (after `pause`); false when warming should stop there. */
  const next = async (): Promise<boolean> => {
    await nextTurn();
    await pause();
    return !over();
  };
  try {
    if (!(await next())) return;
    trace('warm:start');
    await services.validator.load();
    for (const def of input.tools) {
      if (!isSchema(def.inputSchema)) continue;
      if (!(await next())) return;
      services.validator.schemaProblem(def.inputSchema);
    }
    trace('warm:schemas');
    if (!(await next())) return;
    await loadExeca();
    if (!(await next())) return;
    await warmSandbox(input.sandbox, input.sandboxOverride, services.sandboxBackends);
    for (const def of input.tools) {
      const probe = TOOL_WARMERS[def.name];
      if (probe === undefined) continue;
      if (!(await next())) return;
      await probe(services.probes);
    }
    trace('warm:done');
  } catch {
    // Warming only: the loop meets the same problem and reports it.
  }
}

/**
 * What the send calls with every event of a reply: the first starts `warmToolLoop(input)`, the
 * reply's `done` stops it.
 */
export function toolLoopWarmup(
  input: LoopWarmupInput,
  services: WarmupServices,
): (event: { type: string }) => void {
  let started = false;
  let over = false;
  return (event) => {
    if (event.type === 'done') over = true;
    if (started || over) return;
    started = true;
    void warmToolLoop(input, services, () => over);
  };
}

/**
 * Knows when the host last heard from Neovim, what it still answers and whether it runs a
 * request or a tool call (`busy`); waits for it to be idle.
 */
export class IdleWatch {
  private last = now();
  private unanswered = 0;

  constructor(
    private readonly idleMs: number = IDLE_MS,
    private readonly busy: () => boolean = () => false,
  ) {}

  /** A message came (a request or a notification). */
  touch(): void {
    this.last = now();
  }

  /** A request came: the host is busy until the function returned is called (it answered). */
  request(): () => void {
    this.touch();
    this.unanswered++;
    let answered = false;
    return () => {
      if (answered) return;
      answered = true;
      this.unanswered--;
      this.touch();
    };
  }

  /**
   * Resolves once no request is unanswered, nothing is `busy`, and no message came (nor answer
   * went, nor was it busy) for `idleMs`.
   */
  async idle(): Promise<void> {
    for (;;) {
      if (this.busy()) this.touch();
      const left = this.last + this.idleMs - now();
      if (left <= 0 && this.unanswered === 0) return;
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(Math.max(left, this.idleMs))));
    }
  }
}

/** What warming after the start needs besides `WarmupServices`. */
export interface IdleWarmupDeps extends WarmupServices {
  /** The tools the host holds now. */
  tools: () => readonly ToolDefinition[];
  /** The global configuration's `sandbox` as the host holds it (undefined: the defaults). */
  sandbox: () => unknown;
  /** Called once warming is over (done or failed): the host writes its code cache then. */
  done: () => void;
}

/**
 * Warms the tool loop once the host is idle after its start (see the decisions above); never
 * rejects.
 */
export async function warmWhenIdle(
  watch: Pick<IdleWatch, 'idle'>,
  deps: IdleWarmupDeps,
): Promise<void> {
  const pause = (): Promise<void> => watch.idle();
  try {
    await pause();
    trace('warm:idle');
    await warmToolLoop({ tools: deps.tools(), sandbox: deps.sandbox() }, deps, undefined, pause);
  } finally {
    await pause();
    deps.done();
  }
}
