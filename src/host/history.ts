// `:Flemma fork`, `:Flemma rewind` and the rewind of `:Flemma retry` (docs/history.md), as the
// host runs them: the fork written beside the chat and opened; the rewind's calls undone through
// the undo store (src/host/undo/rewind.ts: all checked first, nothing half undone), the removed
// messages kept in a sibling file, then taken out of the buffer as one undo step. The buffer's
// session (src/host/session.ts) decides when a rewind may run; Lua only starts it and shows what
// the host hands it (`history.show`).
import { basename, dirname } from 'node:path';
import { unlink } from 'node:fs/promises';
import {
  type RewindCut,
  forkText,
  messageAt,
  retryPoint,
  rewindCut,
  rewoundText,
  siblingNames,
} from '../core/chat/history.js';
import type { HookPayloads } from '../core/hooks.js';
import { readTextBounded } from '../core/util/bounded-read.js';
import { writeFirstFree } from '../core/util/files.js';
import type { DiffSpec } from '../editor/protocol/review.js';
import type { DocumentState } from '../editor/documents.js';
import type { HostBase } from './base.js';
import type { ResultWriter } from './tools/results.js';
import { type UndoPlan, type UndoRefusal, applyUndo, planUndo } from './undo/rewind.js';
import { type UndoService, ranDiff } from './undo/service.js';

type Action = HookPayloads['history:finished']['action'];

export interface HistoryDeps {
  base: Pick<HostBase, 'lua' | 'notify' | 'hooks' | 'logger' | 'writes'>;
  results: Pick<ResultWriter, 'fresh'>;
  undo: Pick<UndoService, 'door' | 'storeOf' | 'unrecordedReason'>;
}

/** Where a rewind goes: the message at a 0-based row, or the request of the last reply. */
export type RewindTarget = { row: number } | 'retry';

