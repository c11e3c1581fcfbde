// The sensitive places at the moment a tool's write opens its file (issue 28). The approval judged
// the path the call named when it was decided; a link on the way may have changed since (a
// sandboxed command flipping `sw` between a directory and a link to `.git/hooks`). So the write
// asks again, about the real location the walk in beneath.ts reaches, in the same step that opens
// the file.
//
// Decisions (docs/approval.md, "Sensitive places"):
// - A real location under a sensitive place (for a write: build scripts count) is refused unless
//   the user approved this call knowing it went there: the places the approval question named
//   (the path as written and where it led then). A directory created on the way to such a place
//   is allowed with it.
// - A call approved automatically named no sensitive place (the guard would have asked), so every
//   sensitive place is refused for it.

import { isUnder } from './paths.js';
import { type SensitiveEntry, describeSensitive, findSensitive } from './sensitive.js';

export interface WriteGate {
  /** The sensitive place `real` (absolute, real) falls under and this call may not write. */
  refusal(real: string): string | undefined;
}

/** The gate of one call: `entries` in force, `approved` the places the user approved it for. */
export function sensitiveGate(
  entries: readonly SensitiveEntry[],
  approved: readonly string[],
): WriteGate {
  return {
    refusal: (real) => {
      const hit = findSensitive([real], entries, { write: true });
      if (hit === undefined) return undefined;
      if (approved.some((place) => isUnder(place, real))) return undefined;
      return describeSensitive(hit);
    },
  };
}
