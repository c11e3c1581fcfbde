// The built-in sandbox backend, bubblewrap, and the registry the host starts with.
//
// Decisions:
// - bwrap availability is Linux, an executable binary, and a real probe: a binary that exists
//   but cannot create namespaces here (containers, disabled user namespaces) would otherwise
//   make every command fail instead of running unsandboxed under `auto`.
// - bwrap's command line is the one docs/tools.md ("The sandbox") describes. One addition: rw paths that do not exist
//   when the command is wrapped are left out, because `--bind` of a missing source aborts bwrap
//   and would break every command just because, say, `~/.local/share` was never created.
//   `extra_args` entries that are numbers are passed as text; other non-strings are ignored.
// - After the rw binds come the hidden places (a directory: an empty tmpfs, remounted read-only;
//   anything else: /dev/null bound over it, since a bound device node cannot be opened without
//   `--dev-bind` in a user namespace, and writes to it go nowhere), then the read-only places
//   (bound read-only over themselves, inside an rw bind), then `--unsetenv` for each scrubbed
//   name. Places that vanished since the policy was resolved are left out, like rw paths.

import { constants, existsSync } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';

import { statIfAny } from '../../util/files.js';
import { type RunResult, runProcess } from '../process.js';
import {
  BWRAP_PRIORITY,
  type BackendSettings,
  type SandboxBackend,
  SandboxBackendRegistry,
  type SandboxPolicy,
} from './backends.js';

/** The process runner's signature, so tests can stand in for it. */
export type ProbeRunFn = (
  argv: readonly string[],
  options: { cwd: string; timeoutMs?: number },
) => Promise<RunResult>;

export interface BwrapOptions {
  /** Defaults to `process.platform`. */
  platform?: NodeJS.Platform;
  /** Defaults to `runProcess`. */
  run?: ProbeRunFn;
  /** The `PATH` searched for a bare program name; defaults to the host's. */
  pathVar?: string | undefined;
  /** Which rw paths exist (missing ones get no `--bind`); defaults to the file system. */
  exists?: (path: string) => boolean;
  /** Which paths are directories (hidden with a tmpfs); defaults to the file system. */
  isDirectory?: (path: string) => boolean;
}

const PROBE_TIMEOUT_MS = 10_000;

/** The configured program: `settings.path`, else `bwrap`. */
export function bwrapProgram(settings: BackendSettings): string {
  const path = settings['path'];
  return typeof path === 'string' && path !== '' ? path : 'bwrap';
}

/** `settings.extra_args` as strings (Lua may send an empty table as an object). */
export function bwrapExtraArgs(settings: BackendSettings): string[] {
  const extra = settings['extra_args'];
  if (!Array.isArray(extra)) return [];
  const out: string[] = [];
  for (const item of extra as unknown[]) {
    if (typeof item === 'string') out.push(item);
    else if (typeof item === 'number' && Number.isFinite(item)) out.push(String(item));
  }
  return out;
}

function isDirectorySync(path: string): boolean {
  return statIfAny(path)?.isDirectory() === true;
}

/** The bwrap command line for `argv` under `policy`. */
export function bwrapArgv(
  argv: readonly string[],
  policy: SandboxPolicy,
  settings: BackendSettings,
  exists: (path: string) => boolean = existsSync,
  isDirectory: (path: string) => boolean = isDirectorySync,
): string[] {
  const out = [bwrapProgram(settings), '--ro-bind', '/', '/'];
  for (const path of policy.rw_paths) {
    if (exists(path)) out.push('--bind', path, path);
  }
  out.push('--dev', '/dev', '--proc', '/proc');
  for (const path of policy.hidden_paths) {
    if (!exists(path)) continue;
    if (isDirectory(path)) out.push('--tmpfs', path, '--remount-ro', path);
    else out.push('--dev-bind', '/dev/null', path);
  }
  for (const path of policy.read_only_paths) {
    if (exists(path)) out.push('--ro-bind', path, path);
  }
  for (const name of policy.env_unset) out.push('--unsetenv', name);
  if (!policy.allow_privileged) out.push('--unshare-user');
  out.push('--unshare-pid', '--unshare-uts', '--unshare-ipc');
  out.push(policy.network ? '--share-net' : '--unshare-net');
  out.push('--die-with-parent', '--new-session');
  out.push(...bwrapExtraArgs(settings));
  out.push(...argv);
  return out;
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** The full path of `program` (a path, or a name looked up on `pathVar`), if executable. */
export async function findExecutable(
  program: string,
  pathVar: string | undefined,
): Promise<string | undefined> {
  if (program.includes('/')) {
    const full = isAbsolute(program) ? program : resolvePath(program);
    return (await isExecutableFile(full)) ? full : undefined;
  }
  for (const dir of (pathVar ?? '').split(delimiter)) {
    if (dir === '') continue;
    const full = join(dir, program);
    if (await isExecutableFile(full)) return full;
  }
  return undefined;
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0]?.trim() ?? '';
}

export function createBwrapBackend(options: BwrapOptions = {}): SandboxBackend {
  const platform = options.platform ?? process.platform;
  const run: ProbeRunFn = options.run ?? runProcess;
  const exists = options.exists ?? existsSync;
  const isDirectory = options.isDirectory ?? isDirectorySync;
  return {
    name: 'bwrap',
    priority: BWRAP_PRIORITY,
    description: 'Bubblewrap (Linux)',
    async available(settings) {
      if (platform !== 'linux') {
        return {
          ok: false,
          error: `Bubblewrap needs Linux (user namespaces); this platform is '${platform}'`,
        };
      }
      const program = bwrapProgram(settings);
      const pathVar = 'pathVar' in options ? options.pathVar : process.env['PATH'];
      const full = await findExecutable(program, pathVar);
      if (full === undefined) {
        return {
          ok: false,
          error: `bubblewrap (bwrap) not found at '${program}'. Install it (e.g. apt install bubblewrap) or set sandbox.backends.bwrap.path`,
        };
      }
      const probe = await run(
        [
          full,
          '--ro-bind',
          '/',
          '/',
          '--dev',
          '/dev',
          '--proc',
          '/proc',
          '--unshare-user',
          '--unshare-pid',
          '--die-with-parent',
          'true',
        ],
        { cwd: '/', timeoutMs: PROBE_TIMEOUT_MS },
      );
      if (probe.exitCode === 0) return { ok: true };
      const why =
        probe.startError ??
        (probe.timedOut
          ? 'timed out'
          : firstLine(probe.stderr) ||
            firstLine(probe.output) ||
            `exit ${probe.exitCode ?? probe.signal ?? '?'}`);
      return { ok: false, error: `bwrap cannot create a sandbox here: ${why}` };
    },
    wrap(argv, policy, settings) {
      return bwrapArgv(argv, policy, settings, exists, isDirectory);
    },
  };
}

/** A registry with bwrap registered: the host makes one and keeps it for its lifetime. */
export function createSandboxBackends(): SandboxBackendRegistry {
  const registry = new SandboxBackendRegistry();
  // Its probe reads only the program (`path`): the default settings with and without Lua's
  // defaults filled in share it.
  registry.register(createBwrapBackend(), { builtin: true, probeKey: bwrapProgram });
  return registry;
}
