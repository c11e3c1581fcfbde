// A command's output goes straight into a file the host made for it (its stdout), and the host
// reads that file behind the command instead of reading a pipe (docs/tools.md, "Execution";
// docs/testing.md, S4). A command printing megabytes then costs neither a pipe's thousands of
// small reads and wake-ups nor a second write of what it printed: the kernel wrote it once.
//
// Decisions:
// - The file is the overflow file truncation would write (`overflowPath`), made before the command
//   starts: whatever is at the path is removed and the file created exclusively (`O_EXCL`), for
//   the owner only, in append mode (`O_APPEND`: every process the command starts writes at the end,
//   whatever it does with its own offset). When it cannot be made, the caller reads a pipe
//   instead (bash.ts), and the output is saved at the end if it must be.
// - The host looks at the file while the command runs (`follow`: every 16 ms while it grows, less
//   often, down to every 250 ms, while it does not) and once more when it ended (`catchUp`), each
//   time reading what is new in pieces of at most 4 MB. (Looking every 4 ms in pieces of 1 MB
//   left less to read after the end, but the looks took the cores the command needed: S4 was
//   slower.) What it reads goes to the live view (`onOutput`) and to the facts the cut needs,
//   gathered on the way: the count of bytes and lines, where the text ends once trailing
//   whitespace is trimmed and where its last line starts, whether the bytes are UTF-8 (a
//   character split between two reads included), a byte-order mark, and the last bytes (twice
//   the byte limit and a little, which hold every line a result can keep). All of it is kept
//   while it fits in a result (`threshold`).
// - At the end the file is cut to the length truncation would have written (trailing whitespace
//   removed) and named by the result; an output that fits in a result is cut from its bytes and
//   the file goes (truncation writes it again when the line limit cut it). What the gathered facts
//   cannot settle the same way as the whole bytes would (bytes that are not UTF-8, a byte-order
//   mark, a character beyond ASCII at the end, a trailing run of whitespace longer than the kept
//   end) is read back from the file and cut as before; so is everything after a failed read.
//   What the result names is always what truncation would save.
// - A file has no reader to stop a command that never stops printing, as a full pipe does: past
//   `limit` bytes (256 MB) `onLimit` is called once, and the caller stops the command.
// - The read end starts where the last read ended, never at what the command says: the file is
//   only ever read, never trusted for more than its bytes.

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

/**
 * Runs the facts' scans over `bytes` of made-up output (lines of 100 bytes), so that V8 compiles
 * them before a first command's output arrives (the host's warm-up, src/host/warmup.ts).
 */
export function warmOutputFacts(bytes = 2 * 1024 * 1024): void {
  const piece = Buffer.from(`${'x'.repeat(99)}\n`.repeat(1311));
  const utf8 = new Utf8Check();
  const lines = new Lines();
  for (let offset = 0; offset < bytes; offset += piece.length) {
    utf8.push(piece);
    lines.push(piece, offset);
  }
}

/** What the host reads of a file at once. */
const PIECE = 4 * 1024 * 1024;
/** The most output a command may write before it is stopped (as a pipe's reader stopped it). */
export const OUTPUT_LIMIT = 256 * 1024 * 1024;
const FOLLOW_FIRST_MS = 16;
const FOLLOW_MAX_MS = 250;

export interface OutputFileOptions {
  /** Past this many bytes the facts decide the cut and the file stays (else it goes). */
  threshold: number;
  /** Each new piece of output, as read (the live view). */
  onOutput?: (chunk: Uint8Array) => void;
  /** Called once when the output passed `limit`. */
  onLimit?: () => void;
  /** Bytes before `onLimit` (default `OUTPUT_LIMIT`). */
  limit?: number;
}

export class OutputFile {
  /** All the output, while it fits under the threshold. */
  private small: Uint8Array[] = [];
  /** The last pieces, at least `keepEnd` bytes of them. */
  private recent: Uint8Array[] = [];
  private recentBytes = 0;
  private received = 0;
  private head = Buffer.alloc(0);
  private readonly utf8 = new Utf8Check();
  private readonly lines = new Lines();
  private reading: Promise<void> = Promise.resolve();
  private failed = false;
  private limited = false;
  private open = true;
  private readonly keepEnd: number;

  private constructor(
    private readonly path: string,
    private readonly fs: TruncateFs,
    private readonly file: SpillFile,
    private readonly options: OutputFileOptions,
  ) {
    this.keepEnd = Math.max(options.threshold, MAX_BYTES) * 2 + 16;
  }

