// Never more than the parent (docs/tasks.md, "Limits and trust"): what a child chat gets from its
// parent and its profile. A profile only narrows: its tools are the ones the parent has too, it
// adds no approval, sandbox path or MCP server (those are the parent's, given to the child as
// they are), and it changes the provider only when it is the user's own (setup()).
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

/**
 * The configuration layer a child's file runs under, as frontmatter-style option data: its tool
 * list, its provider and model. Everything else (approval, presets, sandbox, MCP) is the parent's.
 */
export function childConfigLayer(plan: ChildPlan): Record<string, unknown> {
  const layer: Record<string, unknown> = {
    provider: plan.provider,
    tools: { $set: plan.tools },
  };
  if (plan.model !== undefined) layer['model'] = plan.model;
  return layer;
}
