// Building a request from a chat buffer: its prompt assembled and rendered (templates in Neovim,
// file references read within what the buffer's trust allows), its provider, model, parameters,
// credential and tools. The send streams what this builds; `:Flemma usage:estimate` counts it.
import { basename } from 'node:path';
import type { Message } from '../../core/chat/ast.js';
import { assemblePrompt, nothingNewToSend, type Prompt } from '../../core/chat/prompt.js';
import type { SlashPlan } from '../../core/chat/slash.js';
import type { RenderedPrompt } from '../../core/chat/render.js';
import { budgetSettings, type ElisionSummary, summarize } from '../../core/context/budget.js';
import { elide } from '../../core/context/elide.js';
import { resolveThinking, type ThinkingParameters } from '../../core/provider/thinking.js';
import { MessageWireCache } from '../../core/provider/wire-cache.js';
import {
  type EvaluatedMessage,
  type ProviderAdapter,
  ProviderError,
  type ProviderRequest,
  type ToolSpec,
} from '../../core/provider/types.js';
import {
  type ToolCalling,
  type XmlLibrary,
  callingMode,
  loadXml,
  xmlMessages,
} from '../../core/tools/xml.js';
import { pricingFor } from '../../core/usage/cost.js';
import type { Config } from '../../core/config/config.js';
import type { DocumentState } from '../../editor/documents.js';
import type { HostBase } from '../base.js';
import { type BufferSettings, askBufferSettings } from '../buffer-settings.js';
import type { ProviderParameters } from '../providers.js';
import type { ToolCatalogue } from '../tools/catalogue.js';
import { trace } from '../../editor/trace.js';
import type { ProviderConnection } from './connection.js';
import type { AcpAgents } from '../acp/agents.js';
import { connectChat } from '../acp/connect.js';
import { renderForRequest } from './render.js';
import { requestMaxTokens } from './max-tokens.js';
import { resolveSlash, withSlashOptions } from './slash.js';

/** A request ready to go (see `RequestBuilder.prepare`). */
export interface PreparedRequest {
  state: DocumentState;
  editor: BufferSettings;
  config: Config;
  providerName: string;
  model: string;
  adapter: ProviderAdapter;
  request: ProviderRequest;
  /** `tools.calling` for this provider and model; `xml` carries the XML library it needs. */
  calling: ToolCalling;
  /** The tools the request offers (natively or in XML), by their own names. */
  offered: readonly string[];
  xml?: XmlLibrary;
  /** What `context.budget` made of the request (absent without a budget). */
  elision?: ElisionSummary;
  /**
   * Built for an estimate between turns (the chat ends with an empty `@You:`, or has no
   * message yet): the conversation so far, as the next request would hold it.
   */
  betweenTurns?: 'empty' | 'none';
  /**
   * After the provider refused the credential (401): forget it and resolve it again; a new
   * adapter when that gives a different value, else undefined.
   */
  reauthorize: () => Promise<ProviderAdapter | undefined>;
  /** The chat's messages as last sent, so that its requests serialise only what changed. */
  wire: MessageWireCache;
}

export interface RequestDeps {
  base: Pick<
    HostBase,
    | 'config'
    | 'documents'
    | 'hooks'
    | 'logger'
    | 'lua'
    | 'notify'
    | 'references'
    | 'sdks'
    | 'secrets'
  >;
  catalogue: Pick<
    ToolCatalogue,
    | 'specsFor'
    | 'systemSection'
    | 'registry'
    | 'personalityTools'
    | 'toolNames'
    | 'readsResultReferences'
    | 'mcp'
  >;
  /** Each message's part of the trust digest, across parses. */
  memo: WeakMap<Message, string>;
  /** The chats' agents, for `provider = "acp"` (docs/agents.md). */
  agents?: Pick<AcpAgents, 'adapter'>;
}

function dollars(value: number): string {
  return `$${value.toFixed(value < 1 ? 4 : 2)}`;
}

