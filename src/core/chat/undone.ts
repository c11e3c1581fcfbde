// The `undone` mark of a tool result: `**Tool Result:** `id` (undone)` once `:Flemma tool:undo`
// has put back the files the call changed. It is a plain word of the header's suffix, so the
// parser (TypeScript and Lua) keeps it like any other word, next to `error` if there is one.
//
// Decision: the result is still sent to the model as it was written, followed by one line saying
// it was undone, so the model neither loses what happened nor believes the change is still there.
import { SUFFIX, TOOL_RESULT_HEADER } from './blocks.js';

export const UNDONE_WORD = 'undone';

export const UNDONE_NOTE =
  '[The user undid this tool call afterwards: the files it changed hold what they held before it ran.]';

/** A result's header suffix words (`meta` of the parsed segment) say it was undone. */
export function isUndone(meta: Readonly<Record<string, string>> | undefined): boolean {
  if (meta === undefined) return false;
  return Object.entries(meta).some(([key, value]) => /^\d+$/.test(key) && value === UNDONE_WORD);
}

/**
 * The header line with the `undone` mark added (`(undone)`, or `(error undone)` after an existing
 * suffix); undefined when `line` is not a result header or already has the mark.
 */
export function markUndone(line: string): string | undefined {
  const header = TOOL_RESULT_HEADER.exec(line);
  if (header === null) return undefined;
  const rest = header[2] ?? '';
  const suffix = SUFFIX.exec(rest);
  const head = line.slice(0, line.length - rest.length);
  if (suffix === null) {
    if (rest.trim() !== '') return undefined;
    return `${head} (${UNDONE_WORD})`;
  }
  const inner = (suffix[1] ?? '').trim();
  if (inner.split(/\s+/).includes(UNDONE_WORD)) return undefined;
  return `${head} (${inner === '' ? '' : `${inner} `}${UNDONE_WORD})`;
}
