// Path variables of the sandbox policy (`sandbox.policy.rw_paths`) and of a tool's `cwd` setting,
// and the write check that the file tools run against the resolved list.
//
// Decisions:
// - The forms: `urn:flemma:cwd`, `urn:flemma:buffer:path`, and paths expanded as every path of the
//   configuration is (src/core/util/expand-path.ts: `~`, `~user`, `$VAR`, `${VAR}`,
//   `${VAR:-default}` anywhere in the entry).
// - An entry whose variable is unset or empty is dropped (an empty path would silently mean the
//   cwd). A `${VAR:-default}` whose default is empty is dropped for the same reason.
// - An unknown `urn:` is an error (`PathVariableError`): a typo there must not quietly shrink or
//   widen what the sandbox allows. Other strings containing a colon are ordinary literals.
// - Relative literals are taken against the editor's cwd, never against the host's.
// - Symlinks are resolved component by component (`resolveReal`): the realpath of the longest
//   existing prefix, the rest appended. A dangling symlink is followed to its target, so a
//   link inside a writable directory that points at a not-yet-existing file elsewhere is judged
//   by where the write would land, not by where the link sits.
// - De-duplication keeps the outermost paths: an entry equal to or below a kept entry is dropped.
//   "Below" means a `/` boundary, so `/tmp/ab` is not below `/tmp/a`. The result is sorted by
//   code unit, which makes it stable for tests and for the bwrap command line.

import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, resolve as resolvePath } from 'node:path';
import { type PathEnv, PathExpansionError, expandPath } from '../../util/expand-path.js';

export type { PathEnv };

/** What the variables need to know about the editor. */
export interface PathFacts {
  /** The editor's working directory (absolute). */
  cwd: string;
  /** The chat file's name, or null for an unnamed buffer. */
  filename: string | null;
}

export const URN_CWD = 'urn:flemma:cwd';
export const URN_BUFFER_PATH = 'urn:flemma:buffer:path';

/** An entry names a variable that does not exist (an unknown `urn:`). */
export class PathVariableError extends Error {
  override name = 'PathVariableError';
}

/** Links followed while resolving one path before giving up (the kernel's limit is 40). */
const MAX_LINKS = 40;

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/**
 * Expands one path variable to an absolute path (symlinks not yet resolved), or undefined when
 * the entry is dropped (unset variable, unnamed buffer). Throws `PathVariableError` for an
 * unknown `urn:` or `~user`. Usable for `tools.<name>.cwd` as well as for `rw_paths` entries.
 */
export function expandPathVariable(
  spec: string,
  facts: PathFacts,
  env: PathEnv,
  home: string,
): string | undefined {
  let expanded: string | undefined;
  if (spec === URN_CWD) {
    expanded = facts.cwd;
  } else if (spec === URN_BUFFER_PATH) {
    if (facts.filename === null || facts.filename === '') return undefined;
    expanded = dirname(resolveReal(resolvePath(facts.cwd, facts.filename)));
  } else if (spec.startsWith('urn:')) {
    throw new PathVariableError(
      `Unknown path variable '${spec}' (known: ${URN_CWD}, ${URN_BUFFER_PATH})`,
    );
  } else {
    try {
      expanded = nonEmpty(expandPath(spec, env, home));
    } catch (error) {
      // An unknown `~user`: as clear an error as an unknown `urn:`.
      if (error instanceof PathExpansionError) throw new PathVariableError(error.message);
      throw error;
    }
  }
  if (expanded === undefined) return undefined;
  return isAbsolute(expanded) ? resolvePath(expanded) : resolvePath(facts.cwd, expanded);
}

/**
 * The real location of an absolute path that may not exist yet: the realpath of its longest
 * existing prefix with the remaining components appended, following dangling symlinks.
 */
export function resolveReal(path: string): string {
  return resolveRealFrom(resolvePath(path), 0);
}

function resolveRealFrom(path: string, links: number): string {
  try {
    return realpathSync(path);
  } catch {
    // Missing (or unreadable): resolve the parent and look at the last component ourselves.
  }
  const parent = dirname(path);
  if (parent === path) return path;
  const realParent = resolveRealFrom(parent, links);
  const candidate = resolvePath(realParent, basename(path));
  if (links < MAX_LINKS) {
    try {
      if (lstatSync(candidate).isSymbolicLink()) {
        return resolveRealFrom(resolvePath(realParent, readlinkSync(candidate)), links + 1);
      }
    } catch {
      // The component does not exist: it is appended as it is.
    }
  }
  return candidate;
}

/** `path` equals `root` or lies below it (on a `/` boundary). Both must be normalized. */
export function isUnder(path: string, root: string): boolean {
  if (path === root) return true;
  const prefix = root.endsWith('/') ? root : `${root}/`;
  return path.startsWith(prefix);
}

/** Absolute, real, outermost-only and sorted: the form every consumer of rw paths expects. */
export function normalizeRwPaths(paths: readonly string[]): string[] {
  const real = [...new Set(paths.map((path) => resolveReal(path)))].sort();
  const kept: string[] = [];
  for (const path of real) {
    if (!kept.some((root) => isUnder(path, root))) kept.push(path);
  }
  return kept;
}

/**
 * Expands every `rw_paths` entry and normalizes the result. Throws `PathVariableError` when an
 * entry names an unknown `urn:`.
 */
export function resolveRwPaths(
  specs: readonly string[],
  facts: PathFacts,
  env: PathEnv,
  home: string,
): string[] {
  const expanded: string[] = [];
  for (const spec of specs) {
    const path = expandPathVariable(spec, facts, env, home);
    if (path !== undefined) expanded.push(path);
  }
  return normalizeRwPaths(expanded);
}

/**
 * `true` when writing `path` stays inside one of `rwPaths` (already normalized). The target is
 * resolved like an rw path, so a symlink inside a writable directory that points outside is
 * refused. A relative `path` is taken against `base` (default: the host's cwd).
 */
export function isPathWritable(path: string, rwPaths: readonly string[], base?: string): boolean {
  const absolute = base === undefined ? resolvePath(path) : resolvePath(base, path);
  const target = resolveReal(absolute);
  return rwPaths.some((root) => isUnder(target, root));
}
