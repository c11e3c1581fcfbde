// Reading a file reference (`@./notes.md`, `@~/x.png`, `@/abs/doc.pdf`) into the part a provider
// takes: text files inline, images and PDFs as attachments, anything else named as unsupported.
import { readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, isAbsolute, join, resolve } from 'node:path';
import type { EvaluatedPart } from '../provider/types.js';
import { detectMime, isTextMime } from '../tools/definitions/read.js';
import type { FileReferencePart } from './prompt.js';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Text files above this size are refused (a prompt is not the place for them). */
const MAX_TEXT_BYTES = 1024 * 1024;
/** Attachments above this size are refused (providers reject them anyway). */
const MAX_BINARY_BYTES = 20 * 1024 * 1024;

/** The absolute path of a reference: `./`, `../` from `baseDir`, `~/` from `home`. */
export function referencePath(path: string, baseDir: string, home: string): string {
  if (path === '~' || path.startsWith('~/')) return join(home, path.slice(1));
  if (isAbsolute(path)) return resolve(path);
  return resolve(baseDir, path);
}

/** A file read before, kept while its size and modification time stay the same. */
interface Cached {
  size: number;
  mtimeMs: number;
  mime: string;
  part: EvaluatedPart;
}

/** Files already read, by path and `;type=` (a long chat references the same files every send). */
const cache = new Map<string, Cached>();
const MAX_CACHED = 512;

/**
 * Read a reference; throws an Error whose message says what is wrong (the caller adds where).
 * Small local files are read synchronously: a chat with hundreds of references would otherwise
 * wait on the thread pool for each of them.
 */
export async function readReference(
  reference: FileReferencePart,
  baseDir: string,
  home: string,
): Promise<EvaluatedPart> {
  const path = referencePath(reference.path, baseDir, home);
  let size: number;
  let mtimeMs: number;
  try {
    const info = statSync(path);
    if (!info.isFile()) throw new Error(`${path} is not a file`);
    size = info.size;
    mtimeMs = info.mtimeMs;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`no such file: ${path}`);
    if (code === 'EACCES') throw new Error(`cannot read ${path} (permission denied)`);
    throw error;
  }
  const key = `${path}\0${reference.mime ?? ''}`;
  const hit = cache.get(key);
  if (hit !== undefined && hit.size === size && hit.mtimeMs === mtimeMs) return hit.part;
  const mime = reference.mime ?? detectMime(path);
  const filename = basename(path);
  let part: EvaluatedPart;
  if (isTextMime(mime)) {
    if (size > MAX_TEXT_BYTES) {
      throw new Error(`${path} is too large to inline (${String(size)} bytes; at most 1 MiB)`);
    }
    const text = size < SYNC_BYTES ? readFileSync(path, 'utf8') : await readFile(path, 'utf8');
    part = { kind: 'text_file', mimeType: mime, text, filename };
  } else if (IMAGE_TYPES.has(mime) || mime === 'application/pdf') {
    if (size > MAX_BINARY_BYTES) {
      throw new Error(`${path} is too large to attach (${String(size)} bytes; at most 20 MiB)`);
    }
    const data = (await readFile(path)).toString('base64');
    part =
      mime === 'application/pdf'
        ? { kind: 'pdf', mimeType: 'application/pdf', data, filename }
        : { kind: 'image', mimeType: mime, data, filename };
  } else {
    part = { kind: 'unsupported_file', filename };
  }
  cache.set(key, { size, mtimeMs, mime, part });
  if (cache.size > MAX_CACHED) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  return part;
}

/** Text files below this size are read synchronously. */
const SYNC_BYTES = 64 * 1024;
