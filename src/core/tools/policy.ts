// Tool policy (docs/policy.md, "`tools.policy`"): which tools the model is offered and may run. Pure data in, a
// decision out; the host applies it when it builds a request and again before a tool runs, and
// the approval chain asks it first (`urn:flemma:approval:policy`, priority 200).
//
// Also here: the hook lists (`confirm` / `log` / `silent`) and the autonomy levels, which the
// approval resolvers in src/core/approval/flynn.ts turn into decisions.
//
// Decisions (see docs/policy.md):
// - The offered set is (profile ∪ allow) − deny; deny always wins. Every entry of a list is a
//   tool name, a glob over names (src/core/util/glob.ts: `*` matches any run of characters, `.`
//   and `:` included), or `group:<name>`.
// - A pattern matches a tool when it matches the tool's canonical name or one of its aliases, so
//   Flynn-style policies (`shell.*`, `file.write`) apply to Flemma's `bash` and `write`.
// - Without a profile: `full` (everything) when `allow` is empty; when `allow` lists something,
//   only what it lists (an allow-list). A profile name nobody defines fails closed: nothing is
//   offered, and a warning says why.
// - Layers: the global `tools.policy` (the buffer's frontmatter edits the same option), then
//   `tools.policy.providers.<provider>`: its `profile` replaces the profile, its `allow` and
//   `deny` add to the lists.
// - User profiles (`tools.policy.profiles.<name>`) are a list of patterns, or
//   `{ extends = "<profile>", allow = {…}, deny = {…} }`; a user profile may redefine a built-in
//   name.

import { type Matcher, nameGlob } from '../util/glob.js';

/** What a policy needs to know about a tool. */
export interface PolicyTool {
  name: string;
  aliases?: readonly string[] | undefined;
  groups?: readonly string[] | undefined;
  dangerous?: boolean | undefined;
}

export interface PolicyLayer {
  profile?: string | undefined;
  allow?: readonly string[] | undefined;
  deny?: readonly string[] | undefined;
}

export type UserProfile =
  readonly string[] | { extends?: string; allow?: readonly string[]; deny?: readonly string[] };

export interface ToolPolicyConfig extends PolicyLayer {
  profiles?: Record<string, UserProfile> | undefined;
  providers?: Record<string, PolicyLayer> | undefined;
}

export const BUILTIN_GROUPS: Readonly<Record<string, readonly string[]>> = {
  fs: ['read', 'write', 'edit', 'ls', 'grep', 'find', 'file.*'],
  runtime: ['bash', 'process_*', 'shell.*', 'process.*'],
  web: ['web_*', 'web.*', 'browser.*'],
  memory: ['memory_*', 'memory.*'],
};

const MINIMAL = [
  'read',
  'ls',
  'grep',
  'find',
  'web_fetch',
  'file.read',
  'file.list',
  'web.fetch',
] as const;
const MESSAGING = [...MINIMAL, 'group:memory', 'web_search', 'web.search'] as const;
const CODING = [...MESSAGING, 'group:fs', 'group:runtime', 'file.patch'] as const;

/** The built-in profiles, each a superset of the one before. */
export const BUILTIN_PROFILES: Readonly<Record<string, readonly string[]>> = {
  minimal: MINIMAL,
  messaging: MESSAGING,
  coding: CODING,
  full: ['*'],
};

/** Tools the `conservative` autonomy level always asks about (besides `dangerous: true` ones). */
export const DANGEROUS_TOOLS: readonly string[] = [
  'write',
  'edit',
  'bash',
  'process_start',
  'process_kill',
  'file.write',
  'file.edit',
  'file.patch',
  'shell.exec',
  'process.start',
  'process.kill',
];

/**
 * Compiled patterns by their text. A `ToolPolicy` keeps one for its lifetime, so each of its
 * patterns is compiled once however many tools it judges; without one, a pattern is compiled
 * for each question (plain names, most entries, need no compiling).
 */
export type PatternCache = Map<string, Matcher>;

function matcherOf(pattern: string, cache: PatternCache | undefined): Matcher {
  let matcher = cache?.get(pattern);
  if (matcher === undefined) {
    matcher = nameGlob(pattern);
    cache?.set(pattern, matcher);
  }
  return matcher;
}