export class RequestBuilder {
  /** Per buffer, the refused options the user was last told about (see `prepare`). */
  private readonly refusedShown = new Map<number, string>();
  /** Per buffer, what the budget made of the last request that went out (`:Flemma status`). */
  private readonly elisions = new Map<number, ElisionSummary>();
  /** The buffers whose last request was told to be over its budget (said once, not each send). */
  private readonly overShown = new Set<number>();
  private readonly automaticShown = new Set<number>();
  /** Per buffer, its messages' wire form as last sent (src/core/provider/wire-cache.ts). */
  private readonly wires = new Map<number, MessageWireCache>();

  constructor(private readonly deps: RequestDeps) {}

  /** The buffer went away: forget what was said about it. */
  forget(bufnr: number): void {
    this.refusedShown.delete(bufnr);
    this.elisions.delete(bufnr);
    this.overShown.delete(bufnr);
    this.wires.delete(bufnr);
  }

  /**
   * A prepared request goes out: remember what its budget elided, and warn when it is still over
   * the budget — once, until a request fits again (autopilot would repeat it on every step).
   */
  sent(bufnr: number, prepared: PreparedRequest): void {
    const elision = prepared.elision;
    if (elision === undefined) this.elisions.delete(bufnr);
    else this.elisions.set(bufnr, elision);
    if (elision?.automatic === true && elision.elided.length > 0)
      this.tellAutomatic(bufnr, elision);
    // Over the automatic budget, the request is over the window: the meter's warning says so.
    if (elision?.over === undefined || elision.automatic) {
      this.overShown.delete(bufnr);
      return;
    }
    this.deps.base.logger.warn(elision.over);
    if (this.overShown.has(bufnr)) return;
    this.overShown.add(bufnr);
    this.deps.base.notify.warn(`${elision.over}; :Flemma status has the details`);
  }

  /**
   * The automatic budget elided (a request that would not have fit the window): said once per
   * buffer, since nobody asked for it; `:Flemma status` lists what each request left out.
   */
  private tellAutomatic(bufnr: number, elision: ElisionSummary): void {
    const count = elision.elided.length;
    this.deps.base.logger.info(
      `buffer ${String(bufnr)}: ${String(count)} old tool results sent as stubs to fit the window`,
    );
    if (this.automaticShown.has(bufnr)) return;
    this.automaticShown.add(bufnr);
    this.deps.base.notify.info(
      `The chat no longer fits the model's window: ${String(count)} old tool result${count === 1 ? '' : 's'} went as stubs (the file keeps them; :Flemma status lists them). :Flemma compact starts a new chat from a summary.`,
    );
  }

  /** What the budget made of the buffer's last request, if one went out with a budget. */
  lastElision(bufnr: number): ElisionSummary | undefined {
    return this.elisions.get(bufnr);
  }

