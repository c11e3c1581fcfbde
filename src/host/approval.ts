// The approval chain as the host runs it: the built-in resolvers over the configuration
// snapshot (src/core/approval/policy.ts), plus proxies for the resolvers registered in Lua, whose
// functions stay in Neovim and are called over RPC (`approval.resolve`). The function form of
// `tools.auto_approve` (or a module path) is evaluated in Lua too (`approval.config_decision`).
//
// Decisions:
// - The chain is rebuilt for every decision from the current snapshot, so a change to the
//   configuration applies to the next tool call without any bookkeeping (building it is a few
//   map insertions).
// - Resolvers that fail are logged at `warn` with the reason and skipped.
// - The sandbox resolver asks the sandbox policy for the buffer (enabled and a backend that
//   works) only when it is reached.

import { homedir } from 'node:os';
import {
  type ApprovalCall,
  type ApprovalOutcome,
  type ApproveList,
  DEFAULT_PRIORITY,
  type Decision,
  buildChain,
  statusFor,
} from '../core/approval/policy.js';
import type { ToolRegistry } from '../core/tools/registry.js';
import type { HostContext } from './context.js';
import { sandboxFor } from './sandbox.js';

export type { ApprovalOutcome };

/** A resolver as Lua describes it. */
export interface LuaResolverSpec {
  name: string;
  priority?: number;
  description?: string;
}

interface Snapshot {
  tools?: Record<string, unknown>;
  sandbox?: Record<string, unknown>;
}

interface LuaAnswer {
  decision?: unknown;
  error?: unknown;
}

/** The placeholder status of a decision. */
export function statusOf(decision: Decision): 'approved' | 'pending' | 'denied' {
  return statusFor(decision);
}

/** `tools.auto_approve` from the snapshot: a list, a function (or module path), or nothing. */
function autoApproveOf(tools: Record<string, unknown> | undefined): {
  value: ApproveList | 'function' | undefined;
  module?: string;
} {
  const raw = tools?.['auto_approve'];
  if (Array.isArray(raw)) {
    return { value: { items: raw.filter((item): item is string => typeof item === 'string') } };
  }
  if (typeof raw === 'string') {
    // A preset name alone is a one-item list; anything else names a module.
    if (raw.startsWith('$')) return { value: { items: [raw] } };
    return { value: 'function', module: raw };
  }
  if (typeof raw === 'object' && raw !== null && (raw as Record<string, unknown>)['__function']) {
    return { value: 'function' };
  }
  if (typeof raw === 'object' && raw !== null) {
    // An empty Lua table arrives as an object or an array; a `__list` part is the list.
    const list = (raw as Record<string, unknown>)['__list'];
    if (Array.isArray(list)) {
      return { value: { items: list.filter((item): item is string => typeof item === 'string') } };
    }
    return { value: { items: [] } };
  }
  return { value: undefined };
}

export class ApprovalService {
  private lua: LuaResolverSpec[] = [];
  private readonly warnedPresets = new Set<string>();

  constructor(
    private readonly ctx: HostContext,
    private readonly registry: ToolRegistry,
  ) {}

  /** Lua's resolvers (sent at host start and after every change). */
  defineFromLua(list: readonly LuaResolverSpec[]): void {
    this.lua = list.filter((spec) => typeof spec.name === 'string' && spec.name !== '');
  }

  /** Runs the chain for one call. */
  async decide(call: ApprovalCall, config: Snapshot): Promise<ApprovalOutcome> {
    const tools = config.tools;
    const auto = autoApproveOf(tools);
    const presets = tools?.['presets'];
    const { chain, unknownPresets } = buildChain({
      autoApprove: auto.value,
      ...(auto.module === undefined ? {} : { moduleName: auto.module }),
      presets:
        typeof presets === 'object' && presets !== null && !Array.isArray(presets)
          ? (presets as Record<string, unknown>)
          : undefined,
      requireApproval: tools?.['require_approval'] !== false,
      autoApproveSandboxed: tools?.['auto_approve_sandboxed'] !== false,
      callConfig: (c) => this.callLua('approval.config_decision', c),
      sandboxCapable: (name) => this.registry.get(name)?.canAutoApproveIfSandboxed === true,
      sandboxActive: async (bufnr) => {
        const facts = (await this.ctx.lua.call('tools.facts', { bufnr })) as {
          cwd: string;
          filename: string | null;
          sandbox_override: boolean | null;
        };
        const state = await sandboxFor(config.sandbox, facts, homedir());
        return state.enabled && state.backend !== undefined && state.wrapError === undefined;
      },
    });
    for (const name of unknownPresets) {
      if (this.warnedPresets.has(name)) continue;
      this.warnedPresets.add(name);
      this.ctx.lua.notify('notify', {
        level: 'warn',
        message: `tools.auto_approve: unknown preset '${name}' (define it in tools.presets)`,
      });
    }
    for (const spec of this.lua) {
      chain.register(spec.name, {
        priority: typeof spec.priority === 'number' ? spec.priority : DEFAULT_PRIORITY,
        description: spec.description ?? '',
        resolve: (c) => this.callLua('approval.resolve', c, spec.name),
      });
    }
    const outcome = await chain.decide(call);
    for (const skipped of outcome.skipped) {
      this.ctx.logger.warn(
        `approval resolver ${skipped.name} skipped for ${call.toolName} (${call.toolId}): ${skipped.reason}`,
      );
    }
    return outcome;
  }

  /** A Lua-side decision: `{decision}` (nil passes) or `{error}` (thrown, so the chain skips it). */
  private async callLua(method: string, call: ApprovalCall, name?: string): Promise<unknown> {
    const answer = (await this.ctx.lua.call(method, {
      ...(name === undefined ? {} : { name }),
      tool_name: call.toolName,
      input: call.input ?? {},
      ctx: { bufnr: call.bufnr, tool_id: call.toolId },
    })) as LuaAnswer | null;
    if (answer === null) return undefined;
    if (typeof answer.error === 'string') throw new Error(answer.error);
    return answer.decision ?? undefined;
  }
}
