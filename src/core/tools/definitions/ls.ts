// The `ls` tool: lists a directory (optionally a few levels deep) using only Node's fs, so it
// works the same with or without a sandbox backend and needs no external program. This module
// also holds the small helpers grep and find share (excludes, paths, PATH lookup);
// find imports from here and grep imports from both, so there is no import cycle.
//
// Decisions:
// - Traversal is breadth-first and each directory is read in the order it is shown in
//   (case-insensitive), so when the entry limit cuts the walk short it keeps the shallowest
//   entries, and the cut is reproducible.
// - The collected entries are then shown directories first (with a trailing `/`), then files,
//   each group sorted case-insensitively by their path relative to the listed directory.
// - Symbolic links to directories are listed as directories but never followed (no cycles).
// - Directories named in the exclude list (the same defaults as grep and find; `tools.ls` may
//   set its own `exclude`) are listed but not descended into, so `.git` or `node_modules`
//   cannot eat the whole entry budget at depth > 1. Listing such a directory directly still
//   works: excludes only apply below the listed one.
// - The footer is exactly `[<n> entries]` or `[<n> entries, depth=<d>]`; when the limit cut the
//   listing, a second bracketed line says so, leaving the footer's format untouched.
// - The listed directory itself must be readable (else an error); subdirectories that cannot be
//   read are skipped silently.

import { constants, type Dirent } from 'node:fs';
import { access, readdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join, relative } from 'node:path';

import { resolveAgainst } from '../context.js';
import type { runProcess } from '../process.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';
import { MAX_BYTES, MAX_LINES, type TruncateFs, truncateListing } from '../truncate.js';
import { builtinTool, optional, needing, textOf } from './builtin.js';

/** Deepest recursion `max_depth` may ask for. */
export const LS_MAX_DEPTH = 10;
/** Entries listed when the call gives no `limit`. */
export const LS_DEFAULT_LIMIT = 500;

// ---------------------------------------------------------------------------------------------
// Helpers shared by ls, grep and find

/** Names that grep, find and ls skip unless the tool's `exclude` setting says otherwise. */
export const DEFAULT_EXCLUDES: readonly string[] = [
  '.git',
  'node_modules',
  '__pycache__',
  '.venv',
  'target',
  'dist',
  'build',
  'vendor',
];

/** The process runner's signature, so tests can stand in for it. */
export type RunFn = typeof runProcess;

/**
 * The `exclude` list from a tool's config: the defaults when unset, its strings otherwise. An
 * empty Lua table may arrive as `[]` or as `{}`; both mean "exclude nothing".
 */
export function excludesFrom(config: Record<string, unknown> | undefined): string[] {
  const raw = config?.['exclude'];
  if (isEmptyObject(raw)) return [];
  if (!Array.isArray(raw)) return [...DEFAULT_EXCLUDES];
  return raw.filter((item): item is string => typeof item === 'string' && item !== '');
}

function isEmptyObject(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.keys(value).length === 0
  );
}

/**
 * Seconds a search may run: the tool's own `timeout` setting when it is a positive number (the
 * executor allows the same, plus a grace period), else the context's default.
 */
export function timeoutSeconds(ctx: ToolContext): number {
  const configured = ctx.get_config()?.['timeout'];
  return typeof configured === 'number' && Number.isFinite(configured) && configured > 0
    ? configured
    : ctx.timeout;
}

/** A positive whole number from a model-supplied value, else `fallback`. */
export function positiveInt(value: unknown, fallback: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) return fallback;
  return Math.max(1, Math.floor(value));
}

/** Case-insensitive order with a code-unit tie-break, so the result never depends on the locale. */
export function compareCaseless(a: string, b: string): number {
  const la = a.toLowerCase();
  const lb = b.toLowerCase();
  if (la !== lb) return la < lb ? -1 : 1;
  return compareCodeUnits(a, b);
}

/** Plain code-unit order (locale-independent). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A `relative()` result that leaves the base directory (or could not be made relative). */
export function escapes(rel: string): boolean {
  return rel === '..' || rel.startsWith('../') || isAbsolute(rel);
}

/**
 * A directory or file as a process running in `cwd` should be given it: relative when below
 * `cwd` (`.` for `cwd` itself), absolute otherwise. A relative path starting with `-` gets `./`
 * so that no program (find has no `--`) can read it as an option.
 */
export function searchArgument(cwd: string, target: string): string {
  const rel = relative(cwd, target);
  if (rel === '') return '.';
  if (escapes(rel)) return target;
  return rel.startsWith('-') ? `./${rel}` : rel;
}

/** An absolute path as shown to the model: relative to `cwd` when below it, else absolute. */
export function displayPath(cwd: string, abs: string): string {
  const rel = relative(cwd, abs);
  return rel === '' || escapes(rel) ? abs : rel;
}

