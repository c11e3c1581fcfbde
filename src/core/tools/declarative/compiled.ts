// What each kind of declarative implementation compiles to, and the helpers they share (the
// options, templated maps, messages). compile.ts picks the kind; http.ts, exec.ts, files.ts and
// builtin.ts compile one each.
import type { ToolContext, ToolDefinition, ToolOutcome, Preview } from '../registry.js';
import type { RunOptions, RunResult } from '../process.js';
import { type TemplateScope, templateAt } from './definition.js';
import type { RenderOptions, Template } from './template.js';

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

export const DEFAULT_TIMEOUT_MS = 30_000;

export type Values = Readonly<Record<string, unknown>>;
export type Execute = (values: Record<string, unknown>, ctx: ToolContext) => Promise<ToolOutcome>;
export type Previewer = (values: Record<string, unknown>) => Preview | undefined;

export interface Compiled {
  execute: Execute;
  preview: Previewer;
  /** The longest the implementation may take on its own (ms), for the executor's timeout. */
  budgetMs?: number;
  /** `file_write`: the path and content a call would write (rendered as when it runs). */
  fileChange?: (values: Record<string, unknown>) => { path: string; content: string };
  async: boolean;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A duration as written in messages: `30s`, or `1500ms`. */
export function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${String(ms / 1000)}s` : `${String(ms)}ms`;
}

export function stringMap(where: string, raw: unknown, scope: TemplateScope): [string, Template][] {
  if (raw === undefined) return [];
  return Object.entries(raw as Record<string, unknown>).map(([key, value]) => [
    key,
    templateAt(`${where}.${key}`, String(value), scope),
  ]);
}

/** Renders a map of templates; an entry that is a lone `{{p}}` without a value is left out. */
export function renderMap(
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
