// The tool executor: runs approved calls (at most `tools.max_concurrent` at a time per buffer,
// the rest as slots free up), each in three parts — prepare (prepare.ts: the tool list and
// policy checked again, sandbox, working directory, undo journal, write gate), invoke (invoke.ts:
// schema, middleware, timeout, cancel, background) and settle (settle.ts: undo record, audit,
// truncation, the result written, hooks, cursor) — plus background jobs and `tool:cancel`. It
// tells what happened through its `events` (the wiring hands them to the buffer's session); it
// never calls back into the session.
//
// Decisions (see docs/tools.md):
// - A running tool's placeholder keeps `status=approved` in the file, so a file saved mid-run
//   says what was about to happen and a crash leaves a block that can be run again; the spinner
//   and the preview line show that it runs.
// - `tools.max_concurrent` counts the tools running in one buffer, `task` calls aside (their
//   limit is `tools.task.max_concurrent`, src/host/tasks/).
// - No round trip to Neovim is awaited before a call starts: the facts come with the dispatch,
//   and a placeholder the call still needs (`<M-CR>` on a bare tool use) is written while the
//   tool runs; its result is written after it.
// - The executor's own timeout is the tool's `timeout` setting, else the input's `timeout`
//   (seconds) when the schema has one, else `tools.default_timeout`; tools that time themselves
//   out (bash, grep, find) get a grace period so that their own message wins.
import type { ToolCall } from '../../core/approval/chain.js';
import type { Config } from '../../core/config/config.js';
import { toolCallAt } from '../../core/tools/locate.js';
import { TASK_TOOL_NAME } from '../../core/tools/definitions/task.js';
import type { ToolDefinition } from '../../core/tools/registry.js';
import type { WriteGate } from '../../core/tools/sandbox/gate.js';
import type { TruncateFs } from '../../core/tools/truncate.js';
import type { SchemaValidator } from '../../core/tools/validate.js';
import { Emitter } from '../../core/util/emitter.js';
import type { Notifier } from '../../core/util/notify.js';
import type { HookEmitter } from '../../editor/hooks.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { EditorFacts } from '../buffer-settings.js';
import type { FileLogger } from '../log.js';
import { retractNotice } from '../notifier.js';
import type { UndoService } from '../undo/service.js';
import { auditCall } from './audit-file.js';
import type { ToolCatalogue } from './catalogue.js';
import { type InvokePorts, invokeCall } from './invoke.js';
import { CANCELLED_TEXT, type LuaTools } from './lua-tools.js';
import {
  type CallRef,
  type PreparePorts,
  type SandboxResolver,
  checkCall,
  prepareCall,
} from './prepare.js';
import { type ResultWriter, resultHeaderRow } from './results.js';
import type { WriteScheduler } from '../../editor/writequeue.js';
import { type ExecutorEvents, RunTable, type Running } from './runs.js';
import type { RunListing } from '../../editor/protocol/tools.js';
import { type SettleContext, Settler } from './settle.js';

export type { ExecutorEvents, Running } from './runs.js';

export interface ExecutorDeps {
  /** The spinner and the buffer lock (notifications to Lua). */
  editor: Pick<LuaBridge, 'notify'>;
  hooks: Pick<HookEmitter, 'post' | 'emit'>;
  notify: Notifier;
  logger: Pick<FileLogger, 'error' | 'info' | 'redactor'>;
  validator: SchemaValidator;
  /** A call's sandbox (`sandboxResolver` in prepare.ts). */
  sandbox: SandboxResolver;
  catalogue: Pick<
    ToolCatalogue,
    'registry' | 'middleware' | 'isBuiltin' | 'originOf' | 'filterRefusal' | 'policyBlocks'
  >;
  lua: Pick<LuaTools, 'setSandbox' | 'runsInLua'>;
  results: Pick<ResultWriter, 'inject' | 'held' | 'fresh' | 'ensurePlaceholder'>;
  /** What follows a result rides with its write (Settler). */
  writes: Pick<WriteScheduler, 'noticeAfterWrites'>;
  /** The buffer's autopilot is about to go on: the cursor stays where it is. */
  autopilotArmed(bufnr: number): boolean;
  /** Keeps what the files a call wrote held before (`:Flemma tool:undo`). */
  undo?: Pick<UndoService, 'record' | 'limits' | 'noted'>;
  /** The sensitive places a call may not write (ApprovalService.writeGate). */
  gate?: (call: ToolCall, config: Config, facts: EditorFacts) => WriteGate;
  /** Where a cut output's whole text is saved (`nodeTruncateFs`). */
  truncateFs: TruncateFs;
  home: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** An approved call waiting to be started. */
export interface QueuedCall {
  id: string;
  name: string;
  input: unknown;
}

/** A throttled call, with the configuration and facts it was dispatched with. */
interface Throttled {
  call: QueuedCall;
  config: Config;
  facts: EditorFacts;
}

/** How a call is started. */
export interface ExecuteOptions {
  /** A re-run: the finished result is replaced. */
  replaceFinished: boolean;
  /** The editor's facts the step (or the command) already has: no round trip is made for them. */
  facts: EditorFacts;
  /** The caller wrote the call's placeholder: the tool need not wait for a fresh parse. */
  placeholder?: boolean;
}

export class ToolExecutor {
  /** What the executor says happened: a buffer's calls settled, a call was cancelled. */
  readonly events = new Emitter<ExecutorEvents>();
  private readonly runs = new RunTable();
  private readonly settler: Settler;
  /**
   * Approved calls of a buffer throttled by `tools.max_concurrent`, waiting for a slot. The
   * list is taken when they are dispatched, not from a later parse: the buffer is locked while
   * tools run, and a parse may still lag behind the placeholders or the results written since.
   */
  private readonly draining = new Map<number, Throttled[]>();
  private readonly warned = new Set<string>();
  /** Buffers whose "Executing 2/3 tools" message is shown, to take back when their tools end. */
  private readonly throttled = new Set<number>();
  /** The ports of the first two parts (the third is the `settler`). */
  private readonly prepare: PreparePorts;
  private readonly invoke: InvokePorts;

