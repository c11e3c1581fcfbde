// The built-in approval resolvers (docs/approval.md, "Built-in resolvers",
// "Global and per-buffer settings"), as factories over plain data, and `buildChain` assembling them for one
// configuration snapshot. Whatever lives in Lua (an `auto_approve` function, a module path's
// resolver, the sandbox's availability) reaches this module as a callback the caller supplies.
//
//   100  urn:flemma:approval:config       tools.auto_approve (list or function)
//   100  <module.path>                    tools.auto_approve given as a module path
//    90  urn:flemma:approval:frontmatter  the buffer's flemma.opt.tools.auto_approve
//    50  (third-party default)
//    25  urn:flemma:approval:sandbox      sandbox-capable tools, when the sandbox is usable
//    10  urn:flemma:approval:tool-default a tool's own default (CodeCompanion `requires_approval`)
//     0  urn:flemma:approval:catch-all    only when tools.require_approval = false
//
// Decisions (docs/approval.md states the rules):
// - The buffer's own `auto_approve` (frontmatter) is supplied per decision in the context, as the
//   buffer's *effective* setting: the global list with the buffer's operations applied
//   (`applyListOps`), or the buffer's own function/module. When it is present the config and
//   module resolvers pass and the frontmatter resolver decides; otherwise a frontmatter
//   `:remove("write")` could never win over the global list checked first at 100. A buffer
//   function answering nil passes to the resolvers below 90; the global setting is not asked.
// - The function form: `true` → approve, `false` → require_approval, `"deny"` → deny, nil → pass;
//   the strings "approve" and "require_approval" are accepted as themselves. It fails closed: if
//   the function raises or answers anything else, the answer is `require_approval` (with a note
//   saying why), so a broken policy function never lets the sandbox or catch-all resolvers
//   approve what it might have denied. (A module-path resolver is a resolver: its junk and
//   errors are skipped by the chain like any other resolver's.)
// - The sandbox resolver approves a call when all hold: `tools.auto_approve_sandboxed` is not
//   false; the tool's definition has `canAutoApproveIfSandboxed`; `auto_approve` is configured
//   for the buffer (a function, a module, or a list with at least one entry — an empty list means
//   "approve nothing automatically"); the buffer's effective list has not removed the tool
//   (`auto_approve:remove("bash")`); the tool's working directory is inside the project and not a
//   sensitive place (issue 19; unknown means no); and `sandboxActive(bufnr)` says the sandbox is
//   enabled with an available backend that hides the sensitive places (asked last: it may be an
//   RPC round trip). A preset's deny still wins because the config and frontmatter resolvers run
//   first.
// - A list (or preset) approves a file tool's call only inside the project and away from the
//   sensitive places (scope.ts); otherwise it passes with a note, and `:Flemma tool:why` shows it.
//   The function and module forms see the input themselves and are not restricted here (the
//   sensitive-place guard still applies to whatever they approve).
// - The catch-all is registered only when `tools.require_approval` is exactly `false` in the
//   snapshot; the chain is meant to be rebuilt when the configuration changes.
// - Warnings from the global configuration (unknown presets, bad user presets, cycles) are
//   returned by `buildChain` once; those from a buffer's list are attached as notes to the
//   frontmatter resolver's step of each decision.

import {
  ApprovalChain,
  type Decision,
  type Note,
  type ResolverDefinition,
  type ToolCall,
  isDecision,
  describeValue,
} from './chain.js';
import {
  type ApproveList,
  type Expansion,
  type Preset,
  expandApproveList,
  listDecision,
  presetTable,
} from './presets.js';
import { type CallScope, commandScopeProblem, listScopeProblem } from './scope.js';

export const CONFIG_RESOLVER = 'urn:flemma:approval:config';
export const FRONTMATTER_RESOLVER = 'urn:flemma:approval:frontmatter';
export const SANDBOX_RESOLVER = 'urn:flemma:approval:sandbox';
export const CATCH_ALL_RESOLVER = 'urn:flemma:approval:catch-all';
export const TOOL_DEFAULT_RESOLVER = 'urn:flemma:approval:tool-default';

