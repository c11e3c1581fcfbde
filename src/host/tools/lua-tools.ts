// Tools defined in Lua (`require("flemma.tools").register`, CodeCompanion tool tables): their
// descriptions arrive from Lua (`tools:define`) and become registry definitions whose functions
// stay in Neovim. Running one sends `tools.execute` and waits for `tools:result`; a cancel sends
// `tools.cancel`. The sandbox facts a Lua tool's `ctx.sandbox` answers from are given per call.
import type { ToolDefinition, ToolOutcome } from '../../core/tools/registry.js';
import type { HostBase } from '../base.js';
import type { SandboxState } from '../sandbox.js';
import { type LuaResult, outcomeOf } from './outcome.js';
import { LUA_TRUNCATE_FACTS } from '../lua-tool-helpers.js';
import type { LuaToolSpec } from '../../editor/protocol/wire.js';

export type { LuaToolSpec };

export const CANCELLED_TEXT = 'User aborted tool execution.';

/** Lua sends `{}` for empty tables as arrays; a schema's maps must be objects. */
function normalizeLuaSchema(node: unknown, key?: string): unknown {
  if (Array.isArray(node)) {
    if (node.length === 0 && (key === 'properties' || key === undefined)) return {};
    return node.map((item) => normalizeLuaSchema(item));
  }
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    out[k] = normalizeLuaSchema(v, k === 'properties' ? 'properties' : 'value');
  }
  return out;
}

/** What a Lua tool's `ctx.sandbox` needs to answer without asking the host. */
function luaSandboxFacts(sandbox: SandboxState): Record<string, unknown> {
  return {
    sandbox: {
      enabled: sandbox.enabled,
      rw_paths: sandbox.rwPaths,
      wrap_prefix: sandbox.wrapPrefix ?? null,
      wrap_error: sandbox.wrapError ?? null,
    },
  };
}

export class LuaTools {
  constructor(private readonly ctx: Pick<HostBase, 'lua'>) {}

  private readonly luaCalls = new Map<string, (result: LuaResult) => void>();

  private callSeq = 0;

  /** The registry's definition of a Lua tool. */
  proxy(spec: LuaToolSpec): ToolDefinition {
    const schema = Array.isArray(spec.input_schema) ? {} : spec.input_schema;
    const def: ToolDefinition = {
      name: spec.name,
      description: spec.description,
      inputSchema: normalizeLuaSchema(schema) as Record<string, unknown>,
      async: spec.async === true,
      canAutoApproveIfSandboxed: (spec.capabilities ?? []).includes(
        'can_auto_approve_if_sandboxed',
      ),
      templateToolResult: (spec.capabilities ?? []).includes('template_tool_result'),
    };
    if (spec.strict !== undefined) def.strict = spec.strict;
    if (spec.enabled !== undefined) def.enabled = spec.enabled;
    if (spec.label !== undefined) def.label = spec.label;
    if (spec.personalities !== undefined && !Array.isArray(spec.personalities)) {
      def.personalities = spec.personalities;
    }
    if (spec.has_execute === true) {
      def.execute = (input, execCtx) => this.runLua(spec.name, input, execCtx);
      this.proxies.add(def);
    }
    this.luaExtras(spec, def);
    return def;
  }

  /** A Lua tool's system prompt, approval default and rejection text (CodeCompanion tools). */
  private luaExtras(spec: LuaToolSpec, def: ToolDefinition): void {
    if (typeof spec.system_prompt === 'string' && spec.system_prompt.trim() !== '') {
      def.systemPrompt = spec.system_prompt;
    }
    if (typeof spec.require_approval === 'boolean') def.requireApproval = spec.require_approval;
    if (spec.require_approval === 'function') {
      def.requireApproval = async (input, call) => {
        const answer = await this.ctx.lua.call('tools.require_approval', {
          name: spec.name,
          input: input ?? {},
          bufnr: call.bufnr,
          tool_id: call.toolId,
          truncate: LUA_TRUNCATE_FACTS,
        });
        if (typeof answer?.error === 'string') throw new Error(answer.error);
        return answer?.value ?? undefined;
      };
    }
    this.luaSessionExtras(spec, def);
    if (spec.has_rejected === true) {
      def.formatRejected = async (reason, input) =>
        this.ctx.lua.call('tools.format_rejected', {
          name: spec.name,
          input: input ?? {},
          reason,
        });
    }
  }

  /** A Lua tool's per-command approval, YOLO opt-out, command string and cancellation text. */
  private luaSessionExtras(spec: LuaToolSpec, def: ToolDefinition): void {
    if (spec.require_cmd_approval === true) def.requireCmdApproval = true;
    if (spec.never_auto_approve === true) def.neverAutoApprove = true;
    if (spec.has_cmd_string === true) {
      def.cmdString = (input) =>
        this.ctx.lua.call('tools.cmd_string', { name: spec.name, input: input ?? {} });
    }
    if (spec.has_cancelled === true) {
      def.formatCancelled = (input) =>
        this.ctx.lua.call('tools.format_cancelled', { name: spec.name, input: input ?? {} });
    }
  }

  /** Lua → host: the result of a Lua tool's execution. */
  result(callId: string, result: LuaResult): void {
    const settle = this.luaCalls.get(callId);
    if (settle === undefined) return;
    this.luaCalls.delete(callId);
    settle(result);
  }

  /** The sandbox facts of each running call, by tool id. */
  private readonly facts = new Map<string, Record<string, unknown>>();

  /** The definitions whose `execute` runs in Neovim. */
  private readonly proxies = new WeakSet<ToolDefinition>();

  /** Whether `def` runs in Neovim (its `ctx.sandbox` needs the sandbox's `wrap_prefix`). */
  runsInLua(def: ToolDefinition): boolean {
    return this.proxies.has(def);
  }

  /** A call of `id` is about to run (a Lua tool reads these from `ctx.sandbox`), or has ended. */
  setSandbox(id: string, sandbox: SandboxState | undefined): void {
    if (sandbox === undefined) this.facts.delete(id);
    else this.facts.set(id, luaSandboxFacts(sandbox));
  }

  private runLua(
    name: string,
    input: unknown,
    execCtx: Parameters<NonNullable<ToolDefinition['execute']>>[1],
  ): Promise<ToolOutcome> {
    const callId = String(++this.callSeq);
    const extra = this.facts.get(execCtx.tool_id) ?? {};
    return new Promise<ToolOutcome>((resolve) => {
      const onAbort = (): void => {
        this.luaCalls.delete(callId);
        this.ctx.lua.notify('tools.cancel', { call_id: callId });
        resolve({ ok: false, error: CANCELLED_TEXT });
      };
      execCtx.signal.addEventListener('abort', onAbort, { once: true });
      this.luaCalls.set(callId, (result) => {
        execCtx.signal.removeEventListener('abort', onAbort);
        resolve(outcomeOf(result));
      });
      this.ctx.lua.notify('tools.execute', {
        call_id: callId,
        name,
        input: input ?? {},
        ctx: {
          bufnr: execCtx.bufnr,
          cwd: execCtx.cwd,
          timeout: execCtx.timeout,
          tool_id: execCtx.tool_id,
          truncate: LUA_TRUNCATE_FACTS,
          ...extra,
        },
      });
    });
  }
}
