// Small file operations more than one place needs.
import { type Stats, statSync } from 'node:fs';
import { lstat, open } from 'node:fs/promises';

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
