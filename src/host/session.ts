// The conversation of one chat buffer, as the host runs it: the one owner of the buffer's loop
// (the core `Conversation`: the steps of `<C-]>` and `<M-CR>` in one queue, autopilot) and of its
// busy state (a request, a tool, a pending continue), wired to the host's services through the
// loop's ports. The send, the decisions on calls (commands, the diff), the cancel, compaction and
// autopilot's answers from Lua all come here.
import type { ChatDocument } from '../core/chat/ast.js';
import { type AutopilotSettings, autopilotSettings } from '../core/loop/autopilot.js';
import { Conversation } from '../core/loop/conversation.js';
import type { ConversationPorts } from '../core/loop/conversation.js';
import {
  type LoopEvents,
  type SessionServices,
  type StepSettings,
  stepPorts,
} from './session-ports.js';

export type { LoopEvents, SessionServices, StepSettings };
import type { SettingsOptions, BufferSettings } from './buffer-settings.js';
import type { PushedState } from './editor-state.js';
import type { CompactStatus, CompactTarget } from './compact.js';
import type { RewindTarget } from './history.js';
import type { SendStatus } from './send/stream.js';
import type { SendOptions } from './usage.js';
import { waitingBlocks } from './approval-notice.js';
import type { Config } from '../core/config/config.js';
import { trace } from '../editor/trace.js';
import { actionable, TurnEnd } from './turn-end.js';

