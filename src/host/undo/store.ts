// The undo store: what each file-changing tool call found in the files it wrote, kept in
// `stdpath("state")/flemma/undo/`, one JSON record per call, so that `:Flemma tool:undo` can put a
// file back and `:Flemma review` can show what a turn changed.
//
// Decisions (docs/tools.md, "Undo and review"):
// - A record is keyed by the chat (a hash of its file's path; an unsaved buffer by its number) and
//   the tool id: the same id in two chats never meets.
// - Besides the content before, a record keeps a hash of the content the call left: undo puts a
//   file back only while it still holds exactly that, so a later change (by the user, another call
//   or another program) is never thrown away silently.
// - Bounds apply when a record is written (the only moment the store grows): records older than
//   `max_age_days` go, then the oldest until all fit in `max_total_bytes`. The one just written
//   is kept even when it alone is over the total, so the last call can always be undone.
// - Records are written with mode 0600 in a 0700 directory: they hold file contents.
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BeforeWrite } from '../../core/tools/context.js';
import { hashFile } from '../../core/util/bounded-read.js';

/** `tools.undo`. */
export interface UndoLimits {
  enabled: boolean;
  max_bytes: number;
  max_total_bytes: number;
  max_age_days: number;
}

export const UNDO_DEFAULTS: UndoLimits = {
  enabled: true,
  max_bytes: 1048576,
  max_total_bytes: 52428800,
  max_age_days: 14,
};

/** One file of a record. */
export interface UndoFile {
  path: string;
  /** The content before, base64; null: the file did not exist. Absent when `skipped`. */
  before?: string | null;
  /** sha256 of what the call left; null: no file there after the call. */
  after: string | null;
  /** Why the content before was not kept (too large, not readable). */
  skipped?: string;
}

export interface UndoRecord {
  version: 1;
  tool_id: string;
  chat: string | null;
  created: number;
  /** When the call was undone (ms since the epoch). */
  undone?: number;
  files: UndoFile[];
}

/** The options `tools.undo` carries in a configuration (missing or wrong values: defaults). */
export function undoLimits(raw: unknown): UndoLimits {
  const table =
    typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : undefined;
  const pick = (name: keyof UndoLimits): number => {
    const value = table?.[name];
    return typeof value === 'number' && value >= 0 ? value : (UNDO_DEFAULTS[name] as number);
  };
  return {
    enabled: table?.['enabled'] !== false,
    max_bytes: pick('max_bytes'),
    max_total_bytes: pick('max_total_bytes'),
    max_age_days: pick('max_age_days'),
  };
}

/** sha256 of `content`, hex. */
export function contentHash(content: Buffer | string): string {
  return createHash('sha256').update(content).digest('hex');
}

/**
 * What is at `path` now: its hash, or null when there is no file. Read in pieces, and only a
 * regular file (src/core/util/bounded-read.ts): anything else throws.
 */
export function currentHash(path: string): Promise<string | null> {
  return hashFile(path);
}

