// Nothing stale on the screen of a real 80 × 24 terminal (docs/ui.md): Neovim's TUI in a tmux
// pane, the provider the fake HTTP server.
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';
import { type Tui, entered, startTui, until } from '../helpers/tui.js';

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A chat whose `bash` call runs until it is stopped. */
const RUNNING = [
  '@You:',
  'Wait.',
  '',
  '@Assistant:',
  'Waiting.',
  '',
  '**Tool Use:** `bash` (`toolu_S`)',
  '',
  '```json',
  '{"command": "sleep 60"}',
  '```',
  '',
];

async function chatInTui(lines: string[], setup = '{}'): Promise<{ tui: Tui; fake: FakeProvider }> {
  const fake = await startFakeProvider();
  cleanups.push(() => fake.close());
  const tui = startTui({
    setup: `lua vim.o.laststatus = 2; require("flemma").setup(${setup})`,
    files: { 'work.chat': lines.join('\n') },
    open: 'work.chat',
    env: { ANTHROPIC_API_KEY: 'sk-ant-test-key', ANTHROPIC_BASE_URL: fake.url },
  });
  cleanups.push(() => tui.close());
  await entered(tui, 'chat');
  return { tui, fake };
}

/** Waits until the pane shows what `check` wants, saying what it shows when it does not. */
function shows(tui: Tui, what: string, check: (screen: string) => boolean): Promise<string> {
  return until(what, () => {
    const screen = tui.screen();
    return check(screen) ? screen : undefined;
  }).catch((error: unknown) => {
    throw new Error(`${String(error)}; the pane shows:\n${tui.screen()}`);
  });
}

describe('the statusline', () => {
  it.each([
    ['a request', 'Go', 'more', 'Escape', ':Flemma send', 'Enter'],
    ['a tool', 'Go', 'more', 'Escape', ':7', 'Enter', ':Flemma tool:execute', 'Enter'],
  ])("loses a locked chat's [+-] when the host crashes during %s", async (_, ...keys) => {
    const { tui } = await chatInTui(RUNNING);
    // Changed and not written, then locked: Neovim's own `%m` says "[+-]" (0.12 draws it).
    tui.keys(...keys);
    await until('the chat locked', () =>
      tui.expr('getbufvar("work.chat", "&modifiable")') === '0' ? true : undefined,
    );
    tui.expr('luaeval("vim.uv.kill(require([[flemma.host]]).status().pid, [[sigkill]])")');
    await shows(
      tui,
      'the chat modifiable again',
      (screen) => screen.includes('work.chat [+]') && !screen.includes('[+-]'),
    );
  });
});

describe('the usage bar', () => {
  const BAR = /claude-sonnet-4-6 \(anthropic\)/;

  it('goes at the next key typed, and never covers the line of the cursor', async () => {
    const { tui, fake } = await chatInTui(['@You:', 'Hello']);
    tui.keys(':Flemma send', 'Enter');
    await anthropicReply(await fake.nextRequest(), 'Done.');
    await shows(tui, 'the bar', (screen) => BAR.test(screen));
    tui.keys('gg');
    await shows(tui, 'the bar gone at a key', (screen) => !BAR.test(screen));
    // The cursor on the window's first line, where the bar goes by default: at the bottom then.
    tui.keys(':Flemma usage:recall', 'Enter');
    const rows = (await shows(tui, 'the bar again', (screen) => BAR.test(screen))).split('\n');
    expect(rows[0]).toContain('@You:');
    // 24 rows: the window's 22, the statusline, the command line.
    expect(rows.findIndex((row) => BAR.test(row))).toBe(21);
    tui.keys('j');
    await shows(tui, 'the bar gone at the next key', (screen) => !BAR.test(screen));
  });
});
