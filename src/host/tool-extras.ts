// What the executor adds around tools for Vega-style tools (docs/tools.md, "Sandbox roots", "Middleware"): sandbox roots from `sandbox.roots`,
// the middleware stack from `tools.middleware` plus the `middleware` exports of JavaScript tool
// modules, and the buffer's tool filter checked again at execution.
//
// Decisions (see docs/tools.md):
// - Roots apply while the sandbox is enabled (`:Flemma sandbox:disable` lifts them with the rest
//   of the sandbox). Read-write roots are added to `sandbox.policy.rw_paths`, so that what a root
//   allows to be written is not refused by the write policy (and a sandboxed `bash` may write
//   there too).
// - The order of the stack: logging (outermost) → rate limit → user middleware (in the order of
//   `tools.modules`, then of each module's list) → retry → the executor's own timeout and
//   cancellation → the tool. The built-ins keep their state (rate-limit slots) for as long as
//   their settings do not change.
// - Log records go to the host's log file (`:Flemma log`), one line per call, through the host's
//   one redactor (known secrets, key-shaped strings, secret-looking argument names).

import {
  type ToolMiddleware,
  loggingMiddleware,
  parseRate,
  rateLimitMiddleware,
  retryMiddleware,
} from '../core/tools/middleware.js';
import type { Redactor } from '../core/secrets/redact.js';
import { DEFAULT_RW_PATHS } from '../core/tools/sandbox/index.js';
import { expandPathVariable } from '../core/tools/sandbox/paths.js';
import { SandboxRoots, parseRoots } from '../core/tools/sandbox/roots.js';

type Table = Record<string, unknown>;

function tableOf(value: unknown): Table | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Table)
    : undefined;
}

/** The roots `sandbox.roots` names (undefined when it names none); a bad setting fails closed. */
export function rootsFor(
  sandboxConfig: unknown,
  facts: { cwd: string; filename: string | null },
  env: Readonly<Record<string, string | undefined>>,
  home: string,
): SandboxRoots | undefined {
  const raw = tableOf(sandboxConfig)?.['roots'];
  const parsed = parseRoots(raw, (path) => expandPathVariable(path, facts, env, home));
  if (parsed.error !== undefined) return SandboxRoots.invalid(`Invalid ${parsed.error}`, home);
  if (parsed.roots.length === 0) return undefined;
  return new SandboxRoots(parsed.roots, { home });
}

/** `sandbox` with the read-write roots added to `policy.rw_paths`. */
export function withRootPaths(
  sandboxConfig: unknown,
  roots: SandboxRoots,
): Record<string, unknown> {
  const table = tableOf(sandboxConfig) ?? {};
  const policy = tableOf(table['policy']) ?? {};
  const configured = policy['rw_paths'];
  const base = Array.isArray(configured)
    ? (configured as unknown[]).filter((p): p is string => typeof p === 'string')
    : configured === undefined || configured === null
      ? [...DEFAULT_RW_PATHS]
      : [];
  const extra = roots.list.filter((r) => r.mode === 'rw').map((r) => r.path);
  return { ...table, policy: { ...policy, rw_paths: [...base, ...extra] } };
}

export interface MiddlewareLogger {
  info(message: string): void;
  warn(message: string): void;
  /** The host's one redactor: the records are redacted before they are written. */
  readonly redactor: Redactor;
}

/** The middleware stack of the host: built-ins from the configuration, and users' functions. */
export class MiddlewareStack {
  private readonly user: { module: string; fn: ToolMiddleware }[] = [];
  private cached: { key: string; outer: ToolMiddleware[]; inner: ToolMiddleware[] } | undefined;

  constructor(private readonly logger: MiddlewareLogger) {}

  /** Adds the `middleware` export of a module (a function or a list of functions). */
  addFromModule(module: string, exported: unknown): string | undefined {
    const list = Array.isArray(exported) ? (exported as unknown[]) : [exported];
    for (const [i, fn] of list.entries()) {
      if (typeof fn !== 'function') {
        return `middleware[${String(i)}] is not a function (a middleware is next => call => result)`;
      }
    }
    // A module loaded again (after a restart of its source) replaces its middleware.
    for (let i = this.user.length - 1; i >= 0; i--) {
      if (this.user[i]?.module === module) this.user.splice(i, 1);
    }
    for (const fn of list) this.user.push({ module, fn: fn as ToolMiddleware });
    return undefined;
  }

  /** The stack for `tools.middleware`; throws for a bad setting (the call then fails with it). */
  chain(settings: unknown): ToolMiddleware[] {
    const key = JSON.stringify(settings ?? null);
    if (this.cached?.key !== key) this.cached = { key, ...this.build(tableOf(settings) ?? {}) };
    return [...this.cached.outer, ...this.user.map((u) => u.fn), ...this.cached.inner];
  }

  private build(settings: Table): { outer: ToolMiddleware[]; inner: ToolMiddleware[] } {
    const outer: ToolMiddleware[] = [];
    const inner: ToolMiddleware[] = [];
    const logging = settings['logging'];
    if (logging === true || tableOf(logging) !== undefined) {
      const redactList = tableOf(logging)?.['redact'];
      const options = {
        redactor: this.logger.redactor,
        redact: Array.isArray(redactList)
          ? (redactList as unknown[]).filter((r): r is string => typeof r === 'string')
          : [],
      };
      outer.push(
        loggingMiddleware((record) => {
          this.logger.info(`tool call ${JSON.stringify(record)}`);
        }, options),
      );
    }
    const rate = tableOf(settings['rate_limit']);
    const limits = tableOf(rate?.['limits']);
    if (limits !== undefined && Object.keys(limits).length > 0) {
      const parsed: Record<string, ReturnType<typeof parseRate>> = {};
      for (const [name, value] of Object.entries(limits)) {
        try {
          parsed[name] = parseRate(value);
        } catch (error) {
          throw new Error(
            `tools.middleware.rate_limit.limits['${name}']: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      }
      outer.push(
        rateLimitMiddleware({ limits: parsed, mode: rate?.['mode'] === 'fail' ? 'fail' : 'wait' }),
      );
    }
    const retry = settings['retry'];
    if (retry !== false) {
      const table = tableOf(retry) ?? {};
      const attempts = typeof table['attempts'] === 'number' ? table['attempts'] : 3;
      const backoff = typeof table['backoff'] === 'number' ? table['backoff'] : 500;
      if (attempts > 1) inner.push(retryMiddleware({ attempts, backoffMs: backoff }));
    }
    return { outer, inner };
  }
}
