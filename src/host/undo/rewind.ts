// The file side of `:Flemma rewind` and `:Flemma retry` (docs/history.md): every tool call of the
// removed messages undone through the undo store, newest first, all or nothing.
//
// Decisions:
// - Everything is checked before any file is touched. The calls are walked newest first, each
//   file's content followed along the way: a call's file must hold exactly what that call left
//   (the file now for the newest call that wrote it, else what the next newer call found there).
//   The first mismatch is a refusal that names the file and the call; nothing is written.
// - Each file is then written once, with what it held before the oldest of the calls that wrote
//   it (the end of undoing them one by one, newest first); a file a call created is removed.
// - Before writing, what each file holds now is read; when a write fails midway, the files
//   already written get that back (and a created file that was removed comes back), so nothing is
//   half undone; the message says so.
// - A call with no record changed no file (or its record was pruned: `tools.undo` bounds it); a
//   call already undone (`:Flemma tool:undo`) is passed over; a call whose record could not be
//   written, or whose content before was not kept, is a refusal.
import { unlink } from 'node:fs/promises';
import { TOOL_READ_LIMIT_BYTES, readBounded } from '../../core/util/bounded-read.js';
import { SandboxViolation } from '../../core/tools/sandbox/roots.js';
import { type UndoDoor, refusedPath } from './service.js';
import { type UndoRecord, type UndoStore, contentHash, currentHash } from './store.js';

/** The records of the calls to undo, and what each file gets back. */
export interface UndoPlan {
  records: { id: string; record: UndoRecord }[];
  /** path → the content it gets back (base64), or null: the file goes. In the order found. */
  writes: Map<string, string | null>;
}

/** Why a rewind cannot undo its calls; `diff`: the file and the call to show, when one changed. */
export interface UndoRefusal {
  message: string;
  diff?: { id: string; name: string; path: string; before: string | null };
}

export interface PlanInput {
  store: UndoStore;
  key: string;
  /** The calls, newest first. */
  calls: readonly { id: string; name: string }[];
  /** Why a call's record could not be written, if it could not. */
  unrecorded: (id: string) => string | undefined;
}

/** Checks every call's files (see the decisions above): the plan, or the refusal. */
export async function planUndo(input: PlanInput): Promise<UndoPlan | UndoRefusal> {
  const { store, key, calls } = input;
  const seen = new Map<string, string | null>();
  const plan: UndoPlan = { records: [], writes: new Map() };
  for (const call of calls) {
    const record = await store.load(key, call.id);
    const failed = input.unrecorded(call.id);
    if (record === undefined && failed !== undefined) {
      return {
        message: `${call.name} (${call.id}) changed files without an undo record (${failed}); nothing was rewound`,
      };
    }
    if (record === undefined || record.undone !== undefined) continue;
    for (const file of record.files) {
      if (file.skipped !== undefined || file.before === undefined) {
        return {
          message: `what ${file.path} held before ${call.id} was not kept (${file.skipped ?? 'unknown'}); nothing was rewound`,
        };
      }
      const expected = seen.has(file.path)
        ? seen.get(file.path)
        : await currentHash(file.path).catch(() => 'unreadable');
      if (expected !== file.after) {
        return {
          message: `${file.path} changed since ${call.name} (${call.id}) wrote it; nothing was rewound`,
          diff: { id: call.id, name: call.name, path: file.path, before: file.before },
        };
      }
      const before = file.before === null ? null : Buffer.from(file.before, 'base64');
      seen.set(file.path, before === null ? null : contentHash(before));
      plan.writes.set(file.path, file.before);
    }
    plan.records.push({ id: call.id, record });
  }
  return plan;
}

/**
 * What a file holds now (null: no file), to put back if the undo fails midway; read as every
 * file a model pointed at is (only a regular file, bounded): a larger one refuses the rewind.
 */
async function saved(path: string): Promise<Buffer | null> {
  try {
    return (await readBounded(path, { maxBytes: TOOL_READ_LIMIT_BYTES })).data;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return null;
    throw error;
  }
}

async function put(door: UndoDoor, path: string, content: Buffer | null): Promise<void> {
  if (content === null) {
    await unlink(path).catch((error: unknown) => {
      if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
    });
    return;
  }
  const { handle } = await door.open_for_write(path, { mkdir: true });
  try {
    await handle.truncate(0);
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The plan written: `takeBack` gives every file what it held before (when the rest fails). */
export type Applied = { failure: string } | { takeBack: () => Promise<string> };

/**
 * Writes the plan's files through `door`; when one fails, the ones written get back what they
 * held, and `failure` says so.
 */
export async function applyUndo(door: UndoDoor, plan: UndoPlan): Promise<Applied> {
  const paths = [...plan.writes.keys()];
  const now = new Map<string, Buffer | null>();
  try {
    const refused = await refusedPath(door, paths);
    if (refused !== undefined) return { failure: refused };
    for (const path of paths) now.set(path, await saved(path));
  } catch (error) {
    const text = error instanceof SandboxViolation ? error.message : reason(error);
    return { failure: `${text}; nothing was restored` };
  }
  const written: string[] = [];
  for (const [path, before] of plan.writes) {
    try {
      await put(door, path, before === null ? null : Buffer.from(before, 'base64'));
      written.push(path);
    } catch (error) {
      return {
        failure: `restoring ${path} failed (${reason(error)}); ${await rollBack(door, written, now)}`,
      };
    }
  }
  return { takeBack: () => rollBack(door, written, now) };
}

/** The files of `written` get back what they held (`now`); says how that went. */
async function rollBack(
  door: UndoDoor,
  written: readonly string[],
  now: ReadonlyMap<string, Buffer | null>,
): Promise<string> {
  const failed: string[] = [];
  for (const path of [...written].reverse()) {
    await put(door, path, now.get(path) ?? null).catch(() => failed.push(path));
  }
  if (written.length === 0) return 'nothing was restored';
  return failed.length === 0
    ? `the ${String(written.length)} file(s) restored before it were put back as they were; nothing was rewound`
    : `putting back ${failed.join(', ')} failed too: check them (:Flemma review)`;
}
