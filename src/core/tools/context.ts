// The ExecutionContext a tool's `execute` receives (docs/tools.md, "The ExecutionContext"). The
// field names follow that table exactly, so a tool reads the same whether it is written in Lua or in
// JavaScript: `ctx.path.resolve`, `ctx.sandbox.is_path_writable`, `ctx.truncate.truncate_head`,
// `ctx.get_config()`. A JavaScript tool additionally gets `signal` (aborted on cancel or timeout)
// and `tool_id`.

import type { FileHandle } from 'node:fs/promises';
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
import { type OpenedBeneath, WriteRefused, openBeneath } from './sandbox/beneath.js';
import type { WriteGate } from './sandbox/gate.js';
import { type SandboxRoot, type SandboxRoots, SandboxViolation } from './sandbox/roots.js';
import { FileReadError, openRegular, readHandle } from '../util/bounded-read.js';
import { expandHome } from '../util/expand-path.js';

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
  /**
   * `env` without what the sandbox keeps from commands (provider keys, secret-named variables,
   * agent sockets; see sandbox/env.ts), unset entries dropped; only those when it is disabled.
   */
  scrub_env(env: Readonly<Record<string, string | undefined>>): Record<string, string>;
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
  /**
   * Opens `path` (resolved like `resolve(path, { write: true })`) for writing, so that it lands
   * where the policy allows even when a symbolic link on the way is swapped meanwhile (see
   * sandbox/beneath.ts). Throws a `SandboxViolation` where `resolve` would, or when the file's
   * real location turns out not to be writable; file-system errors as they come.
   */
  open_for_write(path: string, options?: OpenForWriteOptions): Promise<OpenedBeneath>;
}

/** What `ctx.sandbox.open_for_write` accepts. */
export interface OpenForWriteOptions {
  /** Create missing parent directories. */
  mkdir?: boolean;
  /** Open an existing file for reading and writing (no create, no truncate). */
  update?: boolean;
  /** The mode of a created file (before the umask). */
  mode?: number;
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
  /**
   * Shows output the tool produced (text, or bytes taken as UTF-8) under its block while it runs
   * (docs/tools.md, "Watching a command run").
   */
  readonly output?: (chunk: string | Uint8Array) => void;
}

export const truncateAccess: TruncateAccess = {
  truncate_head: truncateHead,
  truncate_tail: truncateTail,
  format_size: formatSize,
  MAX_LINES,
  MAX_BYTES,
};

/** `env` without its unset entries. */
function definedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value;
  return out;
}

/** A sandbox that allows everything and wraps nothing. */
export const noSandbox: SandboxAccess = {
  enabled: false,
  is_path_writable: () => true,
  wrap_command: (argv) => Promise.resolve({ ok: true, argv: [...argv] }),
  scrub_env: definedEnv,
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
  /** Keeps what each file opened for writing held before (for `:Flemma tool:undo`). */
  journal?: WriteJournal | undefined;
  /** The sensitive places this call may not write (checked as each file is opened). */
  gate?: WriteGate | undefined;
  /** Where output the tool produces as it runs goes (the live view under its block). */
  output?: ((chunk: string | Uint8Array) => void) | undefined;
}

/** What a file held before a call first opened it for writing. */
export type BeforeWrite =
  | { kind: 'absent' }
  | { kind: 'content'; content: Buffer }
  /** Larger than the journal keeps (or unreadable): the call cannot be undone for this file. */
  | { kind: 'skipped'; reason: string };

/**
 * The files one call opens through `ctx.sandbox.open_for_write`, each with what it held before
 * the first opening (a second opening by the same call keeps the first state: undo goes back to
 * before the call, not before its last write). Every file-changing tool writes through that one
 * door, so built-in, declarative and JavaScript tools are all covered alike.
 */
export class WriteJournal {
  readonly entries = new Map<string, BeforeWrite>();

  constructor(private readonly maxBytes: number) {}

  async note(abs: string): Promise<void> {
    if (this.entries.has(abs)) return;
    this.entries.set(abs, await this.snapshot(abs));
  }

