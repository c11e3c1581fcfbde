// `:Flemma tool:undo` and the recording behind it: after a call that opened files for writing
// ran, the executor hands its journal here; the command puts the files back and marks the result.
//
// Decisions (docs/tools.md, "Undo and review"):
// - Undo writes only the paths the call itself wrote (the journal notes a path only once the
//   policy allowed it), and through the same door as the tools, under the policy in force now
//   (`ctx.sandbox.open_for_write`: the write policy, the roots, no link swapped on the way): a
//   sandbox enabled since the call can refuse an undo, with its own message.
// - All the call's files are checked before any is touched: either every file is put back, or
//   none is and the message names the one that changed since.
// - A file the call created is removed again; a file it removed (none of the built-ins does) is
//   written back.
import { dirname, isAbsolute, join, relative } from 'node:path';
import type { ChatDocument } from '../../core/chat/ast.js';
import { type GitState, changedSince, gitState } from './git.js';
import { unlink } from 'node:fs/promises';
import { readTextBounded } from '../../core/util/bounded-read.js';
import { homedir } from 'node:os';
import type { EditorFacts } from '../../editor/protocol/wire.js';
import type { DiffSpec } from '../../editor/protocol/review.js';
import {
  type PathConfinement,
  type SandboxAccess,
  WriteJournal,
  confine,
} from '../../core/tools/context.js';
import { SandboxViolation } from '../../core/tools/sandbox/roots.js';
import { type WriteGate, sensitiveGate } from '../../core/tools/sandbox/gate.js';
import { resolveReal } from '../../core/tools/sandbox/paths.js';
import { sensitiveEntries } from '../../core/tools/sandbox/sensitive.js';
import type { BufferSettings } from '../buffer-settings.js';
import { sandboxFor } from '../sandbox.js';
import { rootsFor, withRootPaths } from '../tool-extras.js';
import { markUndone } from '../../core/chat/undone.js';
import { markWriteUndone, undoTarget } from '../../core/acp/writes.js';
import {
  type ReviewCall,
  type ReviewScope,
  callsInScope,
  startsTurn,
} from '../../core/chat/review.js';
import type { HostBase } from '../base.js';
import type { ResultWriter } from '../tools/results.js';
import { type UndoLimits, UndoStore, chatKey, currentHash, undoLimits } from './store.js';

/** The store of Neovim's state directory; undefined when Neovim did not say where that is. */
export function storeFor(facts: Pick<EditorFacts, 'editor_dirs'>): UndoStore | undefined {
  const state = facts.editor_dirs?.state;
  return state === undefined || state === ''
    ? undefined
    : new UndoStore(join(state, 'flemma', 'undo'));
}

/**
 * Where the review's git runs make their clean git directory: Neovim's state directory, which
 * sandboxed commands cannot see; undefined (no git run) when Neovim did not say where that is.
 */
function gitScratch(facts: Pick<EditorFacts, 'editor_dirs'>): string | undefined {
  const state = facts.editor_dirs?.state;
  return state === undefined || state === '' ? undefined : join(state, 'flemma', 'git');
}

/** The git state of the chat's repository now; undefined when there is none to note. */
function gitStateFor(
  facts: Pick<EditorFacts, 'filename' | 'cwd' | 'editor_dirs'>,
): Promise<GitState | undefined> {
  const scratch = gitScratch(facts);
  return scratch === undefined ? Promise.resolve(undefined) : gitState(chatDir(facts), scratch);
}

/** The chat file's directory, else Neovim's working directory. */
function chatDir(facts: Pick<EditorFacts, 'filename' | 'cwd'>): string {
  return facts.filename === null ? facts.cwd : dirname(facts.filename);
}

/**
 * The diff view of a call that ran (`view_only`): what `path` held before it (`before`, base64;
 * null: no file) beside the file `now`; the path shown relative to `base` when it is under it.
 */
