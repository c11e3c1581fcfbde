// A send's slash commands (docs/slash-commands.md): the registry in Neovim says what each one
// is (`slash.resolve`: one round trip, only for a chat that has any), the rewrites become the
// text their lines stand for, and the options of the message being sent are applied over the
// buffer's configuration for this request only, checked and judged by trust as a frontmatter's.
import { parseConfig } from '../../core/config/config.js';
import type { ChatDocument } from '../../core/chat/ast.js';
import { type SlashPlan, slashPlan, slashUses } from '../../core/chat/slash.js';
import { applyFrontmatter, type ToolNames } from '../../core/config/frontmatter.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { BufferSettings } from '../buffer-settings.js';
import { refusedKeyMessage } from '../trust-check.js';

/** The plan of the chat's slash commands; undefined when it has none. */
export async function resolveSlash(
  lua: Pick<LuaBridge, 'call'>,
  bufnr: number,
  document: ChatDocument,
): Promise<SlashPlan | undefined> {
  const uses = slashUses(document);
  if (uses.length === 0) return undefined;
  try {
    const answer = await lua.call('slash.resolve', { bufnr, commands: uses });
    // NOTE: an empty Lua table arrives as an array or an object.
    return slashPlan(uses, Array.isArray(answer.results) ? answer.results : []);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { texts: new Map(), ops: [], problem: `slash commands: ${message}` };
  }
}

/**
 * The buffer's settings with the options of the slash commands applied over them (a new
 * object: the held settings stay as they are), or the problem. An option the file's trust does
 * not allow is a problem here, not a silent omission: the user asked for it in this message.
 */
export function withSlashOptions(
  editor: BufferSettings,
  plan: SlashPlan,
  tools: ToolNames,
): { settings: BufferSettings } | { problem: string } {
  if (plan.ops.length === 0) return { settings: editor };
  const applied = applyFrontmatter(editor.config.data, plan.ops, tools, editor.trust);
  if (applied.error !== undefined) {
    return { problem: applied.error.replace(/^frontmatter line/, 'slash command on line') };
  }
  const refused = applied.refused[0];
  if (refused !== undefined) {
    return { problem: `line ${String(refused.line)}: ${refusedKeyMessage(refused.key)}` };
  }
  return { settings: { ...editor, config: parseConfig(applied.config) } };
}
