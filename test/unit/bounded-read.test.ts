// The bounded reader (src/core/util/bounded-read.ts): the one way the host reads a file a model
// named. Regular files are read up to the limit; devices, FIFOs, sockets and directories are
// refused without being opened (a FIFO must not block); a file over the limit fails or is cut.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { truncateSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  FileReadError,
  VIEW_LIMIT_BYTES,
  describeBytes,
  hashFile,
  readBounded,
  readBoundedSync,
  readTextBounded,
} from '../../src/core/util/bounded-read.js';
import { testDir } from '../helpers/test-dir.js';

const dir = testDir('flemma-bounded-');

async function problemOf(promise: Promise<unknown>): Promise<FileReadError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(FileReadError);
  return error as FileReadError;
}

function syncProblem(run: () => unknown): FileReadError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(FileReadError);
    return error as FileReadError;
  }
  throw new Error('expected a FileReadError');
}

describe('readBounded', () => {
  it('reads a regular file whole when it is within the limit, exactly at it too', async () => {
    const path = dir('a.txt');
    writeFileSync(path, 'x'.repeat(10));
    expect((await readBounded(path, { maxBytes: 10 })).data.toString()).toBe('x'.repeat(10));
    expect(readBoundedSync(path, { maxBytes: 10 }).data.toString()).toBe('x'.repeat(10));
    expect(await readTextBounded(path)).toBe('x'.repeat(10));
  });

  it('refuses a file one byte over the limit, naming the size and the limit', async () => {
    const path = dir('big.txt');
    writeFileSync(path, 'x'.repeat(11));
    const error = await problemOf(readBounded(path, { maxBytes: 10, name: 'big.txt' }));
    expect(error.problem).toBe('too-large');
    expect(error.message).toBe('big.txt is too large to read (11 bytes; the limit is 10 bytes)');
    expect(syncProblem(() => readBoundedSync(path, { maxBytes: 10 })).problem).toBe('too-large');
  });

  it('keeps the first maxBytes of a larger file with truncate, and says it cut', async () => {
    const path = dir('big.txt');
    writeFileSync(path, 'abcdefghij');
    const read = await readBounded(path, { maxBytes: 4, truncate: true });
    expect(read).toEqual({ data: Buffer.from('abcd'), truncated: true });
    expect(readBoundedSync(path, { maxBytes: 4, truncate: true }).truncated).toBe(true);
  });

  it('refuses a sparse file of 10 GB at once, without reading it', async () => {
    const path = dir('huge.bin');
    writeFileSync(path, '');
    truncateSync(path, 10 * 1024 ** 3);
    const error = await problemOf(readBounded(path));
    expect(error.message).toContain('10.0 GiB');
    expect(error.message).toContain(describeBytes(VIEW_LIMIT_BYTES));
  });

  it('refuses /dev/zero as a character device (sync and async)', async () => {
    const error = await problemOf(readBounded('/dev/zero'));
    expect(error.problem).toBe('not-regular');
    expect(error.message).toBe('/dev/zero is a character device, not a regular file');
    expect(syncProblem(() => readBoundedSync('/dev/zero')).problem).toBe('not-regular');
    await expect(hashFile('/dev/zero')).rejects.toThrow('character device');
  });

  it('refuses a FIFO without blocking on it', async () => {
    const fifo = dir('pipe');
    execFileSync('mkfifo', [fifo]);
    const error = await problemOf(readBounded(fifo));
    expect(error.message).toContain('a FIFO (named pipe)');
    expect(syncProblem(() => readBoundedSync(fifo)).problem).toBe('not-regular');
    await expect(hashFile(fifo)).rejects.toThrow('FIFO');
  });

  it('refuses a socket and a directory', async () => {
    const path = dir('sock');
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      expect((await problemOf(readBounded(path))).message).toContain('a socket');
    } finally {
      server.close();
    }
    expect((await problemOf(readBounded(dir()))).message).toContain('a directory');
  });

  it('reads a file whose size says 0 (a /proc file) as far as it goes', async () => {
    const read = await readBounded('/proc/self/status');
    expect(read.data.toString()).toContain('Name:');
    expect(readBoundedSync('/proc/self/status').data.toString()).toContain('Name:');
  });

  it('answers undefined for a missing file, and throws other errors as they are', async () => {
    expect(await readTextBounded(dir('none'))).toBeUndefined();
    await expect(readBounded(dir('none'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('hashFile', () => {
  it('hashes a regular file in pieces, null for no file', async () => {
    const path = dir('a.bin');
    const content = Buffer.alloc(200 * 1024, 7);
    writeFileSync(path, content);
    expect(await hashFile(path)).toBe(createHash('sha256').update(content).digest('hex'));
    expect(await hashFile(dir('none'))).toBeNull();
  });
});
