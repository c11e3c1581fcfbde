// The ExecutionContext a tool's `execute` receives (seed: "ExecutionContext"). The field names
// follow the seed's table exactly, so a tool reads the same whether it is written in Lua or in
// JavaScript: `ctx.path.resolve`, `ctx.sandbox.is_path_writable`, `ctx.truncate.truncate_head`,
// `ctx.get_config()`. A JavaScript tool additionally gets `signal` (aborted on cancel or timeout)
// and `tool_id`.

import { isAbsolute, resolve as resolvePath } from 'node:path';
import {
  MAX_BYTES,
  MAX_LINES,
  type TruncateLimits,
  type TruncationResult,
  formatSize,
  truncateHead,
  truncateTail,
} from './truncate.js';
import { type SandboxRoot, type SandboxRoots, SandboxViolation } from './sandbox/roots.js';

/** `wrap_command`'s answer: the argv to run, or why the command cannot run sandboxed. */
export type WrapResult = { ok: true; argv: string[] } | { ok: false; error: string };

export interface SandboxAccess {
  /** The sandbox is enabled for this buffer (whether or not a backend is available). */
  readonly enabled: boolean;
  /** `true` when writing `path` is allowed by the current policy (always true when disabled). */
  is_path_writable(path: string): boolean;
  /**
   * The argv that runs `argv` inside the sandbox; `argv` unchanged when the sandbox is disabled
   * or (for backend `auto`) no backend is available.
   */
  wrap_command(argv: readonly string[]): Promise<WrapResult>;
}

/** What `ctx.sandbox.resolve` accepts. */
export interface PathResolveOptions {
  /** The path will be written: a read-only root, or a path outside the writable ones, is refused. */
  write?: boolean;
  /** Confine to the sandbox root of this name (relative paths are taken against it). */
  root?: string;
}

/**
 * The path confinement a tool gets on `ctx.sandbox` besides the write policy: the configured
 * sandbox roots (`sandbox.roots`), and `resolve`, which answers the path to use or throws a
 * `SandboxViolation` (`Path escapes sandbox: …`, `… is read-only …`). Without roots, `resolve` is
 * `path.resolve` plus the write policy for `write: true`.
 */
export interface PathConfinement {
  /** Roots are configured (or misconfigured, which refuses every path): file tools use `resolve`. */
  readonly confined: boolean;
  readonly roots: readonly SandboxRoot[];
  resolve(path: string, options?: PathResolveOptions): Promise<string>;
}

export interface TruncateAccess {
  truncate_head(text: string, limits?: TruncateLimits): TruncationResult;
  truncate_tail(text: string, limits?: TruncateLimits): TruncationResult;
  format_size(bytes: number): string;
  readonly MAX_LINES: number;
  readonly MAX_BYTES: number;
}

export interface ExecutionContext {
  /** The chat buffer the call came from. */
  readonly bufnr: number;
  /** Absolute working directory (the tool's `cwd` setting, else Neovim's). */
  readonly cwd: string;
  /** Default timeout in seconds (`tools.default_timeout`). */
  readonly timeout: number;
  /** The tool-use id being answered. */
  readonly tool_id: string;
  /** Directory of the `.chat` file; undefined for an unsaved buffer. */
  readonly __dirname: string | undefined;
  /** Full path of the `.chat` file; undefined for an unsaved buffer. */
  readonly __filename: string | undefined;
  readonly path: { resolve(path: string): string };
  readonly sandbox: SandboxAccess & PathConfinement;
  readonly truncate: TruncateAccess;
  /** A deep copy of `config.tools[<tool name>]`, or undefined when there is none. */
  get_config(): Record<string, unknown> | undefined;
  /** Aborted when the user cancels the tool or its timeout fires. */
  readonly signal: AbortSignal;
}

export const truncateAccess: TruncateAccess = {
  truncate_head: truncateHead,
  truncate_tail: truncateTail,
  format_size: formatSize,
  MAX_LINES,
  MAX_BYTES,
};

/** A sandbox that allows everything and wraps nothing. */
export const noSandbox: SandboxAccess = {
  enabled: false,
  is_path_writable: () => true,
  wrap_command: (argv) => Promise.resolve({ ok: true, argv: [...argv] }),
};

export interface ContextInit {
  bufnr: number;
  cwd: string;
  timeout: number;
  toolId: string;
  filename?: string | undefined;
  sandbox?: SandboxAccess;
  config?: Record<string, unknown> | undefined;
  signal?: AbortSignal;
  /** The sandbox roots in force (`sandbox.roots`); none when absent. */
  roots?: SandboxRoots | undefined;
}

/** Resolves `path` against `base`; absolute paths and `~/` paths pass through (expanded). */
export function resolveAgainst(base: string, path: string, home: string): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return resolvePath(home, path.slice(2));
  if (isAbsolute(path)) return resolvePath(path);
  return resolvePath(base, path);
}

/** Builds a context; `path.resolve` resolves against the chat file's directory, else `cwd`. */
export function createExecutionContext(init: ContextInit, home: string): ExecutionContext {
  const dirname = init.filename === undefined ? undefined : parentOf(init.filename);
  const base = dirname ?? init.cwd;
  const config = init.config;
  return {
    bufnr: init.bufnr,
    cwd: init.cwd,
    timeout: init.timeout,
    tool_id: init.toolId,
    __dirname: dirname,
    __filename: init.filename,
    path: { resolve: (path) => resolveAgainst(base, path, home) },
    sandbox: confine(init.sandbox ?? noSandbox, init.roots, base, home),
    truncate: truncateAccess,
    get_config: () =>
      config === undefined ? undefined : structuredClone<Record<string, unknown>>(config),
    signal: init.signal ?? new AbortController().signal,
  };
}

/** The write policy plus the roots, as one `ctx.sandbox`. */
export function confine(
  access: SandboxAccess,
  roots: SandboxRoots | undefined,
  base: string,
  home: string,
): SandboxAccess & PathConfinement {
  const active = roots?.active === true ? roots : undefined;
  return {
    enabled: access.enabled,
    is_path_writable: (path) => access.is_path_writable(path),
    wrap_command: (argv) => access.wrap_command(argv),
    confined: active !== undefined,
    roots: active?.list ?? [],
    resolve: async (path, options = {}) => {
      const abs =
        active === undefined
          ? resolveAgainst(base, path, home)
          : await active.resolve(path, options);
      if (options.write === true && access.enabled && !access.is_path_writable(abs)) {
        throw new SandboxViolation(
          `Sandbox: write denied – path is outside writable directories: ${path}`,
          'escape',
        );
      }
      return abs;
    },
  };
}

function parentOf(filename: string): string {
  const abs = resolvePath(filename);
  const cut = abs.lastIndexOf('/');
  return cut <= 0 ? '/' : abs.slice(0, cut);
}
