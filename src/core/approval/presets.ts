// Approval presets (docs/approval.md, "Presets") and the expansion of an `auto_approve` list into
// the tools it approves and denies.
//
// Decisions (docs/approval.md, "Presets"):
// - Built-ins: `$readonly` approves read, ls, grep, find; `$default` approves read, ls, grep, find,
//   write, edit. Flemma 0.11 named only `read` for `$readonly` (it predates the search
//   tools); this project's built-in ls/grep/find never write, so they belong in "read-only access".
// - `$default` lists its tools itself instead of naming `$readonly`: it lists plain tools, and a user who redefines `$readonly` (say, to `read` only) should not silently change
//   what `$default` approves.
// - A user preset (`tools.presets`) replaces the built-in of the same name whole; nothing is
//   merged. Preset names must match `$[A-Za-z0-9_-]+` (as the config schema checks); other keys,
//   values that are not tables, unknown keys and non-string entries are ignored with a warning.
// - A preset may name other presets in its `approve` and `deny` lists, to any depth. A cycle is
//   cut where it closes (and warned about), so `$a → $b → $a` expands `$a` and `$b` once each.
//   A preset named in a `deny` list denies everything it would approve or deny.
// - Composition within one list: approvals and denials of every entry are unioned; deny wins over
//   approve; a plain tool name approves that tool. Across resolvers there is no deny-wins: the
//   chain's priority order decides.
// - Removal: a list is `{ items, removed }`. `auto_approve:remove("write")` on `{ "$default" }`
//   keeps `$default` in `items` and puts `write` in `removed`; expansion drops removed names from
//   what the list approves. Removal never lifts a denial (removing is asking for less, and
//   dropping a deny would let lower resolvers approve the tool). A removed `$preset` is not
//   expanded on the approve side, even where another preset names it.
// - An unknown preset name matches nothing and produces a warning with a did-you-mean suggestion
//   (edit distance at most max(2, ⌊length / 3⌋), ties alphabetical — as the config schema does).

import { isEmptyTable, isRecord } from '../util/records.js';
import { editDistance } from '../tools/registry.js';

export interface Preset {
  approve: readonly string[];
  deny: readonly string[];
}

const READONLY_TOOLS = ['read', 'ls', 'grep', 'find'] as const;

export const BUILTIN_PRESETS: Readonly<Record<string, Preset>> = Object.freeze({
  $readonly: Object.freeze({
    approve: Object.freeze([...READONLY_TOOLS]),
    deny: Object.freeze([]),
  }),
  $default: Object.freeze({
    approve: Object.freeze([...READONLY_TOOLS, 'write', 'edit']),
    deny: Object.freeze([]),
  }),
});

export const PRESET_NAME = /^\$[A-Za-z0-9_-]+$/;

export function isPresetReference(name: string): boolean {
  return name.startsWith('$');
}

export interface PresetTable {
  presets: ReadonlyMap<string, Preset>;
  /** Problems in the user's `tools.presets`; the offending parts were ignored. */
  warnings: string[];
}

function stringList(value: unknown, where: string, warnings: string[]): string[] {
  if (value === undefined || value === null || isEmptyTable(value)) return [];
  if (!Array.isArray(value)) {
    warnings.push(`${where} must be a list of names; ignored`);
    return [];
  }
  const out: string[] = [];
  value.forEach((item: unknown, index) => {
    if (typeof item === 'string' && item !== '') out.push(item);
    else warnings.push(`${where}[${index + 1}] must be a tool or preset name; ignored`);
  });
  return out;
}

/** The presets in effect: the built-ins, replaced by name by the user's `tools.presets`. */
export function presetTable(user: unknown): PresetTable {
  const presets = new Map<string, Preset>(Object.entries(BUILTIN_PRESETS));
  const warnings: string[] = [];
  if (user === undefined || user === null || isEmptyTable(user)) return { presets, warnings };
  if (!isRecord(user)) {
    warnings.push('tools.presets must be a table of presets by name; ignored');
    return { presets, warnings };
  }
  for (const name of Object.keys(user).sort()) {
    const raw = user[name];
    const where = `tools.presets["${name}"]`;
    if (!PRESET_NAME.test(name)) {
      warnings.push(`${where}: a preset name starts with '$' (letters, digits, _ or -); ignored`);
      continue;
    }
    if (!isRecord(raw) && !isEmptyTable(raw)) {
      warnings.push(`${where} must be a table with 'approve' and/or 'deny' lists; ignored`);
      continue;
    }
    const record = isRecord(raw) ? raw : {};
    for (const key of Object.keys(record)) {
      if (key !== 'approve' && key !== 'deny') warnings.push(`${where}: unknown key '${key}'`);
    }
    presets.set(name, {
      approve: stringList(record['approve'], `${where}.approve`, warnings),
      deny: stringList(record['deny'], `${where}.deny`, warnings),
    });
  }
  return { presets, warnings };
}