export const PRIORITY = {
  config: 100,
  module: 100,
  frontmatter: 90,
  thirdParty: 50,
  sandbox: 25,
  toolDefault: 10,
  catchAll: 0,
} as const;

/** The `ctx` the function form receives (Lua: `{ bufnr, tool_id }`). */
export interface FunctionContext {
  bufnr: number;
  toolId: string;
}

/**
 * The function form of `auto_approve`, living in Lua and called over RPC: answers `true`,
 * `false`, `"deny"` or nil, possibly through a promise.
 */
export type AutoApproveFunction = (
  toolName: string,
  input: unknown,
  ctx: FunctionContext,
) => unknown;

/** `tools.auto_approve` (or a buffer's) in one of its three forms. */
export type AutoApproveSetting =
  | { kind: 'list'; list: ApproveList }
  | { kind: 'function'; fn: AutoApproveFunction }
  /** A module path: `resolve` is that module's resolver, answering like any resolver. */
  | { kind: 'module'; name: string; resolve: (call: ToolCall) => unknown };

/** What every resolver of a built chain receives besides the call. */
export interface ApprovalContext {
  /** The buffer's effective `auto_approve` when its frontmatter sets or edits it. */
  frontmatter?: AutoApproveSetting | undefined;
  /** The frontmatter assigned `auto_approve` (not only edited it): the sandbox resolver passes. */
  frontmatterAssigned?: boolean;
  /**
   * Where the call's paths lie (scope.ts). The lists approve only inside the project and away
   * from the sensitive places; the sandbox resolver approves only a known working directory there.
   */
  scope?: CallScope | undefined;
}

/** A configuration snapshot: the `tools` options that concern approval. */
export interface ApprovalConfig {
  /** `tools.auto_approve`; `undefined` when not configured. */
  autoApprove?: AutoApproveSetting | undefined;
  /** `tools.presets`, as configured (validated here). */
  presets?: unknown;
  /** `tools.require_approval`; default `true`. */
  requireApproval?: boolean | undefined;
  /** `tools.auto_approve_sandboxed`; default `true`. */
  autoApproveSandboxed?: boolean | undefined;
}

/** Looks a tool's definition up (a `ToolRegistry` fits). */
export interface ToolLookup {
  get(name: string):
    | {
        canAutoApproveIfSandboxed?: boolean | undefined;
        requireApproval?:
          | boolean
          | ((input: unknown, ctx: { bufnr: number; toolId: string }) => unknown)
          | undefined;
      }
    | undefined;
}

export interface ApprovalHooks {
  tools?: ToolLookup;
  /** The sandbox is enabled for the buffer and a backend is available. */
  sandboxActive?: (bufnr: number) => boolean | Promise<boolean>;
}

export type ApprovalResolver = ResolverDefinition<ApprovalContext>;

/** A list setting from plain data (`approveList` validates). */
export function listSetting(list: ApproveList): AutoApproveSetting {
  return { kind: 'list', list };
}

/** Maps an answer of the function form; `undefined` passes. Anything unexpected fails closed. */
export function functionAnswer(value: unknown, note: Note): Decision | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === true) return 'approve';
  if (value === false) return 'require_approval';
  if (isDecision(value)) return value;
  note(
    `the auto_approve function returned ${describeValue(value)} ` +
      '(expected true, false, "deny" or nil); requiring approval',
  );
  return 'require_approval';
}

/** Calls the function form for one tool call; a raised error means `require_approval`. */
export async function callFunction(
  fn: AutoApproveFunction,
  call: ToolCall,
  note: Note,
): Promise<Decision | undefined> {
  let value: unknown;
  try {
    value = await fn(call.toolName, call.input, { bufnr: call.bufnr, toolId: call.toolId });
  } catch (error) {
    note(`the auto_approve function raised an error: ${describeValue(error)}; requiring approval`);
    return 'require_approval';
  }
  return functionAnswer(value, note);
}

