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

import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';

import type { ToolContext, ToolDefinition, ToolOutcome, Preview } from '../registry.js';
import { runProcess, type RunOptions, type RunResult } from '../process.js';
import { sleep } from '../middleware.js';
import { type Backoff, backoffDelay } from '../../util/backoff.js';
import { FileReadError, TOOL_READ_LIMIT_BYTES, readBounded } from '../../util/bounded-read.js';
import { SandboxViolation } from '../sandbox/roots.js';
import { formatSize } from '../truncate.js';
import { CommandSyntaxError, displayCommand, splitCommand } from './argv.js';
import {
  DeclarativeError,
  type DeclarativeSpec,
  type TemplateScope,
  type TemplateTree,
  compileTree,
  inputSchemaOf,
  parseDuration,
  parseMode,
  renderTree,
  templateAt,
  withDefaults,
} from './definition.js';
import { TemplateError, type RenderOptions, type Template } from './template.js';

export interface CompileOptions {
  /** Environment variables templates may read with `${NAME}`. */
  allowEnv?: readonly string[];
  /** Where `${NAME}` reads from (default: the host's environment). */
  env?: Readonly<Record<string, string | undefined>>;
  /** A registered tool by name (for `builtin`); checked at load time and again at each call. */
  lookup?: (name: string) => ToolDefinition | undefined;
  /** "Did you mean" for an unknown `builtin` function. */
  suggest?: (name: string) => string | undefined;
  /** `fetch` to use (tests may pass their own; default: the global one). */
  fetch?: typeof fetch;
  /** The process runner (tests may replace it). */
  run?: (argv: readonly string[], options: RunOptions) => Promise<RunResult>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_RETRY_AFTER_MS = 60_000;

type Values = Readonly<Record<string, unknown>>;
type Execute = (values: Record<string, unknown>, ctx: ToolContext) => Promise<ToolOutcome>;
type Previewer = (values: Record<string, unknown>) => Preview | undefined;

interface Compiled {
  execute: Execute;
  preview: Previewer;
  /** The longest the implementation may take on its own (ms), for the executor's timeout. */
  budgetMs?: number;
  /** `file_write`: the path and content a call would write (rendered as when it runs). */
  fileChange?: (values: Record<string, unknown>) => { path: string; content: string };
  async: boolean;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

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

function stringMap(where: string, raw: unknown, scope: TemplateScope): [string, Template][] {
  if (raw === undefined) return [];
  return Object.entries(raw as Record<string, unknown>).map(([key, value]) => [
    key,
    templateAt(`${where}.${key}`, String(value), scope),
  ]);
}

/** Renders a map of templates; an entry that is a lone `{{p}}` without a value is left out. */
function renderMap(
  entries: readonly [string, Template][],
  values: Values,
  options: RenderOptions,
): [string, string][] {
  const out: [string, string][] = [];
  for (const [key, template] of entries) {
    const single = template.single;
    if (
      single !== undefined &&
      (values[single.name] === undefined || values[single.name] === null) &&
      single.fallback === undefined
    ) {
      continue;
    }
    out.push([key, template.render(values, options)]);
  }
  return out;
}

// --- http -------------------------------------------------------------------------------------

function compileHttp(
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
  options: CompileOptions,
): Compiled {
  const method = typeof impl['method'] === 'string' ? impl['method'] : 'GET';
  const url = templateAt('implementation.url', String(impl['url']), scope);
  const headers = stringMap('implementation.headers', impl['headers'], scope);
  const query = stringMap('implementation.query', impl['query'], scope);
  const rawBody = impl['body'];
  if (rawBody !== undefined && (method === 'GET' || method === 'HEAD')) {
    throw new DeclarativeError(`implementation.body: a ${method} request cannot have a body`);
  }
  const body: TemplateTree | undefined =
    rawBody === undefined ? undefined : compileTree('implementation.body', rawBody, scope);
  const timeoutMs = parseDuration(impl['timeout'], DEFAULT_TIMEOUT_MS);
  const retry = (impl['retry'] ?? {}) as { attempts?: number; backoff?: unknown };
  const attempts = retry.attempts ?? 1;
  const backoffMs = parseDuration(retry.backoff, 1000);
  const wholeUrl = url.single !== undefined;
  const urlOptions = (base: RenderOptions): RenderOptions =>
    wholeUrl ? base : { ...base, encode: encodeURIComponent };

  const buildUrl = (values: Values, opts: RenderOptions): URL => {
    let target: URL;
    const text = url.render(values, urlOptions(opts));
    try {
      target = new URL(text);
    } catch {
      throw new DeclarativeError(`invalid URL ${JSON.stringify(stripQuery(text))}`);
    }
    for (const [key, value] of renderMap(query, values, opts))
      target.searchParams.append(key, value);
    return target;
  };

  let budget = 0;
  const backoff: Backoff = { baseMs: backoffMs };
  for (let i = 0; i < attempts; i++) budget += timeoutMs + (i > 0 ? backoffDelay(backoff, i) : 0);

  return {
    async: true,
    budgetMs: budget,
    preview: (values) => {
      const target = buildUrl(values, { ...render, keepEnv: true });
      return `${method} ${target.origin}${decodeURI(target.pathname)}${target.search === '' ? '' : '?…'}`;
    },
    execute: async (values, ctx) => {
      const target = buildUrl(values, render);
      const init: RequestInit & { headers: Record<string, string> } = { method, headers: {} };
      for (const [key, value] of renderMap(headers, values, render)) init.headers[key] = value;
      if (body !== undefined) {
        const rendered = renderTree(body, values, render);
        if (typeof rendered === 'string') init.body = rendered;
        else {
          init.body = JSON.stringify(rendered);
          if (!Object.keys(init.headers).some((k) => k.toLowerCase() === 'content-type')) {
            init.headers['Content-Type'] = 'application/json';
          }
        }
      }
      const doFetch = options.fetch ?? fetch;
      const shown = `${method} ${stripQuery(target.href)}`;
      let last: ToolOutcome = { ok: false, error: `${shown} was not sent` };
      for (let attempt = 1; attempt <= attempts; attempt++) {
        if (ctx.signal.aborted) return { ok: false, error: 'Cancelled' };
        const timeout = AbortSignal.timeout(timeoutMs);
        const signal = AbortSignal.any([ctx.signal, timeout]);
        let retryAfterMs: number | undefined;
        let transient = false;
        try {
          const response = await doFetch(target, { ...init, signal });
          const text = await response.text();
          if (response.status < 400) return { ok: true, output: text };
          transient = response.status === 429 || response.status >= 500;
          retryAfterMs = retryAfter(response.headers.get('retry-after'));
          last = {
            ok: false,
            error: `HTTP ${String(response.status)}${response.statusText === '' ? '' : ` ${response.statusText}`} from ${shown}${text === '' ? '' : `: ${text}`}`,
          };
        } catch (error) {
          if (aborted(ctx.signal)) return { ok: false, error: 'Cancelled' };
          transient = true;
          last = timeout.aborted
            ? { ok: false, error: `HTTP request timed out after ${formatMs(timeoutMs)}: ${shown}` }
            : { ok: false, error: `HTTP request failed: ${shown}: ${networkReason(error)}` };
        }
        if (!transient || attempt === attempts) break;
        const wait = Math.max(backoffDelay(backoff, attempt), retryAfterMs ?? 0);
        if (!(await sleep(wait, ctx.signal))) return { ok: false, error: 'Cancelled' };
      }
      return last;
    },
  };
}

/** A function, so the check is made afresh after an await. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

function stripQuery(url: string): string {
  const cut = url.indexOf('?');
  return cut === -1 ? url : `${url.slice(0, cut)}?…`;
}

function networkReason(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return cause.message;
  return messageOf(error);
}

function retryAfter(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_RETRY_AFTER_MS);
  return undefined;
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${String(ms / 1000)}s` : `${String(ms)}ms`;
}

// --- exec -------------------------------------------------------------------------------------

interface Word {
  template: Template;
  quoted: boolean;
}

function compileExec(
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
  options: CompileOptions,
): Compiled {
  const command = impl['command'];
  let words: Word[];
  try {
    words = Array.isArray(command)
      ? (command as string[]).map((text, i) => ({
          template: templateAt(`implementation.command[${String(i)}]`, text, scope),
          quoted: true,
        }))
      : splitCommand(String(command)).map((w) => ({
          template: templateAt('implementation.command', w.text, scope),
          quoted: w.quoted,
        }));
  } catch (error) {
    if (error instanceof CommandSyntaxError)
      throw new DeclarativeError(`implementation.command: ${error.message}`);
    throw error;
  }
  if (words.length === 0) throw new DeclarativeError('implementation.command is empty');
  const rawEnv = impl['env'];
  const envEntries: [string, Template][] = Array.isArray(rawEnv)
    ? (rawEnv as string[]).map((name) => [
        name,
        templateAt(`implementation.env`, `\${${name}}`, scope),
      ])
    : stringMap('implementation.env', rawEnv, scope);
  const cwd =
    typeof impl['cwd'] === 'string'
      ? templateAt('implementation.cwd', impl['cwd'], scope)
      : undefined;
  const timeoutMs = parseDuration(impl['timeout'], DEFAULT_TIMEOUT_MS);

  const argvOf = (values: Values, opts: RenderOptions): string[] => {
    const argv: string[] = [];
    for (const word of words) {
      const text = word.template.render(values, opts);
      if (text === '' && !word.quoted) continue;
      argv.push(text);
    }
    return argv;
  };

  return {
    async: true,
    budgetMs: timeoutMs,
    preview: (values) =>
      `Run the command \`${displayCommand(argvOf(values, { ...render, keepEnv: true }))}\`?`,
    execute: async (values, ctx) => {
      const argv = argvOf(values, render);
      const env: Record<string, string> = {};
      const path = (options.env ?? process.env)['PATH'];
      if (path !== undefined) env['PATH'] = path;
      for (const [key, value] of renderMap(envEntries, values, render)) env[key] = value;
      const dir =
        cwd === undefined ? ctx.cwd : await ctx.sandbox.resolve(cwd.render(values, render));
      const wrapped = await ctx.sandbox.wrap_command(argv);
      if (!wrapped.ok) return { ok: false, error: `Sandbox error: ${wrapped.error}` };
      const run = options.run ?? runProcess;
      const result = await run(wrapped.argv, {
        cwd: dir,
        env,
        extendEnv: false,
        signal: ctx.signal,
        timeoutMs,
        mergeStderr: true,
      });
      const shown = displayCommand(argv);
      if (result.startError !== undefined) {
        return { ok: false, error: `Cannot run \`${shown}\`: ${result.startError}` };
      }
      if (result.cancelled) return { ok: false, error: 'Cancelled' };
      // One final newline is the end of the last line, not an empty line of output.
      const output = result.output.replace(/\r?\n$/, '');
      const fail = (why: string): ToolOutcome =>
        output === ''
          ? { ok: false, error: why }
          : { ok: false, error: why, partialOutput: output };
      if (result.timedOut) return fail(`Command timed out after ${formatMs(timeoutMs)}: ${shown}`);
      if (result.exitCode !== 0) {
        const why =
          result.exitCode === null
            ? `Command terminated by signal ${result.signal ?? 'unknown'}`
            : `Command exited with code ${String(result.exitCode)}`;
        return fail(`${why}: ${shown}`);
      }
      return { ok: true, output };
    },
  };
}

// --- files ------------------------------------------------------------------------------------

function pathTemplate(impl: Record<string, unknown>, scope: TemplateScope): Template {
  const raw = impl['path'];
  if (raw === undefined && !scope.params.includes('path')) {
    throw new DeclarativeError(
      "implementation.path is missing (or declare a parameter named 'path')",
    );
  }
  return templateAt('implementation.path', typeof raw === 'string' ? raw : '{{path}}', scope);
}

function compileFileRead(
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
): Compiled {
  const path = pathTemplate(impl, scope);
  const base64 = impl['encoding'] === 'base64';
  return {
    async: false,
    preview: (values) =>
      `read ${path.render(values, { ...render, keepEnv: true })}${base64 ? ' (base64)' : ''}`,
    execute: async (values, ctx) => {
      const shown = path.render(values, render);
      const abs = await ctx.sandbox.resolve(shown);
      let data: Buffer;
      try {
        // Bounded (a model may name `/dev/zero`): the output limit is applied to the text anyway.
        data = (await readBounded(abs, { name: shown, maxBytes: TOOL_READ_LIMIT_BYTES })).data;
      } catch (error) {
        if (error instanceof FileReadError) return { ok: false, error: error.message };
        return { ok: false, error: `Cannot read ${shown}: ${fsReason(error)}` };
      }
      return {
        ok: true,
        output: base64 ? data.toString('base64') : data.toString('utf8').replace(/\r?\n$/, ''),
      };
    },
  };
}

function compileFileWrite(
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
  modeSource: string | undefined,
): Compiled {
  const path = pathTemplate(impl, scope);
  const rawContent = impl['content'];
  if (rawContent === undefined && !scope.params.includes('content')) {
    throw new DeclarativeError(
      "implementation.content is missing (or declare a parameter named 'content')",
    );
  }
  const content = templateAt(
    'implementation.content',
    typeof rawContent === 'string' ? rawContent : '{{content}}',
    scope,
  );
  const mode = impl['mode'] === undefined ? undefined : parseMode(impl['mode'], modeSource);
  const makeDirs = impl['mkdir'] === true;
  return {
    async: false,
    fileChange: (values) => ({
      path: path.render(values, render),
      content: content.render(values, render),
    }),
    preview: (values) => {
      const text = content.render(values, { ...render, keepEnv: true });
      return `write ${path.render(values, { ...render, keepEnv: true })} (${formatSize(Buffer.byteLength(text, 'utf8'))})`;
    },
    execute: async (values, ctx) => {
      const shown = path.render(values, render);
      const text = content.render(values, render);
      const abs = await ctx.sandbox.resolve(shown, { write: true });
      if (!makeDirs && !(await isDirectory(dirname(abs)))) {
        return {
          ok: false,
          error: `Cannot write ${shown}: its directory does not exist (the tool does not create directories; set mkdir: true to allow it)`,
        };
      }
      try {
        // Race-free against a link swapped after the check (see write.ts).
        const { handle } = await ctx.sandbox.open_for_write(abs, {
          mkdir: makeDirs,
          ...(mode === undefined ? {} : { mode }),
        });
        try {
          await handle.writeFile(text, 'utf8');
          if (mode !== undefined) await handle.chmod(mode);
        } finally {
          await handle.close();
        }
      } catch (error) {
        if (error instanceof SandboxViolation) throw error;
        return { ok: false, error: `Cannot write ${shown}: ${fsReason(error)}` };
      }
      return {
        ok: true,
        output: `Wrote ${String(Buffer.byteLength(text, 'utf8'))} bytes to ${shown}`,
      };
    },
  };
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

function fsReason(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return messageOf(error);
}

// --- builtin ----------------------------------------------------------------------------------

function compileBuiltin(
  spec: DeclarativeSpec,
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
  options: CompileOptions,
): Compiled {
  const target = String(impl['function']);
  if (target === spec.name) {
    throw new DeclarativeError(`implementation.function: '${target}' cannot be an alias of itself`);
  }
  const lookup = options.lookup ?? (() => undefined);
  const known = lookup(target);
  if (known === undefined) {
    const guess = options.suggest?.(target);
    throw new DeclarativeError(
      `implementation.function: no registered tool '${target}'${guess === undefined ? '' : ` (did you mean '${guess}'?)`}`,
    );
  }
  const args = compileTree('implementation.args', impl['args'] ?? {}, scope);
  const inputOf = (values: Values, opts: RenderOptions): Record<string, unknown> => {
    const def = lookup(target);
    const properties = (def?.inputSchema['properties'] ?? {}) as Record<string, unknown>;
    const input: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(values)) {
      if (Object.hasOwn(properties, key)) input[key] = value;
    }
    return { ...input, ...(renderTree(args, values, opts) as Record<string, unknown>) };
  };
  return {
    async: known.async === true,
    preview: (values) => {
      const def = lookup(target);
      const input = inputOf(values, { ...render, keepEnv: true });
      const shown = def?.formatPreview?.(input, 200);
      return shown ?? `${target} ${JSON.stringify(input)}`;
    },
    execute: async (values, ctx) => {
      const def = lookup(target);
      if (def?.execute === undefined) {
        return { ok: false, error: `${spec.name}: the tool '${target}' it calls is not available` };
      }
      return def.execute(inputOf(values, render), ctx);
    },
  };
}
