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
  /** The run is over (its sandbox facts dropped, the buffer unlocked when nothing else runs). */
  release(run: Running): void;
  /** No call of the buffer runs in the foreground. */
  idle(bufnr: number): boolean;
  backgroundCount(): number;
}

export interface SettlePorts {
  results: Pick<ResultWriter, 'inject' | 'moveCursor'>;
  undo?: Pick<UndoService, 'record'> | undefined;
  audit(config: Config, fields: AuditFields, def: ToolDefinition): Promise<void>;
  /** Where a cut output's whole text is saved. */
  truncateFs: TruncateFs;
  catalogue: Pick<ToolCatalogue, 'isBuiltin'>;
  hooks: Pick<HookEmitter, 'post'>;
  /** The spinner (`tools.spinner`). */
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
    const injected = await this.write(call, outcome, context);
    if (context.config.tools.show_spinner) {
      this.ports.editor.notify('tools.spinner', {
        bufnr: call.bufnr,
        tool_id: call.id,
        state: outcome.ok ? 'success' : 'error',
      });
    }
    this.ports.runs.release(run);
    // The cursor moves before the event, so a listener sees the buffer as the user will.
    if (injected) {
      const mode = context.config.tools.cursor_after_result;
      await this.ports.results.moveCursor(call.bufnr, call.id, mode);
    }
    this.completed(call, outcome.ok);
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
  ): Promise<boolean> {
    await context.placed.catch(() => undefined);
    const { results } = this.ports;
    const injected = await results.inject(call.bufnr, call.id, outcome, context.replaceFinished);
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
