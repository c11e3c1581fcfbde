// `:Flemma chats` in the host (docs/picker.md): the chats found (`./find.ts`), each told by the
// head of its file (title, provider, model), its `stat` (last change, size) and what its requests
// cost so far (the usage ledger's sums, `./costs.ts`, and what this host's requests not in the
// ledger cost); and, when the picker shows one, the last exchange from its file's tail.
//
// Decisions:
// - Only what is shown is read: the first 4 KiB of a file for its head (up to 64 KiB when its
//   first `@You:` comes later, after a long frontmatter), the last 64 KiB for its preview (and
//   only when previewed), never a whole file.
// - What was read is kept per file with its modification time and size: a file that did not
//   change since is not read again, so a second listing reads only the files that changed (and
//   `stat`s each). The answer says how many files it read.
// - What was read is also kept on disk, in the index of the cache directory (`./index-file.ts`):
//   read once by a host, at its first listing, and written again after a listing that read a file
//   or found one gone, so a freshly started host reads only the files that changed since. It
//   keeps where the ledger was read to as well (written again when that moved).
// - A title, provider and model pass the host's redaction of secrets as they are read (a key
//   pasted into a chat's first line is shown and kept as the marker): the picker's lines and the
//   index hold what a log line would.
import {
  type Stats,
  closeSync,
  constants,
  openSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { stat } from 'node:fs/promises';
import { sep } from 'node:path';
import type { YamlParser } from '../../core/config/frontmatter.js';
import { type ChatEntry, type ChatHead, headOf, lastExchange } from '../../core/chats/summary.js';
import { loadYaml } from '../../core/util/yaml.js';
import { type ChatSources, type RepositoryCache, chatsInDirs, chatsInProject } from './find.js';
import { ledgerPath } from '../ledger.js';
import { LedgerCosts } from './costs.js';
import { type Kept, indexPath, readIndex, writeIndex } from './index-file.js';

/** Bytes of a file's head read for its title and model. */
export const HEAD_BYTES = 4 * 1024;
/** Bytes of a head read at most (when the first `@You:` is not in the first `HEAD_BYTES`). */
const HEAD_MAX_BYTES = 64 * 1024;
/** Bytes of a file's tail read for its preview. */
export const TAIL_BYTES = 64 * 1024;
/** Previews kept (each at most the 64 KiB read). */
const TAILS_KEPT = 64;
/** Files looked at before the host lets other work run (each chunk takes a few milliseconds). */
const CHUNK = 200;

/**
 * `length` bytes of file `path` from `position`, cut to whole lines at the cut ends. Read
 * synchronously (a few small reads: six times faster than through the thread pool), opened
 * non-blocking so that a FIFO named `*.chat` cannot hang the host.
 */
function readSlice(
  path: string,
  position: number,
  length: number,
  size: number,
  buffer: Buffer = Buffer.allocUnsafe(length),
): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const bytesRead = readSync(fd, buffer, 0, Math.min(length, size, buffer.length), position);
    let text = buffer.subarray(0, bytesRead).toString('utf8');
    if (position + bytesRead < size) text = text.slice(0, text.lastIndexOf('\n') + 1);
    if (position > 0) text = text.slice(text.indexOf('\n') + 1);
    return text;
  } finally {
    closeSync(fd);
  }
}

/** A file's head: its first 4 KiB, or up to 64 KiB when no `@You:` starts in those (a long frontmatter). */
function readHead(path: string, size: number, buffer: Buffer): string {
  const head = readSlice(path, 0, HEAD_BYTES, size, buffer);
  if (size <= HEAD_BYTES || /^@You:/m.test(head)) return head;
  return readSlice(path, 0, HEAD_MAX_BYTES, size, buffer);
}

/**
 * The file's `stat` when it is a regular file. Synchronous: a `stat` of a file the system knows
 * takes a few microseconds, a thousand of them through the thread pool took 3 to 5 times as long
 * (and twice the listing's time on a loaded machine); a chunk of `CHUNK` blocks the host ~1 ms.
 */
function fileInfo(path: string): Stats | undefined {
  try {
    const info = statSync(path, { throwIfNoEntry: false });
    return info?.isFile() === true ? info : undefined;
  } catch {
    return undefined;
  }
}