/**
 * A list's answer for one call: an approval of a call that leaves the project or touches a
 * sensitive place passes instead, with a note saying why (denials stand).
 */
function scopedListDecision(
  expansion: Expansion,
  call: ToolCall,
  scope: CallScope | undefined,
  note: Note,
): 'approve' | 'deny' | undefined {
  const decision = listDecision(expansion, call.toolName);
  if (decision !== 'approve') return decision;
  const problem = listScopeProblem(scope, call.toolName);
  if (problem === undefined) return decision;
  note(problem);
  return undefined;
}

/**
 * One setting's answer for one call. Lists and functions answer a decision or `undefined`; a
 * module's answer is returned as is, for the chain to validate.
 */
async function evaluate(
  setting: AutoApproveSetting,
  call: ToolCall,
  expand: (list: ApproveList) => Expansion,
  note: Note,
  scope: CallScope | undefined,
): Promise<unknown> {
  switch (setting.kind) {
    case 'list': {
      const expansion = expand(setting.list);
      for (const warning of expansion.warnings) note(warning);
      return scopedListDecision(expansion, call, scope, note);
    }
    case 'function':
      return callFunction(setting.fn, call, note);
    case 'module':
      return setting.resolve(call);
  }
}

/** `urn:flemma:approval:config`: the global list or function; passes for a buffer with its own. */
export function configResolver(
  setting: AutoApproveSetting | undefined,
  presets: ReadonlyMap<string, Preset>,
): ApprovalResolver {
  // The global list is expanded once per snapshot.
  const expansion = setting?.kind === 'list' ? expandApproveList(setting.list, presets) : undefined;
  return {
    priority: PRIORITY.config,
    description: 'tools.auto_approve from the configuration (list or function)',
    resolve: async (call, context, note) => {
      if (context.frontmatter !== undefined) return undefined;
      if (setting === undefined || setting.kind === 'module') return undefined;
      if (expansion !== undefined) return scopedListDecision(expansion, call, context.scope, note);
      return evaluate(
        setting,
        call,
        (list) => expandApproveList(list, presets),
        note,
        context.scope,
      );
    },
  };
}

/** `<module.path>`: the resolver of the module `tools.auto_approve` names. */
export function moduleResolver(setting: {
  name: string;
  resolve: (call: ToolCall) => unknown;
}): ApprovalResolver {
  return {
    priority: PRIORITY.module,
    description: `tools.auto_approve module '${setting.name}'`,
    resolve: (call, context) =>
      context.frontmatter !== undefined ? undefined : setting.resolve(call),
  };
}

/** `urn:flemma:approval:frontmatter`: the buffer's own setting, when it has one. */
export function frontmatterResolver(presets: ReadonlyMap<string, Preset>): ApprovalResolver {
  return {
    priority: PRIORITY.frontmatter,
    description: "the buffer's flemma.opt.tools.auto_approve (frontmatter)",
    resolve: async (call, context, note) => {
      const setting = context.frontmatter;
      if (setting === undefined) return undefined;
      return evaluate(
        setting,
        call,
        (list) => expandApproveList(list, presets, 'flemma.opt.tools.auto_approve'),
        note,
        context.scope,
      );
    },
  };
}

/** Whether `auto_approve` counts as configured for the sandbox resolver. */
function configured(setting: AutoApproveSetting | undefined): boolean {
  if (setting === undefined) return false;
  return setting.kind !== 'list' || setting.list.items.length > 0;
}

