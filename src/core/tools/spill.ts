// A command's output as it comes: written to its overflow file while the command still runs, and
// only what the result needs kept in memory (docs/testing.md, S4). A command printing megabytes
// then leaves neither a write of megabytes nor megabytes of garbage for after it ends.
//
// Decisions:
// - Nothing touches the disk until the output outgrows what a result can hold (`threshold`,
//   MAX_BYTES): most commands print less, never get a file, and are cut as before from their
//   bytes (`truncateOutputTail`).
// - Past it, each chunk is kept only until it is in the file. What the cut needs is gathered on
//   the way: the count of bytes and lines, where the text ends once trailing whitespace is
//   trimmed and where its last line starts, whether the bytes are UTF-8 (checked chunk by chunk,
//   a character split between two chunks included), a byte-order mark, and the last bytes
//   (twice the byte limit and a little, which hold every line a result can keep).
// - Chunks that arrive while a write is under way go out together in the next one (one `writev`),
//   so a stream of small chunks costs a few system calls, not one each.
// - The file is the overflow file truncation would write (`overflowPath`), cut at the end to the
//   length truncation would have written (trailing whitespace removed). What the gathered facts
//   cannot settle the same way as the whole bytes would (bytes that are not UTF-8, a byte-order
//   mark, a character beyond ASCII at the end, a trailing run of whitespace longer than the kept
//   end) is read back from the file and cut as before; so is everything after a failed write.
//   What the result names is always what truncation would save.
// - A cap (`MAX_BUFFER` in process.ts) still ends the reading: the spill does not store an
//   endless stream.

import { isUtf8 } from 'node:buffer';
import {
  MAX_BYTES,
  type OutputShape,
  type SpillFile,
  type TruncateForResultOptions,
  type TruncateFs,
  type TruncatedOutput,
  savedAt,
  tailDetails,
  truncateOutputTail,
} from './truncate.js';

const NEWLINE = 0x0a;

const isAsciiSpace = (byte: number | undefined): boolean =>
  byte === 0x20 || (byte !== undefined && byte >= 0x09 && byte <= 0x0d);

/** The length of the UTF-8 sequence `lead` starts (0: not a lead byte). */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/** Where the incomplete character at the end of `bytes` starts (its length: none). */
function incompleteFrom(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back += 1) {
    const at = bytes.length - back;
    const byte = bytes[at] ?? 0;
    if ((byte & 0xc0) === 0x80) continue;
    return sequenceLength(byte) > back ? at : bytes.length;
  }
  return bytes.length;
}

/** Checks UTF-8 chunk by chunk, a character split between chunks included. */
class Utf8Check {
  valid = true;
  private carry: Uint8Array = new Uint8Array(0);

  push(chunk: Uint8Array): void {
    if (!this.valid) return;
    let from = 0;
    if (this.carry.length > 0) {
      const need = sequenceLength(this.carry[0] ?? 0) - this.carry.length;
      if (chunk.length < need) {
        this.carry = Buffer.concat([this.carry, chunk]);
        return;
      }
      this.valid = isUtf8(Buffer.concat([this.carry, chunk.subarray(0, need)]));
      from = need;
    }
    const cut = incompleteFrom(chunk.subarray(from)) + from;
    if (!isUtf8(chunk.subarray(from, cut))) this.valid = false;
    this.carry = chunk.slice(cut);
  }

  /** Valid, and no character left unfinished. */
  done(): boolean {
    return this.valid && this.carry.length === 0;
  }
}

/** Where the text ends and its lines, followed chunk by chunk. */
class Lines {
  newlines = 0;
  /** The last byte that is not ASCII whitespace (-1: none yet), and the newlines after it. */
  lastText = -1;
  newlinesAfterText = 0;
  /** The last newline before `lastText` (-1: none). */
  newlineBeforeText = -1;
  private lastNewline = -1;

  push(chunk: Buffer, offset: number): void {
    let count = 0;
    let last = -1;
    for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, at + 1)) {
      count += 1;
      last = at;
    }
    this.newlines += count;
    let text = chunk.length - 1;
    while (text >= 0 && isAsciiSpace(chunk[text])) text -= 1;
    if (text >= 0) {
      this.lastText = offset + text;
      const before = text === 0 ? -1 : chunk.lastIndexOf(NEWLINE, text - 1);
      this.newlineBeforeText = before === -1 ? this.lastNewline : offset + before;
      let after = 0;
      for (let at = chunk.indexOf(NEWLINE, text); at !== -1; at = chunk.indexOf(NEWLINE, at + 1)) {
        after += 1;
      }
      this.newlinesAfterText = after;
    } else {
      this.newlinesAfterText += count;
    }
    if (last !== -1) this.lastNewline = offset + last;
  }
}

