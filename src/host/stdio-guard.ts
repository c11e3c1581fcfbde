// Keeps fd 0 and fd 1 for msgpack-RPC only. Imported first by the host entry: it opens the
// channel on the descriptors (`./channel.ts`), then puts stand-ins in place of `process.stdin`
// and `process.stdout`, so that a library's stray write lands in the log instead of corrupting
// the channel and a library's read takes nothing from it. `console` goes to the log too.
import { EventEmitter } from 'node:events';
import { format } from 'node:util';
import { ChannelReader, ChannelWriter } from './channel.js';
import { hostLogger } from './log.js';

/** Node's own stream for `name`, made on first use (only when a descriptor does not block). */
function nodeStream(name: 'stdin' | 'stdout'): () => unknown {
  const descriptor = Object.getOwnPropertyDescriptor(process, name);
  return (): unknown => (descriptor?.get === undefined ? undefined : descriptor.get.call(process));
}

/** What Neovim writes to the host. */
export const rpcReader = new ChannelReader(0, nodeStream('stdin') as () => NodeJS.ReadableStream);
/** The only writer of the RPC channel. */
export const rpcWriter = new ChannelWriter(1, nodeStream('stdout') as () => NodeJS.WritableStream);

/**
 * Calls `listener` once Neovim has closed its end of the channel: a write failed with EPIPE
 * (Neovim quit while the host still had something to say, such as the end of a cancelled
 * tool). That is how a host ends, not an error.
 */
export function onChannelClosed(listener: () => void): void {
  rpcWriter.onClosed(listener);
}

function divert(chunk: unknown): void {
  const text =
    typeof chunk === 'string'
      ? chunk
      : Buffer.isBuffer(chunk)
        ? chunk.toString('utf8')
        : String(chunk);
  hostLogger.raw('STDOUT', text);
}

/** `process.stdout` as the host's code sees it: every write goes to the log. */
class DivertedStdout extends EventEmitter {
  readonly isTTY = false;
  readonly writable = true;
  write(chunk: unknown, ...rest: unknown[]): boolean {
    divert(chunk);
    const callback = rest.find((arg): arg is () => void => typeof arg === 'function');
    if (callback !== undefined) process.nextTick(callback);
    return true;
  }
  end(...args: unknown[]): this {
    const chunk = args[0];
    if (chunk !== undefined && typeof chunk !== 'function') divert(chunk);
    return this;
  }
}

/** `process.stdin` as the host's code sees it: nothing to read (the channel is not its). */
class ClosedStdin extends EventEmitter {
  readonly isTTY = false;
  readonly readable = false;
  read(): null {
    return null;
  }
  resume(): this {
    return this;
  }
  pause(): this {
    return this;
  }
  setEncoding(): this {
    return this;
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<never> {}
}

function replace(name: 'stdin' | 'stdout', value: EventEmitter): void {
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: true,
    get: () => value,
  });
}
replace('stdout', new DivertedStdout());
replace('stdin', new ClosedStdin());

/** Route `console.*` to the log file. Called again after anything that replaces `console`. */
export function guardConsole(): void {
  const toLog =
    (tag: string) =>
    (...args: unknown[]): void => {
      hostLogger.raw(tag, format(...args));
    };
  /* eslint-disable no-console -- replacing console is this module's job */
  console.log = toLog('CONSOLE');
  console.info = toLog('CONSOLE');
  console.debug = toLog('CONSOLE');
  console.warn = toLog('CONSOLE');
  console.error = toLog('CONSOLE');
  console.trace = toLog('CONSOLE');
  console.dir = toLog('CONSOLE');
  console.table = toLog('CONSOLE');
  /* eslint-enable no-console */
}

guardConsole();
