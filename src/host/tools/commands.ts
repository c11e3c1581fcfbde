// The commands that act on one tool call or on a buffer's calls (`<M-CR>` is the session's,
// src/core/loop/call.ts): `tool:approve`/`reject`/`approve-always`/`forget-always`/`yolo`/`cancel-pending`,
// `tool:why`, and the reports `:Flemma status` and `:Flemma sandbox:status`.
import { homedir } from 'node:os';
import { relative } from 'node:path';
import type { ChatDocument } from '../../core/chat/ast.js';
import {
  type Edit,
  bottomToTop,
  classifyToolBlocks,
  planPlaceholders,
  planResult,
} from '../../core/chat/edits.js';
import { placeholder } from '../../core/chat/writer.js';
import { type AlwaysEntry, alwaysEntryFor, describeEntry } from '../../core/approval/session.js';
import { layerOf, type StatusInput, statusLines } from '../../core/config/status.js';
import type { StatusAnswer } from '../../editor/protocol/wire.js';
import { approvalOps, policyLines } from '../../core/approval/explain.js';
import { presetTable } from '../../core/approval/presets.js';
import { budgetLines, budgetSettings, type ElisionSummary } from '../../core/context/budget.js';
import { toolCallAt } from '../../core/tools/locate.js';
import type { ApprovalService } from '../approval.js';
import type { HostBase } from '../base.js';
import type { SettingsOptions, BufferSettings } from '../buffer-settings.js';
import { type SandboxStatus, sandboxStatusFor } from '../sandbox.js';
import { PROVIDERS } from '../providers.js';
import { refusedItems } from '../trust-check.js';
import { requestMaxTokens } from '../send/max-tokens.js';
import type { ToolCatalogue } from './catalogue.js';
import type { ToolExecutor } from './executor.js';
import { describeError } from './outcome.js';
import type { ResultWriter } from './results.js';
import type { Config, ToolsConfig } from '../../core/config/config.js';
import type { Verdicts } from './verdicts.js';

/** The model a request of the buffer uses: its own, else its provider's default. */
function modelOf(config: Config): string {
  return config.model ?? PROVIDERS[config.provider]?.defaultModel ?? '';
}

/** The approval policy the buffer uses, with where each part came from. */
function policyOf(editor: BufferSettings): string[] {
  const tools = editor.config.data['tools'];
  const section =
    typeof tools === 'object' && tools !== null ? (tools as Record<string, unknown>) : {};
  return policyLines({
    configured: section['auto_approve'],
    layer: layerOf('tools.auto_approve', editor.origins ?? {}, []),
    own: editor.approval,
    ops: approvalOps(editor.ops, editor.refused),
    presets: presetTable(section['presets']).presets,
    sandboxed: section['auto_approve_sandboxed'] !== false,
  });
}

/** What the commands ask the buffer's conversation. */
export interface CommandLoop {
  /** The buffer's context (configuration with its frontmatter applied, facts, trust). */
  context(
    bufnr: number,
    document: ChatDocument,
    options?: SettingsOptions,
  ): Promise<BufferSettings>;
  autopilot(bufnr: number): { state: string; iteration: number };
  /** What `context.budget` made of the buffer's last request (`RequestBuilder.lastElision`). */
  elision(bufnr: number): ElisionSummary | undefined;
}

export interface CommandDeps {
  base: Pick<HostBase, 'config' | 'documents' | 'lua' | 'notify' | 'sandboxBackends'>;
  catalogue: Pick<ToolCatalogue, 'registry' | 'specsFor' | 'readsResultReferences'>;
  executor: Pick<ToolExecutor, 'isRunning' | 'isCallRunning' | 'hasQueue'>;
  verdicts: Pick<Verdicts, 'cancellation'>;
  results: Pick<ResultWriter, 'fresh' | 'applyEdits'>;
  approval: Pick<ApprovalService, 'session' | 'decide' | 'resolvers' | 'outcome'>;
  loop: CommandLoop;
  /** The context meter's lines of `:Flemma status` (src/host/meter.ts). */
  contextLines?: (bufnr: number, config: Config) => string[];
}

export class ToolCommands {
  constructor(private readonly deps: CommandDeps) {}

  private get ctx(): CommandDeps['base'] {
    return this.deps.base;
  }

  // ---------------------------------------------------------------------------------------------
  // Commands

