// The send: a chat buffer's prompt goes to its provider and the reply streams into the buffer
// (behaviour.md §2.13), with the buffer locked, a progress indicator, hooks, cancel and errors
// that leave the buffer as it was.
import { trace } from './trace.js';
import { homedir } from 'node:os';
import { basename } from 'node:path';
import { type RenderedPrompt, renderPrompt } from '../core/chat/render.js';
import { readReference } from '../core/chat/references.js';
import { sleep } from '../core/util/sleep.js';
import { assemblePrompt, type Prompt } from '../core/chat/prompt.js';
import { ReplyLayout, openingLines } from '../core/chat/reply.js';
import {
  type ProviderAdapter,
  ProviderError,
  type EvaluatedMessage,
  type ProviderEvent,
  type ProviderRequest,
  type ToolSpec,
} from '../core/provider/types.js';
import type { DocumentState } from '../editor/documents.js';
import type { BufferWriter } from '../editor/writequeue.js';
import type { HostContext } from './context.js';
import { referenceScope } from './trust-check.js';
import { PROVIDERS, type ProviderParameters } from './providers.js';
import {
  type ContextAnswer,
  type ContextQuestion,
  contextQuestion,
  type EditorContext,
  fetchEditorContext,
  KNOWN_ENV,
  resolveContext,
} from './editor-context.js';
import { resolveThinking, type ThinkingParameters } from '../core/provider/thinking.js';
import { DEFAULT_STREAM_IDLE_MS } from '../core/provider/watchdog.js';
import { type SendOptions, UsageTracker } from './usage.js';
import { toolLoopWarmup } from './warmup.js';
import { randomBytes } from 'node:crypto';
import {
  type ToolCalling,
  type XmlLibrary,
  XmlToolExtractor,
  callingMode,
  extractXmlToolCalls,
  loadXml,
  xmlMessages,
} from '../core/tools/xml.js';

export interface ConfigSnapshot {
  provider?: string;
  model?: string;
  parameters?: Record<string, unknown> & {
    max_tokens?: number | string;
    temperature?: number;
    cache_retention?: 'short' | 'long' | 'none';
  };
  tools?: { __list?: string[]; calling?: unknown };
}

const DEFAULT_MAX_TOKENS = 8192;

function maxTokens(value: number | string | undefined): number {
  if (typeof value === 'number') return value;
  const percent = typeof value === 'string' ? /^(\d+)%$/.exec(value) : null;
  // NOTE: model limits arrive with the model tables (issue 8); until then "N%" is of 8192.
  if (percent !== null)
    return Math.max(1024, Math.floor((DEFAULT_MAX_TOKENS * Number(percent[1])) / 100));
  return DEFAULT_MAX_TOKENS / 2;
}

export type SendStatus = 'completed' | 'cancelled' | 'errored';

/** Attempts for a request that fails before any content (429, 529, 5xx, a lost connection). */
const MAX_ATTEMPTS = 3;

/**
 * How long to wait before trying again, or undefined when the failure is final: not retryable,
 * after content arrived, after a cancel, or out of attempts. `retry-after` wins (up to a minute);
 * otherwise 1 s, 2 s, … with ±20 % jitter.
 */
export function retryDelay(
  error: unknown,
  attempt: number,
  hasContent: boolean,
  aborted: boolean,
  random: () => number = Math.random,
): number | undefined {
  if (aborted || hasContent || attempt >= MAX_ATTEMPTS) return undefined;
  if (!(error instanceof ProviderError) || !error.retryable) return undefined;
  if (error.retryAfterMs !== undefined) return Math.min(error.retryAfterMs, 60_000);
  const base = 1000 * 2 ** (attempt - 1);
  return Math.round(base * (0.8 + 0.4 * random()));
}

/**
 * Turns a request's events into sink lines (JSON). Consecutive text deltas share one line (up to
 * 4 KiB): a reply of 20,000 deltas would otherwise cost the editor 20,000 lines.
 */
export class SinkTap {
  private text = '';

  constructor(private readonly write: (line: string) => void) {}

