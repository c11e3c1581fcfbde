// The tool-approval policy: a chain of resolvers asked in priority order whether a tool call may
// run without asking (seed: "Approval resolvers"), the presets `auto_approve` lists are made of,
// and the built-in resolvers over plain configuration data.
//
// Decisions:
// - A resolver answers `approve`, `require_approval`, `deny`, or nothing (pass). Anything else
//   (and a throw) is skipped with its reason recorded, so the caller can log it and
//   `:Flemma tool:why` can show it. Resolvers may be asynchronous: Lua resolvers are reached over
//   RPC.
// - Order: priority high to low, ties by name; the first decision wins; no decision means
//   `require_approval`, with no resolver named.
// - `$readonly` approves read, ls, grep and find (the list; the seed, written before the
//   search tools existed, names only read); `$default` is `$readonly` plus write and edit.
// - An `auto_approve` list approves what its names and presets approve, denies what its presets
//   deny (deny wins over approve, from any preset of the list), and passes on everything else,
//   so that lower resolvers (frontmatter, sandbox) still get their say.
// - Removal (`flemma.opt.tools.auto_approve:remove("write")` on a list holding `$default`)
//   filters the name out after expansion; presets may name presets (cycles are ignored).

export type Decision = 'approve' | 'require_approval' | 'deny';

export interface ApprovalCall {
  bufnr: number;
  toolId: string;
  toolName: string;
  input: unknown;
}

export type ResolveFn = (call: ApprovalCall) => unknown;

export interface ResolverDefinition {
  resolve: ResolveFn;
  priority?: number;
  description?: string;
}

export interface ResolverEntry {
  name: string;
  priority: number;
  description: string;
  resolve: ResolveFn;
}

export interface Skipped {
  name: string;
  reason: string;
}

export interface ApprovalOutcome {
  decision: Decision;
  /** The resolver that decided; null when none did (the default). */
  resolver: string | null;
  /** Resolvers that threw or answered something that is not a decision. */
  skipped: Skipped[];
}

export const DEFAULT_PRIORITY = 50;

export const RESOLVER_CONFIG = 'urn:flemma:approval:config';
export const RESOLVER_FRONTMATTER = 'urn:flemma:approval:frontmatter';
export const RESOLVER_SANDBOX = 'urn:flemma:approval:sandbox';
export const RESOLVER_CATCH_ALL = 'urn:flemma:approval:catch-all';

const DECISIONS: ReadonlySet<string> = new Set(['approve', 'require_approval', 'deny']);

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function' || typeof value === 'symbol') return typeof value;
  try {
    return JSON.stringify(value);
  } catch {
    return typeof value;
  }
}

export class ResolverChain {
  readonly #entries = new Map<string, ResolverEntry>();

  /** Adds a resolver; one registered under the same name is replaced. */
  register(name: string, def: ResolverDefinition): void {
    if (name === '') throw new Error('a resolver needs a name');
    const priority = def.priority ?? DEFAULT_PRIORITY;
    if (!Number.isInteger(priority)) {
      throw new Error(`resolver '${name}': priority must be an integer`);
    }
    this.#entries.set(name, {
      name,
      priority,
      description: def.description ?? '',
      resolve: def.resolve,
    });
  }

  unregister(name: string): boolean {
    return this.#entries.delete(name);
  }

  get(name: string): ResolverEntry | undefined {
    const entry = this.#entries.get(name);
    return entry === undefined ? undefined : { ...entry };
  }

  /** Every resolver in the order the chain asks them (copies). */
  getAll(): ResolverEntry[] {
    return [...this.#entries.values()]
      .sort((a, b) =>
        a.priority !== b.priority ? b.priority - a.priority : a.name < b.name ? -1 : 1,
      )
      .map((entry) => ({ ...entry }));
  }

  count(): number {
    return this.#entries.size;
  }

  /** Asks the resolvers in order; the first decision wins. */
  async decide(call: ApprovalCall): Promise<ApprovalOutcome> {
    const skipped: Skipped[] = [];
    for (const entry of this.getAll()) {
      let answer: unknown;
      try {
        answer = await entry.resolve(call);
      } catch (error) {
        skipped.push({ name: entry.name, reason: `raised: ${describe(error)}` });
        continue;
      }
      if (answer === undefined || answer === null) continue;
      if (typeof answer === 'string' && DECISIONS.has(answer)) {
        return { decision: answer as Decision, resolver: entry.name, skipped };
      }
      skipped.push({
        name: entry.name,
        reason: `returned ${describe(answer)} (expected "approve", "require_approval", "deny" or nothing)`,
      });
    }
    return { decision: 'require_approval', resolver: null, skipped };
  }
}

