// The configuration's schema and defaults as data (src/core/config/defaults.json, made from the
// Lua schema by `npm run gen:defaults`), for what reads options without Neovim (`flemma run`,
// docs/cli.md): the defaults, an option's canonical path and trust class, and the check of a
// value, as `lua/flemma/config/dsl.lua` and `lua/flemma/frontmatter.lua` do them.
//
// Decisions:
// - The checks are the schema's, less what only Lua can run: a string's Lua pattern and `valid`
//   function (`"80%"` shares) are not checked here; the host reads such values as it always does.
// - Functions cannot come from JSON: a `func` node accepts only `{"__function": true}`, which
//   the caller refuses before (a function needs Neovim).
import data from './defaults.json' with { type: 'json' };
import type { ConfigOp, OpKind } from './frontmatter.js';
import { isRecord } from '../util/records.js';
import { editDistance } from '../tools/registry.js';

export interface SchemaNode {
  readonly kind: string;
  readonly trust?: unknown;
  readonly list_trust?: unknown;
  readonly values?: readonly string[];
  readonly min?: number;
  readonly max?: number;
  readonly count?: number;
  readonly optional?: boolean;
  readonly ignore_case?: boolean;
  readonly value?: unknown;
  readonly fields?: Readonly<Record<string, SchemaNode>>;
  readonly extra?: SchemaNode;
  readonly item?: SchemaNode;
  readonly list?: SchemaNode;
  readonly value_node?: SchemaNode;
  readonly members?: readonly SchemaNode[];
  readonly aliases?: Readonly<Record<string, readonly string[]>>;
}

/** The schema's root (the build parses the data on first use; the host's start does not read it). */
function root(): SchemaNode {
  return data.schema;
}

/** A fresh copy of every default (the snapshot Lua would send before any `setup()`). */
export function schemaDefaults(): Record<string, unknown> {
  return structuredClone(data.defaults);
}

/** Names the frontmatter takes at the top beside the options' own (`lua/flemma/frontmatter.lua`). */
const TOP_ALIASES: Readonly<Record<string, readonly string[]>> = {
  cache_retention: ['parameters', 'cache_retention'],
};

/** The root of the options' schema. */
export function schemaRoot(): SchemaNode {
  return root();
}

/** Names the frontmatter takes at the top besides the root's own fields and aliases. */
export function topShortcuts(): string[] {
  return [
    ...Object.keys(TOP_ALIASES),
    ...Object.keys(root().fields?.['parameters']?.fields ?? {}).filter(
      (name) => root().fields?.[name] === undefined,
    ),
  ];
}

const MAX_EXACT = 9007199254740991;

function isList(value: unknown): value is unknown[] {
  return Array.isArray(value);
}

function show(value: unknown): string {
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  if (typeof value === 'number' || typeof value === 'boolean')
    return `${typeof value} ${String(value)}`;
  return value === null ? 'nil' : 'table';
}

