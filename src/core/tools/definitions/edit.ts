// The `edit` tool: replaces one exact piece of text in an existing file.
//
// Decisions:
// - `oldText` is a plain substring, never a pattern, and must occur exactly once. Occurrences are
//   counted overlapping (`aa` occurs twice in `aaa`), since either one could be the one meant.
// - The replacement is spliced in by position, so `$&`, `$1` and the like in `newText` are kept
//   literally (String.prototype.replace would expand them).
// - Nothing is normalised: line endings, a byte-order mark and trailing whitespace must match
//   as they are in the file.
// - An edit that would leave the file as it was is refused, so the model notices that it did
//   not change anything.
// - An empty `newText` is valid (it deletes `oldText`); a `newText` that is not a string is
//   refused, since guessing what was meant could destroy text.
// - The sandbox check comes before the file is looked at, so a denied path reveals nothing about
//   whether it exists.
// - The file is read and rewritten through one handle from `ctx.sandbox.open_for_write`, so a
//   link swapped meanwhile cannot send the new text out of the writable paths (see write.ts).
// - At most `TOOL_READ_LIMIT_BYTES` (16 MiB) of the file are read (src/core/util/bounded-read.ts):
//   a larger file is refused before anything is written.

import { type FileHandle, stat } from 'node:fs/promises';

import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';
import { SandboxViolation } from '../sandbox/roots.js';
import { FileReadError, TOOL_READ_LIMIT_BYTES, readHandle } from '../../util/bounded-read.js';
import { builtinTool, needing, stringField, textOf } from './builtin.js';
import { reasonOf, writableText } from './write.js';

/** How many times `needle` occurs in `haystack`, overlapping occurrences included. */
export function countOccurrences(haystack: string, needle: string): number {
  if (needle === '') return 0;
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    count++;
  }
  return count;
}

async function executeEdit(
  path: string,
  fields: Record<string, unknown>,
  ctx: ToolContext,
): Promise<ToolOutcome> {
  const oldText = stringField(fields, 'oldText');
  if (oldText === undefined) return { ok: false, error: 'No oldText provided' };
  const target = await writableText(ctx, path, 'edit', fields, 'newText');
  if (!target.ok) return target;
  const { abs, text: newText } = target;

  try {
    if (!(await stat(abs)).isFile()) return { ok: false, error: `Not a regular file: ${path}` };
  } catch {
    return { ok: false, error: `File not found: ${path}` };
  }
  let handle: FileHandle;
  try {
    handle = (await ctx.sandbox.open_for_write(abs, { update: true })).handle;
  } catch (err) {
    if (err instanceof SandboxViolation) return { ok: false, error: err.message };
    return { ok: false, error: `Cannot read file: ${reasonOf(err)}` };
  }
  try {
    return await editThrough(handle, path, oldText, newText);
  } finally {
    await handle.close();
  }
}

/** Reads the file through `handle`, replaces the one occurrence, and writes it back. */
async function editThrough(
  handle: FileHandle,
  path: string,
  oldText: string,
  newText: string,
): Promise<ToolOutcome> {
  let before: string;
  try {
    before = (
      await readHandle(handle, { maxBytes: TOOL_READ_LIMIT_BYTES, name: path })
    ).data.toString('utf8');
  } catch (err) {
    if (err instanceof FileReadError) return { ok: false, error: err.message };
    return { ok: false, error: `Cannot read file: ${reasonOf(err)}` };
  }

  const count = countOccurrences(before, oldText);
  if (count === 0) {
    return {
      ok: false,
      error:
        `Could not find the exact text in ${path}. The old text must match exactly including ` +
        'all whitespace and newlines.',
    };
  }
  if (count > 1) {
    return {
      ok: false,
      error:
        `Found ${count} occurrences of the text in ${path}. The text must be unique. Please ` +
        'provide more context to make it unique.',
    };
  }

  const at = before.indexOf(oldText);
  const after = before.slice(0, at) + newText + before.slice(at + oldText.length);
  if (after === before) {
    return {
      ok: false,
      error: `No changes made to ${path}. The replacement produced identical content.`,
    };
  }
  try {
    const bytes = Buffer.from(after, 'utf8');
    await handle.truncate(0);
    await handle.write(bytes, 0, bytes.length, 0);
  } catch (err) {
    return { ok: false, error: `Cannot write file: ${reasonOf(err)}` };
  }
  return { ok: true, output: `Successfully replaced text in ${path}.` };
}

export const editTool: ToolDefinition = builtinTool({
  name: 'edit',
  description:
    'Edit a file by replacing one exact piece of text. oldText must appear exactly once in the ' +
    'file, matching character for character (whitespace, indentation and newlines included); ' +
    'include a few surrounding lines when a short snippet is not unique. To make several ' +
    'changes, call edit once per change.',
  why: 'edit the file, e.g. "fix the off-by-one"',
  properties: {
    path: {
      type: 'string',
      description:
        "The file to edit: absolute, `~/`-relative, or relative to the chat file's directory.",
    },
    oldText: {
      type: 'string',
      description: 'The text to replace, copied exactly from the file; it must be unique there.',
    },
    newText: {
      type: 'string',
      description: 'The text to put in its place (empty to delete it).',
    },
  },
  label: 'Edit file',
  execute: needing('path', executeEdit),
  detail: (input) => [textOf(input, 'path')],
});
