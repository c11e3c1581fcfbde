import { describe, expect, it } from 'vitest';
import type { LuaBridge } from '../../src/editor/lua.js';
import { type Clock, WriteScheduler, type WriteOp } from '../../src/editor/writequeue.js';
import { countWrites } from '../helpers/write-counter.js';

/** A clock whose timers fire only when the test advances time. */
class ManualClock implements Clock {
  time = 0;
  private timers: { at: number; fn: () => void; live: boolean }[] = [];
  now(): number {
    return this.time;
  }
  setTimeout(fn: () => void, ms: number): { cancel(): void } {
    const timer = { at: this.time + ms, fn, live: true };
    this.timers.push(timer);
    return { cancel: () => (timer.live = false) };
  }
  /** Advance time, firing due timers in order, letting promises settle in between. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await flushPromises();
      const due = this.timers
        .filter((timer) => timer.live && timer.at <= end)
        .sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      due.live = false;
      this.time = Math.max(this.time, due.at);
      due.fn();
    }
    this.time = end;
    await flushPromises();
  }
}

async function flushPromises(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

interface Call {
  at: number;
  batches: { bufnr: number; tick: number | null; ops: WriteOp[] }[];
}

/** A Lua side that keeps buffers as arrays of lines and answers like flemma.buffer. */
function fakeLua(
  clock: ManualClock,
  answer?: (call: Call, index: number) => unknown[] | undefined,
) {
  const calls: Call[] = [];
  const answers: { conflicts?: number[] }[] = [];
  const buffers = new Map<number, string[]>([
    [1, ['']],
    [2, ['']],
  ]);
  let inFlight = 0;
  let maxInFlight = 0;
  const bridge = {
    call: async (method: string, params: unknown) => {
      expect(method).toBe('buffer.apply_batch');
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const call: Call = { at: clock.now(), batches: structuredClone(params) as Call['batches'] };
      calls.push(call);
      await Promise.resolve();
      inFlight -= 1;
      const scripted = answer?.(call, calls.length - 1);
      if (scripted !== undefined) return scripted;
      return call.batches.map((batch) => {
        const lines = buffers.get(batch.bufnr);
        if (lines === undefined) return { status: 'gone', done: 0 };
        const conflicts: number[] = [];
        batch.ops.forEach((op, index) => {
          if (op.op === 'append') {
            const parts = op.text.split('\n');
            lines[lines.length - 1] = (lines[lines.length - 1] ?? '') + (parts[0] ?? '');
            lines.push(...parts.slice(1));
          } else if (op.op === 'set_lines') {
            const current = lines.slice(op.start, op.end);
            if (op.expect !== null && JSON.stringify(current) !== JSON.stringify(op.expect)) {
              conflicts.push(index + 1);
              return;
            }
            lines.splice(op.start, op.end - op.start, ...op.lines);
          }
        });
        const result = { status: 'ok', done: batch.ops.length, tick: calls.length, conflicts };
        answers.push(result);
        return result;
      });
    },
    notify: () => undefined,
  };
  return {
    bridge: bridge as unknown as LuaBridge,
    calls,
    answers,
    buffers,
    maxInFlight: () => maxInFlight,
  };
}

/** A write scheduler on a manual clock, over a fake Lua side that applies every batch. */
function scheduler() {
  const clock = new ManualClock();
  const lua = fakeLua(clock);
  return { clock, lua, writes: new WriteScheduler(lua.bridge, { clock }) };
}

describe('WriteScheduler', () => {
  it('coalesces appends made in one tick into a single RPC and a single op', async () => {
    const { clock, lua, writes } = scheduler();
    const buffer = writes.buffer(1);
    for (let i = 0; i < 1000; i++) buffer.append(i % 10 === 9 ? 'x\n' : 'x');
    const done = buffer.flushed();
    await clock.advance(0);
    await done;
    expect(lua.calls).toHaveLength(1);
    expect(lua.calls[0]?.batches[0]?.ops).toHaveLength(1);
    expect(lua.buffers.get(1)).toEqual([...Array<string>(100).fill('x'.repeat(10)), '']);
  });

  it('sends at most one RPC per 16 ms frame, with one batch in flight, for all buffers', async () => {
    const { clock, lua, writes } = scheduler();
    for (let ms = 0; ms < 100; ms += 2) {
      writes.buffer(1).append('a');
      writes.buffer(2).append('b');
      await clock.advance(2);
    }
    await clock.advance(50);
    const gaps = lua.calls.slice(1).map((call, i) => call.at - (lua.calls[i]?.at ?? 0));
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(16);
    expect(lua.calls.length).toBeLessThanOrEqual(Math.ceil(100 / 16) + 1);
    expect(lua.calls.every((call) => call.batches.length === 2)).toBe(true);
    expect(lua.maxInFlight()).toBe(1);
    expect(lua.buffers.get(1)?.[0]).toBe('a'.repeat(50));
    expect(lua.buffers.get(2)?.[0]).toBe('b'.repeat(50));
  });

  it('retries refused edits (textlock) in order, backing off, without losing text', async () => {
    const clock = new ManualClock();
    let refusals = 3;
    const lua = fakeLua(clock, (call) =>
      refusals-- > 0 ? call.batches.map(() => ({ status: 'retry', done: 0 })) : undefined,
    );
    const count = countWrites(lua.bridge);
    const writes = new WriteScheduler(count.bridge, { clock });
    const buffer = writes.buffer(1);
    buffer.append('one ');
    await clock.advance(0);
    buffer.append('two ');
    await clock.advance(20);
    buffer.append('three');
    await clock.advance(500);
    await buffer.flushed();
    expect(lua.buffers.get(1)).toEqual(['one two three']);
    expect(count.retries).toBe(3);
    const gaps = lua.calls.slice(1).map((call, i) => call.at - (lua.calls[i]?.at ?? 0));
    expect(gaps[1]).toBeGreaterThan(gaps[0] ?? 0);
  });

  it('refuses a line replacement whose rows the user changed, and reports the conflict', async () => {
    const { clock, lua, writes } = scheduler();
    lua.buffers.set(1, ['@You:', 'pending', 'tail']);
    const buffer = writes.buffer(1);
    const stale = buffer.setLines(1, 2, ['result'], ['what the host saw']);
    const fresh = buffer.setLines(2, 3, ['new tail'], ['tail']);
    await clock.advance(0);
    expect(await stale).toBe('conflict');
    expect(await fresh).toBe('applied');
    expect(lua.buffers.get(1)).toEqual(['@You:', 'pending', 'new tail']);
    // Lua reported it with the batch, as the queue's one refused edit.
    expect(lua.answers.flatMap((answer) => answer.conflicts ?? [])).toEqual([1]);
  });

  it('settles everything as gone when the buffer was wiped', async () => {
    const { clock, writes } = scheduler();
    const buffer = writes.buffer(7);
    buffer.append('lost');
    const replaced = buffer.setLines(0, 1, ['x']);
    await clock.advance(0);
    expect(await replaced).toBe('gone');
    await buffer.flushed();
    expect(buffer.gone).toBe(true);
    expect(writes.buffer(7)).not.toBe(buffer);
  });

  it('sendNow sends what is queued in the same tick, but keeps a stream to its frames', async () => {
    const { clock, lua, writes } = scheduler();
    const buffer = writes.buffer(1);
    void buffer.setLines(0, 1, ['now'], ['']);
    writes.sendNow();
    // No timer had to fire: the batch left before the caller's next await.
    expect(lua.calls).toHaveLength(1);
    await clock.advance(0);
    writes.buffer(2).append('streaming');
    await clock.advance(16);
    expect(lua.calls).toHaveLength(2);
    writes.buffer(2).append(' more');
    writes.sendNow();
    expect(lua.calls).toHaveLength(2);
    await clock.advance(16);
    expect(lua.calls).toHaveLength(3);
    expect(lua.buffers.get(1)).toEqual(['now']);
    expect(lua.buffers.get(2)).toEqual(['streaming more']);
  });

  it('passes the changedtick Neovim reported back with the next batch', async () => {
    const { clock, lua, writes } = scheduler();
    const buffer = writes.buffer(1);
    buffer.append('a');
    await clock.advance(0);
    buffer.append('b');
    await clock.advance(20);
    expect(lua.calls.map((call) => call.batches[0]?.tick)).toEqual([null, 1]);
  });

  describe('callAfterWrites', () => {
    /** A Lua side that answers the `{batches, after}` form, retrying the first batch if asked. */
    function afterLua(retryFirst: boolean) {
      const calls: { batches: { bufnr: number; ops: WriteOp[] }[]; after?: unknown[][] }[] = [];
      const bridge = {
        call: async (method: string, params: unknown) => {
          expect(method).toBe('buffer.apply_batch');
          await Promise.resolve();
          type Form = { batches: { bufnr: number; ops: WriteOp[] }[]; after?: unknown[][] };
          const form: Form = Array.isArray(params)
            ? { batches: params as Form['batches'] }
            : (params as Form);
          calls.push(structuredClone(form));
          const retry = retryFirst && calls.length === 1;
          const results = form.batches.map((batch) =>
            retry ? { status: 'retry', done: 0 } : { status: 'ok', done: batch.ops.length },
          );
          if (Array.isArray(params)) return results;
          return {
            results,
            after: retry
              ? null
              : (form.after ?? []).map((call) => ({ ok: true, value: { ran: call[0] } })),
          };
        },
        notify: () => undefined,
      };
      return { bridge: bridge as unknown as LuaBridge, calls };
    }

    /** A scheduler over `afterLua`, with `text` appended to buffer 1. */
    function scheduler(retryFirst: boolean, text: string) {
      const clock = new ManualClock();
      const lua = afterLua(retryFirst);
      const writes = new WriteScheduler(lua.bridge, { clock });
      writes.buffer(1).append(text);
      return { clock, lua, writes };
    }

    it('goes in the round trip of the edits queued before it, after them', async () => {
      const { clock, lua, writes } = scheduler(false, 'last words');
      writes.buffer(2).append('sink');
      const answer = writes.callAfterWrites('send.finish', { bufnr: 1, sink: 2 });
      await clock.advance(0);
      await expect(answer).resolves.toEqual({ ran: 'send.finish' });
      expect(lua.calls).toHaveLength(1);
      expect(lua.calls[0]?.batches.map((batch) => batch.bufnr)).toEqual([1, 2]);
      expect(lua.calls[0]?.after).toEqual([['send.finish', { bufnr: 1, sink: 2 }]]);
    });

    it('waits for an edit that must be retried, and goes with it', async () => {
      const { clock, lua, writes } = scheduler(true, 'text');
      let settled = false;
      const answer = writes.callAfterWrites('send.finish', { bufnr: 1, sink: 2 }).then((value) => {
        settled = true;
        return value;
      });
      await clock.advance(0);
      expect(settled).toBe(false);
      await clock.advance(300);
      await expect(answer).resolves.toEqual({ ran: 'send.finish' });
      expect(lua.calls).toHaveLength(2);
      expect(lua.calls[1]?.batches[0]?.ops).toHaveLength(1);
      expect(lua.calls[1]?.after).toEqual([['send.finish', { bufnr: 1, sink: 2 }]]);
    });

    it('a notice goes with the edit queued in its turn, after it, and says it went', async () => {
      const { clock, lua, writes } = scheduler(false, 'result');
      const went = writes.noticeAfterWrites('tools.spinner', {
        bufnr: 1,
        tool_id: 't',
        state: 'success',
      });
      await clock.advance(0);
      await expect(went).resolves.toBe(true);
      expect(lua.calls).toHaveLength(1);
      // Marked as a notice: Lua runs it only when every edit of the batch was applied.
      expect(lua.calls[0]?.after).toEqual([
        ['tools.spinner', { bufnr: 1, tool_id: 't', state: 'success' }, true],
      ]);
    });

    it('a notice whose batch is held back is dropped (its sender sends it), a call waits', async () => {
      const { clock, lua, writes } = scheduler(true, 'result');
      const went = writes.noticeAfterWrites('buffer.unlock', { bufnr: 1, owner: 'tools' });
      const answer = writes.callAfterWrites('send.finish', { bufnr: 1, sink: 2 });
      await clock.advance(0);
      await expect(went).resolves.toBe(false);
      await clock.advance(300);
      await expect(answer).resolves.toEqual({ ran: 'send.finish' });
      expect(lua.calls).toHaveLength(2);
      expect(lua.calls[1]?.after).toEqual([['send.finish', { bufnr: 1, sink: 2 }]]);
    });

    it('with nothing to write, is one round trip of its own', async () => {
      const clock = new ManualClock();
      const lua = afterLua(false);
      const writes = new WriteScheduler(lua.bridge, { clock });
      const answer = writes.callAfterWrites('tools.facts', { bufnr: 3 });
      await clock.advance(0);
      await expect(answer).resolves.toEqual({ ran: 'tools.facts' });
      expect(lua.calls).toEqual([{ batches: [], after: [['tools.facts', { bufnr: 3 }]] }]);
    });
  });
});
