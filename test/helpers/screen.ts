// A model of what a UI attached to Neovim shows: the grid's cells and, per cell, the highlight
// groups that made it (from `ext_hlstate`). Tests read it to assert on what a user sees.

interface Cell {
  text: string;
  hl: number;
}

export class Screen {
  private grid: Cell[][] = [];
  /** highlight id → the names of the groups that produced it */
  private readonly groups = new Map<number, string[]>();

  /** One `redraw` notification: a list of `[event, ...calls]` batches. */
  handle(batches: unknown[]): void {
    for (const batch of batches as [string, ...unknown[][]][]) {
      const [name, ...calls] = batch;
      for (const args of calls) this.event(name, args);
    }
  }

  private event(name: string, args: unknown[]): void {
    if (name === 'grid_resize') {
      const [, width, height] = args as [number, number, number];
      this.grid = Array.from({ length: height }, () =>
        Array.from({ length: width }, () => ({ text: ' ', hl: 0 })),
      );
    } else if (name === 'grid_clear') {
      for (const row of this.grid)
        for (const cell of row) Object.assign(cell, { text: ' ', hl: 0 });
    } else if (name === 'grid_line') {
      const [, row, colStart, cells] = args as [number, number, number, unknown[][]];
      const line = this.grid[row];
      if (line === undefined) return;
      let col = colStart;
      let hl = 0;
      for (const cell of cells) {
        const text = String(cell[0]);
        if (cell[1] !== undefined) hl = Number(cell[1]);
        const repeat = cell[2] === undefined ? 1 : Number(cell[2]);
        for (let i = 0; i < repeat; i++) {
          const target = line[col];
          if (target !== undefined) Object.assign(target, { text, hl });
          col++;
        }
      }
    } else if (name === 'grid_scroll') {
      const [, top, bot, left, right, rows] = args as number[];
      const copy = this.grid.map((row) => row.map((cell) => ({ ...cell })));
      for (let row = top ?? 0; row < (bot ?? 0); row++) {
        const from = copy[row + (rows ?? 0)];
        const to = this.grid[row];
        if (from === undefined || to === undefined) continue;
        for (let col = left ?? 0; col < (right ?? 0); col++) {
          const source = from[col];
          const target = to[col];
          if (source !== undefined && target !== undefined) Object.assign(target, source);
        }
      }
    } else if (name === 'hl_attr_define') {
      const [id, , , info] = args as [number, unknown, unknown, { hi_name?: string }[]];
      this.groups.set(
        id,
        info.map((item) => item.hi_name ?? '').filter((item) => item !== ''),
      );
    }
  }

  /** The text of a screen row (0-based). */
  row(row: number): string {
    return (this.grid[row] ?? []).map((cell) => cell.text).join('');
  }

  /** Every row's text. */
  rows(): string[] {
    return this.grid.map((_, row) => this.row(row));
  }

  /** The highlight groups of the cell at (row, col), screen coordinates. */
  groupsAt(row: number, col: number): string[] {
    const cell = this.grid[row]?.[col];
    return cell === undefined ? [] : (this.groups.get(cell.hl) ?? []);
  }

  /** The screen row showing `text` first (-1 when none does). */
  find(text: string | RegExp): number {
    return this.grid.findIndex((_, row) =>
      typeof text === 'string' ? this.row(row).includes(text) : text.test(this.row(row)),
    );
  }
}
