import { describe, expect, it } from 'vitest';
import {
  Autopilot,
  type AutopilotSettings,
  autopilotSettings,
} from '../../src/core/loop/autopilot.js';

/** One buffer's autopilot, with ports that record what it asks of the editor. */
function harness() {
  const lua: { method: string; params: Record<string, unknown> }[] = [];
  const events: { name: string; data: Record<string, unknown> }[] = [];
  const warnings: string[] = [];
  const soon: (() => void)[] = [];
  let continued = 0;
  const pilot = new Autopilot({
    schedule: (delayMs, token) => {
      lua.push({ method: 'autopilot.schedule', params: { delay_ms: delayMs, token } });
    },
    unschedule: () => {
      lua.push({ method: 'autopilot.cancel', params: { from_host: true } });
    },
    scheduled: (delayMs) => {
      events.push({ name: 'autopilot:resume-scheduled', data: { delay_ms: delayMs } });
      return Promise.resolve();
    },
    resumed: () => {
      events.push({ name: 'autopilot:resumed', data: {} });
    },
    warn: (message) => warnings.push(message),
    soon: (fn) => soon.push(fn),
    continueLoop: () => {
      continued += 1;
      return Promise.resolve();
    },
  });
  const lastToken = (): number =>
    Number(lua.filter((c) => c.method === 'autopilot.schedule').at(-1)?.params['token']);
  return { pilot, lua, events, warnings, soon, lastToken, continued: () => continued };
}

const on: AutopilotSettings = { enabled: true, maxTurns: 3, resumeDelay: 250 };

describe('autopilot settings', () => {
  it('reads the boolean and the table forms with defaults', () => {
    expect(autopilotSettings(undefined)).toEqual({ enabled: true, maxTurns: 100, resumeDelay: 0 });
    expect(autopilotSettings({ autopilot: false })).toEqual({
      enabled: false,
      maxTurns: 100,
      resumeDelay: 0,
    });
    expect(
      autopilotSettings({ autopilot: { enabled: true, max_turns: 3, resume_delay: 40 } }),
    ).toEqual({
      enabled: true,
      maxTurns: 3,
      resumeDelay: 40,
    });
  });
});

describe('the autopilot state machine', () => {
  it('continues after a reply with tool calls, through Lua, with the scheduled and resumed events', async () => {
    const h = harness();
    await h.pilot.replyFinished(true, on);
    expect(h.pilot.state).toBe('armed');
    expect(h.events).toEqual([{ name: 'autopilot:resume-scheduled', data: { delay_ms: 250 } }]);
    await h.pilot.resume(h.lastToken());
    expect(h.continued()).toBe(1);
    expect(h.pilot.state).toBe('sending');
    expect(h.events.at(-1)).toEqual({ name: 'autopilot:resumed', data: {} });
  });

  it('with no delay, goes on at the next tick without asking Lua', async () => {
    const h = harness();
    await h.pilot.replyFinished(true, { ...on, resumeDelay: 0 });
    expect(h.lua).toEqual([]);
    expect(h.events).toEqual([{ name: 'autopilot:resume-scheduled', data: { delay_ms: 0 } }]);
    expect(h.continued()).toBe(0);
    h.soon.shift()?.();
    await Promise.resolve();
    expect(h.continued()).toBe(1);
  });

  it('ignores a stale resume and goes idle when the edit cancelled it', async () => {
    const h = harness();
    await h.pilot.replyFinished(true, on);
    const token = h.lastToken();
    await h.pilot.resume(token + 100);
    expect(h.continued()).toBe(0);
    h.pilot.cancelled(token);
    expect(h.pilot.state).toBe('idle');
    await h.pilot.resume(token);
    expect(h.continued()).toBe(0);
    expect(h.pilot.iteration).toBe(1);
  });

  it('stops with a warning after max_turns consecutive tool turns', async () => {
    const h = harness();
    for (let turn = 1; turn <= 3; turn++) {
      await h.pilot.replyFinished(true, on);
      await h.pilot.resume(h.lastToken());
    }
    expect(h.continued()).toBe(3);
    await h.pilot.replyFinished(true, on);
    expect(h.pilot.state).toBe('idle');
    expect(h.warnings).toEqual([
      'Autopilot stopped – exceeded 3 consecutive turns. Press <C-]> to go on.',
    ]);
    expect(h.continued()).toBe(3);
  });

  it('a cancel resets the turn counter and drops the pending continue in Lua', async () => {
    const h = harness();
    await h.pilot.replyFinished(true, on);
    h.pilot.disarm();
    expect(h.pilot.iteration).toBe(0);
    expect(h.pilot.state).toBe('idle');
    expect(h.lua.at(-1)).toEqual({ method: 'autopilot.cancel', params: { from_host: true } });
  });

  it('says whether the loop goes on by itself (the turn is over otherwise)', async () => {
    const h = harness();
    expect(await h.pilot.replyFinished(true, on)).toBe(true);
    expect(await harness().pilot.replyFinished(false, on)).toBe(false);
    expect(await harness().pilot.replyFinished(true, { ...on, enabled: false })).toBe(false);
    const capped = harness();
    for (let turn = 1; turn <= 3; turn++) {
      await capped.pilot.replyFinished(true, on);
      await capped.pilot.resume(capped.lastToken());
    }
    expect(await capped.pilot.replyFinished(true, on)).toBe(false);
  });

  it('does nothing when disabled, or for a reply without tool calls', async () => {
    const off = harness();
    await off.pilot.replyFinished(true, { ...on, enabled: false });
    const plain = harness();
    await plain.pilot.replyFinished(false, on);
    expect([...off.events, ...plain.events]).toEqual([]);
    const never = harness();
    never.pilot.arm({ ...on, enabled: false });
    expect(never.pilot.state).toBe('idle');
  });

  it('after tools: continues only when armed; a pause waits for <M-CR> to re-arm', async () => {
    const h = harness();
    await h.pilot.toolsFinished(on);
    expect(h.events).toEqual([]);
    h.pilot.arm(on);
    h.pilot.pause();
    await h.pilot.toolsFinished(on);
    expect(h.events).toEqual([]);
    h.pilot.rearmIfPaused(on);
    await h.pilot.toolsFinished(on);
    expect(h.events.map((e) => e.name)).toEqual(['autopilot:resume-scheduled']);
  });

  it('after tools: calls that finish together schedule one continue', async () => {
    for (const settings of [on, { ...on, resumeDelay: 0 }]) {
      const h = harness();
      h.pilot.arm(settings);
      for (let i = 0; i < 8; i++) await h.pilot.toolsFinished(settings);
      expect(h.events.map((e) => e.name)).toEqual(['autopilot:resume-scheduled']);
    }
  });
});
