// Autopilot of one conversation: chains the steps of `<C-]>` by itself while tools are approved
// (docs/approval.md, "Autopilot"). A state (`idle`, `armed`, `sending`, `paused`) and the number of consecutive
// tool-using turns.
//
// Decisions:
// - Every automatic continue with a delay is scheduled (`schedule`): the host's timer waits
//   `tools.autopilot.resume_delay` ms and calls `resume(token)`, while the editor watches the
//   buffer; an edit there calls `cancelled(token)` and the state goes back to `idle` (the turn
//   counter is kept; only a cancel of a request or a tool resets it, as the specification says). A
//   token ties each answer to its schedule, so a stale answer does nothing. With no delay there is
//   nothing to cancel: the continue goes on at the next tick (`clock.soon`).
// - The events `autopilot:resume-scheduled` and `autopilot:resumed` come from here;
//   `autopilot:resume-cancelled` from the editor, which sees the edit.
// - The runtime switch (`:Flemma autopilot:enable|disable`) arrives through the settings.

export type AutopilotState = 'idle' | 'armed' | 'sending' | 'paused';

export interface AutopilotSettings {
  enabled: boolean;
  maxTurns: number;
  resumeDelay: number;
}

export interface AutopilotPorts {
  /** Call `resume(token)` after `delayMs` unless the buffer changes first (the editor watches). */
  schedule(delayMs: number, token: number): void;
  /** Forget a scheduled continue (a cancel): the timer stops, the editor stops watching. */
  unschedule(): void;
  /** `autopilot:resume-scheduled`; waits for its listeners when `wait`. */
  scheduled(delayMs: number, wait: boolean): Promise<void>;
  /** `autopilot:resumed` (not waited for: it keeps its place among the events). */
  resumed(): void;
  warn(message: string): void;
  /** Run `fn` on the next tick. */
  soon(fn: () => void): void;
  /** Runs one automatic step of the loop. */
  continueLoop(): Promise<void>;
}

/** `tools.autopilot` from a configuration (a boolean or a table), with defaults. */
export function autopilotSettings(tools: Record<string, unknown> | undefined): AutopilotSettings {
  const raw = tools?.['autopilot'];
  if (typeof raw === 'boolean') return { enabled: raw, maxTurns: 100, resumeDelay: 0 };
  const table =
    typeof raw === 'object' && raw !== null && !Array.isArray(raw)
      ? (raw as Record<string, unknown>)
      : {};
  const maxTurns = table['max_turns'];
  const resumeDelay = table['resume_delay'];
  return {
    enabled: table['enabled'] !== false,
    maxTurns: typeof maxTurns === 'number' && maxTurns >= 1 ? maxTurns : 100,
    resumeDelay: typeof resumeDelay === 'number' && resumeDelay >= 0 ? resumeDelay : 0,
  };
}

export class Autopilot {
  private current: AutopilotState = 'idle';
  private turns = 0;
  /** The scheduled continue's token, 0 when none is scheduled. */
  private token = 0;
  private tokens = 0;

  constructor(private readonly ports: AutopilotPorts) {}

  get state(): AutopilotState {
    return this.current;
  }

  get iteration(): number {
    return this.turns;
  }

  get armed(): boolean {
    return this.current === 'armed';
  }

  /** Approved tools started: continue once they are done. */
  arm(settings: AutopilotSettings): void {
    if (settings.enabled) this.current = 'armed';
  }

  /** A cancel (request or tools): back to idle, the turn counter reset, no pending continue. */
  disarm(): void {
    const hadPending = this.token !== 0;
    this.current = 'idle';
    this.turns = 0;
    this.token = 0;
    if (hadPending) this.ports.unschedule();
  }

  /** The loop stopped at a call that waits for the user. */
  pause(): void {
    if (this.current !== 'idle') this.current = 'paused';
  }

  /** `<M-CR>` while paused re-arms, so that the loop goes on once that tool is done. */
  rearmIfPaused(settings: AutopilotSettings): void {
    if (this.current === 'paused') this.arm(settings);
  }

  /**
   * A reply finished. With tool calls in it and autopilot on: count the turn and continue, or
   * stop with a warning past `max_turns`. Resolves to whether the loop goes on by itself (decided
   * here, before the scheduled continue can run and change the state).
   */
  async replyFinished(hasToolUse: boolean, settings: AutopilotSettings): Promise<boolean> {
    if (!settings.enabled || !hasToolUse) {
      if (this.current === 'sending') this.current = 'idle';
      return false;
    }
    this.turns += 1;
    if (this.turns > settings.maxTurns) {
      this.current = 'idle';
      this.ports.warn(
        `Autopilot stopped – exceeded ${settings.maxTurns} consecutive turns. Press <C-]> to go on.`,
      );
      return false;
    }
    this.current = 'armed';
    await this.schedule(settings);
    return true;
  }

  /** Every running tool finished (or a background job did). */
  async toolsFinished(settings: AutopilotSettings): Promise<void> {
    if (this.current !== 'armed' || !settings.enabled) return;
    // Parallel calls finish together (their results are written in one batch): the first of
    // them schedules the continue, the others find it scheduled.
    if (this.token !== 0) return;
    await this.schedule(settings);
  }

  private async schedule(settings: AutopilotSettings): Promise<void> {
    this.tokens += 1;
    this.token = this.tokens;
    const token = this.token;
    if (settings.resumeDelay === 0) {
      // No delay, so nothing to cancel: go on at the next tick without asking the editor.
      void this.ports.scheduled(0, false);
      this.ports.soon(() => {
        void this.resume(token);
      });
      return;
    }
    // The timer first: a listener of the event that edits the buffer then cancels it.
    this.ports.schedule(settings.resumeDelay, token);
    await this.ports.scheduled(settings.resumeDelay, true);
  }

  /** The delay passed without an edit. */
  async resume(token: number): Promise<void> {
    if (this.token !== token || this.current !== 'armed') return;
    this.token = 0;
    this.current = 'sending';
    this.ports.resumed();
    await this.ports.continueLoop();
  }

  /** The buffer changed before the delay passed (or the switch was turned off). */
  cancelled(token: number): void {
    if (this.token !== token) return;
    this.token = 0;
    this.current = 'idle';
  }

  /** A step of the loop found nothing more to do automatically. */
  settle(): void {
    if (this.current === 'sending') this.current = 'idle';
  }
}