  constructor(private readonly deps: ExecutorDeps) {
    this.prepare = {
      catalogue: deps.catalogue,
      sandbox: deps.sandbox,
      lua: deps.lua,
      undo: deps.undo,
      gate: deps.gate,
      warnOnce: (key, message) => {
        this.warnOnce(key, message);
      },
      home: deps.home,
      env: deps.env,
    };
    this.invoke = { hooks: deps.hooks, catalogue: deps.catalogue, validator: deps.validator };
    this.settler = new Settler({
      results: deps.results,
      writes: deps.writes,
      autopilotArmed: (bufnr) => deps.autopilotArmed(bufnr),
      undo: deps.undo,
      audit: (config, fields, def) =>
        auditCall(deps.logger, this.warnOnce.bind(this), config, fields, def),
      truncateFs: deps.truncateFs,
      catalogue: deps.catalogue,
      hooks: deps.hooks,
      editor: deps.editor,
      runs: {
        returned: (run) => {
          run.returned = true;
          this.startQueued(run.bufnr);
        },
        alone: (run) =>
          !this.draining.has(run.bufnr) && this.runs.in(run.bufnr).every((other) => other === run),
        release: (run, options) => {
          this.release(run, options?.followed === true);
        },
        idle: (bufnr) => this.runs.in(bufnr).length === 0,
        backgroundCount: () => this.runs.backgroundCount(),
      },
      events: this.events,
    });
  }

  runningIn(bufnr: number, options: { includeBackground?: boolean } = {}): Running[] {
    return this.runs.in(bufnr, options);
  }

  /** The call `id` runs. */
  isCallRunning(id: string): boolean {
    return this.runs.has(id);
  }

  /** Approved calls of the buffer wait for a slot. */
  hasQueue(bufnr: number): boolean {
    return this.draining.has(bufnr);
  }

  /** Tools of the buffer take `max_concurrent` slots, or wait for one. */
  busy(bufnr: number): boolean {
    return this.runs.slotsUsed(bufnr) > 0 || this.draining.has(bufnr);
  }

  isRunning(bufnr: number): boolean {
    return this.runs.in(bufnr, { includeBackground: true }).length > 0;
  }

  list(): RunListing[] {
    return this.runs.list();
  }

  /** Whether a call runs that is not a background job (in any buffer). */
  runsInForeground(): boolean {
    return this.runs.all().some((run) => !run.background);
  }

  /** `:Flemma tool:cancel`: the call at the cursor, else the oldest running one in the buffer. */
  async cancelAt(bufnr: number, row: number | null): Promise<boolean> {
    const target =
      (await this.runAt(bufnr, row)) ?? this.runs.oldest(bufnr, { includeBackground: true });
    if (target === undefined) return false;
    this.cancelRun(target);
    return true;
  }

  /**
   * Cancel the buffer's oldest running tool (the second choice of `<C-c>`); when it is a `task`
   * call, every running `task` call of the buffer: `<C-c>` in a chat stops all its children.
   */
  cancelOldest(bufnr: number): boolean {
    const run = this.runs.oldest(bufnr, { includeBackground: true });
    if (run === undefined) return false;
    this.cancelRun(run);
    if (run.name !== TASK_TOOL_NAME) return true;
    for (const other of this.runs.in(bufnr, { includeBackground: true })) {
      if (other.name === TASK_TOOL_NAME && !other.cancelled) this.cancelRun(other);
    }
    return true;
  }