  /**
   * `:Flemma tool:approve` / `tool:reject [message]`: rewrite the status of the placeholder of
   * the call under the cursor (a call without one gets one). A rejection message replaces the
   * block's content. A finished result is left alone.
   */
  async setStatusAt(
    bufnr: number,
    row: number,
    status: 'approved' | 'rejected',
    message?: string,
  ): Promise<void> {
    const state = await this.ctx.documents.attach(bufnr);
    if (state === undefined) return;
    const found = toolCallAt(state.document, row + 1);
    if (!found.ok) {
      this.warn(found.error);
      return;
    }
    const { call } = found;
    const result = call.result;
    if (result === undefined) {
      await this.deps.results.applyEdits(
        bufnr,
        planPlaceholders(state.document, state.lines, [{ id: call.id, status }]),
      );
      if (message !== undefined) await this.setStatusAt(bufnr, row, status, message);
      return;
    }
    if (result.placeholder === undefined) {
      this.warn(`Tool ${call.id} has already completed`);
      return;
    }
    const start = result.span.startLine - 1;
    const end = result.span.endLine;
    const content = status === 'rejected' && message !== undefined ? message : result.content;
    // The status is the user's now, also where a file that is not trusted held the same one.
    this.ctx.lua.notify('trust.confirm', { bufnr, ids: [call.id] });
    await this.deps.results.applyEdits(bufnr, [
      {
        start,
        end,
        lines: placeholder(call.id, status, content),
        expect: state.lines.slice(start, end),
      },
    ]);
  }

  // ---------------------------------------------------------------------------------------------
  // Session approvals and cancelling what waits (CodeCompanion's always / YOLO / cancel)

  /** The "always" key of a call (the tool, or the tool and its command string). */
  private alwaysEntry(
    bufnr: number,
    call: { id: string; name: string; input: unknown },
  ): Promise<AlwaysEntry> {
    return alwaysEntryFor(
      { bufnr, toolId: call.id, toolName: call.name, input: call.input },
      (name) => this.deps.catalogue.registry.resolve(name),
    );
  }

  /**
   * `:Flemma tool:approve-always`: approve the call under the cursor and remember "always" for
   * its tool (or its tool and command) in this buffer; other calls waiting in the buffer that the
   * same approval covers are approved too.
   */
  async approveAlwaysAt(bufnr: number, row: number): Promise<AlwaysEntry | undefined> {
    const state = await this.deps.results.fresh(bufnr);
    if (state === undefined) return undefined;
    const found = toolCallAt(state.document, row + 1);
    if (!found.ok) {
      this.warn(found.error);
      return undefined;
    }
    const { call } = found;
    if (call.result !== undefined && call.result.placeholder === undefined) {
      this.warn(`Tool ${call.id} has already completed`);
      return undefined;
    }
    let entry: AlwaysEntry;
    try {
      entry = await this.alwaysEntry(bufnr, call);
    } catch (error) {
      this.warn(
        `Cannot approve ${call.name} always: its command string failed (${describeError(error)})`,
      );
      return undefined;
    }
    this.deps.approval.session.remember(bufnr, entry);
    const others: string[] = [];
    for (const block of classifyToolBlocks(state.document).pendingEmpty) {
      if (block.id === call.id) continue;
      try {
        const other = await this.alwaysEntry(bufnr, block);
        if (other.tool === entry.tool && other.command === entry.command) others.push(block.id);
      } catch {
        // A call whose command string cannot be computed stays pending.
      }
    }
    await this.setStatusAt(bufnr, row, 'approved');
    for (const id of others) {
      const latest = await this.deps.results.fresh(bufnr);
      const block =
        latest === undefined
          ? undefined
          : classifyToolBlocks(latest.document).pendingEmpty.find((b) => b.id === id);
      if (block !== undefined) await this.setStatusAt(bufnr, block.toolUseLine - 1, 'approved');
    }
    const more = others.length > 0 ? ` (and ${String(others.length)} more waiting call(s))` : '';
    this.info(`Approved always in this buffer: ${describeEntry(entry)}${more}`);
    return entry;
  }

  /** `:Flemma tool:always`: what is approved "always" in the buffer, and whether YOLO is on. */
  async sessionLines(bufnr: number): Promise<string[]> {
    const entries = this.deps.approval.session.list(bufnr);
    const tools = await this.bufferTools(bufnr);
    const lines = [
      entries.length === 0
        ? 'Nothing is approved "always" in this buffer'
        : `Approved "always" in this buffer: ${entries.map(describeEntry).join(', ')}`,
    ];
    lines.push(`YOLO mode: ${this.yoloState(bufnr, tools)}`);
    return lines;
  }

