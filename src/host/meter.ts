// The context meter's host side (docs/context.md, "The context meter"): the warning before a
// send whose request nears the model's window, `:Flemma context` (the next request's estimate,
// built as a send would build it, with nothing sent), and the lines of `:Flemma status`. The
// figures of completed requests are the usage tracker's (`UsageTracker.lastContext`).
import {
  breakdown,
  type ContextLevel,
  contextReport,
  contextWarning,
  formatTokens,
  windowSource,
} from '../core/context/meter.js';
import { estimateRequest } from '../core/context/estimate.js';
import { contextWindow } from '../core/provider/windows.js';
import type { Config } from '../core/config/config.js';
import type { HostBase } from './base.js';
import { PROVIDERS } from './providers.js';
import type { PreparedRequest, RequestBuilder } from './send/request.js';
import type { UsageTracker } from './usage.js';

export interface MeterDeps {
  base: Pick<HostBase, 'notify'>;
  requests: Pick<RequestBuilder, 'prepare'>;
  usage: Pick<UsageTracker, 'lastContext'>;
}

export class ContextMeter {
  /** Per buffer, where its last send stood (the warning is said once per crossing). */
  private readonly levels = new Map<number, ContextLevel>();

  constructor(private readonly deps: MeterDeps) {}

  /**
   * A send's request is about to go to its provider: warn when it reaches `context.warn_at` of
   * the window, once per crossing. The send goes on either way. The estimate is of the request
   * as it goes (whatever the request building left out of it).
   */
  beforeSend(bufnr: number, prepared: PreparedRequest): void {
    const { config, providerName, model, request } = prepared;
    const window = contextWindow(providerName, model, config.context.window);
    const { level, message } = contextWarning(
      {
        tokens: estimateRequest(request),
        window: window.tokens,
        model,
        warnAt: config.context.warnAt,
      },
      this.levels.get(bufnr),
    );
    this.levels.set(bufnr, level);
    if (message !== undefined) {
      this.deps.base.notify.warn(message);
    }
  }

  /** The buffer went away. */
  forget(bufnr: number): void {
    this.levels.delete(bufnr);
  }

  /**
   * `:Flemma context`: the buffer's next request built as a send builds it (nothing is sent and
   * the buffer is not changed), its estimate against the window and what it is made of. Null
   * (after telling the user why) when no request can be built.
   */
  async report(
    bufnr: number,
  ): Promise<{ lines: string[]; tokens: number; window: number; percent: number } | null> {
    const prepared = await this.deps.requests.prepare(bufnr, undefined, undefined, 'estimate');
    if (prepared === undefined) return null;
    const { config, providerName: provider, model, request } = prepared;
    const window = contextWindow(provider, model, config.context.window);
    const parts = breakdown(request, prepared.state.document);
    const last = this.deps.usage.lastContext(bufnr);
    const lines = contextReport({
      breakdown: parts,
      window,
      provider,
      model,
      warnAt: config.context.warnAt,
      ...(prepared.betweenTurns === undefined ? {} : { betweenTurns: prepared.betweenTurns }),
      ...(last === undefined
        ? {}
        : { last: { tokens: last.tokens, window: last.window, model: last.model } }),
    });
    return {
      lines,
      tokens: parts.total,
      window: window.tokens,
      percent: window.tokens > 0 ? Math.floor((parts.total / window.tokens) * 100) : 0,
    };
  }

  /**
   * The lines of `:Flemma status` about the context: the last request against the window of the
   * model it went to, and the window of the model the buffer uses now.
   */
  statusLines(bufnr: number, config: Config): string[] {
    const lines: string[] = [];
    const last = this.deps.usage.lastContext(bufnr);
    lines.push(
      last === undefined
        ? 'context: no request of this buffer has completed yet'
        : `context: last request ${last.text} of ${last.model}'s window (as the provider counted its input)`,
    );
    const model = config.model ?? PROVIDERS[config.provider]?.defaultModel;
    if (model !== undefined) {
      const window = contextWindow(config.provider, model, config.context.window);
      lines.push(
        `  window of ${model}: ${formatTokens(window.tokens)} (from ${windowSource(window.source)})`,
      );
    }
    const warnAt = config.context.warnAt;
    lines.push(
      `  warn_at: ${warnAt === false ? 'off' : `${String(Math.round(warnAt * 100))}%`}; the next request's estimate: :Flemma context`,
    );
    return lines;
  }
}
