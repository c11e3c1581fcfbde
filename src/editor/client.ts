// The Neovim client: the host's connection to Neovim over stdio, and its types for the wiring.
// `src/editor` is the only part of the host that imports the `neovim` package.
import type { Readable, Writable } from 'node:stream';
// NOTE: deep imports skip the remote-plugin host machinery of the package index (and its
// child_process), which shortens every start-up.
import { NeovimClient } from 'neovim/lib/api/client.js';
import type { Logger as ClientLogger } from 'neovim/lib/utils/logger.js';

export type { Neovim, NvimPlugin } from 'neovim';

/**
 * The Neovim client with a lighter handshake. The stock one asks for `nvim_get_api_info` (about
 * 32 kB of API metadata, decoded on every start while requests wait) only to learn the channel
 * id; `nvim_get_chan_info(0)` carries the same id in about a hundred bytes.
 */
class HostClient extends NeovimClient {
  override requestApi(): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      this.transport.request('nvim_get_chan_info', [0], (error: unknown, info: unknown) => {
        if (error !== null && error !== undefined) {
          // Neovim answers an RPC error as [type, message].
          const message = Array.isArray(error) ? String(error[1]) : JSON.stringify(error);
          reject(error instanceof Error ? error : new Error(message));
        } else {
          resolve([(info as { id: number }).id]);
        }
      });
    });
  }
}

/** The client's own messages, with a `level` that tells the truth (see main.ts). */
export interface ClientLog {
  readonly level: string;
  debug(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

/** Attach to Neovim over `reader`/`writer` (the host's stdin and its guarded stdout). */
export function connect(reader: Readable, writer: Writable, logger: ClientLog): NeovimClient {
  const nvim = new HostClient({ logger: logger as unknown as ClientLogger });
  nvim.attach({ reader, writer });
  return nvim;
}
