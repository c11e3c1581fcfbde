// An agent's permission request as one of our own calls (docs/agents.md, "Permissions"): the
// approval chain, the command rules, the sensitive-place guard and the presets judge it as they
// would judge our tool of the same kind, and the answer is one of the options the agent offered.
//
//   ACP kind          judged as
//   read              read   { path }         each location
//   edit              edit   { path }         each location
//   delete, move      write  { path }         each location (a move: its source and target)
//   search            grep   { path }         each location (none: the tool's directory)
//   execute           bash   { command }      the raw input's command, else the title
//   fetch             web_fetch { url }
//   think, switch_mode, other, unknown: `acp:<kind>`, a tool no preset or rule names, so it
//   waits for the user unless a rule of yours names it.
import type {
  PermissionOption,
  PermissionOptionKind,
  RequestPermissionOutcome,
  ToolCallUpdate,
} from '@agentclientprotocol/sdk';
import type { Decision } from '../approval/chain.js';

/** One of our calls a permission request stands for. */
export interface PermissionCall {
  toolName: string;
  input: Record<string, unknown>;
}

function rawField(raw: unknown, names: readonly string[]): string | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  for (const name of names) {
    const value = (raw as Record<string, unknown>)[name];
    if (typeof value === 'string' && value !== '') return value;
    if (Array.isArray(value) && value.every((item) => typeof item === 'string')) {
      return value.join(' ');
    }
  }
  return undefined;
}

/** The paths a request names: its locations, else a path in its raw input. */
function pathsOf(call: ToolCallUpdate): string[] {
  const located = (call.locations ?? []).map((location) => location.path);
  if (located.length > 0) return located;
  const raw = rawField(call.rawInput, ['path', 'file_path', 'filePath', 'abs_path']);
  return raw === undefined ? [] : [raw];
}

/** The calls of ours a permission request is judged as (at least one). */
export function permissionCalls(call: ToolCallUpdate): PermissionCall[] {
  const kind = call.kind ?? 'other';
  const perPath = (toolName: string): PermissionCall[] => {
    const paths = pathsOf(call);
    // A file tool without a path: judged without one (the chain cannot place it; it asks).
    if (paths.length === 0) return [{ toolName, input: {} }];
    return paths.map((path) => ({ toolName, input: { path } }));
  };
  switch (kind) {
    case 'read':
      return perPath('read');
    case 'edit':
      return perPath('edit');
    case 'delete':
    case 'move':
      return perPath('write');
    case 'search': {
      const paths = pathsOf(call);
      return paths.length === 0
        ? [{ toolName: 'grep', input: {} }]
        : paths.map((path) => ({ toolName: 'grep', input: { path } }));
    }
    case 'execute': {
      const command = rawField(call.rawInput, ['command', 'cmd']) ?? call.title ?? '';
      return [{ toolName: 'bash', input: { command } }];
    }
    case 'fetch': {
      const url = rawField(call.rawInput, ['url', 'uri']) ?? call.title ?? '';
      return [{ toolName: 'web_fetch', input: { url } }];
    }
    default:
      return [
        {
          toolName: `acp:${kind}`,
          input: call.rawInput === undefined ? {} : { raw: call.rawInput },
        },
      ];
  }
}

/** The verdict of several calls: a denial wins, then a question, else approval. */
export function combineDecisions(decisions: readonly Decision[]): Decision {
  if (decisions.includes('deny')) return 'deny';
  if (decisions.includes('require_approval') || decisions.length === 0) return 'require_approval';
  return 'approve';
}

/** What our side answers: allow once, allow always, reject, or the request cancelled. */
export type PermissionAnswer = 'allow' | 'allow_always' | 'reject' | 'cancelled';

const WANTED: Record<Exclude<PermissionAnswer, 'cancelled'>, readonly PermissionOptionKind[]> = {
  // "Once" first: an automatic approval is for this call, not for every later one.
  allow: ['allow_once', 'allow_always'],
  allow_always: ['allow_always', 'allow_once'],
  reject: ['reject_once', 'reject_always'],
};

/**
 * The outcome for `answer` among the options the agent offered. An approval the agent offered
 * no option for is cancelled (never a rejection read as a yes); a rejection with no reject
 * option too.
 */
export function permissionOutcome(
  options: readonly PermissionOption[],
  answer: PermissionAnswer,
): RequestPermissionOutcome {
  if (answer === 'cancelled') return { outcome: 'cancelled' };
  for (const kind of WANTED[answer]) {
    const option = options.find((candidate) => candidate.kind === kind);
    if (option !== undefined) return { outcome: 'selected', optionId: option.optionId };
  }
  return { outcome: 'cancelled' };
}

// A request that waits for the user, in the reply (docs/agents.md, "Permissions"): a placeholder
// in the format's grammar, a header naming the agent's call and a `flemma:tool` fence with its
// status, rewritten in place once answered. The `**Agent Permission:**` title is the agent's own
// block kind, never a `**Tool Result:**`: the chat's tool loop does not run or answer it, and a
// line of the agent's text that starts with it is escaped (src/core/chat/escape.ts).
//
//   **Agent Permission:** `call_7` execute: Run ls
//
//   ```flemma:tool status=pending
//   ```

/** The title of a permission placeholder's header. */
export const PERMISSION_TITLE = '**Agent Permission:**';

/** Where a request stands: waiting for the user, or answered. */
export type PermissionState = 'pending' | PermissionAnswer;

/** The fence status of each state (`scope=always`: the agent was allowed it always). */
export const PERMISSION_STATUS: Record<PermissionState, string> = {
  pending: 'status=pending',
  allow: 'status=approved',
  allow_always: 'status=approved scope=always',
  reject: 'status=rejected',
  cancelled: 'status=cancelled',
};

/** The placeholder of request `id` (`what`: its kind and title, one line) in `state`. */
export function permissionPlaceholder(id: string, what: string, state: PermissionState): string[] {
  const header = `${PERMISSION_TITLE} \`${id.replace(/[`\r\n]/g, "'")}\` ${oneLine(what)}`;
  return [header.trimEnd(), '', `\`\`\`flemma:tool ${PERMISSION_STATUS[state]}`, '```'];
}

/** Text on one line, its runs of white space one space. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** What a permission request is about, in a few words: its kind and its title. */
export function permissionText(call: ToolCallUpdate): string {
  return `${call.kind ?? 'other'}: ${oneLine(call.title ?? call.toolCallId)}`;
}

/** The change an `edit` request proposes, when its content carries a diff (the diff view). */
export interface PermissionDiff {
  path: string;
  before: string;
  after: string;
  exists: boolean;
}

/** The first diff item of a request's content, as the diff view shows it. */
export function permissionDiff(call: ToolCallUpdate): PermissionDiff | undefined {
  for (const item of call.content ?? []) {
    if (item.type !== 'diff') continue;
    const exists = item.oldText !== null && item.oldText !== undefined;
    return { path: item.path, before: item.oldText ?? '', after: item.newText, exists };
  }
  return undefined;
}
