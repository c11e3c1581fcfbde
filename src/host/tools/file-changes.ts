// The `+N −M` of each pending `write` and `edit` in a buffer: what the call would leave compared
// with the file as it is now. Files are read off the editor's path (never while a preview is
// drawn): `refresh` reads them after a parse and asks for the previews again when a count changed,
// so a file changed on disk updates its count at the next parse of the chat.
//
// Decisions:
// - The path resolves as the tool resolves it (the chat file's directory, else the working
//   directory); with sandbox roots configured the tool may confine it elsewhere, and the count is
//   then that of the unconfined path. Only the counts are shown, never the file's text.
// - Files are read through the bounded reader (src/core/util/bounded-read.ts): a path that is not
//   a regular file (`/dev/zero`, a FIFO) or is over the limit is never read whole; its preview
//   says why instead of a count. A file that cannot be read for another reason gets no count.
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { dirname } from 'node:path';

import { resolveAgainst } from '../../core/tools/context.js';
import {
  changeSummary,
  FILE_CHANGING_TOOLS,
  proposedContent,
} from '../../core/tools/file-change.js';
import {
  FileReadError,
  type FileReadProblem,
  readTextBounded,
} from '../../core/util/bounded-read.js';
import type { EditorFacts } from '../../editor/protocol/wire.js';

/** One pending call as the previews see it. */
export interface PendingCall {
  tool_id: string;
  name: string;
  input: unknown;
  /** The whole file the call would write, when its tool says (a declarative `file_write`). */
  write?: { path: string; content: string } | undefined;
}

interface Entry {
  /** The call's name and input the summary was computed for. */
  key: string;
  summary: string;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Where a file tool's `path` leads, as the tool resolves it without sandbox roots. */
export function callPath(facts: EditorFacts, path: string): string {
  const base = facts.filename === null ? facts.cwd : dirname(facts.filename);
  return resolveAgainst(base, path, homedir());
}

/** A short fingerprint of a file's text (`undefined`: no file). */
export function fingerprint(text: string | undefined): string {
  return text === undefined ? 'missing' : createHash('sha256').update(text).digest('hex');
}

/** A file's text (`undefined`: no file), or why it was not read. */
export type FileText =
  { ok: true; text: string | undefined } | { ok: false; error: string; problem?: FileReadProblem };

/**
 * The file's text, bounded (`name` is how messages name it): `undefined` when it does not exist;
 * a path that is not a regular file, is over the limit or cannot be read gives the reason.
 */
export async function readText(path: string, name = path): Promise<FileText> {
  try {
    return { ok: true, text: await readTextBounded(path, { name }) };
  } catch (err) {
    if (err instanceof FileReadError)
      return { ok: false, error: err.message, problem: err.problem };
    const reason = (err as NodeJS.ErrnoException).code ?? String(err);
    return { ok: false, error: `Cannot read ${name} (${reason})` };
  }
}

/** What a preview says instead of a count when the limits kept the file from being read. */
const PREVIEW_REASONS: Partial<Record<FileReadProblem, string>> = {
  'not-regular': '(not a regular file)',
  'too-large': '(too large to compare)',
};

export class FileChanges {
  private readonly entries = new Map<number, Map<string, Entry>>();
  /** Buffers being read, and whether another refresh was asked meanwhile. */
  private readonly running = new Map<number, boolean>();
  /** The fingerprint of each pending call's file when its count was first computed. */
  private readonly seen = new Map<number, Map<string, string>>();

  constructor(
    private readonly facts: (bufnr: number) => Promise<EditorFacts>,
    private readonly changed: (bufnr: number) => void,
  ) {}

  /** Whether `name` gets a count. */
  static covers(name: string): boolean {
    return FILE_CHANGING_TOOLS.has(name);
  }

  /** The count last computed for this call, when its input has not changed since. */
  summary(bufnr: number, call: PendingCall): string | undefined {
    const entry = this.entries.get(bufnr)?.get(call.tool_id);
    return entry?.key === keyOf(call) ? entry.summary : undefined;
  }

  /** Read the files of `calls` again (in the background) and report a changed count. */
  refresh(bufnr: number, calls: PendingCall[]): void {
    const wanted = calls.filter(
      (call) => call.write !== undefined || FileChanges.covers(call.name),
    );
    if (wanted.length === 0 && !this.entries.has(bufnr)) return;
    if (this.running.has(bufnr)) {
      this.running.set(bufnr, true);
      return;
    }
    this.running.set(bufnr, false);
    void this.compute(bufnr, wanted)
      .catch(() => false)
      .then((different) => {
        const again = this.running.get(bufnr) === true;
        this.running.delete(bufnr);
        if (different || again) this.changed(bufnr);
      });
  }

  /** The fingerprint of the call's file when the host first counted its change. */
  firstSeen(bufnr: number, toolId: string): string | undefined {
    return this.seen.get(bufnr)?.get(toolId);
  }

  forget(bufnr: number): void {
    this.entries.delete(bufnr);
    this.seen.delete(bufnr);
  }

  private async compute(bufnr: number, calls: PendingCall[]): Promise<boolean> {
    const next = new Map<string, Entry>();
    const seen = new Map<string, string>();
    const known = this.seen.get(bufnr);
    if (calls.length > 0) {
      const facts = await this.facts(bufnr);
      for (const call of calls) {
        const input = asRecord(call.input);
        const path = call.write?.path ?? input?.['path'];
        if (input === undefined || typeof path !== 'string' || path === '') continue;
        const read = await readText(callPath(facts, path), path);
        if (!read.ok) {
          const reason = read.problem === undefined ? undefined : PREVIEW_REASONS[read.problem];
          if (reason !== undefined) next.set(call.tool_id, { key: keyOf(call), summary: reason });
          continue;
        }
        const before = read.text;
        seen.set(call.tool_id, known?.get(call.tool_id) ?? fingerprint(before));
        const proposal =
          call.write === undefined
            ? proposedContent(call.name, input, before)
            : { ok: true as const, after: call.write.content };
        if (proposal === undefined) continue;
        next.set(call.tool_id, { key: keyOf(call), summary: changeSummary(proposal, before) });
      }
    }
    if (seen.size === 0) this.seen.delete(bufnr);
    else this.seen.set(bufnr, seen);
    const old = this.entries.get(bufnr);
    if (next.size === 0) this.entries.delete(bufnr);
    else this.entries.set(bufnr, next);
    return !sameEntries(old, next);
  }
}

function keyOf(call: PendingCall): string {
  return JSON.stringify([call.name, call.input, call.write ?? null]);
}

function sameEntries(a: Map<string, Entry> | undefined, b: Map<string, Entry>): boolean {
  if ((a?.size ?? 0) !== b.size) return false;
  for (const [id, entry] of b) {
    const other = a?.get(id);
    if (other?.key !== entry.key || other.summary !== entry.summary) return false;
  }
  return true;
}