/** `urn:flemma:approval:sandbox`: sandbox-capable tools, when the sandbox is usable. */
export function sandboxResolver(config: ApprovalConfig, hooks: ApprovalHooks): ApprovalResolver {
  return {
    priority: PRIORITY.sandbox,
    description: 'tools that can run sandboxed, when the sandbox is enabled and available',
    resolve: async (call, context, note) => {
      if (config.autoApproveSandboxed === false) return undefined;
      // A buffer that assigned its own policy (a list or a function) decides alone; one that
      // only appended to the global list keeps the sandbox's approvals.
      if (context.frontmatterAssigned === true) return undefined;
      const effective = context.frontmatter ?? config.autoApprove;
      if (!configured(effective)) return undefined;
      if (effective?.kind === 'list' && effective.list.removed.includes(call.toolName)) {
        return undefined;
      }
      if (hooks.tools?.get(call.toolName)?.canAutoApproveIfSandboxed !== true) return undefined;
      const problem = commandScopeProblem(context.scope, call.toolName);
      if (problem !== undefined) {
        note(problem);
        return undefined;
      }
      if (hooks.sandboxActive === undefined) return undefined;
      if (await hooks.sandboxActive(call.bufnr)) return 'approve';
      note(
        'the sandbox is not usable here: it is disabled, has no backend, or its backend is not ' +
          'the built-in bubblewrap (which hides the sensitive places)',
      );
      return undefined;
    },
  };
}

/**
 * `urn:flemma:approval:tool-default`: the tool's own `requireApproval` (CodeCompanion's
 * `opts.requires_approval` / `require_approval_before`). `false` → approve, `true` → require
 * approval, a function → truthy requires approval, falsy approves. A function that raises fails
 * closed (require approval, with a note). A tool without the setting passes.
 */
export function toolDefaultResolver(hooks: ApprovalHooks): ApprovalResolver {
  return {
    priority: PRIORITY.toolDefault,
    description: "the tool's own approval default (requires_approval)",
    resolve: async (call, _context, note) => {
      const setting = hooks.tools?.get(call.toolName)?.requireApproval;
      if (setting === undefined) return undefined;
      if (typeof setting === 'boolean') return setting ? 'require_approval' : 'approve';
      let answer: unknown;
      try {
        answer = await setting(call.input, { bufnr: call.bufnr, toolId: call.toolId });
      } catch (error) {
        note(
          `the tool's requires_approval function raised an error: ${describeValue(error)}; requiring approval`,
        );
        return 'require_approval';
      }
      if (isDecision(answer)) return answer;
      return answer === undefined || answer === null || answer === false
        ? 'approve'
        : 'require_approval';
    },
  };
}

/** `urn:flemma:approval:catch-all`: approves everything (`tools.require_approval = false`). */
export function catchAllResolver(): ApprovalResolver {
  return {
    priority: PRIORITY.catchAll,
    description: 'approves every tool call (tools.require_approval = false)',
    resolve: () => 'approve',
  };
}

export interface BuiltChain {
  chain: ApprovalChain<ApprovalContext>;
  /** Problems found in the configuration (user presets, unknown presets, cycles). */
  warnings: string[];
}

/**
 * The chain of built-in resolvers for one configuration snapshot, plus `extra` resolvers
 * (third-party ones, priority 50 unless they say otherwise). More can be registered on the
 * returned chain; a name already taken is replaced.
 */
export function buildChain(
  config: ApprovalConfig,
  hooks: ApprovalHooks = {},
  extra: Iterable<readonly [string, ApprovalResolver]> = [],
): BuiltChain {
  const table = presetTable(config.presets);
  const warnings = [...table.warnings];
  const setting = config.autoApprove;
  if (setting?.kind === 'list') {
    warnings.push(...expandApproveList(setting.list, table.presets).warnings);
  }
  const chain = new ApprovalChain<ApprovalContext>();
  chain.register(CONFIG_RESOLVER, configResolver(setting, table.presets));
  if (setting?.kind === 'module') chain.register(setting.name, moduleResolver(setting));
  chain.register(FRONTMATTER_RESOLVER, frontmatterResolver(table.presets));
  chain.register(SANDBOX_RESOLVER, sandboxResolver(config, hooks));
  chain.register(TOOL_DEFAULT_RESOLVER, toolDefaultResolver(hooks));
  if (config.requireApproval === false) chain.register(CATCH_ALL_RESOLVER, catchAllResolver());
  for (const [name, def] of extra) chain.register(name, def);
  return { chain, warnings };
}
