// The lines of a chat held in a file, edited as `buffer.apply_batch` edits a Neovim buffer
// (lua/flemma/chat/buffer.lua): text appended at a stream's anchor (made at the end on first use,
// moving past what is appended to it), rows replaced only where they still hold what the host
// expects (else a conflict), a stream's anchor forgotten. Every change is told to the listener as
// Neovim would report it (`nvim_buf_lines_event`): rows [first, last) now hold `data`.
import type { BufferBatch, BufferResult, WriteOp } from '../editor/protocol/wire.js';
import { sameLines } from '../core/chat/edit-rows.js';

/** A stream's anchor: where its next text goes (row, and column in UTF-16 units). */
interface Anchor {
  row: number;
  col: number;
}

export type LinesChanged = (tick: number, first: number, last: number, data: string[]) => void;

/** The text of a file as lines (a final newline ends the last line, not a new empty one). */
export function splitText(text: string): string[] {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Lines as a file's text: each ends with a newline, as Neovim writes them. */
export function joinLines(lines: readonly string[]): string {
  return lines.join('\n') + '\n';
}

export class FileLines {
  private rows: string[];
  /** Counts every change, as a buffer's changedtick. */
  tick = 1;
  private readonly anchors = new Map<string, Anchor>();

  constructor(
    lines: readonly string[],
    private readonly changed: LinesChanged,
  ) {
    this.rows = lines.length === 0 ? [''] : [...lines];
  }

  get lines(): readonly string[] {
    return this.rows;
  }

  /** Replace every line (the file was read again). */
  reset(lines: readonly string[]): void {
    const before = this.rows.length;
    this.rows = lines.length === 0 ? [''] : [...lines];
    this.anchors.clear();
    this.tick += 1;
    this.changed(this.tick, 0, before, [...this.rows]);
  }

  /** One buffer's ops, in order, as Lua's `apply_buffer` answers them. */
  apply(batch: BufferBatch): BufferResult {
    const edited = batch.tick !== null && batch.tick !== this.tick;
    const conflicts: number[] = [];
    let done = 0;
    for (const [index, op] of batch.ops.entries()) {
      let applied: boolean;
      try {
        applied = this.applyOp(op);
      } catch (error) {
        return {
          status: 'error',
          done,
          edited,
          tick: this.tick,
          message: error instanceof Error ? error.message : String(error),
          ...(conflicts.length > 0 ? { conflicts } : {}),
        };
      }
      if (!applied) conflicts.push(index + 1);
      done = index + 1;
    }
    return {
      status: 'ok',
      done,
      edited,
      tick: this.tick,
      ...(conflicts.length > 0 ? { conflicts } : {}),
    };
  }

  /** Whether the op applied (false: its rows did not hold what it expected). */
  private applyOp(op: WriteOp): boolean {
    if (op.op === 'append') {
      this.append(op.stream, op.text);
      return true;
    }
    if (op.op === 'close_stream') {
      this.anchors.delete(op.stream);
      return true;
    }
    const { start, end, expect, lines } = op;
    if (expect !== null) {
      if (end > this.rows.length) return false;
      if (!sameLines(this.rows.slice(start, end), expect)) return false;
    }
    if (start < 0 || end < start || end > this.rows.length) {
      throw new Error(`Index out of bounds: rows ${String(start)}-${String(end)}`);
    }
    this.replace(start, end, lines);
    return true;
  }

  /** Rows [start, end) become `lines`; anchors below move with them, anchors inside go. */
  private replace(start: number, end: number, lines: string[]): void {
    this.rows.splice(start, end - start, ...lines);
    if (this.rows.length === 0) this.rows.push('');
    const shift = lines.length - (end - start);
    for (const [stream, anchor] of this.anchors) {
      if (anchor.row >= end && end > start) anchor.row += shift;
      else if (anchor.row >= start && end === start) anchor.row += shift;
      else if (anchor.row >= start) this.anchors.delete(stream);
    }
    this.tick += 1;
    this.changed(this.tick, start, end, [...lines]);
  }

  /** Text at the stream's anchor (made at the end of the text on first use). */
  private append(stream: string, text: string): void {
    if (text === '') return;
    const anchor = this.anchorOf(stream);
    const { row, col } = anchor;
    const line = this.rows[row] ?? '';
    const parts = text.split('\n');
    const head = line.slice(0, col);
    const tail = line.slice(col);
    const inserted = parts.map((part, index) => (index === 0 ? head + part : part));
    const lastIndex = inserted.length - 1;
    const endCol = (inserted[lastIndex] ?? '').length;
    inserted[lastIndex] = (inserted[lastIndex] ?? '') + tail;
    this.rows.splice(row, 1, ...inserted);
    const added = inserted.length - 1;
    // Anchors at or after the insertion point move past it (right gravity), as extmarks do.
    for (const other of this.anchors.values()) {
      if (other.row === row && other.col >= col) {
        other.col = endCol + (other.col - col);
        other.row = row + added;
      } else if (other.row > row) {
        other.row += added;
      }
    }
    this.tick += 1;
    this.changed(this.tick, row, row + 1, inserted);
  }

  private anchorOf(stream: string): Anchor {
    const last = this.rows.length - 1;
    const existing = this.anchors.get(stream);
    if (existing !== undefined && existing.row <= last) return existing;
    const anchor = { row: last, col: (this.rows[last] ?? '').length };
    this.anchors.set(stream, anchor);
    return anchor;
  }
}