/** The key of a chat: its file's path, or the buffer number of an unsaved chat. */
export function chatKey(filename: string | null, bufnr: number): string {
  return createHash('sha256')
    .update(filename ?? `unsaved-buffer:${String(bufnr)}`)
    .digest('hex')
    .slice(0, 16);
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The record of a call that found `journal`; `hashAfter`: with the hash of each file now. */
async function recordOf(
  chatFile: string | null,
  toolId: string,
  journal: ReadonlyMap<string, BeforeWrite>,
  now: number,
  hashAfter: boolean,
): Promise<UndoRecord> {
  const files: UndoFile[] = [];
  for (const [path, before] of journal) {
    const after = hashAfter ? await currentHash(path).catch(() => null) : null;
    if (before.kind === 'skipped') files.push({ path, after, skipped: before.reason });
    else {
      files.push({
        path,
        after,
        before: before.kind === 'absent' ? null : before.content.toString('base64'),
      });
    }
  }
  return { version: 1, tool_id: toolId, chat: chatFile, created: now, files };
}

export class UndoStore {
  /** `dir`: the store's directory (`<stdpath("state")>/flemma/undo`). */
  constructor(readonly dir: string) {}

  private fileOf(chat: string, toolId: string): string {
    // Tool ids come from the model or the chat: only safe characters reach the file name.
    const safeId = toolId.replace(/[^A-Za-z0-9_-]/g, '_');
    return join(this.dir, `${chat}-${safeId}.json`);
  }

  /**
   * Records what the call `toolId` found (`journal`) and left in each file, then applies the
   * bounds. Nothing is written when the journal is empty.
   */
  async record(
    chat: string,
    chatFile: string | null,
    toolId: string,
    journal: ReadonlyMap<string, BeforeWrite>,
    limits: UndoLimits,
    now = Date.now(),
  ): Promise<void> {
    if (journal.size === 0) return;
    const record = await recordOf(chatFile, toolId, journal, now, true);
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const target = this.fileOf(chat, toolId);
    await this.write(target, record);
    await this.prune(limits, now, target);
  }

  /**
   * Whether the record of a call that would find `journal` can be written now: a record of the
   * same size is written beside the others and removed again. Throws what writing it threw (a
   * full disk, a directory that is not writable).
   */
  async probe(
    chat: string,
    chatFile: string | null,
    toolId: string,
    journal: ReadonlyMap<string, BeforeWrite>,
  ): Promise<void> {
    if (journal.size === 0) return;
    const record = await recordOf(chatFile, toolId, journal, Date.now(), false);
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const temp = `${this.fileOf(chat, toolId)}.${String(process.pid)}.probe`;
    try {
      // The record's `after` hashes are not known yet: the room they take is reserved.
      await writeFile(temp, JSON.stringify(record) + ' '.repeat(80 * journal.size), {
        mode: 0o600,
      });
    } finally {
      await unlink(temp).catch(() => undefined);
    }
  }

  /** Writes a record whole (through a temporary file, so a reader never sees half of one). */
  private async write(target: string, record: UndoRecord): Promise<void> {
    const temp = `${target}.${String(process.pid)}.tmp`;
    await writeFile(temp, JSON.stringify(record), { mode: 0o600 });
    await rename(temp, target);
  }

  async load(chat: string, toolId: string): Promise<UndoRecord | undefined> {
    try {
      // Read from disk: its shape is checked, not assumed.
      const parsed = JSON.parse(await readFile(this.fileOf(chat, toolId), 'utf8')) as unknown;
      if (typeof parsed !== 'object' || parsed === null) return undefined;
      const record = parsed as Partial<UndoRecord>;
      return record.version === 1 && Array.isArray(record.files)
        ? (record as UndoRecord)
        : undefined;
    } catch {
      return undefined;
    }
  }

  async markUndone(
    chat: string,
    toolId: string,
    record: UndoRecord,
    now = Date.now(),
  ): Promise<void> {
    await this.write(this.fileOf(chat, toolId), { ...record, undone: now });
  }

  /**
   * Removes the records past `max_age_days`, then the oldest until the rest fit in
   * `max_total_bytes`; `keep` (the record just written) stays. Age is the file's modification time.
   */
  async prune(limits: UndoLimits, now = Date.now(), keep?: string): Promise<string[]> {
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter((name) => name.endsWith('.json'));
    } catch {
      return [];
    }
    const entries: { path: string; size: number; mtime: number }[] = [];
    for (const name of names) {
      const path = join(this.dir, name);
      try {
        const info = await stat(path);
        entries.push({ path, size: info.size, mtime: info.mtimeMs });
      } catch {
        // Removed meanwhile (another Neovim pruning the same store).
      }
    }
    const removed: string[] = [];
    const remove = async (path: string): Promise<void> => {
      await unlink(path).catch(() => undefined);
      removed.push(path);
    };
    let live = entries;
    if (limits.max_age_days > 0) {
      const oldest = now - limits.max_age_days * DAY_MS;
      for (const entry of entries) {
        if (entry.mtime < oldest && entry.path !== keep) await remove(entry.path);
      }
      live = entries.filter((entry) => !removed.includes(entry.path));
    }
    if (limits.max_total_bytes > 0) {
      let total = live.reduce((sum, entry) => sum + entry.size, 0);
      for (const entry of [...live].sort((a, b) => a.mtime - b.mtime)) {
        if (total <= limits.max_total_bytes) break;
        if (entry.path === keep) continue;
        await remove(entry.path);
        total -= entry.size;
      }
    }
    return removed;
  }
}
