// Writing a file so that it is always whole on disk: the text goes to a temporary file in the
// same directory, is synced, and replaces the file by a rename (atomic on POSIX); the directory is
// synced after, so that the rename survives a crash too. A reader (Neovim reloading the file, a
// crash at any moment) sees the old text or the new, never half of it.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';

function temporaryPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(4).toString('hex')}.tmp`);
}

/** Replace `path` with `text`, whole (see above). */
export async function writeAtomic(path: string, text: string): Promise<void> {
  const temporary = temporaryPath(path);
  try {
    const handle = await open(temporary, 'w', 0o644);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await syncDirectory(dirname(path));
}

/** `writeAtomic` without yielding: for the host's last moments (SIGTERM, Neovim gone). */
export function writeAtomicSync(path: string, text: string): void {
  const temporary = temporaryPath(path);
  try {
    const fd = openSync(temporary, 'w', 0o644);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some file systems cannot sync a directory: the rename is still atomic.
  }
}
