// A user's options given as JSON (`flemma run --config FILE`, `$XDG_CONFIG_HOME/flemma/config.json`;
// docs/cli.md): the table `setup()` takes, checked against the schema and merged over the defaults
// as `lua/flemma/config/merge.lua` does (objects and maps key by key, lists and values replaced).
//
// A list beside options in one table (`tools`) is written as a JSON array (the list alone) or
// under `"__list"` beside the other keys, the way the host's snapshot carries it.
import { isRecord } from '../util/records.js';
import { checkValue, lookup, type SchemaNode } from './schema-data.js';

/** Alias keys moved to their canonical place (a copy), or the error when both are set. */
function normalize(node: SchemaNode, value: unknown, path: string): unknown {
  if (node.kind !== 'object' || !isRecord(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const [alias, target] of Object.entries(node.aliases ?? {})) {
    if (!(alias in out)) continue;
    let parent = out;
    for (const key of target.slice(0, -1)) {
      const next = parent[key];
      const fresh: Record<string, unknown> = isRecord(next) ? { ...next } : {};
      parent[key] = fresh;
      parent = fresh;
    }
    const last = target[target.length - 1] ?? alias;
    if (parent[last] !== undefined) {
      throw new Error(
        `option '${path}${alias}' is another name for '${path}${target.join('.')}': set only one of them`,
      );
    }
    parent[last] = out[alias];
    // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- a copy of plain data
    delete out[alias];
  }
  for (const [key, item] of Object.entries(out)) {
    const field = node.fields?.[key];
    if (field !== undefined) out[key] = normalize(field, item, `${path}${key}.`);
  }
  return out;
}

function merge(node: SchemaNode | undefined, base: unknown, value: unknown): unknown {
  if (value === undefined) return base;
  const objectLike = node?.kind === 'object' || node?.kind === 'map';
  if (node?.kind === 'object' && Array.isArray(value) && node.list !== undefined) {
    return { ...(isRecord(base) ? base : {}), __list: value };
  }
  if (!objectLike || !isRecord(value)) return structuredClone(value);
  const out: Record<string, unknown> = isRecord(base) ? { ...base } : {};
  for (const [key, item] of Object.entries(value)) {
    const child =
      node.kind === 'map'
        ? node.value_node
        : (node.fields?.[key] ?? (key === '__list' ? undefined : node.extra));
    out[key] = merge(child, out[key], item);
  }
  return out;
}

/**
 * `user` (parsed JSON) checked and merged over `base` (the defaults); `source` names the file in
 * an error.
 */
export function mergeUserConfig(
  base: Record<string, unknown>,
  user: unknown,
  source: string,
): { config: Record<string, unknown> } | { error: string } {
  if (!isRecord(user)) return { error: `${source}: the options must be a JSON object` };
  const root = lookup([]);
  if ('error' in root) return { error: root.error };
  let normalized: unknown;
  try {
    normalized = normalize(root.node, user, '');
  } catch (error) {
    return { error: `${source}: ${(error as Error).message}` };
  }
  const problem = checkValue(root.node, normalized, '');
  if (problem !== undefined) return { error: `${source}: ${problem}` };
  return { config: merge(root.node, base, normalized) as Record<string, unknown> };
}
