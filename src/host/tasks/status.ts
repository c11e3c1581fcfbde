// The children the host watches run (docs/tasks.md, "Seeing a task"): each one's state, folded
// from its run events, shown on one line under its `task` placeholder in the parent's buffer and
// kept for `:Flemma tasks`.
//
// Decisions:
// - The line takes the place of the `task` placeholder's preview (Previews.note), redrawn at most
//   once a frame: a child streaming thousands of deltas costs its parent's buffer ~60 redraws a
//   second at most, every changed child of a buffer in one.
// - A child that waits for an approval raises the parent's attention signal at once (the child
//   has no window of its own to raise it in).
// - An ended child's line goes (its result takes the placeholder's place); its last state stays
//   for `:Flemma tasks` while the host runs (its cost is known only from here).
import { type ChildEnd } from '../../core/tasks/files.js';
import {
  type ChildEvent,
  type ChildState,
  endedState,
  nextState,
  startingState,
  stateLine,
} from '../../core/tasks/status.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { Previews } from '../tools/previews.js';
import { FRAME_MS } from '../tools/live-output.js';
import type { ChildOf } from './service.js';

interface Watched {
  parent: number;
  toolId: string;
  child: ChildOf;
  state: ChildState;
  dirty: boolean;
  shown: boolean;
}

/** Why a child did not finish, on one line; undefined when it did. */
export function failureOf(end: ChildEnd): string | undefined {
  switch (end.kind) {
    case 'done':
      return undefined;
    case 'max_turns':
      return `its turn limit (${String(end.turns)})`;
    case 'max_cost':
      return 'its spending limit';
    case 'approval':
      return `${end.tool} waits for approval`;
    case 'cancelled':
      return 'cancelled';
    case 'error':
      return end.message;
  }
}

export class TaskBoard {
  private readonly children = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly lua: Pick<LuaBridge, 'notify'>,
    private readonly previews: Pick<Previews, 'note' | 'noteAll'>,
  ) {}

  /** Child `file` of call `toolId` in buffer `parent` did something. */
  readonly progress = (parent: number, toolId: string, event: ChildEvent, child: ChildOf): void => {
    const watched = this.watch(parent, toolId, child);
    const before = watched.state;
    // A cancelled call's child may still say something as it stops: its line is gone for good.
    if (before.phase === 'done' || before.phase === 'failed') return;
    watched.state = nextState(before, event);
    if (watched.state.phase === 'waiting' && before.phase !== 'waiting') {
      this.lua.notify('attention.signal', {
        bufnr: parent,
        reason: 'approval',
        tools: watched.state.waiting,
      });
    }
    if (stateLine(before) === stateLine(watched.state)) return;
    watched.dirty = true;
    this.timer ??= setTimeout(() => {
      this.flush();
    }, FRAME_MS);
  };

  /** The child's run ended: its line goes, its last state stays for the listing. */
  readonly ended = (parent: number, toolId: string, end: ChildEnd, child: ChildOf): void => {
    const watched = this.watch(parent, toolId, child);
    watched.state = endedState(watched.state, failureOf(end));
    watched.dirty = false;
    if (watched.shown) {
      watched.shown = false;
      this.previews.note(parent, toolId, undefined);
    }
  };

  private watch(parent: number, toolId: string, child: ChildOf): Watched {
    let watched = this.children.get(toolId);
    if (watched === undefined || watched.parent !== parent) {
      watched = { parent, toolId, child, state: startingState(), dirty: false, shown: false };
      this.children.set(toolId, watched);
    }
    return watched;
  }

  /** The states of buffer `parent`'s children the host saw run, by file. */
  of(parent: number): Map<string, ChildState> {
    const out = new Map<string, ChildState>();
    for (const watched of this.children.values()) {
      if (watched.parent === parent) out.set(watched.child.file, watched.state);
    }
    return out;
  }

  /** The buffer went away: what was kept of its children goes. */
  forget(parent: number): void {
    for (const [id, watched] of this.children) {
      if (watched.parent === parent) this.children.delete(id);
    }
  }

  /** One frame: every changed child's line in its placeholder's preview, once per buffer. */
  private flush(): void {
    this.timer = undefined;
    const buffers = new Map<number, [string, string][]>();
    for (const watched of this.children.values()) {
      if (!watched.dirty) continue;
      watched.dirty = false;
      watched.shown = true;
      const lines = buffers.get(watched.parent) ?? [];
      lines.push([watched.toolId, stateLine(watched.state, watched.child)]);
      buffers.set(watched.parent, lines);
    }
    for (const [bufnr, lines] of buffers) this.previews.noteAll(bufnr, lines);
  }
}
