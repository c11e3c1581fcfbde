// The file format of declarative tools (Vega's YAML tool definitions, also accepted as JSON):
//
//   name: send_slack                 # required; letters, digits, _ . : -
//   description: Send a message      # required; what the model reads
//   params:                          # optional; the tool's input, as a list
//     - { name: channel, type: string, description: …, required: true }
//     - { name: limit, type: integer, default: 10, enum: [10, 20] }
//     - { name: tags, type: array, items: string }
//   implementation: { type: http | exec | file_read | file_write | builtin, … }
//   enabled: true                    # optional; false = offered only where a buffer names it
//   label: Post to Slack             # optional; a short human label
//
// This module checks the structure (with ajv), builds the input JSON Schema from `params`
// (`default`, `enum` and `items` are emitted, unlike Vega), and compiles every template so that
// a mistake is reported when the file loads, with the file's name.

import type { SchemaValidator } from '../validate.js';
import { TemplateError, compileTemplate, type Template } from './template.js';

export class DeclarativeError extends Error {
  override readonly name = 'DeclarativeError';
}

export const PARAM_TYPES = ['string', 'integer', 'number', 'boolean', 'array', 'object'] as const;
export type ParamType = (typeof PARAM_TYPES)[number];
export const IMPLEMENTATION_TYPES = ['http', 'exec', 'file_read', 'file_write', 'builtin'] as const;
export type ImplementationType = (typeof IMPLEMENTATION_TYPES)[number];
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;

export interface ParamDef {
  name: string;
  type: ParamType;
  description?: string;
  required: boolean;
  default?: unknown;
  enum?: unknown[];
  items?: unknown;
  properties?: Record<string, unknown>;
}

const DURATION = {
  anyOf: [
    { type: 'number', exclusiveMinimum: 0 },
    { type: 'string', pattern: '^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)\\s*$' },
  ],
};
const NAME_PATTERN = '^[A-Za-z0-9_.:-]+$';
const PARAM_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_-]*$';
const STRING_MAP = {
  type: 'object',
  additionalProperties: { type: ['string', 'number', 'boolean'] },
};

const FILE_SCHEMA = {
  type: 'object',
  required: ['name', 'description', 'implementation'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: NAME_PATTERN },
    description: { type: 'string', minLength: 1 },
    label: { type: 'string' },
    enabled: { type: 'boolean' },
    params: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'type'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: PARAM_NAME_PATTERN },
          type: { enum: [...PARAM_TYPES] },
          description: { type: 'string' },
          required: { type: 'boolean' },
          default: {},
          enum: { type: 'array', minItems: 1 },
          items: { anyOf: [{ enum: [...PARAM_TYPES] }, { type: 'object' }] },
          properties: { type: 'object' },
        },
      },
    },
    implementation: {
      type: 'object',
      required: ['type'],
      properties: { type: { enum: [...IMPLEMENTATION_TYPES] } },
    },
  },
};

/**
 * The schema of one implementation: a closed object whose `type` (already checked against the
 * known types) comes with the fields that type takes; `required` names those it cannot do without.
 */
function implementation(
  required: string[],
  properties: Record<string, unknown>,
): Record<string, unknown> {
  return {
    type: 'object',
    required: ['type', ...required],
    additionalProperties: false,
    properties: { type: {}, ...properties },
  };
}

const IMPLEMENTATION_SCHEMAS: Record<ImplementationType, Record<string, unknown>> = {
  http: implementation(['url'], {
    method: { enum: [...HTTP_METHODS] },
    url: { type: 'string', minLength: 1 },
    headers: STRING_MAP,
    query: STRING_MAP,
    body: { type: ['string', 'object', 'array'] },
    timeout: DURATION,
    retry: {
      type: 'object',
      additionalProperties: false,
      properties: { attempts: { type: 'integer', minimum: 1 }, backoff: DURATION },
    },
  }),
  exec: implementation(['command'], {
    command: {
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', minItems: 1, items: { type: 'string' } },
      ],
    },
    timeout: DURATION,
    cwd: { type: 'string' },
    env: {
      anyOf: [
        STRING_MAP,
        { type: 'array', items: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' } },
      ],
    },
  }),
  file_read: implementation([], {
    path: { type: 'string' },
    encoding: { enum: ['utf-8', 'utf8', 'base64'] },
  }),
  file_write: implementation([], {
    path: { type: 'string' },
    content: { type: 'string' },
    mode: { type: ['string', 'integer'] },
    mkdir: { type: 'boolean' },
  }),
  builtin: implementation(['function'], {
    function: { type: 'string', minLength: 1 },
    args: { type: 'object' },
  }),
};

