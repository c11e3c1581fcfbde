// An ACP agent's turn as a provider's reply (docs/agents.md, "The turn in the buffer"): each
// `session/update` of the turn becomes the provider events the streamer already writes, so the
// turn gets the reply's batching, follow, lock, one undo step, cancel and recovery. Message chunks
// are the reply's text; thought chunks one thinking block; the agent's own tool calls and the
// plan are text of the reply in a form of their own (`**Agent Tool:**`, `**Agent Result:**`,
// `**Plan:**`): they are not `**Tool Use:**` blocks, so the tool loop never runs or answers them.
// Everything the agent sends is untrusted text and passes the reply's one escape; the client's own
// blocks (a permission placeholder, `note`) are written as they are.
import type {
  ContentBlock,
  PlanEntry,
  SessionUpdate,
  ToolCallContent,
  ToolCallStatus,
  ToolKind,
  UsageUpdate,
} from '@agentclientprotocol/sdk';
import { commonEnds } from '../util/common-ends.js';
import { fenceFor } from '../chat/writer.js';
import type { ProviderEvent } from '../provider/types.js';
import { turnUsage } from './usage.js';

/** What the buffer shows of a content block: its text, or a line naming what it is. */
export function contentText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
      return `[image ${block.mimeType}]`;
    case 'audio':
      return `[audio ${block.mimeType}]`;
    case 'resource_link':
      return `[${block.name}](${block.uri})`;
    case 'resource':
      return 'text' in block.resource ? block.resource.text : `[resource ${block.resource.uri}]`;
    default:
      return '';
  }
}

/** A fenced block of `content`, its fence longer than any backtick run in it. */
function fenced(content: string, info = ''): string {
  const fence = fenceFor(content);
  const body = content.endsWith('\n') || content === '' ? content : `${content}\n`;
  return `${fence}${info}\n${body}${fence}\n`;
}

/** An edit as a unified diff of one hunk: the lines that changed, with their path. */
export function diffText(
  path: string,
  oldText: string | null | undefined,
  newText: string,
): string {
  const before = oldText === null || oldText === undefined ? [] : oldText.split('\n');
  const after = newText.split('\n');
  const { head, tail } = commonEnds(before, after);
  const removed = before.slice(head, before.length - tail);
  const added = after.slice(head, after.length - tail);
  const from = oldText === null || oldText === undefined ? '/dev/null' : `a/${path}`;
  const hunk = `@@ -${String(head + 1)},${String(removed.length)} +${String(head + 1)},${String(added.length)} @@`;
  return [
    `--- ${from}`,
    `+++ b/${path}`,
    hunk,
    ...removed.map((line) => `-${line}`),
    ...added.map((line) => `+${line}`),
  ].join('\n');
}

/** A tool call's content as the buffer shows it: text fenced, a diff as a `diff` fence. */
function toolContent(content: readonly ToolCallContent[]): string {
  return content
    .map((item) => {
      if (item.type === 'diff')
        return fenced(diffText(item.path, item.oldText, item.newText), 'diff');
      if (item.type === 'terminal') return `[terminal ${item.terminalId}]\n`;
      return fenced(contentText(item.content));
    })
    .join('\n');
}

const PLAN_MARKS: Record<PlanEntry['status'], string> = {
  pending: '[ ]',
  in_progress: '[~]',
  completed: '[x]',
};

/** The agent's plan as a list: `[ ]` to do, `[~]` under way, `[x]` done. */
export function planText(entries: readonly PlanEntry[]): string {
  const items = entries.map(
    (entry) => `- ${PLAN_MARKS[entry.status]} ${entry.content.replace(/\s+/g, ' ')}`,
  );
  return ['**Plan:**', '', ...items].join('\n') + '\n';
}

/** The tool call's header: its kind, its id, its title. */
export function toolHeader(id: string, kind: ToolKind | null | undefined, title: string): string {
  return `**Agent Tool:** \`${kind ?? 'other'}\` (\`${id.replace(/`/g, "'")}\`) ${title.replace(/\s+/g, ' ').trim()}\n`;
}

/** The tool call's end: its id, the agent's status, what it gave. */
export function toolResult(
  id: string,
  status: ToolCallStatus,
  content: readonly ToolCallContent[],
): string {
  const body = toolContent(content);
  const header = `**Agent Result:** \`${id.replace(/`/g, "'")}\` (${status})\n`;
  return body === '' ? header : `${header}\n${body}`;
}

interface OpenCall {
  kind: ToolKind | null | undefined;
  title: string;
  content: ToolCallContent[];
  ended: boolean;
}

