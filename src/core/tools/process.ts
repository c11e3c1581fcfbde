// Runs one external program for a tool (bash, grep, find, git probes) through execa.
//
// Decisions:
// - The child leads its own process group (`detached`), so a timeout or a cancel can stop the
//   whole tree it started (`bash -c 'sleep 100 & wait'` included): SIGTERM to the group, then
//   SIGKILL after a grace period if anything in it is still alive.
// - The function never throws: a program that cannot start comes back as `startError`.
// - stdout and stderr are collected as strings; `mergeStderr` interleaves them into `output` in
//   the order they arrived (execa's `all`). With `bytes`, stdout is kept as it came
//   (`RunResult.bytes`): a command printing megabytes is then cut and saved without decoding it
//   all (bash, src/core/tools/truncate.ts). Its chunks are gathered here and joined once at the
//   end (execa's own byte buffer grows by copying, which cost more than decoding); past
//   `MAX_BUFFER` the stream is dropped, as execa does at its `maxBuffer`. With a `sink` (an ACP
//   terminal's tail) the chunks go there as they come and nothing is kept here.
// - With `outputFd`, stdout and stderr are that open file instead of pipes (bash's
//   output-file.ts reads it behind the program): nothing is read here, and a `limit` signal stops
//   the program as a timeout does. Its output then has no end to wait for but the program's: once
//   the leader exited, the rest of its group is given `drainMs` to end, as a pipe's last holders
//   are.
// - `onOutput` sees the output as it comes (the live view under a running call's block); it only
//   listens, the whole output is still collected for the result.
// - execa is loaded on first use with import(): it costs ~100 ms to load, and a host that never
//   runs a tool should not pay for it at start-up.

export interface RunOptions {
  cwd: string;
  /** Variables merged into the host's environment. */
  env?: Record<string, string>;
  /** `false`: the program gets `env` only, not the host's environment (default true). */
  extendEnv?: boolean;
  signal?: AbortSignal;
  /** Stop the process group after this many milliseconds (0 or absent: no limit). */
  timeoutMs?: number;
  /** Put stderr into `output` too, interleaved with stdout. */
  mergeStderr?: boolean;
  /** Text written to the program's stdin (else stdin is closed). */
  input?: string;
  /** Time between SIGTERM and SIGKILL when stopping the group. */
  killGraceMs?: number;
  /**
   * After the program exits, how long to keep reading output that background children still
   * write before giving up on them (they keep running; their later output is lost).
   */
  drainMs?: number;
  /**
   * Called with the output as it arrives (stdout, or both streams with `mergeStderr`), as the
   * bytes read (not decoded: a character may span two chunks); the whole output still comes in
   * the result.
   */
  onOutput?: (chunk: Uint8Array | string) => void;
  /**
   * Keep stdout as bytes (`RunResult.bytes`, `output` then empty) instead of decoding it; not
   * with `mergeStderr`.
   */
  bytes?: boolean;
  /**
   * With `bytes`: stdout's chunks go here (up to `MAX_BUFFER`, as they would be kept) instead of
   * being kept for `RunResult.bytes`, which is then absent.
   */
  sink?: (chunk: Uint8Array) => void;
  /**
   * stdout and stderr go to this open file, not to pipes (the caller reads it): `output` is then
   * empty and `bytes`, `sink`, `onOutput` and `mergeStderr` do not apply.
   */
  outputFd?: number;
  /** Stops the process group as a timeout does; the result says `limited`. */
  limit?: AbortSignal;
}

export interface RunResult {
  /** null when the process ended through a signal or never started. */
  exitCode: number | null;
  /** The signal that ended the process, if one did. */
  signal: string | null;
  /** stdout, or stdout and stderr interleaved with `mergeStderr` (empty with `bytes`). */
  output: string;
  /** With `bytes`: the output as the program wrote it (what `output` would decode). */
  bytes?: Uint8Array;
  stderr: string;
  timedOut: boolean;
  cancelled: boolean;
  /** Stopped through `limit`. */
  limited?: boolean;
  /** Why the program could not be started (not found, not executable, bad cwd). */
  startError?: string;
}

