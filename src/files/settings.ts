// What a file chat's settings need beyond the host's: the statuses its placeholders had in the
// file (not the user's, in a chat that is not trusted), and the frontmatter of a host with no
// Neovim (JSON and YAML are read in TypeScript; Lua needs Lua).
import type { FrontmatterAnswer, FrontmatterRequest } from '../editor/protocol/wire.js';
import { parseLines } from '../core/chat/parser.js';

const ACTING = new Set(['approved', 'denied', 'rejected']);

/**
 * The statuses that act (`approved`, `denied`, `rejected`) of the chat's placeholders, by tool
 * id, as the file holds them: in a chat that is not trusted they are judged as if pending until
 * set here (docs/approval.md), as Lua does for a buffer read from disk.
 */
export function placeholderStatuses(lines: readonly string[]): Record<string, string> {
  const statuses: Record<string, string> = {};
  for (const message of parseLines([...lines]).messages) {
    for (const segment of message.segments) {
      const status = segment.kind === 'tool_result' ? segment.placeholder?.status : undefined;
      if (segment.kind === 'tool_result' && status !== undefined && ACTING.has(status)) {
        statuses[segment.toolUseId] = status;
      }
    }
  }
  return statuses;
}

/**
 * A frontmatter with no Neovim and no evaluator: JSON/YAML operations as read (not checked
 * against Lua's schema: with no trust class, each needs trust, so a chat that is not trusted
 * gets none of them); Lua or a custom language cannot run.
 */
export function headlessFrontmatter(request: FrontmatterRequest): Promise<FrontmatterAnswer> {
  if ('ops' in request) return Promise.resolve({ ops: request.ops });
  const language = request.custom ?? 'Lua';
  return Promise.resolve({
    error: `frontmatter line ${String(request.line)}: a ${language} frontmatter needs Neovim here`,
  });
}
