// A buffer's frontmatter as configuration: the operations it makes on options (from Lua's
// `flemma.opt`, or from the `"flemma"` key of a JSON frontmatter), applied over the configuration
// of the lower layers; and its other keys, which become template variables.
import { isEmptyTable, isRecord } from '../util/records.js';
import {
  type ApproveList,
  approveList,
  applyListOps,
  expandApproveList,
  type ListOp,
  presetTable,
} from '../approval/presets.js';
import { changeAllowed, type RefusedOp, trustClass } from './trust.js';

export type OpKind = 'set' | 'append' | 'prepend' | 'remove';

/** One operation on an option: `path` is canonical (aliases resolved), `line` a buffer line. */
export interface ConfigOp {
  path: string[];
  op: OpKind;
  value: unknown;
  line: number;
  /** The option's trust class, from the schema (`./trust.ts`); absent: it needs trust. */
  trust?: unknown;
}

export interface FrontmatterOps {
  ops: ConfigOp[];
  variables: Record<string, unknown>;
}

/**
 * What the frontmatter sets `tools.auto_approve` to, when it touches it; `assigned` when it
 * assigned it (rather than only editing the list it got).
 */
export type FrontmatterApproval = ({ kind: 'list'; list: ApproveList } | { kind: 'function' }) & {
  assigned: boolean;
};

export interface AppliedFrontmatter {
  config: Record<string, unknown>;
  /** Present when the frontmatter set or edited `tools.auto_approve`. */
  approval?: FrontmatterApproval;
  /** Operations not applied because the file is not trusted, in order. */
  refused: RefusedOp[];
  error?: string;
}

/** Whether the buffer's file is trusted: in a file that is not, changes that need trust are refused. */
export interface FrontmatterTrust {
  trusted: boolean;
}

/** The tools a buffer may enable (for `flemma.opt.tools` and its "did you mean"). */
export interface ToolNames {
  /** Every enabled tool, which `flemma.opt.tools` starts from when the configuration sets none. */
  enabled: readonly string[];
  has(name: string): boolean;
  suggest(name: string): string | undefined;
}

const OPERATORS: Record<string, OpKind> = {
  $set: 'set',
  $append: 'append',
  $prepend: 'prepend',
  $remove: 'remove',
};

/** The 1-based line of character offset `index` in `text`. */
function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/**
 * A JSON frontmatter (`code`; `first` is the buffer line of its first line) as operations and
 * variables (see `dataFrontmatter`).
 */
export function jsonFrontmatter(code: string, first: number): FrontmatterOps | { error: string } {
  let data: unknown;
  try {
    data = JSON.parse(code);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Newer Node versions say where ("position 12", or "line 4 column 1"); Node 20 does not.
    const position = /position (\d+)/.exec(message);
    const lineColumn = /line (\d+) column/.exec(message);
    const line =
      lineColumn !== null
        ? first + Number(lineColumn[1]) - 1
        : position !== null
          ? first + lineAt(code, Number(position[1])) - 1
          : first;
    return { error: `frontmatter line ${String(line)}: invalid JSON: ${message}` };
  }
  return dataFrontmatter(data, code, first, 'JSON', (key) => JSON.stringify(key));
}

/** The part of the `yaml` package the YAML frontmatter uses. */
export interface YamlParser {
  parse(source: string): unknown;
}

/** A YAML frontmatter, read with the `yaml` package (`parse`), like a JSON one. */
export function yamlFrontmatter(
  code: string,
  first: number,
  yaml: YamlParser,
): FrontmatterOps | { error: string } {
  let data: unknown;
  try {
    data = yaml.parse(code) ?? {};
  } catch (error) {
    const linePos = (error as { linePos?: { line: number }[] }).linePos;
    const line = linePos?.[0] === undefined ? first : first + linePos[0].line - 1;
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
    return { error: `frontmatter line ${String(line)}: invalid YAML: ${message}` };
  }
  return dataFrontmatter(data, code, first, 'YAML', (key) => `${key}:`);
}

/**
 * Decoded frontmatter data as operations and variables. Under `"flemma"`, plain values are set
 * and `{"$append": x}` (also `$prepend`, `$remove`, `$set`; `x` a value or a list of them) edit
 * list options, beside keys for the options under it; other top-level keys are template
 * variables. `keyText` is how a key is written in `code` (to find an option's line).
 */
