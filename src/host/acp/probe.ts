// `:checkhealth flemma`'s look at the configured agents (docs/agents.md, "Checking an agent"): for
// each agent of the user's `setup()` (`acp.agents` of the global configuration: never one a chat
// file names), what its `initialize` answered (its name and version, whether it can load a
// session, what a prompt may carry, its MCP transports, how it signs in). An agent a chat runs
// answers from that process; any other is started for the question in a neutral directory (the
// system's temporary one: no project's files), asked, and ended. The answer is kept per command,
// arguments and environment; the question waits a bounded time, and a slow agent is said to be
// slow while its start goes on (its answer is kept for the next check, its process capped).
import { tmpdir } from 'node:os';
import type { InitializeResponse } from '@agentclientprotocol/sdk';
import type { AgentHealth } from '../../editor/protocol/acp.js';
import type { HostBase } from '../base.js';
import { AgentProcess, type AgentSpec } from './process.js';
import type { ReferenceLookup } from '../references.js';

/** How long the question waits for an agent's answer. */
export const PROBE_WAIT_MS = 8000;
/** The most a probe's process lives (a first `npx` download may be slow). */
const PROBE_CAP_MS = 60_000;

/** What a running chat's agent of a spec answered, when one runs. */
export type RunningAnswer = (spec: AgentSpec) => InitializeResponse | undefined;

function yesNo(value: boolean | null | undefined): string {
  return value === true ? 'yes' : 'no';
}

/** What `initialize` said, as one line: `fake-agent 1.2.3; load session: yes; …`. */
export function initializeText(answer: InitializeResponse): string {
  const info = answer.agentInfo;
  const caps = answer.agentCapabilities ?? {};
  const prompt = caps.promptCapabilities ?? {};
  const mcp = caps.mcpCapabilities ?? {};
  const auth = (answer.authMethods ?? []).map((method) => method.name);
  const who = info === null || info === undefined ? 'an agent that did not name itself' : info.name;
  return [
    `${who} ${info?.version ?? ''}`.trimEnd(),
    `protocol ${String(answer.protocolVersion)}`,
    `load session: ${yesNo(caps.loadSession)}`,
    `prompt: image ${yesNo(prompt.image)}, audio ${yesNo(prompt.audio)}, embedded context ${yesNo(prompt.embeddedContext)}`,
    `MCP: http ${yesNo(mcp.http)}, sse ${yesNo(mcp.sse)}`,
    `sign-in: ${auth.length === 0 ? 'none asked' : auth.join(', ')}`,
  ].join('; ');
}

/** The promise's value, or `undefined` once `ms` passed. */
async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, ms, undefined);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

function keyOf(spec: AgentSpec): string {
  return JSON.stringify([spec.command, spec.args, spec.env]);
}

export class AgentProbes {
  /** The answers, asked or being asked, by command, arguments and environment. */
  private readonly answers = new Map<string, Promise<InitializeResponse>>();
  /** The probes' processes still running (killed when the host exits). */
  private readonly live = new Set<AgentProcess>();
  private exitHook: (() => void) | undefined;

  constructor(
    private readonly base: Pick<HostBase, 'logger'>,
    private readonly running: RunningAnswer,
    private readonly lookup: ReferenceLookup,
  ) {}

  /**
   * The line of each of `agents` (those of the global configuration) a chat runs or `startable`
   * names (the ones the user's `setup()` set, found on PATH), by name.
   */
  async report(
    agents: Iterable<AgentSpec>,
    startable: readonly string[],
    waitMs = PROBE_WAIT_MS,
  ): Promise<AgentHealth[]> {
    const specs = [...agents].sort((a, b) => a.name.localeCompare(b.name));
    const lines = await Promise.all(
      specs.map((spec) => this.one(spec, startable.includes(spec.name), waitMs)),
    );
    return lines.filter((line) => line !== undefined);
  }

  private async one(
    spec: AgentSpec,
    startable: boolean,
    waitMs: number,
  ): Promise<AgentHealth | undefined> {
    const { name } = spec;
    const running = this.running(spec);
    if (running !== undefined) {
      return { name, level: 'ok', text: `${initializeText(running)} (a chat's agent, running)` };
    }
    if (!startable) return undefined;
    try {
      const answer = await within(this.answer(spec), waitMs);
      if (answer === undefined) {
        const seconds = String(Math.round(waitMs / 100) / 10);
        return { name, level: 'warn', text: `did not answer initialize in ${seconds} s` };
      }
      return { name, level: 'ok', text: initializeText(answer) };
    } catch (error) {
      return { name, level: 'error', text: error instanceof Error ? error.message : String(error) };
    }
  }

  /** The spec's answer: the one kept, else a new probe's (a failed one is not kept). */
  private answer(spec: AgentSpec): Promise<InitializeResponse> {
    const key = keyOf(spec);
    let answer = this.answers.get(key);
    if (answer === undefined) {
      answer = this.start(spec);
      this.answers.set(key, answer);
      answer.catch(() => {
        this.answers.delete(key);
      });
    }
    return answer;
  }

  /** Start the agent, `initialize` it, end it (at the latest after `PROBE_CAP_MS`). */
  private async start(spec: AgentSpec): Promise<InitializeResponse> {
    const client = {
      update: () => undefined,
      // It has no session: nothing to allow.
      permission: () => Promise.resolve({ outcome: { outcome: 'cancelled' as const } }),
    };
    const agent = new AgentProcess(spec, tmpdir(), client, this.base.logger, this.lookup);
    this.live.add(agent);
    this.hookExit();
    const cap = setTimeout(() => void agent.stop(), PROBE_CAP_MS);
    try {
      return await agent.start();
    } finally {
      clearTimeout(cap);
      await agent.stop();
      this.live.delete(agent);
    }
  }

  /** On the host's exit, SIGKILL to every probe still running (synchronous). */
  private hookExit(): void {
    if (this.exitHook !== undefined) return;
    this.exitHook = () => {
      for (const agent of this.live) agent.killSync();
    };
    process.once('exit', this.exitHook);
  }
}
