// Slash commands (docs/slash-commands.md): `/name args` on a line of its own in a `@You:`
// message. The grammar is read here (the parser calls `readSlashCommand`) and, for drawing, in
// lua/flemma/ui/scan.lua; what a name means is the registry's, in Neovim (lua/flemma/slash.lua),
// which the host asks before a send (`slash.resolve`).
import type { ChatDocument, Message, SlashCommandSegment } from './ast.js';
import type { ConfigOp } from '../config/frontmatter.js';

/**
 * `/name` or `/namespace:name` (a letter, then letters, digits, `_` and `-`), then the end of
 * the line or a space or tab before the arguments. `/usr/bin` is text: a `/` follows the name.
 */
const SLASH = /^\/([A-Za-z][A-Za-z0-9_-]*(?::[A-Za-z][A-Za-z0-9_-]*)?)(?:[ \t](.*))?$/;

/** The slash command a line of a `@You:` message holds (`line` is its 1-based number), if any. */
export function readSlashCommand(text: string, line: number): SlashCommandSegment | undefined {
  const match = SLASH.exec(text);
  if (match === null) return undefined;
  return {
    kind: 'slash_command',
    name: match[1] ?? '',
    args: (match[2] ?? '').trim(),
    span: { startLine: line, endLine: line },
  };
}

/** A slash command of the chat, as the host asks the registry about it. */
export interface SlashUse {
  name: string;
  args: string;
  /** Its buffer line (1-based). */
  line: number;
  /**
   * It stands in the message of the turn this send belongs to: the chat's last `@You:` message
   * the user wrote, when nothing but the model's replies and the results of its calls follow it
   * (a follow-up after tool results is the same turn, with the same options).
   */
  last: boolean;
}

/** A `@You:` message that holds tool results and nothing else the user wrote. */
function onlyResults(message: Message): boolean {
  let results = false;
  for (const segment of message.segments) {
    if (segment.kind === 'tool_result') results = true;
    else if (segment.kind !== 'text' || segment.value.trim() !== '') return false;
  }
  return results;
}

/** The `@You:` message whose turn a send of `document` goes on with, if any (see `SlashUse`). */
function turnMessage(document: ChatDocument): Message | undefined {
  for (let i = document.messages.length - 1; i >= 0; i--) {
    const message = document.messages[i];
    if (message === undefined || message.role === 'Assistant') continue;
    if (message.role !== 'You') return undefined;
    if (!onlyResults(message)) return message;
  }
  return undefined;
}

/** Every slash command of the chat's `@You:` messages, in order. */
export function slashUses(document: ChatDocument): SlashUse[] {
  const uses: SlashUse[] = [];
  const lastMessage = turnMessage(document);
  for (const message of document.messages) {
    if (message.role !== 'You') continue;
    for (const segment of message.segments) {
      if (segment.kind !== 'slash_command') continue;
      uses.push({
        name: segment.name,
        args: segment.args,
        line: segment.span.startLine,
        last: message === lastMessage,
      });
    }
  }
  return uses;
}

/** What the registry made of one slash command (`slash.resolve`, one per use, in order). */
export type SlashResolution =
  | { kind: 'rewrite'; text: string }
  /** Options for this request, checked against the schema as a frontmatter's are. */
  | { kind: 'options'; ops: ConfigOp[] }
  /** A `:Flemma` command run instead of a send (done in Neovim before the send). */
  | { kind: 'action'; command: string }
  /** An unknown or ambiguous name, or a command that failed: nothing is sent. */
  | { kind: 'error'; message: string };

/** What a send does with the chat's slash commands. */
export interface SlashPlan {
  /** The text each rewriting command's line stands for, by buffer line. */
  texts: Map<number, string>;
  /** The options of the commands in the message being sent, in order. */
  ops: ConfigOp[];
  /** The first problem, with its line: nothing is sent. */
  problem?: string;
}

/** The plan of a send from the registry's answers (`resolutions[i]` answers `uses[i]`). */
export function slashPlan(
  uses: readonly SlashUse[],
  resolutions: readonly SlashResolution[],
): SlashPlan {
  const plan: SlashPlan = { texts: new Map(), ops: [] };
  uses.forEach((use, index) => {
    const resolution = resolutions[index];
    if (plan.problem !== undefined) return;
    if (resolution === undefined) {
      plan.problem = `/${use.name} (line ${String(use.line)}): no answer from the registry`;
    } else if (resolution.kind === 'error') {
      plan.problem = `line ${String(use.line)}: ${resolution.message}`;
    } else if (resolution.kind === 'rewrite') {
      plan.texts.set(use.line, resolution.text);
    } else if (resolution.kind === 'options' && use.last) {
      plan.ops.push(...resolution.ops.map((op) => ({ ...op, line: use.line })));
    }
    // Options of an earlier message were for its own request; an action is run by Neovim.
  });
  return plan;
}
