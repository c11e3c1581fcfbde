// The tool executor: runs approved calls (at most `tools.max_concurrent` at a time per buffer,
// the rest as slots free up), each with its timeout, cancellation, sandbox, middleware and audit,
// and hands the outcome to the result writer; background jobs; `tool:cancel`.
//
// Decisions (see docs/tools.md):
// - A running tool's placeholder keeps `status=approved` in the file, so a file saved mid-run
//   says what was about to happen and a crash leaves a block that can be run again; the spinner
//   and the preview line show that it runs.
// - `tools.max_concurrent` counts the tools running in one buffer.
// - The executor's own timeout is the tool's `timeout` setting, else the input's `timeout`
//   (seconds) when the schema has one, else `tools.default_timeout`; tools that time themselves
//   out (bash, grep, find) get a grace period so that their own message wins.
import { homedir } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { ChatDocument } from '../../core/chat/ast.js';
import { WriteJournal, createExecutionContext } from '../../core/tools/context.js';
import { toolCallAt } from '../../core/tools/locate.js';
import { policyErrorText } from '../../core/tools/policy.js';
import { expandPathVariable } from '../../core/tools/sandbox/paths.js';
import { nodeTruncateFs, truncateForResult } from '../../core/tools/truncate.js';
import type { HostBase } from '../base.js';
import type { BufferSettings, EditorFacts } from '../buffer-settings.js';
import { sandboxFor } from '../sandbox.js';
import { rootsFor, withRootPaths } from '../tool-extras.js';
import { trace } from '../../editor/trace.js';
import type { ToolCatalogue } from './catalogue.js';
import { CANCELLED_TEXT, type LuaTools } from './lua-tools.js';
import { invokeTool } from './invoke.js';
import { auditCall } from './audit-file.js';
import { type ResultWriter, resultHeaderRow } from './results.js';
import type { Config } from '../../core/config/config.js';
import type { UndoService } from '../undo/service.js';
import type { ToolCall } from '../../core/approval/chain.js';
import type { WriteGate } from '../../core/tools/sandbox/gate.js';
import { secondsMs } from '../../core/util/timer.js';

/** What the executor tells the buffer's conversation, and asks it. */
export interface ExecutorLoop {
  /** A request of the buffer runs: no tool starts then. */
  requestRunning(bufnr: number): boolean;
  /**
   * The buffer's last running tool finished (a background job too): the buffer is written
   * (`editing.auto_write`) and autopilot may go on. `config`: the configuration the calls ran
   * with (the buffer's frontmatter applied).
   */
  toolsDone(bufnr: number, config: Config): Promise<void>;
  /** A call of the buffer was cancelled: its autopilot stops. */
  stopped(bufnr: number): void;
  /** The next step's context, asked while the last result is written (undefined on failure). */
  context(bufnr: number, document: ChatDocument): Promise<BufferSettings | undefined>;
  /** That context, for the next step to start from. */
  carry(bufnr: number, context: BufferSettings): void;
}

export interface ExecutorDeps {
  base: HostBase;
  catalogue: Pick<
    ToolCatalogue,
    'registry' | 'middleware' | 'isBuiltin' | 'filterRefusal' | 'policyBlocks'
  >;
  lua: Pick<LuaTools, 'setSandbox' | 'runsInLua'>;
  results: Pick<ResultWriter, 'inject' | 'held' | 'fresh' | 'ensurePlaceholder' | 'moveCursor'>;
  loop: ExecutorLoop;
  /** Keeps what the files a call wrote held before (`:Flemma tool:undo`). */
  undo?: Pick<UndoService, 'record' | 'limits' | 'noted'>;
  /** The sensitive places a call may not write (ApprovalService.writeGate). */
  gate?: (call: ToolCall, config: Config, facts: EditorFacts) => WriteGate;
}

export interface Running {
  id: string;
  name: string;
  bufnr: number;
  startedAt: number;
  controller: AbortController;
  background: boolean;
  jobId?: number;
  /** Set when the user cancelled (the result then says so, whatever the tool returns). */
  cancelled: boolean;
  /** The tool returned; its result is being written. It no longer takes a `max_concurrent` slot. */
  returned?: boolean;
}

/** An approved call waiting to be started. */
export interface QueuedCall {
  id: string;
  name: string;
  input: unknown;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

export class ToolExecutor {
  private readonly running = new Map<string, Running>();

  constructor(private readonly deps: ExecutorDeps) {}

