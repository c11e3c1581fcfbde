// Usage and cost in the editor (docs/usage.md): the session of this host, the usage bar
// after each reply, the spend cap (`limits.max_session_cost`), and the usage ledger's line of
// each priced request of a chat file (`./ledger.ts`). `:Flemma usage:estimate` is
// the request builder's (`send/request.ts`).
import { realpathSync } from 'node:fs';
import type { ProviderEvent, ReportedUsage, Usage } from '../core/provider/types.js';
import { pricingFor, totalInput } from '../core/usage/cost.js';
import { type ContextFigure, contextFigure } from '../core/context/meter.js';
import { contextWindow, type WindowSource } from '../core/provider/windows.js';
import { makeRecord, type RequestRecord, Session } from '../core/usage/session.js';
import { autopilotSettings } from '../core/loop/autopilot.js';
import type { HostBase } from './base.js';
import { appendLedger, ledgerLine } from './ledger.js';
import type { PreparedRequest } from './send/request.js';
import type { Config } from '../core/config/config.js';
import type { LuaParams } from '../editor/protocol/index.js';

/** How a send was asked for. */
export interface SendOptions {
  /** `<C-]>` or `:Flemma send` (the default); false for autopilot's automatic steps. */
  userInitiated?: boolean;
  /** The user agreed to send although the session reached `limits.max_session_cost`. */
  overLimit?: boolean;
}

/** What one request reports while it streams. */
export class RequestMeter {
  usage: Usage | undefined;
  /** What an agent said itself of its turn (its cost, its window). */
  reported: ReportedUsage | undefined;
  /** The reply asked for a tool (autopilot would go on). */
  toolUse = false;
  readonly startedAt = Date.now();

  constructor(
    readonly provider: string,
    readonly model: string,
    readonly filepath: string | undefined,
    /** The window of the model the request goes to, and `context.warn_at`, for the meter. */
    readonly window: { tokens: number; source: WindowSource },
    readonly warnAt: number | false,
    /** The state directory whose ledger records the request; undefined: not recorded. */
    readonly ledger: string | undefined,
  ) {}

  observe(event: ProviderEvent): void {
    // The last report wins: a provider may send running totals.
    if (event.type === 'usage') {
      this.usage = event.usage;
      this.reported = event.reported;
    } else if (event.type === 'tool_use') this.toolUse = true;
  }
}

function realpath(path: string | null): string | undefined {
  if (path === null) return undefined;
  try {
    return realpathSync(path);
  } catch {
    // Not written yet.
    return path;
  }
}

/** A cap reached: what was spent (or made), the cap, and which of a chat's own (`capChat`). */
interface Reached {
  cost: number;
  limit: number;
  chat?: 'cost' | 'requests';
}

/** A run's own caps, and what its requests made and cost so far. */
interface ChatCap {
  cost?: number;
  requests?: number;
  spent: number;
  made: number;
}

function dollars(value: number): string {
  return `$${value.toFixed(value < 1 ? 4 : 2)}`;
}

export class UsageTracker {
  readonly session = new Session();
  private readonly meters = new Map<number, RequestMeter>();
  /** Per chat held in a file, the caps of its run and what its requests made and cost so far. */
  private readonly caps = new Map<number, ChatCap>();
  /** Per buffer, its last completed request against its model's window (the context meter). */
  private readonly contexts = new Map<number, ContextFigure>();
  /** The requests the usage ledger holds (their cost is counted from it). */
  private readonly recorded = new WeakSet<RequestRecord>();

  constructor(
    private readonly ctx: Pick<HostBase, 'lua' | 'notify' | 'logger'>,
    /** Autopilot of the buffer stops (past the spend cap). */
    private readonly stopAutopilotOf: (bufnr: number) => void,
  ) {}

  /** A request of the buffer goes out: its meter (the send's stream feeds it every event). */
  begin(bufnr: number, prepared: PreparedRequest): RequestMeter {
    const { providerName, model, config } = prepared;
    const state = prepared.editor.facts.editor_dirs?.state;
    const meter = new RequestMeter(
      providerName,
      model,
      realpath(prepared.editor.facts.filename),
      contextWindow(providerName, model, config.context.window),
      config.context.warnAt,
      config.usageLedger && state !== undefined && state !== '' ? state : undefined,
    );
    this.meters.set(bufnr, meter);
    const cap = this.caps.get(bufnr);
    if (cap !== undefined) cap.made += 1;
    return meter;
  }