/** The placeholder status a decision gives a new tool call. */
export function statusFor(decision: Decision): 'approved' | 'pending' | 'denied' {
  switch (decision) {
    case 'approve':
      return 'approved';
    case 'deny':
      return 'denied';
    case 'require_approval':
      return 'pending';
  }
}

// ---------------------------------------------------------------------------------------------
// Presets

export interface Preset {
  approve: readonly string[];
  deny: readonly string[];
}

export const BUILTIN_PRESETS: Readonly<Record<string, Preset>> = {
  $readonly: { approve: ['read', 'ls', 'grep', 'find'], deny: [] },
  $default: { approve: ['$readonly', 'write', 'edit'], deny: [] },
};

/** An `auto_approve` list: its entries, and names removed from what they expand to. */
export interface ApproveList {
  items: readonly string[];
  removed?: readonly string[];
}

export interface Expansion {
  approve: Set<string>;
  deny: Set<string>;
  /** Preset names that are defined nowhere. */
  unknown: string[];
}

/** Presets in effect: the built-ins, overridden by name by the user's. */
export function presetTable(
  user: Readonly<Record<string, unknown>> | undefined,
): Map<string, Preset> {
  const table = new Map<string, Preset>(Object.entries(BUILTIN_PRESETS));
  for (const [name, raw] of Object.entries(user ?? {})) {
    if (typeof raw !== 'object' || raw === null) continue;
    const record = raw as Record<string, unknown>;
    const strings = (value: unknown): string[] =>
      Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
    table.set(name, { approve: strings(record['approve']), deny: strings(record['deny']) });
  }
  return table;
}

/** What a list approves and denies: names and presets unioned, deny winning, removals applied. */
export function expandList(list: ApproveList, presets: ReadonlyMap<string, Preset>): Expansion {
  const approve = new Set<string>();
  const deny = new Set<string>();
  const unknown: string[] = [];
  const visit = (name: string, into: Set<string>, seen: Set<string>): void => {
    if (!name.startsWith('$')) {
      into.add(name);
      return;
    }
    if (seen.has(name)) return;
    const preset = presets.get(name);
    if (preset === undefined) {
      if (!unknown.includes(name)) unknown.push(name);
      return;
    }
    const inner = new Set(seen).add(name);
    for (const item of preset.approve) visit(item, into === deny ? deny : approve, inner);
    for (const item of preset.deny) visit(item, deny, inner);
  };
  for (const item of list.items) visit(item, approve, new Set());
  for (const name of list.removed ?? []) {
    approve.delete(name);
    deny.delete(name);
  }
  for (const name of deny) approve.delete(name);
  return { approve, deny, unknown };
}

/** The decision of an expanded list for one tool: approve, deny, or pass (undefined). */
export function listDecision(expansion: Expansion, toolName: string): Decision | undefined {
  if (expansion.deny.has(toolName)) return 'deny';
  if (expansion.approve.has(toolName)) return 'approve';
  return undefined;
}

/** `true` → approve, `false` → require_approval, `"deny"` → deny, nothing → pass. */
export function functionAnswer(value: unknown): unknown {
  if (value === true) return 'approve';
  if (value === false) return 'require_approval';
  return value;
}

// ---------------------------------------------------------------------------------------------
// The built-in chain

