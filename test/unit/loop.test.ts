// The conversation loop of one chat, with fakes for the world (the buffer is a list of lines
// parsed by the real parser; edits are applied as the editor applies them): phase order,
// parallel calls, content-overwrite protection, cancel at each stage, autopilot's limits and
// errors.
import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { type Edit, applyEdits, planPlaceholders, planResult } from '../../src/core/chat/edits.js';
import type { AutopilotSettings } from '../../src/core/loop/autopilot.js';
import { Conversation } from '../../src/core/loop/conversation.js';
import { BUSY_CALL, BUSY_REQUEST, BUSY_TOOLS } from '../../src/core/loop/cycle.js';
import type { StepSettings, ToolCall, Verdict } from '../../src/core/loop/ports.js';

const ON: AutopilotSettings = { enabled: true, maxTurns: 3, resumeDelay: 0 };
const OFF: AutopilotSettings = { enabled: false, maxTurns: 100, resumeDelay: 0 };

interface Context extends StepSettings {
  name: string;
}

/** A tool use block as the model writes it. */
function use(name: string, id: string, input: Record<string, unknown> = {}): string[] {
  return ['', `**Tool Use:** \`${name}\` (\`${id}\`)`, '', '```json', JSON.stringify(input), '```'];
}

/** A fake world for one buffer; every port records what it was asked. */
class World {
  lines: string[];
  verdicts = new Map<string, Verdict>();
  settings: AutopilotSettings = OFF;
  problem: string | undefined;
  requestRunning = false;
  readonly running = new Set<string>();
  readonly started: ToolCall[][] = [];
  readonly sends: { user: boolean }[] = [];
  readonly warnings: string[] = [];
  readonly errors: string[] = [];
  readonly waits: number[] = [];
  readonly log: string[] = [];
  readonly failures: unknown[] = [];
  readonly scheduled: { delay: number; token: number }[] = [];
  readonly later: (() => void)[] = [];
  unscheduled = 0;
  /** How many times a step ended with the loop idle. */
  settled = 0;
  throwOnRead = false;
  /** What Lua recorded of the file as read (`trust.placeholders`), and what was confirmed since. */
  placeholders: Record<string, string> | undefined;
  readonly confirmed: string[] = [];
  readonly conversation: Conversation<Context>;

  constructor(lines: string[]) {
    this.lines = lines;
    const state = (): { document: ReturnType<typeof parseLines>; lines: string[] } => ({
      document: parseLines(this.lines),
      lines: this.lines,
    });
    this.conversation = new Conversation<Context>({
      editor: {
        read: () => {
          if (this.throwOnRead) return Promise.reject(new Error('the buffer went away'));
          return Promise.resolve(state());
        },
        context: () =>
          Promise.resolve({
            name: 'ctx',
            autopilot: this.settings,
            problem: this.problem,
            trust: { placeholders: this.placeholders },
          }),
        apply: (edits) => {
          this.apply(edits);
          return Promise.resolve();
        },
        confirm: (ids) => {
          this.confirmed.push(...ids);
          for (const id of ids) delete this.placeholders?.[id];
          return Promise.resolve();
        },
        waitForUser: () => {
          this.waits.push(this.lines.length);
          this.log.push('wait');
          return Promise.resolve();
        },
        warn: (message) => this.warnings.push(message),
        error: (message) => this.errors.push(message),
      },
      tools: {
        running: () => this.running.size > 0,
        decide: (call) => Promise.resolve(this.verdicts.get(call.name) ?? 'pending'),
        run: (call, _context, rerun) => {
          this.startCalls([call]);
          if (rerun) this.log.push('rerun');
        },
        start: (calls) => {
          this.startCalls(calls);
        },
        startPlacing: (loop, requests, calls) => {
          this.startCalls(calls);
          this.apply(planPlaceholders(loop.document, loop.lines, requests));
          return Promise.resolve();
        },
        resolution: (block, status) => Promise.resolve(`${status}: ${block.name}`),
      },
      provider: {
        running: () => this.requestRunning,
        send: (_context, user) => {
          this.sends.push({ user });
          this.log.push('send');
          return Promise.resolve();
        },
      },
      clock: {
        tick: () => Promise.resolve(),
        soon: (fn) => {
          this.later.push(fn);
        },
      },
      autopilot: {
        schedule: (delay, token) => {
          this.scheduled.push({ delay, token });
        },
        unschedule: () => {
          this.unscheduled += 1;
        },
        scheduled: () => Promise.resolve(),
        resumed: () => {
          this.log.push('resumed');
        },
        warn: (message) => this.warnings.push(message),
      },
      failed: (error) => this.failures.push(error),
      settled: () => {
        this.settled += 1;
      },
    });
  }