  /**
   * Everything a request needs, as the send would make it: the buffer's prompt rendered, its
   * provider and model, the credential, the adapter and the request. Undefined (after telling
   * the user why) when it cannot be made. `:Flemma compact` uses it too (`purpose` `summary`: a
   * chat with nothing new to send may be summarised), and `:Flemma context` and
   * `:Flemma usage:estimate` (`purpose` `estimate`: between turns, the conversation so far).
   */
  async prepare(
    bufnr: number,
    context: BufferSettings | undefined,
    onConfig?: (config: Config) => void,
    purpose: 'send' | 'summary' | 'estimate' = 'send',
  ): Promise<PreparedRequest | undefined> {
    const ctx = this.deps.base;
    const state = await ctx.documents.attach(bufnr);
    if (state === undefined) {
      if (purpose === 'send') ctx.notify.warn('Nothing sent: the chat buffer is not loaded');
      return undefined;
    }
    // Slash commands (docs/slash-commands.md): a summary leaves their lines out.
    const slash =
      purpose === 'summary' ? undefined : await resolveSlash(ctx.lua, bufnr, state.document);
    if (slash?.problem !== undefined) {
      ctx.notify.error(`Nothing sent: ${slash.problem}`);
      return undefined;
    }
    const prompt = assemblePrompt(state.document, slash?.texts);
    // A summary (`:Flemma compact`) asks about the conversation as it is, whatever its end.
    if (purpose === 'send' && !this.somethingToSend(state, prompt, slash?.texts)) return undefined;
    const betweenTurns =
      purpose === 'estimate' ? waitsForUser(state, prompt, slash?.texts) : undefined;
    const editor = await this.settingsFor(bufnr, state, context, slash);
    if (editor === undefined) return undefined;
    const config = editor.config;
    onConfig?.(config);
    const connection = await this.connect(bufnr, config, editor, purpose);
    if (connection === undefined) return undefined;
    const { providerName, model, adapter, reauthorize } = connection;
    // An agent runs its own tools: ours are not offered to it.
    const tools =
      providerName === 'acp'
        ? []
        : this.deps.catalogue.specsFor(config.tools.__list, config, editor.facts.cwd);
    let evaluated: RenderedPrompt;
    try {
      trace('send:render');
      evaluated = await renderForRequest(ctx, this.deps.catalogue, {
        bufnr,
        prompt,
        editor,
        tools,
      });
      trace('send:rendered');
    } catch (error) {
      // A template or a file reference failed: nothing is sent, the buffer stays as it is.
      const message = error instanceof Error ? error.message : String(error);
      ctx.notify.error(message);
      return undefined;
    }
    const { request, calling, xml, elision } = await this.assemble(
      config,
      { providerName, model },
      evaluated,
      tools,
    );
    const prepared: PreparedRequest = {
      state,
      editor,
      config,
      providerName,
      model,
      adapter,
      request,
      calling,
      offered: tools.map((tool) => tool.name),
      reauthorize,
      wire: this.wires.get(bufnr) ?? new MessageWireCache(),
    };
    this.wires.set(bufnr, prepared.wire);
    if (xml !== undefined) prepared.xml = xml;
    if (elision !== undefined) prepared.elision = elision;
    if (betweenTurns !== undefined) prepared.betweenTurns = betweenTurns;
    return prepared;
  }

  /** The chat's provider or agent (`connectChat`). */
  private async connect(
    bufnr: number,
    config: Config,
    editor: BufferSettings,
    purpose: 'send' | 'summary' | 'estimate',
  ): Promise<ProviderConnection | undefined> {
    const agents = this.deps.agents;
    // A summary would be a turn of the agent's, in its session, with its tools.
    if (purpose === 'summary' && config.provider === 'acp') {
      this.deps.base.notify.error(
        'acp: an agent keeps its own context; :Flemma compact needs a provider',
      );
      return undefined;
    }
    return connectChat(
      this.deps.base,
      config,
      editor.env,
      agents === undefined ? undefined : { bufnr, agents, editor },
    );
  }

  /**
   * The buffer's settings for this request: those held (or asked for), with the options of the
   * slash commands of the message it sends; undefined (the user told why) when it cannot go.
   */
  private async settingsFor(
    bufnr: number,
    state: DocumentState,
    context: BufferSettings | undefined,
    slash: SlashPlan | undefined,
  ): Promise<BufferSettings | undefined> {
    const ctx = this.deps.base;
    const held =
      context ??
      (await askBufferSettings(ctx.lua, bufnr, state.document, this.deps.catalogue.toolNames(), {
        memo: this.deps.memo,
        config: ctx.config,
      }));
    if (held.problem !== undefined) {
      // The frontmatter failed, or may not run: nothing is sent and the buffer stays as it is.
      ctx.notify.error(held.problem);
      return undefined;
    }
    this.tellRefused(bufnr, held);
    if (slash === undefined) return held;
    const own = withSlashOptions(held, slash, this.deps.catalogue.toolNames());
    if ('problem' in own) {
      ctx.notify.error(`Nothing sent: ${own.problem}`);
      return undefined;
    }
    return own.settings;
  }

