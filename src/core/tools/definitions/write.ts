// The `write` tool: creates or overwrites a file with the given content.
//
// Decisions:
// - The path is resolved against the chat file's directory (the working directory for an unsaved
//   chat), like `read` and `edit`, so the three tools agree on what `notes.md` means.
// - With the sandbox enabled, the resolved path must be writable under its policy; this check is
//   made here, in the host, because the file is written by the host and not by a sandboxed
//   process. It applies whether or not a sandbox backend is available.
// - The file is opened through `ctx.sandbox.open_for_write`, which walks the path without letting
//   the kernel follow a link: a link swapped by a command running meanwhile cannot move the write
//   out of the writable paths after the check (issue 19). A refusal found that way reads
//   `Sandbox: write denied – <path> leads to <where>, outside writable directories`. The same walk
//   refuses a sensitive place this call was not approved for (a link changed after the approval:
//   `Sensitive place: write denied – …`, issue 28), with the sandbox on or off.
// - Missing parent directories are created (each checked as it is).
// - An empty string is valid content: it creates an empty file or empties an existing one (a
//   model may mean exactly that, e.g. for `__init__.py`). Only content that is not a string at
//   all is refused.
// - The byte count in the reply is the UTF-8 size of the content, which is what lands on disk.
// - The reply names the path as the model wrote it, not the resolved one.

import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';
import { SandboxViolation } from '../sandbox/roots.js';
import { formatSize } from '../truncate.js';
import { builtinTool, needing, textOf } from './builtin.js';

/**
 * The refusal for changing `abs` when the sandbox is enabled and its policy does not allow writing
 * there; undefined when the change may go ahead. `verb` names the tool's action (`write`, `edit`).
 */
function sandboxDenial(
  ctx: ToolContext,
  abs: string,
  path: string,
  verb: string,
): string | undefined {
  if (!ctx.sandbox.enabled || ctx.sandbox.is_path_writable(abs)) return undefined;
  return `Sandbox: ${verb} denied – path is outside writable directories: ${path}`;
}

/**
 * The absolute path a file tool works on: `ctx.path.resolve(path)`, or, when sandbox roots are
 * configured, the path `ctx.sandbox.resolve` confines to them (an escape or a write into a
 * read-only root is an error result).
 */
export async function toolPath(
  ctx: ToolContext,
  path: string,
  write: boolean,
): Promise<{ ok: true; abs: string } | { ok: false; error: string }> {
  if (!ctx.sandbox.confined) return { ok: true, abs: ctx.path.resolve(path) };
  try {
    return { ok: true, abs: await ctx.sandbox.resolve(path, { write }) };
  } catch (err) {
    return { ok: false, error: reasonOf(err) };
  }
}

/**
 * The absolute path a `write` or `edit` call changes (`toolPath` for writing), or the error result:
 * the path cannot be resolved, or the sandbox's policy does not allow writing there.
 */
async function writablePath(
  ctx: ToolContext,
  path: string,
  verb: string,
): Promise<{ ok: true; abs: string } | { ok: false; error: string }> {
  const where = await toolPath(ctx, path, true);
  if (!where.ok) return where;
  const denial = sandboxDenial(ctx, where.abs, path, verb);
  return denial === undefined ? where : { ok: false, error: denial };
}

/**
 * What a `write` or `edit` call writes and where: the string field `key` (empty allowed; "No
 * <key> provided" when it is not a string) and the path's place (`writablePath`), or the error.
 */
export async function writableText(
  ctx: ToolContext,
  path: string,
  verb: string,
  fields: Record<string, unknown>,
  key: string,
): Promise<{ ok: true; abs: string; text: string } | { ok: false; error: string }> {
  const text = fields[key];
  if (typeof text !== 'string') return { ok: false, error: `No ${key} provided` };
  const where = await writablePath(ctx, path, verb);
  return where.ok ? { ...where, text } : where;
}

/** The message of a thrown error, or the thrown value as text. */
export function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function executeWrite(
  path: string,
  fields: Record<string, unknown>,
  ctx: ToolContext,
): Promise<ToolOutcome> {
  const target = await writableText(ctx, path, 'write', fields, 'content');
  if (!target.ok) return target;
  const { abs, text: content } = target;

  try {
    const { handle } = await ctx.sandbox.open_for_write(abs, { mkdir: true });
    try {
      await handle.writeFile(content, 'utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (err instanceof SandboxViolation) return { ok: false, error: err.message };
    return { ok: false, error: `Cannot write file: ${reasonOf(err)}` };
  }
  return {
    ok: true,
    output: `Successfully wrote ${Buffer.byteLength(content, 'utf8')} bytes to ${path}`,
  };
}

export const writeTool: ToolDefinition = builtinTool({
  name: 'write',
  description:
    'Write a file, replacing it completely if it exists; missing parent directories are ' +
    'created. Use edit to change part of an existing file instead of rewriting all of it.',
  why: 'write the file, e.g. "add the test fixture"',
  properties: {
    path: {
      type: 'string',
      description:
        "The file to write: absolute, `~/`-relative, or relative to the chat file's directory.",
    },
    content: {
      type: 'string',
      description: 'The complete new content of the file.',
    },
  },
  label: 'Write file',
  execute: needing('path', executeWrite),
  detail: (input) => {
    const detail = [textOf(input, 'path')];
    const content = input['content'];
    if (typeof content === 'string') {
      detail.push(`(${formatSize(Buffer.byteLength(content, 'utf8'))})`);
    }
    return detail;
  },
});