  /** The buffer's effective `tools` options (its frontmatter applied). */
  private async bufferTools(bufnr: number): Promise<ToolsConfig> {
    const state = await this.deps.results.fresh(bufnr);
    const config =
      state === undefined
        ? await this.config()
        : (await this.deps.loop.context(bufnr, state.document)).config;
    return config.tools;
  }

  /** `on`/`off`, with where it comes from. */
  private yoloState(bufnr: number, tools: ToolsConfig): string {
    const toggled = this.deps.approval.session.yolo(bufnr);
    if (toggled !== undefined) return `${toggled ? 'on' : 'off'} (:Flemma tool:yolo)`;
    return tools.yolo ? 'on (tools.yolo)' : 'off';
  }

  /** `:Flemma tool:forget-always [tool]`: forget the buffer's "always" approvals. */
  forgetAlways(bufnr: number, tool?: string): number {
    const removed = this.deps.approval.session.forget(bufnr, tool);
    this.info(
      removed === 0
        ? `Nothing to forget${tool === undefined ? '' : ` for ${tool}`}`
        : `Forgot ${String(removed)} "always" approval(s)`,
    );
    return removed;
  }

  /** `:Flemma tool:yolo [on|off|toggle]`: the buffer's YOLO toggle for this session. */
  async setYolo(bufnr: number, mode: 'on' | 'off' | 'toggle'): Promise<boolean> {
    let on: boolean;
    if (mode === 'toggle') {
      const current =
        this.deps.approval.session.yolo(bufnr) ?? (await this.bufferTools(bufnr)).yolo;
      on = !current;
    } else {
      on = mode === 'on';
    }
    this.deps.approval.session.setYolo(bufnr, on);
    this.info(
      on
        ? 'YOLO mode on in this buffer: new tool calls run without asking (except bash and other neverAutoApprove tools)'
        : 'YOLO mode off in this buffer',
    );
    return on;
  }

  /**
   * `:Flemma tool:cancel-pending` (and `<C-c>` when nothing runs): every call waiting in the
   * buffer — pending, or approved but held back by a pending one — gets the error result
   * `The user cancelled the execution of the <name> tool`; none of them runs. Returns how many
   * were cancelled (the session, `ChatSession.cancelPending`, lets autopilot go on).
   */
  async cancelPending(bufnr: number): Promise<number> {
    const state = await this.deps.results.fresh(bufnr);
    if (state === undefined) return 0;
    const groups = classifyToolBlocks(state.document);
    // Approved calls wait only while nothing runs in the buffer (else they are queued for a slot).
    const idle = !this.deps.executor.isRunning(bufnr) && !this.deps.executor.hasQueue(bufnr);
    const blocks = [
      ...groups.pendingEmpty,
      ...(idle ? [...groups.approved, ...groups.approvedWithContent] : []),
    ].filter((block) => !this.deps.executor.isCallRunning(block.id));
    if (blocks.length === 0) return 0;
    const edits: Edit[] = [];
    for (const block of blocks) {
      const text = await this.deps.verdicts.cancellation(bufnr, block.id, block.name, block.input);
      const edit = planResult(state.document, state.lines, block.id, {
        id: block.id,
        output: text,
        isError: true,
      });
      if (edit !== undefined) edits.push(edit);
    }
    if (edits.length === 0) return 0;
    await this.deps.results.applyEdits(bufnr, bottomToTop(edits));
    this.info(`Cancelled ${String(edits.length)} waiting tool call(s)`);
    return edits.length;
  }

