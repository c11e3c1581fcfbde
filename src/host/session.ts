// The conversation of one chat buffer, as the host runs it: the one owner of the buffer's loop
// (the core `Conversation`: the steps of `<C-]>`, autopilot) and of its busy state (a request, a
// tool, a pending continue), wired to the host's services through the loop's ports. The send,
// the cancel and autopilot's answers from Lua all come here.
import type { ChatDocument, Message } from '../core/chat/ast.js';
import { type AutopilotSettings, autopilotSettings } from '../core/loop/autopilot.js';
import { Conversation } from '../core/loop/conversation.js';
import { BUSY_REQUEST } from '../core/loop/cycle.js';
import type { ConversationPorts } from '../core/loop/conversation.js';
import type { StepPorts } from '../core/loop/cycle.js';
import { type ApprovalOutcome, type ApprovalService, statusOf } from './approval.js';
import { type ApprovalNotices, waitingBlocks } from './approval-notice.js';
import type { HostBase } from './base.js';
import { type ContextOptions, type EditorContext, fetchEditorContext } from './editor-context.js';
import type { CompactStatus, CompactTarget, Compactor } from './compact.js';
import type { Streamer, SendStatus } from './send/stream.js';
import type { ToolCatalogue } from './tools/catalogue.js';
import type { ToolExecutor } from './tools/executor.js';
import type { UndoService } from './undo/service.js';
import type { RecoveryService } from './recovery.js';
import type { ResultWriter } from './tools/results.js';
import type { Config } from '../core/config/config.js';
import type { Verdicts } from './tools/verdicts.js';
import { trace } from '../editor/trace.js';
import type { SendOptions, UsageTracker } from './usage.js';

/** How long a carried editor context may stand in for asking again (ms). */
const CARRY_MS = 250;

/** What a step of the loop knows of the buffer: the editor's context and autopilot's settings. */
export type StepContext = EditorContext & { autopilot: AutopilotSettings };

/** The services a session works with (built once, shared by every session). */
export interface SessionServices {
  base: HostBase;
  catalogue: Pick<ToolCatalogue, 'toolNames'>;
  executor: Pick<ToolExecutor, 'isRunning' | 'dispatch' | 'cancelOldest'>;
  results: Pick<ResultWriter, 'fresh' | 'applyEdits' | 'placeWhileRunning'>;
  verdicts: Pick<Verdicts, 'early' | 'resolution'>;
  approval: Pick<ApprovalService, 'decide' | 'remember' | 'undoProblem'>;
  streamer: Pick<Streamer, 'run'>;
  compactor: Pick<Compactor, 'run'>;
  usage: Pick<UsageTracker, 'finish' | 'stopsAutopilot'>;
  /** Cancel the calls waiting for the user (`tool:cancel-pending`); how many. */
  cancelPending(bufnr: number): Promise<number>;
  /** Each message's part of the trust digest, across parses. */
  memo: WeakMap<Message, string>;
  /** The "Approval needed" messages, taken back when nothing they named waits. */
  notices: Pick<ApprovalNotices, 'show'>;
  /** Told of each send (a turn's start is noted for `:Flemma review`). */
  undo?: Pick<UndoService, 'sending'>;
  /** The records of streamed replies: a reply's last one is on disk before the reply is over. */
  recovery?: Pick<RecoveryService, 'settled'>;
}

/** A denial with no resolver: the call cannot run at all (an unknown tool, a repeated id…). */
function notRun(): ApprovalOutcome {
  return { decision: 'deny', resolver: null, trace: [], skipped: [] };
}

/**
 * The outcome of a call whose placeholder held `status` in a file that is not trusted, with the
 * reason it was judged again (`:Flemma tool:why`).
 */
function unconfirmedNote(outcome: ApprovalOutcome, status: string): ApprovalOutcome {
  const note = `status=${status} came from a file that is not trusted: judged as if pending (:trust honours it)`;
  return {
    ...outcome,
    trace: [{ resolver: 'trust', priority: 0, outcome: 'passed', notes: [note] }, ...outcome.trace],
  };
}