export interface PolicyInputs {
  /** `tools.auto_approve`: a list (names and presets), or a function / module reached through `callConfig`. */
  autoApprove: ApproveList | 'function' | undefined;
  /** When `tools.auto_approve` is a module path: its resolver is registered under that name. */
  moduleName?: string;
  /** `tools.presets`. */
  presets: Readonly<Record<string, unknown>> | undefined;
  requireApproval: boolean;
  autoApproveSandboxed: boolean;
  /** Per call: the function form of `tools.auto_approve` (true/false/"deny"/nothing). */
  callConfig?: (call: ApprovalCall) => Promise<unknown>;
  /** Per buffer: the frontmatter's `auto_approve`, when it sets one. */
  frontmatter?: (call: ApprovalCall) => Promise<ApproveList | 'function' | undefined>;
  callFrontmatter?: (call: ApprovalCall) => Promise<unknown>;
  /** Whether the tool declares `can_auto_approve_if_sandboxed`. */
  sandboxCapable: (toolName: string) => boolean;
  /** The sandbox is enabled and a backend is available for the buffer. */
  sandboxActive: (bufnr: number) => Promise<boolean>;
}

export interface BuiltChain {
  chain: ResolverChain;
  /** Preset names used in `tools.auto_approve` that exist nowhere. */
  unknownPresets: string[];
}

/** The chain of built-in resolvers for one configuration snapshot. */
export function buildChain(inputs: PolicyInputs): BuiltChain {
  const chain = new ResolverChain();
  const presets = presetTable(inputs.presets);
  let unknownPresets: string[] = [];
  const auto = inputs.autoApprove;
  let configExpansion: Expansion | undefined;
  if (auto !== undefined && auto !== 'function') {
    configExpansion = expandList(auto, presets);
    unknownPresets = configExpansion.unknown;
  }
  const viaModule = inputs.moduleName !== undefined && inputs.moduleName !== '';
  chain.register(RESOLVER_CONFIG, {
    priority: 100,
    description: 'tools.auto_approve from the configuration',
    resolve: async (call) => {
      if (configExpansion !== undefined) return listDecision(configExpansion, call.toolName);
      if (auto === 'function' && !viaModule && inputs.callConfig !== undefined) {
        return functionAnswer(await inputs.callConfig(call));
      }
      return undefined;
    },
  });
  if (viaModule && inputs.moduleName !== undefined && inputs.callConfig !== undefined) {
    const callConfig = inputs.callConfig;
    chain.register(inputs.moduleName, {
      priority: 100,
      description: 'tools.auto_approve module',
      resolve: async (call) => functionAnswer(await callConfig(call)),
    });
  }
  chain.register(RESOLVER_FRONTMATTER, {
    priority: 90,
    description: "flemma.opt.tools.auto_approve from the buffer's frontmatter",
    resolve: async (call) => {
      const value = await inputs.frontmatter?.(call);
      if (value === undefined) return undefined;
      if (value === 'function') {
        return functionAnswer(await inputs.callFrontmatter?.(call));
      }
      return listDecision(expandList(value, presets), call.toolName);
    },
  });
  chain.register(RESOLVER_SANDBOX, {
    priority: 25,
    description: 'tools that can run sandboxed, when the sandbox is enabled and available',
    resolve: async (call) => {
      if (!inputs.autoApproveSandboxed || auto === undefined) return undefined;
      if (auto !== 'function' && auto.items.length === 0) return undefined;
      if (!inputs.sandboxCapable(call.toolName)) return undefined;
      // A name removed from the list (`auto_approve:remove("bash")`) is not approved here either.
      if (auto !== 'function' && (auto.removed ?? []).includes(call.toolName)) return undefined;
      return (await inputs.sandboxActive(call.bufnr)) ? 'approve' : undefined;
    },
  });
  if (!inputs.requireApproval) {
    chain.register(RESOLVER_CATCH_ALL, {
      priority: 0,
      description: 'approves every call (tools.require_approval = false)',
      resolve: () => 'approve',
    });
  }
  return { chain, unknownPresets };
}
