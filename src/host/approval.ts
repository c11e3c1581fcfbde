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
//   works, the built-in one, which hides the sensitive places) only when it is reached.
// - Where the call's paths lie (src/core/approval/scope.ts) is worked out before the chain runs,
//   from the editor's facts of the step and the buffer's configuration; after the chain, an
//   approval of a call that touches a sensitive place becomes a question (issue 19).
// - Last, an approval of a call that changes files (the built-in `write` and `edit`, a tool that
//   says which file it writes) whose undo record cannot be written now becomes a question with
//   the reason (issue 28, src/core/approval/undo-guard.ts): a write never runs automatically
//   without its way back.

import type { FrontmatterApproval } from '../core/config/frontmatter.js';
import { homedir } from 'node:os';
import {
  type ApprovalResult,
  DEFAULT_PRIORITY,
  type Decision,
  type ToolCall,
  statusFor,
} from '../core/approval/chain.js';
import { approveList } from '../core/approval/presets.js';
import {
  type ApprovalResolver,
  type AutoApproveSetting,
  buildChain,
} from '../core/approval/resolvers.js';
import type { ToolRegistry } from '../core/tools/registry.js';
import {
  AUTONOMY_RESOLVER,
  HOOKS_RESOLVER,
  POLICY_RESOLVER,
  autonomyResolver,
  hooksResolver,
  policyResolver,
} from '../core/approval/flynn.js';
import { autonomyOf, effectivePolicy, hookConfig } from '../core/tools/policy.js';
import {
  SESSION_RESOLVER,
  SessionApprovals,
  YOLO_RESOLVER,
  sessionResolver,
  yoloResolver,
} from '../core/approval/session.js';
import { type CallScope, callScope, guardSensitive, scopeFacts } from '../core/approval/scope.js';
import {
  BASH_RULES_RESOLVER,
  bashRules,
  bashRulesResolver,
  guardBashDeny,
} from '../core/approval/bash-rules.js';
import type { HostBase } from './base.js';
import type { EditorFacts } from './buffer-settings.js';
import type { Config } from '../core/config/config.js';
import type { LuaResolverSpec } from '../editor/protocol/wire.js';
import { sandboxFor } from './sandbox.js';
import { type WriteGate, sensitiveGate } from '../core/tools/sandbox/gate.js';

/** The paths (as written, and real) of a call's scope that touch a sensitive place. */
function sensitivePlaces(scope: CallScope): string[] {
  return (scope.paths ?? [])
    .filter((path) => path.sensitive !== undefined)
    .flatMap((path) => [path.abs, path.real]);
}
import { guardUndo, undoProblemText } from '../core/approval/undo-guard.js';
import { FILE_CHANGING_TOOLS } from '../core/tools/file-change.js';
import { callPath } from './tools/file-changes.js';

/** Why the undo record of a call writing `paths` cannot be written now (undefined: it can). */
export type UndoProbe = (
  call: ToolCall,
  paths: readonly string[],
  config: Snapshot,
  facts: EditorFacts,
) => Promise<string | undefined>;

export type ApprovalCall = ToolCall;
/** The chain's decision, and the sensitive places the call named (the paths as written and real). */
export type ApprovalOutcome = ApprovalResult & { places?: readonly string[] };

export type { LuaResolverSpec };

/** The configuration the chain is built from (the buffer's, its frontmatter applied). */
type Snapshot = Pick<Config, 'tools' | 'sandbox' | 'provider'>;

/** The placeholder status of a decision. */
export function statusOf(decision: Decision): 'approved' | 'pending' | 'denied' {
  return statusFor(decision);
}

export class ApprovalService {
  private lua: LuaResolverSpec[] = [];
  private readonly warned = new Set<string>();
  /** "Always" approvals and YOLO toggles, per buffer, for this session (never written). */
  readonly session = new SessionApprovals();
  /** The sensitive places' expressions, by pattern, made once for every call's scope. */
  private readonly sensitiveRegexes = new Map<string, RegExp>();
  /** What the chain decided for each tool use of the tool loop (for `:Flemma tool:why`). */
  private readonly outcomes = new Map<string, ApprovalOutcome>();
  /** Calls held back because their undo record cannot be written, and why (the notice shows it). */
  private readonly undoProblems = new Map<string, string>();