  push(event: ProviderEvent): void {
    if (event.type === 'text') {
      this.text += event.text;
      if (this.text.length >= 4096) this.flush();
      return;
    }
    this.flush();
    this.write(JSON.stringify(event));
  }

  flush(): void {
    if (this.text === '') return;
    this.write(JSON.stringify({ type: 'text', text: this.text }));
    this.text = '';
  }
}

/**
 * Starts a stream now (its first `next()` issues the request) and hands it over as an iterable
 * to be consumed later. A failure before it is consumed is kept for the consumer, not reported
 * as unhandled.
 */
function primed<T>(source: AsyncIterable<T>): AsyncIterable<T> {
  const iterator = source[Symbol.asyncIterator]();
  const head = iterator.next();
  head.catch(() => undefined);
  let used = false;
  return {
    [Symbol.asyncIterator]: (): AsyncIterator<T> => ({
      next: () => {
        if (used) return iterator.next();
        used = true;
        return head;
      },
      return: async (value?: unknown): Promise<IteratorResult<T>> =>
        iterator.return === undefined ? { done: true, value: value as T } : iterator.return(value),
    }),
  };
}

/** A request ready to go (see `SendController.prepare`). */
export interface PreparedRequest {
  state: DocumentState;
  editor: EditorContext;
  config: ConfigSnapshot;
  providerName: string;
  model: string;
  adapter: ProviderAdapter;
  request: ProviderRequest;
  /** `tools.calling` for this provider and model; `xml` carries the XML library it needs. */
  calling: ToolCalling;
  xml?: XmlLibrary;
  /** The tools the request offers (natively or in XML), by their own names. */
  offered: readonly string[];
  /**
   * After the provider refused the credential (401): forget it and resolve it again; a new
   * adapter when that gives a different value, else undefined.
   */
  reauthorize(): Promise<ProviderAdapter | undefined>;
}

/** One per host: at most one request per buffer. */
export class SendController {
  private readonly running = new Map<number, AbortController>();
  /** Per buffer, the refused options the user was last told about (see `prepare`). */
  private readonly refusedShown = new Map<number, string>();
  /** The session's usage and cost, the usage bar and the spend cap. */
  readonly usage: UsageTracker;

  constructor(private readonly ctx: HostContext) {
    this.usage = new UsageTracker(ctx);
  }

  /** The buffer went away: forget what was said about it. */
  forget(bufnr: number): void {
    this.refusedShown.delete(bufnr);
  }

  /** A request of this buffer is running (or waiting for tool definitions). */
  isRunning(bufnr: number): boolean {
    return this.running.has(bufnr);
  }

  /** Abort the buffer's request; returns whether there was one. */
  cancel(bufnr: number): boolean {
    const controller = this.running.get(bufnr);
    if (controller === undefined) return false;
    controller.abort();
    return true;
  }

  /**
   * Send the buffer. `context` is the editor's answer the caller already has (the tool loop
   * asks once per step); without it the send asks.
   */
  async send(
    bufnr: number,
    context?: EditorContext,
    options: SendOptions = {},
  ): Promise<SendStatus | undefined> {
    const { ctx } = this;
    if (ctx.tools.isRunning(bufnr)) {
      ctx.lua.notify('notify', {
        level: 'warn',
        message: 'Cannot send while tool execution is in progress.',
      });
      return undefined;
    }
    if (this.running.has(bufnr)) {
      ctx.lua.notify('notify', {
        level: 'warn',
        message: 'A request is already in progress. Use <C-c> to cancel it first.',
      });
      return undefined;
    }
    const controller = new AbortController();
    this.running.set(bufnr, controller);
    let status: SendStatus | undefined;
    let config: ConfigSnapshot | undefined;
    try {
      status = await this.run(
        bufnr,
        controller,
        context,
        (used) => {
          config = used;
        },
        options,
      );
    } finally {
      this.running.delete(bufnr);
    }
    // NOTE: announced only once the request no longer counts as running, so that a send made
    // from a `request:finished` handler (or right after it) is accepted.
    trace('send:finished');
    if (status !== undefined) {
      // A completed request goes into the session (and its usage bar shows) first.
      const { record, toolUse } = this.usage.finish(bufnr, status === 'completed');
      // The events keep their order on the channel; the tool loop does not wait for listeners.
      ctx.hooks.post(
        'request:finished',
        record === undefined ? { bufnr, status } : { bufnr, status, request: record },
      );
      if (status === 'completed') ctx.hooks.post('conversation:idle', { bufnr });
      if (status === 'completed') {
        if (!this.usage.stopsAutopilot(bufnr, config, toolUse)) {
          await ctx.tools.responseComplete(bufnr, config);
        }
      } else ctx.tools.pilot.disarm(bufnr);
    }
    return status;
  }