  /**
   * The buffer's request ended. A completed one that reported its usage goes into the session
   * and its bar is shown; the record (for `request:finished`) is returned.
   */
  finish(
    bufnr: number,
    completed: boolean,
  ): { record: RequestRecord | undefined; toolUse: boolean } {
    const meter = this.meters.get(bufnr);
    this.meters.delete(bufnr);
    if (meter === undefined) return { record: undefined, toolUse: false };
    if (!completed || meter.usage === undefined) {
      return { record: undefined, toolUse: meter.toolUse };
    }
    const { reported } = meter;
    const pricing = reported === undefined ? pricingFor(meter.provider, meter.model) : undefined;
    const record = makeRecord(
      {
        provider: meter.provider,
        model: meter.model,
        usage: meter.usage,
        bufnr,
        ...(meter.filepath === undefined ? {} : { filepath: meter.filepath }),
        startedAt: meter.startedAt,
        completedAt: Date.now(),
        ...(reported === undefined ? {} : { reported }),
      },
      pricing,
    );
    this.session.add(record);
    this.record(meter, record);
    const cap = this.caps.get(bufnr);
    if (cap !== undefined) cap.spent += record.cost ?? 0;
    // The figure stays with the model the request went to: a later switch of model does not
    // change what this request filled of its window.
    const context = contextFigure(
      reported?.context ?? totalInput(record),
      // The agent's window, unless the user set one (`context.window`).
      reported?.window === undefined || meter.window.source === 'configured'
        ? meter.window
        : { tokens: reported.window, source: 'agent' },
      meter,
    );
    this.contexts.set(bufnr, context);
    const params: LuaParams<'usage.show'> = {
      bufnr,
      request: record,
      session: this.session.totals(),
      context,
    };
    if (pricing?.min_cache_tokens !== undefined) {
      params.min_cache_tokens = pricing.min_cache_tokens;
    }
    // Lua keeps the record and the totals (for `flemma.usage`) and shows the bar if enabled.
    this.ctx.lua.notify('usage.show', params);
    return { record, toolUse: meter.toolUse };
  }

  /** The request's line into the ledger, when it has a price, a chat file and a ledger. */
  private record(meter: RequestMeter, record: RequestRecord): void {
    const line = ledgerLine(record);
    if (line === undefined || meter.ledger === undefined) return;
    try {
      appendLedger(meter.ledger, line);
      this.recorded.add(record);
    } catch (error) {
      // The ledger only feeds the picker's costs: the session still counts the request.
      this.ctx.logger.warn(`usage ledger: ${(error as Error).message}`);
    }
  }

  /** Whether the usage ledger holds the request. */
  inLedger(record: RequestRecord): boolean {
    return this.recorded.has(record);
  }

  /** The buffer's last completed request against its model's window, if one reported usage. */
  lastContext(bufnr: number): ContextFigure | undefined {
    return this.contexts.get(bufnr);
  }

  /** The buffer went away. */
  forget(bufnr: number): void {
    this.contexts.delete(bufnr);
    this.caps.delete(bufnr);
  }

  /**
   * A run of a chat held in a file may make `requests` requests and cost `cost` USD (its own
   * requests from now on; undefined: no cap of its own), on top of the session's cap: past
   * either, autopilot stops as at the session's.
   */
  capChat(bufnr: number, limits: { cost?: number; requests?: number } | undefined): void {
    if (limits === undefined) this.caps.delete(bufnr);
    else this.caps.set(bufnr, { ...limits, spent: 0, made: 0 });
  }

  /** The cap and what the session (or the chat's run) has cost, once that reached the cap. */
  private reached(config: Config | undefined, bufnr: number): Reached | undefined {
    const cap = this.caps.get(bufnr);
    if (cap?.requests !== undefined && cap.made >= cap.requests) {
      return { cost: cap.made, limit: cap.requests, chat: 'requests' };
    }
    if (cap?.cost !== undefined && cap.spent >= cap.cost) {
      return { cost: cap.spent, limit: cap.cost, chat: 'cost' };
    }
    const limit = config?.maxSessionCost;
    if (limit === undefined) return undefined;
    const cost = this.session.totals().cost;
    return cost >= limit ? { cost, limit } : undefined;
  }

  /** Short, so that it fits the command line without a hit-enter prompt. */
  private why(reached: Reached): string {
    if (reached.chat === 'requests') {
      return `the run made ${String(reached.cost)} requests, its max turns`;
    }
    if (reached.chat === 'cost') {
      return `the run cost ${dollars(reached.cost)} ≥ its max cost ${dollars(reached.limit)}`;
    }
    return `session cost ${dollars(reached.cost)} ≥ max_session_cost ${dollars(reached.limit)}`;
  }

  /**
   * Whether a send may go out under the spend cap. Past it, autopilot's step stops with a
   * warning, and a send the user asked for asks them first (in Lua; a yes sends again with
   * `over_limit`).
   */
  allows(bufnr: number, config: Config, options: SendOptions): boolean {
    if (options.overLimit === true) return true;
    const reached = this.reached(config, bufnr);
    if (reached === undefined) return true;
    if (options.userInitiated === false) {
      this.stopAutopilot(bufnr, reached);
      return false;
    }
    this.ctx.lua.notify('usage.confirm', {
      bufnr,
      cost: reached.cost,
      limit: reached.limit,
      message: `Flemma: ${this.why(reached)}. Send anyway?`,
    });
    return false;
  }

  /**
   * A reply completed: when it asked for tools and autopilot would go on, but the session has
   * reached its cap, autopilot stops here (with a warning). Returns whether it stopped.
   */
  stopsAutopilot(bufnr: number, config: Config | undefined, toolUse: boolean): boolean {
    if (!toolUse || !autopilotSettings(config?.tools).enabled) return false;
    const reached = this.reached(config, bufnr);
    if (reached === undefined) return false;
    this.stopAutopilot(bufnr, reached);
    return true;
  }

  private stopAutopilot(bufnr: number, reached: Reached): void {
    this.stopAutopilotOf(bufnr);
    this.ctx.notify.warn(`Autopilot stopped: ${this.why(reached)}`);
  }
}