export function dataFrontmatter(
  data: unknown,
  code: string,
  first: number,
  kind: string,
  keyText: (key: string) => string,
): FrontmatterOps | { error: string } {
  if (!isRecord(data)) {
    return { error: `frontmatter line ${String(first)}: a ${kind} frontmatter must be an object` };
  }
  const variables: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) if (key !== 'flemma') variables[key] = value;
  const settings = data['flemma'];
  if (settings === undefined) return { ops: [], variables };
  if (!isRecord(settings)) {
    return { error: `frontmatter line ${String(first)}: "flemma" must be an object of options` };
  }
  const ops: ConfigOp[] = [];
  const lineOf = (path: string[]): number => {
    // The line of the option's last key: each key is looked for after the one above it, so that
    // `base_url` of the second provider is not found at the first one's.
    let index = -1;
    for (const key of path) {
      const next = code.indexOf(keyText(key), index + 1);
      if (next < 0) break;
      index = next;
    }
    return index < 0 ? first : first + lineAt(code, index) - 1;
  };
  const walk = (value: unknown, path: string[]): string | undefined => {
    if (isRecord(value)) {
      const keys = Object.keys(value);
      const operators = keys.filter((key) => key.startsWith('$'));
      if (operators.length > 0) {
        for (const key of operators) {
          const kind = OPERATORS[key];
          if (kind === undefined) {
            return `frontmatter line ${String(lineOf(path))}: unknown operator "${key}" (use $set, $append, $prepend or $remove)`;
          }
          const operand = value[key];
          if (kind === 'set') {
            ops.push({ path, op: 'set', value: operand, line: lineOf(path) });
            continue;
          }
          for (const item of Array.isArray(operand) ? operand : [operand]) {
            ops.push({ path, op: kind, value: item, line: lineOf(path) });
          }
        }
      }
      // Operators edit this option's list; other keys are options under it
      // (`"tools": {"$remove": "bash", "max_concurrent": 1}`).
      for (const key of keys.filter((name) => !name.startsWith('$'))) {
        const problem = walk(value[key], [...path, key]);
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    ops.push({ path, op: 'set', value, line: lineOf(path) });
    return undefined;
  };
  const problem = walk(settings, []);
  if (problem !== undefined) return { error: problem };
  return { ops, variables };
}

function deepCopy<T>(value: T): T {
  return structuredClone(value);
}

/** The value at `path`, creating objects on the way. */
function parentOf(root: Record<string, unknown>, path: readonly string[]): Record<string, unknown> {
  let node = root;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (!isRecord(next)) {
      const fresh: Record<string, unknown> = {};
      node[key] = fresh;
      node = fresh;
    } else {
      node = next;
    }
  }
  return node;
}

/** A list option's items (a mixed table keeps its list under `__list`). */
function listOf(value: unknown): unknown[] {
  const list: unknown = isRecord(value) ? value['__list'] : value;
  return Array.isArray(list) ? (list as unknown[]).slice() : [];
}

function applyGenericList(list: unknown[], op: OpKind, value: unknown): unknown[] {
  if (op === 'set') return Array.isArray(value) ? (value as unknown[]).slice() : [value];
  const rest = list.filter((item) => item !== value);
  if (op === 'remove') return rest;
  return op === 'append' ? [...rest, value] : [value, ...rest];
}

/** The value at `path`, or undefined. */
function valueAt(root: Record<string, unknown>, path: readonly string[]): unknown {
  let node: unknown = root;
  for (const key of path) {
    if (!isRecord(node)) return undefined;
    node = node[key];
  }
  return node;
}

/**
 * Whether an `auto_approve` change approves nothing the lists approved before and lifts no
 * denial: compared on what they approve and deny, presets expanded. A function (or a list with a
 * function under it) is compared only with a list that approves nothing.
 */
function approvalNarrows(
  before: FrontmatterApproval,
  after: FrontmatterApproval,
  presetsConfig: unknown,
): boolean {
  if (after.kind === 'function') return false;
  const { presets } = presetTable(presetsConfig);
  const next = expandApproveList(after.list, presets);
  if (before.kind === 'function') return next.approve.size === 0;
  const old = expandApproveList(before.list, presets);
  for (const name of next.approve) if (!old.approve.has(name)) return false;
  for (const name of old.deny) if (!next.deny.has(name)) return false;
  return true;
}

/** `approvalNarrows` over a base that may not be a readable list (then nothing is allowed). */
function narrowsSafely(
  base: () => FrontmatterApproval,
  next: FrontmatterApproval,
  presets: unknown,
): boolean {
  try {
    return approvalNarrows(base(), next, presets);
  } catch {
    return false;
  }
}

/** A frontmatter being applied: the configuration so far and what the buffer sets apart. */
interface Application {
  out: Record<string, unknown>;
  refused: RefusedOp[];
  approval: FrontmatterApproval | undefined;
  enabled: string[] | undefined;
  tools: ToolNames;
  trust: FrontmatterTrust;
}

/** Whether a change of one option is allowed here; a refused one is listed. */
function allowed(state: Application, entry: ConfigOp, before: unknown, after: unknown): boolean {
  if (state.trust.trusted || changeAllowed(trustClass(entry.trust), before, after)) return true;
  state.refused.push({ key: `flemma.opt.${entry.path.join('.')}`, line: entry.line });
  return false;
}

/** `flemma.opt.tools`: the enabled tools, known names only. Answers the problem, if any. */
function applyTools(state: Application, entry: ConfigOp, where: string): string | undefined {
  const { op, value } = entry;
  const { tools } = state;
  const current = listOf(state.out['tools']);
  const start = state.enabled ?? (current.length > 0 ? (current as string[]) : [...tools.enabled]);
  const items = op === 'set' ? listOf(value) : [value];
  for (const item of items) {
    if (typeof item !== 'string' || !tools.has(item)) {
      if (op === 'remove' && typeof item === 'string' && start.includes(item)) continue;
      const guess = typeof item === 'string' ? tools.suggest(item) : undefined;
      return `${where}: unknown tool '${String(item)}' in flemma.opt.tools${guess === undefined ? '' : ` (did you mean '${guess}'?)`}`;
    }
  }
  const next = applyGenericList(start, op, op === 'set' ? items : value) as string[];
  if (allowed(state, entry, start, next)) state.enabled = next;
  return undefined;
}

