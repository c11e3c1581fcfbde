// Output truncation for tool results (docs/tools.md, "Execution": whenever output is cut,
// the full text is saved to a temp file and the result names that file).
//
// Conventions, decided here:
// - Limits: at most MAX_LINES lines AND at most MAX_BYTES UTF-8 bytes. Text that is exactly at a
//   limit is not truncated; one line or one byte more is.
// - Lines are separated by "\n". A single trailing newline terminates the last line: it adds no
//   empty line and does not count toward the byte limit ("a\nb\n" is 2 lines of 3 bytes). It is
//   still part of `totalBytes` and of the saved full output. "\r" is kept as part of its line.
// - Truncated content holds whole lines joined by "\n" (no trailing newline). Byte counts include
//   the "\n" separators between kept lines.
// - When not even one whole line fits in the byte budget, that line (the first for head, the last
//   for tail) is cut at a code-point boundary, never inside a multi-byte character, and marked:
//   head keeps its start followed by HEAD_CUT_MARKER, tail keeps its end preceded by TAIL_CUT_MARKER.
//   The marker counts toward the byte limit.
// - Sizes are 1024-based, as Lua's `ctx.truncate.format_size(12345) == "12.1KB"` (docs/tools.md): `512B`, `1.5KB`,
//   `2.0MB`, `1.0GB` (no space; one decimal above bytes; a value that rounds up to 1024.0 of a unit
//   is written in the next unit).
// - Notices (truncateForResult), after a blank line; `<where>` is ` Full output: <path>` or, when
//   the file could not be written, ` Full output could not be saved.`:
//     `[Showing lines <a>-<b> of <total>.<where>]`                  line limit hit
//     `[Showing lines <a>-<b> of <total> (50.0KB limit).<where>]`   byte limit hit
//     `[Output too large: <size> in a single line, exceeds 50.0KB limit; showing the first <kept>.<where>]`
//     `[Showing last <kept> of line <n>.<where>]`                   tail, last line cut
// - A program's output may come as bytes (`truncateOutputTail`, bash): it is cut as the text they
//   decode to, trailing whitespace removed (`trimEnd`), would be. Megabytes of valid UTF-8 are not
//   made into text for that: only the end that can be kept is decoded (all kept lines lie in the
//   last MAX_BYTES bytes), the lines are counted on the bytes, and the full output is saved from
//   them (the same bytes the text would give). Anything else (a small output, bytes that are not
//   UTF-8, a byte-order mark, whitespace beyond ASCII at the end) is decoded whole, as before.

import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isUtf8 } from 'node:buffer';
import { open, readFile, unlink, writeFile } from 'node:fs/promises';

export const MAX_LINES = 2000;
export const MAX_BYTES = 50 * 1024;

/** Appended to the kept start of a single line too big for the byte limit (head). */
export const HEAD_CUT_MARKER = ' ... [truncated]';
/** Prepended to the kept end of a single line too big for the byte limit (tail). */
export const TAIL_CUT_MARKER = '[truncated] ... ';

export interface TruncateLimits {
  maxLines?: number;
  maxBytes?: number;
}

/** A line that was cut because it alone exceeded the byte limit. */
export interface CutLine {
  /** 1-based number of the cut line in the original text. */
  line: number;
  /** UTF-8 size of the whole original line. */
  lineBytes: number;
  /** UTF-8 bytes of the line that were kept (the marker excluded). */
  keptBytes: number;
}

export interface TruncationResult {
  content: string;
  truncated: boolean;
  /** Which limit caused the cut; null when not truncated. */
  truncatedBy: 'lines' | 'bytes' | null;
  totalLines: number;
  totalBytes: number;
  /** Lines present in `content` (a cut line counts as one). */
  shownLines: number;
  /** UTF-8 size of `content`. */
  shownBytes: number;
  /** Set when a single over-long line was cut; null otherwise. */
  cutLine: CutLine | null;
}

const UNITS = ['B', 'KB', 'MB', 'GB'] as const;

