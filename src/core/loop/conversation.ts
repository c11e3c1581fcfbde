// The conversation loop of one chat buffer: its one owner. It runs the steps of `<C-]>` one at a
// time (a step pressed while autopilot's step runs waits for it, and then sees the placeholders
// that step wrote), owns the buffer's autopilot, and knows whether the buffer is busy (a request
// or a tool runs, or autopilot is about to go on). The decisions of a step are in `cycle.ts`; the
// world is behind the ports (`ports.ts`), so all of it runs in unit tests with fakes.
import { Autopilot, type AutopilotPorts, type AutopilotSettings } from './autopilot.js';
import { runCallAt } from './call.js';
import { BUSY_CALL, runStep, sendRefusal, type StepOutcome, type StepPorts } from './cycle.js';
import type { StepSettings } from './ports.js';

export interface ConversationPorts<C extends StepSettings> extends StepPorts<C> {
  /** How autopilot schedules, announces and warns (its `continueLoop` is this loop's step). */
  autopilot: Omit<AutopilotPorts, 'continueLoop' | 'soon'>;
  /** Logs a step that failed (the step's own errors are reported by the ports). */
  failed(error: unknown): void;
  /** A step ended and the loop is idle (`Conversation.idle`): nothing goes on by itself. */
  settled?(): void;
}

export class Conversation<C extends StepSettings> {
  readonly autopilot: Autopilot;
  private queue: Promise<unknown> = Promise.resolve();
  private pending = 0;

  constructor(private readonly ports: ConversationPorts<C>) {
    this.autopilot = new Autopilot({
      ...ports.autopilot,
      soon: (fn) => {
        ports.clock.soon(fn);
      },
      continueLoop: async () => {
        await this.step(false);
      },
    });
  }

  /**
   * One step of the loop: the user's `<C-]>` (`user`) or an automatic continue. Steps of one
   * buffer run one after another; the promise settles (never rejects) when this one is done,
   * with how it ended (a step that failed counts as `refused`).
   */
  step(user: boolean): Promise<StepOutcome> {
    return this.queued(() => this.guarded(runStep(this.ports, this.autopilot, user)));
  }

  /**
   * `<M-CR>`: the call under the cursor (0-based `row`), as a step of its own (`call.ts`). While
   * a request runs (a step's send holds the queue until its reply ends) it is refused at once.
   */
  runCallAt(row: number): Promise<StepOutcome> {
    if (this.ports.provider.running()) {
      this.ports.editor.warn(BUSY_CALL);
      return Promise.resolve('refused');
    }
    return this.queued(() => this.guarded(runCallAt(this.ports, this.autopilot, row)));
  }

  /**
   * A change of the user's to the buffer's calls (a decision from a command or the diff), in
   * its turn among the steps: no step reads the buffer halfway through it. While a request
   * runs it does not wait for the reply (a step's send holds the queue). Rejects when the change
   * does (the queue goes on).
   */
  decision<T>(change: () => Promise<T>): Promise<T> {
    return this.ports.provider.running() ? change() : this.queued(change);
  }

  /**
   * Why a send cannot start now (a request or a tool runs), or undefined: the one busy rule
   * of the loop (`sendRefusal`); `busy` adds autopilot's pending continue.
   */
  refusal(): string | undefined {
    return sendRefusal(this.ports);
  }

  /** A step that failed is logged, and counts as `refused`. */
  private async guarded(step: Promise<StepOutcome>): Promise<StepOutcome> {
    try {
      return await step;
    } catch (error) {
      this.ports.failed(error);
      return 'refused';
    }
  }

  /** Runs `task` after every task queued before it; the queue goes on whatever it does. */
  private queued<T>(task: () => Promise<T>): Promise<T> {
    this.pending += 1;
    const run = this.queue.then(task).finally(() => {
      this.pending -= 1;
      if (this.idle) this.ports.settled?.();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** No step runs or waits to run, nothing runs, and autopilot does not go on: the user has it. */
  get idle(): boolean {
    return !this.stepping && !this.busy;
  }

  /** A step runs or waits to run. */
  get stepping(): boolean {
    return this.pending > 0;
  }

  /** A request or a tool runs, or autopilot is about to go on. */
  get busy(): boolean {
    return this.ports.provider.running() || this.ports.tools.running() || this.autopilot.armed;
  }

  /**
   * A reply finished: autopilot counts the turn and goes on when it asked for tools. Resolves to
   * whether the loop goes on by itself (false: the turn is over and the user has the word).
   */
  replyFinished(hasToolUse: boolean, settings: AutopilotSettings): Promise<boolean> {
    return this.autopilot.replyFinished(hasToolUse, settings);
  }

  /** Every running tool finished (or a background job did): autopilot may go on. */
  toolsFinished(settings: AutopilotSettings): Promise<void> {
    return this.autopilot.toolsFinished(settings);
  }

  /** A request or a tool was cancelled, or a request failed: autopilot stops. */
  stopped(): void {
    this.autopilot.disarm();
  }
}