  /**
   * The request itself: the system prompt with the tools' section, the tools offered (natively,
   * or described in XML), the messages within `context.budget`, the parameters.
   */
  private async assemble(
    config: Config,
    target: { providerName: string; model: string },
    evaluated: RenderedPrompt,
    tools: ToolSpec[],
  ): Promise<{
    request: ProviderRequest;
    calling: ToolCalling;
    xml: XmlLibrary | undefined;
    elision: ElisionSummary | undefined;
  }> {
    const { providerName, model } = target;
    const parameters = config.parameters;
    const specific = (parameters[providerName] ?? {}) as ProviderParameters;
    // The tools' own system prompts (CodeCompanion `system_prompt`), or in XML tool calling the
    // whole description of the tools and the format (docs/tools.md, "XML tool calling").
    const calling = callingMode(config.tools.calling, providerName, model);
    const xml = calling === 'xml' ? await loadXml() : undefined;
    const section = this.deps.catalogue.systemSection(tools, calling, xml);
    const system =
      section === ''
        ? evaluated.system
        : [evaluated.system, section].filter((t) => t !== '').join('\n\n');
    // In XML tool calling the tools are described in the system prompt instead.
    const offeredTools =
      xml === undefined
        ? tools.map((tool) => ({ ...tool, name: this.deps.catalogue.registry.apiName(tool.name) }))
        : [];
    // The provider's own `max_tokens` wins over the general one (src/core/provider/limits.ts).
    const maxTokens = requestMaxTokens(config, providerName, model);
    // Over `context.budget` (unset: the window less the reply), old large tool results go as
    // stubs (docs/context.md).
    const budget = budgetSettings(config.data, providerName, model, maxTokens);
    const elision =
      budget === undefined
        ? undefined
        : elide(evaluated.messages, { system, tools: offeredTools }, budget);
    const messages = elision?.messages ?? evaluated.messages;
    const request: ProviderRequest = {
      model,
      system,
      // Providers see API names (`file.read` → `file_read`); replies are mapped back in `consume`.
      messages:
        xml === undefined
          ? toApiNames(messages, (name) => this.deps.catalogue.registry.apiName(name))
          : xmlMessages(messages, xml),
      tools: offeredTools,
      maxTokens,
      cacheRetention: parameters.cache_retention,
    };
    if (typeof parameters.temperature === 'number') request.temperature = parameters.temperature;
    const thinking = resolveThinking(
      providerName,
      model,
      parameters as ThinkingParameters,
      specific as ThinkingParameters,
      request.maxTokens,
    );
    if (thinking !== undefined) request.thinking = thinking;
    const summary =
      elision === undefined || budget === undefined
        ? undefined
        : summarize(elision, budget.setting === null);
    return { request, calling, xml, elision: summary };
  }

  /** Whether a send would bring the model anything; if not, the user is told. */
  private somethingToSend(
    state: DocumentState,
    prompt: Prompt,
    slashTexts: ReadonlyMap<number, string> | undefined,
  ): boolean {
    const ctx = this.deps.base;
    if (!prompt.messages.some((message) => message.role === 'user')) {
      ctx.notify.warn('Nothing to send: write a @You: message first.');
      return false;
    }
    if (nothingNewToSend(state.document, prompt, slashTexts)) {
      // Sending would only repeat the conversation: nothing is written, nothing goes out.
      ctx.notify.info('Nothing to send: the last @You: message is empty');
      return false;
    }
    return true;
  }

