// The `read` tool: returns a text file's lines, or a file reference for a binary file so that the
// image or PDF reaches the model as an attachment when the result is sent.
//
// Decisions:
// - The path is resolved against the chat file's directory (the working directory for an unsaved
//   chat). Reads are never limited by the sandbox's write policy; with `sandbox.roots` configured
//   the path is confined to the roots instead (relative to the first one; see sandbox/roots.ts).
// - The MIME type comes from a small table of extensions. A file whose extension is not in the
//   table is binary when its first 8 KB hold a NUL byte, text otherwise. A known text extension is
//   trusted without looking at the content.
// - Text means `text/*` or a MIME type naming json, javascript, typescript, xml, yaml, toml or sql
//   (so SVG, `image/svg+xml`, is read as text). Everything else is returned as a reference
//   `@<where>;type=<mime>`, written the way the chat parser reads references back:
//     `@./<rel>`   the file is below the chat file's directory,
//     `@~/<rel>`   else below the home directory,
//     `@//<abs>`   else (the absolute path with its leading `/` doubled).
//   An unsaved chat has no directory to be relative to, so it only gets the last two forms.
//   Characters the parser would end the reference at or decode are percent-encoded: whitespace,
//   `#`, `%`, `?`, `;`, and also `+`, which the parser decodes as a space.
// - Lines are separated by `\n`; a final newline does not start another line, so a 3-line file
//   ending in a newline has 3 lines. `\r` stays part of its line.
// - `offset` is the 1-based first line (values below 1 read as 1); `limit` is the most lines
//   returned. An offset past the last line is an error, except offset 1 of an empty file.
// - The selected lines are cut at the usual limits keeping the start. The cut's notice is
//   rewritten in file line numbers (not numbers within the selection), and when lines remain
//   after the last one shown, a last line says which offset continues the read.
// - An empty file reads as `(empty file)`, so the model can tell it from a failed read.

import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import {
  FileReadError,
  READ_FLAGS,
  TOOL_READ_LIMIT_BYTES,
  readBounded,
  readBoundedSync,
} from '../../util/bounded-read.js';
import { extname, relative } from 'node:path';

import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';
import {
  MAX_BYTES,
  MAX_LINES,
  type TruncateFs,
  nodeTruncateFs,
  truncateForResult,
} from '../truncate.js';
import { escapes, positiveInt } from './ls.js';
import { builtinTool, optional, needing, textOf } from './builtin.js';
import { toolPath } from './write.js';

/** How much of a file with an unknown extension is inspected for NUL bytes. */
export const SNIFF_BYTES = 8192;

/** MIME types by lower-case extension (without the dot). */
const MIME_BY_EXTENSION: Readonly<Record<string, string>> = {
  // Images
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  bmp: 'image/bmp',
  ico: 'image/x-icon',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  avif: 'image/avif',
  heic: 'image/heic',
  svg: 'image/svg+xml',
  // Documents and archives
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  bz2: 'application/x-bzip2',
  xz: 'application/x-xz',
  zst: 'application/zstd',
  '7z': 'application/x-7z-compressed',
  rar: 'application/vnd.rar',
  jar: 'application/java-archive',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  // Audio, video, fonts
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
  webm: 'video/webm',
  mkv: 'video/x-matroska',
  avi: 'video/x-msvideo',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
  // Compiled code and databases
  wasm: 'application/wasm',
  class: 'application/java-vm',
  exe: 'application/vnd.microsoft.portable-executable',
  dll: 'application/vnd.microsoft.portable-executable',
  so: 'application/octet-stream',
  dylib: 'application/octet-stream',
  o: 'application/octet-stream',
  a: 'application/octet-stream',
  bin: 'application/octet-stream',
  pyc: 'application/octet-stream',
  sqlite: 'application/vnd.sqlite3',
  db: 'application/vnd.sqlite3',
  // Text
  txt: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  json: 'application/json',
  jsonl: 'application/json',
  js: 'application/javascript',
  mjs: 'application/javascript',
  cjs: 'application/javascript',
  jsx: 'application/javascript',
  ts: 'application/typescript',
  mts: 'application/typescript',
  cts: 'application/typescript',
  tsx: 'application/typescript',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  toml: 'application/toml',
  sql: 'application/sql',
  lua: 'text/x-lua',
  py: 'text/x-python',
  rb: 'text/x-ruby',
  rs: 'text/x-rust',
  go: 'text/x-go',
  c: 'text/x-c',
  h: 'text/x-c',
  cpp: 'text/x-c++',
  hpp: 'text/x-c++',
  java: 'text/x-java',
  sh: 'text/x-shellscript',
  bash: 'text/x-shellscript',
  zsh: 'text/x-shellscript',
  vim: 'text/plain',
  chat: 'text/plain',
};

