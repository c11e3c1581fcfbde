// A request to Neovim is written at once (src/editor/request-now.ts): through the real client and
// its transport, on streams the test reads and answers in msgpack as Neovim would.
import { PassThrough } from 'node:stream';
import { decode, encode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { connect } from '../../src/editor/client.js';
import { requestNow } from '../../src/editor/request-now.js';

const quiet = { level: 'info', debug() {}, info() {}, warn() {}, error() {} };

/** A client on two streams: what it writes, and a way to answer as Neovim. */
function clientOnStreams() {
  const toNvim = new PassThrough();
  const fromNvim = new PassThrough();
  const written: unknown[] = [];
  /** Writes made so far, counted as they are made. */
  const writes = { count: 0 };
  toNvim.on('data', (chunk: Buffer) => {
    written.push(decode(chunk));
  });
  const writer = {
    write: (chunk: Uint8Array): boolean => {
      writes.count += 1;
      return toNvim.write(chunk);
    },
  };
  const nvim = connect({ reader: fromNvim, writer }, quiet);
  return {
    nvim,
    written,
    writes,
    answer: (id: number, error: unknown, result: unknown) => {
      fromNvim.write(encode([1, id, error, result]));
    },
  };
}

describe('a request to Neovim', () => {
  it('is written before the call returns, not when the work around it ends', () => {
    const { nvim, writes } = clientOnStreams();
    void requestNow(nvim, 'nvim_exec_lua', ['return 1', []]);
    // Synchronously: the bytes are on their way before anything else runs.
    expect(writes.count).toBe(1);
    // The client's own `request` writes a turn later.
    void nvim.request('nvim_exec_lua', ['return 2', []]);
    expect(writes.count).toBe(1);
  });

  it('resolves with the answer, and rejects with "<method>: <message>" as the client does', async () => {
    const { nvim, written, answer } = clientOnStreams();
    const first = requestNow(nvim, 'nvim_exec_lua', ['return 1', []]);
    const second = requestNow(nvim, 'nvim_get_var', ['missing']);
    await expect.poll(() => written.length).toBe(2);
    const [one, two] = written as [
      [number, number, string, unknown],
      [number, number, string, unknown],
    ];
    expect(one.slice(0, 3)).toEqual([0, one[1], 'nvim_exec_lua']);
    answer(two[1], [0, 'Key not found: missing'], null);
    answer(one[1], null, 42);
    await expect(first).resolves.toBe(42);
    await expect(second).rejects.toThrow('nvim_get_var: Key not found: missing');
  });
});
