// What a running tool printed so far, for the live view under its block and `:Flemma tool:output`
// (docs/tools.md, "Watching a command run").
//
// Decisions:
// - Memory is bounded. The live view reads the last `keep` bytes, kept in one buffer of twice
//   that size made on the first output: a chunk costs a copy of its bytes, no string; the kept
//   part is moved down only once the buffer is full, so the cost stays linear in what was
//   printed. `:Flemma tool:output` reads the whole output so far: the pieces themselves, as the
//   runner read them (no copy), up to `WHOLE_KEEP_BYTES`, beyond which the oldest go (the end is
//   what is shown, as for a saved output).
// - Decoding and formatting happen only when the view is drawn (at most once a frame): the last
//   lines are found from the end, and only those are decoded and made safe to show.
// - The output is untrusted and shown as virtual text, never interpreted: escape sequences (CSI,
//   OSC, the two-character ones), control characters (C0, DEL, C1) and the bidirectional
//   overrides are removed, a tab becomes spaces, and a line rewritten with `\r` (a progress bar)
//   shows what it says last, as a terminal would.

/** Bytes kept of a running call's output (as the result keeps, 50 KB, with room). */
export const TAIL_KEEP_BYTES = 64 * 1024;
/** Bytes of a running call's output `:Flemma tool:output` can show (its end beyond that). */
export const WHOLE_KEEP_BYTES = 8 * 1024 * 1024;
/** A shown line is cut to this many characters. */
export const LIVE_LINE_CHARS = 240;

// eslint-disable-next-line no-control-regex -- the escape sequences are what is removed
const ESCAPES = /\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~]?)/g;
// eslint-disable-next-line no-control-regex -- the control characters are what is removed
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** One line of untrusted output as it may be shown: no escapes, no controls, at most `max` chars. */
export function displayLine(raw: string, max = LIVE_LINE_CHARS): string {
  let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  const rewritten = line.lastIndexOf('\r');
  if (rewritten >= 0) line = line.slice(rewritten + 1);
  // Escapes are short: a few times the shown width is enough to find what is shown.
  if (line.length > max * 4) line = line.slice(0, max * 4);
  line = line.replace(ESCAPES, '').replace(CONTROLS, '').replaceAll('\t', '    ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A byte of a blank end of output: newline, carriage return, space, tab. */
function isBlank(byte: number | undefined): boolean {
  return byte === 0x0a || byte === 0x0d || byte === 0x20 || byte === 0x09;
}

/** The tail of one call's output, as the bytes it printed. */
export class OutputTail {
  /** Twice `keep`, made on the first output: what arrives is copied in, the oldest moved out. */
  private bytes: Buffer | undefined;
  private used = 0;
  private total = 0;
  /** The output as it came, its oldest chunks gone beyond `wholeKeep`. */
  private readonly chunks: Uint8Array[] = [];
  private chunkBytes = 0;

  constructor(
    private readonly keep = TAIL_KEEP_BYTES,
    private readonly wholeKeep = WHOLE_KEEP_BYTES,
  ) {}

  /** More output arrived (a JavaScript tool's text is taken as UTF-8). */
  push(chunk: string | Uint8Array): void {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    this.total += data.length;
    this.keepWhole(data);
    const bytes = (this.bytes ??= Buffer.alloc(this.keep * 2));
    if (data.length >= this.keep) {
      bytes.set(data.subarray(data.length - this.keep));
      this.used = this.keep;
      return;
    }
    if (this.used + data.length > bytes.length) {
      const retain = Math.min(this.used, this.keep - data.length);
      bytes.copyWithin(0, this.used - retain, this.used);
      this.used = retain;
    }
    bytes.set(data, this.used);
    this.used += data.length;
  }

  private keepWhole(data: Uint8Array): void {
    this.chunks.push(data);
    this.chunkBytes += data.length;
    while (
      this.chunks.length > 1 &&
      this.chunkBytes - (this.chunks[0]?.length ?? 0) >= this.wholeKeep
    ) {
      this.chunkBytes -= this.chunks.shift()?.length ?? 0;
    }
  }

  /** The kept bytes from `from` to `end`, decoded; a character cut at the start is left out. */
  private decode(from: number, end = this.used): string {
    if (this.bytes === undefined) return '';
    let start = from;
    // UTF-8 continuation bytes (10xxxxxx) belong to a character that began before.
    while (start < end && start < from + 3 && ((this.bytes[start] ?? 0) & 0xc0) === 0x80) {
      start += 1;
    }
    return this.bytes.toString('utf8', start, end);
  }

  /**
   * The output so far (its start cut beyond `wholeKeep`, a character cut there left out) and how
   * many bytes came before it.
   */
  snapshot(): { text: string; dropped: number } {
    const whole = Buffer.concat(this.chunks, this.chunkBytes);
    let start = 0;
    if (this.chunkBytes < this.total) {
      // UTF-8 continuation bytes (10xxxxxx) belong to a character that began before.
      while (start < 3 && ((whole[start] ?? 0) & 0xc0) === 0x80) start += 1;
    }
    return { text: whole.toString('utf8', start), dropped: this.total - this.chunkBytes };
  }

  /** The last `count` lines, made safe to show; blank lines at the end are left out. */
  lastLines(count: number): string[] {
    const bytes = this.bytes;
    if (bytes === undefined || count <= 0) return [];
    const floor = Math.max(0, this.used - this.keep);
    let end = this.used;
    while (end > floor && isBlank(bytes[end - 1])) end -= 1;
    // Only the end is decoded: back from it to the newline before the last `count` lines.
    let from = end;
    for (let found = 0; found < count && from > floor; found += 1) {
      from = Math.max(floor, bytes.lastIndexOf(0x0a, from - 1));
    }
    if (from === end) return [];
    const start = bytes[from] === 0x0a ? from + 1 : from;
    return this.decode(start, end)
      .split('\n')
      .map((line) => displayLine(line));
  }
}
