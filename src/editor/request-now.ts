// A request to Neovim written at once (the client's own `request` waits a turn first).
import type { Neovim } from 'neovim';

/** What `requestNow` uses of a client's transport. */
interface RequestTransport {
  request(
    method: string,
    args: unknown[],
    answered: (error: unknown, result: unknown) => void,
  ): void;
}

/**
 * A request to Neovim written to the channel now. The client's own `request` first awaits its
 * readiness (settled once attached), so a request made in the middle of synchronous work went out
 * only when that work ended: a send's template call waited for the 200 `stat`s of the file
 * references meant to run while Neovim renders (docs/pitfalls.md). The answer and its error are
 * those of `request` (`<method>: <Neovim's message>`).
 */
export function requestNow(nvim: Neovim, method: string, args: unknown[]): Promise<unknown> {
  // NOTE: `transport` is protected in the client's types; every NeovimClient has one (the job
  // host's, and the remote-plugin host's `plugin.nvim`).
  const transport = (nvim as unknown as { transport: RequestTransport }).transport;
  return new Promise((resolve, reject) => {
    transport.request(method, args, (error, result) => {
      if (error === null || error === undefined) resolve(result);
      else reject(new Error(`${method}: ${String((error as unknown[])[1])}`));
    });
  });
}
