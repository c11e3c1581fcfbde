// The Neovim client: the host's connection to Neovim over stdio, and its types for the wiring.
// `src/editor` is the only part of the host that imports the `neovim` package.
import type { Readable, Writable } from 'node:stream';
// NOTE: deep imports skip the remote-plugin host machinery of the package index (and its
// child_process), which shortens every start-up.
import { NeovimClient } from 'neovim/lib/api/client.js';
import type { Logger as ClientLogger } from 'neovim/lib/utils/logger.js';

export type { Neovim, NvimPlugin } from 'neovim';

/**
 * The Neovim client without a handshake. The stock client asks Neovim for `nvim_get_api_info`
 * (about 32 kB of API metadata) and holds every incoming request back until the answer is
 * decoded, only to learn the channel id. The host never reads its channel id (Lua calls it on
 * the id `jobstart` gave), so nothing is asked: the first request (the shim's `ping`) is
 * answered without a round trip to Neovim first (docs/pitfalls.md). The id stays 0, "unknown".
 */
class HostClient extends NeovimClient {
  override requestApi(): Promise<unknown[]> {
    return Promise.resolve([0]);
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

/**
 * What the client's transport uses of its two ends: chunks read as an async iterable, 'end'
 * once the peer is gone, and whole messages written.
 */
export interface ChannelEnds {
  reader: AsyncIterable<Uint8Array> & { once(event: 'end', listener: () => void): unknown };
  writer: { write(chunk: Uint8Array): boolean };
}

/** Attach to Neovim over the channel's ends (`src/host/channel.ts`). */
export function connect(ends: ChannelEnds, logger: ClientLog): NeovimClient {
  const nvim = new HostClient({ logger: logger as unknown as ClientLogger });
  // The transport reads and writes only what `ChannelEnds` names.
  nvim.attach(ends as unknown as { reader: Readable; writer: Writable });
  return nvim;
}
