// Background processes for the `process_*` tools (Flynn's `process.start/status/output/kill`):
// started through execa, each leading its own process group, remembered per buffer, and all
// stopped when the host exits (Neovim quit, the host restarted).
//
// Decisions (see docs/tools.md):
// - Ids are `p1`, `p2`, … per host, so the model can name them in later calls.
// - Output (stdout and stderr interleaved) is kept in memory, the last 1 MiB per process.
// - `kill` sends SIGTERM (or the signal asked for) to the whole group, then SIGKILL after 2 s if
//   anything in it is still alive.
// - On `exit` of the host process every group still alive gets SIGKILL (synchronously: nothing
//   asynchronous runs in an `exit` handler).
// - A process may be started from any buffer and seen from any buffer (its `bufnr` is shown);
//   `list(bufnr)` gives one buffer's.

import { childOptions, loadExeca } from './process.js';

export interface StartRequest {
  bufnr: number;
  argv: readonly string[];
  /** What the model asked for, shown in listings. */
  command: string;
  cwd: string;
  env?: Record<string, string>;
  /** `false`: the process gets `env` only, not the host's environment (default true). */
  extendEnv?: boolean;
}

export interface ProcessInfo {
  id: string;
  pid: number | null;
  bufnr: number;
  command: string;
  cwd: string;
  running: boolean;
  exitCode: number | null;
  signal: string | null;
  startedAt: number;
  endedAt: number | null;
  /** Bytes of output seen (all of it, not only what is kept). */
  outputBytes: number;
  startError?: string;
}

interface Entry extends ProcessInfo {
  output: string;
  done: Promise<void>;
}

const KEEP_BYTES = 1024 * 1024;
const KILL_GRACE_MS = 2000;

function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

export class ProcessManager {
  readonly #entries = new Map<string, Entry>();
  #seq = 0;
  #exitHook: (() => void) | undefined;

  async start(request: StartRequest): Promise<ProcessInfo> {
    const [file, ...args] = request.argv;
    const id = `p${String(++this.#seq)}`;
    const entry: Entry = {
      id,
      pid: null,
      bufnr: request.bufnr,
      command: request.command,
      cwd: request.cwd,
      running: false,
      exitCode: null,
      signal: null,
      startedAt: Date.now(),
      endedAt: null,
      outputBytes: 0,
      output: '',
      done: Promise.resolve(),
    };
    this.#entries.set(id, entry);
    if (file === undefined || file === '') {
      entry.startError = 'no program given';
      entry.endedAt = Date.now();
      return this.info(id) as ProcessInfo;
    }
    const { execa } = await loadExeca();
    const child = execa(file, args, {
      ...childOptions(request),
      buffer: false,
      stdin: 'ignore',
      all: true,
    });
    entry.pid = child.pid ?? null;
    entry.running = entry.pid !== null;
    this.#hookExit();
    child.all.on('data', (chunk: Buffer | string) => {
      const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      entry.outputBytes += Buffer.byteLength(text);
      entry.output += text;
      if (entry.output.length > KEEP_BYTES) entry.output = entry.output.slice(-KEEP_BYTES);
    });
    entry.done = child.then(
      (result) => {
        entry.running = false;
        entry.exitCode = result.exitCode ?? null;
        entry.signal = result.signal ?? null;
        entry.endedAt = Date.now();
        if (result.failed && result.exitCode === undefined && result.signal === undefined) {
          const cause: unknown = result.cause;
          entry.startError =
            cause instanceof Error ? cause.message : (result.shortMessage ?? 'failed to start');
        }
      },
      (error: unknown) => {
        entry.running = false;
        entry.endedAt = Date.now();
        entry.startError = error instanceof Error ? error.message : String(error);
      },
    );
    // A program that cannot start fails at once: report that rather than "running".
    await Promise.race([entry.done, new Promise((resolve) => setTimeout(resolve, 50))]);
    return this.info(id) as ProcessInfo;
  }

  info(id: string): ProcessInfo | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    const info: ProcessInfo & Partial<Pick<Entry, 'output' | 'done'>> = { ...entry };
    delete info.output;
    delete info.done;
    return info;
  }

  /** The kept output; the last `tailBytes` characters when given. */
  output(id: string, tailBytes?: number): string | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    return tailBytes === undefined ? entry.output : entry.output.slice(-tailBytes);
  }

  list(bufnr?: number): ProcessInfo[] {
    return [...this.#entries.keys()]
      .map((id) => this.info(id) as ProcessInfo)
      .filter((info) => bufnr === undefined || info.bufnr === bufnr);
  }

  /** Stops a process group; resolves once it has exited. `false` when it was not running. */
  async kill(id: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<boolean> {
    const entry = this.#entries.get(id);
    if (entry?.pid === null || entry === undefined || !entry.running) return false;
    const pid = entry.pid;
    signalGroup(pid, signal);
    const timer = setTimeout(() => {
      if (signalGroup(pid, 0)) signalGroup(pid, 'SIGKILL');
    }, KILL_GRACE_MS);
    try {
      await entry.done;
    } finally {
      clearTimeout(timer);
    }
    return true;
  }

  /** SIGKILL to every group still alive (synchronous: used on exit). */
  killAllSync(): number {
    let count = 0;
    for (const entry of this.#entries.values()) {
      if (entry.running && entry.pid !== null && signalGroup(entry.pid, 'SIGKILL')) count++;
    }
    return count;
  }

  #hookExit(): void {
    if (this.#exitHook !== undefined) return;
    this.#exitHook = () => {
      this.killAllSync();
    };
    process.once('exit', this.#exitHook);
  }

  /** Stops every process and forgets the exit hook (its owner is done with it). */
  async dispose(): Promise<void> {
    await Promise.all([...this.#entries.keys()].map((id) => this.kill(id, 'SIGKILL')));
    if (this.#exitHook !== undefined) process.removeListener('exit', this.#exitHook);
    this.#exitHook = undefined;
  }
}
