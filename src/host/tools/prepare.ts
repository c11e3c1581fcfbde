// The first part of running an approved call: what must hold before it starts. `checkCall`
// finds the tool and checks the buffer's tool list and policy again (whatever approved the call);
// `prepareCall` resolves the call's sandbox, its working directory, its undo journal and its
// write gate from the facts the step brought along (no round trip to Neovim), and for a tool that
// may change files waits for the turn's `git status` note.
import type { ToolCall } from '../../core/approval/chain.js';
import type { Config } from '../../core/config/config.js';
import { WriteJournal, createExecutionContext } from '../../core/tools/context.js';
import { mayChangeFiles } from '../../core/tools/effects.js';
import { policyErrorText } from '../../core/tools/policy.js';
import type { ToolDefinition } from '../../core/tools/registry.js';
import type { SandboxBackendRegistry, SandboxState } from '../../core/tools/sandbox/index.js';
import type { WriteGate } from '../../core/tools/sandbox/gate.js';
import { expandPathVariable } from '../../core/tools/sandbox/paths.js';
import type { EditorFacts } from '../buffer-settings.js';
import { type LuaCaller, type SandboxExtras, sandboxFor } from '../sandbox.js';
import { rootsFor, withRootPaths } from '../tool-extras.js';
import type { UndoService } from '../undo/service.js';
import type { UndoLimits } from '../undo/store.js';
import type { ToolCatalogue } from './catalogue.js';
import type { LuaTools } from './lua-tools.js';

/** One call as the executor gets it. */
export interface CallRef {
  bufnr: number;
  id: string;
  name: string;
  input: unknown;
}

/** Whether the call can run: an unknown tool runs nothing; a refused one gets an error result. */
export type CallCheck =
  | { kind: 'unknown'; message: string }
  | { kind: 'refused'; error: string }
  | { kind: 'ready'; def: ToolDefinition };

/** The sandbox of a call: `settings` (roots added) for `facts`. */
export type SandboxResolver = (
  settings: Record<string, unknown> | undefined,
  facts: EditorFacts,
  extras: SandboxExtras,
) => Promise<SandboxState>;

/** The host's sandbox resolution (`sandboxFor`) over its backends and Lua's. */
export function sandboxResolver(
  backends: SandboxBackendRegistry,
  lua: LuaCaller,
  home: string,
): SandboxResolver {
  return (settings, facts, extras) => sandboxFor(settings, facts, home, backends, lua, extras);
}

