// Sandbox roots: one or several named directories that host-side file access is confined to
// (`sandbox.roots`), each read-write or read-only. `resolve(path, {write})` answers the real path
// to use or throws a `SandboxViolation` that says what was refused and why.
//
// Decisions (see docs/tools.md, "Sandbox roots"):
// - An escape is an error, never a silent redirect (Vega's code rewrites `/etc/passwd` to
//   `<root>/passwd`; its documentation, which this follows, refuses it).
// - Relative paths are taken against the first root in the list (or the root named in
//   `options.root`); `~/` is the home directory; absolute paths must lie inside some root.
// - `..` is resolved lexically first, then symlinks: every existing component is followed
//   (dangling links included, up to 40 levels), so a link inside a root pointing out of it is an
//   escape, as is a link that does not exist yet but would be written through.
// - Containment is decided component by component (`path.relative` must not start with a `..`
//   component), never by string prefix: `/ws-other` is not inside `/ws`, `<root>/..foo` is.
// - With nested roots the innermost one decides the mode, so a read-only `data` inside a
//   read-write `workspace` stays read-only.
// - A root that does not exist contains nothing; using it as the base of a relative path is an
//   error naming it.

import { lstat, readlink, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve as resolvePath, sep } from 'node:path';
import { expandHome } from '../../util/expand-path.js';

export type RootMode = 'rw' | 'ro';

export interface SandboxRoot {
  name: string;
  /** Absolute path. */
  path: string;
  mode: RootMode;
}

export interface RootResolveOptions {
  /** The path will be written (a read-only root refuses it). */
  write?: boolean;
  /** Confine to this root (by name); relative paths are taken against it. */
  root?: string;
}

export class SandboxViolation extends Error {
  override readonly name = 'SandboxViolation';
  constructor(
    message: string,
    readonly reason: 'escape' | 'read-only' | 'config' | 'no-root',
  ) {
    super(message);
  }
}

const MAX_LINKS = 40;

/** `path` lies inside `root` (or is it): compared per path component. */
export function isInside(path: string, root: string): boolean {
  const rel = relative(root, path);
  if (rel === '') return true;
  if (isAbsolute(rel)) return false;
  const first = rel.split(sep)[0];
  return first !== '..';
}

/**
 * `abs` (absolute, `..` already resolved) with every symlink followed: the real path of the
 * longest existing prefix, then the rest as written. Dangling links are followed to their target.
 */
export async function realPathOf(abs: string, depth = 0): Promise<string> {
  if (depth > MAX_LINKS) throw new Error(`too many levels of symbolic links: ${abs}`);
  const parts = abs.split('/').filter((part) => part !== '');
  let current = '/';
  for (let i = 0; i < parts.length; i++) {
    const next = join(current, parts[i] ?? '');
    let isLink: boolean;
    try {
      isLink = (await lstat(next)).isSymbolicLink();
    } catch {
      // Nothing exists from here on: the rest is taken as written.
      return join(current, ...parts.slice(i));
    }
    if (isLink) {
      const target = await readlink(next);
      current = await realPathOf(resolvePath(current, target), depth + 1);
    } else {
      current = next;
    }
  }
  return current;
}

export class SandboxRoots {
  readonly #roots: readonly SandboxRoot[];
  readonly #home: string;
  readonly #error: string | undefined;
  #real: Promise<(string | undefined)[]> | undefined;

  constructor(roots: readonly SandboxRoot[], options: { home: string; error?: string }) {
    this.#roots = roots;
    this.#home = options.home;
    this.#error = options.error;
  }

  /** Roots that fail closed: every `resolve` throws `message` (a configuration error). */
  static invalid(message: string, home: string): SandboxRoots {
    return new SandboxRoots([], { home, error: message });
  }

  get list(): readonly SandboxRoot[] {
    return this.#roots;
  }

  /** `true` when there is something to confine to (or a configuration error to report). */
  get active(): boolean {
    return this.#roots.length > 0 || this.#error !== undefined;
  }

  /** `name (path, mode)` for each root, for messages. */
  describe(): string {
    return this.#roots.map((r) => `${r.name}: ${r.path} (${r.mode})`).join(', ');
  }