export class ChatSession {
  readonly conversation: Conversation<StepContext>;
  private request: AbortController | undefined;
  private carried: { context: EditorContext; at: number } | undefined;
  /** The ticket of the step Insert mode's `<C-]>` started, until the user has the word again. */
  private ticket: number | undefined;

  constructor(
    readonly bufnr: number,
    private readonly s: SessionServices,
  ) {
    this.conversation = new Conversation<StepContext>(this.ports());
  }

  /** A request of this buffer runs (or waits for tool definitions). */
  get requestRunning(): boolean {
    return this.request !== undefined;
  }

  /** A request or a tool runs, or autopilot is about to go on. */
  get busy(): boolean {
    return this.conversation.busy;
  }

  /**
   * One step of the loop (`<C-]>` when `user`). With a `ticket` (`<C-]>` pressed in Insert mode),
   * Lua is told (`chat.step_ended`) when the user has the word again: at once when the step did
   * nothing or stopped at calls that wait for them, else when the loop it started stops by itself
   * (its tools are done and autopilot does not go on, the reply and any autopilot chain after it
   * are over, or a cancel stopped it). A newer ticket replaces an older one.
   */
  async step(user: boolean, ticket?: number): Promise<void> {
    if (ticket !== undefined) this.ticket = ticket;
    const outcome = await this.conversation.step(user);
    if (ticket === undefined) return;
    if (outcome === 'refused' || outcome === 'waiting') this.handBack(ticket);
    else this.handBackIfIdle();
  }

  /** The loop stopped by itself: a waiting `<C-]>` of Insert mode gets its answer. */
  handBackIfIdle(): void {
    if (this.ticket !== undefined && this.conversation.idle) this.handBack(this.ticket);
  }

  private handBack(ticket: number): void {
    if (this.ticket !== ticket) return;
    this.ticket = undefined;
    this.s.base.lua.notify('chat.step_ended', { bufnr: this.bufnr, ticket });
  }

  /** The buffer's context, asked now. */
  context(document: ChatDocument, options: ContextOptions = {}): Promise<EditorContext> {
    return fetchEditorContext(this.s.base.lua, this.bufnr, document, this.s.catalogue.toolNames(), {
      ...options,
      memo: this.s.memo,
      config: this.s.base.config,
    });
  }

  /** Keep a context the next automatic step may start from (the end of a reply, a last tool). */
  carry(context: EditorContext): void {
    this.carried = { context, at: Date.now() };
  }

  private takeCarried(): EditorContext | undefined {
    const carried = this.carried;
    this.carried = undefined;
    if (carried === undefined || Date.now() - carried.at > CARRY_MS) return undefined;
    return carried.context;
  }

