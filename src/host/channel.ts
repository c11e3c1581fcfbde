// The RPC channel's two ends while the host starts: read and written on the file descriptors
// themselves, fd 0 (what Neovim writes) and fd 1 (what the host answers). Node's `process.stdin`
// and `process.stdout` on a pipe load `net` and the streams, ~3.5 ms of every start before the
// first answer (docs/testing.md, "Where the time goes"); once the host is idle, the ends are
// handed over to those streams (`handOver`), as the warm-up does its work then.
//
// Decisions:
// - Reading: `fs.read` on fd 0 in libuv's thread pool, one read at a time. Neovim (and Node's
//   `spawn`) hand a child a socket end that blocks, so a read waits in its pool thread until
//   Neovim writes, and the main thread is free meanwhile.
// - A read that waits cannot be called back, and Node's exit waits for the pool's threads: the
//   reader says whether one waits (`waiting`), and the host exits another way then (main.ts).
//   Hence the hand-over: the next read is Node's stream's, once the one waiting has returned.
// - Writing: `fs.writeSync` on fd 1, each message whole and in order, as `process.stdout` does
//   on a Linux pipe. A full socket buffer waits for Neovim to read, which it does in its loop.
// - A descriptor that does not block (a parent that shares a non-blocking end: EAGAIN) is handed
//   to Node's stream at once: from then on every chunk goes through it, in order.
// - EOF on fd 0 is Neovim gone ('end'); EPIPE on fd 1 is Neovim closed its end (`onClosed`).
import { EventEmitter } from 'node:events';
import { read, writeSync } from 'node:fs';

const CHUNK = 64 * 1024;

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/**
 * What Neovim writes, as the node client's transport reads it: an async iterable of chunks that
 * emits 'end' once Neovim has closed its end.
 */
export class ChannelReader extends EventEmitter implements AsyncIterable<Uint8Array> {
  private readonly chunks: Uint8Array[] = [];
  private consumer: ((result: IteratorResult<Uint8Array>) => void) | undefined;
  private ended = false;
  /** A read in the pool has not returned yet. */
  private reading = false;
  /** The next read is Node's stream's (`handOver`); `followed` once it reads. */
  private handing = false;
  private followed = false;

  constructor(
    private readonly fd: number,
    private readonly fallback: () => NodeJS.ReadableStream,
  ) {
    super();
  }

  /** Starts reading; called once the transport listens. */
  start(): void {
    this.next();
  }

  /** Whether a read waits in the pool (the host cannot `process.exit` meanwhile). */
  get waiting(): boolean {
    return this.reading;
  }

  /** Node's stream reads from now on: at once, or once the read that waits has returned. */
  handOver(): void {
    if (this.ended || this.followed) return;
    if (this.reading) this.handing = true;
    else this.follow();
  }

  private next(): void {
    if (this.handing) {
      this.follow();
      return;
    }
    const buffer = Buffer.allocUnsafe(CHUNK);
    this.reading = true;
    read(this.fd, buffer, 0, CHUNK, null, (error, bytes) => {
      this.reading = false;
      if (error !== null) {
        if (errnoOf(error) === 'EAGAIN' || errnoOf(error) === 'EWOULDBLOCK') this.follow();
        else this.end();
        return;
      }
      if (bytes === 0) {
        this.end();
        return;
      }
      this.push(buffer.subarray(0, bytes));
      this.next();
    });
  }

  /** Node's stream reads the descriptor from now on. */
  private follow(): void {
    if (this.followed) return;
    this.followed = true;
    const stream = this.fallback();
    stream.on('data', (chunk: Buffer) => {
      this.push(chunk);
    });
    stream.once('end', () => {
      this.end();
    });
    stream.once('error', () => {
      this.end();
    });
  }

  private push(chunk: Uint8Array): void {
    const consumer = this.consumer;
    if (consumer !== undefined) {
      this.consumer = undefined;
      consumer({ value: chunk, done: false });
    } else {
      this.chunks.push(chunk);
    }
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    const consumer = this.consumer;
    this.consumer = undefined;
    consumer?.({ value: undefined, done: true });
    this.emit('end');
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: (): Promise<IteratorResult<Uint8Array>> => {
        const chunk = this.chunks.shift();
        if (chunk !== undefined) return Promise.resolve({ value: chunk, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.consumer = resolve;
        });
      },
    };
  }
}

/** The one writer of the channel: each message whole, in order. */
export class ChannelWriter {
  private stream: NodeJS.WritableStream | undefined;
  private closed = false;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly fd: number,
    private readonly fallback: () => NodeJS.WritableStream,
  ) {}

  /** Writes `chunk` (a whole msgpack message); false once Neovim has closed its end. */
  write(chunk: Uint8Array): boolean {
    if (this.closed) return false;
    if (this.stream !== undefined) return this.stream.write(chunk);
    let offset = 0;
    while (offset < chunk.length) {
      try {
        offset += writeSync(this.fd, chunk, offset);
      } catch (error) {
        const code = errnoOf(error);
        if (code === 'EAGAIN' || code === 'EWOULDBLOCK') {
          return this.follow().write(chunk.subarray(offset));
        }
        if (code === 'EPIPE' || code === 'EBADF' || code === 'ECONNRESET') {
          this.close();
          return false;
        }
        throw error;
      }
    }
    return true;
  }

  /** Node's stream writes from now on (every earlier message is written: they are whole). */
  handOver(): void {
    if (!this.closed && this.stream === undefined) this.follow();
  }

  /** Calls `listener` once Neovim has closed its end (a write found it gone). */
  onClosed(listener: () => void): void {
    if (this.closed) listener();
    else this.listeners.push(listener);
  }

  /** Node's stream writes the descriptor from now on, in order. */
  private follow(): NodeJS.WritableStream {
    const stream = this.fallback();
    stream.on('error', (error: unknown) => {
      const code = errnoOf(error);
      if (code !== 'EPIPE' && code !== 'ERR_STREAM_DESTROYED') throw error;
      this.close();
    });
    this.stream = stream;
    return stream;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const listener of this.listeners.splice(0)) listener();
  }
}
