// Input validation for tool calls: the model's arguments are checked against the tool's
// `inputSchema` before anything runs, and a failure becomes one readable paragraph the model can
// act on (it is sent back as the tool result).
//
// Caching: a `SchemaValidator` holds one Ajv instance and a WeakMap from the schema *object* to
// its compiled validator (or its compile error). The host makes one and shares it (declarative
// tool files are checked with it too). Compiling is the expensive part and a registered
// definition keeps the same schema object for its whole life, so identity is a cheap, exact key:
// no serializing per call, and when a tool is unregistered or replaced its schema and validator
// are garbage-collected with it. The cost: a schema mutated in place after its first use is not
// recompiled — definitions are treated as immutable once registered. Each schema is compiled
// from a copy and removed from Ajv's own (strong) cache right away, so two tools may share an
// `$id` and nothing is retained beyond the WeakMap.

import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import type { ToolDefinition } from './registry.js';

export type ValidationResult = { ok: true } | { ok: false; message: string };

type Compiled = { validate: ValidateFunction } | { error: string };

/**
 * Ajv and what it compiled. Ajv takes ~50 ms to load, more than half of the host's start-up, so
 * it is loaded with import() the first time it is needed (`load`), as the provider SDKs are.
 */
export class SchemaValidator {
  #ajv: Ajv | undefined;
  #loading: Promise<void> | undefined;
  readonly #compiled = new WeakMap<object, Compiled>();

  /** Loads Ajv; the checks below need this to have finished once. */
  load(): Promise<void> {
    this.#loading ??= import('ajv').then((mod) => {
      // The CommonJS package's exports object, whether Node or a bundle did the import.
      const exportsObject = (mod as unknown as { default: { Ajv: typeof Ajv } }).default;
      this.#ajv = new exportsObject.Ajv({
        allErrors: true,
        // Tool schemas come from users and MCP servers: unknown keywords and formats are
        // tolerated (and never logged — stdout is the RPC channel).
        strict: false,
        validateFormats: false,
        logger: false,
      });
    });
    return this.#loading;
  }

  /** `undefined` when the schema compiles, else why it does not. */
  schemaProblem(schema: Record<string, unknown>): string | undefined {
    const compiled = this.#compile(schema);
    return 'error' in compiled ? compiled.error : undefined;
  }

  /** Checks a tool call's input against the tool's schema. Never throws. */
  validateInput(def: ToolDefinition, input: unknown): ValidationResult {
    const schema: unknown = def.inputSchema;
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
      return {
        ok: false,
        message: `Tool '${def.name}' has an invalid input schema: it must be a JSON Schema object`,
      };
    }
    const compiled = this.#compile(schema as Record<string, unknown>);
    if ('error' in compiled) {
      return {
        ok: false,
        message: `Tool '${def.name}' has an invalid input schema, so its input cannot be checked: ${compiled.error}`,
      };
    }
    let valid: unknown;
    try {
      valid = compiled.validate(input);
    } catch (err) {
      // A pathological schema (e.g. a catastrophic `pattern`) can still throw at run time.
      const why = err instanceof Error ? err.message : String(err);
      return { ok: false, message: `Could not validate input for tool '${def.name}': ${why}` };
    }
    if (valid !== true && valid !== false) {
      // `$async` schemas return a promise; tool inputs are checked synchronously.
      return {
        ok: false,
        message: `Tool '${def.name}' has an invalid input schema: asynchronous ($async) schemas are not supported`,
      };
    }
    if (valid) return { ok: true };
    return {
      ok: false,
      message: `Invalid input for tool '${def.name}': ${describeErrors(compiled.validate.errors ?? [])}`,
    };
  }

  /**
   * Checks any value against a JSON Schema (configuration files, not tool inputs); the message
   * lists the problems as `validateInput` does, without a prefix.
   */
  validateValue(schema: Record<string, unknown>, value: unknown): ValidationResult {
    const compiled = this.#compile(schema);
    if ('error' in compiled) return { ok: false, message: `invalid schema: ${compiled.error}` };
    if (compiled.validate(value)) return { ok: true };
    return { ok: false, message: describeErrors(compiled.validate.errors ?? []) };
  }

  #compile(schema: Record<string, unknown>): Compiled {
    const hit = this.#compiled.get(schema);
    if (hit !== undefined) return hit;
    const ajv = this.#ajv;
    if (ajv === undefined) throw new Error('the validator is not loaded yet (call load)');
    let compiled: Compiled;
    // Draft-07 Ajv rejects a `$schema` it does not know (e.g. 2020-12 from MCP servers), and a
    // top-level `$id` would collide between tools; neither matters for validating one input.
    const body: Record<string, unknown> = { ...schema };
    delete body['$schema'];
    delete body['$id'];
    try {
      compiled = { validate: ajv.compile(body) };
    } catch (err) {
      compiled = { error: err instanceof Error ? err.message : String(err) };
    } finally {
      ajv.removeSchema(body);
    }
    this.#compiled.set(schema, compiled);
    return compiled;
  }
}

/** At most this many problems are listed; the rest are counted. */
const MAX_LISTED = 8;

function describeErrors(errors: readonly ErrorObject[]): string {
  const lines: string[] = [];
  for (const error of errors) {
    const text = describeError(error);
    if (!lines.includes(text)) lines.push(text);
  }
  if (lines.length === 0) return 'the input does not match the schema';
  const listed = lines.slice(0, MAX_LISTED).join('; ');
  const rest = lines.length - MAX_LISTED;
  return rest > 0 ? `${listed}; and ${rest} more problem${rest === 1 ? '' : 's'}` : listed;
}

function describeError(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  let message = error.message ?? `fails the '${error.keyword}' rule`;
  switch (error.keyword) {
    case 'additionalProperties':
      message = `must NOT have additional property '${String(params['additionalProperty'])}'`;
      break;
    case 'enum':
      if (Array.isArray(params['allowedValues'])) {
        message = `must be one of ${params['allowedValues'].map((v) => JSON.stringify(v)).join(', ')}`;
      }
      break;
    case 'const':
      message = `must be ${JSON.stringify(params['allowedValue'])}`;
      break;
    case 'type':
      if (Array.isArray(params['type'])) message = `must be ${params['type'].join(' or ')}`;
      break;
    default:
      break;
  }
  return error.instancePath === '' ? message : `${error.instancePath} ${message}`;
}
