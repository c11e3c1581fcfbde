// Reading a file reference (`@./notes.md`, `@~/x.png`, `@/abs/doc.pdf`) into the part a provider
// takes: text files inline, images and PDFs as attachments, anything else named as unsupported.
import { realpathSync, statSync } from 'node:fs';
import { basename, isAbsolute, relative, resolve, sep } from 'node:path';
import type { EvaluatedPart } from '../provider/types.js';
import { readBounded, readBoundedSync } from '../util/bounded-read.js';
import { expandHome, namesHome } from '../util/expand-path.js';
import { detectMime, isTextMime } from '../tools/definitions/read.js';
import type { ChatDocument, FileReferenceSegment } from './ast.js';
import type { FileReferencePart } from './prompt.js';

export const IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
]);

/** Text files above this size are refused (a prompt is not the place for them). */
export const MAX_TEXT_BYTES = 1024 * 1024;
/** Attachments above this size are refused (providers reject them anyway). */
export const MAX_BINARY_BYTES = 20 * 1024 * 1024;

/** The absolute path of a reference: `./`, `../` from `baseDir`, `~/` from `home`. */
export function referencePath(path: string, baseDir: string, home: string): string {
  const expanded = expandHome(path, home);
  return isAbsolute(expanded) ? resolve(expanded) : resolve(baseDir, expanded);
}

/**
 * Where a file's references may lead. A file that is not trusted reads only inside its own
 * directory tree (docs/security.md, "File references"): no `~`, no absolute path, no `..` out of
 * it, no symbolic link out of it, and nothing `isSensitive` names.
 */
export interface ReferenceScope {
  /** The directory references must stay in (the chat file's); undefined: anywhere. */
  confineTo?: string | undefined;
  /** Places a file that is not trusted never reads, even inside its tree (keys, `.env`). */
  isSensitive?: ((absolutePath: string) => boolean) | undefined;
}

