// The ports of a buffer's loop (src/core/loop/ports.ts) over the host's services: what a step
// reads of the buffer (the tree, the settings the host holds), how it edits it, asks the
// approval chain, starts calls and sends. Built once per session.
import { autopilotSettings } from '../core/loop/autopilot.js';
import type { StepPorts } from '../core/loop/cycle.js';
import { trace } from '../editor/trace.js';
import { type ApprovalOutcome, statusOf } from './approval.js';
import type { ChatDocument } from '../core/chat/ast.js';
import type { AutopilotSettings } from '../core/loop/autopilot.js';
import type { Config } from '../core/config/config.js';
import type { Notifier } from '../core/util/notify.js';
import type { DocumentStore } from '../editor/documents.js';
import type { HookEmitter } from '../editor/hooks.js';
import type { LuaBridge } from '../editor/lua.js';
import type { WriteScheduler } from '../editor/writequeue.js';
import type { ApprovalService } from './approval.js';
import type { ApprovalNotices } from './approval-notice.js';
import type { Compactor } from './compact.js';
import type { BufferSettings } from './buffer-settings.js';
import type { EditorStates } from './editor-state.js';
import type { FileLogger } from './log.js';
import type { RecoveryService } from './recovery.js';
import type { Streamer } from './send/stream.js';
import type { ResultWriter } from './tools/results.js';
import type { ToolExecutor } from './tools/executor.js';
import type { Verdicts } from './tools/verdicts.js';
import type { UndoService } from './undo/service.js';
import type { ChatHistory } from './history.js';
import type { SendOptions, UsageTracker } from './usage.js';

/** What a step of the loop knows of the buffer: its settings and autopilot's. */
export type StepSettings = BufferSettings & { autopilot: AutopilotSettings };

/**
 * What the services tell the sessions (one `Emitter`, whose one subscriber is where the sessions
 * are built, `wiring.ts`).
 */
export interface LoopEvents {
  /** The buffer's last running tool finished (a background job too), run with `config`. */
  'tools:settled': { bufnr: number; config: Config };
  /** A call of the buffer was cancelled, or the spend cap stopped its autopilot. */
  'loop:stopped': { bufnr: number };
}

/** The editor's side, as a session uses it. */
export interface SessionEditor {
  lua: Pick<LuaBridge, 'notify'>;
  notify: Notifier;
  hooks: Pick<HookEmitter, 'emit' | 'post'>;
  writes: Pick<WriteScheduler, 'callAfterWrites'>;
  documents: Pick<DocumentStore, 'get' | 'attach'>;
  logger: Pick<FileLogger, 'warn' | 'error'>;
}

/** The services a session works with (built once, shared by every session). */
export interface SessionServices {
  editor: SessionEditor;
  /** Each buffer's settings as the host holds them (pushed by Lua, asked only when stale). */
  states: Pick<EditorStates, 'get' | 'pushed' | 'confirmed'>;
  executor: Pick<ToolExecutor, 'isRunning' | 'dispatch' | 'execute' | 'cancelOldest'>;
  results: Pick<ResultWriter, 'fresh' | 'applyEdits' | 'placeWhileRunning'>;
  verdicts: Pick<Verdicts, 'early' | 'resolution'>;
  approval: Pick<ApprovalService, 'decide' | 'remember' | 'undoProblem'>;
  streamer: Pick<Streamer, 'run'>;
  compactor: Pick<Compactor, 'run'>;
  usage: Pick<UsageTracker, 'finish' | 'stopsAutopilot'>;
  /** Cancel the calls waiting for the user (`tool:cancel-pending`); how many. */
  cancelPending(bufnr: number): Promise<number>;
  /** The "Approval needed" messages, taken back when nothing they named waits. */
  notices: Pick<ApprovalNotices, 'show'>;
  /** Told of each send (a turn's start is noted for `:Flemma review`). */
  undo?: Pick<UndoService, 'sending'>;
  /** `:Flemma rewind` and `:Flemma retry`: the checked undo and the cut (docs/history.md). */
  history?: Pick<ChatHistory, 'rewind'>;
  /** The records of streamed replies: a reply's last one is on disk before the reply is over. */
  recovery?: Pick<RecoveryService, 'settled'>;
  /**
   * `<M-CR>` on a running `task` call whose child waits for an approval shows the child's waiting
   * call (nothing runs); on the waiting call in the child's own buffer (`file`) it approves it and
   * the child goes on (src/host/tasks/). Whether the call was one.
   */
  approveTask?(bufnr: number, id: string, file: string | null): boolean;
}