/** The MIME type the extension table gives `path`, or undefined for an unknown extension. */
export function mimeFromExtension(path: string): string | undefined {
  const ext = extname(path).slice(1).toLowerCase();
  if (ext === '' || !Object.hasOwn(MIME_BY_EXTENSION, ext)) return undefined;
  return MIME_BY_EXTENSION[ext];
}

const TEXT_MIME_WORDS = /json|javascript|typescript|xml|yaml|toml|sql/u;

/** `true` for MIME types whose content is returned as text. */
export function isTextMime(mime: string): boolean {
  return mime.startsWith('text/') || TEXT_MIME_WORDS.test(mime);
}

/**
 * `true` when the first `SNIFF_BYTES` of the file hold a NUL byte, or it is not a regular file
 * (opened without blocking: a FIFO named here must not hang the host).
 */
function looksBinary(path: string): boolean {
  // A few KiB from the start: read synchronously, like the small files themselves.
  const fd = openSync(path, READ_FLAGS);
  try {
    if (!fstatSync(fd).isFile()) return true;
    const buffer = Buffer.alloc(SNIFF_BYTES);
    const bytesRead = readSync(fd, buffer, 0, SNIFF_BYTES, 0);
    return buffer.subarray(0, bytesRead).includes(0);
  } finally {
    closeSync(fd);
  }
}

/** The file's MIME type: from its extension, else `application/octet-stream` or `text/plain`. */
export function detectMime(path: string): string {
  const known = mimeFromExtension(path);
  if (known !== undefined) return known;
  return looksBinary(path) ? 'application/octet-stream' : 'text/plain';
}

