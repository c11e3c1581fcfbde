// The tool registry: the set of tools a host can offer to the model, keyed by internal name.
// It stores definitions, answers look-ups, and turns the enabled (or explicitly selected) tools
// into provider `ToolSpec`s in a byte-stable form: sorted by name, schemas with `properties`
// keys and `required` entries sorted.

import type { ToolSpec } from '../provider/types.js';

import type { ExecutionContext } from './context.js';
import { apiToolName } from './names.js';
import type { ToolPolicyConfig } from './policy.js';

/** What a tool's `execute` receives besides its input (docs/tools.md, "The ExecutionContext"). */
export type ToolContext = ExecutionContext;

/** The result of running a tool. A thrown error is normalised to `{ ok: false }` by the caller. */
export type ToolOutcome =
  | { ok: true; output: string | Record<string, unknown> }
  | {
      ok: false;
      error: string;
      partialOutput?: string;
      /** The failure is transient: the retry middleware may run the call again. */
      retryable?: boolean;
    };

/**
 * What a preview formatter returns: a plain string (the whole summary after `name: `), or parts
 * that the renderer joins as `<detail>  # <label>`; `detail` may be a list joined by two spaces.
 */
export type PreviewParts = { label?: string | undefined; detail?: string | string[] | undefined };
export type Preview = string | PreviewParts;

export interface ToolDefinition {
  /** Internal name: `[A-Za-z0-9_.:-]+` (e.g. `calculator`, `file.read`, `mcp:slack:post`). */
  name: string;
  description: string;
  /** JSON Schema of the input (an object schema). */
  inputSchema: Record<string, unknown>;
  /** OpenAI strict mode; the schema must then list every property in `required`. */
  strict?: boolean;
  /** A short human label for previews and notifications. */
  label?: string;
  execute?: (input: unknown, ctx: ToolContext) => Promise<ToolOutcome>;
  /** A one-line summary of a call for the placeholder preview; `maxLength` excludes `name: `. */
  formatPreview?: (input: Record<string, unknown>, maxLength: number) => Preview;
  /**
   * The one whole file a call would write, for the `+N −M` of its preview (a declarative
   * `file_write`); undefined when the input does not say yet. Never shown, only counted.
   */
  fileChange?: (input: Record<string, unknown>) => { path: string; content: string } | undefined;
  /** The tool may run for a while (shell, search): shown with a spinner, cancellable. */
  async?: boolean;
  /** `false` = registered but only offered when a buffer selects it by name. Default `true`. */
  enabled?: boolean;
  /**
   * How long the tool may take, in seconds, when it knows better than `tools.default_timeout`
   * (a declarative tool's own timeout and retries); `tools.<name>.timeout` still wins.
   */
  timeoutSeconds?: number;
  /** The tool is safe to run without asking when the sandbox is active. */
  canAutoApproveIfSandboxed?: boolean;
  /**
   * The tool's results may reference files that are read into the request (Flemma's
   * `template_tool_result` capability: `read` answers an image as `@./shot.png;type=image/png`).
   * Every other tool's result is sent as written, so that its output cannot pull files in.
   */
  templateToolResult?: boolean;
  /**
   * What a personality says about the tool, by personality name (`coding-assistant`): a one-line
   * `snippet` for its tool list and `guidelines` for its guidelines section.
   */
  personalities?: Record<string, PersonalityPart>;
  /**
   * Other names a tool policy may match the tool by (Flynn-style `file.read` for `read`); they are
   * not names the model can call.
   */
  aliases?: string[];
  /** Policy groups the tool belongs to besides the built-in membership (`fs`, `web`, …). */
  groups?: string[];
  /** The `conservative` autonomy level always asks before running it (writes, shells). */
  dangerous?: boolean;
  /**
   * Text about the tool for the system prompt (CodeCompanion's `system_prompt`): appended once,
   * byte-stable, while the tool is offered; in XML tool calling it is the tool's whole description.
   */
  systemPrompt?: string;
  /**
   * The tool's own approval default (CodeCompanion's `opts.requires_approval`), asked by the
   * `urn:flemma:approval:tool-default` resolver at priority 10: `true` → require approval, `false`
   * → approve, a function → its answer (truthy → require approval). Higher resolvers win.
   */
  requireApproval?: boolean | ((input: unknown, ctx: ApprovalCallContext) => unknown);
  /**
   * The error text the model gets when the user rejects a call (CodeCompanion's
   * `output.rejected`); `reason` is what the user typed into the rejected placeholder.
   */
  formatRejected?: (reason: string, input: unknown, ctx: ApprovalCallContext) => unknown;
  /**
   * "Always" approvals of this tool are remembered per command string rather than for the whole
   * tool (CodeCompanion's `opts.require_cmd_approval`; the built-in `bash`).
   */
  requireCmdApproval?: boolean;
  /** YOLO mode does not approve this tool (CodeCompanion's `allowed_in_yolo_mode = false`). */
  neverAutoApprove?: boolean;
  /** The command a call runs, as the user reads it (CodeCompanion's `output.cmd_string`). */
  cmdString?: (input: unknown, ctx: ApprovalCallContext) => unknown;
  /**
   * The error text the model gets when the user cancels the call (CodeCompanion's
   * `output.cancelled`); default `The user cancelled the execution of the <name> tool`.
   */
  formatCancelled?: (input: unknown, ctx: ApprovalCallContext) => unknown;
}