/** What the buffer approves before an operation: its own list, else the configuration's. */
function approvalBase(state: Application): FrontmatterApproval {
  const configured = isRecord(state.out['tools']) ? state.out['tools']['auto_approve'] : undefined;
  return (
    state.approval ??
    (isRecord(configured) && configured['__function'] === true
      ? { kind: 'function', assigned: false }
      : {
          kind: 'list',
          assigned: false,
          list: approveList(typeof configured === 'string' ? [configured] : listOf(configured)),
        })
  );
}

/** The approval an `auto_approve` operation gives, or the problem with it. */
function nextApproval(
  state: Application,
  entry: ConfigOp,
  where: string,
): FrontmatterApproval | string {
  const { op, value } = entry;
  if (op === 'set') {
    if (isRecord(value) && value['__function'] === true)
      return { kind: 'function', assigned: true };
    try {
      const list = approveList(
        typeof value === 'string' ? [value] : value,
        'flemma.opt.tools.auto_approve',
      );
      return { kind: 'list', assigned: true, list };
    } catch (error) {
      return `${where}: ${(error as Error).message}`;
    }
  }
  const before = approvalBase(state);
  if (before.kind === 'function') {
    return state.approval === undefined
      ? `${where}: tools.auto_approve is a function in the configuration: :${op}() does not apply (assign a list instead)`
      : `${where}: flemma.opt.tools.auto_approve is a function: :${op}() does not apply`;
  }
  const listOp: ListOp = { op, item: String(value) };
  return { kind: 'list', list: applyListOps(before.list, [listOp]), assigned: before.assigned };
}

/** `flemma.opt.tools.auto_approve`: only narrowed in a file that is not trusted. */
function applyApproval(state: Application, entry: ConfigOp, where: string): string | undefined {
  const next = nextApproval(state, entry, where);
  if (typeof next === 'string') return next;
  const presets = isRecord(state.out['tools']) ? state.out['tools']['presets'] : undefined;
  if (!state.trust.trusted && !narrowsSafely(() => approvalBase(state), next, presets)) {
    state.refused.push({ key: 'flemma.opt.tools.auto_approve', line: entry.line });
    return undefined;
  }
  state.approval = next;
  return undefined;
}

/** Any other option: set, or changed as a list, in place. */
function applyOption(state: Application, entry: ConfigOp): void {
  const { path, op, value } = entry;
  const before = valueAt(state.out, path);
  const after = op === 'set' ? value : applyGenericList(listOf(before), op, value);
  if (!allowed(state, entry, before, after)) return;
  const parent = parentOf(state.out, path);
  const last = path[path.length - 1] ?? '';
  if (path.join('.') === 'tools.autopilot' && op === 'set' && typeof value === 'boolean') {
    // `autopilot = false` switches it off and keeps its other settings.
    const current = parent[last];
    parent[last] = { ...(isRecord(current) ? current : {}), enabled: value };
    return;
  }
  parent[last] = op === 'set' ? deepCopy(value) : after;
}

/**
 * Apply a frontmatter's operations over `config` (a snapshot, not changed). `flemma.opt.tools`
 * starts from the configuration's list, or every enabled tool when it sets none; names must be
 * known tools. `tools.auto_approve` keeps removals (a removed name also leaves the presets the
 * list names). The first problem is reported with its line. In a file that is not trusted, an
 * operation its option's trust class does not allow (`./trust.ts`) is left out and listed in
 * `refused`; the operations after it still apply.
 */
export function applyFrontmatter(
  config: Record<string, unknown>,
  ops: readonly ConfigOp[],
  tools: ToolNames,
  trust: FrontmatterTrust,
): AppliedFrontmatter {
  const state: Application = {
    out: deepCopy(config),
    refused: [],
    approval: undefined,
    enabled: undefined,
    tools,
    trust,
  };
  const { out, refused } = state;
  for (const entry of ops) {
    const { op, value } = entry;
    const where = `frontmatter line ${String(entry.line)}`;
    const key = entry.path.join('.');
    let error: string | undefined;
    if (key === 'tools' && (op !== 'set' || Array.isArray(value) || isEmptyTable(value))) {
      error = applyTools(state, entry, where);
    } else if (key === 'tools.auto_approve') {
      error = applyApproval(state, entry, where);
    } else {
      applyOption(state, entry);
    }
    if (error !== undefined) return { config: out, refused, error };
  }
  if (state.enabled !== undefined) {
    const section = isRecord(out['tools']) ? out['tools'] : {};
    out['tools'] = { ...section, __list: state.enabled };
  }
  const { approval } = state;
  return approval === undefined ? { config: out, refused } : { config: out, approval, refused };
}
