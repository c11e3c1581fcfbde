// End-to-end driver: a fresh headless Neovim (`--embed --headless --clean`, private HOME and XDG
// dirs, the plugin on the runtimepath) and verbs a user would use: open a chat, type, press keys,
// wait for a plugin event, read lines and extmarks.
import { Screen } from './screen.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { attach, type NeovimClient } from 'neovim';
import { quietLogger, restoreConsole } from './quiet.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Provider credentials and endpoints a test must never inherit from the developer's shell. */
const SCRUBBED_ENV = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_GEMINI_BASE_URL',
  'GOOGLE_VERTEX_BASE_URL',
  'VERTEX_AI_ACCESS_TOKEN',
  'VERTEX_ACCESS_TOKEN',
  'MOONSHOT_API_KEY',
  'NVIM',
  'NVIM_LISTEN_ADDRESS',
  'NODE_OPTIONS',
];

export interface DriverOptions {
  /** Extra environment for Neovim (and so for the host it starts). */
  env?: Record<string, string>;
  /** Lua run after start-up, e.g. `require("flemma").setup({...})`. */
  setup?: string;
  /** Attach a UI of this size, so that redraws really happen (and `screen` shows them). */
  ui?: { width: number; height: number };
  /** Extra directories prepended to the runtimepath. */
  rtp?: string[];
  /** The plugin directory put on the runtimepath instead of the checkout (a copy, see install.ts). */
  plugin?: string;
  /**
   * Start as a user's Neovim does, with the plugin installed by the test in a package directory
   * under `env.XDG_DATA_HOME` (`nvim/site/pack/<name>/start/<plugin>`): without `--clean`, so that
   * packages load, and without the checkout on the runtimepath.
   */
  installed?: boolean;
  /**
   * Only these `User` patterns reach the driver (default: all). The benchmark listens to what it
   * waits for, as a user's configuration would, rather than to every event.
   */
  events?: string[];
  /**
   * Start in this private directory (one an earlier driver left with `kill()` or
   * `quit({ keepHome: true })`): the same HOME, XDG dirs and `work/`, so the same files and the
   * same `stdpath("state")`. The caller removes it.
   */
  home?: string;
  /**
   * A command Neovim is started through: these words, then Neovim's own command line. E.g.
   * bubblewrap putting `stdpath("state")` on a tiny tmpfs, for a real full disk:
   * `['bwrap', '--dev-bind', '/', '/', '--size', '65536', '--tmpfs', join(home, 'state'), '--']`.
   */
  wrap?: string[];
}

export interface UserEvent {
  pattern: string;
  data: Record<string, unknown>;
}

export interface Notification {
  message: string;
  level: number;
}

type Waiter<T> = { match: (item: T) => boolean; resolve: (item: T) => void };

/** The nvim binary for this test run (set by scripts/test.mjs per lane). */
export function nvimBinary(): string {
  const bin = process.env['FLEMMA_TEST_NVIM'];
  if (bin === undefined || bin === '') {
    throw new Error(
      'FLEMMA_TEST_NVIM is not set: run the end-to-end lane with `npm run test:nvim`',
    );
  }
  return bin;
}

export class Driver {
  /** What the attached UI shows (with the `ui` option). */
  readonly screen = new Screen();
  private events: UserEvent[] = [];
  private notes: Notification[] = [];
  private eventWaiters: Waiter<UserEvent>[] = [];
  private noteWaiters: Waiter<Notification>[] = [];
  private screenWaiters: Waiter<Screen>[] = [];

  private constructor(
    readonly nvim: NeovimClient,
    readonly proc: ChildProcess,
    /** A private directory: HOME, XDG dirs, and `work/` as the current directory. */
    readonly home: string,
    /** Whether `quit()` removes `home` (not when the test brought it). */
    private readonly ownsHome: boolean,
  ) {}

