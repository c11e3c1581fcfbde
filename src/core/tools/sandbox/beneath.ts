// Opening a file for writing so that a symbolic link swapped after the check cannot send the write
// elsewhere (issue 19). The file tools decide that a path is writable; a command running at the
// same time (a sandboxed bash may change the project) must not be able to replace a directory on
// the way with a link to somewhere else between that decision and the write.
//
// Decisions:
// - On Linux the path is walked from `/` one component at a time: each directory is held open and
//   the next component is opened relative to it, through `/proc/self/fd/<fd>/<name>` with
//   O_NOFOLLOW (what openat(2) does; Node has no openat). A component that is a symbolic link is
//   read (readlink) and its target walked the same way, so links keep working where they lead
//   somewhere allowed. The real location is known exactly at every step, and `allowed` is asked
//   about it before anything is created: each missing directory, and the file itself.
// - A link swapped after it was read changes nothing: the directory it led to is held open. One
//   swapped between the look at a component and its open makes the open fail (ELOOP, ENOTDIR,
//   ENOENT), and the component is looked at again, a bounded number of times.
// - The file itself is opened with O_NOFOLLOW and O_NONBLOCK (a FIFO put in its place must not
//   hang the host) and must be a regular file. It is opened without O_TRUNC (O_EXCL first, so
//   that the walk knows whether it created it); then the kernel's own name for the open file
//   (`/proc/self/fd/<fd>`) is asked of `allowed` once more, so a directory on the way renamed into
//   a refused place after the walk is caught too (issue 28). Only then is the file truncated; a
//   refused file the walk created is removed again.
// - At most 40 links are followed (the kernel's limit), then ELOOP.
// - Without /proc/self/fd (not Linux) the real location is checked and then opened, which leaves
//   the race open; no sandbox backend exists there, so no command runs unasked beside the write.

import { type Stats, constants, existsSync } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readlink, unlink } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';

import { resolveReal } from './paths.js';

const MAX_LINKS = 40;
/** Looks at one walk may take again after a component changed under it. */
const MAX_RETRIES = 100;

export interface OpenBeneathOptions {
  /** May the file (or a directory to create) be at this real location? */
  allowed(real: string): boolean | Promise<boolean>;
  /** Create missing parent directories (each one allowed first). */
  mkdir?: boolean;
  /** Open an existing file for reading and writing, instead of creating or truncating it. */
  update?: boolean;
  /** The mode of a created file (before the umask); default 0o666. */
  mode?: number;
}

export interface OpenedBeneath {
  handle: FileHandle;
  /** Where the file really is. */
  real: string;
}

/** `allowed` refused the real location of the file or of a directory to create. */
export class WriteRefused extends Error {
  override readonly name = 'WriteRefused';
  constructor(readonly real: string) {
    super(`not writable: ${real}`);
  }
}

function codeOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function failure(code: string, message: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${code}: ${message}`);
  error.code = code;
  return error;
}

function componentsOf(path: string): string[] {
  return path.split('/').filter((part) => part !== '' && part !== '.');
}

/** Whether the race-free walk is available here. */
export function canOpenBeneath(): boolean {
  return process.platform === 'linux' && existsSync('/proc/self/fd');
}

async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function fileFlags(options: OpenBeneathOptions): number {
  const base = options.update === true ? constants.O_RDWR : constants.O_WRONLY | constants.O_CREAT;
  return base | constants.O_NONBLOCK | (options.update === true ? 0 : constants.O_TRUNC);
}

/** Opens the last component (held directory `at`), O_EXCL first: whether it was created. */
async function openLeaf(
  at: string,
  options: OpenBeneathOptions,
): Promise<{ handle: FileHandle; created: boolean }> {
  const flags = (fileFlags(options) & ~constants.O_TRUNC) | constants.O_NOFOLLOW;
  const mode = options.mode ?? 0o666;
  if (options.update === true) return { handle: await open(at, flags, mode), created: false };
  try {
    return { handle: await open(at, flags | constants.O_EXCL, mode), created: true };
  } catch (error) {
    if (codeOf(error) !== 'EEXIST') throw error;
  }
  return { handle: await open(at, flags & ~constants.O_CREAT, mode), created: false };
}

/**
 * The open file checked again where the kernel says it is, then truncated (a write): refused,
 * it is closed and, when the walk created it, removed through the held directory (`at`).
 */
async function settle(
  opened: { handle: FileHandle; created: boolean },
  at: string,
  abs: string,
  options: OpenBeneathOptions,
): Promise<FileHandle> {
  const { handle, created } = opened;
  try {
    await regularFile(handle, abs);
  } catch (error) {
    if (created) await unlink(at).catch(() => undefined);
    throw error;
  }
  const now = (await readlink(`/proc/self/fd/${String(handle.fd)}`)).replace(/ \(deleted\)$/u, '');
  let refusal: Error | undefined;
  try {
    if (!(await options.allowed(now))) refusal = new WriteRefused(now);
  } catch (error) {
    refusal = error instanceof Error ? error : new Error(String(error));
  }
  if (refusal !== undefined) {
    await handle.close();
    if (created) await unlink(at).catch(() => undefined);
    throw refusal;
  }
  if (options.update !== true && !created) await handle.truncate(0);
  return handle;
}

async function regularFile(handle: FileHandle, abs: string): Promise<FileHandle> {
  if ((await handle.stat()).isFile()) return handle;
  await handle.close();
  throw failure('EINVAL', `not a regular file: ${abs}`);
}

/** The fallback without /proc/self/fd: check the real location, then open (racy). */
async function openChecked(abs: string, options: OpenBeneathOptions): Promise<OpenedBeneath> {
  const real = resolveReal(abs);
  if (options.mkdir === true) {
    const parent = resolveReal(dirname(abs));
    if (!existsSync(parent) && !(await options.allowed(parent))) throw new WriteRefused(parent);
  }
  if (!(await options.allowed(real))) throw new WriteRefused(real);
  if (options.mkdir === true) await mkdir(dirname(abs), { recursive: true });
  const handle = await open(abs, fileFlags(options), options.mode ?? 0o666);
  return { handle: await regularFile(handle, abs), real };
}

/**
 * Opens `abs` (absolute) for writing, following symbolic links only by reading them, so that the
 * file lands where `allowed` agreed to whatever changes meanwhile. Throws `WriteRefused` when the
 * file (or a directory it needs) would be somewhere `allowed` refuses, and file-system errors as
 * they come (ENOENT for a missing file with `update` or a missing directory without `mkdir`).
 */
export async function openBeneath(
  abs: string,
  options: OpenBeneathOptions,
): Promise<OpenedBeneath> {
  if (!isAbsolute(abs)) throw failure('EINVAL', `not an absolute path: ${abs}`);
  if (!canOpenBeneath()) return openChecked(abs, options);
  const root = await open('/', constants.O_RDONLY | constants.O_DIRECTORY);
  let dir = root;
  let real = '/';
  const pending = componentsOf(abs);
  let links = 0;
  let retries = 0;
  const retry = (error: unknown, codes: readonly string[]): void => {
    if (!codes.includes(codeOf(error) ?? '') || ++retries > MAX_RETRIES) throw error;
  };
  const enter = async (next: FileHandle, path: string): Promise<void> => {
    if (dir !== root) await dir.close();
    dir = next;
    real = path;
  };
  try {
    for (;;) {
      const name = pending[0];
      if (name === undefined) throw failure('EISDIR', `a directory, not a file: ${abs}`);
      const last = pending.length === 1;
      const at = `/proc/self/fd/${String(dir.fd)}/${name}`;
      if (name === '..') {
        await enter(await open(at, constants.O_RDONLY | constants.O_DIRECTORY), dirname(real));
        pending.shift();
        continue;
      }
      const info = await lstatOrUndefined(at);
      if (info?.isSymbolicLink() === true) {
        if (++links > MAX_LINKS) throw failure('ELOOP', `too many symbolic links: ${abs}`);
        const target = await readlink(at);
        pending.splice(0, 1, ...componentsOf(target));
        if (target.startsWith('/')) await enter(root, '/');
        continue;
      }
      const next = join(real, name);
      if (!last) {
        if (info === undefined) {
          if (options.mkdir !== true) throw failure('ENOENT', `no such directory: ${next}`);
          if (!(await options.allowed(next))) throw new WriteRefused(next);
          try {
            await mkdir(at);
          } catch (error) {
            retry(error, ['EEXIST']);
          }
          continue;
        }
        try {
          const flags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
          await enter(await open(at, flags), next);
          pending.shift();
        } catch (error) {
          retry(error, info.isDirectory() ? ['ELOOP', 'ENOTDIR', 'ENOENT'] : []);
        }
        continue;
      }
      if (!(await options.allowed(next))) throw new WriteRefused(next);
      let opened: { handle: FileHandle; created: boolean };
      try {
        opened = await openLeaf(at, options);
      } catch (error) {
        // A link put in place of the file (ELOOP), or the file removed between the two opens.
        retry(error, options.update === true ? ['ELOOP'] : ['ELOOP', 'ENOENT']);
        continue;
      }
      return { handle: await settle(opened, at, abs, options), real: next };
    }
  } finally {
    if (dir !== root) await dir.close();
    await root.close();
  }
}