const NEEDS_ESCAPE = /[\s#%?;+]/gu;

/** `path` with the characters a file reference cannot hold literally percent-encoded (UTF-8). */
export function encodeReferencePath(path: string): string {
  return path.replace(NEEDS_ESCAPE, (ch) => encodeURIComponent(ch));
}

/**
 * The file reference for `abs` as the chat file in `chatDir` should hold it (see the header for
 * the three forms); `chatDir` is undefined for an unsaved chat.
 */
export function fileReference(
  abs: string,
  mime: string,
  chatDir: string | undefined,
  home: string,
): string {
  let where: string;
  const belowChat = chatDir === undefined ? undefined : relative(chatDir, abs);
  const belowHome = relative(home, abs);
  if (belowChat !== undefined && belowChat !== '' && !escapes(belowChat)) {
    where = `./${belowChat}`;
  } else if (home !== '/' && belowHome !== '' && !escapes(belowHome)) {
    where = `~/${belowHome}`;
  } else {
    where = `/${abs}`;
  }
  return `@${encodeReferencePath(where)};type=${mime}`;
}

/** The lines of `text`: a final newline ends the last line rather than starting another. */
function splitLines(text: string): string[] {
  if (text === '') return [];
  return (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
}

const SHOWING = /^\[Showing lines (\d+)-(\d+) of (\d+)/u;

/**
 * `selected`, the lines of a `total`-line file starting at line `first` (1-based), cut to the
 * usual limits, with notices in file line numbers.
 */
async function selectionText(
  selected: readonly string[],
  first: number,
  total: number,
  ctx: ToolContext,
  fs: TruncateFs,
): Promise<string> {
  const cut = await truncateForResult(
    selected.join('\n'),
    { source: 'read', id: ctx.tool_id, mode: 'head' },
    fs,
  );
  let text = cut.text;
  let shown = selected.length;
  if (cut.truncated) {
    shown = cut.details.shownLines;
    const content = cut.details.content;
    const noticeStart = content === '' ? 0 : content.length + 2;
    const notice = text
      .slice(noticeStart)
      .replace(
        SHOWING,
        (_all, a: string, b: string) =>
          `[Showing lines ${Number(a) + first - 1}-${Number(b) + first - 1} of ${total}`,
      );
    text = text.slice(0, noticeStart) + notice;
  }
  const last = first - 1 + shown;
  if (last < total) {
    const more = `[${total - last} more lines in file. Use offset=${last + 1} to continue.]`;
    text = text === '' ? more : `${text}${cut.truncated ? '\n' : '\n\n'}${more}`;
  }
  return text;
}

export interface ReadToolOptions {
  /** The home directory used for `@~/` references (default: the user's). */
  home?: string;
  /** Where overflow files go (tests point this at a temp directory). */
  truncateFs?: TruncateFs;
}

/** Files up to this size are read synchronously. */
const SYNC_READ_BYTES = 64 * 1024;

async function executeRead(
  path: string,
  fields: Record<string, unknown>,
  ctx: ToolContext,
  options: ReadToolOptions,
): Promise<ToolOutcome> {
  const where = await toolPath(ctx, path, false);
  if (!where.ok) return where;
  const abs = where.abs;

  let size: number;
  try {
    // NOTE: a stat and a small file's read are done synchronously (tens of microseconds):
    // through the thread pool, each step would wait for a turn of a busy event loop, and a
    // model's parallel reads of small files are the common case.
    const info = statSync(abs);
    if (info.isDirectory()) {
      return { ok: false, error: `${path} is a directory; use the ls tool to list it` };
    }
    if (!info.isFile()) return { ok: false, error: `Not a regular file: ${path}` };
    size = info.size;
  } catch {
    return { ok: false, error: `File not found: ${path}` };
  }

  let text: string;
  try {
    const mime = detectMime(abs);
    if (!isTextMime(mime)) {
      const reference = fileReference(abs, mime, ctx.__dirname, options.home ?? homedir());
      return { ok: true, output: reference };
    }
    // Bounded and checked again on the descriptor (src/core/util/bounded-read.ts): a file swapped
    // for a FIFO or a device since the stat is refused, and a huge one is not read whole.
    const limits = { maxBytes: TOOL_READ_LIMIT_BYTES, name: path };
    text = (
      size <= SYNC_READ_BYTES ? readBoundedSync(abs, limits) : await readBounded(abs, limits)
    ).data.toString('utf8');
  } catch (err) {
    if (err instanceof FileReadError) {
      const hint =
        err.problem === 'too-large' ? '; read parts of it with bash (head, tail, sed -n)' : '';
      return { ok: false, error: err.message + hint };
    }
    return {
      ok: false,
      error: `Cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`,
    };
  }

  const lines = splitLines(text);
  const offset = positiveInt(fields['offset'], 1);
  if (offset > lines.length && !(offset === 1 && lines.length === 0)) {
    return {
      ok: false,
      error: `Offset ${offset} is beyond end of file (${lines.length} lines total)`,
    };
  }
  if (lines.length === 0) return { ok: true, output: '(empty file)' };

  const limit = positiveInt(fields['limit'], Number.POSITIVE_INFINITY);
  const selected = lines.slice(offset - 1, offset - 1 + limit);
  const output = await selectionText(
    selected,
    offset,
    lines.length,
    ctx,
    options.truncateFs ?? nodeTruncateFs,
  );
  return { ok: true, output };
}

/** A read tool; `readTool` is the one the host registers. */
export function createReadTool(options: ReadToolOptions = {}): ToolDefinition {
  return builtinTool({
    name: 'read',
    description:
      'Read a file. Text files come back as their lines, at most the first ' +
      `${MAX_LINES} lines or ${MAX_BYTES / 1024}KB of the selected range; use offset and limit ` +
      'to read a large file in parts (the output says which offset continues). Images, PDFs and ' +
      'other binary files come back as a file reference, and images and PDFs are then attached ' +
      'for you to see.',
    why: 'read the file, e.g. "check the config"',
    properties: {
      path: {
        type: 'string',
        description:
          "The file to read: absolute, `~/`-relative, or relative to the chat file's directory.",
      },
      offset: optional(
        'number',
        'The first line to return, counting from 1 (null: the start of the file).',
      ),
      limit: optional('number', 'The most lines to return (null: up to the output limits).'),
    },
    label: 'Read file',
    // An image or a PDF comes back as a reference, read when the result is sent.
    templateToolResult: true,
    execute: needing('path', (path, fields, ctx) => executeRead(path, fields, ctx, options)),
    detail: (input) => {
      const detail = [textOf(input, 'path')];
      const offset = input['offset'];
      const limit = input['limit'];
      const hasOffset = typeof offset === 'number';
      const hasLimit = typeof limit === 'number';
      if (hasOffset || hasLimit) {
        detail.push(`+${hasOffset ? offset : 0}${hasLimit ? `,${limit}` : ''}`);
      }
      return detail;
    },
  });
}

export const readTool: ToolDefinition = createReadTool();
