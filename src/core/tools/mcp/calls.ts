// Two facts about a call to a server: it can be given up when a signal aborts (the SDK's own
// promise may settle later), and its failure either came from the server (a JSON-RPC error: the
// server is there) or from the transport (it may be gone).

import { errorText } from './bridge.js';

/** An error the server answered with (JSON-RPC error code), as opposed to a lost transport. */
export function isProtocolError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' && code !== -32001 && code !== -32000;
}

/** `promise`, or a rejection with the signal's reason as soon as it aborts. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(errorText(error)));
      },
    );
  });
}