  constructor(
    private readonly ctx: Pick<HostBase, 'logger' | 'lua' | 'notify' | 'sandboxBackends'>,
    private readonly registry: ToolRegistry,
    private readonly undoProbe?: UndoProbe,
  ) {}

  /** Why the call was held back for its undo record, as the user is told; undefined if not. */
  undoProblem(id: string): string | undefined {
    const problem = this.undoProblems.get(id);
    return problem === undefined ? undefined : undoProblemText(problem);
  }

  /** Keep the tool loop's decision for a call (`:Flemma tool:why` shows it). */
  remember(id: string, outcome: ApprovalOutcome): void {
    this.outcomes.set(id, outcome);
  }

  /** The tool loop's decision for a call, if it made one. */
  outcome(id: string): ApprovalOutcome | undefined {
    return this.outcomes.get(id);
  }

  /** Lua's resolvers (sent at host start and after every change). */
  defineFromLua(list: readonly LuaResolverSpec[]): void {
    this.lua = list.filter((spec) => typeof spec.name === 'string' && spec.name !== '');
  }

  /** `tools.auto_approve` from the snapshot in the core's terms; undefined when unset. */
  private setting(tools: Record<string, unknown> | undefined): AutoApproveSetting | undefined {
    const raw = tools?.['auto_approve'];
    if (raw === undefined || raw === null) return undefined;
    const viaLua = (call: ToolCall): Promise<unknown> =>
      this.callLua('approval.config_decision', call);
    if (typeof raw === 'string') {
      // A preset name alone is a one-item list; anything else names a module.
      if (raw.startsWith('$')) return { kind: 'list', list: approveList([raw]) };
      return { kind: 'module', name: raw, resolve: viaLua };
    }
    if (typeof raw === 'object' && (raw as Record<string, unknown>)['__function'] === true) {
      return {
        kind: 'function',
        fn: (toolName, input, ctx) =>
          viaLua({ toolName, input, bufnr: ctx.bufnr, toolId: ctx.toolId }),
      };
    }
    const list = Array.isArray(raw) ? raw : (raw as Record<string, unknown>)['__list'];
    try {
      return { kind: 'list', list: approveList(list ?? []) };
    } catch (error) {
      this.warnOnce(error instanceof Error ? error.message : String(error));
      return undefined;
    }
  }

  /** The resolvers that decide for this configuration, in the order they are asked. */
  resolvers(config: Snapshot): { name: string; priority: number; description: string }[] {
    return this.build(config)
      .chain.getAll()
      .map(({ name, priority, description }) => ({ name, priority, description }));
  }

  private build(config: Snapshot, facts?: EditorFacts): ReturnType<typeof buildChain> {
    const tools = config.tools;
    const extra: [string, ApprovalResolver][] = this.lua.map((spec) => [
      spec.name,
      {
        priority: typeof spec.priority === 'number' ? spec.priority : DEFAULT_PRIORITY,
        description: spec.description ?? '',
        resolve: (c: ToolCall) => this.callLua('approval.resolve', c, spec.name),
      },
    ]);
    extra.push(...this.flynnResolvers(config));
    extra.push(...this.sessionResolvers(config));
    const sandboxActive = async (bufnr: number): Promise<boolean> => {
      const known = facts ?? (await this.ctx.lua.call('tools.facts', { bufnr }));
      const state = await sandboxFor(
        config.sandbox,
        known,
        homedir(),
        this.ctx.sandboxBackends,
        undefined,
        { sensitivePaths: config.tools['sensitive_paths'] },
      );
      return (
        state.enabled &&
        state.backend !== undefined &&
        state.wrapError === undefined &&
        state.builtinBackend === true
      );
    };
    const rules = bashRules(tools);
    // In the chain only when configured, so `:Flemma status` lists what can decide.
    if (rules.allow.length > 0) {
      extra.push([
        BASH_RULES_RESOLVER,
        bashRulesResolver(rules, (name) => this.canonical(name) === 'bash', sandboxActive),
      ]);
    }
    return buildChain(
      {
        autoApprove: this.setting(tools),
        presets: tools['presets'],
        requireApproval: tools['require_approval'] !== false,
        autoApproveSandboxed: tools['auto_approve_sandboxed'] !== false,
      },
      {
        tools: this.registry,
        sandboxActive,
      },
      extra,
    );
  }

