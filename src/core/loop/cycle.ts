// One step of the tool loop (`<C-]>`, or autopilot's continue), as decisions over ports
// (docs/architecture.md, "The conversation loop"):
//
// - Phase 1: every tool use without a result gets a placeholder with the approval chain's
//   decision. A pending one stops the step for the user. Approved calls start at once (their
//   placeholders are written while they run); denied and aborted ones go on to Phase 2.
// - Phase 2: denied, rejected and aborted blocks get their error result; a result the user typed
//   into a pending block is sent as the tool's result; approved blocks run; an approved block with
//   content is not run (content-overwrite protection) and the user is warned.
// - Phase 3: nothing left to do, nothing running: the conversation is sent.
import { duplicateToolIdText } from '../chat/tool-ids.js';
import {
  type Edit,
  type PlaceholderRequest,
  bottomToTop,
  classifyToolBlocks,
  type ToolBlock,
  planPlaceholderStatus,
  planPlaceholders,
  planResult,
  planUserSuppliedResult,
  protectionWarning,
  unresolvedToolUses,
} from '../chat/edits.js';
import type { Autopilot } from './autopilot.js';
import type { ChatDocument } from '../chat/ast.js';
import type {
  ActingStatus,
  ClockPort,
  EditorPort,
  LoopState,
  ProviderPort,
  StepSettings,
  ToolCall,
  ToolPort,
  Verdict,
} from './ports.js';

export interface StepPorts<C extends StepSettings> {
  editor: EditorPort<C>;
  tools: ToolPort<C>;
  provider: ProviderPort<C>;
  clock: ClockPort;
  /** Marks a stage of the step for the trace (docs/testing.md). */
  mark?: (stage: string) => void;
}

// Short enough for an 80-column command line ("Flemma: " included), as every usual message.
export const BUSY_REQUEST = 'A request is already in progress (<C-c> cancels it)';
export const BUSY_TOOLS = 'Cannot send while tool execution is in progress.';
export const BUSY_CALL = 'Cannot execute tool while API request is in flight';

/**
 * Why a send cannot start now, or undefined: a request of the buffer runs, or a tool does. The
 * one busy rule of the loop (Phase 3, `:Flemma send`); `Conversation.busy` adds autopilot's
 * pending continue.
 */
export function sendRefusal<C extends StepSettings>(ports: StepPorts<C>): string | undefined {
  if (ports.provider.running()) return BUSY_REQUEST;
  if (ports.tools.running()) return BUSY_TOOLS;
  return undefined;
}

/**
 * How a step ended, for whoever waits on the step the user started (Insert mode's `<C-]>` comes
 * back when the user has the word again):
 * - `refused`: nothing was done (a request or a tool runs, the buffer is gone, its settings failed);
 * - `waiting`: the loop stopped at calls that wait for the user;
 * - `started`: calls were started (their results land by themselves) or autopilot goes on;
 * - `sent`: Phase 3 ran (the send is over, whatever came of it).
 */
export type StepOutcome = 'refused' | 'waiting' | 'started' | 'sent';

