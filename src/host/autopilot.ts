// Autopilot: chains the phases of <C-]> by itself while tools are approved (behaviour §3.11 and
// the approval issue). Per buffer: a state (`idle`, `armed`, `sending`, `paused`) and the number
// of consecutive tool-using turns.
//
// Decisions:
// - Every automatic continue is scheduled through Lua (`autopilot.schedule`), which waits
//   `tools.autopilot.resume_delay` ms (0: the next tick) and calls back with `autopilot:resume`,
//   unless the buffer's text changed meanwhile: then it reports `autopilot:cancelled` and the
//   state goes back to `idle` (the turn counter is kept; only a cancel of a request or a tool
//   resets it, as the specification says). A token ties each answer to its schedule, so a stale
//   answer does nothing.
// - The events `autopilot:resume-scheduled` and `autopilot:resumed` come from here;
//   `autopilot:resume-cancelled` from Lua, which sees the edit.
// - The runtime switch (`:Flemma autopilot:enable|disable`) reaches the host through the
//   configuration snapshot (`tools.autopilot.enabled`).

import { trace } from './trace.js';
import type { LuaParams } from '../editor/protocol/index.js';

export type AutopilotState = 'idle' | 'armed' | 'sending' | 'paused';

export interface AutopilotSettings {
  enabled: boolean;
  maxTurns: number;
  resumeDelay: number;
}

export interface AutopilotPorts {
  notifyLua<M extends 'autopilot.schedule' | 'autopilot.cancel'>(
    method: M,
    params: LuaParams<M>,
  ): void;
  emit(
    name: 'autopilot:resume-scheduled' | 'autopilot:resumed',
    data: { bufnr: number; delay_ms?: number },
  ): Promise<void>;
  /** Deliver an event without waiting for its listeners (it keeps its place on the channel). */
  post(
    name: 'autopilot:resume-scheduled' | 'autopilot:resumed',
    data: { bufnr: number; delay_ms?: number },
  ): void;
  warn(message: string): void;
  /** Runs one non-user-initiated step of the cycle for `bufnr`. */
  continueCycle(bufnr: number): Promise<void>;
}

interface BufferState {
  state: AutopilotState;
  iteration: number;
  token: number;
}

/** `tools.autopilot` from a configuration snapshot (a boolean or a table), with defaults. */
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
  private readonly buffers = new Map<number, BufferState>();
  private tokens = 0;

  constructor(private readonly ports: AutopilotPorts) {}

  private entry(bufnr: number): BufferState {
    let entry = this.buffers.get(bufnr);
    if (entry === undefined) {
      entry = { state: 'idle', iteration: 0, token: 0 };
      this.buffers.set(bufnr, entry);
    }
    return entry;
  }

  state(bufnr: number): AutopilotState {
    return this.buffers.get(bufnr)?.state ?? 'idle';
  }

  iteration(bufnr: number): number {
    return this.buffers.get(bufnr)?.iteration ?? 0;
  }

  /** Phase 2 dispatched approved tools: continue once they are done. */
  arm(bufnr: number, settings: AutopilotSettings): void {
    if (!settings.enabled) return;
    this.entry(bufnr).state = 'armed';
  }

  /** A cancel (request or tools): back to idle, the turn counter reset, no pending continue. */
  disarm(bufnr: number): void {
    const entry = this.buffers.get(bufnr);
    if (entry === undefined) return;
    const hadPending = entry.token !== 0;
    entry.state = 'idle';
    entry.iteration = 0;
    entry.token = 0;
    if (hadPending) this.ports.notifyLua('autopilot.cancel', { bufnr, from_host: true });
  }

  /** The cycle stopped at an empty pending placeholder. */
  pause(bufnr: number): void {
    const entry = this.buffers.get(bufnr);
    if (entry !== undefined && entry.state !== 'idle') entry.state = 'paused';
  }

  /** `<M-CR>` while paused re-arms, so that the cycle goes on once that tool is done. */
  rearmIfPaused(bufnr: number, settings: AutopilotSettings): void {
    if (this.state(bufnr) === 'paused') this.arm(bufnr, settings);
  }

  isArmed(bufnr: number): boolean {
    return this.state(bufnr) === 'armed';
  }

  /**
   * A reply finished. With tool calls in it and autopilot on: count the turn and continue, or
   * stop with a warning past `max_turns`.
   */
  async responseComplete(
    bufnr: number,
    hasToolUse: boolean,
    settings: AutopilotSettings,
  ): Promise<void> {
    if (!settings.enabled || !hasToolUse) {
      if (this.state(bufnr) === 'sending') this.entry(bufnr).state = 'idle';
      return;
    }
    const entry = this.entry(bufnr);
    entry.iteration += 1;
    if (entry.iteration > settings.maxTurns) {
      entry.state = 'idle';
      this.ports.warn(
        `Autopilot stopped – exceeded ${settings.maxTurns} consecutive turns. Press <C-]> to go on.`,
      );
      return;
    }
    entry.state = 'armed';
    await this.schedule(bufnr, settings);
  }

  /** Every running tool of an armed buffer finished (or a background job did). */
  async toolsComplete(bufnr: number, settings: AutopilotSettings): Promise<void> {
    const entry = this.buffers.get(bufnr);
    if (entry?.state !== 'armed' || !settings.enabled) return;
    // Parallel calls finish together (their results are written in one batch): the first of
    // them schedules the continue, the others find it scheduled.
    if (entry.token !== 0) return;
    await this.schedule(bufnr, settings);
  }

  private async schedule(bufnr: number, settings: AutopilotSettings): Promise<void> {
    const entry = this.entry(bufnr);
    this.tokens += 1;
    entry.token = this.tokens;
    if (settings.resumeDelay === 0) {
      // No delay, so nothing to cancel: go on at the next tick without asking Lua.
      const token = entry.token;
      // Events keep their order on the channel; autopilot does not wait for the listeners.
      this.ports.post('autopilot:resume-scheduled', { bufnr, delay_ms: 0 });
      setImmediate(() => {
        void this.resume(bufnr, token);
      });
      return;
    }
    // The timer first: a listener of the event that edits the buffer then cancels it.
    this.ports.notifyLua('autopilot.schedule', {
      bufnr,
      delay_ms: settings.resumeDelay,
      token: entry.token,
    });
    await this.ports.emit('autopilot:resume-scheduled', { bufnr, delay_ms: settings.resumeDelay });
  }

  /** Lua: the delay passed without an edit. */
  async resume(bufnr: number, token: number): Promise<void> {
    const entry = this.buffers.get(bufnr);
    if (entry === undefined || entry.token !== token || entry.state !== 'armed') return;
    entry.token = 0;
    trace('autopilot:resume');
    entry.state = 'sending';
    this.ports.post('autopilot:resumed', { bufnr });
    await this.ports.continueCycle(bufnr);
  }

  /** Lua: the buffer changed before the delay passed (or the switch was turned off). */
  cancelled(bufnr: number, token: number): void {
    const entry = this.buffers.get(bufnr);
    if (entry === undefined || entry.token !== token) return;
    entry.token = 0;
    entry.state = 'idle';
  }

  /** A step of the cycle found nothing more to do automatically. */
  settle(bufnr: number): void {
    const entry = this.buffers.get(bufnr);
    if (entry !== undefined && entry.state === 'sending') entry.state = 'idle';
  }

  forget(bufnr: number): void {
    this.buffers.delete(bufnr);
  }
}