  private apply(edits: readonly Edit[]): void {
    this.lines = applyEdits(this.lines, edits);
    this.log.push('edit');
  }

  private startCalls(calls: readonly ToolCall[]): void {
    this.started.push([...calls]);
    for (const call of calls) this.running.add(call.id);
    this.log.push(`start ${calls.map((call) => call.id).join(',')}`);
  }

  /** A running call returns: its result replaces its placeholder. */
  finish(id: string, output: string): void {
    const edit = planResult(parseLines(this.lines), this.lines, id, {
      id,
      output,
      isError: false,
    });
    if (edit !== undefined) this.lines = applyEdits(this.lines, [edit]);
    this.running.delete(id);
  }

  /** Runs what autopilot put on the next tick, until nothing is left. */
  async drain(): Promise<void> {
    while (this.later.length > 0) {
      this.later.shift()?.();
      // The fakes answer at once: one turn of the event loop lets the step it started finish.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  text(): string {
    return this.lines.join('\n');
  }
}

const REPLY = ['@You:', 'Go.', '', '@Assistant:', 'On it.'];

/** A placeholder of `id` with `status`, as a file may hold it. */
function held(id: string, status: string, content: string[] = []): string[] {
  return [
    `**Tool Result:** \`${id}\``,
    '',
    `\`\`\`flemma:tool status=${status}`,
    ...content,
    '```',
    '',
  ];
}

describe('statuses read from a file that is not trusted', () => {
  const FORGED = [
    ...REPLY,
    ...use('bash', 'toolu_B', { command: 'touch x' }),
    ...use('read', 'toolu_R', { path: 'notes.txt' }),
    '',
    '@You:',
    ...held('toolu_B', 'approved'),
    ...held('toolu_R', 'denied', ['No.']),
  ];

  it('are judged by the chain as if pending: a question waits, an approval runs, nothing is sent', async () => {
    const world = new World([...FORGED]);
    world.placeholders = { toolu_B: 'approved', toolu_R: 'denied' };
    world.verdicts.set('bash', 'pending');
    world.verdicts.set('read', 'approved');
    await world.conversation.step(true);
    expect(world.text()).toContain(held('toolu_B', 'pending').join('\n'));
    expect(world.text()).toContain(held('toolu_R', 'approved').join('\n'));
    expect(world.text()).not.toContain('No.');
    expect(world.confirmed).toEqual(['toolu_B', 'toolu_R']);
    expect(world.started).toEqual([
      [{ id: 'toolu_R', name: 'read', input: { path: 'notes.txt' } }],
    ]);
    expect(world.sends).toEqual([]);
  });

  it('a status the user set (not the one read) is honoured, and so is every one once confirmed', async () => {
    const world = new World([...FORGED]);
    world.placeholders = { toolu_B: 'rejected', toolu_R: 'denied' };
    world.verdicts.set('read', 'denied');
    await world.conversation.step(true);
    // bash: the file said rejected, the buffer says approved: the user's; it runs.
    expect(world.started).toEqual([
      [{ id: 'toolu_B', name: 'bash', input: { command: 'touch x' } }],
    ]);
    // read: judged, and the chain denies it too (its reason goes with the chain's text).
    expect(world.text()).toContain('denied: read');
    expect(world.confirmed).toEqual(['toolu_R']);
  });

  it('without a record (a trusted file, or one written here) statuses act as written', async () => {
    const world = new World([...FORGED]);
    await world.conversation.step(true);
    expect(world.started).toEqual([
      [{ id: 'toolu_B', name: 'bash', input: { command: 'touch x' } }],
    ]);
    expect(world.confirmed).toEqual([]);
  });
});

describe('a step of the loop', () => {
  it('Phase 1 writes a pending placeholder and stops for the user: nothing runs or is sent', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B', { command: 'ls' })]);
    world.verdicts.set('bash', 'pending');
    await world.conversation.step(true);
    expect(world.text()).toContain('```flemma:tool status=pending');
    expect(world.log).toEqual(['edit', 'wait']);
    expect(world.started).toEqual([]);
    expect(world.sends).toEqual([]);
  });

  it('approved calls start together while their placeholders are written; nothing is sent', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A'), ...use('read', 'toolu_B')]);
    world.verdicts.set('read', 'approved');
    await world.conversation.step(true);
    expect(world.started).toEqual([
      [
        { id: 'toolu_A', name: 'read', input: {} },
        { id: 'toolu_B', name: 'read', input: {} },
      ],
    ]);
    expect(world.text().match(/status=approved/g)).toHaveLength(2);
    expect(world.sends).toEqual([]);
    // The results come back; the user's next step sends them.
    world.finish('toolu_A', 'a');
    world.finish('toolu_B', 'b');
    await world.conversation.step(true);
    expect(world.sends).toEqual([{ user: true }]);
  });

