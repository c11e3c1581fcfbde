// A tool subset (Vega's `Filter(names...)`): a view of a registry that offers, and runs, only
// the named tools. Used for a buffer's tool list (`flemma.opt.tools`, the `tools` option) and by
// anyone who builds an agent with fewer tools.
//
// Decisions:
// - An unknown name is an error with a "did you mean" suggestion, never silently dropped (Vega
//   drops it, so a typo leaves the agent without the tool and nobody notices).
// - The view reads the registry when asked, so a tool re-registered later (a Lua replacement of a
//   built-in) is what the view offers.
// - A name outside the subset is "not available" at execution too, not only absent from the
//   schemas: a model that calls a tool it was not offered gets an error result.

import type { ToolSpec } from '../provider/types.js';
import type { ToolDefinition, ToolRegistry } from './registry.js';

export class ToolFilterError extends Error {
  override readonly name = 'ToolFilterError';
}

export interface ToolFilter {
  readonly names: readonly string[];
  has(name: string): boolean;
  get(name: string): ToolDefinition | undefined;
  /** The schemas to send, sorted by name (byte-stable, like the registry's). */
  specs(): ToolSpec[];
  /** `undefined` when `name` may run, else the error text for the model. */
  refusal(name: string): string | undefined;
}

/** The names of `wanted` the registry does not know, each with its closest known name. */
export function unknownTools(
  registry: Pick<ToolRegistry, 'has' | 'suggest'>,
  wanted: readonly string[],
): { name: string; suggestion?: string }[] {
  const out: { name: string; suggestion?: string }[] = [];
  for (const name of wanted) {
    if (registry.has(name)) continue;
    const suggestion = registry.suggest(name);
    out.push(suggestion === undefined ? { name } : { name, suggestion });
  }
  return out;
}

export function describeUnknown(unknown: readonly { name: string; suggestion?: string }[]): string {
  return unknown
    .map(
      (u) =>
        `unknown tool '${u.name}'${u.suggestion === undefined ? '' : ` (did you mean '${u.suggestion}'?)`}`,
    )
    .join('; ');
}

export function filterTools(registry: ToolRegistry, names: readonly string[]): ToolFilter {
  const unknown = unknownTools(registry, names);
  if (unknown.length > 0) throw new ToolFilterError(`Tool filter: ${describeUnknown(unknown)}`);
  const allowed = [...new Set(names)].sort();
  const set = new Set(allowed);
  return {
    names: allowed,
    has: (name) => set.has(name) && registry.has(name),
    get: (name) => (set.has(name) ? registry.get(name) : undefined),
    specs: () => registry.specs(allowed),
    refusal: (name) => notAvailable(name, set, registry),
  };
}

/** The error for a call of a tool outside `allowed` (undefined when it is inside). */
export function notAvailable(
  name: string,
  allowed: ReadonlySet<string>,
  registry: Pick<ToolRegistry, 'has'>,
): string | undefined {
  if (allowed.has(name) && registry.has(name)) return undefined;
  const offered = [...allowed].filter((n) => registry.has(n)).sort();
  return `Tool '${name}' is not available here. The available tools are: ${offered.map((n) => `\`${n}\``).join(', ') || '(none)'}`;
}
