// `:checkhealth flemma`'s look at the configured agents (src/host/acp/probe.ts), against the fake
// ACP agent: what `initialize` answered, kept per agent; a slow one said to be slow, its answer
// kept for the next look; an agent the user did not name is not started.
import { describe, expect, it } from 'vitest';
import { AgentProbes } from '../../src/host/acp/probe.js';
import type { AgentSpec } from '../../src/host/acp/process.js';
import { fakeAgent } from '../helpers/fake-acp.js';
import { waitForExit } from '../helpers/processes.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();
const quiet = { info: () => undefined, warn: () => undefined, debug: () => undefined };

/** The fake agent as the one configured agent, `fake`. */
function withFake(script: Record<string, unknown>): {
  config: AgentSpec[];
  started: () => Record<string, unknown>[];
} {
  const agent = fakeAgent(temp('flemma-acp-probe-'), script);
  return {
    config: [{ name: 'fake', command: process.execPath, args: agent.args, env: {} }],
    started: () => agent.events('started'),
  };
}

/** No reference resolves (the fake agents' settings have none). */
const NO_REFS = (): Promise<undefined> => Promise.resolve(undefined);

describe('the agents’ health', () => {
  it('says what initialize answered, started once and ended; the answer is kept', async () => {
    const { config, started } = withFake({ loadSession: true });
    const probes = new AgentProbes({ logger: quiet as never }, () => undefined, NO_REFS);
    const line = {
      name: 'fake',
      level: 'ok',
      text: 'fake-agent 1.2.3; protocol 1; load session: yes; prompt: image no, audio no, embedded context yes; MCP: http no, sse no; sign-in: none asked',
    };
    expect(await probes.report(config, ['fake'])).toEqual([line]);
    await waitForExit(started()[0]?.['pid'] as number);
    expect(await probes.report(config, ['fake'])).toEqual([line]);
    expect(started()).toHaveLength(1);
  });

  it('says a slow agent did not answer in time, and has its answer at the next look', async () => {
    const { config, started } = withFake({ initializeDelay: 1500 });
    const probes = new AgentProbes({ logger: quiet as never }, () => undefined, NO_REFS);
    expect(await probes.report(config, ['fake'], 200)).toEqual([
      { name: 'fake', level: 'warn', text: 'did not answer initialize in 0.2 s' },
    ]);
    const [later] = await probes.report(config, ['fake'], 10_000);
    expect(later?.text).toMatch(/^fake-agent 1\.2\.3; .*load session: no/);
    expect(started()).toHaveLength(1);
  });

  it('starts no agent the user did not name; a running chat’s agent answers without a new one', async () => {
    const { config, started } = withFake({});
    const answer = { protocolVersion: 1, agentInfo: { name: 'busy-agent', version: '9' } };
    const idle = new AgentProbes({ logger: quiet as never }, () => undefined, NO_REFS);
    expect(await idle.report(config, [])).toEqual([]);
    const busy = new AgentProbes({ logger: quiet as never }, () => answer, NO_REFS);
    expect((await busy.report(config, []))[0]?.text).toBe(
      "busy-agent 9; protocol 1; load session: no; prompt: image no, audio no, embedded context no; MCP: http no, sse no; sign-in: none asked (a chat's agent, running)",
    );
    expect(started()).toHaveLength(0);
  });
});