  it('a denied call gets its error result in Phase 2, and the same step sends (Phase 3)', async () => {
    const world = new World([...REPLY, ...use('danger', 'toolu_D')]);
    world.verdicts.set('danger', 'denied');
    await world.conversation.step(true);
    expect(world.text()).toContain('**Tool Result:** `toolu_D` (error)');
    expect(world.text()).toContain('denied: danger');
    expect(world.log).toEqual(['edit', 'edit', 'send']);
  });

  it('a pending block the user approved by editing runs on the next step', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    await world.conversation.step(true);
    world.lines = world.lines.map((line) => line.replace('status=pending', 'status=approved'));
    await world.conversation.step(true);
    expect(world.started).toEqual([[{ id: 'toolu_B', name: 'bash', input: {} }]]);
  });

  it('an approved block with content does not run: the user is warned and asked', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    await world.conversation.step(true);
    world.lines = world.lines.flatMap((line) =>
      line === '```flemma:tool status=pending'
        ? ['```flemma:tool status=approved', 'mine']
        : [line],
    );
    await world.conversation.step(true);
    expect(world.started).toEqual([]);
    expect(world.warnings.join('\n')).toMatch(/approved block has your text/);
    expect(world.log.at(-1)).toBe('wait');
    expect(world.sends).toEqual([]);
  });

  it('text typed into a pending block is sent as the result', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    await world.conversation.step(true);
    world.lines = world.lines.flatMap((line) =>
      line === '```flemma:tool status=pending' ? [line, 'the answer is 42'] : [line],
    );
    await world.conversation.step(true);
    expect(world.text()).toContain('**Tool Result:** `toolu_B`\n\n```\nthe answer is 42\n```');
    expect(world.sends).toEqual([{ user: true }]);
  });

  it('an interrupted reply’s calls are aborted, never run', async () => {
    const world = new World([
      ...REPLY,
      ...use('read', 'toolu_A'),
      '',
      '<!-- flemma:aborted: Response interrupted by the user. -->',
    ]);
    world.verdicts.set('read', 'approved');
    await world.conversation.step(true);
    expect(world.started).toEqual([]);
    expect(world.text()).toContain('aborted: read');
  });

  it('a repeated id is denied whatever the chain says, and answered as a duplicate', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_X'), ...use('read', 'toolu_X')]);
    world.verdicts.set('read', 'approved');
    await world.conversation.step(true);
    expect(world.started).toEqual([[{ id: 'toolu_X', name: 'read', input: {} }]]);
    expect(world.text()).toContain('Duplicate tool id toolu_X');
  });

  it('does nothing while a request runs, and says so when the user asked', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A')]);
    world.requestRunning = true;
    await world.conversation.step(true);
    await world.conversation.step(false);
    expect(world.warnings).toEqual([BUSY_REQUEST]);
    expect(world.log).toEqual([]);
  });

  it('does not send while a tool runs', async () => {
    const world = new World([...REPLY, 'Done.']);
    world.running.add('toolu_bg');
    await world.conversation.step(true);
    expect(world.warnings).toEqual([BUSY_TOOLS]);
    expect(world.sends).toEqual([]);
  });

  it('a frontmatter problem stops the step with its message and autopilot', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A')]);
    world.problem = 'frontmatter line 2: boom';
    world.settings = ON;
    world.conversation.autopilot.arm(ON);
    await world.conversation.step(false);
    expect(world.errors).toEqual(['frontmatter line 2: boom']);
    expect(world.conversation.autopilot.state).toBe('idle');
    expect(world.log).toEqual([]);
  });

  it('steps run one after another, and a failing step does not stop the next', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    world.throwOnRead = true;
    const first = world.conversation.step(true);
    world.throwOnRead = false;
    const second = world.conversation.step(true);
    expect(world.conversation.stepping).toBe(true);
    await Promise.all([first, second]);
    expect(world.conversation.stepping).toBe(false);
    expect(world.failures).toHaveLength(0);
    // Both steps read the buffer in turn: the second saw the placeholder the first could not write.
    expect(world.text()).toContain('status=pending');
  });

  it('a step that throws is reported, and the next step still runs', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    world.throwOnRead = true;
    await world.conversation.step(true);
    expect(world.failures).toHaveLength(1);
    world.throwOnRead = false;
    await world.conversation.step(true);
    expect(world.text()).toContain('status=pending');
  });
});