const DEFAULT_KILL_GRACE_MS = 2000;
/** The most output kept of one stream. */
const MAX_BUFFER = 256 * 1024 * 1024;
const DEFAULT_DRAIN_MS = 200;

type ExecaModule = typeof import('execa');

/** execa, loaded on first use (the module system keeps it). */
export function loadExeca(): Promise<ExecaModule> {
  return import('execa');
}

/** Sends `signal` to the process group led by `pid`; false when no such group exists. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** A function, so the check is made afresh after an await (no narrowing from an earlier one). */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function groupAlive(pid: number): boolean {
  return signalGroup(pid, 0 as unknown as NodeJS.Signals);
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.join('\n');
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return '';
}

/**
 * What every child Flemma starts is given: its directory, `env` on top of the host's environment
 * (unless `extendEnv` is false), its own process group, and a result instead of an exception when
 * it fails.
 */
export function childOptions(where: Pick<RunOptions, 'cwd' | 'env' | 'extendEnv'>) {
  return {
    cwd: where.cwd,
    env: where.env ?? {},
    extendEnv: where.extendEnv ?? true,
    detached: true,
    reject: false,
  } as const;
}

/**
 * The child, leading its own process group, its output collected as text (its type is execa's,
 * inferred from these options).
 */
function start(
  execa: ExecaModule['execa'],
  file: string,
  args: readonly string[],
  options: RunOptions,
) {
  return execa(file, args, {
    ...childOptions(options),
    stripFinalNewline: false,
    all: options.mergeStderr === true,
    maxBuffer: MAX_BUFFER,
    // With `bytes`, stdout is read by `gather` instead.
    buffer: { stdout: options.bytes !== true },
    ...(options.input === undefined ? { stdin: 'ignore' as const } : { input: options.input }),
    ...toFile(options.outputFd),
  });
}

/**
 * Both output streams to the descriptor `fd`. execa hands a number to `spawn` as it is; its types
 * name only the descriptors 1 to 9.
 */
function toFile(fd: number | undefined): { stdout?: 1; stderr?: 1 } {
  if (fd === undefined) return {};
  const target = fd as 1;
  return { stdout: target, stderr: target };
}

type Child = ReturnType<typeof start>;

/** Hands the child's output to `onOutput` as it comes (besides execa, which collects it). */
function follow(
  child: Child,
  merge: boolean,
  onOutput: (chunk: Uint8Array | string) => void,
): void {
  const stream = merge ? child.all : child.stdout;
  stream?.on('data', onOutput);
}

/**
 * Gathers what `stream` gives (up to `MAX_BUFFER`); the function joins it once it ended. With a
 * `sink`, the chunks go there instead and nothing is kept.
 */
function gather(
  stream: NodeJS.ReadableStream & { destroy(): void },
  sink?: (chunk: Uint8Array) => void,
): () => Uint8Array | undefined {
  const chunks: Buffer[] = [];
  const keep = sink ?? ((chunk: Buffer) => chunks.push(chunk));
  let size = 0;
  stream.on('data', (chunk: Buffer) => {
    if (size + chunk.length > MAX_BUFFER) {
      keep(chunk.subarray(0, MAX_BUFFER - size));
      size = MAX_BUFFER;
      stream.destroy();
      return;
    }
    keep(chunk);
    size += chunk.length;
  });
  return () => (sink === undefined ? Buffer.concat(chunks, size) : undefined);
}

/** How the child ended; one that never started (and was not stopped) says why. */
function resultOf(
  result: Awaited<Child>,
  merge: boolean,
  stopped: { timedOut: boolean; cancelled: boolean; limited: boolean },
  bytes: Uint8Array | undefined,
): RunResult {
  const failed = result.failed && result.exitCode === undefined && result.signal === undefined;
  const output = merge ? result.all : result.stdout;
  const base: RunResult = {
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    ...(bytes === undefined ? { output: text(output) } : { output: '', bytes }),
    stderr: text(result.stderr),
    timedOut: stopped.timedOut,
    cancelled: stopped.cancelled,
    ...(stopped.limited ? { limited: true } : {}),
  };
  if (failed && !stopped.timedOut && !stopped.cancelled && !stopped.limited) {
    const cause: unknown = result.cause;
    const reason = cause instanceof Error ? cause.message : result.shortMessage;
    return { ...base, startError: typeof reason === 'string' ? reason : 'failed to start' };
  }
  return base;
}