export class ChatSession {
  /** The buffer's loop: private, every way into it is a method of the session. */
  private readonly conversation: Conversation<StepSettings>;
  private request: AbortController | undefined;
  /** The user's last action that ends a turn, until the user has the word again. */
  private readonly turnEnd: TurnEnd;
  /** Autopilot's resume delay (a host timer; Lua watches the buffer meanwhile). */
  private resumeTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly bufnr: number,
    private readonly s: SessionServices,
  ) {
    this.turnEnd = new TurnEnd((answer) => {
      s.editor.lua.notify('chat.step_ended', { bufnr, ...answer });
    });
    this.conversation = new Conversation<StepSettings>({
      ...stepPorts(this, s),
      autopilot: this.autopilotPorts(),
      failed: (error) => {
        this.turnEnd.ended('failed');
        s.editor.logger.error(`the tool cycle of buffer ${String(bufnr)} failed`, error);
      },
      settled: () => {
        this.handBackIfIdle();
      },
    });
  }

  /** A request of this buffer runs (or waits for tool definitions). */
  get requestRunning(): boolean {
    return this.request !== undefined;
  }

  /** A request or a tool runs, or autopilot is about to go on: the one busy rule. */
  get busy(): boolean {
    return this.conversation.busy;
  }

  /** Autopilot's state and its count of consecutive tool-using turns (`autopilot:status`). */
  get autopilot(): { state: string; iteration: number; armed: boolean } {
    const pilot = this.conversation.autopilot;
    return { state: pilot.state, iteration: pilot.iteration, armed: pilot.armed };
  }

  /**
   * One step of the loop (`<C-]>` when `user`). With a `ticket` (the user's `<C-]>`, from either
   * mode), Lua is told (`chat.step_ended`) how the step ended when the user has the word again:
   * at once when the step did nothing or stopped at calls that wait for them, else when the loop
   * it started stops by itself (its tools are done and autopilot does not go on, the reply and any
   * autopilot chain after it are over, or a cancel stopped it). A newer ticket replaces an older
   * one. `pushed`: the environment and the editor's facts Lua sent with the user's action.
   */
  async step(user: boolean, ticket?: number, pushed?: PushedState): Promise<void> {
    if (pushed !== undefined) this.s.states.pushed(this.bufnr, pushed);
    this.turnEnd.expect(ticket);
    const outcome = await this.conversation.step(user);
    if (ticket === undefined) return;
    if (outcome === 'refused' || outcome === 'waiting') {
      this.turnEnd.ended(outcome);
      this.turnEnd.handBack(ticket);
    } else {
      this.handBackIfIdle();
    }
  }

  /**
   * A user's action that is not a step (`<M-CR>`, `:Flemma send`, a decision in the diff):
   * `chat.step_ended` answers `ticket` once the action and the loop it started are over.
   */
  async act(ticket: number | undefined, action: () => Promise<unknown>): Promise<void> {
    this.turnEnd.expect(ticket);
    try {
      await action();
    } finally {
      this.handBackIfIdle();
    }
  }

  /**
   * `<M-CR>` / `:Flemma tool:execute`: the call under the cursor (0-based `row`) runs as a step
   * of the loop (src/core/loop/call.ts); `ticket` is answered once it and what it started are
   * over.
   */
  runCall(ticket: number | undefined, row: number): Promise<void> {
    return this.act(ticket, () => this.conversation.runCallAt(row));
  }

  /**
   * A decision taken in the diff view (`tool:diff-approve`, `tool:diff-reject`): `change` in its
   * turn among the steps; `ticket` is answered once the call it ran (`settled`) is over. The
   * answer closes the diff at once.
   */
  async fromDiff<T>(
    ticket: number | undefined,
    change: () => Promise<T>,
    settled: () => Promise<unknown>,
  ): Promise<T> {
    const answer = await this.conversation.decision(change);
    void this.act(ticket, settled);
    return answer;
  }

  /**
   * The user decided on a call (`:Flemma tool:approve`, `tool:reject`, `tool:approve-always`,
   * the diff's approve and reject): `change` rewrites the buffer in its turn among the steps;
   * then the loop goes on as `decided` says, unless `goOn` is false (a task's child, whose run
   * the task goes on with: a step of its own would run the approved calls a second time).
   */
  async decide<T>(ticket: number | undefined, change: () => Promise<T>, goOn = true): Promise<T> {
    const answer = await this.conversation.decision(change);
    if (goOn) await this.decided(ticket);
    return answer;
  }

  /**
   * After a decision: while a call still waits, the answer points at the first one; once none
   * does, the loop goes on as `<M-CR>` would (an automatic step: approved calls run, rejected
   * ones get their result, and autopilot sends when it is on). Nothing is sent that autopilot
   * would not send.
   */
  private async decided(ticket: number | undefined): Promise<void> {
    this.turnEnd.expect(ticket);
    const state = await this.s.results.fresh(this.bufnr);
    const first = state === undefined ? undefined : waitingBlocks(state.document)[0];
    if (state === undefined || first !== undefined) {
      if (first !== undefined) this.turnEnd.waiting(first.toolResultLine - 1);
      if (ticket !== undefined) this.turnEnd.handBack(ticket);
      return;
    }
    if (actionable(state.document) && !this.requestRunning) await this.step(false, ticket);
    else this.handBackIfIdle();
  }

  /** The step failed: the user's action that started it ends in Normal mode. */
  failedStep(): void {
    this.turnEnd.ended('failed');
  }

  /** The loop stopped by itself: a waiting ticket gets its answer. */
  handBackIfIdle(): void {
    const ticket = this.turnEnd.pending;
    if (ticket !== undefined && this.conversation.idle) this.turnEnd.handBack(ticket);
  }

  /** The buffer's settings for its tree `document`: held by the host, asked only when stale. */
  settings(document: ChatDocument, options: SettingsOptions = {}): Promise<BufferSettings> {
    return this.s.states.get(this.bufnr, document, options);
  }

  /**
   * Send the buffer (`:Flemma send`, Phase 3 of a step). `context`: the settings the step has;
   * without them the send takes the held ones.
   */
  async send(context?: BufferSettings, options: SendOptions = {}): Promise<SendStatus | undefined> {
    const busy = this.conversation.refusal();
    if (busy !== undefined) {
      this.s.editor.notify.warn(busy);
      return undefined;
    }
    const controller = new AbortController();
    this.request = controller;
    let status: SendStatus | undefined;
    let config: Config | undefined;
    try {
      const document = (await this.s.results.fresh(this.bufnr))?.document;
      if (document !== undefined) this.s.undo?.sending(this.bufnr, document);
      const settings =
        context ?? (document === undefined ? undefined : await this.settings(document));
      status = await this.s.streamer.run(
        this.bufnr,
        controller,
        settings,
        (used) => {
          config = used;
        },
        options,
      );
    } finally {
      this.request = undefined;
    }
    // NOTE: announced only once the request no longer counts as running, so that a send made
    // from a `request:finished` handler (or right after it) is accepted.
    trace('send:finished');
    if (status !== undefined) await this.finished(status, config);
    return status;
  }

  /** `:Flemma send`: with what Lua pushed along (the environment, the editor's facts). */
  sendPushed(pushed: PushedState | undefined, options: SendOptions): Promise<unknown> {
    if (pushed !== undefined) this.s.states.pushed(this.bufnr, pushed);
    return this.send(undefined, options);
  }

  /**
   * `:Flemma compact`: the summary is this buffer's request while it runs, so that `<C-c>`
   * cancels it and no send or tool starts beside it (a step refuses, as during any request). It
   * does not wait in the loop's queue: it starts only when the loop is idle (no step runs or
   * waits, nothing runs, autopilot does not go on).
   */
  async compact(target: CompactTarget): Promise<CompactStatus | undefined> {
    const busy = this.busyNow;
    if (busy !== undefined) {
      this.s.editor.notify.warn(`compact: ${busy}`);
      return undefined;
    }
    const controller = new AbortController();
    this.request = controller;
    try {
      return await this.s.compactor.run(this.bufnr, target, controller);
    } finally {
      this.request = undefined;
    }
  }

  /** Why a compaction or a rewind cannot start now (the loop is busy, or one runs), if not. */
  private get busyNow(): string | undefined {
    return this.conversation.idle && this.request === undefined
      ? undefined
      : 'the chat is busy (a request or a tool runs); wait or <C-c> first';
  }

  /**
   * `:Flemma rewind` and `:Flemma retry` (src/host/history.ts, which says `busy`): the buffer's
   * request meanwhile (no step or send starts beside it); a retry then sends.
   */
  rewind(file: string, target: RewindTarget, ticket?: number): Promise<void> {
    return this.act(ticket, async () => {
      const busy = this.busyNow;
      if (busy === undefined) this.request = new AbortController();
      let done: boolean | undefined;
      try {
        done = await this.s.history?.rewind(this.bufnr, file, target, busy);
      } finally {
        if (busy === undefined) this.request = undefined;
      }
      if (done === true && target === 'retry') await this.send();
    });
  }

  /** A send ended: the file written, the session's usage, the events, and autopilot's next move. */
  private async finished(status: SendStatus, config: Config | undefined): Promise<void> {
    const { editor, usage } = this.s;
    const bufnr = this.bufnr;
    await this.autoWrite(config);
    // A completed request goes into the session (and its usage bar shows) first.
    const { record, toolUse } = usage.finish(bufnr, status === 'completed');
    // The events keep their order on the channel; the tool loop does not wait for listeners.
    editor.hooks.post(
      'request:finished',
      record === undefined ? { bufnr, status } : { bufnr, status, request: record },
    );
    if (status !== 'completed') {
      this.turnEnd.ended(status === 'errored' ? 'failed' : 'cancelled');
      this.stopped();
      // A cancel is the user's own doing: only a failure asks for them.
      if (status === 'errored') this.attention('failed');
      return;
    }
    editor.hooks.post('conversation:idle', { bufnr });
    // Past the spend cap, autopilot stops here (the usage tracker says so).
    if (usage.stopsAutopilot(bufnr, config, toolUse)) {
      this.turnEnd.ended('stopped');
      this.attention('finished');
      return;
    }
    trace('response:complete');
    const state = await this.s.results.fresh(bufnr);
    trace('response:fresh');
    if (state === undefined) return;
    const last = [...state.document.messages].reverse().find((m) => m.role === 'Assistant');
    const hasToolUse =
      last !== undefined && last.segments.some((segment) => segment.kind === 'tool_use');
    const tools = (config ?? (await this.settings(state.document)).config).tools;
    const goesOn = await this.conversation.replyFinished(hasToolUse, autopilotSettings(tools));
    // The turn is over unless autopilot continues; when it continues, the loop either stops at
    // a call that waits for the user (`approval`) or comes back here after the next reply.
    if (!goesOn) this.attention('finished');
  }

  /**
   * The user may be needed: Lua decides whether to tell (not while the chat is the current
   * buffer of a focused Neovim) and how (`attention.*`, lua/flemma/ui/attention.lua).
   */
  attention(reason: 'approval' | 'finished' | 'failed', tools?: string[]): void {
    this.s.editor.lua.notify('attention.signal', {
      bufnr: this.bufnr,
      reason,
      ...(tools === undefined ? {} : { tools }),
    });
  }

  /**
   * `<C-c>`: the request, else the oldest running tool; when nothing runs, the calls waiting for
   * the user (CodeCompanion's "cancel"), and a pending automatic continue either way.
   */
  async cancel(): Promise<boolean> {
    const request = this.request;
    request?.abort();
    this.turnEnd.ended('cancelled');
    if (request !== undefined || this.s.executor.cancelOldest(this.bufnr)) {
      this.stopped();
      return true;
    }
    // Nothing ran: autopilot goes on after the waiting calls are cancelled, as after a rejection.
    if ((await this.cancelPending()) > 0) return true;
    this.stopped();
    this.s.editor.notify.info('Nothing to cancel');
    return false;
  }

  /** The buffer's last running tool finished (a background job too): `tools:settled`. */
  async toolsDone(config: Config): Promise<void> {
    if (this.s.executor.isRunning(this.bufnr)) return;
    await this.autoWrite(config);
    await this.resolved(autopilotSettings(config.tools));
  }

  /**
   * `:Flemma tool:cancel-pending` (and `<C-c>` when nothing runs): the calls waiting for the
   * user get their cancelled result (`ToolCommands.cancelPending`); autopilot then goes on as
   * after a rejection. How many were cancelled.
   */
  async cancelPending(): Promise<number> {
    const count = await this.conversation.decision(() => this.s.cancelPending(this.bufnr));
    if (count === 0) return 0;
    const state = await this.s.results.fresh(this.bufnr);
    if (state === undefined) return count;
    const settings = autopilotSettings((await this.settings(state.document)).config.tools);
    this.conversation.autopilot.rearmIfPaused(settings);
    await this.resolved(settings);
    return count;
  }

  /** Calls of the buffer were answered without running: autopilot may go on. */
  private async resolved(settings: AutopilotSettings): Promise<void> {
    await this.conversation.toolsFinished(settings);
    this.handBackIfIdle();
  }

  /** Lua saw an edit (or `<C-c>`) while a continue waited: it does not happen. */
  autopilotCancelled(token: number): void {
    clearTimeout(this.resumeTimer);
    this.resumeTimer = undefined;
    this.conversation.autopilot.cancelled(token);
    // An edit stopped the chain: a waiting `<C-]>` of Insert mode gets its answer.
    this.handBackIfIdle();
  }

  /**
   * `editing.auto_write` (read from the buffer's configuration, so that a frontmatter can turn it
   * off, and on in a trusted file): Lua writes the buffer once the edits queued so far are in.
   * Awaited, so that `request:finished` and the next step find the file written.
   */
  private async autoWrite(config: Config | undefined): Promise<void> {
    if (config?.autoWrite !== true) return;
    // The reply's record is final before the write (which removes the record). Without a write
    // nothing waits for it: the next step does not pay for a sync to disk, and a `:w` typed
    // within those milliseconds leaves a record the reopening finds already in the file.
    await this.s.recovery?.settled(this.bufnr);
    try {
      await this.s.editor.writes.callAfterWrites('buffer.write', { bufnr: this.bufnr });
    } catch (error) {
      this.s.editor.logger.warn(`writing buffer ${String(this.bufnr)} failed: ${String(error)}`);
    }
  }

  /** A request or a tool was cancelled, a request failed, or the spend cap stopped autopilot. */
  stopped(): void {
    this.conversation.stopped();
    this.handBackIfIdle();
  }

  /**
   * Autopilot's ports: the resume delay is a host timer; while it runs Lua watches the buffer
   * (`autopilot.watch`), and an edit or `<C-c>` there cancels it (`autopilot:cancelled`).
   */
  private autopilotPorts(): ConversationPorts<StepSettings>['autopilot'] {
    const { editor } = this.s;
    const bufnr = this.bufnr;
    return {
      schedule: (delayMs, token) => {
        clearTimeout(this.resumeTimer);
        editor.lua.notify('autopilot.watch', { bufnr, token });
        this.resumeTimer = setTimeout(() => {
          this.resumeTimer = undefined;
          editor.lua.notify('autopilot.cancel', { bufnr, from_host: true, quiet: true });
          void this.conversation.autopilot.resume(token);
        }, delayMs);
      },
      unschedule: () => {
        clearTimeout(this.resumeTimer);
        this.resumeTimer = undefined;
        editor.lua.notify('autopilot.cancel', { bufnr, from_host: true });
      },
      scheduled: async (delayMs, wait) => {
        if (wait)
          await editor.hooks.emit('autopilot:resume-scheduled', { bufnr, delay_ms: delayMs });
        // Events keep their order on the channel; autopilot does not wait for the listeners.
        else editor.hooks.post('autopilot:resume-scheduled', { bufnr, delay_ms: delayMs });
      },
      resumed: () => {
        trace('autopilot:resume');
        editor.hooks.post('autopilot:resumed', { bufnr });
      },
      warn: (message) => {
        this.turnEnd.ended('stopped');
        editor.notify.warn(message);
      },
    };
  }

  /**
   * The loop stopped for the user: the cursor goes to the first empty pending (or edited
   * approved) block, a notification says what waits, and `approval:needed` fires so that a
   * statusline or another window can tell.
   */
  async waitForUser(document: ChatDocument): Promise<void> {
    const waiting = waitingBlocks(document);
    const first = waiting[0];
    if (first === undefined) return;
    const { editor } = this.s;
    this.turnEnd.waiting(first.toolResultLine - 1);
    editor.lua.notify('tools.cursor', { bufnr: this.bufnr, row: first.toolResultLine - 1 });
    // Taken back once none of these calls waits any more (approval-notice.ts).
    this.s.notices.show(this.bufnr, waiting, (id) => this.s.approval.undoProblem(id));
    this.attention(
      'approval',
      waiting.map((block) => block.name),
    );
    await editor.hooks.emit('approval:needed', {
      bufnr: this.bufnr,
      tool_ids: waiting.map((block) => block.id),
      tool_names: waiting.map((block) => block.name),
    });
  }
}

/** Every chat buffer's session, made on first use. */
export class SessionRegistry {
  private readonly sessions = new Map<number, ChatSession>();

  constructor(private readonly services: SessionServices) {}

  of(bufnr: number): ChatSession {
    let session = this.sessions.get(bufnr);
    if (session === undefined) {
      session = new ChatSession(bufnr, this.services);
      this.sessions.set(bufnr, session);
    }
    return session;
  }

  get(bufnr: number): ChatSession | undefined {
    return this.sessions.get(bufnr);
  }

  /** A request or a tool of the buffer runs, or autopilot is about to go on. */
  busy(bufnr: number): boolean {
    return this.sessions.get(bufnr)?.busy ?? false;
  }

  /** Whether any buffer's session passes `test` (`busy`, `requestRunning`). */
  any(test: (session: ChatSession) => boolean): boolean {
    return [...this.sessions.values()].some(test);
  }

  forget(bufnr: number): void {
    this.sessions.delete(bufnr);
  }
}