/** The full path of `name` when an executable file of that name is on `PATH`. */
export async function onPath(
  name: string,
  pathVar: string | undefined = process.env['PATH'],
): Promise<string | undefined> {
  for (const dir of (pathVar ?? '').split(delimiter)) {
    if (dir === '') continue;
    const full = join(dir, name);
    try {
      await access(full, constants.X_OK);
      if ((await stat(full)).isFile()) return full;
    } catch {
      // Not here; try the next directory.
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The listing

export interface Listing {
  /** Directories (with `/`) then files, relative to the listed directory. */
  entries: string[];
  /** The walk stopped at the limit while more entries remained. */
  limitReached: boolean;
}

async function isDirectoryLink(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Walks `root` breadth-first down to `depth` levels, collecting at most `limit` entries. An
 * unreadable `root` throws; an unreadable subdirectory is skipped.
 */
export async function listDirectory(
  root: string,
  depth: number,
  limit: number,
  excludes: readonly string[],
  signal?: AbortSignal,
): Promise<Listing | 'cancelled'> {
  const dirs: string[] = [];
  const files: string[] = [];
  const skip = new Set(excludes);
  // Each queued item is a path relative to `root` ('' for root itself) and its level (1-based).
  const queue: { rel: string; level: number }[] = [{ rel: '', level: 1 }];
  let count = 0;
  let limitReached = false;

  walk: for (let head = 0; head < queue.length; head++) {
    const item = queue[head];
    if (item === undefined) break;
    if (signal?.aborted === true) return 'cancelled';
    let children: Dirent[];
    try {
      children = await readdir(item.rel === '' ? root : join(root, item.rel), {
        withFileTypes: true,
      });
    } catch (err) {
      if (item.rel === '') throw err;
      continue;
    }
    children.sort((a, b) => compareCaseless(a.name, b.name));
    for (const child of children) {
      if (count >= limit) {
        limitReached = true;
        break walk;
      }
      const rel = item.rel === '' ? child.name : `${item.rel}/${child.name}`;
      const isDir =
        child.isDirectory() || (child.isSymbolicLink() && (await isDirectoryLink(join(root, rel))));
      if (isDir) {
        dirs.push(`${rel}/`);
        // Real directories only: a link could point back up the tree.
        if (child.isDirectory() && item.level < depth && !skip.has(child.name)) {
          queue.push({ rel, level: item.level + 1 });
        }
      } else {
        files.push(rel);
      }
      count++;
    }
  }

  dirs.sort(compareCaseless);
  files.sort(compareCaseless);
  return { entries: [...dirs, ...files], limitReached };
}

/** The depth a call asks for: `max_depth` clamped to 1..LS_MAX_DEPTH (default 1). */
export function effectiveDepth(value: unknown): number {
  return Math.min(positiveInt(value, 1), LS_MAX_DEPTH);
}

export interface LsToolOptions {
  /** Where overflowing output is saved (default: the OS temp directory). */
  fs?: TruncateFs;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function executeLs(
  path: string,
  fields: Record<string, unknown>,
  ctx: ToolContext,
  options: LsToolOptions,
): Promise<ToolOutcome> {
  const target = resolveAgainst(ctx.cwd, path, homedir());

  try {
    const info = await stat(target);
    if (!info.isDirectory()) return { ok: false, error: `Not a directory: ${path}` };
  } catch {
    return { ok: false, error: `Directory not found: ${path}` };
  }

  const depth = effectiveDepth(fields['max_depth']);
  const limit = positiveInt(fields['limit'], LS_DEFAULT_LIMIT);
  const excludes = excludesFrom(ctx.get_config());

  let listing: Listing | 'cancelled';
  try {
    listing = await listDirectory(target, depth, limit, excludes, ctx.signal);
  } catch (err) {
    return { ok: false, error: `Cannot list ${path}: ${messageOf(err)}` };
  }
  if (listing === 'cancelled') return { ok: false, error: 'Cancelled' };

  const n = listing.entries.length;
  let footer = depth > 1 ? `[${n} entries, depth=${depth}]` : `[${n} entries]`;
  if (listing.limitReached) {
    footer += `\n[Listing limited to ${limit} entries. Raise limit or list a subdirectory to see more.]`;
  }
  if (n === 0) return { ok: true, output: footer };

  const body = await truncateListing(listing.entries.join('\n'), 'ls', ctx.tool_id, options.fs);
  return { ok: true, output: `${body.text}\n\n${footer}` };
}

/** An ls tool; `lsTool` is the one the host registers, tests may pass options. */
export function createLsTool(options: LsToolOptions = {}): ToolDefinition {
  return builtinTool({
    name: 'ls',
    description:
      'List the contents of a directory. Directories come first (ending in /), then files, ' +
      'each group sorted case-insensitively; entries below the top level are shown as paths ' +
      'relative to the listed directory. Set max_depth above 1 to include subdirectories (at ' +
      `most ${LS_MAX_DEPTH} levels); commonly ignored directories such as node_modules and .git ` +
      `are shown but not expanded. Lists at most limit entries (default ${LS_DEFAULT_LIMIT}); ` +
      `the listing is cut at ${MAX_LINES} lines or ${MAX_BYTES / 1024}KB.`,
    why: 'are listing, e.g. "look at the project layout"',
    properties: {
      path: {
        type: 'string',
        description: 'The directory to list, absolute or relative to the working directory.',
      },
      max_depth: optional(
        'number',
        `How many levels to descend (default 1 = this directory only, max ${LS_MAX_DEPTH}).`,
      ),
      limit: optional('number', `The most entries to list (default ${LS_DEFAULT_LIMIT}).`),
    },
    label: 'List directory',
    execute: needing('path', (path, fields, ctx) => executeLs(path, fields, ctx, options)),
    detail: (input) => {
      const detail = [textOf(input, 'path')];
      const depth = effectiveDepth(input['max_depth']);
      if (depth > 1) detail.push(`depth=${depth}`);
      return detail;
    },
  });
}

export const lsTool: ToolDefinition = createLsTool();
