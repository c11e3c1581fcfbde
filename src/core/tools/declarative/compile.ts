// Turns a checked declarative definition into a `ToolDefinition` the registry holds like any
// other tool (so approval, previews, validation, middleware and truncation apply to it).
//
// Decisions (see docs/tools.md, "Declarative tools"):
// - http: Node's fetch with an AbortSignal (the call's, plus the timeout). A map body is sent as
//   JSON with `Content-Type: application/json` unless a header says otherwise. Retries (the
//   `retry` block) happen only after a network error, a timeout, a 429 or a 5xx, waiting
//   `backoff`, then twice that, and so on; a `Retry-After` of up to 60 s is honoured. A status of
//   400 or more is an error with the status and the body. Values put into `url` are
//   percent-encoded, unless the whole url is one `{{param}}`; `query` values are encoded by
//   URLSearchParams. The URL's query string never appears in a message (it may hold a key).
// - exec: the command is split into words first, then each word is rendered, so a value is one
//   argument whatever it contains; no shell is involved unless the command names one. The
//   child's environment is PATH plus `env` only. It runs through `ctx.sandbox.wrap_command`, like
//   the bash tool; stdout and stderr are merged; a non-zero exit is an error with the output.
// - file_read / file_write: the path goes through `ctx.sandbox.resolve`, so sandbox roots (and the
//   write policy) confine it; file_write then opens it with `ctx.sandbox.open_for_write`, so a
//   link swapped after that check cannot move the write elsewhere. `mode` is applied to the file
//   after writing (also when it existed); without `mkdir: true` a missing parent directory is an
//   error.
// - builtin: an alias of a registered tool. `args` are rendered (a lone `{{p}}` keeps its type)
//   and win over the alias's own parameters, which pass through to the target when it has a
//   property of the same name. The target is looked up when the alias runs, so a tool replaced
//   later (a Lua tool with a built-in's name) is the one called.

import type { ToolDefinition } from '../registry.js';
import {
  type DeclarativeSpec,
  type TemplateScope,
  inputSchemaOf,
  withDefaults,
} from './definition.js';
import { TemplateError, type RenderOptions } from './template.js';
import { type CompileOptions, type Compiled, messageOf } from './compiled.js';
import { compileHttp } from './http.js';
import { compileExec } from './exec.js';
import { compileFileRead, compileFileWrite } from './files.js';
import { compileBuiltin } from './builtin.js';

export type { CompileOptions };

/** Builds the registry definition; throws a `DeclarativeError` for a problem found at load time. */
export function compileDeclarative(
  spec: DeclarativeSpec,
  options: CompileOptions = {},
): ToolDefinition {
  const scope: TemplateScope = {
    params: spec.params.map((p) => p.name),
    allowEnv: options.allowEnv ?? [],
  };
  const render: RenderOptions = {
    allowEnv: scope.allowEnv,
    env: options.env ?? process.env,
  };
  const impl = spec.implementation;
  let compiled: Compiled;
  switch (impl.type) {
    case 'http':
      compiled = compileHttp(impl, scope, render, options);
      break;
    case 'exec':
      compiled = compileExec(impl, scope, render, options);
      break;
    case 'file_read':
      compiled = compileFileRead(impl, scope, render);
      break;
    case 'file_write':
      compiled = compileFileWrite(impl, scope, render, spec.modeSource);
      break;
    case 'builtin':
      compiled = compileBuiltin(spec, impl, scope, render, options);
      break;
  }
  const params = spec.params;
  const def: ToolDefinition = {
    name: spec.name,
    description: spec.description,
    inputSchema: inputSchemaOf(params),
    async: compiled.async,
    execute: async (input, ctx) => {
      const values = withDefaults(params, (input ?? {}) as Record<string, unknown>);
      try {
        return await compiled.execute(values, ctx);
      } catch (error) {
        if (error instanceof TemplateError)
          return { ok: false, error: `${spec.name}: ${error.message}` };
        return { ok: false, error: messageOf(error) };
      }
    },
    formatPreview: (input) => {
      try {
        return compiled.preview(withDefaults(params, input)) ?? '';
      } catch {
        // A call whose templates cannot render yet (a missing value) gets the generic summary.
        return '';
      }
    },
  };
  const fileChange = compiled.fileChange;
  if (fileChange !== undefined) {
    def.fileChange = (input) => {
      try {
        return fileChange(withDefaults(params, input));
      } catch {
        return undefined;
      }
    };
  }
  if (spec.label !== undefined) def.label = spec.label;
  if (spec.enabled !== undefined) def.enabled = spec.enabled;
  if (compiled.budgetMs !== undefined) def.timeoutSeconds = Math.ceil(compiled.budgetMs / 1000) + 5;
  return def;
}