describe('autopilot', () => {
  it('goes on by itself when the approved calls finished, and sends their results', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A'), ...use('read', 'toolu_B')]);
    world.verdicts.set('read', 'approved');
    world.settings = ON;
    await world.conversation.replyFinished(true, ON);
    await world.drain();
    expect(world.started).toHaveLength(1);
    expect(world.conversation.busy).toBe(true);
    world.finish('toolu_A', 'a');
    world.finish('toolu_B', 'b');
    // Parallel calls finish together: one continue, not one each.
    await world.conversation.toolsFinished(ON);
    await world.conversation.toolsFinished(ON);
    expect(world.later).toHaveLength(1);
    await world.drain();
    expect(world.sends).toEqual([{ user: false }]);
    expect(world.log.filter((entry) => entry === 'resumed')).toHaveLength(2);
  });

  it('stops after max_turns consecutive tool turns, with a warning', async () => {
    const world = new World([...REPLY, 'Done.']);
    world.settings = ON;
    for (let turn = 1; turn <= ON.maxTurns; turn++) {
      await world.conversation.replyFinished(true, ON);
      expect(world.conversation.autopilot.iteration).toBe(turn);
    }
    expect(world.warnings).toEqual([]);
    await world.conversation.replyFinished(true, ON);
    expect(world.warnings[0]).toMatch(/exceeded 3 consecutive turns/);
    expect(world.conversation.autopilot.state).toBe('idle');
  });

  it('pauses at a call that waits for the user; <M-CR> re-arms it', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    world.settings = ON;
    await world.conversation.replyFinished(true, ON);
    await world.drain();
    expect(world.conversation.autopilot.state).toBe('paused');
    world.conversation.autopilot.rearmIfPaused(ON);
    expect(world.conversation.autopilot.state).toBe('armed');
  });

  it('a resume delay goes through the editor, and an edit meanwhile cancels it', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A')]);
    const slow = { ...ON, resumeDelay: 500 };
    world.settings = slow;
    await world.conversation.replyFinished(true, slow);
    expect(world.scheduled).toEqual([{ delay: 500, token: 1 }]);
    world.conversation.autopilot.cancelled(1);
    await world.conversation.autopilot.resume(1);
    expect(world.log).toEqual([]);
    expect(world.conversation.autopilot.state).toBe('idle');
    // A later schedule's answer is taken; a stale token is not.
    await world.conversation.replyFinished(true, slow);
    await world.conversation.autopilot.resume(1);
    expect(world.log).toEqual([]);
    await world.conversation.autopilot.resume(2);
    expect(world.log).toContain('resumed');
  });

  it('a cancel at any stage stops it and resets the turn count', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A')]);
    world.verdicts.set('read', 'approved');
    const slow = { ...ON, resumeDelay: 500 };
    world.settings = slow;
    // Scheduled: the editor forgets its timer.
    await world.conversation.replyFinished(true, slow);
    world.conversation.stopped();
    expect(world.unscheduled).toBe(1);
    await world.conversation.autopilot.resume(1);
    expect(world.log).toEqual([]);
    // Armed while tools run: nothing goes on when they finish.
    world.conversation.autopilot.arm(slow);
    world.conversation.stopped();
    await world.conversation.toolsFinished(slow);
    expect(world.scheduled).toHaveLength(1);
    expect(world.conversation.autopilot.iteration).toBe(0);
    expect(world.conversation.busy).toBe(false);
  });

  it('off: a finished reply or finished tools never continue', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A')]);
    world.verdicts.set('read', 'approved');
    await world.conversation.replyFinished(true, OFF);
    await world.conversation.step(true);
    world.finish('toolu_A', 'a');
    await world.conversation.toolsFinished(OFF);
    expect(world.later).toEqual([]);
    expect(world.sends).toEqual([]);
  });

  it('an automatic step with only error results arms and goes on, a user step sends at once', async () => {
    const world = new World([...REPLY, ...use('danger', 'toolu_D')]);
    world.verdicts.set('danger', 'denied');
    world.settings = ON;
    world.conversation.autopilot.arm(ON);
    await world.conversation.step(false);
    expect(world.sends).toEqual([]);
    expect(world.later).toHaveLength(1);
    await world.drain();
    expect(world.sends).toEqual([{ user: false }]);
  });
});