/** A duration in ms: a number is seconds, a string has a unit (`50ms`, `30s`, `2m`, `1h`). */
export function parseDuration(value: unknown, fallbackMs: number): number {
  if (value === undefined) return fallbackMs;
  if (typeof value === 'number') return Math.round(value * 1000);
  const match =
    typeof value === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/u.exec(value) : null;
  if (match === null) throw new DeclarativeError(`invalid duration ${JSON.stringify(value)}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(match[1]) * unit);
}

/** A file mode: octal digits as a string (`"0644"`, `"0o600"`), or a number read as octal digits. */
export function parseMode(value: unknown, octalSource?: string): number {
  const text = octalSource ?? (typeof value === 'string' ? value : undefined);
  if (text === undefined) {
    throw new DeclarativeError(
      `implementation.mode: write the mode as an octal string such as "0644" (a JSON number is ambiguous)`,
    );
  }
  const match = /^(?:0o|0)?([0-7]{1,4})$/u.exec(text.trim());
  if (match === null) {
    throw new DeclarativeError(
      `implementation.mode: ${JSON.stringify(text)} is not an octal mode such as 0644`,
    );
  }
  return parseInt(match[1] ?? '0', 8);
}

/** A definition as read from a file, checked. */
export interface DeclarativeSpec {
  name: string;
  description: string;
  label?: string;
  enabled?: boolean;
  params: ParamDef[];
  implementation: Record<string, unknown> & { type: ImplementationType };
  /** For YAML files: the source text of `implementation.mode`, so that `0644` stays octal. */
  modeSource?: string;
}

/** Checks a parsed file's structure; throws a `DeclarativeError` listing the problems. */
export async function checkSpec(
  raw: unknown,
  validator: SchemaValidator,
  modeSource?: string,
): Promise<DeclarativeSpec> {
  await validator.load();
  const top = validator.validateValue(FILE_SCHEMA, raw);
  if (!top.ok) throw new DeclarativeError(dotted(top.message));
  type RawParam = Omit<ParamDef, 'required'> & { required?: boolean };
  const spec = raw as Omit<DeclarativeSpec, 'params'> & { params?: RawParam[] };
  const impl = { ...spec.implementation };
  if (typeof impl['method'] === 'string') impl['method'] = impl['method'].toUpperCase();
  const checked = validator.validateValue(IMPLEMENTATION_SCHEMAS[impl.type], impl);
  if (!checked.ok) {
    throw new DeclarativeError(
      dotted(checked.message.replace(/(^|; )\//gu, '$1/implementation/')).replace(
        /^(?!implementation)/u,
        'implementation: ',
      ),
    );
  }
  const params: ParamDef[] = (spec.params ?? []).map((p) => ({
    ...p,
    required: p.required === true,
  }));
  const seen = new Set<string>();
  for (const p of params) {
    if (seen.has(p.name)) throw new DeclarativeError(`params: '${p.name}' is declared twice`);
    seen.add(p.name);
    if (p.items !== undefined && p.type !== 'array') {
      throw new DeclarativeError(`params: '${p.name}' has items but is not an array`);
    }
  }
  const out: DeclarativeSpec = {
    name: spec.name,
    description: spec.description,
    params,
    implementation: impl,
  };
  if (spec.label !== undefined) out.label = spec.label;
  if (spec.enabled !== undefined) out.enabled = spec.enabled;
  if (modeSource !== undefined) out.modeSource = modeSource;
  return out;
}

/** Ajv's `/params/0/type` as `params[0].type`, at the start of each listed problem. */
function dotted(message: string): string {
  return message.replace(/(^|; )\/(\S+)/gu, (_all, lead: string, path: string) => {
    const parts = path.split('/').map((part) => (/^\d+$/u.test(part) ? `[${part}]` : `.${part}`));
    return lead + parts.join('').replace(/^\./u, '');
  });
}

/** The input JSON Schema of a parameter list. */
export function inputSchemaOf(params: readonly ParamDef[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const p of params) {
    const prop: Record<string, unknown> = { type: p.type };
    if (p.description !== undefined) prop['description'] = p.description;
    if (p.default !== undefined) prop['default'] = p.default;
    if (p.enum !== undefined) prop['enum'] = p.enum;
    if (p.items !== undefined)
      prop['items'] = typeof p.items === 'string' ? { type: p.items } : p.items;
    if (p.properties !== undefined) prop['properties'] = p.properties;
    properties[p.name] = prop;
  }
  const required = params.filter((p) => p.required).map((p) => p.name);
  const schema: Record<string, unknown> = { type: 'object', properties };
  if (required.length > 0) schema['required'] = required;
  schema['additionalProperties'] = false;
  return schema;
}

/** The input with each absent parameter's `default` filled in. */
export function withDefaults(
  params: readonly ParamDef[],
  input: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...input };
  for (const p of params) {
    if ((out[p.name] === undefined || out[p.name] === null) && p.default !== undefined) {
      out[p.name] = structuredClone(p.default);
    }
  }
  return out;
}

/** What a template may name: the declared parameters and the allowed environment variables. */
export interface TemplateScope {
  params: readonly string[];
  allowEnv: readonly string[];
}

/** Compiles `source` for the field `where`, checking the names it uses against `scope`. */
export function templateAt(where: string, source: string, scope: TemplateScope): Template {
  let template: Template;
  try {
    template = compileTemplate(source);
  } catch (error) {
    if (error instanceof TemplateError) throw new DeclarativeError(`${where}: ${error.message}`);
    throw error;
  }
  for (const name of template.params) {
    if (!scope.params.includes(name)) {
      const declared = scope.params.length === 0 ? 'none' : scope.params.join(', ');
      throw new DeclarativeError(
        `${where}: unknown parameter '${name}' in ${JSON.stringify(source)} (declared: ${declared})`,
      );
    }
  }
  for (const name of template.env) {
    if (!scope.allowEnv.includes(name)) {
      throw new DeclarativeError(
        `${where}: env var ${name} not allowed (add it to tools.declarative.env to let tool definitions read it)`,
      );
    }
  }
  return template;
}

/** A JSON value whose strings are templates, compiled. */
export type TemplateTree =
  | { kind: 'template'; template: Template }
  | { kind: 'object'; entries: [string, TemplateTree][] }
  | { kind: 'array'; items: TemplateTree[] }
  | { kind: 'literal'; value: unknown };

export function compileTree(where: string, value: unknown, scope: TemplateScope): TemplateTree {
  if (typeof value === 'string')
    return { kind: 'template', template: templateAt(where, value, scope) };
  if (Array.isArray(value)) {
    return {
      kind: 'array',
      items: value.map((v, i) => compileTree(`${where}[${String(i)}]`, v, scope)),
    };
  }
  if (typeof value === 'object' && value !== null) {
    return {
      kind: 'object',
      entries: Object.entries(value as Record<string, unknown>).map(([k, v]) => [
        k,
        compileTree(`${where}.${k}`, v, scope),
      ]),
    };
  }
  return { kind: 'literal', value };
}

const OMIT = Symbol('omit');

/**
 * Renders a tree. A string that is exactly one `{{p}}` keeps `p`'s JSON type (a number stays a
 * number); when `p` has no value and no default, the entry (or array item) is left out, so an
 * optional parameter the model did not give simply does not appear.
 */
export function renderTree(
  tree: TemplateTree,
  values: Readonly<Record<string, unknown>>,
  options: Parameters<Template['render']>[1],
): unknown {
  const out = renderNode(tree, values, options);
  return out === OMIT ? undefined : out;
}

function renderNode(
  tree: TemplateTree,
  values: Readonly<Record<string, unknown>>,
  options: Parameters<Template['render']>[1],
): unknown {
  switch (tree.kind) {
    case 'literal':
      return tree.value;
    case 'array':
      return tree.items.map((t) => renderNode(t, values, options)).filter((v) => v !== OMIT);
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, t] of tree.entries) {
        const v = renderNode(t, values, options);
        if (v !== OMIT) out[key] = v;
      }
      return out;
    }
    case 'template': {
      const single = tree.template.single;
      if (single !== undefined) {
        const value = values[single.name];
        if (value !== undefined && value !== null) return value;
        if (single.fallback === undefined) return OMIT;
      }
      return tree.template.render(values, options);
    }
  }
}