  private async snapshot(abs: string): Promise<BeforeWrite> {
    let handle: FileHandle;
    try {
      handle = await openRegular(abs);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
      if (error instanceof FileReadError && error.problem === 'not-regular') {
        return { kind: 'skipped', reason: 'not a regular file' };
      }
      return { kind: 'skipped', reason: error instanceof Error ? error.message : String(error) };
    }
    try {
      const size = (await handle.stat()).size;
      if (size > this.maxBytes) {
        return {
          kind: 'skipped',
          reason: `larger than tools.undo.max_bytes (${formatSize(size)})`,
        };
      }
      return {
        kind: 'content',
        content: (await readHandle(handle, { maxBytes: this.maxBytes })).data,
      };
    } catch (error) {
      if (error instanceof FileReadError && error.problem === 'too-large') {
        return { kind: 'skipped', reason: 'larger than tools.undo.max_bytes' };
      }
      return { kind: 'skipped', reason: error instanceof Error ? error.message : String(error) };
    } finally {
      await handle.close();
    }
  }
}

/** Resolves `path` against `base`; absolute paths and `~/` paths pass through (expanded). */
export function resolveAgainst(base: string, path: string, home: string): string {
  const expanded = expandHome(path, home);
  return isAbsolute(expanded) ? resolvePath(expanded) : resolvePath(base, expanded);
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
    sandbox: confine(init.sandbox ?? noSandbox, init.roots, base, home, init.journal, init.gate),
    truncate: truncateAccess,
    get_config: () =>
      config === undefined ? undefined : structuredClone<Record<string, unknown>>(config),
    signal: init.signal ?? new AbortController().signal,
    ...(init.output === undefined ? {} : { output: init.output }),
  };
}

/** The write policy plus the roots, as one `ctx.sandbox`. */
export function confine(
  access: SandboxAccess,
  roots: SandboxRoots | undefined,
  base: string,
  home: string,
  journal?: WriteJournal,
  gate?: WriteGate,
): SandboxAccess & PathConfinement {
  const active = roots?.active === true ? roots : undefined;
  const denied = (path: string): SandboxViolation =>
    new SandboxViolation(
      `Sandbox: write denied – path is outside writable directories: ${path}`,
      'escape',
    );
  const resolve = async (path: string, options: PathResolveOptions = {}): Promise<string> => {
    const abs =
      active === undefined ? resolveAgainst(base, path, home) : await active.resolve(path, options);
    if (options.write === true && access.enabled && !access.is_path_writable(abs)) {
      throw denied(path);
    }
    return abs;
  };
  return {
    enabled: access.enabled,
    is_path_writable: (path) => access.is_path_writable(path),
    wrap_command: (argv) => access.wrap_command(argv),
    scrub_env: (env) => access.scrub_env(env),
    confined: active !== undefined,
    roots: active?.list ?? [],
    resolve,
    open_for_write: async (path, options = {}) => {
      const abs = await resolve(path, { write: true });
      // Only a path the policy lets the call write is noted, so undo never writes anywhere else.
      const noted = journal?.entries.has(abs) === true;
      await journal?.note(abs);
      // Every real location on the way is checked again as the walk reaches it: the write policy,
      // and the roots (a link swapped meanwhile must not lead into a read-only root either).
      const allowed = async (real: string): Promise<boolean> => {
        // The sensitive places, whether or not the sandbox is enabled (issue 28).
        const place = gate?.refusal(real);
        if (place !== undefined) {
          throw new SandboxViolation(
            `Sensitive place: write denied – ${path} leads to ${real}, under ${place}; the path changed to a sensitive place after approval (or was never approved for it). Nothing was written.`,
            'escape',
          );
        }
        if (!access.enabled) return true;
        if (!access.is_path_writable(real)) return false;
        if (active === undefined) return true;
        try {
          await active.resolve(real, { write: true });
          return true;
        } catch {
          return false;
        }
      };
      try {
        return await openBeneath(abs, { ...options, allowed });
      } catch (error) {
        // Refused or failed: the call did not write this file (a refused place is not undone).
        if (!noted) journal?.entries.delete(abs);
        if (error instanceof WriteRefused) {
          throw new SandboxViolation(
            `Sandbox: write denied – ${path} leads to ${error.real}, outside writable directories`,
            'escape',
          );
        }
        throw error;
      }
    },
  };
}

function parentOf(filename: string): string {
  const abs = resolvePath(filename);
  const cut = abs.lastIndexOf('/');
  return cut <= 0 ? '/' : abs.slice(0, cut);
}