export function ranDiff(
  of: {
    bufnr: number;
    call: { id: string; name: string };
    path: string;
    base: string;
    before: string | null;
    now: string | undefined;
  },
  notice: string,
): DiffSpec {
  const { bufnr, call, path, before, now } = of;
  const shown = relative(of.base, path);
  return {
    bufnr,
    tool_id: call.id,
    name: call.name,
    path: shown.startsWith('..') || isAbsolute(shown) ? path : shown,
    abs: path,
    exists: before !== null,
    before: before === null ? '' : Buffer.from(before, 'base64').toString('utf8'),
    after: now ?? '',
    notice,
    view_only: true,
  };
}

/** What undo writes through: the write side of `ctx.sandbox`, and the sensitive-place gate. */
export type UndoDoor = SandboxAccess & PathConfinement & { gate: WriteGate };

/**
 * Checks every path of `paths` against the door before any file is written: the first one the
 * policy refuses, said for the user; undefined when all may be written. Throws the policy's own
 * refusal (`SandboxViolation`).
 */
export async function refusedPath(
  access: UndoDoor,
  paths: readonly string[],
): Promise<string | undefined> {
  for (const path of paths) {
    await access.resolve(path, { write: true });
    const place = access.gate.refusal(resolveReal(path));
    if (place !== undefined) {
      return `${path} leads to ${resolveReal(path)}, under ${place}, since the call wrote it; nothing was restored`;
    }
  }
  return undefined;
}

export class UndoService {
  /** Per buffer: what `git status` listed when its last turn started (see git.ts). */
  private readonly turns = new Map<number, Promise<GitState | undefined>>();
  /** Buffers whose request in flight starts a turn (its git state is noted when the reply begins). */
  private readonly starting = new Set<number>();
  /** `<chat>:<tool id>` → why the call's record could not be written (for `tool:undo`). */
  private readonly unrecorded = new Map<string, string>();

  constructor(
    private readonly base: Pick<
      HostBase,
      'documents' | 'logger' | 'lua' | 'notify' | 'sandboxBackends'
    >,
    private readonly results: Pick<ResultWriter, 'fresh' | 'applyEdits'>,
    /** The buffer's configuration and facts, as a tool call would get them. */
    private readonly context: (bufnr: number, document: ChatDocument) => Promise<BufferSettings>,
    /** The editor's facts the host holds of a buffer (pushed by Lua; src/host/editor-state.ts). */
    private readonly held?: { facts(bufnr: number): EditorFacts | undefined },
  ) {}

  /** The buffer's editor facts: those the host holds, else asked (one round trip). */
  private facts(bufnr: number): Promise<EditorFacts> {
    const held = this.held?.facts(bufnr);
    return held === undefined
      ? this.base.lua.call('tools.facts', { bufnr })
      : Promise.resolve(held);
  }

  /**
   * The write side of `ctx.sandbox` a tool of the buffer would get now, writing the sensitive
   * places only where a file's own path (as the call wrote it) names one: undo puts back what the
   * call changed there, but a link on the way changed since into `.git/hooks` is refused.
   */
  private async access(editor: BufferSettings, paths: readonly string[]): Promise<UndoDoor> {
    const { config, facts } = editor;
    const roots = rootsFor(config.sandbox, facts, process.env, homedir());
    const settings = roots === undefined ? config.sandbox : withRootPaths(config.sandbox, roots);
    const sandbox = await sandboxFor(
      settings,
      facts,
      homedir(),
      this.base.sandboxBackends,
      this.base.lua,
      { sensitivePaths: config.tools['sensitive_paths'] },
    );
    const base = facts.filename === null ? facts.cwd : dirname(facts.filename);
    const { entries } = sensitiveEntries(config.tools['sensitive_paths'], {
      home: homedir(),
      env: process.env,
      editorDirs: facts.editor_dirs,
    });
    const gate = sensitiveGate(entries, paths);
    const active = sandbox.enabled ? roots : undefined;
    return { ...confine(sandbox.access, active, base, homedir(), undefined, gate), gate };
  }

