import { describe, expect, it } from 'vitest';
import { Autopilot, type AutopilotSettings, autopilotSettings } from '../../src/host/autopilot.js';

function harness() {
  const lua: { method: string; params: Record<string, unknown> }[] = [];
  const events: { name: string; data: Record<string, unknown> }[] = [];
  const warnings: string[] = [];
  const continued: number[] = [];
  const pilot = new Autopilot({
    notifyLua: (method, params) => lua.push({ method, params }),
    emit: (name, data) => {
      events.push({ name, data });
      return Promise.resolve();
    },
    post: (name, data) => {
      events.push({ name, data });
    },
    warn: (message) => warnings.push(message),
    continueCycle: (bufnr) => {
      continued.push(bufnr);
      return Promise.resolve();
    },
  });
  const lastToken = (): number =>
    Number(lua.filter((c) => c.method === 'autopilot.schedule').at(-1)?.params['token']);
  return { pilot, lua, events, warnings, continued, lastToken };
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
    await h.pilot.responseComplete(1, true, on);
    expect(h.pilot.state(1)).toBe('armed');
    expect(h.events).toEqual([
      { name: 'autopilot:resume-scheduled', data: { bufnr: 1, delay_ms: 250 } },
    ]);
    await h.pilot.resume(1, h.lastToken());
    expect(h.continued).toEqual([1]);
    expect(h.pilot.state(1)).toBe('sending');
    expect(h.events.at(-1)).toEqual({ name: 'autopilot:resumed', data: { bufnr: 1 } });
  });

  it('ignores a stale resume and goes idle when the edit cancelled it', async () => {
    const h = harness();
    await h.pilot.responseComplete(1, true, on);
    const token = h.lastToken();
    await h.pilot.resume(1, token + 100);
    expect(h.continued).toEqual([]);
    h.pilot.cancelled(1, token);
    expect(h.pilot.state(1)).toBe('idle');
    await h.pilot.resume(1, token);
    expect(h.continued).toEqual([]);
    expect(h.pilot.iteration(1)).toBe(1);
  });

  it('stops with a warning after max_turns consecutive tool turns', async () => {
    const h = harness();
    for (let turn = 1; turn <= 3; turn++) {
      await h.pilot.responseComplete(1, true, on);
      await h.pilot.resume(1, h.lastToken());
    }
    expect(h.continued).toHaveLength(3);
    await h.pilot.responseComplete(1, true, on);
    expect(h.pilot.state(1)).toBe('idle');
    expect(h.warnings).toEqual([
      'Autopilot stopped – exceeded 3 consecutive turns. Press <C-]> to go on.',
    ]);
    expect(h.continued).toHaveLength(3);
  });

  it('a cancel resets the turn counter and drops the pending continue in Lua', async () => {
    const h = harness();
    await h.pilot.responseComplete(1, true, on);
    h.pilot.disarm(1);
    expect(h.pilot.iteration(1)).toBe(0);
    expect(h.pilot.state(1)).toBe('idle');
    expect(h.lua.at(-1)).toEqual({
      method: 'autopilot.cancel',
      params: { bufnr: 1, from_host: true },
    });
  });

  it('does nothing when disabled, or for a reply without tool calls', async () => {
    const h = harness();
    await h.pilot.responseComplete(1, true, { ...on, enabled: false });
    await h.pilot.responseComplete(2, false, on);
    expect(h.events).toEqual([]);
    h.pilot.arm(3, { ...on, enabled: false });
    expect(h.pilot.state(3)).toBe('idle');
  });

  it('after tools: continues only when armed; a pause waits for <M-CR> to re-arm', async () => {
    const h = harness();
    await h.pilot.toolsComplete(1, on);
    expect(h.events).toEqual([]);
    h.pilot.arm(1, on);
    h.pilot.pause(1);
    await h.pilot.toolsComplete(1, on);
    expect(h.events).toEqual([]);
    h.pilot.rearmIfPaused(1, on);
    await h.pilot.toolsComplete(1, on);
    expect(h.events.map((e) => e.name)).toEqual(['autopilot:resume-scheduled']);
  });

  it('after tools: calls that finish together schedule one continue', async () => {
    for (const settings of [on, { ...on, resumeDelay: 0 }]) {
      const h = harness();
      h.pilot.arm(1, settings);
      for (let i = 0; i < 8; i++) await h.pilot.toolsComplete(1, settings);
      expect(h.events.map((e) => e.name)).toEqual(['autopilot:resume-scheduled']);
    }
  });
});
