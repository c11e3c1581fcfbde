// `context.budget` and `context.elide.*` as a request reads them (docs/context.md, "Budget and
// elision"): the budget in tokens, a share of the model's window resolved against
// `contextWindow`, and the elision's knobs with the schema's defaults.
import type { ConfigData } from '../config/config.js';
import { contextWindow, type WindowSource } from '../provider/windows.js';
import { type Elision, type ElideOptions, formatBytes } from './elide.js';

/** The schema's defaults of `context.elide.*` (`lua/flemma/config/options/other.lua`). */
export const ELIDE_DEFAULTS = { keep_turns: 8, min_bytes: 4096, low_water: '70%' } as const;
/** `ELIDE_DEFAULTS.low_water` as a fraction. */
const LOW_WATER = 0.7;

/** The budget of a request, resolved, with the elision's knobs. */
export interface BudgetSettings extends ElideOptions {
  /**
   * The option as set: tokens, or a share such as `"60%"`; null when unset, which is the
   * automatic budget: the window less the reply's room (a request that would not fit at all).
   */
  setting: number | string | null;
  /** The request's `max_tokens`, which the automatic budget leaves room for. */
  reply: number;
  /** The model's context window the share was taken of. */
  window: { tokens: number; source: WindowSource };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `"60%"` as 0.6; undefined for anything else. */
function share(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d+(?:\.\d+)?)%$/.exec(value.trim());
  if (match === null) return undefined;
  const fraction = Number(match[1]) / 100;
  return fraction > 0 ? fraction : undefined;
}

function whole(value: unknown, fallback: number, min: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= min
    ? Math.floor(value)
    : fallback;
}

/**
 * The budget in tokens for `setting` (tokens, or a share of `window`); undefined when there is
 * none (unset, `false`, or not a budget).
 */
export function resolveBudget(setting: unknown, window: number): number | undefined {
  if (typeof setting === 'number') {
    return Number.isFinite(setting) && setting >= 1 ? Math.floor(setting) : undefined;
  }
  const fraction = share(setting);
  return fraction === undefined ? undefined : Math.max(1, Math.floor(window * fraction));
}

/**
 * The budget settings of a configuration for `provider` and `model` whose requests carry
 * `maxTokens`, or undefined when `context.budget` is `false` (nothing is ever elided). Unset,
 * the budget is automatic: the window less the reply's room, so that only a request that would
 * not fit the window at all is elided, where the provider would refuse it. Read defensively:
 * the host does not depend on Lua's validation for the request to go out.
 */
export function budgetSettings(
  data: ConfigData,
  provider: string,
  model: string,
  maxTokens: number,
): BudgetSettings | undefined {
  const context = isRecord(data['context']) ? data['context'] : {};
  const raw = context['budget'];
  const setting = typeof raw === 'number' || typeof raw === 'string' ? raw : null;
  if (setting === null && raw !== undefined && raw !== null) return undefined;
  const configured = context['window'];
  const window = contextWindow(
    provider,
    model,
    typeof configured === 'number' ? configured : undefined,
  );
  const budget =
    setting === null
      ? window.tokens - maxTokens >= 1
        ? window.tokens - maxTokens
        : undefined
      : resolveBudget(setting, window.tokens);
  if (budget === undefined) return undefined;
  const knobs = isRecord(context['elide']) ? context['elide'] : {};
  const lowWater = share(knobs['low_water']) ?? LOW_WATER;
  return {
    setting,
    reply: maxTokens,
    window,
    budget,
    keepTurns: whole(knobs['keep_turns'], ELIDE_DEFAULTS.keep_turns, 1),
    minBytes: whole(knobs['min_bytes'], ELIDE_DEFAULTS.min_bytes, 0),
    lowWater: Math.min(1, lowWater),
  };
}

/** The budget as `:Flemma status` shows it: `120,000 tokens (60% of the 200,000-token window)`. */
export function describeBudget(settings: BudgetSettings): string {
  const tokens = settings.budget.toLocaleString('en-US');
  if (typeof settings.setting === 'number') return `${tokens} tokens`;
  const source = settings.window.source === 'model' ? '' : `, ${settings.window.source}`;
  const window = `${settings.window.tokens.toLocaleString('en-US')}-token window${source}`;
  if (settings.setting === null) {
    return `${tokens} tokens (automatic: the ${window} less ${settings.reply.toLocaleString('en-US')} for the reply; context.budget sets one, false none)`;
  }
  return `${tokens} tokens (${settings.setting} of the ${window})`;
}

/** What a request's elision leaves to remember (`:Flemma status`): all of it but the messages. */
export type ElisionSummary = Omit<Elision, 'messages'> & {
  /** The budget was the automatic one (`context.budget` unset: the window less the reply). */
  automatic: boolean;
};

/** `elision` without its messages (a request's whole conversation is not kept for a report). */
export function summarize(elision: Elision, automatic: boolean): ElisionSummary {
  const { elided, budget, before, after, over } = elision;
  const summary: ElisionSummary = { elided, budget, before, after, automatic };
  if (over !== undefined) summary.over = over;
  return summary;
}

/** The stubs `:Flemma status` lists one by one; past them, a count and a size. */
const LISTED = 10;

/**
 * What `:Flemma status` says about the budget (`settings`, for the buffer as configured now) and
 * what the buffer's last request elided (`last`, undefined before the first request).
 */
export function budgetLines(
  settings: BudgetSettings | undefined,
  last: ElisionSummary | undefined,
): string[] {
  const number = (value: number): string => value.toLocaleString('en-US');
  const lines =
    settings === undefined
      ? ['context budget: none (context.budget = false: requests go whole)']
      : [
          `context budget: ${describeBudget(settings)}; elision spares the last ${String(settings.keepTurns)} turns and results under ${formatBytes(settings.minBytes)}, and goes down to ${String(Math.round(settings.lowWater * 100))}% of the budget`,
        ];
  if (last === undefined) {
    if (settings !== undefined) lines.push('last request: none yet in this session');
    return lines;
  }
  const size = `≈${number(last.after)} tokens of ${number(last.budget)}`;
  if (last.elided.length === 0) {
    lines.push(`last request: ${size}; nothing elided`);
  } else {
    const bytes = last.elided.reduce((sum, item) => sum + item.bytes, 0);
    lines.push(
      `last request: ${size} (≈${number(last.before)} whole); elided ${String(last.elided.length)} tool result${last.elided.length === 1 ? '' : 's'}, ${formatBytes(bytes)}:`,
    );
    for (const item of last.elided.slice(0, LISTED)) lines.push(`  ${item.stub}`);
    const more = last.elided.slice(LISTED);
    if (more.length > 0) {
      const rest = more.reduce((sum, item) => sum + item.bytes, 0);
      lines.push(`  … and ${String(more.length)} more, ${formatBytes(rest)}`);
    }
  }
  if (last.over !== undefined) lines.push(`  ! ${last.over}`);
  return lines;
}