  static async start(options: DriverOptions = {}): Promise<Driver> {
    const home = options.home ?? mkdtempSync(join(tmpdir(), 'flemma-e2e-'));
    const work = join(home, 'work');
    for (const dir of ['config', 'data', 'state', 'cache', 'run', 'work'])
      mkdirSync(join(home, dir), { recursive: true });
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (value !== undefined && !SCRUBBED_ENV.includes(key)) env[key] = value;
    }
    Object.assign(env, homeEnv(home), options.env ?? {});
    const extra = process.env['FLEMMA_TEST_RTP']?.split(',').filter((dir) => dir !== '') ?? [];
    const rtp = [options.plugin ?? ROOT, ...(options.rtp ?? []), ...extra]
      .map((dir) => dir.replace(/[\\, ]/g, '\\$&'))
      .join(',');
    const args =
      options.installed === true
        ? ['--embed', '--headless', '-n', '-i', 'NONE']
        : ['--embed', '--headless', '--clean', '-n', '-i', 'NONE', '--cmd', `set rtp^=${rtp}`];
    const [wrapper, ...wrapArgs] = options.wrap ?? [];
    const proc =
      wrapper === undefined
        ? spawn(nvimBinary(), args, { cwd: work, env, stdio: ['pipe', 'pipe', 'pipe'] })
        : spawn(wrapper, [...wrapArgs, nvimBinary(), ...args], {
            cwd: work,
            env,
            stdio: ['pipe', 'pipe', 'pipe'],
          });
    proc.stderr.resume();
    const nvim = attach({ proc, options: { logger: quietLogger } });
    restoreConsole();
    const driver = new Driver(nvim, proc, home, options.home === undefined);
    nvim.on('notification', (method: string, args: unknown[]) => {
      driver.receive(method, args);
    });
    const channel = await nvim.channelId;
    await driver.lua(
      `local chan, patterns = ...
      vim.api.nvim_create_autocmd("User", { pattern = patterns, callback = function(ev)
        vim.rpcnotify(chan, "flemma_test_user", ev.match, ev.data or vim.empty_dict())
      end })
      local notify = vim.notify
      vim.notify = function(msg, level, opts)
        vim.rpcnotify(chan, "flemma_test_notify", tostring(msg), level or vim.log.levels.INFO)
        return notify(msg, level, opts)
      end`,
      channel,
      options.events ?? '*',
    );
    if (options.ui !== undefined) {
      await nvim.uiAttach(options.ui.width, options.ui.height, {
        ext_linegrid: true,
        ext_hlstate: true,
      });
    }
    if (options.setup !== undefined) await driver.lua(options.setup);
    return driver;
  }

  private receive(method: string, args: unknown[]): void {
    if (method === 'redraw') {
      this.screen.handle(args);
      if (this.screenWaiters.length > 0) {
        this.screenWaiters = this.settle(this.screenWaiters, this.screen);
      }
    } else if (method === 'flemma_test_user') {
      const event: UserEvent = {
        pattern: String(args[0]),
        data: (args[1] ?? {}) as Record<string, unknown>,
      };
      this.events.push(event);
      this.eventWaiters = this.settle(this.eventWaiters, event);
    } else if (method === 'flemma_test_notify') {
      const note: Notification = { message: String(args[0]), level: Number(args[1]) };
      this.notes.push(note);
      this.noteWaiters = this.settle(this.noteWaiters, note);
    }
  }

  private settle<T>(waiters: Waiter<T>[], item: T): Waiter<T>[] {
    return waiters.filter((waiter) => {
      if (!waiter.match(item)) return true;
      waiter.resolve(item);
      return false;
    });
  }

  /** Run Lua in Neovim; `...` receives `args`. */
  async lua<T = unknown>(code: string, ...args: unknown[]): Promise<T> {
    return (await this.nvim.request('nvim_exec_lua', [code, args])) as T;
  }

  /** Run an Ex command, as typed after `:`. */
  async command(cmd: string): Promise<void> {
    await this.nvim.command(cmd);
  }

  /** Run an Ex command and return what it printed. */
  async commandOutput(cmd: string): Promise<string> {
    return ((await this.nvim.request('nvim_exec2', [cmd, { output: true }])) as { output: string })
      .output;
  }

  /** Write a file under the work directory (relative paths) and return its absolute path. */
  writeFile(path: string, content: string | Uint8Array): string {
    const full = resolve(this.home, 'work', path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
    return full;
  }

  /** Open a `.chat` file (created with `lines` first, if given); returns its buffer number. */
  async openChat(name = 'test.chat', lines?: string[]): Promise<number> {
    if (lines !== undefined) this.writeFile(name, lines.join('\n') + '\n');
    await this.command(`edit ${name.replace(/[ \\%#]/g, '\\$&')}`);
    return this.lua<number>('return vim.api.nvim_get_current_buf()');
  }

  /** Type literal text in the current mode (no key notation). */
  async type(text: string): Promise<void> {
    await this.nvim.input(text.replace(/</g, '<lt>'));
    await this.settleInput();
  }

  /** Press keys in Neovim's key notation, e.g. `i`, `<Esc>`, `<C-]>`. */
  async press(keys: string): Promise<void> {
    await this.nvim.input(keys);
    await this.settleInput();
  }

  /** Input is queued; a request behind it returns once the keys before it were processed. */
  private async settleInput(): Promise<void> {
    await this.nvim.request('nvim_get_mode', []);
  }

  /** Redraw now; the screen model holds the result when this returns. */
  async redraw(): Promise<Screen> {
    await this.command('redraw!');
    return this.screen;
  }

  async lines(bufnr = 0): Promise<string[]> {
    return (await this.nvim.request('nvim_buf_get_lines', [bufnr, 0, -1, false])) as string[];
  }

  async mode(): Promise<string> {
    return ((await this.nvim.request('nvim_get_mode', [])) as { mode: string }).mode;
  }

  /** Extmarks of a namespace (by name), with details: `[id, row, col, details]`. */
  async extmarks(
    namespace: string,
    bufnr = 0,
  ): Promise<[number, number, number, Record<string, unknown>][]> {
    return this.lua(
      `local ns = vim.api.nvim_get_namespaces()[select(1, ...)]
      if not ns then return {} end
      return vim.api.nvim_buf_get_extmarks(select(2, ...), ns, 0, -1, { details = true })`,
      namespace,
      bufnr,
    );
  }

  /**
   * Wait for a `User` autocmd with this pattern (e.g. `FlemmaRequestFinished`). Events seen
   * earlier count too, unless `after` (an `eventCount` taken before) says otherwise.
   */
  waitForEvent(
    pattern: string,
    options: { timeout?: number; after?: number; match?: (event: UserEvent) => boolean } = {},
  ): Promise<UserEvent> {
    const after = options.after ?? 0;
    const match = (event: UserEvent): boolean =>
      event.pattern === pattern && (options.match?.(event) ?? true);
    const seen = this.events.slice(after).find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return this.waitFor(this.eventWaiters, match, options.timeout ?? 10000, `User ${pattern}`);
  }

  /**
   * Wait until the Lua `condition` (`...` receives `args`) returns true. Neovim checks it itself
   * (`vim.wait` with a condition) each time it has handled something: an RPC message, a timer, a
   * scheduled callback. For states no event announces (extmarks, diagnostics, folds), never for
   * what Neovim draws (see docs/testing.md). Fails after `timeout` ms (10 s by default), naming
   * the condition.
   */
  async waitUntil(
    condition: string,
    options: { args?: unknown[]; timeout?: number } = {},
  ): Promise<void> {
    const timeout = options.timeout ?? 10000;
    const met = await this.lua<boolean>(
      `local timeout, code, args = ...
      local check = assert(loadstring(code))
      return vim.wait(timeout, function() return check(unpack(args)) == true end, 5)`,
      timeout,
      condition,
      options.args ?? [],
    );
    if (!met) throw new Error(`timed out after ${String(timeout)} ms waiting until: ${condition}`);
  }

  /**
   * Wait until the extmarks of a namespace (by name) in a buffer satisfy `until`, a Lua
   * expression over `marks` (as `extmarks` returns them), `bufnr` and `value` (any value from
   * the test); by default, that there is one. Returns them.
   */
  async waitForExtmarks(
    namespace: string,
    options: { bufnr?: number; until?: string; value?: unknown } = {},
  ): Promise<[number, number, number, Record<string, unknown>][]> {
    const bufnr = options.bufnr ?? 0;
    await this.waitUntil(
      `local name, bufnr, value = ...
      local ns = vim.api.nvim_get_namespaces()[name]
      local marks = ns and vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true }) or {}
      return ${options.until ?? '#marks > 0'}`,
      { args: [namespace, bufnr, options.value ?? null] },
    );
    return this.extmarks(namespace, bufnr);
  }

  /**
   * Resolves once Neovim has run every callback scheduled (`vim.schedule`) before this call, such
   * as the work a buffer change queued for the next tick.
   */
  async afterScheduled(): Promise<void> {
    const ran = await this.lua<boolean>(
      `local ran = false
      vim.schedule(function() ran = true end)
      return vim.wait(10000, function() return ran end, 5)`,
    );
    if (!ran) throw new Error('timed out after 10000 ms waiting for the scheduled callbacks');
  }

  /** Wait until `count` `User` autocmds with this pattern were seen in all (earlier ones count). */
  async waitForEventCount(pattern: string, count: number): Promise<void> {
    for (;;) {
      const before = this.eventCount;
      if (this.eventsSeen(pattern).length >= count) return;
      await this.waitForEvent(pattern, { after: before });
    }
  }

  /** How many events were seen so far (pass as `after` to wait only for newer ones). */
  get eventCount(): number {
    return this.events.length;
  }

  eventsSeen(pattern?: string): UserEvent[] {
    return this.events.filter((event) => pattern === undefined || event.pattern === pattern);
  }

  /** Every `vim.notify` message so far. */
  notifications(): Notification[] {
    return [...this.notes];
  }

  /** Wait for a `vim.notify` message matching a pattern (earlier ones count unless `after`). */
  waitForNotification(
    pattern: RegExp,
    options: { timeout?: number; after?: number } = {},
  ): Promise<Notification> {
    const after = options.after ?? 0;
    const match = (note: Notification): boolean => pattern.test(note.message);
    const seen = this.notes.slice(after).find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return this.waitFor(
      this.noteWaiters,
      match,
      options.timeout ?? 10000,
      `notification ${String(pattern)}`,
    );
  }

  /**
   * Wait until what the attached UI shows (the `ui` option) satisfies `match`, checked now and
   * after each redraw Neovim sends; Neovim redraws by itself when it is idle.
   */
  waitForScreen(
    match: (screen: Screen) => boolean,
    options: { timeout?: number; what?: string } = {},
  ): Promise<Screen> {
    if (match(this.screen)) return Promise.resolve(this.screen);
    return this.waitFor(
      this.screenWaiters,
      match,
      options.timeout ?? 10000,
      `the screen: ${options.what ?? 'a condition'}`,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${this.screen.rows().join('\n')}`);
    });
  }

  get notificationCount(): number {
    return this.notes.length;
  }

  private waitFor<T>(
    list: Waiter<T>[],
    match: (item: T) => boolean,
    timeout: number,
    what: string,
  ): Promise<T> {
    return new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        const index = list.indexOf(waiter);
        if (index >= 0) list.splice(index, 1);
        reject(new Error(`timed out after ${String(timeout)} ms waiting for ${what}`));
      }, timeout);
      const waiter: Waiter<T> = {
        match,
        resolve: (item) => {
          clearTimeout(timer);
          resolvePromise(item);
        },
      };
      list.push(waiter);
    });
  }

  /**
   * Kill Neovim with SIGKILL, as a crash would (no autocmds, no `:qa`); the private directory
   * stays for a driver started with `home`. The host it started sees its channel close.
   */
  async kill(): Promise<void> {
    const exited = new Promise<void>((resolvePromise) => {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) resolvePromise();
      else
        this.proc.once('exit', () => {
          resolvePromise();
        });
    });
    this.proc.kill('SIGKILL');
    await exited;
  }

  /**
   * Quit Neovim (with `options.command`, default `qa!`) and remove the private directory (unless
   * `keepHome`, or the test brought it).
   */
  async quit(options: { keepHome?: boolean; command?: string } = {}): Promise<void> {
    const exited = new Promise<void>((resolvePromise) => {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) resolvePromise();
      else
        this.proc.once('exit', () => {
          resolvePromise();
        });
    });
    try {
      this.nvim.notify('nvim_command', [options.command ?? 'qa!']);
    } catch {
      // Already gone.
    }
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
    if (this.ownsHome && options.keepHome !== true) {
      // Retried: a process of the session (the host, a sandboxed tool) may still be closing its
      // files in the directory when Neovim has exited (ENOTEMPTY, seen once in CI).
      rmSync(this.home, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    }
  }
}

/** `HOME` and the XDG directories of a private home (its `config`, `data`, … subdirectories). */
export function homeEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_DATA_HOME: join(home, 'data'),
    XDG_STATE_HOME: join(home, 'state'),
    XDG_CACHE_HOME: join(home, 'cache'),
    XDG_RUNTIME_DIR: join(home, 'run'),
  };
}

export function startDriver(options: DriverOptions = {}): Promise<Driver> {
  return Driver.start(options);
}
