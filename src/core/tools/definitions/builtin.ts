// What the built-in file and shell tools share: an input schema in OpenAI strict mode whose first
// property is the call's `label`, a preview of `<detail>  # <label>`, and the one string field a
// call cannot go without.
import type { Preview, ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';

type Input = Record<string, unknown>;

export interface BuiltinSpec extends Omit<
  ToolDefinition,
  'inputSchema' | 'strict' | 'formatPreview'
> {
  /** Ends "A few words saying why you …": what the call does and an example label. */
  why: string;
  /** The input's properties besides `label`; strict mode makes every one of them required. */
  properties: Record<string, Record<string, unknown>>;
  /** The preview's detail, shown before the call's label. */
  detail: (input: Input) => Exclude<Preview, string>['detail'];
}

/** A built-in tool from its spec: the strict schema with `label` first, the labelled preview. */
export function builtinTool({ why, properties, detail, ...rest }: BuiltinSpec): ToolDefinition {
  const all = {
    label: { type: 'string', description: `A few words saying why you ${why}.` },
    ...properties,
  };
  return {
    ...rest,
    inputSchema: {
      type: 'object',
      properties: all,
      required: Object.keys(all).sort(),
      additionalProperties: false,
    },
    strict: true,
    formatPreview: (input) => ({ detail: detail(input), label: labelOf(input) }),
  };
}

/** A search over files (find, grep): what it differs in; the rest is `searchTool`'s. */
export interface SearchSpec extends Omit<BuiltinSpec, 'properties' | 'execute' | 'async'> {
  /** What `pattern` is, the call's one required field. */
  pattern: string;
  /** What `path` is: where to search. */
  path: string;
  /** The input's properties between `path` and `limit`. */
  filters?: Record<string, Record<string, unknown>>;
  /** What `limit` is. */
  limit: string;
  execute: (pattern: string, fields: Input, ctx: ToolContext) => Promise<ToolOutcome>;
}

/**
 * A search tool: `pattern` (required), `path`, its filters and `limit` (optional), run in the
 * background; a call without a pattern fails with "No pattern provided".
 */
export function searchTool({
  pattern,
  path,
  filters,
  limit,
  execute,
  ...rest
}: SearchSpec): ToolDefinition {
  return builtinTool({
    ...rest,
    properties: {
      pattern: { type: 'string', description: pattern },
      path: optional('string', path),
      ...filters,
      limit: optional('number', limit),
    },
    async: true,
    execute: needing('pattern', execute),
  });
}

/**
 * A property the call may leave unset: strict mode makes every property required, so an optional
 * one is written as nullable (null: the default).
 */
export function optional(
  type: 'string' | 'number',
  description: string,
): { type: [string, 'null']; description: string } {
  return { type: [type, 'null'], description };
}

/**
 * An `execute` that first takes the non-empty string field `key` from the input (a call without
 * it fails with "No <key> provided") and hands it to `run` with the input's fields.
 */
export function needing(
  key: string,
  run: (value: string, fields: Input, ctx: ToolContext) => Promise<ToolOutcome>,
): (input: unknown, ctx: ToolContext) => Promise<ToolOutcome> {
  return (input, ctx) => {
    const fields = fieldsOf(input);
    const value = stringField(fields, key);
    if (value === undefined) return Promise.resolve({ ok: false, error: `No ${key} provided` });
    return run(value, fields, ctx);
  };
}

/** Input fields as a record; anything that is not an object reads as empty. */
export function fieldsOf(input: unknown): Record<string, unknown> {
  return typeof input === 'object' && input !== null && !Array.isArray(input)
    ? (input as Record<string, unknown>)
    : {};
}

/** A string field, or undefined when absent, null, not a string, or empty. */
export function stringField(fields: Record<string, unknown>, key: string): string | undefined {
  const value = fields[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A call's `label`, for its preview (any string), or undefined. */
export function labelOf(input: Record<string, unknown>): string | undefined {
  const label = input['label'];
  return typeof label === 'string' ? label : undefined;
}

/** A string field for a preview: the string, or '' when it is not one. */
export function textOf(input: Record<string, unknown>, key: string): string {
  const value = input[key];
  return typeof value === 'string' ? value : '';
}