/**
 * Waits, up to `ms`, for the process group led by `pid` to end (its leader has exited): looked at
 * after 1 ms, then twice as long each time (its last members are usually gone within a few).
 */
async function groupEnded(pid: number | undefined, ms: number): Promise<void> {
  const until = Date.now() + ms;
  let wait = 1;
  while (pid !== undefined && groupAlive(pid) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, 20);
  }
}

/**
 * A command that leaves a background job behind (`server &`) exits while the job still holds the
 * output pipes open: reading stops shortly after the leader exits instead of waiting for it.
 */
function stopReadingAfterExit(child: Child, ms: number): () => void {
  let timer: NodeJS.Timeout | undefined;
  child.once('exit', () => {
    timer = setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      child.all?.destroy();
    }, ms);
  });
  return () => {
    clearTimeout(timer);
  };
}

export async function runProcess(argv: readonly string[], options: RunOptions): Promise<RunResult> {
  const [file, ...args] = argv;
  const empty = { exitCode: null, signal: null, output: '', stderr: '' };
  if (file === undefined || file === '') {
    return { ...empty, timedOut: false, cancelled: false, startError: 'no program given' };
  }
  if (options.signal?.aborted === true) {
    return { ...empty, timedOut: false, cancelled: true };
  }
  const { execa } = await loadExeca();
  const merge = options.mergeStderr === true;
  const toFile = options.outputFd !== undefined;
  const child = start(execa, file, args, options);
  if (options.onOutput !== undefined && !toFile) follow(child, merge, options.onOutput);
  const stdout = toFile ? null : child.stdout;
  const gathered =
    options.bytes === true && stdout !== null ? gather(stdout, options.sink) : undefined;

  // Set from timer and abort callbacks.
  const stopped = { timedOut: false, cancelled: false, limited: false };
  let killTimer: NodeJS.Timeout | undefined;
  const stop = (): void => {
    const pid = child.pid;
    if (pid === undefined) return;
    if (!signalGroup(pid, 'SIGTERM')) child.kill('SIGTERM');
    killTimer ??= setTimeout(() => {
      if (groupAlive(pid)) signalGroup(pid, 'SIGKILL');
      child.kill('SIGKILL');
    }, options.killGraceMs ?? DEFAULT_KILL_GRACE_MS);
  };
  const onAbort = (): void => {
    if (stopped.timedOut) return;
    stopped.cancelled = true;
    stop();
  };
  const onLimit = (): void => {
    stopped.limited = true;
    stop();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  options.limit?.addEventListener('abort', onLimit, { once: true });
  // An abort while execa was loading or the process was starting fired before the listener.
  if (isAborted(options.signal)) onAbort();
  const drainMs = options.drainMs ?? DEFAULT_DRAIN_MS;
  const stopDraining = toFile ? undefined : stopReadingAfterExit(child, drainMs);
  const timeoutMs = options.timeoutMs ?? 0;
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          if (stopped.cancelled) return;
          stopped.timedOut = true;
          stop();
        }, timeoutMs)
      : undefined;

  try {
    const result = await child;
    if (toFile) await groupEnded(child.pid, drainMs);
    return resultOf(result, merge, stopped, gathered?.());
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    stopDraining?.();
    options.signal?.removeEventListener('abort', onAbort);
    options.limit?.removeEventListener('abort', onLimit);
    // Children that outlived the leader (daemons the command left behind) go too once the
    // process was stopped; a normal exit leaves them alone, as a terminal would.
    if (killTimer !== undefined) {
      clearTimeout(killTimer);
      const pid = child.pid;
      if (pid !== undefined && groupAlive(pid)) signalGroup(pid, 'SIGKILL');
    }
  }
}