  /** Tool policy, hooks and autonomy (src/core/approval/flynn.ts) for this configuration. */
  private flynnResolvers(config: Snapshot): [string, ApprovalResolver][] {
    const tools = config.tools;
    const policy = effectivePolicy(tools, config.provider, this.registry.getPolicy());
    for (const warning of policy.warnings) this.warnOnce(warning);
    const lookup = (name: string): ReturnType<ToolRegistry['resolve']> =>
      this.registry.resolve(name);
    const level = autonomyOf(tools);
    // Each is in the chain only when configured, so `:Flemma status` lists what can decide.
    const out: [string, ApprovalResolver][] = [];
    if (!policy.permissive) out.push([POLICY_RESOLVER, policyResolver(policy, lookup)]);
    const hooks = hookConfig(tools['hooks']);
    if ([hooks.confirm, hooks.log, hooks.silent].some((list) => (list ?? []).length > 0)) {
      out.push([HOOKS_RESOLVER, hooksResolver(hooks, level, lookup)]);
    }
    if (level !== 'standard') out.push([AUTONOMY_RESOLVER, autonomyResolver(level, lookup)]);
    return out;
  }

  /** "Always" approvals (95) and YOLO mode (92): src/core/approval/session.ts. */
  private sessionResolvers(config: Snapshot): [string, ApprovalResolver][] {
    const lookup = (name: string): ReturnType<ToolRegistry['resolve']> =>
      this.registry.resolve(name);
    return [
      [SESSION_RESOLVER, sessionResolver(this.session, lookup)],
      [YOLO_RESOLVER, yoloResolver(this.session, lookup, config.tools.yolo)],
    ];
  }

  /** Runs the chain for one call; `facts` are the editor's facts of the step. */
  async decide(
    call: ToolCall,
    config: Snapshot,
    frontmatter: FrontmatterApproval | undefined,
    facts: EditorFacts,
  ): Promise<ApprovalOutcome> {
    const { chain, warnings } = this.build(config, facts);
    for (const warning of warnings) this.warnOnce(warning);
    const scope = this.scope(call, config, facts);
    const outcome = await chain.decide(call, {
      scope,
      ...(frontmatter === undefined
        ? {}
        : {
            frontmatter: this.frontmatterSetting(frontmatter),
            frontmatterAssigned: frontmatter.assigned,
          }),
    });
    for (const skipped of outcome.skipped) {
      this.ctx.logger.warn(
        `approval resolver ${skipped.resolver} skipped for ${call.toolName} (${call.toolId}): ${skipped.reason}`,
      );
    }
    const toolName = this.canonical(call.toolName);
    // A deny rule of `tools.bash.deny` is heard after every resolver: nothing approves it.
    const guarded = guardBashDeny(outcome, call, bashRules(config.tools), toolName === 'bash');
    const sensitive = guardSensitive(guarded, scope, toolName);
    const places = sensitivePlaces(scope);
    if (sensitive.decision !== 'approve' || this.undoProbe === undefined)
      return { ...sensitive, places };
    const paths = this.writtenPaths(call, toolName, facts);
    if (paths.length === 0) return { ...sensitive, places };
    const problem = await this.undoProbe(call, paths, config, facts);
    if (problem === undefined) this.undoProblems.delete(call.toolId);
    else this.undoProblems.set(call.toolId, problem);
    return { ...guardUndo(sensitive, problem, toolName), places };
  }