  private get ctx(): HostBase {
    return this.deps.base;
  }

  private jobSeq = 0;

  /** Running tools of a buffer that count against `tools.max_concurrent`. */
  private slotsUsed(bufnr: number): number {
    return this.runningIn(bufnr).filter((run) => run.returned !== true).length;
  }

  runningIn(bufnr: number, options: { includeBackground?: boolean } = {}): Running[] {
    return [...this.running.values()].filter(
      (run) => run.bufnr === bufnr && (options.includeBackground === true || !run.background),
    );
  }

  /** The call `id` runs. */
  isCallRunning(id: string): boolean {
    return this.running.has(id);
  }

  /** Approved calls of the buffer wait for a slot. */
  hasQueue(bufnr: number): boolean {
    return this.draining.has(bufnr);
  }

  /** Tools of the buffer take `max_concurrent` slots, or wait for one. */
  busy(bufnr: number): boolean {
    return this.slotsUsed(bufnr) > 0 || this.draining.has(bufnr);
  }

  isRunning(bufnr: number): boolean {
    return this.runningIn(bufnr, { includeBackground: true }).length > 0;
  }

  list(): {
    id: string;
    name: string;
    bufnr: number;
    age_ms: number;
    background: boolean;
    job_id: number | null;
  }[] {
    const now = Date.now();
    return [...this.running.values()]
      .sort((a, b) => a.startedAt - b.startedAt)
      .map((run) => ({
        id: run.id,
        name: run.name,
        bufnr: run.bufnr,
        age_ms: now - run.startedAt,
        background: run.background,
        job_id: run.jobId ?? null,
      }));
  }

  /** `:Flemma tool:cancel`: the call at the cursor, else the oldest running one in the buffer. */
  async cancelAt(bufnr: number, row: number | null): Promise<boolean> {
    let target: Running | undefined;
    if (row !== null) {
      const state = await this.deps.results.fresh(bufnr);
      const found = state === undefined ? undefined : toolCallAt(state.document, row + 1);
      if (found?.ok === true) target = this.running.get(found.call.id);
    }
    target ??= this.oldest(bufnr);
    if (target === undefined) return false;
    this.cancelRun(target);
    return true;
  }

  /** Cancel the buffer's oldest running tool (the second choice of `<C-c>`). */
  cancelOldest(bufnr: number): boolean {
    const run = this.oldest(bufnr);
    if (run === undefined) return false;
    this.cancelRun(run);
    return true;
  }

  cancelAll(): number {
    const runs = [...this.running.values()];
    // Calls still waiting for a slot are not started either.
    for (const run of runs) this.draining.delete(run.bufnr);
    for (const run of runs) this.cancelRun(run);
    for (const run of runs) this.deps.loop.stopped(run.bufnr);
    return runs.length;
  }

  private cancelRun(run: Running): void {
    run.cancelled = true;
    this.deps.loop.stopped(run.bufnr);
    run.controller.abort(new Error(CANCELLED_TEXT));
  }

  private oldest(bufnr: number): Running | undefined {
    return this.runningIn(bufnr, { includeBackground: true }).sort(
      (a, b) => a.startedAt - b.startedAt,
    )[0];
  }

  /** `:Flemma tool:background`: move the call at the cursor (or the oldest) to the background. */
  async background(bufnr: number, row: number | null): Promise<boolean> {
    let target: Running | undefined;
    if (row !== null) {
      const state = await this.deps.results.fresh(bufnr);
      const found = state === undefined ? undefined : toolCallAt(state.document, row + 1);
      if (found?.ok === true) target = this.running.get(found.call.id);
    }
    target ??= this.runningIn(bufnr).sort((a, b) => a.startedAt - b.startedAt)[0];
    if (target === undefined || target.background) return false;
    await this.toBackground(target);
    return true;
  }

  private async toBackground(run: Running): Promise<void> {
    if (run.background || !this.running.has(run.id)) return;
    run.background = true;
    run.jobId = ++this.jobSeq;
    this.ctx.lua.notify('tools.spinner', {
      bufnr: run.bufnr,
      tool_id: run.id,
      state: 'background',
      job_id: run.jobId,
    });
    this.unlockIfIdle(run.bufnr);
    await this.ctx.hooks.emit('job:submitted', {
      bufnr: run.bufnr,
      job_id: String(run.jobId),
      tool_id: run.id,
      tool_name: run.name,
      active_count: this.backgroundCount(),
    });
  }