/** What a node takes, in words (`one of "low", "high"`, `an integer >= 1`). */
export function describe(node: SchemaNode): string {
  switch (node.kind) {
    case 'string':
    case 'boolean':
      return `a ${node.kind}`;
    case 'integer':
    case 'number':
      return `an ${node.kind === 'integer' ? 'integer' : 'number'}${node.min === undefined ? '' : ` >= ${String(node.min)}`}${node.max === undefined ? '' : ` <= ${String(node.max)}`}`;
    case 'enum':
      return `one of ${(node.values ?? []).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'literal':
      return String(node.value);
    case 'union':
      return (node.members ?? []).map(describe).join(' or ');
    default:
      return node.kind === 'func' ? 'a function' : 'a table';
  }
}

function mismatch(node: SchemaNode, value: unknown, path: string): string {
  return `option '${path}' must be ${describe(node)}, got ${show(value)}`;
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${String(key)}]`;
  return path === '' ? key : `${path}.${key}`;
}

function within(node: SchemaNode, value: number): boolean {
  if (!Number.isFinite(value) || Math.abs(value) > MAX_EXACT) return false;
  return (
    (node.min === undefined || value >= node.min) && (node.max === undefined || value <= node.max)
  );
}

function checkScalar(node: SchemaNode, value: unknown, path: string): string | undefined {
  const kind = node.kind;
  const ok =
    (kind === 'string' && typeof value === 'string') ||
    (kind === 'boolean' && typeof value === 'boolean') ||
    (kind === 'integer' &&
      typeof value === 'number' &&
      Number.isInteger(value) &&
      within(node, value)) ||
    (kind === 'number' && typeof value === 'number' && within(node, value)) ||
    (kind === 'enum' &&
      typeof value === 'string' &&
      (node.values ?? []).some(
        (v) =>
          v === value || (node.ignore_case === true && v.toLowerCase() === value.toLowerCase()),
      )) ||
    (kind === 'literal' && value === node.value) ||
    (kind === 'func' && isRecord(value) && value['__function'] === true) ||
    (kind === 'table' && typeof value === 'object' && value !== null);
  return ok ? undefined : mismatch(node, value, path);
}

function checkObject(node: SchemaNode, value: unknown, path: string): string | undefined {
  if (isList(value)) {
    if (node.list === undefined)
      return value.length === 0 ? undefined : mismatch(node, value, path);
    return checkItems(node.list, value, path);
  }
  if (!isRecord(value)) return mismatch(node, value, path);
  for (const key of Object.keys(value).sort()) {
    const item = value[key];
    const field = node.fields?.[key];
    if (key === '__list' && node.list !== undefined && isList(item)) {
      const problem = checkItems(node.list, item, path);
      if (problem !== undefined) return problem;
    } else if (field !== undefined) {
      const problem = checkValue(field, item, join(path, key));
      if (problem !== undefined) return problem;
    } else if (node.extra !== undefined && typeof item === 'object' && item !== null) {
      const problem = checkValue(node.extra, item, join(path, key));
      if (problem !== undefined) return problem;
    } else {
      return `unknown option '${join(path, key)}'`;
    }
  }
  return undefined;
}

function checkItems(item: SchemaNode, value: readonly unknown[], path: string): string | undefined {
  for (const [index, entry] of value.entries()) {
    const problem = checkValue(item, entry, join(path, index + 1));
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** Check `value` (not undefined) against `node`: an error message naming the option, or undefined. */
export function checkValue(node: SchemaNode, value: unknown, path: string): string | undefined {
  switch (node.kind) {
    case 'list':
      if (!isList(value))
        return isRecord(value) && Object.keys(value).length === 0
          ? undefined
          : mismatch(node, value, path);
      if (node.count !== undefined && value.length !== node.count) {
        return `option '${path}' must be a list of ${String(node.count)} items, got ${String(value.length)}`;
      }
      return node.item === undefined ? undefined : checkItems(node.item, value, path);
    case 'map': {
      if (isList(value) && value.length === 0) return undefined;
      if (!isRecord(value)) return mismatch(node, value, path);
      for (const key of Object.keys(value).sort()) {
        const problem = node.value_node && checkValue(node.value_node, value[key], join(path, key));
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    case 'object':
      return checkObject(node, value, path);
    case 'union':
      if ((node.members ?? []).some((member) => checkValue(member, value, path) === undefined))
        return undefined;
      return mismatch(node, value, path);
    default:
      return checkScalar(node, value, path);
  }
}

/** The member of a union an option path goes through: its first table-like one. */
export function tableMember(node: SchemaNode): SchemaNode | undefined {
  return node.members?.find((member) => member.kind === 'object' || member.kind === 'map');
}

export interface Lookup {
  node: SchemaNode;
  canonical: string[];
  /** The deepest trust mark on the way; 'needs_trust' when none. */
  cls: unknown;
}

/** The known name closest to `name` (as `lua/flemma/util/suggest.lua` picks it), if any is close. */
function closest(name: string, node: SchemaNode): string | undefined {
  const names = [...Object.keys(node.fields ?? {}), ...Object.keys(node.aliases ?? {})].sort();
  const limit = Math.max(2, Math.floor(name.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const candidate of names) {
    const distance = editDistance(name, candidate);
    if (distance <= limit && (best === undefined || distance < best.distance)) {
      best = { name: candidate, distance };
    }
  }
  return best?.name;
}

function step(first: boolean, key: string): readonly string[] {
  if (!first) return [key];
  const alias = root().aliases?.[key] ?? TOP_ALIASES[key];
  if (alias !== undefined) return alias;
  if (
    root().fields?.[key] === undefined &&
    root().fields?.['parameters']?.fields?.[key] !== undefined
  ) {
    return ['parameters', key];
  }
  return [key];
}

/** An option path as a user writes it → its schema node, canonical path and trust class. */
export function lookup(path: readonly string[]): Lookup | { error: string } {
  let node: SchemaNode = root();
  const canonical: string[] = [];
  let cls: unknown = node.trust;
  for (const [index, key] of path.entries()) {
    for (let name of step(index === 0, key)) {
      const shown = (): string => `flemma.opt.${[...canonical, name].join('.')}`;
      if (node.kind === 'union') {
        const member = tableMember(node);
        if (member === undefined) {
          return { error: `${shown()}: flemma.opt.${canonical.join('.')} has no options under it` };
        }
        node = member;
        cls = node.trust ?? cls;
      }
      if (node.kind === 'object') {
        const alias = node.fields?.[name] === undefined ? node.aliases?.[name] : undefined;
        if (alias?.length === 1 && alias[0] !== undefined) name = alias[0];
        const guess = node.fields?.[name] === undefined ? closest(name, node) : undefined;
        const field = node.fields?.[name] ?? (guess === undefined ? node.extra : undefined);
        if (field === undefined) {
          const hint = guess === undefined ? '' : ` (did you mean '${guess}'?)`;
          return { error: `unknown option ${shown()}${hint}` };
        }
        node = field;
      } else if (node.kind === 'map' && node.value_node !== undefined) {
        node = node.value_node;
      } else {
        return { error: `unknown option ${shown()}` };
      }
      cls = node.trust ?? cls;
      canonical.push(name);
    }
  }
  return { node, canonical, cls: cls ?? 'needs_trust' };
}

/** The node that checks one item of a list option, or undefined when it is not a list. */
function listItem(node: SchemaNode): SchemaNode | undefined {
  if (node.kind === 'list') return node.item;
  if (node.kind === 'object') return node.list;
  if (node.kind === 'union') {
    for (const member of node.members ?? []) {
      const item = listItem(member);
      if (item !== undefined) return item;
    }
  }
  return undefined;
}

/** Whether every option a table assigns to an object is safe anywhere. */
function allSafe(node: SchemaNode, value: unknown, cls: unknown): boolean {
  const member =
    node.kind === 'union'
      ? (node.members?.find((m) => checkValue(m, value, '') === undefined) ?? node)
      : node;
  if (member.kind !== 'object' || !isRecord(value)) return cls === 'safe';
  return Object.entries(value).every(([key, item]) => {
    const field = member.fields?.[key];
    return field !== undefined && allSafe(field, item, field.trust ?? cls);
  });
}

function classOf(node: SchemaNode, op: OpKind, value: unknown, cls: unknown): unknown {
  const member =
    node.kind === 'union'
      ? ([...(node.members ?? [])].reverse().find((m) => m.kind === 'object') ?? node)
      : node;
  const listOp = op !== 'set' || isList(value);
  if (
    member.kind === 'object' &&
    member.list !== undefined &&
    member.list_trust !== undefined &&
    listOp
  ) {
    return member.list_trust;
  }
  if (op === 'set' && isRecord(value) && member.kind === 'object') {
    return allSafe(node, value, cls) ? 'safe' : cls;
  }
  return cls;
}

/**
 * Operations of a frontmatter read without Neovim (JSON, YAML, Lua literals) checked against the
 * schema, with canonical paths and trust classes (`check_ops` of `lua/flemma/frontmatter.lua`), or
 * the first problem with its line.
 */
export function checkOps(ops: readonly ConfigOp[]): { ops: ConfigOp[] } | { error: string } {
  const out: ConfigOp[] = [];
  for (const entry of ops) {
    const found = lookup(entry.path);
    const where = `frontmatter line ${String(entry.line)}`;
    if ('error' in found) return { error: `${where}: ${found.error}` };
    const shown = `flemma.opt.${found.canonical.join('.')}`;
    const value = entry.value === null ? undefined : entry.value;
    let problem: string | undefined;
    if (entry.op === 'set') {
      problem = value === undefined ? undefined : checkValue(found.node, value, shown);
    } else {
      const item = listItem(found.node);
      problem =
        item === undefined
          ? `${shown} is not a list: :${entry.op}() does not apply (assign it instead)`
          : checkValue(item, value, shown);
    }
    if (problem !== undefined) return { error: `${where}: ${problem}` };
    out.push({
      path: found.canonical,
      op: entry.op,
      value: entry.value,
      line: entry.line,
      trust: classOf(found.node, entry.op, value, found.cls),
    });
  }
  return { ops: out };
}