function inside(path: string, directory: string): boolean {
  const rel = relative(directory, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Why `path` (as written, after `@`) may not be read in `scope`; undefined when it may. */
export function referenceRefusal(
  path: string,
  baseDir: string,
  scope: ReferenceScope,
): string | undefined {
  const root = scope.confineTo;
  if (root === undefined) return undefined;
  let why: string | undefined;
  if (namesHome(path)) why = 'it points into the home directory';
  else if (isAbsolute(path)) why = 'it is an absolute path';
  else {
    const full = resolve(baseDir, path);
    if (!inside(full, resolve(root))) why = "it leaves the chat file's directory";
    else if (!inside(realOrSelf(full), realOrSelf(root))) {
      why = "it leads out of the chat file's directory through a symbolic link";
    } else if (scope.isSensitive?.(realOrSelf(full)) === true) why = 'it names a sensitive file';
  }
  return why === undefined
    ? undefined
    : `not read: this chat file is not trusted and ${why} (:trust reads it)`;
}

/**
 * Why an MCP reference (`@mcp:<server>:<uri>`) may not be read in `scope`; undefined when it may.
 * A server is outside the chat file's directory tree by nature, so a file that is not trusted
 * reads none: a shared chat must not pull a server's data into a request without the user's
 * consent (docs/security.md).
 */
export function mcpReferenceRefusal(server: string, scope: ReferenceScope): string | undefined {
  if (scope.confineTo === undefined) return undefined;
  return `not read: this chat file is not trusted and it reads from the MCP server '${server}' (:trust reads it)`;
}

/**
 * What says a file is the one read before, unchanged: the same file (device and inode: not one
 * renamed over it), the same size, modification time and status change time (the last moves
 * with every write and cannot be set back, as a modification time can: `touch -d`, `cp -p`).
 */
export interface FileVersion {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** A file read before, kept while it is the same version. */
interface Cached {
  version: FileVersion;
  mime: string;
  part: EvaluatedPart;
}

function sameVersion(a: FileVersion, b: FileVersion): boolean {
  return (
    a.ino === b.ino &&
    a.dev === b.dev &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs &&
    a.ctimeMs === b.ctimeMs
  );
}

const MAX_CACHED = 512;

/**
 * Files already read, by path and `;type=` (a long chat references the same files every send),
 * each kept while it is the same version (`FileVersion`: looked at again at every send, so an
 * edited file is read again); the oldest go beyond 512. The host keeps one for its lifetime.
 */
export class ReferenceCache {
  readonly #entries = new Map<string, Cached>();

  get(key: string, version: FileVersion): EvaluatedPart | undefined {
    const hit = this.#entries.get(key);
    return hit !== undefined && sameVersion(hit.version, version) ? hit.part : undefined;
  }

  set(key: string, entry: Cached): void {
    this.#entries.set(key, entry);
    if (this.#entries.size > MAX_CACHED) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }
}

/**
 * Read a reference; throws an Error whose message says what is wrong (the caller adds where).
 * Small local files are read synchronously: a chat with hundreds of references would otherwise
 * wait on the thread pool for each of them. With a `cache`, an unchanged file is not read again.
 */
export async function readReference(
  reference: FileReferencePart,
  baseDir: string,
  home: string,
  scope: ReferenceScope = {},
  cache?: ReferenceCache,
): Promise<EvaluatedPart> {
  const refusal = referenceRefusal(reference.path, baseDir, scope);
  if (refusal !== undefined) throw new Error(refusal);
  const path = referencePath(reference.path, baseDir, home);
  let version: FileVersion;
  try {
    const info = statSync(path);
    if (!info.isFile()) throw new Error(`${path} is not a file`);
    const { dev, ino, size, mtimeMs, ctimeMs } = info;
    version = { dev, ino, size, mtimeMs, ctimeMs };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`no such file: ${path}`);
    if (code === 'EACCES') throw new Error(`cannot read ${path} (permission denied)`);
    throw error;
  }
  const key = `${path}\0${reference.mime ?? ''}`;
  const hit = cache?.get(key, version);
  if (hit !== undefined) return hit;
  const size = version.size;
  const mime = reference.mime ?? detectMime(path);
  const filename = basename(path);
  let part: EvaluatedPart;
  if (isTextMime(mime)) {
    if (size > MAX_TEXT_BYTES) {
      throw new Error(`${path} is too large to inline (${String(size)} bytes; at most 1 MiB)`);
    }
    // Bounded, and checked again on the descriptor: a FIFO or device swapped in is refused.
    const limits = { maxBytes: MAX_TEXT_BYTES };
    const text = (
      size < SYNC_BYTES ? readBoundedSync(path, limits) : await readBounded(path, limits)
    ).data.toString('utf8');
    part = { kind: 'text_file', mimeType: mime, text, filename };
  } else if (IMAGE_TYPES.has(mime) || mime === 'application/pdf') {
    if (size > MAX_BINARY_BYTES) {
      throw new Error(`${path} is too large to attach (${String(size)} bytes; at most 20 MiB)`);
    }
    const data = (await readBounded(path, { maxBytes: MAX_BINARY_BYTES })).data.toString('base64');
    part =
      mime === 'application/pdf'
        ? { kind: 'pdf', mimeType: 'application/pdf', data, filename }
        : { kind: 'image', mimeType: mime, data, filename };
  } else {
    part = { kind: 'unsupported_file', filename };
  }
  cache?.set(key, { version, mime, part });
  return part;
}

/** Text files below this size are read synchronously. */
const SYNC_BYTES = 64 * 1024;

/** A reference a file that is not trusted may not read, and why (`referenceRefusal`). */
export interface RefusedReference {
  /** The buffer line of the reference. */
  line: number;
  /** The reference as written, without its `@`. */
  raw: string;
  why: string;
}

/**
 * Every reference of `document` that would be read when it is sent (in `@System:` and `@You:`
 * messages, and in the results of tools that read references, `readsResults`) and may not be in
 * `scope`, in buffer order.
 */
export function refusedReferences(
  document: ChatDocument,
  baseDir: string,
  scope: ReferenceScope,
  readsResults: (toolName: string) => boolean,
): RefusedReference[] {
  if (scope.confineTo === undefined) return [];
  const out: RefusedReference[] = [];
  const names = new Map<string, string>();
  const check = (segment: FileReferenceSegment): void => {
    const why =
      segment.server === undefined
        ? referenceRefusal(segment.path, baseDir, scope)
        : mcpReferenceRefusal(segment.server, scope);
    if (why !== undefined) out.push({ line: segment.span.startLine, raw: segment.raw, why });
  };
  for (const message of document.messages) {
    const sent = message.role === 'System' || message.role === 'You';
    for (const segment of message.segments) {
      if (segment.kind === 'tool_use') names.set(segment.id, segment.name);
      else if (segment.kind === 'file_reference' && sent) check(segment);
      else if (segment.kind === 'tool_result' && sent) {
        if (!readsResults(names.get(segment.toolUseId) ?? '')) continue;
        // An MCP reference in a tool result is data (never read), so never refused either.
        for (const piece of segment.segments) {
          if (piece.kind === 'file_reference' && piece.server === undefined) check(piece);
        }
      }
    }
  }
  return out;
}
