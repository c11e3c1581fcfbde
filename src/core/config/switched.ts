// A chat's own `:Flemma switch` (docs/credentials.md, "`:Flemma switch` and presets"): the options
// it set, applied over the global configuration and under the chat's frontmatter.
import { isRecord } from '../util/records.js';

/** One option a chat's switch set: `value` null clears it (the provider's default). */
export interface SwitchedOption {
  path: readonly string[];
  value?: unknown;
}

/** `config` (not changed) with the chat's switched options applied, in order. */
export function applySwitched(
  config: Record<string, unknown>,
  switched: readonly SwitchedOption[],
): Record<string, unknown> {
  let out = config;
  for (const { path, value } of switched) out = withOption(out, path, value);
  return out;
}

/** `node` with the option at `path` set to `value` (null or absent: left out), a new object. */
function withOption(
  node: Record<string, unknown>,
  path: readonly string[],
  value: unknown,
): Record<string, unknown> {
  const [key, ...rest] = path;
  if (key === undefined) return node;
  if (rest.length > 0) {
    const child = node[key];
    return { ...node, [key]: withOption(isRecord(child) ? child : {}, rest, value) };
  }
  const others = Object.fromEntries(Object.entries(node).filter(([name]) => name !== key));
  return value === undefined || value === null ? others : { ...others, [key]: value };
}
