// The attention signal reaches a real terminal: Neovim's TUI runs in a tmux pane, the bytes it
// writes to the pane are recorded (`tmux pipe-pane`), and a reply finishing in a chat that is not
// current must show up there as the OSC 777 notification — wrapped in tmux's passthrough since
// `$TMUX` is set in the pane, and bare when it is not. The TUI is driven over its `--listen`
// socket by `nvim --server … --remote-expr` (a new connection each time, so one made before the
// socket listens is simply tried again); the provider is the fake HTTP server.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { ROOT, homeEnvironment, nvimBinary } from '../helpers/driver.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';

const cleanups: (() => Promise<void> | void)[] = [];
let servers = 0;

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Polls `check` until it returns a value; fails after 10 s saying what it waited for. */
async function until<T>(what: string, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Tui {
  /** Evaluates a Vim expression in the TUI's Neovim; undefined when it cannot be reached. */
  expr(expression: string): string | undefined;
  /** Every byte Neovim wrote to the pane so far. */
  output(): string;
  /** What the pane shows (for a failure's message). */
  screen(): string;
}

/** Neovim's TUI in a tmux pane of its own tmux server, its output piped to a file. */
function startTui(fake: FakeProvider, withTmuxVar: boolean): Tui {
  const home = mkdtempSync(join(tmpdir(), 'flemma-tui-'));
  const work = join(home, 'work');
  for (const dir of ['config', 'data', 'state', 'cache', 'run', 'work']) mkdirSync(join(home, dir));
  writeFileSync(join(work, 'away.chat'), '@You:\nHello?\n');
  // A name of its own per test: a server being killed must not take the next test's session.
  servers += 1;
  const socket = `flemma-attention-${String(process.pid)}-${String(servers)}`;
  const server = join(home, 'nvim.sock');
  const out = join(home, 'pane.out');
  const conf = join(home, 'tmux.conf');
  writeFileSync(conf, 'set -g status off\nset -g default-terminal tmux-256color\n');
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(NVIM|NVIM_LISTEN_ADDRESS|TMUX|TMUX_PANE)$/.test(key))
      env[key] = value;
  }
  Object.assign(env, {
    ...homeEnvironment(home),
    ANTHROPIC_API_KEY: 'sk-ant-test-key',
    ANTHROPIC_BASE_URL: fake.url,
  });
  const tmux = (...args: string[]): string =>
    execFileSync('tmux', ['-L', socket, ...args], { env, encoding: 'utf8' });
  const nvim = [
    ...(withTmuxVar ? [] : ['env', '-u', 'TMUX']),
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
    'lua require("flemma").setup({ attention = { terminal = "osc777" } })',
    'away.chat',
  ];
  tmux('-f', conf, 'new-session', '-d', '-x', '80', '-y', '24', '-c', work, ...nvim);
  cleanups.push(() => {
    try {
      tmux('kill-server');
    } catch {
      // Already gone.
    }
    rmSync(home, { recursive: true, force: true });
  });
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
    output: () => (existsSync(out) ? readFileSync(out, 'latin1') : ''),
    screen: () => tmux('capture-pane', '-p'),
  };
}

/** Sends the chat, leaves it for another buffer, and lets the fake reply. */
async function finishAway(tui: Tui, fake: FakeProvider): Promise<void> {
  // Neovim has entered and shows the chat (`-c` ran: Flemma is set up).
  await until('Neovim showing the chat', () =>
    tui.expr('luaeval("(vim.v.vim_did_enter == 1 and vim.bo.filetype == [[chat]]) and 1 or 0")') ===
    '1'
      ? true
      : undefined,
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}; the pane shows:\n${tui.screen()}`);
  });
  tui.expr('execute("Flemma send")');
  const request = await fake.nextRequest();
  tui.expr('execute("enew")');
  await anthropicReply(request, 'Done.');
}

const OSC = '\x1b]777;notify;Flemma;away.chat: the reply is finished\x07';

describe('the terminal notification in a TUI', () => {
  for (const withTmux of [true, false]) {
    it(
      withTmux
        ? 'reaches the pane through tmux passthrough when $TMUX is set'
        : 'reaches the terminal as a bare OSC 777 without $TMUX',
      async () => {
        const fake = await startFakeProvider();
        cleanups.push(() => fake.close());
        const tui = startTui(fake, withTmux);
        await finishAway(tui, fake);
        const expected = withTmux
          ? '\x1bPtmux;' + OSC.split('\x1b').join('\x1b\x1b') + '\x1b\\'
          : OSC;
        const output = await until('the notification in the pane', () => {
          const text = tui.output();
          return text.includes(expected) ? text : undefined;
        }).catch((error: unknown) => {
          throw new Error(`${String(error)}; the pane shows:\n${tui.screen()}`);
        });
        // One signal for the one event.
        expect(output.split(expected)).toHaveLength(2);
        if (!withTmux) expect(output).not.toContain('\x1bPtmux;');
      },
    );
  }
});
