// Agent profiles for the `task` tool (docs/tasks.md, "Profiles"): the built-in read-only
// `explorer`, the user's own from `setup({ agents = … })`, and the project's from
// `.flemma/agents/*.chat` (a chat file whose frontmatter is the profile and whose `@System:` is
// its system prompt), which are read only when the user opted in (`tools.task.project_agents`).
//
// Decisions:
// - A profile says what a child may have at most; `narrowChild` (narrow.ts) takes it down to what
//   the parent has. A profile without a `tools` list gets the read-only tools.
// - The origin is kept: only the user's own profiles (setup) may choose a provider; a project's
//   profile may choose a model of the parent's provider, nothing that names an endpoint or a
//   credential.
// - A project file cannot replace a built-in or a setup profile of the same name: the user's own
//   wins, and the file is reported.
import type { ChatDocument } from '../chat/ast.js';
import { isRecord } from '../util/records.js';

/** Where a profile came from. */
export type ProfileOrigin = 'builtin' | 'setup' | 'project';

export interface AgentProfile {
  name: string;
  /** What the model reads in the `task` tool's description to choose it. */
  description: string;
  /** The tools it may have (at most; the parent's own list bounds it). */
  tools: readonly string[];
  model?: string;
  /** Only from setup(): a provider the user configured. */
  provider?: string;
  /** The child's `@System:` message. */
  system?: string;
  maxTurns?: number;
  /** Dollars the child may spend. */
  maxCost?: number;
  origin: ProfileOrigin;
  /** A project profile's file. */
  file?: string;
}

/** The read-only tools: the built-in profile's, and a profile's that names none. */
export const READ_ONLY_TOOLS: readonly string[] = ['find', 'grep', 'ls', 'read'];

/** The profile a `task` call gets when it names none. */
export const DEFAULT_AGENT = 'explorer';

export const EXPLORER: AgentProfile = Object.freeze({
  name: DEFAULT_AGENT,
  description:
    'Reads and searches the project (read, grep, find, ls) and changes nothing; for finding code, callers and facts, and summarising files.',
  tools: READ_ONLY_TOOLS,
  origin: 'builtin',
});

/** A profile's name: letters, digits, `_` and `-` (it becomes part of a schema's enum). */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface ProfileSet {
  profiles: AgentProfile[];
  /** Problems found (a bad entry is left out and said). */
  problems: string[];
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

function toolList(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.filter((item): item is string => typeof item === 'string' && item !== '');
}

/** The fields a profile reads from a table (setup) or a frontmatter (project). */
function profileFields(
  name: string,
  raw: Record<string, unknown>,
  origin: ProfileOrigin,
  where: string,
): AgentProfile | string {
  if (!NAME.test(name)) {
    return `${where}: the profile name '${name}' may hold only letters, digits, '_' and '-'`;
  }
  const description = text(raw['description']);
  if (description === undefined) return `${where}: the profile '${name}' has no description`;
  const tools = raw['tools'] === undefined ? READ_ONLY_TOOLS : toolList(raw['tools']);
  if (tools === undefined) return `${where}: 'tools' of the profile '${name}' must be a list`;
  const profile: AgentProfile = { name, description, tools, origin };
  const model = text(raw['model']);
  if (model !== undefined) profile.model = model;
  const system = text(raw['system']);
  if (system !== undefined) profile.system = system;
  const maxTurns = positive(raw['max_turns']);
  if (maxTurns !== undefined) profile.maxTurns = Math.floor(maxTurns);
  const maxCost = positive(raw['max_cost']);
  if (maxCost !== undefined) profile.maxCost = maxCost;
  if (origin === 'setup') {
    const provider = text(raw['provider']);
    if (provider !== undefined) profile.provider = provider;
  } else if (raw['provider'] !== undefined) {
    return `${where}: a project profile may not choose a provider (only setup() may)`;
  }
  return profile;
}

/** The profiles of `agents` in a configuration's data (setup, or a trusted frontmatter). */
export function profilesFromConfig(data: Readonly<Record<string, unknown>>): ProfileSet {
  const agents = data['agents'];
  const out: ProfileSet = { profiles: [], problems: [] };
  if (!isRecord(agents)) return out;
  for (const [name, raw] of Object.entries(agents).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!isRecord(raw) || raw['enabled'] === false) continue;
    // Settings for the built-in profile (a frontmatter's narrower limits) keep what it has.
    const fields = name === EXPLORER.name ? { ...explorerFields(), ...raw } : raw;
    const profile = profileFields(name, fields, 'setup', 'agents');
    if (typeof profile === 'string') out.problems.push(profile);
    else out.profiles.push(profile);
  }
  return out;
}

function explorerFields(): Record<string, unknown> {
  return { description: EXPLORER.description, tools: [...EXPLORER.tools] };
}

/** Names of the profiles a configuration switched off (`agents.<name>.enabled = false`). */
export function disabledProfiles(data: Readonly<Record<string, unknown>>): Set<string> {
  const agents = data['agents'];
  const off = new Set<string>();
  if (!isRecord(agents)) return off;
  for (const [name, raw] of Object.entries(agents)) {
    if (isRecord(raw) && raw['enabled'] === false) off.add(name);
  }
  return off;
}

/** The decoded frontmatter of an agent file, or why it cannot be one. */
export type AgentFrontmatter = { data: unknown } | { error: string };

/**
 * A project profile from its `.chat` file: `name` is the file's name without `.chat`; the
 * frontmatter (decoded by the caller: JSON or YAML, never Lua, which would run the project's
 * code) is the profile; the first `@System:` message is its system prompt.
 */
export function profileFromChat(
  name: string,
  file: string,
  document: ChatDocument,
  lines: readonly string[],
  frontmatter: AgentFrontmatter,
): AgentProfile | string {
  if ('error' in frontmatter) return `${file}: ${frontmatter.error}`;
  if (!isRecord(frontmatter.data)) return `${file}: the frontmatter must be an object`;
  const profile = profileFields(name, frontmatter.data, 'project', file);
  if (typeof profile === 'string') return profile;
  const system = document.messages.find((message) => message.role === 'System');
  if (system !== undefined) {
    const body = lines.slice(system.span.startLine, system.span.endLine);
    const first = (lines[system.span.startLine - 1] ?? '').replace(/^@System:\s?/, '');
    const prompt = [first, ...body].join('\n').trim();
    if (prompt !== '') profile.system = prompt;
  }
  return { ...profile, file };
}

/**
 * The profiles a chat may use, by name: the built-in ones, the user's (replacing a built-in of the
 * same name), then the project's (never replacing either; said as a problem), without those the
 * configuration switched off.
 */
export function mergeProfiles(
  setup: ProfileSet,
  project: ProfileSet,
  disabled: ReadonlySet<string> = new Set(),
): ProfileSet {
  const byName = new Map<string, AgentProfile>([[EXPLORER.name, EXPLORER]]);
  for (const profile of setup.profiles) byName.set(profile.name, profile);
  const problems = [...setup.problems, ...project.problems];
  for (const profile of project.profiles) {
    const taken = byName.get(profile.name);
    if (taken !== undefined) {
      const owner = taken.origin === 'builtin' ? 'the built-in profile' : 'a profile of setup()';
      problems.push(`${profile.file ?? profile.name}: '${profile.name}' is ${owner}; skipped`);
      continue;
    }
    byName.set(profile.name, profile);
  }
  const profiles = [...byName.values()]
    .filter((profile) => !disabled.has(profile.name))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { profiles, problems };
}
