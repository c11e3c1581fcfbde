// `:Flemma chats` in the host (docs/picker.md): the chats found (`./find.ts`), each told by the
// head of its file (title, provider, model), its `stat` (last change, size) and what this host's
// requests of it cost; and, when the picker shows one, the last exchange from its file's tail.
//
// Decisions:
// - Only what is shown is read: the first 16 KiB of a file for its head, the last 64 KiB for its
//   preview (and only when previewed), never a whole file.
// - What was read is kept per file with its modification time and size: a file that did not
//   change since is not read again, so a second listing reads only the files that changed (and
//   `stat`s each). The answer says how many files it read.
import { open, stat } from 'node:fs/promises';
import type { YamlParser } from '../../core/config/frontmatter.js';
import { type ChatEntry, type ChatHead, headOf, lastExchange } from '../../core/chats/summary.js';
import { loadYaml } from '../../core/util/yaml.js';
import { type ChatSources, findChats } from './find.js';

/** Bytes of a file's head read for its title and model. */
export const HEAD_BYTES = 16 * 1024;
/** Bytes of a file's tail read for its preview. */
export const TAIL_BYTES = 64 * 1024;
/** Files read at once. */
const PARALLEL = 32;

interface Kept<T> {
  mtime: number;
  size: number;
  value: T;
}

/** `length` bytes of file `path` from `position`, cut to whole lines at the cut ends. */
async function readSlice(
  path: string,
  position: number,
  length: number,
  size: number,
): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(Math.min(length, size));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    let text = buffer.subarray(0, bytesRead).toString('utf8');
    if (position + bytesRead < size) text = text.slice(0, text.lastIndexOf('\n') + 1);
    if (position > 0) text = text.slice(text.indexOf('\n') + 1);
    return text;
  } finally {
    await handle.close();
  }
}

/** What a listing found, and how many files it read to find it. */
export interface ChatListing {
  chats: ChatEntry[];
  read: number;
}

export class ChatLister {
  private readonly heads = new Map<string, Kept<ChatHead>>();
  private readonly tails = new Map<string, Kept<string[]>>();
  private yaml: YamlParser | undefined;

  /**
   * The chats of `sources`, newest first; `costs` is what this host's requests cost per chat file
   * (its real path).
   */
  async list(sources: ChatSources, costs: ReadonlyMap<string, number>): Promise<ChatListing> {
    const paths = await findChats(sources);
    this.yaml ??= (await loadYaml()) as unknown as YamlParser;
    const yaml = this.yaml;
    const chats: ChatEntry[] = [];
    let read = 0;
    for (let i = 0; i < paths.length; i += PARALLEL) {
      const batch = paths.slice(i, i + PARALLEL).map(async (path) => {
        const info = await stat(path).catch(() => undefined);
        if (info === undefined || !info.isFile()) return;
        const mtime = info.mtimeMs;
        let kept = this.heads.get(path);
        if (kept?.mtime !== mtime || kept.size !== info.size) {
          const text = await readSlice(path, 0, HEAD_BYTES, info.size).catch(() => undefined);
          if (text === undefined) return;
          read++;
          kept = { mtime, size: info.size, value: headOf(text, yaml) };
          this.heads.set(path, kept);
        }
        const cost = costs.get(path);
        chats.push({
          ...kept.value,
          path,
          mtime: Math.floor(mtime),
          size: info.size,
          ...(cost === undefined ? {} : { cost }),
        });
      });
      await Promise.all(batch);
    }
    chats.sort((a, b) => b.mtime - a.mtime || a.path.localeCompare(b.path));
    return { chats, read };
  }

  /** The last exchange of the chat in `path` (its last `@You:` and what follows). */
  async preview(path: string): Promise<string[]> {
    const info = await stat(path);
    const kept = this.tails.get(path);
    if (kept?.mtime === info.mtimeMs && kept.size === info.size) return kept.value;
    const position = Math.max(0, info.size - TAIL_BYTES);
    const text = await readSlice(path, position, TAIL_BYTES, info.size);
    const value = lastExchange(text, position > 0);
    this.tails.set(path, { mtime: info.mtimeMs, size: info.size, value });
    return value;
  }
}
