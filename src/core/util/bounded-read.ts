// Reading a file a model named, with limits (issue 28): the one way the host reads a file to show
// it, compare it, count its lines or hash it. A path can name anything — `/dev/zero`, a FIFO, a
// socket, a file of 10 GB — and the host must neither hang nor grow without bound.
//
// Decisions:
// - The path is looked at first (`stat`, following links): anything but a regular file is refused
//   before it is opened, so a device is never opened (opening one can have effects) and a FIFO
//   never blocks the open. The file is then opened once, with O_NONBLOCK (a FIFO swapped in
//   between does not block either) and O_NOCTTY, and the descriptor is checked again (`fstat`):
//   still a regular file, and the same one that was looked at.
// - At most `maxBytes` are read, whatever the file's size says (a file may grow while it is read,
//   and /proc files say 0): one byte more makes the read fail with `FileReadError` (`too-large`),
//   or, with `truncate`, stop there and say so. A size over the limit fails before any byte is read.
// - `hashFile` hashes a file of any size in pieces (bounded memory), with the same checks.
// - Errors say what the path is and what the limit is, in words a user can act on.
import { createHash } from 'node:crypto';
import { type Stats, closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';

/**
 * The most of a file the host reads into memory to show it, compare it or count its lines (a
 * preview's `+N −M`, the diff view, `:Flemma review`): 1 MiB, the bound a file reference inlines
 * and `tools.undo.max_bytes` keeps by default.
 */
export const VIEW_LIMIT_BYTES = 1024 * 1024;

/**
 * The most of a file a tool reads whole into memory (`edit`, `read`, a declarative `file_read`):
 * 16 MiB. What reaches the model is cut to the output limit (src/core/tools/truncate.ts) anyway.
 */
export const TOOL_READ_LIMIT_BYTES = 16 * 1024 * 1024;

/** The pieces a file is read in. */
const CHUNK_BYTES = 64 * 1024;

export type FileReadProblem = 'not-regular' | 'too-large' | 'changed';

/** A file that may not be read this way, and why (the message is for the user). */
export class FileReadError extends Error {
  override readonly name = 'FileReadError';
  constructor(
    readonly problem: FileReadProblem,
    message: string,
  ) {
    super(message);
  }
}

export interface ReadLimits {
  /** Read at most this many bytes (default `VIEW_LIMIT_BYTES`). */
  maxBytes?: number;
  /** Past the limit, keep the first `maxBytes` and say so, instead of failing. */
  truncate?: boolean;
  /** How the file is named in messages (default: the path). */
  name?: string;
}

export interface BoundedRead {
  data: Buffer;
  /** The file had more than `maxBytes` (only with `truncate`). */
  truncated: boolean;
}

/** `1.0 MiB`-style size for messages. */
export function describeBytes(bytes: number): string {
  if (bytes < 1024) return `${String(bytes)} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit] ?? 'TiB'}`;
}

/** What kind of thing `info` is, in words. */
export function kindOf(info: Stats): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO (named pipe)';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isSocket()) return 'a socket';
  return 'not a regular file';
}

function notRegular(name: string, info: Stats): FileReadError {
  return new FileReadError('not-regular', `${name} is ${kindOf(info)}, not a regular file`);
}

function tooLarge(name: string, size: string, maxBytes: number): FileReadError {
  return new FileReadError(
    'too-large',
    `${name} is too large to read (${size}; the limit is ${describeBytes(maxBytes)})`,
  );
}

/**
 * Opens `path` for reading if it is a regular file (see the decisions above). Errors of the file
 * system (ENOENT, EACCES…) are thrown as they are; anything else as `FileReadError`.
 */
