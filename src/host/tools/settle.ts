// The third part of running an approved call: settling it. What the files it wrote held is kept
// (undo), the call is audited, a tool's long output is cut to the result limits, the result is
// written in its placeholder's place through the ResultWriter, the spinner stops, the cursor
// follows (`tools.cursor_after_result`), `tool:completed` (and `job:completed`) fire, and when
// it was the buffer's last running call the executor says so (`settled`).
import type { Config } from '../../core/config/config.js';
import type { ToolDefinition, ToolOutcome } from '../../core/tools/registry.js';
import { type TruncateFs, truncateForResult } from '../../core/tools/truncate.js';
import type { Emitter } from '../../core/util/emitter.js';
import type { HookEmitter } from '../../editor/hooks.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { LuaNotification, LuaParams } from '../../editor/protocol/index.js';
import type { WriteScheduler } from '../../editor/writequeue.js';
import { trace } from '../../editor/trace.js';
import type { EditorFacts } from '../buffer-settings.js';
import type { UndoService } from '../undo/service.js';
import type { auditCall } from './audit-file.js';
import type { ToolCatalogue } from './catalogue.js';
import type { Invoked } from './invoke.js';
import type { CallRef, PreparedCall } from './prepare.js';
import type { ResultWriter } from './results.js';
import type { ExecutorEvents, Running } from './runs.js';

/** The fields of one audit entry (`tools.hooks` with a `log` action). */
export type AuditFields = Parameters<typeof auditCall>[3];

/** What the settle part asks of the executor's table of runs. */
export interface SettleRuns {
  /** The call returned: its `max_concurrent` slot is free for a throttled call. */
  returned(run: Running): void;
  /** No other call of the run's buffer runs or waits for a slot. */
  alone(run: Running): boolean;
  /**
   * The run is over (its sandbox facts dropped, its view gone, the buffer unlocked when nothing
   * else runs; `followed`: the view's end and the unlock already went with its result).
   */
  release(run: Running, options?: { followed: boolean }): void;
  /** No call of the buffer runs in the foreground. */
  idle(bufnr: number): boolean;
  backgroundCount(): number;
}

/** A notice that rode with a result's write, to send again if its batch was held back. */
interface Notice {
  method: LuaNotification;
  send: () => void;
}

/** Where the notices that follow a result go: Neovim at once, or with the result's write. */
interface Notifier {
  notify<M extends LuaNotification>(method: M, params: LuaParams<M>): void;
}

export interface SettlePorts {
  results: Pick<ResultWriter, 'inject'>;
  writes: Pick<WriteScheduler, 'noticeAfterWrites'>;
  /** The buffer's autopilot is about to go on: the cursor stays where it is. */
  autopilotArmed(bufnr: number): boolean;
  undo?: Pick<UndoService, 'record'> | undefined;
  audit(config: Config, fields: AuditFields, def: ToolDefinition): Promise<void>;
  /** Where a cut output's whole text is saved. */
  truncateFs: TruncateFs;
  catalogue: Pick<ToolCatalogue, 'isBuiltin'>;
  hooks: Pick<HookEmitter, 'post'>;
  /** The spinner, the cursor, the lock, `tool:completed`, when they do not ride with a result. */
  editor: Pick<LuaBridge, 'notify'>;
  runs: SettleRuns;
  events: Emitter<ExecutorEvents>;
}

/** How the call was started. */
export interface SettleContext {
  config: Config;
  facts: EditorFacts;
  /** A re-run: the finished result is replaced. */
  replaceFinished: boolean;
  /** Settles once the call's placeholder is in the buffer (its result is written after it). */
  placed: Promise<unknown>;
}

export class Settler {
  constructor(private readonly ports: SettlePorts) {}

  /** Write the outcome of a call that ran, and say what follows. */
  async settle(
    call: CallRef,
    run: Running,
    prepared: PreparedCall,
    invoked: Invoked,
    context: SettleContext,
  ): Promise<void> {
    const outcome = await this.resultOf(call, prepared, invoked, context);
    trace(`tool:done ${call.id}`);
    // The slot frees as the tool returns: a throttled call starts while this result is written.
    this.ports.runs.returned(run);
    // The buffer's only call (when its result is queued): what follows its result travels with
    // the result's write.
    let riding: Promise<Notice[] | undefined> | undefined;
    const queued = run.background
      ? undefined
      : (): void => {
          if (this.ports.runs.alone(run)) riding = this.ride(call, run, outcome, context);
        };
    const injected = await this.write(call, outcome, context, queued);
    if (riding === undefined) {
      this.follow(call, outcome, context, this.ports.editor, injected, () => {
        this.ports.runs.release(run);
      });
    } else {
      // The batch was held back: what rode goes now, as it would have without it.
      const dropped = await riding;
      for (const { method, send } of dropped ?? [])
        if (injected || method !== 'tools.cursor') send();
    }
    if (run.background && run.jobId !== undefined) {
      this.ports.hooks.post('job:completed', {
        bufnr: call.bufnr,
        job_id: String(run.jobId),
        tool_id: call.id,
        tool_name: call.name,
        success: outcome.ok,
        active_count: this.ports.runs.backgroundCount(),
      });
    }
    this.afterCall(call.bufnr, context.config);
  }