/** "Did you mean" for an unknown preset name: the closest defined one, if close enough. */
export function suggestPreset(
  name: string,
  presets: ReadonlyMap<string, Preset>,
): string | undefined {
  const query = name.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const candidate of [...presets.keys()].sort()) {
    const distance = editDistance(query, candidate.toLowerCase());
    const limit = Math.max(2, Math.floor(Math.max(query.length, candidate.length) / 3));
    if (distance > limit) continue;
    if (best === undefined || distance < best.distance) best = { name: candidate, distance };
  }
  return best?.name;
}

/** An `auto_approve` list: its entries (tool and preset names), and names removed from it. */
export interface ApproveList {
  items: readonly string[];
  removed: readonly string[];
}

/**
 * An `ApproveList` from plain configuration: a list of names (no removals), or an
 * `{ items, removed }` table. Throws a `TypeError` naming the problem for anything else.
 */
export function approveList(value: unknown, where = 'tools.auto_approve'): ApproveList {
  const strings = (raw: unknown, at: string): string[] => {
    if (raw === undefined || raw === null || isEmptyTable(raw)) return [];
    if (!Array.isArray(raw)) throw new TypeError(`${at} must be a list of names`);
    return raw.map((item: unknown, index) => {
      if (typeof item !== 'string' || item === '') {
        throw new TypeError(`${at}[${index + 1}] must be a tool or preset name`);
      }
      return item;
    });
  };
  if (Array.isArray(value) || isEmptyTable(value))
    return { items: strings(value, where), removed: [] };
  if (isRecord(value) && ('items' in value || 'removed' in value)) {
    return {
      items: strings(value['items'], `${where}.items`),
      removed: strings(value['removed'], `${where}.removed`),
    };
  }
  throw new TypeError(`${where} must be a list of tool and preset names`);
}

/** A list operation, as the config store records them (`set`, `:append`, `:prepend`, `:remove`). */
export type ListOp =
  { op: 'set'; items: readonly string[] } | { op: 'append' | 'prepend' | 'remove'; item: string };

/**
 * Applies operations to a list in order. `set` replaces the items and forgets removals;
 * `append`/`prepend` add the name (moving it if present) and cancel an earlier removal of it;
 * `remove` drops the name from the items and records it, so that expansion also filters it out of
 * the presets the list names.
 */
export function applyListOps(base: ApproveList, ops: readonly ListOp[]): ApproveList {
  let items = [...base.items];
  let removed = [...base.removed];
  for (const op of ops) {
    if (op.op === 'set') {
      items = [...op.items];
      removed = [];
      continue;
    }
    const name = op.item;
    items = items.filter((item) => item !== name);
    if (op.op === 'remove') {
      if (!removed.includes(name)) removed.push(name);
      continue;
    }
    removed = removed.filter((item) => item !== name);
    if (op.op === 'append') items.push(name);
    else items.unshift(name);
  }
  return { items, removed };
}

export interface Expansion {
  approve: ReadonlySet<string>;
  deny: ReadonlySet<string>;
  /** Unknown presets and cycles; the list still expands without them. */
  warnings: string[];
}

/** What a list approves and denies (deny wins; removals applied). */
export function expandApproveList(
  list: ApproveList,
  presets: ReadonlyMap<string, Preset>,
  where = 'tools.auto_approve',
): Expansion {
  const approve = new Set<string>();
  const deny = new Set<string>();
  const warnings: string[] = [];
  const removed = new Set(list.removed);
  const warn = (message: string): void => {
    if (!warnings.includes(message)) warnings.push(message);
  };
  const visit = (name: string, side: 'approve' | 'deny', path: readonly string[]): void => {
    if (!isPresetReference(name)) {
      (side === 'approve' ? approve : deny).add(name);
      return;
    }
    if (side === 'approve' && removed.has(name)) return;
    if (path.includes(name)) {
      warn(`${where}: approval presets form a cycle (${[...path, name].join(' → ')}); cut there`);
      return;
    }
    const preset = presets.get(name);
    if (preset === undefined) {
      const suggestion = suggestPreset(name, presets);
      warn(
        `${where}: unknown approval preset '${name}'` +
          (suggestion === undefined ? '' : ` (did you mean '${suggestion}'?)`) +
          '; it matches nothing',
      );
      return;
    }
    const inner = [...path, name];
    for (const item of preset.approve) visit(item, side, inner);
    for (const item of preset.deny) visit(item, 'deny', inner);
  };
  for (const item of list.items) visit(item, 'approve', []);
  for (const name of removed) approve.delete(name);
  for (const name of deny) approve.delete(name);
  return { approve, deny, warnings };
}

/** The list's answer for one tool: `deny`, `approve`, or `undefined` to pass. */
export function listDecision(
  expansion: Expansion,
  toolName: string,
): 'approve' | 'deny' | undefined {
  if (expansion.deny.has(toolName)) return 'deny';
  if (expansion.approve.has(toolName)) return 'approve';
  return undefined;
}
