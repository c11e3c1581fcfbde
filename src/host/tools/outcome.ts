// What a tool returns, in the forms the tool sources use, as the executor's `ToolOutcome`: Lua's
// and the `{ success, output, error }` of docs/tools.md ("Lua"), the internal `{ ok, … }`, or a bare value.
import type { ToolOutcome } from '../../core/tools/registry.js';
import type { LuaToolResult } from '../../editor/protocol/wire.js';

/** A tool's answer as Lua (or a JavaScript tool in the Lua style) gives it. */
export type LuaResult = LuaToolResult;

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Partial output as text. */
export function renderPartial(output: string | Record<string, unknown>): string {
  return typeof output === 'string' ? output : JSON.stringify(output);
}

/** Text for a thrown value or a scalar: an Error's message, else the value as text or JSON. */
export function describeError(value: unknown): string {
  if (value instanceof Error) return value.message;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  if (typeof value !== 'object') return Object.prototype.toString.call(value);
  try {
    return JSON.stringify(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** `{ success, output, error }` as an outcome. */
export function outcomeOf(result: LuaResult): ToolOutcome {
  const output = result.output;
  const rendered: string | Record<string, unknown> | undefined =
    output === undefined || output === null
      ? undefined
      : typeof output === 'string'
        ? output
        : typeof output === 'object'
          ? (output as Record<string, unknown>)
          : describeError(output);
  if (result.success === true) return { ok: true, output: rendered ?? '' };
  const error =
    typeof result.error === 'string' && result.error !== '' ? result.error : 'Unknown error';
  if (result.success !== false && result.error === undefined && rendered !== undefined) {
    return { ok: true, output: rendered };
  }
  const partial = rendered === undefined ? undefined : renderPartial(rendered);
  const failed: ToolOutcome =
    partial === undefined || partial === ''
      ? { ok: false, error }
      : { ok: false, error, partialOutput: partial };
  // A tool may mark its failure as transient (`retryable = true`) for the retry middleware.
  if ((result as { retryable?: unknown }).retryable === true) return { ...failed, retryable: true };
  return failed;
}

/** Accepts the Lua form `{ success, output, error }` (docs/tools.md, "Lua") as well as the internal `{ ok, … }`. */
export function normalizeOutcome(value: unknown): ToolOutcome {
  if (value === undefined || value === null) return { ok: false, error: 'Tool returned no result' };
  const record = asRecord(value);
  if (record === undefined) return { ok: true, output: describeError(value) };
  if (typeof record['ok'] === 'boolean') return value as ToolOutcome;
  return outcomeOf(record);
}
