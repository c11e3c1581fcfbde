// The attention signal reaches a real terminal: Neovim's TUI runs in a tmux pane, the bytes it
// writes to the pane are recorded (`tmux pipe-pane`), and a reply finishing in a chat that is not
// current must show up there as the OSC 777 notification — wrapped in tmux's passthrough since
// `$TMUX` is set in the pane, and bare when it is not. The TUI is driven over its `--listen`
// socket by `nvim --server … --remote-expr` (a new connection each time, so one made before the
// socket listens is simply tried again); the provider is the fake HTTP server.
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';
import { type Tui, entered, startTui, until } from '../helpers/tui.js';

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Sends the chat, leaves it for another buffer, and lets the fake reply. */
async function finishAway(tui: Tui, fake: FakeProvider): Promise<void> {
  // Neovim has entered and shows the chat (`-c` ran: Flemma is set up).
  await entered(tui, 'chat');
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
        const tui = startTui({
          setup: 'lua require("flemma").setup({ attention = { terminal = "osc777" } })',
          files: { 'away.chat': '@You:\nHello?\n' },
          open: 'away.chat',
          env: { ANTHROPIC_API_KEY: 'sk-ant-test-key', ANTHROPIC_BASE_URL: fake.url },
          withoutTmuxVar: !withTmux,
        });
        cleanups.push(() => tui.close());
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
