// The session: every completed request of this host, with its token counts, its prices and what
// it cost (docs/usage.md, "The session"). Totals feed the usage bar, the statusline and the spend cap.
import type { ReportedUsage, Usage } from '../provider/types.js';
import { type Pricing, pricingFor, requestCost, type TokenCounts, tokenCounts } from './cost.js';

/** One completed request. Prices and cost are absent when the model has no price entry. */
export interface RequestRecord extends TokenCounts {
  provider: string;
  model: string;
  input_price?: number;
  output_price?: number;
  cache_read_price?: number;
  cache_write_price?: number;
  output_has_thoughts: boolean;
  /** The chat file's real path, when it has one. */
  filepath?: string;
  bufnr: number;
  /** Unix time in seconds (with milliseconds) when the request went out and when it completed. */
  started_at: number;
  completed_at: number;
  /** USD. */
  cost?: number;
  /**
   * An agent's own figures (an ACP agent): its cost when it reported one, never a price of the
   * table; without one the cost is unknown.
   */
  reported_by?: 'agent';
}

export interface SessionTotals {
  requests: number;
  /** USD, over the requests that have a price. */
  cost: number;
  /** All input (non-cached, cache reads and cache writes). */
  input_tokens: number;
  /** Output, thinking included where the provider bills it on top. */
  output_tokens: number;
}

export interface CompletedRequest {
  provider: string;
  model: string;
  usage: Usage;
  bufnr: number;
  filepath?: string;
  /** Milliseconds since the epoch. */
  startedAt: number;
  completedAt: number;
  /** What the agent said itself (an ACP agent's turn): its cost is the record's. */
  reported?: ReportedUsage;
}

/** The record of a completed request; `pricing` defaults to the table's entry for its model. */
export function makeRecord(
  done: CompletedRequest,
  pricing: Pricing | undefined = pricingFor(done.provider, done.model),
): RequestRecord {
  const tokens = tokenCounts(done.usage);
  const record: RequestRecord = {
    provider: done.provider,
    model: done.model,
    ...tokens,
    // Without a price entry: what the provider family usually does (Gemini-style APIs report
    // thinking apart from the output).
    output_has_thoughts:
      pricing?.output_has_thoughts ?? !['gemini', 'vertex', 'moonshot'].includes(done.provider),
    bufnr: done.bufnr,
    started_at: done.startedAt / 1000,
    completed_at: done.completedAt / 1000,
  };
  if (done.filepath !== undefined) record.filepath = done.filepath;
  if (done.reported !== undefined) {
    record.reported_by = 'agent';
    if (done.reported.cost !== undefined) record.cost = done.reported.cost;
  } else if (pricing !== undefined) {
    record.input_price = pricing.input;
    record.output_price = pricing.output;
    if (pricing.cache_read !== undefined) record.cache_read_price = pricing.cache_read;
    if (pricing.cache_write !== undefined) record.cache_write_price = pricing.cache_write;
    record.cost = requestCost(tokens, pricing);
  }
  return record;
}

export class Session {
  private readonly records: RequestRecord[] = [];

  add(record: RequestRecord): void {
    this.records.push(record);
  }

  /** Every request so far, oldest first. */
  requests(): readonly RequestRecord[] {
    return this.records;
  }

  /** The latest request of a buffer. */
  last(bufnr: number): RequestRecord | undefined {
    for (let i = this.records.length - 1; i >= 0; i--) {
      const record = this.records[i];
      if (record?.bufnr === bufnr) return record;
    }
    return undefined;
  }

  totals(): SessionTotals {
    const totals: SessionTotals = { requests: 0, cost: 0, input_tokens: 0, output_tokens: 0 };
    for (const record of this.records) {
      totals.requests += 1;
      totals.cost += record.cost ?? 0;
      totals.input_tokens +=
        record.input_tokens + record.cache_read_input_tokens + record.cache_creation_input_tokens;
      totals.output_tokens +=
        record.output_tokens + (record.output_has_thoughts ? 0 : record.thoughts_tokens);
    }
    return totals;
  }
}
