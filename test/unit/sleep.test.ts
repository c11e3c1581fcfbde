// The abortable pause: it leaves nothing behind on the signal it watched.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { sleep } from '../../src/core/util/sleep.js';

describe('sleep', () => {
  it('removes its abort listener when the pause ends, so a signal shared by many pauses does not pile them up', async () => {
    const controller = new AbortController();
    // A send's signal sees one pause per streamed piece (the demo provider) or per retry.
    for (let i = 0; i < 20; i++) await sleep(1, controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('resolves at once when the signal aborts, and leaves no listener', async () => {
    const controller = new AbortController();
    const pending = sleep(60_000, controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    await pending;
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('resolves at once for an aborted signal or a pause of zero', async () => {
    const controller = new AbortController();
    await sleep(0, controller.signal);
    controller.abort();
    await sleep(60_000, controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