  cancelAll(): number {
    const runs = this.runs.all();
    // Calls still waiting for a slot are not started either.
    for (const run of runs) this.draining.delete(run.bufnr);
    for (const run of runs) this.cancelRun(run);
    return runs.length;
  }

  private cancelRun(run: Running): void {
    run.cancelled = true;
    // What it printed leaves at once; its result follows once it has stopped.
    this.events.emit('stopped', { id: run.id });
    this.events.emit('cancelled', { bufnr: run.bufnr });
    run.controller.abort(new Error(CANCELLED_TEXT));
  }

  /** The running call whose block is on 0-based `row`. */
  private async runAt(bufnr: number, row: number | null): Promise<Running | undefined> {
    if (row === null) return undefined;
    const state = await this.deps.results.fresh(bufnr);
    const found = state === undefined ? undefined : toolCallAt(state.document, row + 1);
    return found?.ok === true ? this.runs.get(found.call.id) : undefined;
  }

  /** `:Flemma tool:background`: move the call at the cursor (or the oldest) to the background. */
  async background(bufnr: number, row: number | null): Promise<boolean> {
    const target = (await this.runAt(bufnr, row)) ?? this.runs.oldest(bufnr);
    if (target === undefined || target.background) return false;
    await this.toBackground(target);
    return true;
  }

  private async toBackground(run: Running): Promise<void> {
    if (run.background || !this.runs.current(run)) return;
    run.background = true;
    run.jobId = this.runs.nextJob();
    this.deps.editor.notify('tools.spinner', {
      bufnr: run.bufnr,
      tool_id: run.id,
      state: 'background',
      job_id: run.jobId,
    });
    this.unlockIfIdle(run.bufnr);
    await this.deps.hooks.emit('job:submitted', {
      bufnr: run.bufnr,
      job_id: String(run.jobId),
      tool_id: run.id,
      tool_name: run.name,
      active_count: this.runs.backgroundCount(),
    });
  }

  /** Run one call and write its result in place of its placeholder. */
  async execute(
    bufnr: number,
    id: string,
    name: string,
    input: unknown,
    config: Config,
    options: ExecuteOptions,
  ): Promise<void> {
    if (this.runs.has(id)) {
      this.deps.notify.warn(`Tool ${id} is already running`);
      return;
    }
    const call: CallRef = { bufnr, id, name, input };
    const checked = checkCall(name, config, this.deps.catalogue);
    if (checked.kind === 'unknown') {
      this.deps.notify.warn(checked.message);
      return;
    }
    if (checked.kind === 'refused') {
      // It took no slot, but a throttled call may have waited for this one's turn (once the
      // dispatch that started this one is done).
      queueMicrotask(() => {
        this.startQueued(bufnr);
      });
      const context = { config, facts: options.facts, replaceFinished: options.replaceFinished };
      await this.settler.refuse(call, checked.error, { ...context, placed: Promise.resolve() });
      return;
    }
    await this.run(call, checked.def, config, options);
  }

