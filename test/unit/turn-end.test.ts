// The answer to the user's last action that ends a turn (src/host/turn-end.ts): how it ended,
// the first reason that is not a plain end winning, and only the latest ticket answered.
import { describe, expect, it } from 'vitest';
import { type TurnEndAnswer, TurnEnd } from '../../src/host/turn-end.js';

function turnEnd(): { end: TurnEnd; answers: TurnEndAnswer[] } {
  const answers: TurnEndAnswer[] = [];
  return { end: new TurnEnd((answer) => answers.push(answer)), answers };
}

describe('TurnEnd', () => {
  it('answers a plain end as done, once', () => {
    const { end, answers } = turnEnd();
    end.expect(3);
    expect(end.pending).toBe(3);
    end.handBack(3);
    end.handBack(3);
    expect(answers).toEqual([{ ticket: 3, outcome: 'done' }]);
    expect(end.pending).toBeUndefined();
  });

  it('keeps the first reason, and the row of the call that waits', () => {
    const { end, answers } = turnEnd();
    end.expect(1);
    end.waiting(14);
    end.ended('failed');
    end.handBack(1);
    end.expect(2);
    end.ended('cancelled');
    end.waiting(3);
    end.handBack(2);
    expect(answers).toEqual([
      { ticket: 1, outcome: 'waiting', row: 14 },
      { ticket: 2, outcome: 'cancelled' },
    ]);
  });

  it('answers only the latest ticket, and notes nothing without one', () => {
    const { end, answers } = turnEnd();
    end.ended('failed');
    end.expect(1);
    end.expect(2);
    end.handBack(1);
    end.handBack(2);
    expect(answers).toEqual([{ ticket: 2, outcome: 'done' }]);
    end.expect(undefined);
    expect(end.pending).toBeUndefined();
  });
});