  #realRoots(): Promise<(string | undefined)[]> {
    this.#real ??= Promise.all(
      this.#roots.map((root) => realpath(root.path).catch(() => undefined)),
    );
    return this.#real;
  }

  /** The real path to use for `path`; throws a `SandboxViolation` when it is refused. */
  async resolve(path: string, options: RootResolveOptions = {}): Promise<string> {
    if (this.#error !== undefined) throw new SandboxViolation(this.#error, 'config');
    const real = await this.#realRoots();
    let index = 0;
    if (options.root !== undefined) {
      index = this.#roots.findIndex((r) => r.name === options.root);
      if (index === -1) {
        throw new SandboxViolation(
          `Unknown sandbox root '${options.root}' (roots: ${this.describe()})`,
          'no-root',
        );
      }
    }
    const baseRoot = this.#roots[index];
    if (baseRoot === undefined)
      throw new SandboxViolation('No sandbox roots are configured', 'no-root');
    let abs: string;
    const expanded = expandHome(path, this.#home);
    if (isAbsolute(expanded)) abs = resolvePath(expanded);
    else {
      const base = real[index];
      if (base === undefined) {
        throw new SandboxViolation(
          `Sandbox root '${baseRoot.name}' does not exist: ${baseRoot.path}`,
          'no-root',
        );
      }
      abs = resolvePath(base, path);
    }
    let resolved: string;
    try {
      resolved = await realPathOf(abs);
    } catch (error) {
      throw new SandboxViolation(
        `Path escapes sandbox: ${path} (${error instanceof Error ? error.message : String(error)})`,
        'escape',
      );
    }
    let best: { root: SandboxRoot; real: string } | undefined;
    this.#roots.forEach((root, i) => {
      const rootReal = real[i];
      if (rootReal === undefined || !isInside(resolved, rootReal)) return;
      if (options.root !== undefined && root.name !== options.root) return;
      if (best === undefined || rootReal.length > best.real.length) best = { root, real: rootReal };
    });
    if (best === undefined) {
      const lexicallyInside = real.some((r) => r !== undefined && isInside(abs, r));
      const where =
        options.root === undefined
          ? `the sandbox roots (${this.describe()})`
          : `sandbox root '${options.root}'`;
      throw new SandboxViolation(
        lexicallyInside && resolved !== abs
          ? `Path escapes sandbox: ${path} leads to ${resolved} through a symbolic link, outside ${where}`
          : `Path escapes sandbox: ${path} is outside ${where}`,
        'escape',
      );
    }
    const found: { root: SandboxRoot; real: string } = best;
    if (options.write === true && found.root.mode === 'ro') {
      throw new SandboxViolation(
        `Sandbox root '${found.root.name}' is read-only: cannot write ${path}`,
        'read-only',
      );
    }
    return resolved;
  }
}

/**
 * Reads `sandbox.roots` as Lua sends it: a list of `{ name, path, mode = "rw"|"ro" }` (a string
 * item is a read-write root named after its last component). `expand` turns a configured path
 * into an absolute one (`~`, `${VAR}`, `urn:flemma:cwd`); it may throw.
 */
export function parseRoots(
  raw: unknown,
  expand: (path: string) => string | undefined,
): { roots: SandboxRoot[]; error?: string } {
  if (raw === undefined || raw === null) return { roots: [] };
  if (!Array.isArray(raw)) {
    // An empty Lua table may arrive as an object.
    if (typeof raw === 'object' && Object.keys(raw).length === 0) return { roots: [] };
    return { roots: [], error: 'sandbox.roots must be a list of { name, path, mode }' };
  }
  const roots: SandboxRoot[] = [];
  const names = new Set<string>();
  for (const [i, item] of raw.entries()) {
    const entry: Record<string, unknown> =
      typeof item === 'string' ? { path: item } : ((item ?? {}) as Record<string, unknown>);
    const where = `sandbox.roots[${i + 1}]`;
    const path = entry['path'];
    if (typeof path !== 'string' || path === '') {
      return { roots: [], error: `${where}: path must be a non-empty string` };
    }
    let abs: string | undefined;
    try {
      abs = expand(path);
    } catch (error) {
      return {
        roots: [],
        error: `${where}: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    if (abs === undefined || !isAbsolute(abs)) {
      return { roots: [], error: `${where}: '${path}' does not expand to an absolute path` };
    }
    const mode = entry['mode'] ?? 'rw';
    if (mode !== 'rw' && mode !== 'ro') {
      return {
        roots: [],
        error: `${where}: mode must be "rw" or "ro", not ${JSON.stringify(mode)}`,
      };
    }
    const rawName = entry['name'];
    const name =
      typeof rawName === 'string' && rawName !== ''
        ? rawName
        : (abs.split('/').filter(Boolean).pop() ?? '/');
    if (names.has(name)) return { roots: [], error: `${where}: duplicate root name '${name}'` };
    names.add(name);
    roots.push({ name, path: resolvePath(abs), mode });
  }
  return { roots };
}
