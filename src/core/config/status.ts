// `:Flemma status [verbose]`: a buffer's resolved settings, each with the layer that set it
// (default, setup, runtime, or the frontmatter line).
import type { ConfigOp } from './frontmatter.js';

export interface StatusInput {
  bufnr: number;
  /** The chat's file name as shown (relative), or empty for an unnamed buffer. */
  name: string;
  /** The buffer's resolved configuration (frontmatter applied). */
  config: Record<string, unknown>;
  /** Non-default options below the frontmatter, by dotted path ("setup", "runtime (…)"). */
  origins: Record<string, string>;
  ops: readonly ConfigOp[];
  /** The names of the tools a request would send. */
  tools: readonly string[];
  resolvers: readonly { name: string; priority: number; description: string }[];
  /** What the sandbox resolves to for this buffer (one line). */
  sandbox: string;
  autopilot: { state: string; iteration: number };
  /** The frontmatter's problem, if it has one. */
  problem?: string;
  /** The buffer's trust decision: `why` as `lua/flemma/config/trust.lua` answers it. */
  trust: { trusted: boolean; why: string };
  /** What the file may not do because it is not trusted: options and file references. */
  refused: readonly { what: string; line: number }[];
  /** `context.budget` and what the last request elided (`budgetLines`, src/core/context). */
  budget?: readonly string[];
  verbose: boolean;
  /** The context meter's lines (the last request against its window), when there are some. */
  context?: readonly string[];
  /** The model a request would use (the provider's default when no layer sets one). */
  model?: string;
  /** The approval policy the buffer uses (`policyLines`, src/core/approval/explain.ts). */
  policy?: readonly string[];
}

const TRUST_WORDS: Record<string, string> = {
  authored: 'trusted (written in this Neovim)',
  allowed: 'trusted (:trust)',
  untrusted: 'not trusted (:trust applies what needs trust)',
  denied: 'denied (:trust ++deny; :trust ++remove undoes it)',
  changed: 'not trusted: changed outside this Neovim since :trust (review it, then :trust)',
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The layer of option `path`: the frontmatter's last operation on it (or on a table above it, or
 * on an option below it), else the origin of it or of its nearest parent, else `default`.
 */
export function layerOf(
  path: string,
  origins: Record<string, string>,
  ops: readonly ConfigOp[],
): string {
  let line: number | undefined;
  for (const op of ops) {
    const key = op.path.join('.');
    // A list operation, or a list assigned, is about that list only; a table assigned covers
    // the options under it.
    const covers = op.op === 'set' && !Array.isArray(op.value) && path.startsWith(`${key}.`);
    if (key === path || covers || key.startsWith(`${path}.`)) line = op.line;
  }
  if (line !== undefined) return `frontmatter line ${String(line)}`;
  let probe = path;
  for (;;) {
    const origin = origins[probe];
    if (origin !== undefined) return origin;
    const dot = probe.lastIndexOf('.');
    if (dot < 0) break;
    probe = probe.slice(0, dot);
  }
  for (const key of Object.keys(origins)) if (key.startsWith(`${path}.`)) return origins[key] ?? '';
  return 'default';
}

/** Every leaf of the configuration as `[path, value]` (lists are leaves; `tools.__list` is `tools`). */
export function flatten(config: Record<string, unknown>, prefix = ''): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const key of Object.keys(config).sort()) {
    const value = config[key];
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (key === '__list') {
      out.push([prefix, value]);
    } else if (isRecord(value) && value['__function'] !== true && Object.keys(value).length > 0) {
      out.push(...flatten(value, path));
    } else {
      out.push([path, value]);
    }
  }
  return out;
}

function show(value: unknown): string {
  if (isRecord(value) && value['__function'] === true) return '<function>';
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === undefined) return 'nil';
  return JSON.stringify(value);
}

function get(config: Record<string, unknown>, path: string): unknown {
  let node: unknown = config;
  for (const key of path.split('.')) {
    if (!isRecord(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** The report's lines. */
export function statusLines(input: StatusInput): string[] {
  const { config, origins, ops } = input;
  const layer = (path: string): string => layerOf(path, origins, ops);
  const entry = (label: string, path: string, value = get(config, path)): string =>
    `${label}: ${show(value)}  (${layer(path)})`;
  const lines = [
    `Flemma status — buffer ${String(input.bufnr)}${input.name === '' ? '' : ` (${input.name})`}`,
  ];
  if (input.problem !== undefined) lines.push('', `! ${input.problem}`);
  lines.push(
    '',
    `trust: ${TRUST_WORDS[input.trust.why] ?? (input.trust.trusted ? 'trusted' : 'not trusted')}`,
  );
  if (input.refused.length > 0) {
    lines.push('refused until :trust:');
    for (const item of input.refused) lines.push(`  line ${String(item.line)}: ${item.what}`);
  }
  const provider = typeof config['provider'] === 'string' ? config['provider'] : 'anthropic';
  const model = get(config, 'model');
  lines.push(
    '',
    entry('provider', 'provider'),
    (model === undefined || model === null || model === '') && input.model !== undefined
      ? `model: ${show(input.model)}  (the provider's default)`
      : entry('model', 'model'),
  );
  if (input.context !== undefined) lines.push(...input.context);
  lines.push('', 'parameters:');
  const parameters = isRecord(config['parameters']) ? config['parameters'] : {};
  for (const [path, value] of flatten(parameters, 'parameters')) {
    const parts = path.split('.');
    // The general parameters, and the current provider's own.
    if (parts.length === 2 || parts[1] === provider) {
      if (value === undefined || value === null) continue;
      lines.push(`  ${path.slice('parameters.'.length)} = ${show(value)}  (${layer(path)})`);
    }
  }
  lines.push(
    '',
    `tools (${String(input.tools.length)}): ${input.tools.join(', ')}  (${layer('tools')})`,
  );
  if (input.policy === undefined) lines.push(entry('tools.auto_approve', 'tools.auto_approve'));
  else lines.push(...input.policy);
  lines.push('approval resolvers, in order:');
  for (const resolver of input.resolvers) {
    lines.push(`  ${String(resolver.priority).padStart(3)}  ${resolver.name}`);
  }
  const autopilot = get(config, 'tools.autopilot');
  const settings = isRecord(autopilot) ? autopilot : { enabled: autopilot !== false };
  lines.push(
    '',
    `autopilot: ${settings['enabled'] === false ? 'disabled' : 'enabled'}, max_turns ${show(settings['max_turns'] ?? 100)}, resume_delay ${show(settings['resume_delay'] ?? 0)} ms  (${layer('tools.autopilot')}); now ${input.autopilot.state}${input.autopilot.iteration > 0 ? `, turn ${String(input.autopilot.iteration)}` : ''}`,
  );
  lines.push(`sandbox: ${input.sandbox}  (${layer('sandbox.enabled')})`);
  if (input.budget !== undefined && input.budget.length > 0) lines.push('', ...input.budget);
  if (input.verbose) {
    lines.push('', 'all options:');
    for (const [path, value] of flatten(config)) {
      lines.push(`  ${path} = ${show(value)}  (${layer(path)})`);
    }
  } else {
    lines.push('', 'Every option with its layer: :Flemma status verbose');
  }
  return lines;
}
