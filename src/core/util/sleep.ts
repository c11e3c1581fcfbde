// An abortable pause: resolves after `ms`, or at once when `signal` aborts (never rejects).
//
// The abort listener goes when the pause ends either way. A send's signal lives as long as the
// send and sees many pauses (the demo provider pauses before each piece it streams; the retries
// wait too): a listener left behind by each would pile up, and Node warns past ten
// (MaxListenersExceededWarning).

import { timerMs } from './timer.js';

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, timerMs(ms));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