function namesOf(tool: PolicyTool | string): string[] {
  if (typeof tool === 'string') return [tool];
  return [tool.name, ...(tool.aliases ?? [])];
}

/** Whether a plain glob (no `group:`) matches the tool by name or alias. */
export function matchesGlob(
  tool: PolicyTool | string,
  pattern: string,
  cache?: PatternCache,
): boolean {
  const matches = matcherOf(pattern, cache);
  return namesOf(tool).some((name) => matches(name));
}

/** Whether the tool is in `group:<group>` (the built-in members, or its own `groups`). */
export function inGroup(tool: PolicyTool | string, group: string, cache?: PatternCache): boolean {
  if (typeof tool !== 'string' && (tool.groups ?? []).includes(group)) return true;
  return (BUILTIN_GROUPS[group] ?? []).some((pattern) => matchesGlob(tool, pattern, cache));
}

/** Whether one list entry (a name, a glob or `group:<name>`) matches the tool. */
export function matchesPattern(
  tool: PolicyTool | string,
  pattern: string,
  cache?: PatternCache,
): boolean {
  if (pattern.startsWith('group:')) return inGroup(tool, pattern.slice('group:'.length), cache);
  return matchesGlob(tool, pattern, cache);
}

/** The first entry of `patterns` that matches the tool, if any. */
export function firstMatch(
  tool: PolicyTool | string,
  patterns: readonly string[] | undefined,
  cache?: PatternCache,
): string | undefined {
  return (patterns ?? []).find((pattern) => matchesPattern(tool, pattern, cache));
}

