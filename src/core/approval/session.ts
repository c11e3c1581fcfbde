// Session approvals (docs/approval.md, "Always, YOLO and cancel"): "always" approvals and YOLO mode, each a resolver
// of the chain in chain.ts, over state the host keeps per buffer for the session.
//
//   95  urn:flemma:approval:session  a call the user approved "always" in this buffer
//   92  urn:flemma:approval:yolo     YOLO mode on in this buffer: approve, except tools that
//                                    declare neverAutoApprove (those fall through)
//
// Decisions (see docs/approval.md, "Always and YOLO"):
// - The state lives in the host, per buffer, and is not written anywhere: closing Neovim (or
//   restarting the host, or wiping the buffer) forgets it. A `.chat` file that wants lasting
//   approvals says so in its frontmatter (`flemma.opt.tools.auto_approve`, `tools.yolo`).
// - An "always" approval is keyed by the tool's name, or by name and command string when the
//   tool asks for per-command approval (`requireCmdApproval`; the built-in `bash` does). The
//   command string is the tool's `cmdString(input)`; a tool without one is keyed by its input as
//   JSON, so that only the very same call is approved again.
// - Both resolvers only ever approve or pass: they never ask and never deny, so a policy deny at
//   200 and a config deny at 100 still win, and whatever they pass goes on down the chain.
// - YOLO is the buffer's toggle when it has one, else `tools.yolo` from the configuration or the
//   buffer's frontmatter.

import type { ResolverDefinition, ToolCall } from './chain.js';

export const SESSION_RESOLVER = 'urn:flemma:approval:session';
export const YOLO_RESOLVER = 'urn:flemma:approval:yolo';

export const SESSION_PRIORITY = { session: 95, yolo: 92 } as const;

/** What the session resolvers need to know about a tool. */
export interface SessionTool {
  /** "Always" is remembered per command string rather than for the whole tool. */
  requireCmdApproval?: boolean | undefined;
  /** YOLO mode does not approve this tool (CodeCompanion's `allowed_in_yolo_mode = false`). */
  neverAutoApprove?: boolean | undefined;
  /** The command a call runs, as the user would read it (CodeCompanion's `output.cmd_string`). */
  cmdString?: ((input: unknown, ctx: { bufnr: number; toolId: string }) => unknown) | undefined;
}

export type SessionLookup = (name: string) => SessionTool | undefined;

/** One remembered "always": a tool, or a tool and one command. */
export interface AlwaysEntry {
  tool: string;
  command?: string;
}

function keyOf(entry: AlwaysEntry): string {
  return entry.command === undefined ? entry.tool : `${entry.tool}\u0000${entry.command}`;
}

/** How an entry reads in a listing: `read`, or `bash: ls -la`. */
export function describeEntry(entry: AlwaysEntry): string {
  return entry.command === undefined ? entry.tool : `${entry.tool}: ${entry.command}`;
}

/** Per-buffer session state: the "always" approvals and the YOLO toggle. */
export class SessionApprovals {
  private readonly always = new Map<number, Map<string, AlwaysEntry>>();
  private readonly yoloState = new Map<number, boolean>();

  /** Remembers an entry; `false` when it was already there. */
  remember(bufnr: number, entry: AlwaysEntry): boolean {
    let entries = this.always.get(bufnr);
    if (entries === undefined) {
      entries = new Map();
      this.always.set(bufnr, entries);
    }
    const key = keyOf(entry);
    if (entries.has(key)) return false;
    entries.set(key, { ...entry });
    return true;
  }

  has(bufnr: number, entry: AlwaysEntry): boolean {
    return this.always.get(bufnr)?.has(keyOf(entry)) === true;
  }

  /** The buffer's entries, in the order they were added (copies). */
  list(bufnr: number): AlwaysEntry[] {
    return [...(this.always.get(bufnr)?.values() ?? [])].map((entry) => ({ ...entry }));
  }

  /** Forgets the buffer's entries (only those of `tool` when given); returns how many went. */
  forget(bufnr: number, tool?: string): number {
    const entries = this.always.get(bufnr);
    if (entries === undefined) return 0;
    let removed = 0;
    for (const [key, entry] of entries) {
      if (tool === undefined || entry.tool === tool) {
        entries.delete(key);
        removed += 1;
      }
    }
    if (entries.size === 0) this.always.delete(bufnr);
    return removed;
  }

  /** The buffer's YOLO toggle; `undefined` when the user has not set it this session. */
  yolo(bufnr: number): boolean | undefined {
    return this.yoloState.get(bufnr);
  }

  setYolo(bufnr: number, on: boolean): void {
    this.yoloState.set(bufnr, on);
  }

  /** Everything the buffer had (it was wiped). */
  clear(bufnr: number): void {
    this.always.delete(bufnr);
    this.yoloState.delete(bufnr);
  }
}

/**
 * The key an "always" for this call is remembered under: the tool alone, or the tool and its
 * command when the tool wants per-command approval. `cmdString` may be asynchronous (a Lua tool's
 * is called over RPC) and may throw (the caller decides what that means).
 */
export async function alwaysEntryFor(call: ToolCall, lookup: SessionLookup): Promise<AlwaysEntry> {
  const tool = lookup(call.toolName);
  if (tool?.requireCmdApproval !== true) return { tool: call.toolName };
  let command: unknown;
  if (tool.cmdString !== undefined) {
    command = await tool.cmdString(call.input, { bufnr: call.bufnr, toolId: call.toolId });
  }
  if (typeof command !== 'string' || command === '') {
    command = JSON.stringify(call.input ?? {});
  }
  return { tool: call.toolName, command: command as string };
}

/** `urn:flemma:approval:session`: approves what the user approved "always" in this buffer. */
export function sessionResolver(
  session: SessionApprovals,
  lookup: SessionLookup,
): ResolverDefinition<unknown> {
  return {
    priority: SESSION_PRIORITY.session,
    description: 'calls approved "always" in this buffer (:Flemma tool:approve-always)',
    resolve: async (call, _context, note) => {
      if (session.list(call.bufnr).length === 0) return undefined;
      const entry = await alwaysEntryFor(call, lookup);
      if (!session.has(call.bufnr, entry)) return undefined;
      note(`approved "always" in this buffer: ${describeEntry(entry)}`);
      return 'approve';
    },
  };
}

/**
 * `urn:flemma:approval:yolo`: approves every call while the buffer is in YOLO mode, except those
 * of tools that declare `neverAutoApprove`. `configured` is `tools.yolo` for the buffer.
 */
export function yoloResolver(
  session: SessionApprovals,
  lookup: SessionLookup,
  configured: boolean,
): ResolverDefinition<unknown> {
  return {
    priority: SESSION_PRIORITY.yolo,
    description: 'YOLO mode (:Flemma tool:yolo, tools.yolo); not for neverAutoApprove tools',
    resolve: (call, _context, note) => {
      const on = session.yolo(call.bufnr) ?? configured;
      if (!on) return undefined;
      if (lookup(call.toolName)?.neverAutoApprove === true) {
        note(`YOLO mode is on, but '${call.toolName}' is never approved automatically`);
        return undefined;
      }
      note('approved by YOLO mode');
      return 'approve';
    },
  };
}
