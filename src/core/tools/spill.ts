// A command's output written to its overflow file while the command still runs, so that a
// program printing megabytes does not leave a write of megabytes for after it ends (that write
// stood between the command's exit and its result; docs/testing.md, S4).
//
// Decisions:
// - Nothing touches the disk until the output outgrows what a result can hold (`threshold`,
//   MAX_BYTES): most commands print less and never get a file.
// - Chunks that arrive while a write is under way go out together in the next one (one `writev`),
//   so a stream of small chunks costs a few system calls, not one each.
// - The file is the overflow file truncation would write (`overflowPath`); at the end truncation
//   either keeps it, cut to the length it would have written (trailing whitespace removed), or the
//   spill is discarded and truncation writes the file itself as before (output that is not UTF-8,
//   a failed write, a cap reached): what the result names is always what truncation would save.
// - A write that fails makes the spill give up quietly; truncation then writes the file as before
//   and says so when that fails too.

/** The part of an open file a spill uses (Node's `FileHandle`). */
export interface SpillFile {
  writev(chunks: Uint8Array[]): Promise<unknown>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/** Where a spill's file comes from (truncation's `TruncateFs`). */
export interface SpillFs {
  /** A new file to write as output comes; without it, output is saved at the end. */
  create?(path: string): Promise<SpillFile>;
  remove?(path: string): Promise<void>;
}

export class OutputSpill {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Bytes handed to `push`. */
  private received = 0;
  /** Bytes on disk. */
  private written = 0;
  private file: Promise<SpillFile | undefined> | undefined;
  private writing: Promise<void> = Promise.resolve();
  private busy = false;
  private failed = false;
  private ended = false;

  constructor(
    private readonly path: string,
    private readonly fs: SpillFs,
    private readonly threshold: number,
  ) {}

  /** More output. */
  push(chunk: Uint8Array): void {
    if (this.failed || this.ended) return;
    this.received += chunk.length;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.file === undefined) {
      if (this.received <= this.threshold) return;
      if (this.fs.create === undefined) {
        this.giveUp();
        return;
      }
      this.file = this.fs.create(this.path).catch(() => undefined);
    }
    if (!this.busy) this.drain();
  }

  /** Writes what is pending, then again while more came meanwhile. */
  private drain(): void {
    this.busy = true;
    this.writing = (async () => {
      const file = await this.file;
      if (file === undefined) {
        this.giveUp();
        return;
      }
      while (this.pending.length > 0 && !this.failed) {
        const batch = this.pending;
        const bytes = this.pendingBytes;
        this.pending = [];
        this.pendingBytes = 0;
        try {
          await file.writev(batch);
          this.written += bytes;
        } catch {
          this.giveUp();
        }
      }
    })().finally(() => {
      this.busy = false;
    });
  }

  private giveUp(): void {
    this.failed = true;
    this.pending = [];
    this.pendingBytes = 0;
  }

  /**
   * The overflow file holding the first `length` bytes of the output, when the spill wrote all
   * `total` bytes the output has; undefined (the file removed) otherwise.
   */
  async keep(total: number, length: number): Promise<string | undefined> {
    this.ended = true;
    await this.writing;
    const file = await this.file;
    if (file === undefined) return undefined;
    const whole = !this.failed && this.written === total && this.received === total;
    try {
      if (whole) await file.truncate(length);
      await file.close();
    } catch {
      await this.remove();
      return undefined;
    }
    this.file = undefined;
    if (whole) return this.path;
    await this.remove();
    return undefined;
  }

  /** The output is not cut after all, or truncation writes the file itself: the spill goes. */
  async discard(): Promise<void> {
    this.ended = true;
    if (this.file === undefined) return;
    await this.writing;
    const file = await this.file;
    if (file === undefined) return;
    this.file = undefined;
    await file.close().catch(() => undefined);
    await this.remove();
  }

  private async remove(): Promise<void> {
    await this.fs.remove?.(this.path).catch(() => undefined);
  }
}