  /** A new, empty output file at `path`; undefined when it cannot be made. */
  static async create(
    path: string,
    fs: TruncateFs,
    options: OutputFileOptions,
  ): Promise<OutputFile | undefined> {
    const file = await fs.create?.(path).catch(() => undefined);
    return file === undefined ? undefined : new OutputFile(path, fs, file, options);
  }

  /** The descriptor the command writes to. */
  get fd(): number {
    return this.file.fd;
  }

  /** Reads what was written since the last look (looks run one after another). */
  catchUp(): Promise<void> {
    this.reading = this.reading.then(() => this.readNew());
    return this.reading;
  }

  /**
   * Looks at the file while the command runs, often while it grows and less often while it does
   * not; the function returned stops looking.
   */
  follow(): () => void {
    let wait = FOLLOW_FIRST_MS;
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const look = (): void => {
      const before = this.received;
      void this.catchUp().then(() => {
        if (stopped) return;
        wait = this.received > before ? FOLLOW_FIRST_MS : Math.min(wait * 2, FOLLOW_MAX_MS);
        timer = setTimeout(look, wait);
      });
    };
    timer = setTimeout(look, wait);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /** Reads from where the last read ended up to the file's size when the look began. */
  private async readNew(): Promise<void> {
    if (!this.open || this.failed) return;
    try {
      const { size } = await this.file.stat();
      while (this.received < size) {
        const piece = Buffer.allocUnsafe(Math.min(size - this.received, PIECE));
        const { bytesRead } = await this.file.read(piece, 0, piece.length, this.received);
        if (bytesRead === 0) break;
        this.take(piece.subarray(0, bytesRead));
      }
    } catch {
      this.failed = true;
    }
  }

  /** One piece more: the facts, the kept bytes, the live view. */
  private take(bytes: Buffer): void {
    if (this.head.length < 3) this.head = Buffer.concat([this.head, bytes.subarray(0, 3)]);
    this.utf8.push(bytes);
    this.lines.push(bytes, this.received);
    this.received += bytes.length;
    // Of a long piece, only its end can be wanted.
    const end = bytes.length > this.keepEnd ? bytes.subarray(bytes.length - this.keepEnd) : bytes;
    this.recent.push(end);
    this.recentBytes += end.length;
    while (this.recentBytes - (this.recent[0]?.length ?? 0) >= this.keepEnd) {
      this.recentBytes -= this.recent.shift()?.length ?? 0;
    }
    if (this.received <= this.options.threshold) this.small.push(bytes);
    else this.small = [];
    this.options.onOutput?.(bytes);
    if (!this.limited && this.received > (this.options.limit ?? OUTPUT_LIMIT)) {
      this.limited = true;
      this.options.onLimit?.();
    }
  }

  /** The whole output: kept, or read back from the file. */
  private async whole(): Promise<Uint8Array> {
    if (this.received <= this.options.threshold && !this.failed) return Buffer.concat(this.small);
    // After a failed read, all that is in the file.
    const length = this.failed ? Number.MAX_SAFE_INTEGER : this.received;
    const start = await this.fs.readStart?.(this.path, length);
    if (start === undefined || (!this.failed && start.length !== this.received)) {
      throw new Error('the output file cannot be read back');
    }
    return start;
  }

  /** What the gathered facts say of the cut, when they settle it as the whole bytes would. */
  private shape(maxBytes: number): OutputShape | undefined {
    const { lines } = this;
    const end = lines.lastText + 1;
    const tailStart = this.received - this.recentBytes;
    const last = this.recent.length === 0 ? undefined : this.lastByte();
    const settled =
      !this.failed &&
      this.received > this.options.threshold &&
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

  /**
   * The output cut for the result (`truncateOutputTail`'s result) once the command ended: what is
   * left is read, the file kept at the cut's length or removed.
   */
  async cut(options: Omit<TruncateForResultOptions, 'mode'>): Promise<TruncatedOutput> {
    await this.catchUp();
    const shape = this.shape(options.maxBytes ?? MAX_BYTES);
    if (shape !== undefined) {
      try {
        await this.file.truncate(shape.end);
        await this.close();
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
    await this.discard();
    if (bytes === undefined) throw new Error('the output could not be read back');
    return truncateOutputTail(bytes, options, this.fs);
  }

  private async close(): Promise<void> {
    if (!this.open) return;
    this.open = false;
    await this.reading;
    await this.file.close().catch(() => undefined);
  }

  /** The output is not wanted (or was cut from its bytes): the file goes. */
  async discard(): Promise<void> {
    if (!this.open) return;
    await this.close();
    await this.fs.remove?.(this.path).catch(() => undefined);
  }
}