export interface PolicyVerdict {
  allowed: boolean;
  /** Why, in words (for `:Flemma tool:why` and the error result). */
  reason: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A list of strings from configuration (a Lua list may carry `__list`). */
function stringList(value: unknown): string[] | undefined {
  const list: unknown = isRecord(value) ? value['__list'] : value;
  if (list === undefined || list === null) return undefined;
  if (isRecord(value) && Object.keys(value).length === 0) return [];
  return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string') : [];
}

function layerOf(value: unknown): PolicyLayer {
  if (!isRecord(value)) return {};
  const layer: PolicyLayer = {};
  if (typeof value['profile'] === 'string' && value['profile'] !== '') {
    layer.profile = value['profile'];
  }
  const allow = stringList(value['allow']);
  if (allow !== undefined) layer.allow = allow;
  const deny = stringList(value['deny']);
  if (deny !== undefined) layer.deny = deny;
  return layer;
}

/** `tools.policy` from a configuration snapshot (plain data) in the policy's terms. */
export function policyConfig(raw: unknown): ToolPolicyConfig {
  if (!isRecord(raw)) return {};
  const config: ToolPolicyConfig = layerOf(raw);
  if (isRecord(raw['profiles'])) {
    const profiles: Record<string, UserProfile> = {};
    for (const [name, value] of Object.entries(raw['profiles'])) {
      const list = Array.isArray(value) ? stringList(value) : undefined;
      if (list !== undefined) {
        profiles[name] = list;
      } else if (isRecord(value)) {
        const listed = stringList(value);
        if (listed !== undefined && listed.length > 0 && value['allow'] === undefined) {
          profiles[name] = listed;
          continue;
        }
        const profile: { extends?: string; allow?: string[]; deny?: string[] } = {};
        if (typeof value['extends'] === 'string') profile.extends = value['extends'];
        const allow = stringList(value['allow']);
        if (allow !== undefined) profile.allow = allow;
        const deny = stringList(value['deny']);
        if (deny !== undefined) profile.deny = deny;
        profiles[name] = profile;
      }
    }
    config.profiles = profiles;
  }
  if (isRecord(raw['providers'])) {
    const providers: Record<string, PolicyLayer> = {};
    for (const [name, value] of Object.entries(raw['providers'])) providers[name] = layerOf(value);
    config.providers = providers;
  }
  return config;
}

/** A layer set through the registry API (`setPolicy`) under the configuration's own fields. */
export function mergePolicy(
  base: ToolPolicyConfig | undefined,
  over: ToolPolicyConfig,
): ToolPolicyConfig {
  if (base === undefined) return over;
  const merged: ToolPolicyConfig = { ...base };
  for (const [key, value] of Object.entries(over) as [keyof ToolPolicyConfig, unknown][]) {
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  if (base.profiles !== undefined || over.profiles !== undefined) {
    merged.profiles = { ...(base.profiles ?? {}), ...(over.profiles ?? {}) };
  }
  return merged;
}

export class ToolPolicy {
  readonly profile: string | undefined;
  readonly allow: readonly string[];
  readonly deny: readonly string[];
  /** Problems found (an unknown profile, a cycle of `extends`). */
  readonly warnings: string[] = [];
  readonly #profiles: Record<string, UserProfile>;
  readonly #patterns: PatternCache = new Map();

  constructor(
    readonly config: ToolPolicyConfig = {},
    readonly provider?: string,
  ) {
    const override = provider === undefined ? undefined : config.providers?.[provider];
    this.profile = override?.profile ?? config.profile;
    this.allow = [...(config.allow ?? []), ...(override?.allow ?? [])];
    this.deny = [...(config.deny ?? []), ...(override?.deny ?? [])];
    this.#profiles = config.profiles ?? {};
    if (this.profile !== undefined) this.#inProfile('', this.profile, new Set());
  }

  /** No profile, no allow, no deny: every tool is allowed. */
  get permissive(): boolean {
    return this.profile === undefined && this.allow.length === 0 && this.deny.length === 0;
  }

  isAllowed(tool: PolicyTool | string): boolean {
    return this.explain(tool).allowed;
  }

  explain(tool: PolicyTool | string): PolicyVerdict {
    const name = typeof tool === 'string' ? tool : tool.name;
    const denied = firstMatch(tool, this.deny, this.#patterns);
    if (denied !== undefined) {
      return { allowed: false, reason: `'${name}' matches deny pattern '${denied}'` };
    }
    const allowed = firstMatch(tool, this.allow, this.#patterns);
    if (allowed !== undefined) {
      return { allowed: true, reason: `'${name}' matches allow pattern '${allowed}'` };
    }
    if (this.profile === undefined) {
      return this.allow.length === 0
        ? { allowed: true, reason: 'no profile: every tool' }
        : { allowed: false, reason: `'${name}' is not in the allow list` };
    }
    return this.#inProfile(name, this.profile, new Set(), tool)
      ? { allowed: true, reason: `'${name}' is in profile '${this.profile}'` }
      : { allowed: false, reason: `'${name}' is not in profile '${this.profile}'` };
  }

  /** The tools of `tools` the policy offers, in their order. */
  filter<T extends PolicyTool>(tools: readonly T[]): T[] {
    return tools.filter((tool) => this.isAllowed(tool));
  }

  #inProfile(
    name: string,
    profile: string,
    seen: Set<string>,
    tool: PolicyTool | string = name,
  ): boolean {
    if (seen.has(profile)) {
      this.#warn(
        `tools.policy: profile '${profile}' extends itself (through ${[...seen].join(' → ')})`,
      );
      return false;
    }
    seen.add(profile);
    const user = this.#profiles[profile];
    if (user !== undefined) {
      if (Array.isArray(user))
        return firstMatch(tool, user as readonly string[], this.#patterns) !== undefined;
      const spec = user as {
        extends?: string;
        allow?: readonly string[];
        deny?: readonly string[];
      };
      if (firstMatch(tool, spec.deny, this.#patterns) !== undefined) return false;
      if (firstMatch(tool, spec.allow, this.#patterns) !== undefined) return true;
      return spec.extends === undefined ? false : this.#inProfile(name, spec.extends, seen, tool);
    }
    const builtin = BUILTIN_PROFILES[profile];
    if (builtin === undefined) {
      const known = [
        ...new Set([...Object.keys(BUILTIN_PROFILES), ...Object.keys(this.#profiles)]),
      ];
      this.#warn(
        `tools.policy: unknown profile '${profile}' (known: ${known.sort().join(', ')}); no tool is offered`,
      );
      return false;
    }
    return firstMatch(tool, builtin, this.#patterns) !== undefined;
  }

  #warn(message: string): void {
    if (!this.warnings.includes(message)) this.warnings.push(message);
  }
}

/** The error a policy-blocked call gets instead of running. */
export function policyErrorText(name: string): string {
  return `Tool '${name}' is not allowed by tool policy`;
}

// -------------------------------------------------------------------------------------------------
// Hooks

export type HookAction = 'confirm' | 'log' | 'silent';

export interface HookConfig {
  confirm?: readonly string[] | undefined;
  log?: readonly string[] | undefined;
  silent?: readonly string[] | undefined;
}

export interface HookMatch {
  action: HookAction;
  /** False when no list named the tool (the action is then the fallback, `silent`). */
  matched: boolean;
  pattern?: string;
}

/** `tools.hooks` from a configuration snapshot. */
export function hookConfig(raw: unknown): HookConfig {
  if (!isRecord(raw)) return {};
  return {
    confirm: stringList(raw['confirm']) ?? [],
    log: stringList(raw['log']) ?? [],
    silent: stringList(raw['silent']) ?? [],
  };
}

/**
 * The hook action for a tool: the first list that matches, checked in the order confirm, log,
 * silent (the most careful wins when a tool matches several); `silent` when none matches.
 */
export function hookMatch(tool: PolicyTool | string, hooks: HookConfig): HookMatch {
  for (const action of ['confirm', 'log', 'silent'] as const) {
    const pattern = firstMatch(tool, hooks[action]);
    if (pattern !== undefined) return { action, matched: true, pattern };
  }
  return { action: 'silent', matched: false };
}

export function getAction(tool: PolicyTool | string, hooks: HookConfig): HookAction {
  return hookMatch(tool, hooks).action;
}

// -------------------------------------------------------------------------------------------------
// Autonomy

export type AutonomyLevel = 'conservative' | 'standard' | 'autonomous';

export const AUTONOMY_LEVELS: readonly AutonomyLevel[] = ['conservative', 'standard', 'autonomous'];

export function isAutonomyLevel(value: unknown): value is AutonomyLevel {
  return value === 'conservative' || value === 'standard' || value === 'autonomous';
}

export interface AutonomyDecision {
  action: HookAction;
  overridden: boolean;
  reason: string;
  level: AutonomyLevel;
}

export function isDangerous(tool: PolicyTool | string): boolean {
  if (typeof tool !== 'string' && tool.dangerous === true) return true;
  return DANGEROUS_TOOLS.some((pattern) => matchesGlob(tool, pattern));
}

/**
 * The hook action once the autonomy level is applied: `conservative` turns any action on a
 * dangerous tool into `confirm`; the other levels keep the base action.
 */
export function resolveAutonomy(
  tool: PolicyTool | string,
  base: HookAction,
  level: AutonomyLevel,
): AutonomyDecision {
  const name = typeof tool === 'string' ? tool : tool.name;
  if (level === 'conservative' && isDangerous(tool)) {
    return base === 'confirm'
      ? { action: 'confirm', overridden: false, reason: `'${name}' already asks`, level }
      : {
          action: 'confirm',
          overridden: true,
          reason: `autonomy level 'conservative' requires approval for '${name}' (hook action '${base}' overridden)`,
          level,
        };
  }
  return {
    action: base,
    overridden: false,
    reason: `autonomy level '${level}' keeps '${base}'`,
    level,
  };
}

// -------------------------------------------------------------------------------------------------
// From a configuration snapshot

/**
 * The policy in force for a buffer: `tools.policy` of its configuration (frontmatter applied)
 * over the layer set through the registry API, with the provider's override.
 */
export function effectivePolicy(
  tools: Record<string, unknown> | undefined,
  provider: string | undefined,
  base?: ToolPolicyConfig,
): ToolPolicy {
  return new ToolPolicy(mergePolicy(base, policyConfig(tools?.['policy'])), provider);
}

/** `tools.autonomy` of a snapshot; `standard` when unset or unknown. */
export function autonomyOf(tools: Record<string, unknown> | undefined): AutonomyLevel {
  const raw = tools?.['autonomy'];
  return isAutonomyLevel(raw) ? raw : 'standard';
}