/** Writes `text` beside `file` under the first free name `<stem>.<tag>-N.chat`. */
function writeSibling(file: string, tag: string, text: string): Promise<string> {
  const name = basename(file);
  return writeFirstFree(dirname(file), `${name}.${tag}`, siblingNames(name, tag), text);
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class ChatHistory {
  constructor(private readonly deps: HistoryDeps) {}

  private finished(bufnr: number, action: Action, status: 'refused' | 'failed'): false {
    this.deps.base.hooks.post('history:finished', { bufnr, action, status });
    return false;
  }

  private refuse(bufnr: number, action: Action, message: string): false {
    this.deps.base.notify.warn(`${action}: ${message}`);
    return this.finished(bufnr, action, 'refused');
  }

  /** `:Flemma fork` at 0-based `row` of the chat held in `file`. */
  async fork(bufnr: number, file: string, row: number): Promise<void> {
    const { base } = this.deps;
    const state = await this.deps.results.fresh(bufnr);
    if (state === undefined) return void this.refuse(bufnr, 'fork', 'not a chat buffer');
    const index = messageAt(state.document, row + 1);
    if (typeof index === 'string') return void this.refuse(bufnr, 'fork', index);
    const fork = forkText(state.lines, state.document, index);
    let written: string;
    try {
      written = await writeSibling(file, 'fork', fork.text);
    } catch (error) {
      base.notify.error(`fork failed, nothing written: ${reason(error)}`);
      return void this.finished(bufnr, 'fork', 'failed');
    }
    const shown = await this.show({ bufnr, open: { path: written, row: fork.row } });
    const name = basename(written);
    base.notify.info(
      shown.opened ? `Forked into ${name}` : `Forked into ${name} (open it with :edit)`,
    );
    base.hooks.post('history:finished', {
      bufnr,
      action: 'fork',
      status: 'done',
      file: written,
      ...(shown.bufnr === undefined ? {} : { new_bufnr: shown.bufnr }),
    });
  }

  private show(params: {
    bufnr: number;
    open?: { path: string; row: number };
    diff?: DiffSpec;
    checktime?: boolean;
  }): Promise<{ opened: boolean; bufnr?: number }> {
    return this.deps.base.lua.call('history.show', params).catch((error: unknown) => {
      this.deps.base.logger.warn(`history.show failed: ${reason(error)}`);
      return { opened: false };
    });
  }

  /**
   * `:Flemma rewind` (or a retry's rewind) of the chat held in `file`: whether the buffer was
   * rewound. The caller (the session) makes sure nothing runs in the buffer meanwhile, or says
   * why it is `busy` (then it is refused).
   */
  async rewind(bufnr: number, file: string, target: RewindTarget, busy?: string): Promise<boolean> {
    const action: Action = target === 'retry' ? 'retry' : 'rewind';
    if (busy !== undefined) return this.refuse(bufnr, action, busy);
    const { lua } = this.deps.base;
    // The buffer cannot be edited while its files are checked and restored: the cut stays true.
    lua.notify('buffer.lock', { bufnr, owner: 'history' });
    try {
      return await this.rewindLocked(bufnr, file, target, action);
    } finally {
      lua.notify('buffer.unlock', { bufnr, owner: 'history' });
    }
  }

  private async rewindLocked(
    bufnr: number,
    file: string,
    target: RewindTarget,
    action: Action,
  ): Promise<boolean> {
    const state = await this.deps.results.fresh(bufnr);
    if (state === undefined) return this.refuse(bufnr, action, 'not a chat buffer');
    const { document } = state;
    const index = target === 'retry' ? retryPoint(document) : messageAt(document, target.row + 1);
    if (typeof index === 'string') return this.refuse(bufnr, action, index);
    const cut = rewindCut(state.lines, document, index);
    if (typeof cut === 'string') return this.refuse(bufnr, action, cut);
    const plan = await this.plan(bufnr, cut);
    if ('message' in plan) return this.refused(bufnr, action, file, plan);
    return this.carryOut(bufnr, file, action, state, cut, plan);
  }

  /** The undo of the cut's calls, checked (see src/host/undo/rewind.ts). */
  private async plan(bufnr: number, cut: RewindCut): Promise<UndoPlan | UndoRefusal> {
    const { undo } = this.deps;
    const where = cut.calls.length === 0 ? undefined : await undo.storeOf(bufnr);
    if (where === undefined) return { records: [], writes: new Map() };
    return planUndo({
      store: where.store,
      key: where.key,
      calls: cut.calls,
      unrecorded: (id) => undo.unrecordedReason(where.key, id),
    });
  }

  /** A file changed since its call wrote it: said, and shown beside what it held before. */
  private async refused(
    bufnr: number,
    action: Action,
    file: string,
    refusal: UndoRefusal,
  ): Promise<false> {
    this.refuse(bufnr, action, refusal.message);
    const changed = refusal.diff;
    if (changed === undefined) return false;
    const now = await readTextBounded(changed.path).catch(() => undefined);
    const { id, name, path, before } = changed;
    const of = { bufnr, call: { id, name }, path, base: dirname(file), before, now };
    await this.show({
      bufnr,
      diff: ranDiff(of, `${action} refused: before ${id} ran, beside the file now`),
    });
    return false;
  }

  /**
   * The checked rewind done: the sibling file written, the files restored, the messages taken out
   * of the buffer (one edit: one undo step). A step that fails takes back the ones before it.
   */
  private async carryOut(
    bufnr: number,
    file: string,
    action: Action,
    state: DocumentState,
    cut: RewindCut,
    plan: UndoPlan,
  ): Promise<boolean> {
    const { base, undo } = this.deps;
    const undone = new Set(plan.records.map((entry) => entry.id));
    let sibling: string;
    try {
      sibling = await writeSibling(
        file,
        'rewound',
        rewoundText(state.lines, state.document, cut, undone),
      );
    } catch (error) {
      base.notify.error(`${action} failed, nothing changed: ${reason(error)}`);
      return this.finished(bufnr, action, 'failed');
    }
    const paths = [...plan.writes.keys()];
    const door = paths.length === 0 ? undefined : await undo.door(bufnr, state.document, paths);
    const applied =
      door === undefined
        ? undefined
        : typeof door === 'string'
          ? { failure: door }
          : await applyUndo(door, plan);
    if (applied !== undefined && 'failure' in applied) {
      await unlink(sibling).catch(() => undefined);
      base.notify.error(`${action} failed: ${applied.failure}`);
      return this.finished(bufnr, action, 'failed');
    }
    const outcome = await base.writes
      .buffer(bufnr)
      .setLines(cut.from, state.lines.length, [], cut.removed);
    if (outcome !== 'applied') {
      const back = applied === undefined ? 'no file was touched' : await applied.takeBack();
      await unlink(sibling).catch(() => undefined);
      base.notify.error(`${action} failed: the chat changed meanwhile; ${back}`);
      return this.finished(bufnr, action, 'failed');
    }
    await this.markUndone(bufnr, plan);
    if (paths.length > 0) await this.show({ bufnr, checktime: true });
    const restored =
      paths.length === 0 ? '' : `; restored ${paths.map((path) => basename(path)).join(', ')}`;
    base.notify.info(
      `${action === 'retry' ? 'Retrying: the last reply' : 'Rewound: the later messages'} moved to ${basename(sibling)} (u brings them back)${restored}`,
    );
    base.hooks.post('history:finished', { bufnr, action, status: 'done', file: sibling });
    return true;
  }

  /** The records of the undone calls say so (`:Flemma tool:undo` and review then know). */
  private async markUndone(bufnr: number, plan: UndoPlan): Promise<void> {
    if (plan.records.length === 0) return;
    const where = await this.deps.undo.storeOf(bufnr);
    for (const { id, record } of plan.records) {
      await where?.store.markUndone(where.key, id, record).catch((error: unknown) => {
        this.deps.base.logger.warn(`rewind: marking ${id} undone failed: ${reason(error)}`);
      });
    }
  }
}
