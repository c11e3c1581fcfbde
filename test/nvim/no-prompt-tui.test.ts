// No hit-enter prompt from Flemma in a real 80 × 24 terminal (docs/ui.md, "Messages"): each
// command that answers with several lines, and an error of several lines (no credential), is
// typed into Neovim's TUI in a tmux pane; its answer shows (in a scratch buffer, or as one line)
// and the screen never says "Press ENTER".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Tui, entered, startTui, until } from '../helpers/tui.js';

const CHAT = [
  '@You:',
  'List the files.',
  '',
  '@Assistant:',
  'Listing.',
  '',
  '**Tool Use:** `bash` (`toolu_W`)',
  '',
  '```json',
  '{"command": "ls"}',
  '```',
  '',
  '@You:',
  '**Tool Result:** `toolu_W`',
  '',
  '```flemma:tool status=pending',
  '```',
  '',
];

let tui: Tui;

beforeAll(async () => {
  tui = startTui({
    setup: 'lua require("flemma").setup({})',
    files: { 'work.chat': CHAT.join('\n') },
    open: 'work.chat',
  });
  await entered(tui, 'chat');
});

afterAll(async () => {
  await tui.close();
});

/** Types `:Flemma <command>` with the cursor on the tool call, and waits for `answer` on screen. */
async function run(command: string, answer: RegExp): Promise<string> {
  // Back to the chat alone, the cursor on the call (a report opened before is closed).
  tui.keys('Escape', ':silent! buffer work.chat | only', 'Enter', ':7', 'Enter');
  await until('the chat alone', () =>
    tui.expr('winnr("$") == 1 && line(".") == 7 && &filetype ==# "chat"') === '1'
      ? true
      : undefined,
  );
  tui.keys(`:Flemma ${command}`, 'Enter');
  return until(`the answer of ${command}`, () => {
    const screen = tui.screen();
    return answer.test(screen) ? screen : undefined;
  }).catch((error: unknown) => {
    throw new Error(`${String(error)}; the pane shows:\n${tui.screen()}`);
  });
}

describe('Flemma at 80 × 24 in a real terminal', () => {
  it.each([
    // What each shows last: the whole answer is on screen.
    ['host:status', /log: .*flemma\.log/],
    ['sandbox:status', /Backend: /],
    ['tool:why', /\$default {2}\(default\)/],
    ['mcp:status', /MCP: no server is configured/],
    ['tool:list', /No tool is running/],
    ['autopilot:status', /autopilot in buffer \d+: idle/],
    ['tool:always', /YOLO mode: off/],
    // No credential: an error of several lines, as one line.
    ['send', /anthropic: no .*:Flemma status\)/],
  ])(':Flemma %s answers without a hit-enter prompt', async (command, answer) => {
    const screen = await run(command, answer);
    expect(screen).not.toMatch(/Press ENTER/);
  });
});