  /**
   * What follows the result of the buffer's only call, queued with the result's edit (see
   * `follow`): Lua runs it right after the edit, so the user sees it in the same redraw and
   * listeners hear of the result a round trip sooner. Resolves with the notices when the batch
   * was held back (undefined: they went).
   */
  private async ride(
    call: CallRef,
    run: Running,
    outcome: ToolOutcome,
    context: SettleContext,
  ): Promise<Notice[] | undefined> {
    const notices: Notice[] = [];
    const sent: Promise<boolean>[] = [];
    const via: Notifier = {
      notify: (method, params) => {
        notices.push({
          method,
          send: () => {
            this.ports.editor.notify(method, params);
          },
        });
        sent.push(this.ports.writes.noticeAfterWrites(method, params));
      },
    };
    // The run is over here, before the batch leaves: what Lua does once it heard of the result
    // (a listener's command, the user's next key) finds the call gone, as it would without this.
    this.follow(call, outcome, context, via, true, () => {
      this.ports.events.emit('stopped', { id: call.id, via });
      this.ports.runs.release(run, { followed: true });
      via.notify('buffer.unlock', { bufnr: call.bufnr, owner: 'tools' });
    });
    return (await Promise.all(sent)).every(Boolean) ? undefined : notices;
  }

  /**
   * What follows a written result, in this order: the spinner stops, the run is released (its
   * view goes; the buffer's lock goes when it was its last call), the cursor moves to the result
   * (`tools.cursor_after_result`, when it is in), `tool:completed` fires: a listener sees the
   * buffer as the user will.
   */
  private follow(
    call: CallRef,
    outcome: ToolOutcome,
    context: SettleContext,
    via: Notifier,
    injected: boolean,
    release: () => void,
  ): void {
    const { bufnr } = call;
    if (context.config.tools.show_spinner) {
      via.notify('tools.spinner', {
        bufnr,
        tool_id: call.id,
        state: outcome.ok ? 'success' : 'error',
      });
    }
    release();
    const mode = context.config.tools.cursor_after_result;
    if (injected && mode !== 'stay' && !this.ports.autopilotArmed(bufnr)) {
      via.notify('tools.cursor', { bufnr, tool_id: call.id, mode });
    }
    via.notify('hooks.emit', {
      name: 'tool:completed',
      data: {
        bufnr,
        tool_name: call.name,
        tool_id: call.id,
        status: outcome.ok ? 'success' : 'error',
      },
    });
  }

  /** A call that may not run: the model gets `error` as its result. */
  async refuse(call: CallRef, error: string, context: SettleContext): Promise<void> {
    await this.write(call, { ok: false, error }, context);
    this.completed(call, false);
    this.afterCall(call.bufnr, context.config);
  }

  /** The undo record, the audit, and the output cut to the result limits. */
  private async resultOf(
    call: CallRef,
    prepared: PreparedCall,
    invoked: Invoked,
    context: SettleContext,
  ): Promise<ToolOutcome> {
    const { outcome } = invoked;
    // A failed call may have written too (a command that fails halfway): it is kept as well.
    const journal = prepared.journal;
    if (journal !== undefined) {
      await this.ports.undo?.record(
        call.bufnr,
        context.facts,
        call.id,
        journal.entries,
        journal.limits,
      );
    }
    await this.ports.audit(
      context.config,
      {
        tool: prepared.def.name,
        id: call.id,
        bufnr: call.bufnr,
        args: call.input,
        success: outcome.ok,
        durationMs: invoked.durationMs,
        error: outcome.ok ? undefined : outcome.error,
      },
      prepared.def,
    );
    // Built-in tools cut their own output.
    if (
      !outcome.ok ||
      typeof outcome.output !== 'string' ||
      this.ports.catalogue.isBuiltin(call.name)
    ) {
      return outcome;
    }
    const cut = await truncateForResult(
      outcome.output,
      { source: call.name, id: call.id, mode: 'head' },
      this.ports.truncateFs,
    );
    return { ok: true, output: cut.text };
  }

  /** The result in the buffer, after the placeholder; whether it got there. */
  private async write(
    call: CallRef,
    outcome: ToolOutcome,
    context: SettleContext,
    queued?: () => void,
  ): Promise<boolean> {
    await context.placed.catch(() => undefined);
    const { results } = this.ports;
    const { bufnr, id } = call;
    const injected = await results.inject(bufnr, id, outcome, context.replaceFinished, queued);
    trace(`tool:injected ${call.id}`);
    return injected;
  }

  /** Events keep their order on the channel; the executor does not wait for the listeners. */
  private completed(call: CallRef, ok: boolean): void {
    this.ports.hooks.post('tool:completed', {
      bufnr: call.bufnr,
      tool_name: call.name,
      tool_id: call.id,
      status: ok ? 'success' : 'error',
    });
  }

  /** The buffer's last running call settled: the session may go on. */
  private afterCall(bufnr: number, config: Config): void {
    if (this.ports.runs.idle(bufnr)) this.ports.events.emit('settled', { bufnr, config });
  }
}