  /** `:Flemma tool:why`: which resolver decided the status of the call under the cursor. */
  async why(bufnr: number, row: number): Promise<string> {
    const state = await this.ctx.documents.attach(bufnr);
    if (state === undefined) return 'Not a chat buffer';
    const found = toolCallAt(state.document, row + 1);
    if (!found.ok) return found.error;
    const { call } = found;
    const recorded = this.deps.approval.outcome(call.id);
    let decided = recorded;
    if (decided === undefined) {
      const editor = await this.deps.loop.context(bufnr, state.document);
      if (editor.problem !== undefined) return editor.problem;
      decided = await this.deps.approval.decide(
        { bufnr, toolId: call.id, toolName: call.name, input: call.input },
        editor.config,
        editor.approval,
        editor.facts,
      );
    }
    const editor = await this.deps.loop.context(bufnr, state.document, { origins: true });
    const by = decided.resolver === null ? 'no resolver decided (the default)' : decided.resolver;
    const lines = [
      `${call.name} (${call.id}): ${decided.decision}${recorded === undefined ? ' (as the policy decides now)' : ''} — ${by}`,
    ];
    for (const skipped of decided.skipped)
      lines.push(`  skipped ${skipped.resolver}: ${skipped.reason}`);
    // The deciding step's notes as they are; the notes of the resolvers that passed (a list that
    // does not cover a path outside the project, say) with their names.
    for (const entry of decided.trace) {
      const prefix = entry.outcome === 'decided' ? '' : `${entry.resolver}: `;
      for (const note of entry.notes) lines.push(`  ${prefix}${note}`);
    }
    // The policy the buffer uses, as `:Flemma status` shows it (the frontmatter's own list
    // puts resolvers aside: the reason none decided is often there).
    if (editor.problem === undefined) {
      lines.push(`model: ${modelOf(editor.config)}`, ...policyOf(editor));
    }
    return lines.join('\n');
  }

  // ---------------------------------------------------------------------------------------------
  // Execution

  private config(): Promise<Config> {
    return this.ctx.config.get(this.ctx.lua);
  }

  /** `:Flemma sandbox:status` for a buffer. */
  async sandboxStatus(bufnr: number): Promise<SandboxStatus> {
    const config = await this.config();
    const facts = await this.ctx.lua.call('tools.facts', { bufnr });
    return sandboxStatusFor(
      config.sandbox,
      facts,
      homedir(),
      this.ctx.sandboxBackends,
      this.ctx.lua,
    );
  }

  /**
   * `:Flemma status [verbose]`: the buffer's resolved settings and where each came from; and the
   * provider and model it uses, with their layers (`:Flemma switch` says when its frontmatter
   * overrides the switch).
   */
  async status(bufnr: number, verbose: boolean): Promise<StatusAnswer> {
    const state = await this.ctx.documents.attach(bufnr);
    if (state === undefined) return { lines: [`Buffer ${String(bufnr)} is not a chat buffer`] };
    const editor = await this.deps.loop.context(bufnr, state.document, { origins: true });
    const config = editor.config;
    const sandbox = await sandboxStatusFor(
      config.sandbox,
      editor.facts,
      homedir(),
      this.ctx.sandboxBackends,
      this.ctx.lua,
    );
    const filename = editor.facts.filename;
    const statusModel = modelOf(config);
    const input: StatusInput = {
      model: statusModel,
      policy: policyOf(editor),
      bufnr,
      name: filename === null ? '' : relative(editor.facts.cwd, filename) || filename,
      config: config.data,
      origins: editor.origins ?? {},
      ops: editor.ops,
      tools: this.deps.catalogue.specsFor(config.tools.__list, config).map((spec) => spec.name),
      resolvers: this.deps.approval.resolvers(config),
      sandbox: !sandbox.enabled
        ? 'disabled'
        : sandbox.backend === null
          ? `enabled, no backend (${sandbox.backend_reason ?? 'none available'})`
          : `enabled, backend ${sandbox.backend}`,
      autopilot: this.deps.loop.autopilot(bufnr),
      trust: editor.trust,
      refused: refusedItems(state.document, editor, (name) =>
        this.deps.catalogue.readsResultReferences(name),
      ),
      budget: budgetLines(
        budgetSettings(
          config.data,
          config.provider,
          statusModel,
          requestMaxTokens(config, config.provider, statusModel),
        ),
        this.deps.loop.elision(bufnr),
      ),
      verbose,
    };
    if (editor.problem !== undefined) input.problem = editor.problem;
    const context = this.deps.contextLines?.(bufnr, config);
    if (context !== undefined) input.context = context;
    const layer = (path: string): string => layerOf(path, input.origins, input.ops);
    return {
      lines: statusLines(input),
      used: {
        provider: { value: config.provider, layer: layer('provider') },
        model: { value: statusModel, layer: layer('model') },
      },
    };
  }

  private warn(message: string): void {
    this.ctx.notify.warn(message);
  }

  private info(message: string): void {
    this.ctx.notify.info(message);
  }
}
