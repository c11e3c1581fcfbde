// A task's file (docs/tasks.md, "The task tool"): its name beside the parent (`notes.chat` →
// `notes.tasks/01-find-callers.chat`), its text (the frontmatter that records its profile and its
// parent, the profile's `@System:`, the prompt as its first `@You:`), and the result the parent's
// model gets back.
import { escapeBlock } from '../chat/escape.js';
import type { ChildPlan } from './narrow.js';

const CHAT_SUFFIX = '.chat';
/** Words of the prompt a name is made of when the call gives none. */
const SLUG_WORDS = 4;
const SLUG_MAX = 40;

/** The folder of a chat's tasks: `notes.chat` → `notes.tasks` (a name without `.chat` too). */
export function tasksDirName(parentName: string): string {
  const stem = parentName.endsWith(CHAT_SUFFIX)
    ? parentName.slice(0, -CHAT_SUFFIX.length)
    : parentName;
  return `${stem === '' ? 'chat' : stem}.tasks`;
}

/**
 * The part of a task's file name after its number: the call's `name`, else the prompt's first
 * words, as lower-case ASCII letters and digits joined by `-` (accents dropped, anything else a
 * separator), at most 40 characters; `task` when nothing is left. It holds no `/`, `.` or `\`,
 * so the file never leaves its folder.
 */
export function taskSlug(name: string | undefined, prompt: string): string {
  const source =
    name !== undefined && name.trim() !== ''
      ? name
      : prompt.trim().split(/\s+/).slice(0, SLUG_WORDS).join(' ');
  const words = source
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
  let slug = '';
  for (const word of words) {
    const next = slug === '' ? word : `${slug}-${word}`;
    if (next.length > SLUG_MAX) {
      if (slug === '') slug = word.slice(0, SLUG_MAX);
      break;
    }
    slug = next;
  }
  return slug === '' ? 'task' : slug;
}

const NUMBERED = /^(\d+)-.*\.chat$/;

/** The next free number in a tasks folder: one more than the highest `NN-…chat` there. */
export function nextTaskNumber(existing: readonly string[]): number {
  let highest = 0;
  for (const entry of existing) {
    const match = NUMBERED.exec(entry);
    if (match !== null) highest = Math.max(highest, Number(match[1]));
  }
  return highest + 1;
}

/** `01-find-callers.chat`: the number with two digits at least. */
export function taskFileName(number: number, slug: string): string {
  return `${String(number).padStart(2, '0')}-${slug}${CHAT_SUFFIX}`;
}

/** What a child's file records of where it came from. */
export interface ChildOrigin {
  /** The parent's path relative to the child's folder (`../notes.chat`). */
  parent: string;
  /** The task call's id in the parent. */
  toolId: string;
}

function lines(text: string): string[] {
  const out = text.replace(/\r\n?/g, '\n').split('\n');
  while (out.length > 0 && (out[out.length - 1] ?? '').trim() === '') out.pop();
  while (out.length > 0 && (out[0] ?? '').trim() === '') out.shift();
  return out;
}

/**
 * The child's chat: a JSON frontmatter whose `flemma` options keep it to its tools and model when
 * it is continued later (removing tools and choosing a model apply in any file), and whose `task`
 * records its profile and parent; the profile's system prompt; the prompt as the first `@You:`.
 * The prompt and the system prompt are the model's and a profile's text: a line that would read
 * as structure is escaped.
 */
export function childChatText(
  plan: ChildPlan,
  origin: ChildOrigin,
  prompt: string,
  system?: string,
): string {
  const options: Record<string, unknown> = { tools: { $set: plan.tools } };
  if (plan.model !== undefined) options['model'] = plan.model;
  const frontmatter = {
    flemma: options,
    task: { agent: plan.profile, parent: origin.parent, tool_id: origin.toolId },
  };
  const out = ['```json', ...JSON.stringify(frontmatter, null, 2).split('\n'), '```'];
  if (system !== undefined && system.trim() !== '') {
    out.push('@System:', ...escapeBlock(lines(system)), '');
  }
  out.push('@You:', ...escapeBlock(lines(prompt)), '');
  return out.join('\n');
}

/** How a child's run ended, as the parent's `task` call reports it. */
export type ChildEnd =
  | { kind: 'done'; text: string }
  | { kind: 'max_turns'; turns: number }
  | { kind: 'max_cost'; cost: number }
  | { kind: 'approval'; tool: string }
  | { kind: 'cancelled' }
  | { kind: 'error'; message: string };

/** The `task` call's result: the child's final message and its file, or an error naming it. */
export function taskResult(
  end: ChildEnd,
  file: string,
): { ok: true; output: string } | { ok: false; error: string; partialOutput?: string } {
  const where = `The task's chat: ${file}`;
  switch (end.kind) {
    case 'done':
      return { ok: true, output: `${end.text.trim()}\n\n${where}` };
    case 'max_turns':
      return {
        ok: false,
        error: `The task stopped after ${String(end.turns)} turns without finishing (its turn limit). ${where}`,
      };
    case 'max_cost':
      return {
        ok: false,
        error: `The task stopped at its spending limit ($${end.cost.toFixed(4)}) without finishing. ${where}`,
      };
    case 'approval':
      return {
        ok: false,
        error: `The task stopped: its ${end.tool} call waits for the user's approval. ${where}`,
      };
    case 'cancelled':
      // The file as partial output: a cancel's own wording replaces the error.
      return { ok: false, error: 'The task was cancelled.', partialOutput: where };
    case 'error':
      return { ok: false, error: `The task failed: ${end.message}. ${where}` };
  }
}