describe('how a step ends (<C-]> from Insert mode waits for the user to have the word)', () => {
  it('says refused, waiting, started or sent', async () => {
    const busy = new World([...REPLY, '', '@You:', 'More.']);
    busy.requestRunning = true;
    expect(await busy.conversation.step(true)).toBe('refused');

    const pending = new World([...REPLY, ...use('bash', 'toolu_B')]);
    pending.verdicts.set('bash', 'pending');
    expect(await pending.conversation.step(true)).toBe('waiting');
    expect(pending.conversation.idle).toBe(true);

    const approved = new World([...REPLY, ...use('read', 'toolu_A')]);
    approved.verdicts.set('read', 'approved');
    expect(await approved.conversation.step(true)).toBe('started');
    expect(approved.conversation.idle).toBe(false);

    const sent = new World([...REPLY, '', '@You:', 'More.']);
    expect(await sent.conversation.step(true)).toBe('sent');
  });

  it('tells the owner when a step ends with nothing going on by itself', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A')]);
    world.verdicts.set('read', 'approved');
    world.settings = ON;
    await world.conversation.step(true);
    // A tool runs and autopilot is armed: not idle, nothing said.
    expect(world.settled).toBe(0);
    world.finish('toolu_A', 'a');
    await world.conversation.toolsFinished(ON);
    await world.drain();
    // Autopilot's step sent the result; the chain is over.
    expect(world.sends).toEqual([{ user: false }]);
    expect(world.conversation.idle).toBe(true);
    expect(world.settled).toBe(1);
  });
});