export interface PreparePorts {
  catalogue: Pick<ToolCatalogue, 'originOf'>;
  sandbox: SandboxResolver;
  lua: Pick<LuaTools, 'setSandbox' | 'runsInLua'>;
  /** `tools.undo`, and the turn's `git status` note a file-changing call waits for. */
  undo?: Pick<UndoService, 'limits' | 'noted'> | undefined;
  /** The sensitive places a call may not write (ApprovalService.writeGate). */
  gate?: ((call: ToolCall, config: Config, facts: EditorFacts) => WriteGate) | undefined;
  /** A warning shown once per host (`key` says which). */
  warnOnce(key: string, message: string): void;
  home: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** A call ready to be invoked. */
export interface PreparedCall {
  def: ToolDefinition;
  /** `tools.<name>`. */
  toolConfig: Record<string, unknown> | undefined;
  execCtx: ReturnType<typeof createExecutionContext>;
  /** What the files the call writes held before (undo on). */
  journal?: { entries: WriteJournal; limits: UndoLimits };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * A `.chat` file may name a tool by its API name (`file_read`) as well as its own; the buffer's
 * tool list must offer it and the policy allow it, whatever approved the call.
 */
export function checkCall(
  name: string,
  config: Config,
  catalogue: Pick<ToolCatalogue, 'registry' | 'filterRefusal' | 'policyBlocks'>,
): CallCheck {
  const def = catalogue.registry.resolve(name);
  if (def === undefined) {
    const guess = catalogue.registry.suggest(name);
    const hint = guess === undefined ? '' : ` (did you mean '${guess}'?)`;
    return { kind: 'unknown', message: `Unknown tool: ${name}${hint}` };
  }
  if (def.execute === undefined) {
    return {
      kind: 'unknown',
      message: `Tool ${name} cannot be executed: it has no execute function`,
    };
  }
  const refusal =
    catalogue.filterRefusal(name, config) ??
    (catalogue.policyBlocks(name, config) ? policyErrorText(name) : undefined);
  return refusal === undefined ? { kind: 'ready', def } : { kind: 'refused', error: refusal };
}

/** Everything the call needs before it starts, from the facts the dispatch brought. */
export async function prepareCall(
  call: CallRef,
  def: ToolDefinition,
  config: Config,
  facts: EditorFacts,
  signal: AbortSignal,
  ports: PreparePorts,
  output?: (chunk: string | Uint8Array) => void,
): Promise<PreparedCall> {
  const tools = config.tools;
  const builtin = ports.catalogue.originOf(def.name) === 'builtin';
  // The turn's `git status` (for `:Flemma review`) is taken before any tool that may change
  // files runs; a tool that only reads starts at once.
  const noted = mayChangeFiles(def.name, builtin) ? ports.undo?.noted(call.bufnr) : undefined;
  const toolConfig = asRecord(tools[def.name]);
  const roots = rootsFor(config.sandbox, facts, ports.env, ports.home);
  const settings = roots === undefined ? config.sandbox : withRootPaths(config.sandbox, roots);
  const [sandbox] = await Promise.all([
    ports.sandbox(settings, facts, {
      sensitivePaths: tools['sensitive_paths'],
      prefix: ports.lua.runsInLua(def),
      onWarning: (text) => {
        ports.warnOnce(`sandbox:${text}`, text);
      },
    }),
    noted,
  ]);
  if (sandbox.warning !== undefined) ports.warnOnce('sandbox', sandbox.warning);
  ports.lua.setSandbox(call.id, sandbox);
  const limits = ports.undo?.limits(tools);
  const journal = limits?.enabled === true ? new WriteJournal(limits.max_bytes) : undefined;
  const execCtx = createExecutionContext(
    {
      bufnr: call.bufnr,
      cwd: toolCwd(toolConfig, facts, ports),
      timeout: tools.default_timeout,
      toolId: call.id,
      filename: facts.filename ?? undefined,
      sandbox: sandbox.access,
      config: toolConfig,
      signal,
      roots: sandbox.enabled ? roots : undefined,
      journal,
      gate: lazyGate(call, config, facts, ports.gate),
      output,
    },
    ports.home,
  );
  return {
    def,
    toolConfig,
    execCtx,
    ...(journal === undefined || limits === undefined
      ? {}
      : { journal: { entries: journal, limits } }),
  };
}

/** `tools.<name>.cwd` expanded like a sandbox path; Neovim's cwd when it expands to nothing. */
function toolCwd(
  toolConfig: Record<string, unknown> | undefined,
  facts: EditorFacts,
  ports: Pick<PreparePorts, 'warnOnce' | 'home' | 'env'>,
): string {
  const setting = toolConfig?.['cwd'];
  if (typeof setting !== 'string' || setting === '') return facts.cwd;
  try {
    return expandPathVariable(setting, facts, ports.env, ports.home) ?? facts.cwd;
  } catch (error) {
    ports.warnOnce(`cwd:${setting}`, error instanceof Error ? error.message : String(error));
    return facts.cwd;
  }
}

/** The call's write gate, built when a write first asks it (most calls write nothing). */
function lazyGate(
  call: CallRef,
  config: Config,
  facts: EditorFacts,
  build: PreparePorts['gate'],
): WriteGate | undefined {
  if (build === undefined) return undefined;
  const target: ToolCall = {
    bufnr: call.bufnr,
    toolId: call.id,
    toolName: call.name,
    input: call.input,
  };
  let gate: WriteGate | undefined;
  return { refusal: (real) => (gate ??= build(target, config, facts)).refusal(real) };
}
