// What `:Flemma status` and `:Flemma tool:why` say of the approval policy a buffer really uses:
// its `tools.auto_approve` (the configuration's, with the frontmatter's operations applied), where
// each part came from (the configuration's layer, a frontmatter line), what each preset expands
// to, and which resolvers the buffer's own setting puts aside (resolvers.ts: a frontmatter list
// or function makes the config and module resolvers pass; an assigned one, the sandbox's too).
import { CONFIG_RESOLVER, FRONTMATTER_RESOLVER, SANDBOX_RESOLVER } from './resolvers.js';
import { type ApproveList, approveList, expandApproveList, type Preset } from './presets.js';

/** The buffer's own `auto_approve`, as its frontmatter left it (`FrontmatterApproval`). */
export type BufferApproval = ({ kind: 'list'; list: ApproveList } | { kind: 'function' }) & {
  assigned: boolean;
};

/** One frontmatter operation on `tools.auto_approve` that was applied. */
export interface ApprovalOp {
  op: 'set' | 'append' | 'prepend' | 'remove';
  value: unknown;
  line: number;
}

export interface PolicyInput {
  /** `tools.auto_approve` of the configuration below the frontmatter, as it holds it. */
  configured: unknown;
  /** That value's layer (`default`, `setup`, `runtime (…)`). */
  layer: string;
  /** The buffer's own setting, when its frontmatter set or edited it. */
  own?: BufferApproval | undefined;
  /** The frontmatter's operations on `tools.auto_approve` that were applied, in order. */
  ops: readonly ApprovalOp[];
  presets: ReadonlyMap<string, Preset>;
  /** `tools.auto_approve_sandboxed` is not false. */
  sandboxed: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeConfigured(value: unknown): string | ApproveList {
  if (isRecord(value) && value['__function'] === true) return 'a function';
  if (typeof value === 'string') return `the module '${value}'`;
  try {
    return approveList(value);
  } catch {
    return JSON.stringify(value);
  }
}

/** Where each name of the effective list came from: the configuration, or a frontmatter line. */
function originsOf(input: PolicyInput, base: readonly string[]): Map<string, string> {
  const origins = new Map<string, string>(base.map((name) => [name, input.layer]));
  for (const { op, value, line } of input.ops) {
    const where = `frontmatter line ${String(line)}`;
    if (op === 'set') {
      origins.clear();
      const items: unknown[] = Array.isArray(value) ? value : [value];
      for (const item of items) if (typeof item === 'string') origins.set(item, where);
    } else if (op === 'remove') {
      origins.set(`-${String(value)}`, where);
    } else {
      origins.set(String(value), where);
    }
  }
  return origins;
}

/** The lines of a list: each name with its origin, a preset with what it approves and denies. */
function listLines(list: ApproveList, origins: Map<string, string>, input: PolicyInput): string[] {
  const lines: string[] = [];
  for (const item of list.items) {
    const preset = input.presets.get(item);
    let expands = '';
    if (preset !== undefined) {
      const expansion = expandApproveList({ items: [item], removed: list.removed }, input.presets);
      const approve = [...expansion.approve].join(', ');
      const deny = [...expansion.deny];
      expands = ` = ${approve === '' ? 'nothing' : approve}${deny.length > 0 ? `; denies ${deny.join(', ')}` : ''}`;
    }
    lines.push(`    ${item}  (${origins.get(item) ?? input.layer})${expands}`);
  }
  for (const name of list.removed) {
    lines.push(`    removed: ${name}  (${origins.get(`-${name}`) ?? input.layer})`);
  }
  return lines;
}

/** The resolvers the buffer's own setting puts aside, and which one decides instead. */
function replacedLine(
  own: BufferApproval,
  configured: string | ApproveList,
  input: PolicyInput,
): string {
  const replaced = [`${CONFIG_RESOLVER} (tools.auto_approve of ${input.layer})`];
  if (typeof configured === 'string' && configured.startsWith('the module')) {
    replaced.push(`the module resolver (${configured})`);
  }
  if (own.assigned && input.sandboxed) replaced.push(`${SANDBOX_RESOLVER} (sandboxed tools)`);
  const how = own.assigned ? 'assigns its own list' : 'edits the list';
  const what = own.kind === 'function' ? 'assigns its own function' : how;
  return `  the frontmatter ${what}: ${FRONTMATTER_RESOLVER} decides, in place of ${replaced.join(' and ')}`;
}

/** The policy's lines, the first one a heading. */
export function policyLines(input: PolicyInput): string[] {
  const configured = describeConfigured(input.configured);
  const own = input.own;
  const lines = ['approval policy of this buffer:'];
  if (own?.kind === 'function') {
    const line = input.ops.at(-1)?.line;
    lines.push(
      `  tools.auto_approve: a function  (frontmatter${line === undefined ? '' : ` line ${String(line)}`})`,
    );
  } else if (own?.kind !== 'list' && typeof configured === 'string') {
    lines.push(`  tools.auto_approve: ${configured}  (${input.layer})`);
  } else {
    const list = own?.kind === 'list' ? own.list : (configured as ApproveList);
    const base = typeof configured === 'string' ? [] : configured.items;
    lines.push(`  tools.auto_approve: ${JSON.stringify(list.items)}`);
    lines.push(...listLines(list, originsOf(input, base), input));
  }
  if (own !== undefined) lines.push(replacedLine(own, configured, input));
  return lines;
}

/** The frontmatter's operations on `tools.auto_approve` that were applied (not refused). */
export function approvalOps(
  ops: readonly { path: readonly string[]; op: string; value: unknown; line: number }[],
  refused: readonly { key: string; line: number }[],
): ApprovalOp[] {
  const skipped = new Set(
    refused.filter((r) => r.key === 'flemma.opt.tools.auto_approve').map((r) => r.line),
  );
  return ops
    .filter((op) => op.path.join('.') === 'tools.auto_approve' && !skipped.has(op.line))
    .filter((op): op is ApprovalOp & { path: readonly string[] } =>
      ['set', 'append', 'prepend', 'remove'].includes(op.op),
    )
    .map(({ op, value, line }) => ({ op, value, line }));
}
