// Neovim's real TUI in a tmux pane of its own tmux server (80 × 24 unless told), for what only a
// terminal shows: the bytes Neovim writes to it (`tmux pipe-pane`), the hit-enter prompt. The TUI
// is driven over its `--listen` socket by `nvim --server … --remote-expr` (a new connection each
// time, so one made before the socket listens is simply tried again) and by keys typed into the
// pane (`tmux send-keys`), as a user would.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, homeEnv, nvimBinary } from './driver.js';
import { waitForExit } from './processes.js';

/** The pids of the Neovim listening on `server` and of its children (the host), if it runs. */
function tuiProcesses(server: string): number[] {
  const all: { pid: number; ppid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      all.push({ pid: Number(entry), ppid, cmdline });
    } catch {
      // Gone meanwhile.
    }
  }
  const nvim = all.filter((p) => p.cmdline.includes(`--listen ${server} `)).map((p) => p.pid);
  return [...nvim, ...all.filter((p) => nvim.includes(p.ppid)).map((p) => p.pid)];
}

/** Polls `check` until it returns a value; fails after 10 s saying what it waited for. */
export async function until<T>(what: string, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface Tui {
  /** Evaluates a Vim expression in the TUI's Neovim; undefined when it cannot be reached. */
  expr(expression: string): string | undefined;
  /** Types `keys` into the pane (tmux key names: `Enter`, `Escape`, or literal text). */
  keys(...keys: string[]): void;
  /** Every byte Neovim wrote to the pane so far. */
  output(): string;
  /** What the pane shows. */
  screen(): string;
  /** The work directory Neovim started in. */
  work: string;
  /** The home directory of the run (the host's log is under `state/`). */
  home: string;
  /**
   * Stops the tmux server, waits until the TUI's Neovim and the programs it started (the host,
   * which logs its exit under `state/`) have exited, and removes the directories.
   */
  close(): Promise<void>;
}

export interface TuiOptions {
  /** The `-c` Lua that sets Flemma up. */
  setup: string;
  /** Files to write in the work directory, name → content. */
  files: Record<string, string>;
  /** The file Neovim opens. */
  open: string;
  /** Environment variables of Neovim (added to this process's). */
  env?: Record<string, string>;
  /** Runs Neovim under `env -u TMUX` (no `$TMUX` in its environment). */
  withoutTmuxVar?: boolean;
}

let servers = 0;

/** Starts Neovim's TUI in a tmux pane of its own tmux server, its output piped to a file. */
export function startTui(options: TuiOptions): Tui {
  const home = mkdtempSync(join(tmpdir(), 'flemma-tui-'));
  const work = join(home, 'work');
  for (const dir of ['config', 'data', 'state', 'cache', 'run', 'work']) mkdirSync(join(home, dir));
  for (const [name, content] of Object.entries(options.files))
    writeFileSync(join(work, name), content);
  // A name of its own per test: a server being killed must not take the next test's session.
  servers += 1;
  const socket = `flemma-tui-${String(process.pid)}-${String(servers)}`;
  const server = join(home, 'nvim.sock');
  const out = join(home, 'pane.out');
  const conf = join(home, 'tmux.conf');
  writeFileSync(conf, 'set -g status off\nset -g default-terminal tmux-256color\n');
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(NVIM|NVIM_LISTEN_ADDRESS|TMUX|TMUX_PANE|.*_API_KEY)$/.test(key))
      env[key] = value;
  }
  Object.assign(env, homeEnv(home), options.env);
  const tmux = (...args: string[]): string =>
    execFileSync('tmux', ['-L', socket, ...args], { env, encoding: 'utf8' });
  const nvim = [
    ...(options.withoutTmuxVar === true ? ['env', '-u', 'TMUX'] : []),
    nvimBinary(),
    '--clean',
    '-n',
    '-i',
    'NONE',
    '--listen',
    server,
    '--cmd',
    `set rtp^=${ROOT.replace(/[\\, ]/g, '\\$&')}`,
    '-c',
    options.setup,
    options.open,
  ];
  tmux('-f', conf, 'new-session', '-d', '-x', '80', '-y', '24', '-c', work, ...nvim);
  // Recorded from now on: everything the programs in the pane write to it.
  tmux('pipe-pane', '-o', `cat >> '${out}'`);
  return {
    expr: (expression) => {
      try {
        return execFileSync(
          nvimBinary(),
          ['--clean', '--headless', '--server', server, '--remote-expr', expression],
          { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
        ).trim();
      } catch {
        return undefined;
      }
    },
    keys: (...keys) => {
      tmux('send-keys', '-t', '0', ...keys);
    },
    output: () => (existsSync(out) ? readFileSync(out, 'latin1') : ''),
    screen: () => tmux('capture-pane', '-p'),
    work,
    home,
    close: async () => {
      const pids = tuiProcesses(server);
      try {
        tmux('kill-server');
      } catch {
        // Already gone.
      }
      for (const pid of pids) await waitForExit(pid, 30_000);
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Waits until the TUI's Neovim has entered and shows a buffer of `filetype`. */
export async function entered(tui: Tui, filetype: string): Promise<void> {
  await until(`Neovim showing a ${filetype} buffer`, () =>
    tui.expr(
      `luaeval("(vim.v.vim_did_enter == 1 and vim.bo.filetype == [[${filetype}]]) and 1 or 0")`,
    ) === '1'
      ? true
      : undefined,
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}; the pane shows:\n${tui.screen()}`);
  });
}
