// A chat whose provider is `acp` (docs/agents.md): the agent `parameters.acp.agent` names among
// `acp.agents` of the configuration, the adapter that runs the chat's turn through it. What a file
// that is not trusted may do: use the agent your own configuration chose, never choose one (the
// agent's command and its `parameters.acp.agent` need trust, and a frontmatter that sets
// `provider = "acp"` in such a file is refused here: it would start a program).
import { basename, dirname } from 'node:path';
import type { Config } from '../../core/config/config.js';
import type { Notifier } from '../../core/util/notify.js';
import type { BufferSettings } from '../buffer-settings.js';
import { type ProviderConnection, connectProvider } from '../send/connection.js';
import type { HostBase } from '../base.js';
import type { AcpAgents } from './agents.js';
import type { AgentSpec } from './process.js';

/** What connecting a chat to its agent needs beyond the configuration. */
export interface AgentLink {
  bufnr: number;
  agents: Pick<AcpAgents, 'adapter'>;
  editor: Pick<BufferSettings, 'facts' | 'trust' | 'ops' | 'config' | 'approval'>;
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function strings(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((item): item is string => typeof item === 'string')
    : [];
}

/** The configured agents (`acp.agents`), by name. */
export function configuredAgents(config: Config): Map<string, AgentSpec> {
  const agents = new Map<string, AgentSpec>();
  for (const [name, raw] of Object.entries(record(record(config.data['acp'])['agents']))) {
    const entry = record(raw);
    const command = entry['command'];
    if (typeof command !== 'string' || command === '') continue;
    const env = Object.fromEntries(
      Object.entries(record(entry['env'])).filter(
        (pair): pair is [string, string] => typeof pair[1] === 'string',
      ),
    );
    agents.set(name, { name, command, args: strings(entry['args']), env });
  }
  return agents;
}

/** Why the chat cannot have its agent, as one line; undefined when it can. */
function problem(
  config: Config,
  link: AgentLink,
  agents: Map<string, AgentSpec>,
): string | undefined {
  const { facts, trust, ops } = link.editor;
  if (!trust.trusted && ops.some((op) => op.path[0] === 'provider')) {
    const file = facts.filename === null ? 'this chat' : basename(facts.filename);
    return `${file} is not trusted and may not start an agent: review it, then :trust`;
  }
  const names = [...agents.keys()].sort().join(', ') || 'none';
  const name = record(config.parameters['acp'])['agent'];
  if (typeof name !== 'string' || name === '') {
    return `set parameters.acp.agent to the agent to use (configured: ${names})`;
  }
  if (!agents.has(name)) return `no agent "${name}" in acp.agents (configured: ${names})`;
  return undefined;
}

/** The chat's agent connection, or undefined after telling the user why there is none. */
export function connectAgent(
  notify: Pick<Notifier, 'error'>,
  config: Config,
  link: AgentLink,
): ProviderConnection | undefined {
  const agents = configuredAgents(config);
  const refused = problem(config, link, agents);
  const spec = agents.get(String(record(config.parameters['acp'])['agent']));
  if (refused !== undefined || spec === undefined) {
    notify.error(`acp: ${refused ?? 'no agent'}`);
    return undefined;
  }
  const { facts } = link.editor;
  const cwd = facts.filename === null ? facts.cwd : dirname(facts.filename);
  return {
    providerName: 'acp',
    model: spec.name,
    adapter: link.agents.adapter(link.bufnr, spec, cwd, link.editor),
    reauthorize: () => Promise.resolve(undefined),
  };
}

/**
 * The connection of a chat: to its agent when its provider is `acp` (a process of the chat's,
 * not an endpoint), else `connectProvider`'s.
 */
export async function connectChat(
  ctx: Pick<HostBase, 'lua' | 'notify' | 'sdks' | 'secrets'>,
  config: Config,
  env: BufferSettings['env'],
  agent: AgentLink | undefined,
): Promise<ProviderConnection | undefined> {
  if (config.provider === 'acp' && agent !== undefined) {
    return connectAgent(ctx.notify, config, agent);
  }
  return connectProvider(ctx, config, env);
}
