// Never more than the parent (docs/tasks.md, "Limits and trust"): what a child chat gets from its
// parent and its profile. A profile only narrows: its tools are the ones the parent has too, it
// adds no approval, sandbox path or MCP server (those are the parent's, given to the child as
// they are), and it changes the provider only when it is the user's own (setup()).
import { type ApproveList, expandApproveList, presetTable } from '../approval/presets.js';
import type { SwitchedOption } from '../config/switched.js';
import { isRecord } from '../util/records.js';
import type { AgentProfile } from './profiles.js';

/** The tool a child never gets: a child does not start children of its own. */
export const TASK_TOOL = 'task';

/** What the parent has when its `task` call runs. */
export interface ParentGrant {
  /** The tools the parent's request offered. */
  tools: readonly string[];
  provider: string;
  model?: string;
  /** The parent's turn limit (`tools.autopilot.max_turns`). */
  maxTurns: number;
  /** What the parent's session may still spend (`limits.max_session_cost` less its spend). */
  budgetLeft?: number;
}

/** What the child runs with. */
export interface ChildPlan {
  profile: string;
  /** The parent's tools the profile lists, in the profile's order. */
  tools: string[];
  /** The profile's tools the parent does not have (not given; said in the log). */
  withheld: string[];
  provider: string;
  model?: string;
  maxTurns: number;
  /** Dollars the child may spend; undefined: no cap beyond the parent's. */
  maxCost?: number;
}

/**
 * The child's plan: the profile's tools that the parent has (never `task`), the profile's model
 * (of the parent's provider unless the profile is the user's own), the lower of each limit.
 */
export function narrowChild(profile: AgentProfile, parent: ParentGrant): ChildPlan {
  const has = new Set(parent.tools);
  const tools: string[] = [];
  const withheld: string[] = [];
  for (const name of profile.tools) {
    if (name !== TASK_TOOL && has.has(name)) {
      if (!tools.includes(name)) tools.push(name);
    } else if (!withheld.includes(name)) {
      withheld.push(name);
    }
  }
  const ownProvider = profile.origin === 'setup' ? profile.provider : undefined;
  const provider = ownProvider ?? parent.provider;
  // A model named for another provider is not the parent's model.
  const model = profile.model ?? (provider === parent.provider ? parent.model : undefined);
  const plan: ChildPlan = {
    profile: profile.name,
    tools,
    withheld,
    provider,
    maxTurns: Math.min(profile.maxTurns ?? parent.maxTurns, parent.maxTurns),
  };
  if (model !== undefined) plan.model = model;
  const caps = [profile.maxCost, parent.budgetLeft].filter(
    (value): value is number => value !== undefined,
  );
  if (caps.length > 0) plan.maxCost = Math.max(0, Math.min(...caps));
  return plan;
}

/** A parent's approval from its frontmatter, when it set or edited `tools.auto_approve`. */
export type ParentApproval = { kind: 'list'; list: ApproveList } | { kind: 'function' };

/** The name of the preset that carries a parent's edited approval list to its child. */
export const PARENT_PRESET = '$parent';

/**
 * The options a child's file runs under (over the base configuration, under its own frontmatter):
 * the parent's own `tools` section (its approval, presets, policy, hooks, command rules, sandbox
 * and limits as the parent's frontmatter left them) with the plan's tool list, and the plan's
 * provider and model. A parent's frontmatter approval list goes as a preset of its expansion
 * (approvals and denials alike); one made by a Lua function cannot be carried, and the child
 * approves nothing by itself.
 */
export function childLayer(
  plan: ChildPlan,
  parent: Readonly<Record<string, unknown>>,
  approval: ParentApproval | undefined,
): SwitchedOption[] {
  const tools: Record<string, unknown> = { ...(isRecord(parent['tools']) ? parent['tools'] : {}) };
  tools['__list'] = plan.tools;
  if (approval?.kind === 'function') tools['auto_approve'] = [];
  if (approval?.kind === 'list') {
    const expanded = expandApproveList(approval.list, presetTable(tools['presets']).presets);
    const presets = isRecord(tools['presets']) ? tools['presets'] : {};
    tools['presets'] = {
      ...presets,
      [PARENT_PRESET]: { approve: [...expanded.approve].sort(), deny: [...expanded.deny].sort() },
    };
    tools['auto_approve'] = [PARENT_PRESET];
  }
  const layer: SwitchedOption[] = [{ path: ['tools'], value: tools }];
  for (const key of ['sandbox', 'presets', 'limits', 'parameters']) {
    if (parent[key] !== undefined) layer.push({ path: [key], value: parent[key] });
  }
  layer.push({ path: ['provider'], value: plan.provider });
  layer.push({ path: ['model'], value: plan.model ?? null });
  return layer;
}