/** The session as its loop's ports reach it. */
export interface LoopOwner {
  readonly bufnr: number;
  readonly requestRunning: boolean;
  settings(document: ChatDocument): Promise<BufferSettings>;
  send(context: BufferSettings | undefined, options: SendOptions): Promise<unknown>;
  waitForUser(document: ChatDocument): Promise<void>;
  /** The step failed: the user's action that started it ends in Normal mode. */
  failedStep(): void;
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

/** The editor port: the tree, the held settings (no round trip unless stale), edits, messages. */
function editorPort(session: LoopOwner, s: SessionServices): StepPorts<StepSettings>['editor'] {
  const { editor, results } = s;
  const bufnr = session.bufnr;
  return {
    read: async () => {
      if (editor.documents.get(bufnr) === undefined) {
        if ((await editor.documents.attach(bufnr)) === undefined) return undefined;
      }
      return results.fresh(bufnr);
    },
    context: async (_user, state) => {
      const settings = await session.settings(state.document);
      return { ...settings, autopilot: autopilotSettings(settings.config.tools) };
    },
    apply: (edits) => results.applyEdits(bufnr, edits),
    confirm: (ids) => {
      // A notification: Lua takes it before anything the host asks or sends after it.
      if (ids.length > 0) {
        editor.lua.notify('trust.confirm', { bufnr, ids: [...ids] });
        s.states.confirmed(bufnr, ids);
      }
      return Promise.resolve();
    },
    waitForUser: (state) => session.waitForUser(state.document),
    warn: (message) => {
      editor.notify.warn(message);
    },
    error: (message) => {
      session.failedStep();
      editor.notify.error(message);
    },
  };
}

/** The tools port: the approval chain's answer, starting calls with the held facts. */
function toolPort(session: LoopOwner, s: SessionServices): StepPorts<StepSettings>['tools'] {
  const { results, executor } = s;
  const bufnr = session.bufnr;
  return {
    running: () => executor.isRunning(bufnr),
    decide: async (use, context) => {
      if (use.duplicateOf !== undefined || s.verdicts.early(use.id, use.name) !== undefined) {
        // Nothing to approve: Phase 2 writes the error result.
        s.approval.remember(use.id, notRun());
        return 'denied';
      }
      const decided = await s.approval.decide(
        { bufnr, toolId: use.id, toolName: use.name, input: use.input },
        context.config,
        context.approval,
        context.facts,
      );
      s.approval.remember(
        use.id,
        use.unconfirmed === undefined ? decided : unconfirmedNote(decided, use.unconfirmed),
      );
      return statusOf(decided.decision);
    },
    run: (call, context, rerun) => {
      trace('tools:run');
      if (s.approveTask?.(bufnr, call.id, context.facts.filename) === true) return;
      executor
        .execute(bufnr, call.id, call.name, call.input, context.config, {
          replaceFinished: rerun,
          facts: context.facts,
        })
        .catch((error: unknown) => {
          s.editor.logger.error(`executing ${call.name} (${call.id}) failed`, error);
        });
    },
    start: (calls, context, user) => {
      trace('tools:dispatch');
      executor.dispatch(bufnr, calls, context.config, context.facts, user);
    },
    startPlacing: (state, requests, calls, context, user) =>
      results.placeWhileRunning(bufnr, state, requests, () => {
        trace('tools:dispatch');
        executor.dispatch(bufnr, calls, context.config, context.facts, user);
      }),
    resolution: (block, status, context) =>
      s.verdicts.resolution(bufnr, block, status, context.config),
  };
}

/** The ports of one step of the buffer's loop. */
export function stepPorts(session: LoopOwner, s: SessionServices): StepPorts<StepSettings> {
  return {
    editor: editorPort(session, s),
    tools: toolPort(session, s),
    provider: {
      running: () => session.requestRunning,
      send: async (context, user) => {
        await session.send(context, { userInitiated: user });
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
}