  /**
   * The sensitive places call `toolId` may write as it opens its files (issue 28): those its
   * approval question named, when the user answered it; none when it was approved automatically.
   * A call never decided here (the user ran it from the file) gets those its paths name now.
   */
  writeGate(call: ToolCall, config: Snapshot, facts: EditorFacts): WriteGate {
    const built = this.scopeFacts(config, facts, () => false);
    const recorded = this.outcomes.get(call.toolId);
    const places =
      recorded === undefined
        ? sensitivePlaces(this.scope(call, config, facts))
        : recorded.decision === 'approve'
          ? []
          : (recorded.places ?? []);
    return sensitiveGate(built.facts.sensitive, places);
  }

  /** The files a call would write, for the tools that say (absolute; none for other tools). */
  private writtenPaths(call: ToolCall, toolName: string, facts: EditorFacts): string[] {
    const input = call.input;
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return [];
    const fields = input as Record<string, unknown>;
    let path: unknown;
    const def = this.registry.resolve(call.toolName);
    if (def?.fileChange !== undefined) {
      try {
        path = def.fileChange(fields)?.path;
      } catch {
        path = undefined;
      }
    } else if (FILE_CHANGING_TOOLS.has(toolName)) {
      path = fields['path'];
    }
    return typeof path === 'string' && path !== '' ? [callPath(facts, path)] : [];
  }

  /** A tool's own name (a `.chat` file may hold its API name). */
  private canonical(name: string): string {
    return this.registry.resolve(name)?.name ?? name;
  }

  /** Where the call's paths lie, for the resolvers and the sensitive-place guard. */
  private scope(call: ToolCall, config: Snapshot, facts: EditorFacts): CallScope {
    const built = this.scopeFacts(
      config,
      facts,
      (tool) => this.registry.resolve(tool)?.canAutoApproveIfSandboxed === true,
    );
    for (const warning of built.warnings) this.warnOnce(warning);
    return callScope(this.canonical(call.toolName), call.input, built.facts);
  }

  /** The facts the scope of a call is judged on (the sensitive places compiled once per host). */
  private scopeFacts(
    config: Snapshot,
    facts: EditorFacts,
    runsCommands: (tool: string) => boolean,
  ): ReturnType<typeof scopeFacts> {
    return scopeFacts({
      facts,
      home: homedir(),
      env: process.env,
      tools: config.tools,
      sandbox: config.sandbox,
      runsCommands,
      compiled: this.sensitiveRegexes,
    });
  }

  /** The buffer's own `auto_approve` in the core's terms; its function stays in Lua. */
  private frontmatterSetting(approval: FrontmatterApproval): AutoApproveSetting {
    if (approval.kind === 'list') return { kind: 'list', list: approval.list };
    return {
      kind: 'function',
      fn: (toolName, input, ctx) =>
        this.callLua(
          'approval.config_decision',
          { toolName, input, bufnr: ctx.bufnr, toolId: ctx.toolId },
          undefined,
          'frontmatter',
        ),
    };
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.ctx.notify.warn(message);
  }

  /** A Lua-side decision: `{decision}` (nil passes) or `{error}` (thrown, so the chain skips it). */
  private async callLua(
    method: 'approval.resolve' | 'approval.config_decision',
    call: ToolCall,
    name?: string,
    source?: 'frontmatter',
  ): Promise<unknown> {
    const answer = await this.ctx.lua.call(method, {
      ...(name === undefined ? {} : { name }),
      ...(source === undefined ? {} : { source }),
      tool_name: call.toolName,
      input: call.input ?? {},
      ctx: { bufnr: call.bufnr, tool_id: call.toolId },
    });
    if (answer === null) return undefined;
    if (typeof answer.error === 'string') throw new Error(answer.error);
    return answer.decision ?? undefined;
  }
}
