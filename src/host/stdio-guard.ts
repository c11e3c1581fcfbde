// Keeps stdout for msgpack-RPC only. Imported first by the host entry: it captures the real
// stdout writer for the RPC channel, then diverts every other stdout and console write to the log.
import { Writable } from 'node:stream';
import { format } from 'node:util';
import { hostLogger } from './log.js';

// eslint-disable-next-line no-restricted-properties -- the one place allowed to touch stdout.
const stdout = process.stdout;
const writeToChannel = stdout.write.bind(stdout);

/**
 * The only writer of the RPC channel. Each message goes to stdout at once, in order: a write to
 * a pipe completes at once on Linux (stdout queues it, in order, when the pipe is full). Waiting
 * for the previous write's callback instead (a plain Writable) would hold every message sent in
 * the same burst of promise jobs until the burst ends: that callback comes on `nextTick`, which
 * runs only once the microtask queue is empty, and a tool step or a send is one long burst.
 */
export const rpcWriter = new Writable({
  write(chunk: Buffer, _encoding, callback) {
    writeToChannel(chunk);
    callback();
  },
});

/** Who hears that Neovim closed its end of the channel; `closed` once it has. */
const channel = { listeners: [] as (() => void)[], closed: false };

/**
 * Calls `listener` once Neovim has closed its end of the channel: a write to stdout failed with
 * EPIPE (Neovim quit while the host still had something to say, such as the end of a cancelled
 * tool). That is how a host ends, not an error.
 */
export function onChannelClosed(listener: () => void): void {
  if (channel.closed) listener();
  else channel.listeners.push(listener);
}

stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
  channel.closed = true;
  for (const listener of channel.listeners.splice(0)) listener();
});

function divert(chunk: unknown): void {
  const text =
    typeof chunk === 'string'
      ? chunk
      : Buffer.isBuffer(chunk)
        ? chunk.toString('utf8')
        : String(chunk);
  hostLogger.raw('STDOUT', text);
}

// A library's stray `process.stdout.write` lands in the log instead of corrupting the channel.
function divertedWrite(chunk: unknown, ...rest: unknown[]): boolean {
  divert(chunk);
  const callback = rest.find((arg): arg is () => void => typeof arg === 'function');
  if (callback !== undefined) process.nextTick(callback);
  return true;
}
stdout.write = divertedWrite;

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
