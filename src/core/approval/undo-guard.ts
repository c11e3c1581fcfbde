// The undo guard (issue 28): a call that changes files and whose undo record cannot be written
// (the state directory's disk is full, it is not writable) is never approved automatically.
// Whichever resolver approved it, the approval becomes a question with the reason, so the user
// decides whether the write may run without a way back; only the user's own approval runs it.
import { type ApprovalResult, guarded } from './chain.js';

export const UNDO_GUARD = 'urn:flemma:approval:undo';

/** What the user is told when a call's undo record cannot be written. */
export function undoProblemText(error: string): string {
  return `no undo record: ${error}; approve to write without undo`;
}

/**
 * `result` with an approval turned into a question when `problem` (why the undo record cannot be
 * written) is set; anything else as it is.
 */
export function guardUndo(
  result: ApprovalResult,
  problem: string | undefined,
  toolName: string,
): ApprovalResult {
  if (result.decision !== 'approve' || problem === undefined) return result;
  // After every resolver of the chain and the other guards.
  return guarded(
    result,
    UNDO_GUARD,
    (approver) => `${toolName}: ${undoProblemText(problem)} (${approver} had approved it)`,
  );
}