  /** Prepare, invoke and settle a call that may run. */
  private async run(
    call: CallRef,
    def: ToolDefinition,
    config: Config,
    options: ExecuteOptions,
  ): Promise<void> {
    const { deps } = this;
    const run = this.runs.start(call.id, call.name, call.bufnr);
    try {
      // The lock is per owner, not per tool; a notification still reaches Neovim before the
      // tool's writes.
      deps.editor.notify('buffer.lock', { bufnr: call.bufnr, owner: 'tools' });
      const placed = this.place(run, config, options.placeholder === true);
      const { signal } = run.controller;
      const lines = config.toolOutputLines;
      // What it prints goes out while it is the call's run and not cancelled.
      const output = (chunk: string | Uint8Array): void => {
        if (!this.runs.current(run) || run.cancelled) return;
        this.events.emit('output', { bufnr: call.bufnr, id: call.id, chunk, lines });
      };
      const prepared = await prepareCall(
        call,
        def,
        config,
        options.facts,
        signal,
        this.prepare,
        output,
      );
      const invoked = await invokeCall(call, prepared, run, config.tools, this.invoke, () => {
        void this.toBackground(run);
      });
      const context: SettleContext = {
        config,
        facts: options.facts,
        replaceFinished: options.replaceFinished,
        placed,
      };
      await this.settler.settle(call, run, prepared, invoked, context);
    } catch (error) {
      deps.logger.error(`executing ${call.name} (${call.id}) failed`, error);
      deps.notify.warn(`${call.name}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      if (this.runs.current(run)) {
        deps.editor.notify('tools.spinner', {
          bufnr: call.bufnr,
          tool_id: call.id,
          state: 'clear',
        });
        this.release(run);
      }
    }
  }

  /**
   * The call's placeholder and its spinner, not awaited by the tool: a placeholder the step wrote
   * gets its row once the results written before it are parsed (its neighbours' results are
   * being written meanwhile); one the call still needs (`<M-CR>` on a bare tool use) is written
   * now. Settles once the placeholder is in the buffer, for the result to follow it.
   */
  private place(run: Running, config: Config, written: boolean): Promise<unknown> {
    const { results } = this.deps;
    const spin = (row: number | undefined): void => {
      if (!config.tools.show_spinner || row === undefined) return;
      if (!this.runs.current(run) || run.returned === true) return;
      this.deps.editor.notify('tools.spinner', {
        bufnr: run.bufnr,
        tool_id: run.id,
        row,
        state: 'running',
      });
    };
    if (written) {
      void results
        .held(run.bufnr)
        .then(() => results.fresh(run.bufnr))
        .then(
          (state) => {
            spin(state === undefined ? undefined : resultHeaderRow(state.document, run.id));
          },
          () => undefined,
        );
      return Promise.resolve();
    }
    const placing = results.ensurePlaceholder(run.bufnr, run.id);
    placing.then(spin, () => undefined);
    return placing;
  }

  /**
   * Start approved calls: as many as `tools.max_concurrent` leaves room for, the rest as slots
   * free up (`startQueued`). Started, not awaited: the tools report through their results.
   */
  dispatch(
    bufnr: number,
    calls: readonly QueuedCall[],
    config: Config,
    facts: EditorFacts,
    user: boolean,
  ): void {
    const queued = new Set((this.draining.get(bufnr) ?? []).map((entry) => entry.call.id));
    const fresh = calls.filter((call) => !this.runs.has(call.id) && !queued.has(call.id));
    // `task` calls take no slot (their limit is their own): they start now.
    for (const call of fresh) {
      if (call.name === TASK_TOOL_NAME) this.startCall(bufnr, { call, config, facts });
    }
    const waiting = fresh.filter((call) => call.name !== TASK_TOOL_NAME);
    const limit = config.tools.max_concurrent;
    const free = limit === 0 ? waiting.length : limit - this.runs.slotsUsed(bufnr);
    const now = waiting.slice(0, Math.max(0, free));
    const later = waiting.slice(now.length).map((call) => ({ call, config, facts }));
    if (later.length > 0) {
      this.draining.set(bufnr, [...(this.draining.get(bufnr) ?? []), ...later]);
      if (user) {
        // Taken back when the buffer's tools have ended (`unlockIfIdle`).
        this.throttled.add(bufnr);
        this.deps.notify.info(
          `Executing ${now.length}/${waiting.length} tools (max_concurrent=${limit})`,
          { key: throttledKey(bufnr) },
        );
      }
    }
    for (const call of now) this.startCall(bufnr, { call, config, facts });
  }

  private startCall(bufnr: number, { call, config, facts }: Throttled): void {
    void this.execute(bufnr, call.id, call.name, call.input, config, {
      replaceFinished: false,
      placeholder: true,
      facts,
    });
  }

  /** A slot freed up: start the next approved calls of a throttled buffer. */
  private startQueued(bufnr: number): void {
    const queue = this.draining.get(bufnr);
    const limit = queue?.[0]?.config.tools.max_concurrent;
    if (queue === undefined || limit === undefined) return;
    let free = limit === 0 ? queue.length : limit - this.runs.slotsUsed(bufnr);
    while (free > 0) {
      const entry = queue.shift();
      if (entry === undefined) break;
      free -= 1;
      this.startCall(bufnr, entry);
    }
    if (queue.length === 0) this.draining.delete(bufnr);
  }

  /**
   * The run is over: its sandbox facts dropped, its view gone, the buffer unlocked when nothing
   * else runs (`followed`: the view's end and the unlock went with its result).
   */
  private release(run: Running, followed = false): void {
    if (!this.runs.end(run)) return;
    if (!followed) this.events.emit('stopped', { id: run.id });
    this.deps.lua.setSandbox(run.id, undefined);
    this.unlockIfIdle(run.bufnr, followed);
  }

  /** A warning shown once per host (the sandbox's "no backend", a bad setting). */
  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.deps.notify.warn(message);
  }

  private unlockIfIdle(bufnr: number, unlocked = false): void {
    if (this.runs.in(bufnr).length > 0) return;
    if (!unlocked) this.deps.editor.notify('buffer.unlock', { bufnr, owner: 'tools' });
    if (this.draining.has(bufnr) || !this.throttled.delete(bufnr)) return;
    retractNotice(this.deps.editor, throttledKey(bufnr));
  }
}

/** The key of a buffer's "Executing 2/3 tools (max_concurrent=2)". */
function throttledKey(bufnr: number): string {
  return `tools:throttled:${String(bufnr)}`;
}