  private async run(
    bufnr: number,
    controller: AbortController,
    context: EditorContext | undefined,
    onConfig: (config: ConfigSnapshot) => void,
    options: SendOptions,
  ): Promise<SendStatus | undefined> {
    const { ctx } = this;
    if (!ctx.tools.isReady()) {
      ctx.lua.notify('notify', {
        level: 'info',
        message: 'Waiting for tool definitions to load...',
      });
      if (!(await ctx.tools.whenReady(controller.signal))) {
        ctx.lua.notify('notify', { level: 'info', message: 'Cancelled queued send.' });
        return 'cancelled';
      }
    }
    trace('send:run');
    const prepared = await this.prepare(bufnr, context, onConfig);
    if (prepared === undefined) return undefined;
    if (controller.signal.aborted) return 'cancelled';
    // The spend cap: past it, nothing goes out without the user's yes.
    if (!this.usage.allows(bufnr, prepared.config, options)) return undefined;
    return this.stream(
      bufnr,
      prepared,
      controller,
      await contextQuestion(bufnr, prepared.state.document, { memo: ctx.tools.trustMemo }),
    );
  }

  /**
   * Everything a request needs, as the send would make it: the buffer's prompt rendered, its
   * provider and model, the credential, the adapter and the request. Undefined (after telling
   * the user why) when it cannot be made. `:Flemma usage:estimate` uses it too.
   */
  async prepare(
    bufnr: number,
    context: EditorContext | undefined,
    onConfig?: (config: ConfigSnapshot) => void,
  ): Promise<PreparedRequest | undefined> {
    const { ctx } = this;
    const state = await ctx.documents.attach(bufnr);
    if (state === undefined) return undefined;
    const prompt = assemblePrompt(state.document);
    if (!prompt.messages.some((message) => message.role === 'user')) {
      ctx.lua.notify('notify', {
        level: 'warn',
        message: 'Nothing to send: write a @You: message first.',
      });
      return undefined;
    }
    const editor =
      context ??
      (await fetchEditorContext(ctx.lua, bufnr, state.document, ctx.tools.toolNames(), {
        memo: ctx.tools.trustMemo,
      }));
    if (editor.problem !== undefined) {
      // The frontmatter failed, or may not run: nothing is sent and the buffer stays as it is.
      ctx.lua.notify('notify', { level: 'error', message: editor.problem });
      return undefined;
    }
    this.tellRefused(bufnr, editor);
    const config = editor.config as ConfigSnapshot;
    onConfig?.(config);
    const env = editor.env;
    const providerName = config.provider ?? 'anthropic';
    const entry = PROVIDERS[providerName];
    const fail = (message: string): void => {
      ctx.lua.notify('notify', { level: 'error', message: `${providerName}: ${message}` });
    };
    if (entry === undefined) {
      fail(`unknown provider (available: ${Object.keys(PROVIDERS).sort().join(', ')})`);
      return undefined;
    }
    const parameters = config.parameters ?? {};
    const specific = (parameters[providerName] ?? {}) as ProviderParameters;
    const envValue = async (names: string[]): Promise<string | undefined> => {
      if (names.every((name) => KNOWN_ENV.includes(name))) {
        return names.map((name) => env[name]).find((value) => value !== undefined);
      }
      return ((await ctx.lua.call('env.first', { names })) as { value: string } | null)?.value;
    };
    const baseURL =
      specific.base_url ??
      (entry.baseUrlEnv === undefined ? undefined : await envValue([entry.baseUrlEnv]));
    const missing = entry.missing?.({ parameters: specific, baseURL });
    if (missing !== undefined) {
      fail(missing);
      return undefined;
    }
    const spec = entry.credential(specific);
    const secretsConfig = (config as { secrets?: Record<string, unknown> }).secrets;
    const resolveCredential = async (
      quiet = false,
    ): Promise<{ ok: true; value: string | undefined } | { ok: false }> => {
      if (spec === undefined) return { ok: true, value: undefined };
      const optional = entry.credentialOptional === true;
      const found = await ctx.secrets.resolve(spec, {
        env,
        known: KNOWN_ENV,
        ...(secretsConfig === undefined ? {} : { config: secretsConfig }),
        quick: optional,
      });
      if (found.ok) return { ok: true, value: found.value };
      if (optional) return { ok: true, value: undefined };
      if (!quiet) fail(found.message);
      return { ok: false };
    };
    const resolved = await resolveCredential();
    if (!resolved.ok) return undefined;
    const credential = resolved.value;
    trace('send:env');
    const model = config.model ?? entry.defaultModel;
    if (model === undefined) {
      fail('set the model to use (model = "…" in setup() or the frontmatter)');
      return undefined;
    }
    const timeout = typeof parameters['timeout'] === 'number' ? parameters['timeout'] : 600;
    // The stream watchdog (src/core/provider/watchdog.ts): the provider's own value wins.
    const idle = [specific['stream_idle_timeout'], parameters['stream_idle_timeout']].find(
      (value): value is number => typeof value === 'number' && value >= 1,
    );
    const connect = (value: string | undefined): ProviderAdapter =>
      entry.create(
        {
          credential: value ?? '',
          baseURL,
          parameters: specific,
          // NOTE: the send retries by itself (below), so that each attempt shows in the indicator.
          maxRetries: 0,
          timeoutMs: timeout * 1000,
          streamIdleMs: idle === undefined ? DEFAULT_STREAM_IDLE_MS : idle * 1000,
        },
        ctx.sdks,
      );
    const adapter = connect(credential);
    /** After a 401: the credential again, past the cache; a new adapter when it changed. */
    const reauthorize = async (): Promise<ProviderAdapter | undefined> => {
      if (spec === undefined) return undefined;
      ctx.secrets.invalidate(spec.kind, spec.service);
      const again = await resolveCredential(true);
      if (!again.ok || again.value === undefined || again.value === credential) return undefined;
      return connect(again.value);
    };
    const tools = ctx.tools.specsFor(config.tools?.__list, config);
    let evaluated: RenderedPrompt;
    try {
      trace('send:render');
      evaluated = await this.render(bufnr, prompt, editor, tools);
      trace('send:rendered');
    } catch (error) {
      // A template or a file reference failed: nothing is sent, the buffer stays as it is.
      const message = error instanceof Error ? error.message : String(error);
      ctx.lua.notify('notify', { level: 'error', message });
      return undefined;
    }
    // The tools' own system prompts (CodeCompanion `system_prompt`), or in XML tool calling the
    // whole description of the tools and the format (docs/tools.md, "XML tool calling").
    const calling = callingMode(config.tools?.calling, providerName, model);
    const xml = calling === 'xml' ? await loadXml() : undefined;
    const section = ctx.tools.systemSection(tools, calling, xml);
    const system =
      section === ''
        ? evaluated.system
        : [evaluated.system, section].filter((t) => t !== '').join('\n\n');
    const request: ProviderRequest = {
      model,
      system,
      // Providers see API names (`file.read` → `file_read`); replies are mapped back in `consume`.
      // In XML tool calling the tools are described in the system prompt instead.
      messages:
        xml === undefined
          ? toApiNames(evaluated.messages, (name) => ctx.tools.registry.apiName(name))
          : xmlMessages(evaluated.messages, xml),
      tools:
        xml === undefined
          ? tools.map((tool) => ({ ...tool, name: ctx.tools.registry.apiName(tool.name) }))
          : [],
      maxTokens: maxTokens(parameters.max_tokens),
      cacheRetention: parameters.cache_retention ?? 'short',
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
    };
    if (xml !== undefined) prepared.xml = xml;
    return prepared;
  }