/** Human-readable, 1024-based size: `512B`, `12.1KB`, `2.0MB`, `1.0GB`. */
export function formatSize(bytes: number): string {
  const n = Number.isFinite(bytes) && bytes > 0 ? bytes : 0;
  if (n < 1024) return `${Math.round(n)}B`;
  let value = n / 1024;
  let unit = 1;
  while (unit < UNITS.length - 1 && Number(value.toFixed(1)) >= 1024) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)}${UNITS[unit] ?? 'GB'}`;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

function limitsOf(limits: TruncateLimits): { maxLines: number; maxBytes: number } {
  const clean = (value: number | undefined, fallback: number): number =>
    value === undefined || Number.isNaN(value) ? fallback : Math.max(0, Math.floor(value));
  return {
    maxLines: clean(limits.maxLines, MAX_LINES),
    maxBytes: clean(limits.maxBytes, MAX_BYTES),
  };
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  return body.split('\n');
}

const isContinuation = (byte: number | undefined): boolean =>
  byte !== undefined && (byte & 0xc0) === 0x80;

/** The longest start of `line` that fits in `budget` bytes, ending on a code-point boundary. */
function cutStart(line: string, budget: number): string {
  const buf = Buffer.from(line, 'utf8');
  if (buf.length <= budget) return line;
  let end = Math.max(0, budget);
  while (end > 0 && isContinuation(buf[end])) end -= 1;
  return buf.subarray(0, end).toString('utf8');
}

/** The longest end of `line` that fits in `budget` bytes, starting on a code-point boundary. */
function cutEnd(line: string, budget: number): string {
  const buf = Buffer.from(line, 'utf8');
  if (buf.length <= budget) return line;
  let start = buf.length - Math.max(0, budget);
  while (start < buf.length && isContinuation(buf[start])) start += 1;
  return buf.subarray(start).toString('utf8');
}

function truncate(text: string, limits: TruncateLimits, fromEnd: boolean): TruncationResult {
  const { maxLines, maxBytes } = limitsOf(limits);
  const lines = splitLines(text);
  const totalLines = lines.length;
  const totalBytes = byteLength(text);
  const bodyBytes = text.endsWith('\n') ? totalBytes - 1 : totalBytes;

  if (totalLines <= maxLines && bodyBytes <= maxBytes) {
    return {
      content: text,
      truncated: false,
      truncatedBy: null,
      totalLines,
      totalBytes,
      shownLines: totalLines,
      shownBytes: totalBytes,
      cutLine: null,
    };
  }

  // Take whole lines from the chosen end while both limits allow.
  const kept: string[] = [];
  let used = 0;
  for (let i = 0; i < totalLines && kept.length < maxLines; i += 1) {
    const line = lines[fromEnd ? totalLines - 1 - i : i] ?? '';
    const cost = byteLength(line) + (kept.length > 0 ? 1 : 0);
    if (used + cost > maxBytes) break;
    used += cost;
    kept.push(line);
  }
  if (fromEnd) kept.reverse();
  const truncatedBy = kept.length >= maxLines ? 'lines' : 'bytes';

  let content = kept.join('\n');
  let cutLine: CutLine | null = null;
  if (kept.length === 0 && maxLines > 0 && totalLines > 0) {
    // Not even one whole line fits: cut the edge line at a character boundary, with a marker.
    const lineNo = fromEnd ? totalLines : 1;
    const line = lines[lineNo - 1] ?? '';
    const marker = fromEnd ? TAIL_CUT_MARKER : HEAD_CUT_MARKER;
    const markerBytes = byteLength(marker);
    const withMarker = maxBytes > markerBytes;
    const budget = withMarker ? maxBytes - markerBytes : maxBytes;
    const piece = fromEnd ? cutEnd(line, budget) : cutStart(line, budget);
    if (withMarker) content = fromEnd ? marker + piece : piece + marker;
    else content = piece;
    cutLine = { line: lineNo, lineBytes: byteLength(line), keptBytes: byteLength(piece) };
  }

  return {
    content,
    truncated: true,
    truncatedBy,
    totalLines,
    totalBytes,
    shownLines: cutLine ? 1 : kept.length,
    shownBytes: byteLength(content),
    cutLine,
  };
}

/** Keep the first lines (file reads, listings, search results). */
export function truncateHead(text: string, limits: TruncateLimits = {}): TruncationResult {
  return truncate(text, limits, false);
}

/** Keep the last lines (command output, where the end matters). */
export function truncateTail(text: string, limits: TruncateLimits = {}): TruncationResult {
  return truncate(text, limits, true);
}

/** The filesystem operations truncateForResult needs; inject a fake in tests. */
export interface TruncateFs {
  writeFile(path: string, data: string | Uint8Array): Promise<void>;
  tmpdir(): string;
  /**
   * A new, empty file for a command to write its output to (output-file.ts), open to read and
   * append; without it, output is read from a pipe and saved at the end.
   */
  create?(path: string): Promise<SpillFile>;
  remove?(path: string): Promise<void>;
  /** The first `length` bytes of the file at `path` (all of them when it is shorter). */
  readStart?(path: string, length: number): Promise<Uint8Array>;
}

/** The part of an open file an output file uses (Node's `FileHandle`). */
export interface SpillFile {
  readonly fd: number;
  stat(): Promise<{ size: number }>;
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A new file at `path`, never one that is there: whatever is there is removed first and the file
 * is created exclusively, so a link someone left in the shared temp directory is not followed
 * (the create fails instead, and the output is said not saved).
 */
async function fresh(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}

/** Node implementation: the OS temp dir; files readable by the owner only (output may be private). */
export const nodeTruncateFs: TruncateFs = {
  writeFile: async (path, data) => {
    await fresh(path);
    await writeFile(path, data, { encoding: 'utf8', mode: 0o600, flag: 'wx' });
  },
  tmpdir: () => tmpdir(),
  create: async (path) => {
    await fresh(path);
    // Exclusive (a link put there is not followed), appended to by every writer.
    return open(path, 'ax+', 0o600);
  },
  remove: (path) => unlink(path),
  readStart: async (path, length) => (await readFile(path)).subarray(0, length),
};

export interface TruncateForResultOptions extends TruncateLimits {
  /** What produced the output, e.g. the tool name `bash`. */
  source: string;
  /** Unique id of this output, e.g. the tool-use id `toolu_01`. */
  id: string;
  mode: 'head' | 'tail';
}

export interface TruncatedOutput {
  /** The text to return: unchanged, or the kept content, a blank line and the notice. */
  text: string;
  truncated: boolean;
  /** Where the full output was saved; null when not truncated or when saving failed. */
  fullOutputPath: string | null;
  details: TruncationResult;
}

/** A file-name-safe fragment: only [A-Za-z0-9._-], at most 80 characters, never empty. */
function fileNamePart(value: string): string {
  const safe = value.replace(/[^A-Za-z0-9._-]/gu, '_').slice(0, 80);
  return safe === '' ? '_' : safe;
}

/** `<tmpdir>/flemma_<source>_<id>.txt`, with source and id sanitized. */
export function overflowPath(source: string, id: string, dir: string): string {
  return join(dir, `flemma_${fileNamePart(source)}_${fileNamePart(id)}.txt`);
}

function notice(
  details: TruncationResult,
  mode: 'head' | 'tail',
  maxBytes: number,
  savedTo: string | null,
): string {
  const where = savedTo === null ? ' Full output could not be saved.' : ` Full output: ${savedTo}`;
  const total = details.totalLines;
  const cut = details.cutLine;
  if (cut !== null) {
    if (mode === 'head') {
      const size = formatSize(cut.lineBytes);
      const limit = formatSize(maxBytes);
      return `[Output too large: ${size} in a single line, exceeds ${limit} limit; showing the first ${formatSize(cut.keptBytes)}.${where}]`;
    }
    return `[Showing last ${formatSize(cut.keptBytes)} of line ${cut.line}.${where}]`;
  }
  if (details.shownLines === 0) return `[Showing no lines of ${total}.${where}]`;
  const from = mode === 'head' ? 1 : total - details.shownLines + 1;
  const to = mode === 'head' ? details.shownLines : total;
  const why = details.truncatedBy === 'bytes' ? ` (${formatSize(maxBytes)} limit)` : '';
  return `[Showing lines ${from}-${to} of ${total}${why}.${where}]`;
}

/**
 * Truncate tool output for a result. Under the limits the text comes back unchanged and no file is
 * written. Over them, the FULL text is first written to `<tmpdir>/flemma_<source>_<id>.txt`, and the
 * kept content is followed by a blank line and a notice naming that file, e.g.
 * `[Showing lines 3322-5321 of 5321. Full output: /tmp/flemma_bash_toolu_01.txt]`. If the file
 * cannot be written the notice says so instead of naming a path. Never throws.
 */
export async function truncateForResult(
  text: string,
  options: TruncateForResultOptions,
  fs: TruncateFs,
): Promise<TruncatedOutput> {
  const limits: TruncateLimits = {};
  if (options.maxLines !== undefined) limits.maxLines = options.maxLines;
  if (options.maxBytes !== undefined) limits.maxBytes = options.maxBytes;
  const details = options.mode === 'tail' ? truncateTail(text, limits) : truncateHead(text, limits);
  if (!details.truncated) {
    return { text, truncated: false, fullOutputPath: null, details };
  }
  return saved(details, text, options, fs);
}

/** A cut output: `full` saved, and the kept content followed by the notice. */
async function saved(
  details: TruncationResult,
  full: string | Uint8Array,
  options: TruncateForResultOptions,
  fs: TruncateFs,
): Promise<TruncatedOutput> {
  let savedTo: string | null = null;
  try {
    const path = overflowPath(options.source, options.id, fs.tmpdir());
    await fs.writeFile(path, full);
    savedTo = path;
  } catch {
    savedTo = null;
  }
  return noticed(details, options.mode, limitsOf(options).maxBytes, savedTo);
}

function noticed(
  details: TruncationResult,
  mode: 'head' | 'tail',
  maxBytes: number,
  savedTo: string | null,
): TruncatedOutput {
  const line = notice(details, mode, maxBytes, savedTo);
  const out = details.content === '' ? line : `${details.content}\n\n${line}`;
  return { text: out, truncated: true, fullOutputPath: savedTo, details };
}

const NEWLINE = 0x0a;

/** Whether `byte` is whitespace to `trimEnd` (tab, line feed, vertical tab, form feed, CR, space). */
const isAsciiSpace = (byte: number | undefined): boolean =>
  byte === 0x20 || (byte !== undefined && byte >= 0x09 && byte <= 0x0d);

/**
 * Where the text of `bytes` ends once `trimEnd` removed its trailing whitespace; undefined when
 * the bytes alone do not tell (a character beyond ASCII comes first, which may be whitespace).
 */
function trimmedEnd(bytes: Uint8Array): number | undefined {
  let end = bytes.length;
  while (end > 0 && isAsciiSpace(bytes[end - 1])) end -= 1;
  return end > 0 && (bytes[end - 1] ?? 0) >= 0x80 ? undefined : end;
}

/** Whether `bytes` start with UTF-8's byte-order mark (which decoding drops). */
const hasBom = (bytes: Uint8Array): boolean =>
  bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;

/** The lines of `body` (which does not end with a newline), and where its last line starts. */
function countLines(body: Buffer): { lines: number; lastStart: number } {
  let lines = 1;
  let lastStart = 0;
  for (let at = body.indexOf(NEWLINE); at !== -1; at = body.indexOf(NEWLINE, at + 1)) {
    lines += 1;
    lastStart = at + 1;
  }
  return { lines, lastStart };
}

/**
 * `truncateForResult` in tail mode of the text `bytes` decode to (UTF-8), trailing whitespace
 * removed: the same result, without decoding megabytes (see the conventions above).
 */
export async function truncateOutputTail(
  bytes: Uint8Array,
  options: Omit<TruncateForResultOptions, 'mode'>,
  fs: TruncateFs,
): Promise<TruncatedOutput> {
  const tail: TruncateForResultOptions = { ...options, mode: 'tail' };
  const { maxBytes } = limitsOf(options);
  const end = trimmedEnd(bytes);
  if (end === undefined || end <= maxBytes || hasBom(bytes) || !isUtf8(bytes)) {
    return truncateForResult(new TextDecoder().decode(bytes).trimEnd(), tail, fs);
  }
  const body = Buffer.from(bytes.buffer, bytes.byteOffset, end);
  const details = tailDetails(body, 0, { ...countLines(body), end }, options);
  return saved(details, body, tail, fs);
}

/** Where a long output's text ends once trimmed, how many lines it has, where its last starts. */
export interface OutputShape {
  end: number;
  lines: number;
  lastStart: number;
}

/**
 * The cut of an output of `shape` whose bytes from `offset` on (up to its trimmed end) are
 * `window`, which holds at least its last `maxBytes` + 4 bytes: those hold every line that can be
 * kept and a line more that cannot (complete or not), so the window is cut as the whole would be,
 * from the start of a character.
 */
export function tailDetails(
  window: Uint8Array,
  offset: number,
  shape: OutputShape,
  limits: TruncateLimits,
): TruncationResult {
  const { maxLines, maxBytes } = limitsOf(limits);
  const bytes = Buffer.from(window.buffer, window.byteOffset, shape.end - offset);
  let start = Math.max(0, shape.end - maxBytes - 1 - offset);
  while (start > 0 && isContinuation(bytes[start])) start -= 1;
  const cut = truncateTail(bytes.subarray(start).toString('utf8'), { maxLines, maxBytes });
  return {
    ...cut,
    totalLines: shape.lines,
    totalBytes: shape.end,
    cutLine:
      cut.cutLine === null
        ? null
        : { ...cut.cutLine, line: shape.lines, lineBytes: shape.end - shape.lastStart },
  };
}

/** A cut output whose full text is already in the file at `path` (output-file.ts). */
export function savedAt(
  details: TruncationResult,
  options: Omit<TruncateForResultOptions, 'mode'>,
  path: string,
): TruncatedOutput {
  return noticed(details, 'tail', limitsOf(options).maxBytes, path);
}

/**
 * A listing of `source` (find, grep, ls) cut from its head to the limits, the whole saved to a
 * file (`fs`, default the disk) under the call's `id`.
 */
export function truncateListing(
  text: string,
  source: string,
  id: string,
  fs: TruncateFs = nodeTruncateFs,
): Promise<TruncatedOutput> {
  return truncateForResult(text, { source, id, mode: 'head' }, fs);
}
