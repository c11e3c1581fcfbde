// The answer to the user's last action that ends a turn (`<C-]>`, `<M-CR>`, `:Flemma send`,
// approving or rejecting), for one chat buffer. Lua sends a ticket with the action; the session
// notes here how the action ended, and answers the ticket (`chat.step_ended`) once the user has
// the word again. Lua then puts the cursor where the user goes on and decides whether Insert
// mode comes back (docs/tools.md, "Where the turn ends").
import type { ChatDocument } from '../core/chat/ast.js';
import { classifyToolBlocks } from '../core/chat/edits.js';

/**
 * Whether a step has calls to run or results to write once nothing waits: approved calls,
 * denied, rejected and aborted ones, or results the user typed into a pending block.
 */
export function actionable(document: ChatDocument): boolean {
  const groups = classifyToolBlocks(document);
  return (
    groups.approved.length +
      groups.denied.length +
      groups.rejected.length +
      groups.aborted.length +
      groups.pendingWithContent.length >
    0
  );
}

/**
 * How the user's action ended: `done` (the turn or the tools are over), `refused` (nothing was
 * done), `waiting` (a call waits for approval), `failed` (an error is on screen), `cancelled`,
 * `stopped` (autopilot's turn limit, the spend cap).
 */
export type StepEnding = 'done' | 'refused' | 'waiting' | 'failed' | 'cancelled' | 'stopped';

export interface TurnEndAnswer {
  ticket: number;
  outcome: StepEnding;
  /** The 0-based row of the header of the first call that waits (`waiting` only). */
  row?: number;
}

export class TurnEnd {
  private ticket: number | undefined;
  /** How the action has ended so far (unset: a plain end). */
  private ending: StepEnding | undefined;
  private row: number | undefined;

  constructor(private readonly answer: (answer: TurnEndAnswer) => void) {}

  /** The ticket waiting for its answer, if any. */
  get pending(): number | undefined {
    return this.ticket;
  }

  /** A user's action with `ticket` starts (it replaces an older one); none: nothing changes. */
  expect(ticket: number | undefined): void {
    if (ticket === undefined) return;
    this.ticket = ticket;
    this.ending = undefined;
    this.row = undefined;
  }

  /** How the action ended: the first reason that is not a plain end counts. */
  ended(ending: StepEnding): void {
    if (this.ticket !== undefined && this.ending === undefined) this.ending = ending;
  }

  /** The loop stopped at a call that waits: its placeholder's header is at `row` (0-based). */
  waiting(row: number): void {
    if (this.ticket === undefined || this.ending !== undefined) return;
    this.ending = 'waiting';
    this.row = row;
  }

  /** Answer `ticket`, if it is still the one waiting. */
  handBack(ticket: number): void {
    if (this.ticket !== ticket) return;
    const outcome = this.ending ?? 'done';
    const row = outcome === 'waiting' ? this.row : undefined;
    this.ticket = undefined;
    this.ending = undefined;
    this.row = undefined;
    this.answer({ ticket, outcome, ...(row === undefined ? {} : { row }) });
  }
}