  /**
   * A file that is not trusted is sent without the options that need trust: say so once (again
   * when the list changes), the diagnostics and `:Flemma status` have the details.
   */
  private tellRefused(bufnr: number, editor: EditorContext): void {
    const keys = [...new Set(editor.refused.map((item) => item.key))];
    const id = keys.join('\0');
    if (id === (this.refusedShown.get(bufnr) ?? '')) return;
    this.refusedShown.set(bufnr, id);
    if (keys.length === 0) return;
    const name = editor.facts.filename === null ? 'this chat' : basename(editor.facts.filename);
    const what = keys.length === 1 ? (keys[0] ?? '') : `${String(keys.length)} options`;
    this.ctx.lua.notify('notify', {
      level: 'warn',
      message: `${name}: ${what} not applied until :trust (:Flemma status)`,
    });
  }

  /**
   * Templates rendered in Neovim (one call for the whole prompt, with the frontmatter's
   * variables) and file references read relative to the chat's directory.
   */
  private render(
    bufnr: number,
    prompt: Prompt,
    editor: EditorContext,
    tools: readonly ToolSpec[],
  ): Promise<RenderedPrompt> {
    const { ctx } = this;
    // A file that is not trusted reads only inside its own directory tree.
    const { baseDir, scope } = referenceScope(editor);
    return renderPrompt(prompt, {
      renderTemplates: async (jobs) => {
        // A job with no `{% %}` needs only its expressions evaluated: their text stays here and
        // the values are spliced in (a long chat's messages do not travel to Lua and back).
        const spliced = jobs.map((segments) =>
          segments.every((segment) => segment.kind !== 'code'),
        );
        trace('send:lua-render');
        const answer = (await ctx.lua.call('template.render', {
          bufnr,
          digest: editor.digest,
          variables: editor.variables,
          jobs: jobs.map((segments, index) =>
            spliced[index] === true
              ? { spliced: true, segments: segments.filter((segment) => segment.kind !== 'text') }
              : { segments },
          ),
          // For personalities (`include("urn:flemma:personality:…")`).
          tools: ctx.tools.personalityTools(tools),
        })) as { texts?: (string | string[])[]; error?: string; untrusted?: string };
        trace('send:lua-rendered');
        if (answer.untrusted !== undefined) return { error: answer.untrusted };
        if (answer.error !== undefined) return { error: `Template error: ${answer.error}` };
        const results = answer.texts ?? [];
        return {
          texts: jobs.map((segments, index) => {
            const result = results[index];
            if (!Array.isArray(result)) return result ?? '';
            let next = 0;
            return segments
              .map((segment) => (segment.kind === 'text' ? segment.text : (result[next++] ?? '')))
              .join('');
          }),
        };
      },
      readReference: (reference) => readReference(reference, baseDir, homedir(), scope),
      readsResultReferences: (name) => ctx.tools.readsResultReferences(name),
    });
  }

