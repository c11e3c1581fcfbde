// The fake ACP agent (fake-acp-agent.mjs) for a test: its script written to a temporary file, the
// Lua `setup()` that configures it as the agent `fake`, and what it logged.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './driver.js';

export const FAKE_AGENT = join(ROOT, 'test/helpers/fake-acp-agent.mjs');

/** A session/update of the fake agent's script. */
export type Step = Record<string, unknown>;

export interface FakeAgent {
  /** The agent's entry of `acp.agents`, as Lua source. */
  entry: string;
  /** Its program's arguments (its command is this Node.js). */
  args: string[];
  /** What the agent logged so far (one object per line of its log). */
  log(): Record<string, unknown>[];
  /** The entries of one kind (`prompt`, `permission`, `started`, …). */
  events(kind: string): Record<string, unknown>[];
}

/** A fake agent with `script` (see fake-acp-agent.mjs), its files in `dir`. */
export function fakeAgent(dir: string, script: Record<string, unknown>): FakeAgent {
  const logPath = join(dir, 'agent-log.jsonl');
  const scriptPath = join(dir, 'agent-script.json');
  writeFileSync(scriptPath, JSON.stringify({ log: logPath, ...script }));
  const log = (): Record<string, unknown>[] => {
    let text = '';
    try {
      text = readFileSync(logPath, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  };
  return {
    args: [FAKE_AGENT, scriptPath],
    entry: `{ command = ${JSON.stringify(process.execPath)}, args = { ${JSON.stringify(FAKE_AGENT)}, ${JSON.stringify(scriptPath)} } }`,
    log,
    events: (kind) => log().filter((entry) => entry['event'] === kind),
  };
}

/** `setup()` with the fake agent as `fake`, chosen for every chat; `extra`: more Lua fields. */
export function agentConfig(agent: FakeAgent, extra = ''): string {
  return `{ provider = "acp", parameters = { acp = { agent = "fake" } }, acp = { agents = { fake = ${agent.entry} } }${extra === '' ? '' : `, ${extra}`} }`;
}

/** Text updates of the agent's message. */
export function say(text: string): Step {
  return { update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } };
}

/** A thought chunk. */
export function think(text: string): Step {
  return { update: { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text } } };
}
