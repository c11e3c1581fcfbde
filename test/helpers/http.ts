// A local HTTP server a test started, taken down.
import type { Server } from 'node:http';

/** Closes `server` (if any) and every connection still open on it. */
export async function closeServer(server: Server | undefined): Promise<void> {
  if (server === undefined) return;
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}