export async function openRegular(path: string, name = path): Promise<FileHandle> {
  const seen = await stat(path);
  if (!seen.isFile()) throw notRegular(name, seen);
  const handle = await open(path, READ_FLAGS);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw notRegular(name, info);
    if (info.dev !== seen.dev || info.ino !== seen.ino) {
      throw new FileReadError('changed', `${name} changed while it was opened; try again`);
    }
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Reads at most `limits.maxBytes` through an open handle of a regular file. */
export async function readHandle(
  handle: FileHandle,
  limits: ReadLimits = {},
): Promise<BoundedRead> {
  const maxBytes = limits.maxBytes ?? VIEW_LIMIT_BYTES;
  const name = limits.name ?? 'the file';
  const info = await handle.stat();
  if (!info.isFile()) throw notRegular(name, info);
  if (info.size > maxBytes && limits.truncate !== true) {
    throw tooLarge(name, describeBytes(info.size), maxBytes);
  }
  const pieces: Buffer[] = [];
  let total = 0;
  // One byte more than the limit tells a file over it from one exactly at it.
  for (;;) {
    const want = Math.min(CHUNK_BYTES, maxBytes + 1 - total);
    if (want <= 0) break;
    const buffer = Buffer.alloc(want);
    const { bytesRead } = await handle.read(buffer, 0, want, total);
    if (bytesRead === 0) break;
    pieces.push(bytesRead === want ? buffer : buffer.subarray(0, bytesRead));
    total += bytesRead;
  }
  return finish(Buffer.concat(pieces, total), maxBytes, name, limits);
}

/** Reads at most `limits.maxBytes` of the regular file at `path`. */
export async function readBounded(path: string, limits: ReadLimits = {}): Promise<BoundedRead> {
  const name = limits.name ?? path;
  const handle = await openRegular(path, name);
  try {
    return await readHandle(handle, { ...limits, name });
  } finally {
    await handle.close();
  }
}

/**
 * The text of the file at `path` (UTF-8), `undefined` when there is no file there. Any other
 * failure is thrown (`FileReadError` for what the limits refuse).
 */
export async function readTextBounded(
  path: string,
  limits: ReadLimits = {},
): Promise<string | undefined> {
  try {
    return (await readBounded(path, limits)).data.toString('utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The flags every read opens with: never blocks on a FIFO, never takes a terminal. */
export const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * `readBounded` done synchronously, for small files on a busy event loop (the `read` tool):
 * the same checks and limits.
 */
export function readBoundedSync(path: string, limits: ReadLimits = {}): BoundedRead {
  const maxBytes = limits.maxBytes ?? VIEW_LIMIT_BYTES;
  const name = limits.name ?? path;
  const seen = statSync(path);
  if (!seen.isFile()) throw notRegular(name, seen);
  const fd = openSync(path, READ_FLAGS);
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw notRegular(name, info);
    if (info.dev !== seen.dev || info.ino !== seen.ino) {
      throw new FileReadError('changed', `${name} changed while it was opened; try again`);
    }
    if (info.size > maxBytes && limits.truncate !== true) {
      throw tooLarge(name, describeBytes(info.size), maxBytes);
    }
    const buffer = Buffer.alloc(Math.min(maxBytes + 1, Math.max(info.size + 1, 1)));
    let total = 0;
    // Grows while the file turns out longer than its size said, up to one byte over the limit.
    for (;;) {
      if (total === buffer.length) break;
      const bytesRead = readSync(fd, buffer, total, buffer.length - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
    }
    if (total === buffer.length && total <= maxBytes) {
      // The file grew past its size: the rest is read through the bounded loop.
      const rest = readRest(fd, total, maxBytes);
      return finish(Buffer.concat([buffer, rest]), maxBytes, name, limits);
    }
    return finish(buffer.subarray(0, total), maxBytes, name, limits);
  } finally {
    closeSync(fd);
  }
}

function readRest(fd: number, from: number, maxBytes: number): Buffer {
  const pieces: Buffer[] = [];
  let total = from;
  for (;;) {
    const want = Math.min(CHUNK_BYTES, maxBytes + 1 - total);
    if (want <= 0) break;
    const buffer = Buffer.alloc(want);
    const bytesRead = readSync(fd, buffer, 0, want, total);
    if (bytesRead === 0) break;
    pieces.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
  }
  return Buffer.concat(pieces);
}

function finish(data: Buffer, maxBytes: number, name: string, limits: ReadLimits): BoundedRead {
  if (data.length <= maxBytes) return { data, truncated: false };
  if (limits.truncate !== true) throw tooLarge(name, `over ${describeBytes(maxBytes)}`, maxBytes);
  return { data: data.subarray(0, maxBytes), truncated: true };
}

/** sha256 (hex) of the regular file at `path`, read in pieces; `null` when there is no file. */
export async function hashFile(path: string): Promise<string | null> {
  let handle: FileHandle;
  try {
    handle = await openRegular(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const hash = createHash('sha256');
    const buffer = Buffer.alloc(CHUNK_BYTES);
    for (let at = 0; ;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, at);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      at += bytesRead;
    }
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}