/** Runs one step for a buffer whose autopilot is `pilot`. */
export async function runStep<C extends StepSettings>(
  ports: StepPorts<C>,
  pilot: Autopilot,
  user: boolean,
): Promise<StepOutcome> {
  const { editor, tools, provider, clock } = ports;
  const mark = ports.mark ?? ((): void => undefined);
  mark('cycle:start');
  if (provider.running()) {
    if (user) editor.warn(BUSY_REQUEST);
    return 'refused';
  }
  let state = await editor.read();
  mark('cycle:fresh');
  if (state === undefined) return 'refused';
  const context = await editor.context(user, state);
  if (context.problem !== undefined) {
    editor.error(context.problem);
    pilot.disarm();
    return 'refused';
  }
  const settings = context.autopilot;

  // Statuses a file that is not trusted held: the chain judges those calls as if pending.
  const judged = await judgeUnconfirmed(ports, state, context);
  if (judged.size > 0) {
    state = await editor.read();
    if (state === undefined) return 'refused';
    const now = placeholderStatuses(state.document);
    const settled = [...judged].filter(([id, verdict]) => (now.get(id) ?? verdict) === verdict);
    await editor.confirm(settled.map(([id]) => id));
    // An edit was refused (the user changed those rows meanwhile): nothing runs this step.
    if (settled.length < judged.size) return 'refused';
  }

  // Phase 1: placeholders with the chain's decisions.
  const unresolved = unresolvedToolUses(state.document);
  let started = false;
  if (unresolved.length > 0) {
    const requests: PlaceholderRequest[] = [];
    for (const use of unresolved) {
      if (use.aborted) {
        requests.push({ id: use.id, status: 'aborted' });
        continue;
      }
      const verdict = await tools.decide(use, context);
      // A repeated id never runs: Phase 2 writes its duplicate-id error result (tool-ids.ts).
      requests.push({ id: use.id, status: use.duplicateOf === undefined ? verdict : 'denied' });
    }
    mark('cycle:decided');
    if (requests.some((request) => request.status === 'pending')) {
      await editor.apply(planPlaceholders(state.document, state.lines, requests));
      const parsed = await editor.read();
      if (parsed !== undefined) await editor.waitForUser(parsed);
      pilot.pause();
      return 'waiting';
    }
    // Only approved/denied/aborted: the approved calls start now, and Phase 2 resolves the
    // others on the next tick (an undo boundary between the two).
    const approved: ToolCall[] = unresolved
      .filter((_use, index) => requests[index]?.status === 'approved')
      .map((use) => ({ id: use.id, name: use.name, input: use.input }));
    if (approved.length > 0) {
      pilot.arm(settings);
      started = true;
      await tools.startPlacing(state, requests, approved, context, user);
    } else {
      await editor.apply(planPlaceholders(state.document, state.lines, requests));
    }
    mark('cycle:placed');
    // Every call approved and started: nothing is left for Phase 2, and the step ends here
    // (autopilot's next step waits for it).
    if (requests.every((request) => request.status === 'approved')) return 'started';
    await clock.tick();
    state = await editor.read();
    if (state === undefined) return started ? 'started' : 'refused';
  }
  return phaseTwo(ports, pilot, state, context, user, started);
}

/**
 * The placeholders whose status is still one that a file that is not trusted held when it was
 * read (`context.trust.placeholders`) are not the user's: the chain judges each as if it were
 * pending, and its placeholder is rewritten (empty) with the chain's answer. Answers each judged
 * id with that answer; the caller confirms them once the buffer holds it.
 */
async function judgeUnconfirmed<C extends StepSettings>(
  ports: StepPorts<C>,
  state: LoopState,
  context: C,
): Promise<Map<string, Verdict>> {
  const judged = new Map<string, Verdict>();
  const recorded = context.trust?.placeholders;
  if (recorded === undefined) return judged;
  const groups = classifyToolBlocks(state.document);
  const held: [ToolBlock, ActingStatus][] = [
    ...groups.approved.map((block): [ToolBlock, ActingStatus] => [block, 'approved']),
    ...groups.denied.map((block): [ToolBlock, ActingStatus] => [block, 'denied']),
    ...groups.rejected.map((block): [ToolBlock, ActingStatus] => [block, 'rejected']),
  ].filter(([block, status]) => block.duplicateOf === undefined && recorded[block.id] === status);
  const edits: Edit[] = [];
  for (const [block, status] of held) {
    const verdict = await ports.tools.decide(
      { id: block.id, name: block.name, input: block.input, unconfirmed: status },
      context,
    );
    judged.set(block.id, verdict);
    if (verdict === status && block.content.trim() === '') continue;
    const edit = planPlaceholderStatus(state.document, state.lines, block.id, verdict);
    if (edit !== undefined) edits.push(edit);
  }
  if (edits.length > 0) await ports.editor.apply(bottomToTop(edits));
  return judged;
}

