// The calls the executor runs, per buffer: what a cancel, `:Flemma tool:background`,
// `tools.max_concurrent` and `:Flemma tool:list` read; and the events the executor emits.
import { TASK_TOOL_NAME } from '../../core/tools/definitions/task.js';
import type { Config } from '../../core/config/config.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { RunListing } from '../../editor/protocol/tools.js';

/** What the executor says happened (one subscriber: the wiring, which tells the session). */
export interface ExecutorEvents {
  /**
   * The buffer's last running call settled (its result is written; a background job's too).
   * `config`: the configuration the call ran with (the buffer's frontmatter applied).
   */
  settled: { bufnr: number; config: Config };
  /** A call of the buffer was cancelled (its autopilot stops). */
  cancelled: { bufnr: number };
  /**
   * A running call printed `chunk` (`ctx.output`: bash's output as it comes, its bytes); `lines`,
   * how many of its last lines show under its block (`ui.tool_output.lines`).
   */
  output: { bufnr: number; id: string; chunk: string | Uint8Array; lines: number };
  /**
   * A call stopped running: its result is written, or it was cancelled (its result follows).
   * `via`: where what it shows goes (with its result's write, when it rides with it).
   */
  stopped: { id: string; via?: Pick<LuaBridge, 'notify'> };
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

/** The running calls of every buffer, by call id. */
export class RunTable {
  private readonly runs = new Map<string, Running>();
  private jobSeq = 0;

  /** A new run of the call (not yet started). */
  start(id: string, name: string, bufnr: number): Running {
    const run: Running = {
      id,
      name,
      bufnr,
      startedAt: Date.now(),
      controller: new AbortController(),
      background: false,
      cancelled: false,
    };
    this.runs.set(id, run);
    return run;
  }

  /** The run is over; false when it was no longer the call's run. */
  end(run: Running): boolean {
    if (this.runs.get(run.id) !== run) return false;
    this.runs.delete(run.id);
    return true;
  }

  /** The run is still the call's current one. */
  current(run: Running): boolean {
    return this.runs.get(run.id) === run;
  }

  get(id: string): Running | undefined {
    return this.runs.get(id);
  }

  has(id: string): boolean {
    return this.runs.has(id);
  }

  /** A number for the next background job. */
  nextJob(): number {
    this.jobSeq += 1;
    return this.jobSeq;
  }

  /** Running calls of a buffer (background jobs only when asked). */
  in(bufnr: number, options: { includeBackground?: boolean } = {}): Running[] {
    return [...this.runs.values()].filter(
      (run) => run.bufnr === bufnr && (options.includeBackground === true || !run.background),
    );
  }

  /** Running calls of a buffer that count against `tools.max_concurrent`. */
  slotsUsed(bufnr: number): number {
    // A `task` call takes none: its own limit is `tools.task.max_concurrent` (src/host/tasks/).
    return this.in(bufnr).filter((run) => run.returned !== true && run.name !== TASK_TOOL_NAME)
      .length;
  }

  /** The buffer's oldest running call (a background job too), the default target of a cancel. */
  oldest(bufnr: number, options: { includeBackground?: boolean } = {}): Running | undefined {
    return this.in(bufnr, options).sort((a, b) => a.startedAt - b.startedAt)[0];
  }

  all(): Running[] {
    return [...this.runs.values()];
  }

  backgroundCount(): number {
    return this.all().filter((run) => run.background).length;
  }

  list(now = Date.now()): RunListing[] {
    return this.all()
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
}