  private backgroundCount(): number {
    return [...this.running.values()].filter((run) => run.background).length;
  }

  /** Run one call and write its result in place of its placeholder. */
  async execute(
    bufnr: number,
    id: string,
    name: string,
    input: unknown,
    config: Config,
    options: {
      replaceFinished: boolean;
      facts?: EditorFacts;
      /** The caller found the call's placeholder: the tool need not wait for a fresh parse. */
      placeholder?: boolean;
    },
  ): Promise<void> {
    const { ctx } = this;
    if (this.deps.loop.requestRunning(bufnr)) {
      this.warn('Cannot execute tool while API request is in flight');
      return;
    }
    if (this.running.has(id)) {
      this.warn(`Tool ${id} is already running`);
      return;
    }
    // A `.chat` file may name a tool by its API name (`file_read`) as well as its own name.
    const def = this.deps.catalogue.registry.resolve(name);
    if (def === undefined) {
      const guess = this.deps.catalogue.registry.suggest(name);
      this.warn(`Unknown tool: ${name}${guess === undefined ? '' : ` (did you mean '${guess}'?)`}`);
      return;
    }
    if (def.execute === undefined) {
      this.warn(`Tool ${name} cannot be executed: it has no execute function`);
      return;
    }
    const tools = config.tools;
    // The buffer's tool list does not offer it, or the policy blocks it (checked again here,
    // whatever approved the call): the model gets an error, nothing runs.
    const refusal =
      this.deps.catalogue.filterRefusal(name, config) ??
      (this.deps.catalogue.policyBlocks(name, config) ? policyErrorText(name) : undefined);
    if (refusal !== undefined) {
      // It took no slot, but a throttled call may have waited for this one's turn (once the
      // dispatch that started this one is done).
      queueMicrotask(() => {
        this.startQueued(bufnr, config, options.facts);
      });
      await this.deps.results.inject(
        bufnr,
        id,
        { ok: false, error: refusal },
        options.replaceFinished,
      );
      ctx.hooks.post('tool:completed', { bufnr, tool_name: name, tool_id: id, status: 'error' });
      await this.afterTools(bufnr, config);
      return;
    }
    const run: Running = {
      id,
      name,
      bufnr,
      startedAt: Date.now(),
      controller: new AbortController(),
      background: false,
      cancelled: false,
    };
    this.running.set(id, run);
    let backgroundTimer: NodeJS.Timeout | undefined;
    try {
      // The lock is per owner, not per tool; a notification still reaches Neovim before the
      // tool's writes.
      ctx.lua.notify('buffer.lock', { bufnr, owner: 'tools' });
      const spin = (row: number | undefined): void => {
        if (!tools.show_spinner || row === undefined) return;
        if (this.running.get(id) !== run || run.returned === true) return;
        ctx.lua.notify('tools.spinner', { bufnr, tool_id: id, row, state: 'running' });
      };
      if (options.placeholder === true) {
        // Its row is known once the results written before it are parsed; the tool does not
        // wait for that (its neighbours' results are being written meanwhile).
        void this.deps.results
          .held(bufnr)
          .then(() => this.deps.results.fresh(bufnr))
          .then(
            (state) => {
              spin(state === undefined ? undefined : resultHeaderRow(state.document, id));
            },
            () => undefined,
          );
      } else {
        spin(await this.deps.results.ensurePlaceholder(bufnr, id));
      }
      const facts = options.facts ?? (await ctx.lua.call('tools.facts', { bufnr }));
      // The turn's `git status` (for `:Flemma review`) is taken before any of its tools runs.
      await this.deps.undo?.noted(bufnr);
      const toolConfig = asRecord(tools[def.name]);
      const cwd = this.toolCwd(toolConfig, facts);
      const roots = rootsFor(config.sandbox, facts, process.env, homedir());
      const sandboxConfig =
        roots === undefined ? config.sandbox : withRootPaths(config.sandbox, roots);
      const sandbox = await sandboxFor(
        sandboxConfig,
        facts,
        homedir(),
        ctx.sandboxBackends,
        ctx.lua,
        {
          sensitivePaths: tools['sensitive_paths'],
          prefix: this.deps.lua.runsInLua(def),
          onWarning: (text) => {
            this.warnOnce(`sandbox:${text}`, text);
          },
        },
      );
      if (sandbox.warning !== undefined) this.warnOnce('sandbox', sandbox.warning);
      this.deps.lua.setSandbox(id, sandbox);
      const timeoutSec = tools.default_timeout;
      const undoLimits = this.deps.undo?.limits(tools);
      const journal =
        undoLimits?.enabled === true ? new WriteJournal(undoLimits.max_bytes) : undefined;
      const execCtx = createExecutionContext(
        {
          bufnr,
          cwd,
          timeout: timeoutSec,
          toolId: id,
          filename: facts.filename ?? undefined,
          sandbox: sandbox.access,
          config: toolConfig,
          signal: run.controller.signal,
          roots: sandbox.enabled ? roots : undefined,
          journal,
          gate: this.lazyGate({ bufnr, toolId: id, toolName: name, input }, config, facts),
        },
        homedir(),
      );
      // Not awaited: the event keeps its place on the channel, and the tool need not wait for
      // every listener before it starts.
      ctx.hooks.post('tool:executing', { bufnr, tool_name: name, tool_id: id });
      const backgroundAfter = tools.background_after;
      if (typeof backgroundAfter === 'number' && backgroundAfter > 0) {
        backgroundTimer = setTimeout(() => {
          void this.toBackground(run);
        }, secondsMs(backgroundAfter));
      }
      const invokedAt = performance.now();
      let outcome = await invokeTool(
        { def, input, execCtx, run, toolConfig, defaultTimeout: timeoutSec, tools },
        this.deps.catalogue,
        ctx.validator,
      );
      clearTimeout(backgroundTimer);
      // A failed call may have written too (a command that fails halfway): it is kept as well.
      if (journal !== undefined && undoLimits !== undefined) {
        await this.deps.undo?.record(bufnr, facts, id, journal, undoLimits);
      }
      await auditCall(
        this.ctx.logger,
        (key, message) => {
          this.warnOnce(key, message);
        },
        config,
        {
          tool: def.name,
          id,
          bufnr,
          args: input,
          success: outcome.ok,
          durationMs: performance.now() - invokedAt,
          error: outcome.ok ? undefined : outcome.error,
        },
        def,
      );
      if (
        outcome.ok &&
        typeof outcome.output === 'string' &&
        !this.deps.catalogue.isBuiltin(name)
      ) {
        const cut = await truncateForResult(
          outcome.output,
          { source: name, id, mode: 'head' },
          nodeTruncateFs,
        );
        outcome = { ok: true, output: cut.text };
      }
      trace(`tool:done ${id}`);
      // The slot frees as the tool returns: a throttled call starts while this result is written.
      run.returned = true;
      this.startQueued(bufnr, config, facts);
      // The buffer's last tool: ask the editor for the next step's context while the result is
      // written (the buffer stays locked until then, so the frontmatter cannot change).
      const document = ctx.documents.get(bufnr)?.document;
      const prefetch =
        this.slotsUsed(bufnr) === 0 && !this.draining.has(bufnr) && document !== undefined
          ? this.deps.loop.context(bufnr, document)
          : undefined;
      const injected = await this.deps.results.inject(bufnr, id, outcome, options.replaceFinished);
      trace(`tool:injected ${id}`);
      if (tools.show_spinner) {
        ctx.lua.notify('tools.spinner', {
          bufnr,
          tool_id: id,
          state: outcome.ok ? 'success' : 'error',
        });
      }
      const wasBackground = run.background;
      this.running.delete(id);
      this.deps.lua.setSandbox(id, undefined);
      this.unlockIfIdle(bufnr);
      // The cursor moves before the event, so a listener sees the buffer as the user will.
      if (injected) {
        await this.deps.results.moveCursor(bufnr, id, tools.cursor_after_result);
      }
      // Events keep their order on the channel; the executor does not wait for the listeners.
      ctx.hooks.post('tool:completed', {
        bufnr,
        tool_name: name,
        tool_id: id,
        status: outcome.ok ? 'success' : 'error',
      });
      if (wasBackground && run.jobId !== undefined) {
        ctx.hooks.post('job:completed', {
          bufnr,
          job_id: String(run.jobId),
          tool_id: id,
          tool_name: name,
          success: outcome.ok,
          active_count: this.backgroundCount(),
        });
      }
      const next = await prefetch;
      if (next !== undefined && this.runningIn(bufnr).length === 0)
        this.deps.loop.carry(bufnr, next);
      await this.afterTools(bufnr, config);
    } catch (error) {
      clearTimeout(backgroundTimer);
      ctx.logger.error(`executing ${name} (${id}) failed`, error);
      this.warn(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      if (this.running.get(id) === run) {
        this.running.delete(id);
        this.deps.lua.setSandbox(id, undefined);
        ctx.lua.notify('tools.spinner', { bufnr, tool_id: id, state: 'clear' });
        this.unlockIfIdle(bufnr);
      }
    }
  }

  /**
   * Approved calls of a buffer throttled by `tools.max_concurrent`, waiting for a slot. The
   * list is taken when they are dispatched, not from a later parse: the buffer is locked while
   * tools run, and a parse may still lag behind the placeholders or the results written since.
   */
  private readonly draining = new Map<number, QueuedCall[]>();

  /**
   * Start approved calls: as many as `tools.max_concurrent` leaves room for, the rest as slots
   * free up (`startQueued`). Started, not awaited: the tools report through their results.
   */
  dispatch(
    bufnr: number,
    calls: readonly QueuedCall[],
    config: Config,
    facts: EditorFacts | undefined,
    user: boolean,
  ): void {
    const queued = new Set((this.draining.get(bufnr) ?? []).map((call) => call.id));
    const waiting = calls.filter((call) => !this.running.has(call.id) && !queued.has(call.id));
    const limit = config.tools.max_concurrent;
    const free = limit === 0 ? waiting.length : limit - this.slotsUsed(bufnr);
    const now = waiting.slice(0, Math.max(0, free));
    const later = waiting.slice(now.length);
    if (later.length > 0) {
      this.draining.set(bufnr, [...(this.draining.get(bufnr) ?? []), ...later]);
      if (user) {
        this.info(`Executing ${now.length}/${waiting.length} tools (max_concurrent=${limit})`);
      }
    }
    for (const call of now) this.startCall(bufnr, call, config, facts);
  }

  private startCall(
    bufnr: number,
    call: QueuedCall,
    config: Config,
    facts: EditorFacts | undefined,
  ): void {
    void this.execute(bufnr, call.id, call.name, call.input, config, {
      replaceFinished: false,
      placeholder: true,
      ...(facts === undefined ? {} : { facts }),
    });
  }

  /** A slot freed up: start the next approved calls of a throttled buffer. */
  private startQueued(bufnr: number, config: Config, facts?: EditorFacts): void {
    const queue = this.draining.get(bufnr);
    if (queue === undefined) return;
    const limit = config.tools.max_concurrent;
    let free = limit === 0 ? queue.length : limit - this.slotsUsed(bufnr);
    while (free > 0) {
      const call = queue.shift();
      if (call === undefined) break;
      free -= 1;
      this.startCall(bufnr, call, config, facts);
    }
    if (queue.length === 0) this.draining.delete(bufnr);
  }

  /** When the last running tool of a buffer finishes (a background job too), autopilot goes on. */
  private async afterTools(bufnr: number, config: Config): Promise<void> {
    if (this.runningIn(bufnr).length > 0) return;
    await this.deps.loop.toolsDone(bufnr, config);
  }

  /** `tools.<name>.cwd` expanded like a sandbox path (§7.3); Neovim's cwd when it expands to nothing. */
  private toolCwd(toolConfig: Record<string, unknown> | undefined, facts: EditorFacts): string {
    const setting = toolConfig?.['cwd'];
    if (typeof setting !== 'string' || setting === '') return facts.cwd;
    try {
      return expandPathVariable(setting, facts, process.env, homedir()) ?? facts.cwd;
    } catch (error) {
      this.warnOnce(`cwd:${setting}`, error instanceof Error ? error.message : String(error));
      return facts.cwd;
    }
  }

  /** The call's write gate, built when a write first asks it (most calls write nothing). */
  private lazyGate(call: ToolCall, config: Config, facts: EditorFacts): WriteGate | undefined {
    const build = this.deps.gate;
    if (build === undefined) return undefined;
    let gate: WriteGate | undefined;
    return { refusal: (real) => (gate ??= build(call, config, facts)).refusal(real) };
  }

  /** A warning shown once per host (the sandbox's "no backend", a bad setting). */
  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.warn(message);
  }

  private readonly warned = new Set<string>();

  private unlockIfIdle(bufnr: number): void {
    if (this.runningIn(bufnr).length > 0) return;
    this.ctx.lua.notify('buffer.unlock', { bufnr, owner: 'tools' });
  }

  private warn(message: string): void {
    this.ctx.lua.notify('notify', { level: 'warn', message });
  }

  private info(message: string): void {
    this.ctx.lua.notify('notify', { level: 'info', message });
  }
}
