// Small file operations more than one place needs.
import { type Stats, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { link, lstat, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Something (a file, a directory, a link, even a dangling one) stands at `path`. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** What stands at `path` (links followed), or undefined when nothing can be seen there. */
export function statIfAny(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Writes `content` to `path` (opened with `flags`, made with `mode`) and syncs it to the disk
 * before closing: after a crash of the machine the file is whole.
 */
export async function writeSynced(
  path: string,
  content: string,
  flags: 'w' | 'wx',
  mode: number,
): Promise<void> {
  const handle = await open(path, flags, mode);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** How many names `writeFirstFree` tries before it gives up. */
const MAX_NAMES = 1000;

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Writes `text` in `dir` under the first of `names` that is free and returns its path. The text
 * goes to a hidden temporary file first (`.<tag>-<random>.tmp`, synced to disk), which is then
 * linked to the name (a link never replaces an existing file, so a file made meanwhile moves it
 * to the next name); where links do not work, it is renamed to a name that does not exist. The
 * temporary file is gone afterwards, whatever happened.
 */
export async function writeFirstFree(
  dir: string,
  tag: string,
  names: Iterable<string>,
  text: string,
): Promise<string> {
  const temp = join(dir, `.${tag}-${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeSynced(temp, text, 'wx', 0o644);
    let tried = 0;
    for (const candidate of names) {
      if (++tried > MAX_NAMES) break;
      const target = join(dir, candidate);
      try {
        await link(temp, target);
        return target;
      } catch (error) {
        const code = errorCode(error);
        if (code === 'EEXIST') continue;
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') {
          throw error;
        }
        // No hard links here (some network and FUSE file systems).
        if (await pathExists(target)) continue;
        await rename(temp, target);
        return target;
      }
    }
    throw new Error(`no free name in ${dir}`);
  } finally {
    await rm(temp, { force: true });
  }
}