  /**
   * Send the buffer (`:Flemma send`, Phase 3 of a step). `context` is the editor's answer the
   * caller already has; without it the send asks.
   */
  async send(context?: EditorContext, options: SendOptions = {}): Promise<SendStatus | undefined> {
    const { base } = this.s;
    if (this.s.executor.isRunning(this.bufnr)) {
      base.lua.notify('notify', {
        level: 'warn',
        message: 'Cannot send while tool execution is in progress.',
      });
      return undefined;
    }
    if (this.request !== undefined) {
      base.lua.notify('notify', {
        level: 'warn',
        message: BUSY_REQUEST,
      });
      return undefined;
    }
    const document = base.documents.get(this.bufnr)?.document;
    if (document !== undefined) this.s.undo?.sending(this.bufnr, document);
    const controller = new AbortController();
    this.request = controller;
    let status: SendStatus | undefined;
    let config: Config | undefined;
    try {
      status = await this.s.streamer.run(
        this.bufnr,
        controller,
        context,
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

  /**
   * `:Flemma compact`: the summary is this buffer's request while it runs, so that `<C-c>`
   * cancels it and no send or tool starts beside it.
   */
  async compact(target: CompactTarget): Promise<CompactStatus | undefined> {
    const { base } = this.s;
    if (this.busy || this.request !== undefined) {
      base.lua.notify('notify', {
        level: 'warn',
        message: 'compact: the chat is busy (a request or a tool runs); wait or <C-c> first',
      });
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

  /** A send ended: the file written, the session's usage, the events, and autopilot's next move. */
  private async finished(status: SendStatus, config: Config | undefined): Promise<void> {
    const { base, usage } = this.s;
    const bufnr = this.bufnr;
    await this.autoWrite(config);
    // A completed request goes into the session (and its usage bar shows) first.
    const { record, toolUse } = usage.finish(bufnr, status === 'completed');
    // The events keep their order on the channel; the tool loop does not wait for listeners.
    base.hooks.post(
      'request:finished',
      record === undefined ? { bufnr, status } : { bufnr, status, request: record },
    );
    if (status !== 'completed') {
      this.stopped();
      // A cancel is the user's own doing: only a failure asks for them.
      if (status === 'errored') this.attention('failed');
      return;
    }
    base.hooks.post('conversation:idle', { bufnr });
    // Past the spend cap, autopilot stops here (the usage tracker says so).
    if (usage.stopsAutopilot(bufnr, config, toolUse)) {
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
    const tools = (config ?? (await this.s.base.config.get(this.s.base.lua))).tools;
    const goesOn = await this.conversation.replyFinished(hasToolUse, autopilotSettings(tools));
    // The turn is over unless autopilot continues; when it continues, the loop either stops at
    // a call that waits for the user (`approval`) or comes back here after the next reply.
    if (!goesOn) this.attention('finished');
  }

  /**
   * The user may be needed: Lua decides whether to tell (not while the chat is the current
   * buffer of a focused Neovim) and how (`attention.*`, lua/flemma/ui/attention.lua).
   */
  private attention(reason: 'approval' | 'finished' | 'failed', tools?: string[]): void {
    this.s.base.lua.notify('attention.signal', {
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
    if (request !== undefined || this.s.executor.cancelOldest(this.bufnr)) {
      this.stopped();
      return true;
    }
    // Nothing ran: autopilot goes on after the waiting calls are cancelled, as after a rejection.
    if ((await this.s.cancelPending(this.bufnr)) > 0) return true;
    this.stopped();
    this.s.base.lua.notify('notify', { level: 'info', message: 'Nothing to cancel' });
    return false;
  }

  /** The buffer's last running tool finished (a background job too). */
  async toolsDone(config: Config): Promise<void> {
    if (this.s.executor.isRunning(this.bufnr)) return;
    await this.autoWrite(config);
    await this.conversation.toolsFinished(autopilotSettings(config.tools));
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
      await this.s.base.writes.callAfterWrites('buffer.write', { bufnr: this.bufnr });
    } catch (error) {
      this.s.base.logger.warn(`writing buffer ${String(this.bufnr)} failed: ${String(error)}`);
    }
  }

  /** A request or a tool was cancelled, a request failed, or the spend cap stopped autopilot. */
  stopped(): void {
    this.conversation.stopped();
    this.handBackIfIdle();
  }

  /** The loop's ports over the host's services. */
  private ports(): ConversationPorts<StepContext> {
    const { base, results, executor } = this.s;
    const bufnr = this.bufnr;
    const step: StepPorts<StepContext> = {
      editor: {
        read: async () => {
          if (base.documents.get(bufnr) === undefined) {
            if ((await base.documents.attach(bufnr)) === undefined) return undefined;
          }
          return results.fresh(bufnr);
        },
        context: async (user, state) => {
          // An automatic step starts from the context its trigger brought along (the end of a
          // reply, the last tool's return), when that is fresh; a step the user asked for asks.
          const carried = this.takeCarried();
          const editor = (user ? undefined : carried) ?? (await this.context(state.document));
          return { ...editor, autopilot: autopilotSettings(editor.config.tools) };
        },
        apply: (edits) => results.applyEdits(bufnr, edits),
        confirm: (ids) => {
          // A notification: Lua takes it before anything the host asks or sends after it.
          if (ids.length > 0) base.lua.notify('trust.confirm', { bufnr, ids: [...ids] });
          return Promise.resolve();
        },
        waitForUser: (state) => this.waitForUser(state.document),
        warn: (message) => {
          base.lua.notify('notify', { level: 'warn', message });
        },
        error: (message) => {
          base.lua.notify('notify', { level: 'error', message });
        },
      },
      tools: {
        running: () => executor.isRunning(bufnr),
        decide: async (use, context) => {
          if (
            use.duplicateOf !== undefined ||
            this.s.verdicts.early(use.id, use.name) !== undefined
          ) {
            // Nothing to approve: Phase 2 writes the error result.
            this.s.approval.remember(use.id, notRun());
            return 'denied';
          }
          const decided = await this.s.approval.decide(
            { bufnr, toolId: use.id, toolName: use.name, input: use.input },
            context.config,
            context.approval,
            context.facts,
          );
          this.s.approval.remember(
            use.id,
            use.unconfirmed === undefined ? decided : unconfirmedNote(decided, use.unconfirmed),
          );
          return statusOf(decided.decision);
        },
        start: (calls, context, user) => {
          executor.dispatch(bufnr, calls, context.config, context.facts, user);
        },
        startPlacing: (state, requests, calls, context, user) =>
          results.placeWhileRunning(bufnr, state, requests, () => {
            executor.dispatch(bufnr, calls, context.config, context.facts, user);
          }),
        resolution: (block, status, context) =>
          this.s.verdicts.resolution(bufnr, block, status, context.config),
      },
      provider: {
        running: () => this.request !== undefined,
        send: async (context, user) => {
          await this.send(context, { userInitiated: user });
        },
      },
      clock: {
        tick: () =>
          new Promise<void>((resolve) => {
            setImmediate(resolve);
          }),
        soon: (fn) => {
          setImmediate(fn);
        },
      },
      mark: trace,
    };
    return {
      ...step,
      autopilot: {
        schedule: (delayMs, token) => {
          base.lua.notify('autopilot.schedule', { bufnr, delay_ms: delayMs, token });
        },
        unschedule: () => {
          base.lua.notify('autopilot.cancel', { bufnr, from_host: true });
        },
        scheduled: async (delayMs, wait) => {
          if (wait)
            await base.hooks.emit('autopilot:resume-scheduled', { bufnr, delay_ms: delayMs });
          // Events keep their order on the channel; autopilot does not wait for the listeners.
          else base.hooks.post('autopilot:resume-scheduled', { bufnr, delay_ms: delayMs });
        },
        resumed: () => {
          trace('autopilot:resume');
          base.hooks.post('autopilot:resumed', { bufnr });
        },
        warn: (message) => {
          base.lua.notify('notify', { level: 'warn', message });
        },
      },
      failed: (error) => {
        base.logger.error(`the tool cycle of buffer ${String(bufnr)} failed`, error);
      },
      settled: () => {
        this.handBackIfIdle();
      },
    };
  }

  /**
   * The loop stopped for the user: the cursor goes to the first empty pending (or edited
   * approved) block, a notification says what waits, and `approval:needed` fires so that a
   * statusline or another window can tell.
   */
  private async waitForUser(document: ChatDocument): Promise<void> {
    const waiting = waitingBlocks(document);
    const first = waiting[0];
    if (first === undefined) return;
    const { base } = this.s;
    base.lua.notify('tools.cursor', { bufnr: this.bufnr, row: first.toolResultLine - 1 });
    // Taken back once none of these calls waits any more (approval-notice.ts).
    this.s.notices.show(this.bufnr, waiting, (id) => this.s.approval.undoProblem(id));
    this.attention(
      'approval',
      waiting.map((block) => block.name),
    );
    await base.hooks.emit('approval:needed', {
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

  /** Any buffer's request or tool runs, or its autopilot is about to go on. */
  anyBusy(): boolean {
    return [...this.sessions.values()].some((session) => session.busy);
  }

  forget(bufnr: number): void {
    this.sessions.delete(bufnr);
  }
}