  /**
   * The door undo writes through for the buffer now (`ctx.sandbox` as a tool would get it, see
   * `access`), or why there is none (the buffer's configuration has a problem). `:Flemma rewind`
   * writes through it too (src/host/undo/rewind.ts).
   */
  async door(
    bufnr: number,
    document: ChatDocument,
    paths: readonly string[],
  ): Promise<UndoDoor | string> {
    const editor = await this.context(bufnr, document);
    if (editor.problem !== undefined) return editor.problem;
    return this.access(editor, paths);
  }

  /** The buffer's store and its key in it; undefined when Neovim did not say where it is. */
  async storeOf(
    bufnr: number,
  ): Promise<{ store: UndoStore; key: string; facts: EditorFacts } | undefined> {
    const facts = await this.facts(bufnr);
    const store = storeFor(facts);
    return store === undefined ? undefined : { store, key: chatKey(facts.filename, bufnr), facts };
  }

  /** Why the record of call `toolId` (store key `key`) could not be written, if it could not. */
  unrecordedReason(key: string, toolId: string): string | undefined {
    return this.unrecorded.get(`${key}:${toolId}`);
  }

  /** Puts the files back through the policy; the first refusal, else undefined. */
  private async restore(
    access: UndoDoor,
    files: readonly { path: string; before?: string | null }[],
  ): Promise<string | undefined> {
    try {
      // Every path is checked before any is written: a refusal leaves all files as they are.
      const refused = await refusedPath(
        access,
        files.map((file) => file.path),
      );
      if (refused !== undefined) return refused;
      for (const file of files) {
        if (file.before === null) await unlink(file.path).catch(() => undefined);
        else if (file.before !== undefined) {
          const { handle } = await access.open_for_write(file.path, { mkdir: true });
          try {
            await handle.truncate(0);
            await handle.writeFile(Buffer.from(file.before, 'base64'));
          } finally {
            await handle.close();
          }
        }
      }
      return undefined;
    } catch (error) {
      if (error instanceof SandboxViolation) return error.message;
      return error instanceof Error ? error.message : String(error);
    }
  }

  /** `tools.undo` of a configuration's tools table. */
  limits(tools: Readonly<Record<string, unknown>>): UndoLimits {
    return undoLimits(tools['undo']);
  }