  /**
   * A file that is not trusted is sent without the options that need trust: say so once (again
   * when the list changes), the diagnostics and `:Flemma status` have the details.
   */
  private tellRefused(bufnr: number, editor: BufferSettings): void {
    const keys = [...new Set(editor.refused.map((item) => item.key))];
    const id = keys.join('\0');
    if (id === (this.refusedShown.get(bufnr) ?? '')) return;
    this.refusedShown.set(bufnr, id);
    if (keys.length === 0) return;
    const name = editor.facts.filename === null ? 'this chat' : basename(editor.facts.filename);
    // Short for the command line: the diagnostics and `:Flemma status` name each option.
    const what =
      keys.length === 1
        ? (keys[0] ?? '').replace(/^flemma\.opt\./, '')
        : `${String(keys.length)} options`;
    this.deps.base.notify.warn(`${name}: ${what} not applied until :trust`);
  }

  /**
   * `:Flemma usage:estimate`: the input tokens of the buffer's next request, from its provider's
   * counting endpoint; shown, and announced with `usage:estimated`.
   */
  async estimate(
    bufnr: number,
  ): Promise<{ input_tokens: number; cost?: number; provider: string; model: string } | null> {
    const ctx = this.deps.base;
    const prepared = await this.prepare(bufnr, undefined, undefined, 'estimate');
    if (prepared === undefined) return null;
    if (prepared.betweenTurns === 'none') {
      // Providers count a conversation; `:Flemma context` estimates the system prompt and tools.
      ctx.notify.warn('Nothing to count: write a @You: message first.');
      return null;
    }
    const { adapter, providerName: provider, model } = prepared;
    if (adapter.countTokens === undefined) {
      ctx.notify.warn(
        `${provider}: this provider has no token-counting endpoint; usage:estimate is not supported`,
      );
      return null;
    }
    let tokens: number;
    try {
      tokens = await adapter.countTokens(prepared.request, AbortSignal.timeout(60_000));
    } catch (error) {
      const message = error instanceof ProviderError ? error.describe() : String(error);
      ctx.logger.warn(`usage estimate failed: ${message}`);
      ctx.notify.error(`usage:estimate: ${message}`);
      return null;
    }
    const pricing = pricingFor(provider, model);
    const cost = pricing === undefined ? undefined : (tokens * pricing.input) / 1_000_000;
    // Short, so that it fits the command line without a hit-enter prompt.
    ctx.notify.info(
      `Next request: ${tokens.toLocaleString('en-US')} input tokens` +
        (cost === undefined ? '' : `, ≈ ${dollars(cost)}`) +
        ` (${model}${prepared.betweenTurns === undefined ? '' : ', the chat so far'})`,
    );
    ctx.hooks.post('usage:estimated', { bufnr, provider, model, input_tokens: tokens });
    return cost === undefined
      ? { input_tokens: tokens, provider, model }
      : { input_tokens: tokens, cost, provider, model };
  }
}

/**
 * Where an estimate stands when a send would have nothing to send: `empty` when the chat ends
 * with an empty `@You:` after a reply, `none` when it has no message yet; else undefined.
 */
function waitsForUser(
  state: DocumentState,
  prompt: Prompt,
  slashTexts: ReadonlyMap<number, string> | undefined,
): 'empty' | 'none' | undefined {
  if (!prompt.messages.some((message) => message.role === 'user')) return 'none';
  return nothingNewToSend(state.document, prompt, slashTexts) ? 'empty' : undefined;
}

/** The messages with every tool name as the provider sees it. */
function toApiNames(
  messages: EvaluatedMessage[],
  apiName: (name: string) => string,
): EvaluatedMessage[] {
  return messages.map((message) => {
    // Most tools' names are their API names already: such a message is sent as it is.
    if (
      !message.parts.some(
        (part) =>
          (part.kind === 'tool_use' || part.kind === 'tool_result') &&
          apiName(part.name) !== part.name,
      )
    ) {
      return message;
    }
    return {
      ...message,
      parts: message.parts.map((part) =>
        part.kind === 'tool_use' || part.kind === 'tool_result'
          ? { ...part, name: apiName(part.name) }
          : part,
      ),
    } as EvaluatedMessage;
  });
}