  /** A reply's events; in XML tool calling, with the XML tool blocks turned into tool uses. */
  private events(
    prepared: PreparedRequest,
    adapter: ProviderAdapter,
    signal: AbortSignal,
  ): AsyncIterable<ProviderEvent> {
    const events = adapter.stream(prepared.request, signal);
    if (prepared.xml === undefined) return events;
    const registry = this.ctx.tools.registry;
    const extractor = new XmlToolExtractor(
      prepared.xml,
      (name) => registry.get(name)?.inputSchema,
      () => `xml_${randomBytes(6).toString('hex')}`,
    );
    return extractXmlToolCalls(events, extractor);
  }

  /** One attempt: stream the reply's events into the buffer. */
  private async consume(
    bufnr: number,
    events: AsyncIterable<ProviderEvent>,
    layout: ReplyLayout,
    writer: BufferWriter,
    stream: string,
    tap: (event: ProviderEvent) => void,
  ): Promise<void> {
    const { ctx } = this;
    let characters = 0;
    let lastProgress = 0;
    let seen = 0;
    // An update held back by the 100 ms pace goes out at the end of the window, so that a stream
    // that pauses does not leave a stale count on screen.
    let trailing: ReturnType<typeof setTimeout> | undefined;
    let latest: Record<string, unknown> | undefined;
    const sendProgress = (params: Record<string, unknown>): void => {
      lastProgress = Date.now();
      latest = undefined;
      ctx.lua.notify('progress.update', params);
    };
    try {
      for await (const raw of events) {
        if (seen++ === 0) trace('send:first-event');
        // The buffer shows a tool's own name, not the provider-safe one.
        const event = fromApiNames(raw, (name) => ctx.tools.fromWire(name));
        tap(event);
        if (event.type === 'tool_use' && event.invalid !== undefined) {
          ctx.tools.markInvalidInput(event.id, event.name, event.invalid);
        }
        const text = layout.push(event);
        if (text !== '') writer.append(text, stream);
        if (event.type === 'warning') {
          ctx.lua.notify('notify', { level: 'warn', message: event.message });
        }
        const now = Date.now();
        if (event.type === 'text') characters += event.text.length;
        const phase = event.type === 'progress' ? event.phase : 'streaming';
        const params: Record<string, unknown> = { bufnr, phase, characters };
        if (event.type === 'progress') params['characters'] = event.characters;
        if (event.type === 'progress' && event.toolName !== undefined) {
          params['tool'] = event.toolName;
        }
        if (now - lastProgress >= 100) {
          sendProgress(params);
        } else {
          latest = params;
          trailing ??= setTimeout(
            () => {
              trailing = undefined;
              if (latest !== undefined) sendProgress(latest);
            },
            100 - (now - lastProgress),
          );
        }
      }
    } finally {
      if (trailing !== undefined) clearTimeout(trailing);
    }
  }

