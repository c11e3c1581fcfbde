// The conversation loop of one chat buffer: its one owner. It runs the steps of `<C-]>` one at a
// time (a step pressed while autopilot's step runs waits for it, and then sees the placeholders
// that step wrote), owns the buffer's autopilot, and knows whether the buffer is busy (a request
// or a tool runs, or autopilot is about to go on). The decisions of a step are in `cycle.ts`; the
// world is behind the ports (`ports.ts`), so all of it runs in unit tests with fakes.
import { Autopilot, type AutopilotPorts, type AutopilotSettings } from './autopilot.js';
import { runStep, type StepOutcome, type StepPorts } from './cycle.js';
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
  private queued = 0;

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
    this.queued += 1;
    const settled = this.queue
      .then(() => runStep(this.ports, this.autopilot, user))
      .catch((error: unknown): StepOutcome => {
        this.ports.failed(error);
        return 'refused';
      })
      .finally(() => {
        this.queued -= 1;
        if (this.idle) this.ports.settled?.();
      });
    this.queue = settled;
    return settled;
  }

  /** No step runs or waits to run, nothing runs, and autopilot does not go on: the user has it. */
  get idle(): boolean {
    return !this.stepping && !this.busy;
  }

  /** A step runs or waits to run. */
  get stepping(): boolean {
    return this.queued > 0;
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