/** The real path of `path` (usage records name a chat by it), else `path`. */
function realPath(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

/** What a listing found, and how many files it read to find it. */
export interface ChatListing {
  chats: ChatEntry[];
  read: number;
}

/** A listing as it is made: also how many kept files it found gone. */
interface Pass extends ChatListing {
  dropped: number;
}

export class ChatLister {
  private readonly heads = new Map<string, Kept<ChatHead>>();
  private readonly tails = new Map<string, Kept<string[]>>();
  private readonly repos: RepositoryCache = new Map();
  private readonly ledger = new LedgerCosts();
  /** The index files read into `heads` (each once a host). */
  private readonly indexes = new Map<string, Promise<void>>();
  private yaml: YamlParser | undefined;

  /** `redact`: a chat's title, provider and model as they may be shown and kept. */
  constructor(private readonly redact: (text: string) => string) {}

  /**
   * The chats of `sources`, newest first, with what the ledger of `sources.state` sums per chat
   * and `unrecorded`: what this host's requests the ledger does not hold cost per chat file (its
   * real path).
   */
  async list(sources: ChatSources, unrecorded: ReadonlyMap<string, number>): Promise<ChatListing> {
    // The project's git runs, and the index is read, while the chat directories are read.
    const project = chatsInProject(sources, this.repos);
    const index = sources.cache === undefined ? undefined : indexPath(sources.cache);
    const indexed = index === undefined ? undefined : this.loadIndex(index);
    const pass: Pass = { chats: [], read: 0, dropped: 0 };
    const buffer = Buffer.allocUnsafe(HEAD_MAX_BYTES);
    const state = sources.state;
    const ledger = Promise.resolve(indexed).then(() =>
      state === undefined ? false : this.ledger.update(ledgerPath(state)),
    );
    const inDirs = await chatsInDirs(sources);
    const moved = await ledger;
    const costs = new Map(this.ledger.costs);
    for (const [path, cost] of unrecorded) costs.set(path, (costs.get(path) ?? 0) + cost);
    await this.readAll(inDirs, costs, pass, buffer);
    const seen = new Set(inDirs);
    const inProject = (await project).filter((path) => !seen.has(path));
    await this.readAll([...new Set(inProject)], costs, pass, buffer);
    this.dropGone(sources, new Set([...seen, ...inProject]), pass);
    pass.chats.sort((a, b) => b.mtime - a.mtime || a.path.localeCompare(b.path));
    if (index !== undefined && (moved || pass.read + pass.dropped > 0)) {
      await writeIndex(index, this.heads, this.ledger.mark());
    }
    return { chats: pass.chats, read: pass.read };
  }

  /**
   * The entries of the index `file` into `heads` (those this host read itself stay), and where
   * its ledger was read to (unless this host read it already).
   */
  private loadIndex(file: string): Promise<void> {
    let loading = this.indexes.get(file);
    if (loading === undefined) {
      loading = readIndex(file).then(({ entries, ledger }) => {
        for (const [path, entry] of entries) if (!this.heads.has(path)) this.heads.set(path, entry);
        if (ledger !== undefined && this.ledger.mark() === undefined) this.ledger.restore(ledger);
      });
      this.indexes.set(file, loading);
    }
    return loading;
  }

  /** Forgets the files kept under the places `sources` looked in that it did not find there. */
  private dropGone(sources: ChatSources, found: ReadonlySet<string>, pass: Pass): void {
    const places = [...sources.dirs, ...(sources.cwd === undefined ? [] : [sources.cwd])].map(
      (dir) => (dir.endsWith(sep) ? dir : dir + sep),
    );
    for (const path of this.heads.keys()) {
      if (found.has(path) || !places.some((place) => path.startsWith(place))) continue;
      this.heads.delete(path);
      pass.dropped++;
    }
  }

  /** The entries of `paths` into `pass`, each file's head read unless kept unchanged. */
  private async readAll(
    paths: readonly string[],
    costs: ReadonlyMap<string, number>,
    pass: Pass,
    buffer: Buffer,
  ): Promise<void> {
    for (let i = 0; i < paths.length; i += CHUNK) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      for (const path of paths.slice(i, i + CHUNK)) {
        const info = fileInfo(path);
        if (info === undefined) {
          if (this.heads.delete(path)) pass.dropped++;
          continue;
        }
        let kept = this.heads.get(path);
        if (kept?.mtime !== info.mtimeMs || kept.size !== info.size) {
          const head = await this.headOf(path, info.size, buffer);
          if (head === undefined) continue;
          pass.read++;
          kept = { mtime: info.mtimeMs, size: info.size, value: head };
          this.heads.set(path, kept);
        }
        const cost = costs.size === 0 ? undefined : (costs.get(path) ?? costs.get(realPath(path)));
        pass.chats.push({
          ...kept.value,
          path,
          mtime: Math.floor(info.mtimeMs),
          size: info.size,
          ...(cost === undefined ? {} : { cost }),
        });
      }
    }
  }

  /** What the head of file `path` says (redacted); undefined when it cannot be read. */
  private async headOf(path: string, size: number, buffer: Buffer): Promise<ChatHead | undefined> {
    let text: string;
    try {
      text = readHead(path, size, buffer);
    } catch {
      return undefined;
    }
    const head = headOf(text, await this.yamlFor(text));
    return {
      title: this.redact(head.title),
      provider: this.redact(head.provider),
      model: this.redact(head.model),
    };
  }

  /** The YAML reader, loaded for the first YAML frontmatter (most listings need none). */
  private async yamlFor(text: string): Promise<YamlParser | undefined> {
    if (!/^```ya?ml\s*\n/i.test(text)) return undefined;
    this.yaml ??= (await loadYaml()) as unknown as YamlParser;
    return this.yaml;
  }

  /** The last exchange of the chat in `path` (its last `@You:` and what follows). */
  async preview(path: string): Promise<string[]> {
    const info = await stat(path);
    if (!info.isFile()) throw new Error(`not a file: ${path}`);
    const kept = this.tails.get(path);
    if (kept?.mtime === info.mtimeMs && kept.size === info.size) return kept.value;
    const position = Math.max(0, info.size - TAIL_BYTES);
    const text = readSlice(path, position, TAIL_BYTES, info.size);
    const value = lastExchange(text, position > 0);
    this.tails.delete(path);
    this.tails.set(path, { mtime: info.mtimeMs, size: info.size, value });
    // The oldest previews go first (a Map keeps its insertion order).
    for (const old of this.tails.keys()) {
      if (this.tails.size <= TAILS_KEPT) break;
      this.tails.delete(old);
    }
    return value;
  }
}