/** What a tool's approval default and rejection formatter learn about the call. */
export interface ApprovalCallContext {
  bufnr: number;
  toolId: string;
}

export interface PersonalityPart {
  snippet?: string;
  guidelines?: string[];
}

const NAME_PATTERN = /^[A-Za-z0-9_.:-]+$/;

export class ToolRegistryError extends Error {
  override readonly name = 'ToolRegistryError';
}

interface Entry {
  def: ToolDefinition;
  spec: ToolSpec;
  /** The provider-safe name (see names.ts). */
  api: string;
}

export class ToolRegistry {
  readonly #entries = new Map<string, Entry>();
  /** API name → canonical name. */
  readonly #byApi = new Map<string, string>();
  /** The policy set through the registry API, beneath the configuration's `tools.policy`. */
  #policy: ToolPolicyConfig | undefined;

  setPolicy(policy: ToolPolicyConfig | undefined): void {
    this.#policy = policy === undefined ? undefined : structuredClone(policy);
  }

  getPolicy(): ToolPolicyConfig | undefined {
    return this.#policy === undefined ? undefined : structuredClone(this.#policy);
  }

  /**
   * Adds a tool; a tool registered under the same name is replaced (a Lua tool may override a
   * built-in). Throws on a bad definition, and when another tool already has its API name.
   */
  register(def: ToolDefinition): void {
    checkDefinition(def);
    const api = apiToolName(def.name);
    const holder = this.#byApi.get(api);
    if (holder !== undefined && holder !== def.name) {
      throw new ToolRegistryError(
        `API name collision: ${api} (tool '${def.name}' and tool '${holder}' would both be sent to the model as '${api}'; rename one)`,
      );
    }
    this.#entries.set(def.name, { def, spec: toSpec(def), api });
    this.#byApi.set(api, def.name);
  }

  /** Like `register`, but a tool of the same name is an error (the Flynn registry contract). */
  add(def: ToolDefinition): void {
    const raw = def as unknown as Record<string, unknown>;
    if (typeof raw['name'] === 'string' && this.#entries.has(raw['name'])) {
      throw new ToolRegistryError(`Tool '${raw['name']}' is already registered`);
    }
    this.register(def);
  }

  /** Removes a tool; `false` when no tool had that name. */
  unregister(name: string): boolean {
    const entry = this.#entries.get(name);
    if (entry === undefined) return false;
    this.#byApi.delete(entry.api);
    return this.#entries.delete(name);
  }

  get(name: string): ToolDefinition | undefined {
    return this.#entries.get(name)?.def;
  }

  /** The tool a provider's name stands for (`file_read` → `file.read`). */
  getByApiName(api: string): ToolDefinition | undefined {
    const name = this.#byApi.get(api);
    return name === undefined ? undefined : this.#entries.get(name)?.def;
  }

  /** The name sent to providers for a canonical name (registered or not). */
  apiName(name: string): string {
    return this.#entries.get(name)?.api ?? apiToolName(name);
  }