/** The status of each placeholder of the document, by tool id (the first one of each id). */
function placeholderStatuses(doc: ChatDocument): Map<string, string> {
  const statuses = new Map<string, string>();
  for (const message of doc.messages) {
    for (const segment of message.segments) {
      if (segment.kind !== 'tool_result' || segment.placeholder === undefined) continue;
      if (!statuses.has(segment.toolUseId)) {
        statuses.set(segment.toolUseId, segment.placeholder.status);
      }
    }
  }
  return statuses;
}

/** The error results of the blocks that will not run (denied, rejected, aborted). */
export async function resolutionEdits<C extends StepSettings>(
  tools: StepPorts<C>['tools'],
  state: LoopState,
  groups: Pick<ReturnType<typeof classifyToolBlocks>, 'denied' | 'rejected' | 'aborted'>,
  context: C,
): Promise<Edit[]> {
  const edits: Edit[] = [];
  for (const [status, blocks] of [
    ['denied', groups.denied],
    ['rejected', groups.rejected],
    ['aborted', groups.aborted],
  ] as const) {
    for (const block of blocks) {
      const text =
        status === 'denied' && block.duplicateOf !== undefined
          ? duplicateToolIdText(block.duplicateOf)
          : await tools.resolution(block, status, context);
      const edit = planResult(state.document, state.lines, block.id, {
        id: block.id,
        output: text,
        isError: true,
      });
      if (edit !== undefined) edits.push(edit);
    }
  }
  return edits;
}

async function phaseTwo<C extends StepSettings>(
  ports: StepPorts<C>,
  pilot: Autopilot,
  state: LoopState,
  context: C,
  user: boolean,
  started: boolean,
): Promise<StepOutcome> {
  const { editor, tools, provider } = ports;
  const mark = ports.mark ?? ((): void => undefined);
  mark('cycle:phase2');
  const settings = context.autopilot;
  const groups = classifyToolBlocks(state.document);
  const edits: Edit[] = [];
  for (const block of groups.pendingWithContent) {
    const edit = planUserSuppliedResult(state.document, state.lines, block.id);
    if (edit !== undefined) edits.push(edit);
  }
  const resolutions = await resolutionEdits(tools, state, groups, context);
  edits.push(...resolutions);
  const resolved = resolutions.length;
  if (edits.length > 0) await editor.apply(bottomToTop(edits));
  if (groups.approvedWithContent.length > 0) {
    editor.warn(protectionWarning(groups.approvedWithContent.length));
  }
  // Phase 1 started the approved calls; they report through their results (and autopilot goes
  // on when the last one is in).
  if (started) return 'started';
  if (groups.approved.length > 0) {
    pilot.arm(settings);
    tools.start(
      groups.approved.map((block) => ({ id: block.id, name: block.name, input: block.input })),
      context,
      user,
    );
    return 'started';
  }
  if (groups.pendingEmpty.length > 0 || groups.approvedWithContent.length > 0) {
    const latest = await editor.read();
    if (latest !== undefined) await editor.waitForUser(latest);
    pilot.pause();
    return 'waiting';
  }
  if (resolved > 0 || groups.pendingWithContent.length > 0) {
    // Error results (and results the user typed) are in; autopilot sends them on the next step,
    // a user's <C-]> sends them now.
    if (!user) {
      pilot.arm(settings);
      await pilot.toolsFinished(settings);
      return 'started';
    }
  }
  const busy = sendRefusal(ports);
  if (busy !== undefined) {
    if (user) editor.warn(busy);
    pilot.settle();
    return 'refused';
  }
  // Phase 3.
  mark('cycle:phase3');
  await provider.send(context, user);
  return 'sent';
}
