// The approval resolvers of docs/policy.md ("The chain, with these resolvers"): tool policy, hook lists and autonomy levels, each a
// resolver of the chain in chain.ts, built per decision from the buffer's configuration.
//
//   200  urn:flemma:approval:policy    deny what the tool policy does not allow
//    80  urn:flemma:approval:hooks     tools.hooks: confirm → require_approval, log/silent → approve
//    60  urn:flemma:approval:autonomy  tools.autonomy: conservative asks for dangerous tools,
//                                      autonomous approves the others
//
// Decisions (see docs/policy.md):
// - The policy resolver passes for every allowed tool: it only ever denies.
// - Hooks: a tool no list names passes (the fallback action `silent` of `getAction` does not
//   approve anything by itself); a tool named by `silent` or `log` is approved, by `confirm`
//   must be approved by the user. The autonomy level is applied to the hook's action first, so
//   `conservative` turns `silent`/`log` on a dangerous tool into `require_approval`, and the
//   override is written as a note (`:Flemma tool:why` shows it).
// - The `log` action's audit entry is written when the call has run (the host does it, see
//   src/host/tools.ts), whatever approved it.

import type { Decision, Note, ResolverDefinition } from './chain.js';
import {
  type AutonomyLevel,
  type HookConfig,
  type PolicyTool,
  type ToolPolicy,
  hookMatch,
  isDangerous,
  resolveAutonomy,
} from '../tools/policy.js';

export const POLICY_RESOLVER = 'urn:flemma:approval:policy';
export const HOOKS_RESOLVER = 'urn:flemma:approval:hooks';
export const AUTONOMY_RESOLVER = 'urn:flemma:approval:autonomy';

export const FLYNN_PRIORITY = { policy: 200, hooks: 80, autonomy: 60 } as const;

/** Finds what the policy knows about a tool by the name in the call (canonical or API name). */
export type PolicyLookup = (name: string) => PolicyTool | undefined;

/** A resolver of the chain at `FLYNN_PRIORITY[key]` deciding by the tool the call names. */
function byTool(
  key: keyof typeof FLYNN_PRIORITY,
  description: string,
  lookup: PolicyLookup,
  decide: (tool: PolicyTool, note: Note) => Decision | undefined,
): ResolverDefinition<unknown> {
  return {
    priority: FLYNN_PRIORITY[key],
    description,
    resolve: (call, _context, note) =>
      decide(lookup(call.toolName) ?? { name: call.toolName }, note),
  };
}

export function policyResolver(
  policy: ToolPolicy,
  lookup: PolicyLookup,
): ResolverDefinition<unknown> {
  const description = 'tools.policy (profile, allow, deny; global, per buffer, per provider)';
  return byTool('policy', description, lookup, (tool, note) => {
    if (policy.permissive) return undefined;
    const verdict = policy.explain(tool);
    if (verdict.allowed) return undefined;
    note(`not allowed by tool policy: ${verdict.reason}`);
    return 'deny';
  });
}

export function hooksResolver(
  hooks: HookConfig,
  level: AutonomyLevel,
  lookup: PolicyLookup,
): ResolverDefinition<unknown> {
  const description = 'tools.hooks (confirm → ask, log → approve and audit, silent → approve)';
  return byTool('hooks', description, lookup, (tool, note) => {
    const match = hookMatch(tool, hooks);
    if (!match.matched) return undefined;
    const decided = resolveAutonomy(tool, match.action, level);
    note(`hook '${match.action}' (pattern '${match.pattern ?? ''}')`);
    if (decided.overridden) note(`overridden: ${decided.reason}`);
    if (decided.action === 'confirm') return 'require_approval';
    if (decided.action === 'log') note('the call is recorded in the audit log');
    return 'approve';
  });
}

export function autonomyResolver(
  level: AutonomyLevel,
  lookup: PolicyLookup,
): ResolverDefinition<unknown> {
  return byTool('autonomy', `tools.autonomy = '${level}'`, lookup, (tool, note) => {
    const dangerous = isDangerous(tool);
    if (level === 'conservative' && dangerous) {
      note(`overridden: autonomy level 'conservative' requires approval for '${tool.name}'`);
      return 'require_approval';
    }
    if (level === 'autonomous' && !dangerous) {
      note(`autonomy level 'autonomous' approves '${tool.name}' (not a dangerous tool)`);
      return 'approve';
    }
    return undefined;
  });
}