  /**
   * The canonical name of a name found in a reply or a `.chat` file: a registered canonical name
   * as it is, else the tool whose API name it is, else the name unchanged.
   */
  canonicalName(name: string): string {
    if (this.#entries.has(name)) return name;
    return this.#byApi.get(name) ?? name;
  }

  /** A tool by canonical name, else by API name. */
  resolve(name: string): ToolDefinition | undefined {
    return this.get(name) ?? this.getByApiName(name);
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  count(): number {
    return this.#entries.size;
  }

  /** Every registered tool (enabled or not), sorted by name. */
  list(): ToolDefinition[] {
    return this.#sortedEntries().map((e) => e.def);
  }

  /**
   * The tools to offer the model, sorted by name. Without `names`: every enabled tool. With
   * `names`: exactly the named tools that are registered (disabled ones included, unknown names
   * ignored, duplicates collapsed).
   */
  specs(names?: readonly string[]): ToolSpec[] {
    if (names === undefined) {
      return this.#sortedEntries()
        .filter((e) => e.def.enabled !== false)
        .map((e) => e.spec);
    }
    const wanted = new Set(names);
    return this.#sortedEntries()
      .filter((e) => wanted.has(e.def.name))
      .map((e) => e.spec);
  }

  /**
   * "Did you mean …?" for an unknown tool name: the closest registered name by edit distance
   * (case-insensitive), when it is close enough to be a plausible typo. `undefined` when the name
   * is registered or nothing is close.
   */
  suggest(name: string): string | undefined {
    if (this.#entries.has(name)) return undefined;
    const query = name.toLowerCase();
    let best: { name: string; distance: number } | undefined;
    for (const candidate of [...this.#entries.keys()].sort(compareNames)) {
      const lower = candidate.toLowerCase();
      const distance = editDistance(query, lower);
      const limit = Math.max(1, Math.floor(Math.max(query.length, lower.length) / 3));
      const close =
        distance <= limit ||
        // A qualified name asked for by its last segment (`post` → `mcp:slack:post`).
        (query.length >= 3 && lastSegment(lower) === query);
      if (!close) continue;
      if (best === undefined || distance < best.distance) best = { name: candidate, distance };
    }
    return best?.name;
  }

  #sortedEntries(): Entry[] {
    return [...this.#entries.values()].sort((a, b) => compareNames(a.def.name, b.def.name));
  }
}

/** Code-unit order, so the result does not depend on the locale. */
function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function lastSegment(name: string): string {
  const parts = name.split(/[:.]/);
  return parts[parts.length - 1] ?? name;
}

function checkDefinition(def: ToolDefinition): void {
  // The values come from user configuration too, so the static types are not trusted here.
  const raw = def as unknown as Record<string, unknown>;
  const name = raw['name'];
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    const shown = typeof name === 'string' ? `'${name}'` : String(name);
    throw new ToolRegistryError(
      `Invalid tool name ${shown}: a tool name must be non-empty and use only letters, digits, '_', '.', ':' and '-'`,
    );
  }
  if (typeof raw['description'] !== 'string') {
    throw new ToolRegistryError(`Tool '${name}': description must be a string`);
  }
  const schema = raw['inputSchema'];
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new ToolRegistryError(`Tool '${name}': inputSchema must be a JSON Schema object`);
  }
  if (raw['execute'] !== undefined && typeof raw['execute'] !== 'function') {
    throw new ToolRegistryError(`Tool '${name}': execute must be a function`);
  }
}

/** A definition as it is offered (the schema in its byte-stable form). */
export function toSpec(def: ToolDefinition): ToolSpec {
  const spec: ToolSpec = {
    name: def.name,
    description: def.description,
    inputSchema: canonicalSchema(def.inputSchema) as Record<string, unknown>,
  };
  if (def.strict !== undefined) spec.strict = def.strict;
  return spec;
}

/**
 * A deep copy of a JSON Schema with every `properties` map's keys and every `required` list
 * sorted, so the serialized request is byte-stable whatever order the author used. Other keys
 * keep their order (the JSON body serializer sorts those).
 */
export function canonicalSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(canonicalSchema);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === 'properties' && isPlainObject(value)) {
      const props: Record<string, unknown> = {};
      for (const prop of Object.keys(value).sort(compareNames)) {
        props[prop] = canonicalSchema(value[prop]);
      }
      out[key] = props;
    } else if (
      key === 'required' &&
      Array.isArray(value) &&
      value.every((v) => typeof v === 'string')
    ) {
      out[key] = [...value].sort(compareNames);
    } else {
      out[key] = canonicalSchema(value);
    }
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Edit distance counting insertions, deletions, substitutions and swaps of two adjacent
 * characters (optimal string alignment), so `raed` is one edit from `read`.
 */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (before[j - 2] ?? 0) + 1);
      }
      cur[j] = best;
    }
    before = prev;
    prev = cur;
  }
  return prev[b.length] ?? 0;
}