describe('<M-CR>: the call under the cursor, as a step of the loop', () => {
  /** 0-based row of the tool use header of `id`. */
  function rowOf(world: World, id: string): number {
    return world.lines.findIndex((line) => line.includes(`(\`${id}\`)`));
  }

  it('runs a pending call (the user’s approval) and rearms a paused autopilot', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    world.verdicts.set('bash', 'pending');
    world.settings = ON;
    expect(await world.conversation.step(true)).toBe('waiting');
    expect(world.conversation.autopilot.state).toBe('idle');
    world.conversation.autopilot.arm(ON);
    world.conversation.autopilot.pause();
    expect(await world.conversation.runCallAt(rowOf(world, 'toolu_B'))).toBe('started');
    expect(world.started).toEqual([[{ id: 'toolu_B', name: 'bash', input: {} }]]);
    expect(world.conversation.autopilot.state).toBe('armed');
  });

  it('answers a rejected call with the error result Phase 2 writes, and runs nothing', async () => {
    const world = new World([
      ...REPLY,
      ...use('bash', 'toolu_B'),
      '',
      '@You:',
      ...held('toolu_B', 'rejected'),
    ]);
    await world.conversation.runCallAt(rowOf(world, 'toolu_B'));
    expect(world.started).toEqual([]);
    expect(world.text()).toContain('rejected: bash');
    expect(world.text()).not.toContain('```flemma:tool');
  });

  it('runs a finished call again, replacing its result', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A')]);
    world.verdicts.set('read', 'approved');
    await world.conversation.step(true);
    world.finish('toolu_A', 'first');
    await world.conversation.runCallAt(rowOf(world, 'toolu_A'));
    expect(world.started.length).toBe(2);
    expect(world.log.at(-1)).toBe('rerun');
  });

  it('is refused while a request runs, and says where no call is', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    world.requestRunning = true;
    expect(await world.conversation.runCallAt(rowOf(world, 'toolu_B'))).toBe('refused');
    world.requestRunning = false;
    expect(await world.conversation.runCallAt(0)).toBe('refused');
    expect(world.warnings).toEqual([BUSY_CALL, 'No tool call found in message']);
    expect(world.started).toEqual([]);
  });

  it('waits for a step queued before it', async () => {
    const world = new World([...REPLY, ...use('read', 'toolu_A'), ...use('bash', 'toolu_B')]);
    world.verdicts.set('read', 'approved');
    world.verdicts.set('bash', 'pending');
    const step = world.conversation.step(true);
    const call = world.conversation.runCallAt(rowOf(world, 'toolu_B'));
    expect(await step).toBe('waiting');
    expect(await call).toBe('started');
    // The step wrote the placeholders first; the call ran the pending one.
    expect(world.log[0]).toBe('edit');
    expect(world.started).toEqual([[{ id: 'toolu_B', name: 'bash', input: {} }]]);
  });
});

describe('a decision on a call takes its turn in the queue', () => {
  it('runs after a step queued before it, and not behind a running request', async () => {
    const world = new World([...REPLY, ...use('bash', 'toolu_B')]);
    world.verdicts.set('bash', 'pending');
    const order: string[] = [];
    const step = world.conversation.step(true).then(() => order.push('step'));
    const decided = world.conversation.decision(() => {
      order.push(world.text().includes('status=pending') ? 'decision saw the placeholder' : '?');
      return Promise.resolve(1);
    });
    expect(await decided).toBe(1);
    await step;
    expect(order).toEqual(['step', 'decision saw the placeholder']);

    world.requestRunning = true;
    let ran = false;
    await world.conversation.decision(() => {
      ran = true;
      return Promise.resolve();
    });
    expect(ran).toBe(true);
  });

  it('a failing decision rejects, and the queue goes on', async () => {
    const world = new World([...REPLY, '', '@You:', 'More.']);
    await expect(
      world.conversation.decision(() => Promise.reject(new Error('edit refused'))),
    ).rejects.toThrow('edit refused');
    expect(await world.conversation.step(true)).toBe('sent');
  });
});
