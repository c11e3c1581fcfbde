// What the conversation loop of one chat needs from the world, as small ports: the editor (the
// buffer's tree and settings, edits, messages), the tools (the approval chain's answer, starting
// calls, the text of a call that will not run), the provider (the send) and the clock. The host
// implements them over Neovim, the tool executor and the SDKs; unit tests implement them with
// fakes (test/unit/loop.test.ts).
import type { ChatDocument } from '../chat/ast.js';
import type { Edit, PlaceholderRequest, ToolBlock, UnresolvedToolUse } from '../chat/edits.js';
import type { AutopilotSettings } from './autopilot.js';

/** The buffer as parsed after every change so far, with its lines. */
export interface LoopState {
  document: ChatDocument;
  lines: readonly string[];
}

/** What a step knows of the buffer's settings (the host's editor context carries more). */
export interface StepSettings {
  /** Why the buffer cannot go on (its frontmatter failed or may not run); nothing is done then. */
  problem?: string | undefined;
  autopilot: AutopilotSettings;
  /**
   * `placeholders`: for a file that is not trusted, the statuses its placeholders held when it
   * was read from disk, by tool id, that are not the user's (docs/approval.md).
   */
  trust?: { placeholders?: Readonly<Record<string, string>> | undefined };
}

/** A status that acts (runs the call, or answers it with an error without asking). */
export type ActingStatus = 'approved' | 'denied' | 'rejected';

/** A call for the approval chain: a tool use without a result, or a placeholder judged again. */
export interface ChainCall extends Pick<
  UnresolvedToolUse,
  'id' | 'name' | 'input' | 'duplicateOf'
> {
  /**
   * Set when the call has a placeholder whose status is not the user's (a file that is not
   * trusted held it when read): that status, which the chain's answer replaces.
   */
  unconfirmed?: ActingStatus;
}

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

/**
 * Phase 1's answer for one tool use. `denied` also covers a call with nothing to approve (an
 * unknown tool, arguments that were not JSON, a repeated id): Phase 2 writes its error result.
 */
export type Verdict = 'approved' | 'pending' | 'denied';

export interface EditorPort<C extends StepSettings> {
  /** The buffer as parsed now; undefined when it is no chat buffer any more. */
  read(): Promise<LoopState | undefined>;
  /**
   * The buffer's settings for a step (`user`: the user asked for it). The host answers from what
   * it holds, asking the editor only when that is stale (docs/architecture.md).
   */
  context(user: boolean, state: LoopState): Promise<C>;
  /** Apply edits (each checks the lines it expects), in one batch. */
  apply(edits: readonly Edit[]): Promise<void>;
  /**
   * The statuses of these placeholders were set in this Neovim (the chain judged them): they
   * are honoured from now on (`trust.placeholders` forgets them).
   */
  confirm(ids: readonly string[]): Promise<void>;
  /** The loop stopped for the user: the cursor goes there, a message says what waits. */
  waitForUser(state: LoopState): Promise<void>;
  warn(message: string): void;
  error(message: string): void;
}

export interface ToolPort<C extends StepSettings> {
  /** A call of this buffer runs. */
  running(): boolean;
  /**
   * The approval chain's answer for a tool use without a result, or for a placeholder whose
   * status is not the user's (remembered for `tool:why`). A use that repeats an id
   * (`duplicateOf`) is denied whatever the answer.
   */
  decide(use: ChainCall, context: C): Promise<Verdict>;
  /**
   * Run the one call the user asked for (`<M-CR>`), not throttled: its placeholder is written
   * first when it has none; `rerun`: its finished result is replaced. Started, not awaited.
   */
  run(call: ToolCall, context: C, rerun: boolean): void;
  /** Start the approved calls (at most `max_concurrent` at a time; results land by themselves). */
  start(calls: readonly ToolCall[], context: C, user: boolean): void;
  /**
   * Write Phase 1's placeholders while the approved calls start: the calls begin before the
   * placeholders are written, and a call that returns first lands in its placeholder's place.
   */
  startPlacing(
    state: LoopState,
    requests: readonly PlaceholderRequest[],
    calls: readonly ToolCall[],
    context: C,
    user: boolean,
  ): Promise<void>;
  /** The error result of a block that will not run (denied, rejected, aborted). */
  resolution(
    block: ToolBlock,
    status: 'denied' | 'rejected' | 'aborted',
    context: C,
  ): Promise<string>;
}

export interface ProviderPort<C extends StepSettings> {
  /** A request of this buffer runs. */
  running(): boolean;
  /** Send the conversation (Phase 3). */
  send(context: C, user: boolean): Promise<void>;
}

export interface ClockPort {
  /** Resolves on the next turn of the event loop (an undo boundary between two edits). */
  tick(): Promise<void>;
  /** Runs `fn` on the next turn of the event loop. */
  soon(fn: () => void): void;
}