/**
 * One prompt turn of an agent: its updates in, the provider events of the reply out. Thought
 * chunks are gathered into one thinking block, written where the thinking began once something
 * else arrives; blocks (tool calls, results, plans) are separated from text by a blank line.
 */
export class AgentTurn {
  private thought = '';
  private readonly calls = new Map<string, OpenCall>();
  private lastPlan = '';
  /** What was written last ends a line (the reply starts, or a block was written). */
  private atLineStart = true;
  private written = false;
  /** A block was written last: the next text starts after a blank line. */
  private afterBlock = false;
  /** The turn's last `usage_update` (running figures: the last wins). */
  private usage: UsageUpdate | undefined;

  /** `costBefore`: the session's running cost (USD) before the turn, as the agent reported it. */
  constructor(private readonly costBefore = 0) {}

  /** The events one update gives. */
  push(update: SessionUpdate): ProviderEvent[] {
    if (update.sessionUpdate === 'usage_update') {
      this.usage = update;
      return [];
    }
    if (update.sessionUpdate === 'agent_thought_chunk') {
      const text = contentText(update.content);
      this.thought += text;
      return [{ type: 'progress', phase: 'thinking', characters: this.thought.length }];
    }
    const out = this.flushThought();
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        out.push(...this.text(contentText(update.content)));
        break;
      case 'tool_call': {
        const call: OpenCall = {
          kind: update.kind,
          title: update.title,
          content: update.content ?? [],
          ended: false,
        };
        this.calls.set(update.toolCallId, call);
        out.push(...this.block(toolHeader(update.toolCallId, update.kind, update.title)));
        if (update.status === 'completed' || update.status === 'failed') {
          out.push(...this.end(update.toolCallId, call, update.status));
        }
        break;
      }
      case 'tool_call_update':
        out.push(...this.updateCall(update));
        break;
      case 'plan': {
        const text = planText(update.entries);
        if (text !== this.lastPlan) {
          this.lastPlan = text;
          out.push(...this.block(text));
        }
        break;
      }
      default:
        break;
    }
    return out;
  }

  /**
   * A block of the client's own in the reply (a permission placeholder): written as it is, not
   * escaped as the agent's text is.
   */
  note(lines: string[]): ProviderEvent[] {
    const out = this.flushThought();
    this.written = true;
    this.atLineStart = true;
    this.afterBlock = true;
    out.push({ type: 'block', lines });
    return out;
  }

  /** The turn ended: the thinking not yet written, and what the agent reported of its usage
   * (`usage`: the prompt answer's, when it has one). */
  finish(usage?: unknown): ProviderEvent[] {
    return [...this.flushThought(), ...turnUsage(this.usage, usage, this.costBefore)];
  }

  private updateCall(
    update: Extract<SessionUpdate, { sessionUpdate: 'tool_call_update' }>,
  ): ProviderEvent[] {
    let call = this.calls.get(update.toolCallId);
    const out: ProviderEvent[] = [];
    if (call === undefined) {
      // An update of a call the turn never announced: its header first.
      call = { kind: update.kind, title: update.title ?? '', content: [], ended: false };
      this.calls.set(update.toolCallId, call);
      out.push(...this.block(toolHeader(update.toolCallId, call.kind, call.title)));
    }
    if (update.content !== undefined && update.content !== null) call.content = update.content;
    if (update.status === 'completed' || update.status === 'failed') {
      out.push(...this.end(update.toolCallId, call, update.status));
    }
    return out;
  }

  private end(id: string, call: OpenCall, status: ToolCallStatus): ProviderEvent[] {
    if (call.ended) return [];
    call.ended = true;
    return this.block(toolResult(id, status, call.content));
  }

  private text(text: string): ProviderEvent[] {
    if (text === '') return [];
    const lead = this.afterBlock ? '\n' : '';
    this.written = true;
    this.afterBlock = false;
    this.atLineStart = text.endsWith('\n');
    return [{ type: 'text', text: lead + text }];
  }

  /** A block of lines with a blank line between it and what came before. */
  private block(text: string): ProviderEvent[] {
    const lead = !this.written ? '' : this.atLineStart ? '\n' : '\n\n';
    this.written = true;
    this.atLineStart = true;
    this.afterBlock = true;
    return [{ type: 'text', text: lead + text }];
  }

  private flushThought(): ProviderEvent[] {
    if (this.thought.trim() === '') {
      this.thought = '';
      return [];
    }
    const content = this.thought.trim();
    this.thought = '';
    // The block ends a line: what follows starts after a blank line.
    this.written = true;
    this.atLineStart = true;
    this.afterBlock = true;
    return [{ type: 'thinking', content }];
  }
}