  private async stream(
    bufnr: number,
    prepared: PreparedRequest,
    controller: AbortController,
    question: ContextQuestion,
  ): Promise<SendStatus> {
    const lines = prepared.state.lines;
    let adapter = prepared.adapter;
    const { ctx } = this;
    const writer = ctx.writes.buffer(bufnr);
    const stream = `reply-${String(Date.now())}`;
    const lastRow = lines.length - 1;
    const lastLine = lines[lastRow] ?? '';
    const opening = openingLines(lastLine);
    const meter = this.usage.begin(bufnr, prepared);
    const markerRow = lastRow + opening.length - 1;
    // The editor's side of the start goes out first, as one message, so that Neovim works on it
    // while the SDK serialises and sends the request (a long chat's JSON keeps the event loop
    // busy for a while): the buffer locked (a notification, ahead of the write), the
    // `@Assistant:` marker, then `send.begin` after it in the same round trip (progress on the
    // marker's row; the request's stream, event by event as JSON lines, in a hidden buffer
    // users can watch; then `request:sending`).
    ctx.lua.notify('buffer.lock', { bufnr, owner: 'request' });
    const opened = writer.setLines(lastRow, lastRow + 1, opening, [lastLine]);
    const begun = ctx.writes.callAfterWrites('send.begin', {
      bufnr,
      row: markerRow,
      sink_name: `request/${String(bufnr)}`,
    });
    ctx.writes.sendNow();
    trace('send:http');
    const first = primed(this.events(prepared, adapter, controller.signal));
    // Once the reply streams, what a first tool call needs gets ready (src/host/warmup.ts).
    const warm = toolLoopWarmup({
      tools: prepared.offered.flatMap((name) => ctx.tools.registry.get(name) ?? []),
      sandbox: prepared.editor.config['sandbox'],
      sandboxOverride: prepared.editor.facts.sandbox_override,
    });
    let sink: { bufnr: number };
    try {
      sink = (await begun) as { bufnr: number };
      await opened;
    } catch (error) {
      controller.abort();
      throw error;
    }
    const sinkWriter = ctx.writes.buffer(sink.bufnr);
    const sinkTap = new SinkTap((line) => {
      sinkWriter.append(line + '\n');
    });
    const layout = new ReplyLayout();
    let status: SendStatus = 'completed';
    try {
      let pending: AsyncIterable<ProviderEvent> | undefined = first;
      let reauthorized = false;
      for (let attempt = 1; ; attempt++) {
        try {
          const events = pending ?? this.events(prepared, adapter, controller.signal);
          pending = undefined;
          await this.consume(bufnr, events, layout, writer, stream, (event) => {
            warm(event);
            sinkTap.push(event);
            meter.observe(event);
          });
          trace('send:streamed');
          break;
        } catch (error) {
          if (
            !reauthorized &&
            !layout.hasContent &&
            !controller.signal.aborted &&
            error instanceof ProviderError &&
            error.kind === 'authentication'
          ) {
            // The provider refused the credential: it is resolved again (a rotated key, an
            // expired token) and, when that gives another one, the request is made once more.
            reauthorized = true;
            const next = await prepared.reauthorize();
            if (next !== undefined) {
              ctx.logger.info('the provider refused the credential; trying a newly resolved one');
              adapter = next;
              attempt -= 1;
              continue;
            }
          }
          const wait = retryDelay(error, attempt, layout.hasContent, controller.signal.aborted);
          if (wait === undefined) throw error;
          ctx.logger.info(`retrying after ${String(wait)} ms: ${String(error)}`);
          ctx.lua.notify('progress.update', { bufnr, phase: 'retrying', attempt: attempt + 1 });
          await sleep(wait, controller.signal);
        }
      }
      if (controller.signal.aborted) {
        status = 'cancelled';
        writer.append(layout.interrupt(), stream);
      }
    } catch (error) {
      status = controller.signal.aborted ? 'cancelled' : 'errored';
      if (status === 'errored') {
        const message = error instanceof ProviderError ? error.describe() : String(error);
        ctx.logger.warn(`send failed: ${message}`);
        ctx.lua.notify('notify', { level: 'error', message });
        // What arrived before the failure stays, marked as an interrupted reply.
        writer.append(layout.interrupt(`Response interrupted: ${message}`), stream);
      } else {
        writer.append(layout.interrupt(), stream);
      }
    }
    if (layout.hasContent) {
      writer.append(layout.close(), stream);
    } else if (status !== 'completed') {
      // Nothing arrived: leave the buffer as it was before the send.
      await writer.flushed();
      const current = await ctx.documents.parsed(bufnr);
      const row = markerRow;
      if (current?.lines[row] === '@Assistant:') {
        await writer.setLines(lastRow, row + 1, [lastLine], current.lines.slice(lastRow, row + 1));
      }
    } else {
      ctx.lua.notify('notify', {
        level: 'warn',
        message: 'Request completed but no response was received.',
      });
      writer.append(layout.close(), stream);
    }
    writer.closeStream(stream);
    sinkTap.flush();
    // An open stream keeps every write paced by frames.
    sinkWriter.closeStream();
    trace('send:closing');
    // The editor's side of the end runs once the last text is in, in the same round trip. The
    // answer carries the editor's context for the tool loop's next step (autopilot), asked now
    // so that the step need not ask again; the buffer was locked since the send began.
    const finishing = ctx.writes.callAfterWrites('send.finish', {
      bufnr,
      sink: sink.bufnr,
      context: question.params,
    });
    // The next step (the tool loop's) waits for it: it goes now, not on the next tick.
    ctx.writes.sendNow();
    const finished = (await finishing) as { context?: ContextAnswer } | null;
    if (status === 'completed' && finished?.context !== undefined) {
      ctx.tools.carry(bufnr, resolveContext(question, finished.context, ctx.tools.toolNames()));
    }
    ctx.writes.forget(sink.bufnr);
    return status;
  }
}

/** The messages with every tool name as the provider sees it. */
function toApiNames(
  messages: EvaluatedMessage[],
  apiName: (name: string) => string,
): EvaluatedMessage[] {
  return messages.map((message) => {
    if (!message.parts.some((part) => part.kind === 'tool_use' || part.kind === 'tool_result')) {
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

/** A reply's event with tool names as the buffer shows them. */
function fromApiNames(event: ProviderEvent, canonical: (name: string) => string): ProviderEvent {
  if (event.type === 'tool_use') return { ...event, name: canonical(event.name) };
  if (event.type === 'progress' && event.toolName !== undefined) {
    return { ...event, toolName: canonical(event.toolName) };
  }
  return event;
}
