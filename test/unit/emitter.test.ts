import { describe, expect, it } from 'vitest';
import { Emitter } from '../../src/core/util/emitter.js';

interface Events {
  started: { id: string };
  ended: { id: string; ok: boolean };
}

describe('Emitter', () => {
  it('hands each event to the handler of its name', () => {
    const emitter = new Emitter<Events>();
    const seen: string[] = [];
    emitter.subscribe({
      started: ({ id }) => seen.push(`start ${id}`),
      ended: ({ id, ok }) => seen.push(`end ${id} ${String(ok)}`),
    });
    emitter.emit('started', { id: 'a' });
    emitter.emit('ended', { id: 'a', ok: true });
    expect(seen).toEqual(['start a', 'end a true']);
  });

  it('has one subscriber', () => {
    const emitter = new Emitter<Events>();
    const handlers = { started: () => undefined, ended: () => undefined };
    emitter.subscribe(handlers);
    expect(() => {
      emitter.subscribe(handlers);
    }).toThrow('one subscriber');
  });

  it('drops events nobody subscribed to', () => {
    const emitter = new Emitter<Events>();
    expect(() => {
      emitter.emit('started', { id: 'x' });
    }).not.toThrow();
  });
});