  /**
   * Whether the record of the call `toolId` writing `paths` could be written now (see
   * `UndoStore.probe`): undefined when it could (or undo is off), else why not.
   */
  async probe(
    bufnr: number,
    facts: EditorFacts,
    toolId: string,
    paths: readonly string[],
    limits: UndoLimits,
  ): Promise<string | undefined> {
    const store = storeFor(facts);
    if (store === undefined || !limits.enabled || paths.length === 0) return undefined;
    const journal = new WriteJournal(limits.max_bytes);
    for (const path of paths) await journal.note(path);
    try {
      await store.probe(chatKey(facts.filename, bufnr), facts.filename, toolId, journal.entries);
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  /**
   * Keeps what the call `toolId` found in the files it wrote. A record that cannot be written is
   * said to the user (the call has run) and remembered, so that `:Flemma tool:undo` says why.
   */
  async record(
    bufnr: number,
    facts: EditorFacts,
    toolId: string,
    journal: WriteJournal,
    limits: UndoLimits,
  ): Promise<void> {
    const store = storeFor(facts);
    if (store === undefined || journal.entries.size === 0) return;
    try {
      await store.record(
        chatKey(facts.filename, bufnr),
        facts.filename,
        toolId,
        journal.entries,
        limits,
      );
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.base.logger.warn(`undo: cannot record ${toolId}: ${reason}`);
      this.unrecorded.set(`${chatKey(facts.filename, bufnr)}:${toolId}`, reason);
      this.base.notify.warn(
        `${toolId} changed files without an undo record: it could not be written (${reason})`,
      );
    }
  }

  /** `:Flemma tool:undo` on 0-based `row`: what happened, for the user. */
  async undoAt(bufnr: number, row: number): Promise<{ ok: boolean; message: string }> {
    const state = await this.base.documents.attach(bufnr);
    if (state === undefined) return { ok: false, message: 'Not a chat buffer' };
    const target = undoTarget(state.document, row);
    if (!target.ok) return target;
    const { call } = target;
    const facts = await this.facts(bufnr);
    const store = storeFor(facts);
    const key = chatKey(facts.filename, bufnr);
    const record = store === undefined ? undefined : await store.load(key, call.id);
    const failed = this.unrecorded.get(`${key}:${call.id}`);
    if (record === undefined && failed !== undefined) {
      return {
        ok: false,
        message: `Nothing to undo ${call.name} (${call.id}): it ran without an undo record, which could not be written (${failed})`,
      };
    }
    if (store === undefined || record === undefined) {
      return {
        ok: false,
        message: `Nothing kept to undo ${call.name} (${call.id}): it changed no file, or its record was pruned (tools.undo)`,
      };
    }
    if (record.undone !== undefined) {
      return { ok: false, message: `${call.name} (${call.id}) is already undone` };
    }
    for (const file of record.files) {
      if (file.skipped !== undefined || file.before === undefined) {
        return {
          ok: false,
          message: `Cannot undo ${call.id}: what ${file.path} held before was not kept (${file.skipped ?? 'unknown'})`,
        };
      }
      const now = await currentHash(file.path).catch(() => 'unreadable');
      if (now !== file.after) {
        return {
          ok: false,
          message:
            `Cannot undo ${call.id}: ${file.path} changed since the call ran; nothing was restored. ` +
            `:Flemma tool:diff shows what it held before beside what it holds now`,
        };
      }
    }
    const editor = await this.context(bufnr, state.document);
    if (editor.problem !== undefined) return { ok: false, message: editor.problem };
    const paths = record.files.map((file) => file.path);
    const refused = await this.restore(await this.access(editor, paths), record.files);
    if (refused !== undefined) return { ok: false, message: `Cannot undo ${call.id}: ${refused}` };
    await store.markUndone(key, call.id, record);
    await this.mark(bufnr, target.row);
    const names = record.files.map((file) => file.path).join(', ');
    return { ok: true, message: `Undid ${call.name} (${call.id}): restored ${names}` };
  }

  /**
   * `:Flemma tool:diff` on a call that ran: what the file it changed held before it, beside the
   * file now (the first file the call changed when it changed several). Undefined when the call
   * has not run (the pending diff applies); a message when nothing was kept.
   */
  async diffAt(bufnr: number, row: number): Promise<DiffSpec | string | undefined> {
    const state = await this.base.documents.attach(bufnr);
    if (state === undefined) return undefined;
    // A tool call that ran, or an agent's write (the same lookup as undo's).
    const target = undoTarget(state.document, row);
    if (!target.ok) return undefined;
    const { call } = target;
    const facts = await this.facts(bufnr);
    const record = await storeFor(facts)?.load(chatKey(facts.filename, bufnr), call.id);
    const file = record?.files.find((item) => item.skipped === undefined);
    if (record === undefined || file === undefined || file.before === undefined) {
      return `Nothing kept for ${call.name} (${call.id}): it changed no file, or its record was pruned (tools.undo)`;
    }
    let now: string | undefined;
    try {
      now = await readTextBounded(file.path);
    } catch (error) {
      return `Cannot show ${file.path}: ${error instanceof Error ? error.message : String(error)}`;
    }
    const notes = [
      record.undone === undefined ? undefined : 'undone since',
      now === undefined ? 'the file is gone' : undefined,
      file.before === null ? 'the call created it' : undefined,
    ].filter((note) => note !== undefined);
    const notice = `before ${call.id} ran, beside the file now${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`;
    return ranDiff(
      { bufnr, call, path: file.path, base: chatDir(facts), before: file.before, now },
      notice,
    );
  }

  /**
   * A request of the buffer starts: whether it sends the user's own message (a new turn). What
   * git lists as changed is noted once its reply begins (`replyStarted`): asking the editor and
   * running git before the request is out would delay it, and no tool of the turn can run
   * before the reply ends.
   */
  sending(bufnr: number, document: ChatDocument): void {
    if (startsTurn(document)) this.starting.add(bufnr);
    else this.starting.delete(bufnr);
  }

  /** The first event of a reply arrived: a new turn's git state is noted now. */
  replyStarted(bufnr: number): void {
    if (!this.starting.delete(bufnr)) return;
    const state = this.facts(bufnr)
      .then((facts) => gitStateFor(facts))
      .catch(() => undefined);
    this.turns.set(bufnr, state);
  }

  /**
   * Settles once the turn's git state of the buffer is noted (at once when none is being noted):
   * a tool of the turn waits for it, so that what it changes is never part of the turn's start.
   */
  async noted(bufnr: number): Promise<void> {
    await this.turns.get(bufnr);
  }

  forget(bufnr: number): void {
    this.turns.delete(bufnr);
    this.starting.delete(bufnr);
  }

  /** `:Flemma review`: the calls in `scope` that changed files, with what each file held before. */
  async review(bufnr: number, scope: ReviewScope): Promise<{ calls: ReviewCall[]; git: string[] }> {
    const state = await this.base.documents.attach(bufnr);
    if (state === undefined) return { calls: [], git: [] };
    const facts = await this.facts(bufnr);
    const calls = await this.reviewCalls(bufnr, scope, state.document, facts);
    const start = scope.kind === 'last' ? await this.turns.get(bufnr) : undefined;
    if (start === undefined) return { calls, git: [] };
    const now = await gitStateFor(facts).catch(() => undefined);
    if (now === undefined) return { calls, git: [] };
    // Files the calls' own records cover are listed with their hunks already.
    // The chat file itself is what the user reads the turn in.
    const known = new Set(calls.flatMap((call) => call.files.map((file) => file.path)));
    if (facts.filename !== null) known.add(facts.filename);
    return { calls, git: changedSince(start, now).filter((path) => !known.has(path)) };
  }

  private async reviewCalls(
    bufnr: number,
    scope: ReviewScope,
    document: ChatDocument,
    facts: EditorFacts,
  ): Promise<ReviewCall[]> {
    const store = storeFor(facts);
    if (store === undefined) return [];
    const key = chatKey(facts.filename, bufnr);
    const out: ReviewCall[] = [];
    for (const call of callsInScope(document, scope)) {
      const record = await store.load(key, call.id);
      if (record === undefined) continue;
      out.push({
        tool_id: call.id,
        name: call.name,
        line: call.line,
        undone: record.undone !== undefined,
        files: record.files.map((file) => {
          if (file.skipped !== undefined || file.before === undefined) {
            return { path: file.path, before: null, skipped: file.skipped ?? 'not kept' };
          }
          return {
            path: file.path,
            before:
              file.before === null ? null : Buffer.from(file.before, 'base64').toString('utf8'),
          };
        }),
      });
    }
    return out;
  }

  /** Adds `(undone)` to the result header on 0-based `row`. */
  private async mark(bufnr: number, row: number): Promise<void> {
    const state = await this.results.fresh(bufnr);
    const line = state?.lines[row];
    if (line === undefined) return;
    const marked = markUndone(line) ?? markWriteUndone(line);
    if (marked === undefined) return;
    await this.results.applyEdits(bufnr, [
      { start: row, end: row + 1, lines: [marked], expect: [line] },
    ]);
  }
}