export class OutputSpill {
  /** Chunks not (yet) in the file: all of them until the spill starts. */
  private unwritten: Uint8Array[] = [];
  /** The last chunks, at least `keepEnd` bytes of them. */
  private recent: Uint8Array[] = [];
  private recentBytes = 0;
  private received = 0;
  private written = 0;
  private head = Buffer.alloc(0);
  private readonly utf8 = new Utf8Check();
  private readonly lines = new Lines();
  private file: Promise<SpillFile | undefined> | undefined;
  private writing: Promise<void> = Promise.resolve();
  private busy = false;
  private failed = false;
  private readonly keepEnd: number;

  constructor(
    private readonly path: string,
    private readonly fs: TruncateFs,
    private readonly threshold: number,
  ) {
    this.keepEnd = Math.max(threshold, MAX_BYTES) * 2 + 16;
  }

  /** More output. */
  push(chunk: Uint8Array): void {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    if (this.head.length < 3) this.head = Buffer.concat([this.head, bytes.subarray(0, 3)]);
    this.utf8.push(bytes);
    this.lines.push(bytes, this.received);
    this.received += bytes.length;
    this.recent.push(bytes);
    this.recentBytes += bytes.length;
    while (this.recentBytes - (this.recent[0]?.length ?? 0) >= this.keepEnd) {
      this.recentBytes -= this.recent.shift()?.length ?? 0;
    }
    this.unwritten.push(bytes);
    if (this.failed) return;
    if (this.file === undefined) {
      if (this.received <= this.threshold) return;
      if (this.fs.create === undefined) {
        this.failed = true;
        return;
      }
      this.file = this.fs.create(this.path).catch(() => undefined);
    }
    if (!this.busy) this.drain();
  }

  /** Writes what is not in the file yet, again while more came meanwhile. */
  private drain(): void {
    this.busy = true;
    this.writing = (async () => {
      const file = await this.file;
      if (file === undefined) {
        this.failed = true;
        return;
      }
      while (this.unwritten.length > 0 && !this.failed) {
        const batch = this.unwritten.slice();
        try {
          await file.writev(batch);
          this.unwritten.splice(0, batch.length);
          this.written += batch.reduce((sum, chunk) => sum + chunk.length, 0);
        } catch {
          this.failed = true;
        }
      }
    })().finally(() => {
      this.busy = false;
    });
  }

  /** The whole output: kept, or read back from the file for what was written. */
  private async whole(): Promise<Uint8Array> {
    if (this.written === 0) return Buffer.concat(this.unwritten);
    const start = await this.fs.readStart?.(this.path, this.written);
    if (start?.length !== this.written) throw new Error('the output file cannot be read back');
    return Buffer.concat([start, ...this.unwritten]);
  }

  /** What the gathered facts say of the cut, when they settle it as the whole bytes would. */
  private shape(maxBytes: number): OutputShape | undefined {
    const { lines } = this;
    const end = lines.lastText + 1;
    const tailStart = this.received - this.recentBytes;
    const last = this.recent.length === 0 ? undefined : this.lastByte();
    const settled =
      !this.failed &&
      this.written === this.received &&
      this.utf8.done() &&
      !(this.head[0] === 0xef && this.head[1] === 0xbb && this.head[2] === 0xbf) &&
      end > maxBytes &&
      last !== undefined &&
      end - maxBytes - 4 >= tailStart;
    if (!settled) return undefined;
    return {
      end,
      lines: 1 + lines.newlines - lines.newlinesAfterText,
      lastStart: lines.newlineBeforeText + 1,
    };
  }

  /** The last byte of text (not whitespace), when it is ASCII. */
  private lastByte(): number | undefined {
    const offset = this.lines.lastText - (this.received - this.recentBytes);
    const tail = Buffer.concat(this.recent);
    const byte = tail[offset];
    return byte !== undefined && byte < 0x80 ? byte : undefined;
  }

  /** The output cut for the result (`truncateOutputTail`'s result), the file kept or removed. */
  async cut(options: Omit<TruncateForResultOptions, 'mode'>): Promise<TruncatedOutput> {
    await this.writing;
    const file = await this.file;
    const shape = file === undefined ? undefined : this.shape(options.maxBytes ?? MAX_BYTES);
    if (file !== undefined && shape !== undefined) {
      try {
        await file.truncate(shape.end);
        await file.close();
        const offset = this.received - this.recentBytes;
        return savedAt(
          tailDetails(Buffer.concat(this.recent), offset, shape, options),
          options,
          this.path,
        );
      } catch {
        this.failed = true;
      }
    }
    const bytes = await this.whole().catch(() => undefined);
    await this.discard(file);
    if (bytes === undefined) throw new Error('the output could not be read back');
    return truncateOutputTail(bytes, options, this.fs);
  }

  /** The output is not wanted: the file, if any, goes. */
  async discard(file?: SpillFile): Promise<void> {
    await this.writing;
    const open = file ?? (await this.file);
    this.file = undefined;
    if (open === undefined) return;
    await open.close().catch(() => undefined);
    await this.fs.remove?.(this.path).catch(() => undefined);
  }
}
