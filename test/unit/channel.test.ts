// The RPC channel's ends on file descriptors (src/host/channel.ts), on real FIFOs: a blocking
// end is read in the thread pool until EOF; the hand-over to Node's streams keeps every byte in
// order (the read that waits returns first); an end that does not block (EAGAIN) is handed over
// at once, with nothing lost or reordered; EPIPE closes the writer.
import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdtempSync,
  open,
  openSync,
  readSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ChannelReader, ChannelWriter } from '../../src/host/channel.js';

const dirs: string[] = [];
const fds: number[] = [];

function fifo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flemma-channel-'));
  dirs.push(dir);
  const path = join(dir, 'fifo');
  execFileSync('mkfifo', [path]);
  return path;
}

function keep(fd: number): number {
  fds.push(fd);
  return fd;
}

afterEach(() => {
  for (const fd of fds.splice(0)) {
    try {
      closeSync(fd);
    } catch {
      // closed by the test
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The FIFO opened to read, in the pool: it waits for a writer, as the host's fd 0 would. */
function openToRead(path: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    open(path, 'r', (error, fd) => {
      if (error === null) resolve(keep(fd));
      else reject(error);
    });
  });
}

/** Everything `reader` yields until it ends, as text, and whether it emitted 'end'. */
async function drain(reader: ChannelReader): Promise<{ text: string; ended: boolean }> {
  let ended = false;
  reader.once('end', () => {
    ended = true;
  });
  reader.start();
  const chunks: Buffer[] = [];
  for await (const chunk of reader) chunks.push(Buffer.from(chunk));
  return { text: Buffer.concat(chunks).toString('utf8'), ended };
}

const noFallback = (): never => {
  throw new Error('the fallback stream was used');
};

describe('the channel reader', () => {
  it('reads a blocking end in the pool as the writer writes, and ends at EOF', async () => {
    const path = fifo();
    const opened = openToRead(path);
    // Two writes apart: the reader waits in the pool for the second.
    spawn('sh', ['-c', 'exec > "$0"; printf "first "; sleep 0.05; printf second', path], {
      stdio: 'ignore',
    });
    const reader = new ChannelReader(await opened, noFallback);
    const { text, ended } = await drain(reader);
    expect(text).toBe('first second');
    expect(ended).toBe(true);
  });

  it('yields every chunk of a large message, in order', async () => {
    const path = fifo();
    const opened = openToRead(path);
    const size = 1024 * 1024;
    const writeFd = openSync(path, 'w');
    spawn(process.execPath, ['-e', `process.stdout.write('x'.repeat(${String(size)}) + 'end')`], {
      stdio: ['ignore', writeFd, 'ignore'],
    });
    // The child holds the only writer: its exit is the reader's EOF.
    closeSync(writeFd);
    const { text } = await drain(new ChannelReader(await opened, noFallback));
    expect(text.length).toBe(size + 3);
    expect(text.endsWith('xend')).toBe(true);
  });

  it("hands an end that does not block to Node's stream, which it then reads to the end", async () => {
    const path = fifo();
    const readFd = keep(openSync(path, constants.O_RDONLY | constants.O_NONBLOCK));
    // A writer that is there but has written nothing: a read finds EAGAIN.
    keep(openSync(path, constants.O_WRONLY));
    const stream = new PassThrough();
    let used = 0;
    const reader = new ChannelReader(readFd, () => {
      used += 1;
      return stream;
    });
    const drained = drain(reader);
    stream.write('from ');
    stream.end('the stream');
    const { text, ended } = await drained;
    expect(text).toBe('from the stream');
    expect(ended).toBe(true);
    expect(used).toBe(1);
  });
});

describe("the hand-over to Node's streams", () => {
  it('lets the read that waits return first, then reads through the stream, in order', async () => {
    const path = fifo();
    const opened = openToRead(path);
    const writeFd = keep(openSync(path, 'w'));
    const stream = new PassThrough();
    let used = 0;
    const reader = new ChannelReader(await opened, () => {
      used += 1;
      return stream;
    });
    const drained = drain(reader);
    expect(reader.waiting).toBe(true);
    reader.handOver();
    // The read that waits is not called back: the stream is not asked for yet.
    expect(used).toBe(0);
    writeSync(writeFd, 'first, ');
    stream.end('then the stream');
    const { text } = await drained;
    expect(text).toBe('first, then the stream');
    expect(used).toBe(1);
    expect(reader.waiting).toBe(false);
  });

  it('writes every later message through the stream', () => {
    const path = fifo();
    const readFd = keep(openSync(path, constants.O_RDONLY | constants.O_NONBLOCK));
    const stream = new PassThrough();
    const writer = new ChannelWriter(keep(openSync(path, 'w')), () => stream);
    writer.write(Buffer.from('direct'));
    writer.handOver();
    writer.write(Buffer.from('streamed'));
    const buffer = Buffer.alloc(64);
    expect(buffer.subarray(0, readSync(readFd, buffer)).toString()).toBe('direct');
    expect(String(stream.read())).toBe('streamed');
  });
});

describe('the channel writer', () => {
  it('writes each message whole, in order, to a blocking end', () => {
    const path = fifo();
    const readFd = keep(openSync(path, constants.O_RDONLY | constants.O_NONBLOCK));
    const writer = new ChannelWriter(keep(openSync(path, 'w')), noFallback);
    expect(writer.write(Buffer.from('one,'))).toBe(true);
    expect(writer.write(Buffer.from('two'))).toBe(true);
    const buffer = Buffer.alloc(64);
    const bytes = readSync(readFd, buffer);
    expect(buffer.subarray(0, bytes).toString()).toBe('one,two');
  });

  it("goes on through Node's stream once the end does not take a whole message (EAGAIN)", () => {
    const path = fifo();
    const readFd = keep(openSync(path, constants.O_RDONLY | constants.O_NONBLOCK));
    const writeFd = keep(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
    const stream = new PassThrough();
    const streamed: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => streamed.push(chunk));
    const writer = new ChannelWriter(writeFd, () => stream);
    // More than a FIFO holds: the rest goes to the stream, and so does the next message.
    const big = Buffer.alloc(1024 * 1024, 'a');
    writer.write(big);
    writer.write(Buffer.from('next'));
    let direct = 0;
    const buffer = Buffer.alloc(1024 * 1024);
    for (;;) {
      try {
        const bytes = readSync(readFd, buffer);
        if (bytes === 0) break;
        direct += bytes;
      } catch {
        break;
      }
    }
    const rest = Buffer.concat(streamed);
    expect(direct).toBeGreaterThan(0);
    expect(direct + rest.length).toBe(big.length + 4);
    expect(rest.subarray(-4).toString()).toBe('next');
    expect(rest.subarray(0, -4).every((byte) => byte === 'a'.charCodeAt(0))).toBe(true);
  });

  it('tells who listens once Neovim has closed its end (EPIPE), and writes nothing after', () => {
    const path = fifo();
    const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = new ChannelWriter(keep(openSync(path, 'w')), noFallback);
    const heard: string[] = [];
    writer.onClosed(() => heard.push('before'));
    closeSync(readFd);
    expect(writer.write(Buffer.from('lost'))).toBe(false);
    expect(writer.write(Buffer.from('lost too'))).toBe(false);
    writer.onClosed(() => heard.push('after'));
    expect(heard).toEqual(['before', 'after']);
  });
});
