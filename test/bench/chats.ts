// `:Flemma chats` (docs/picker.md): from the command to the list shown (`vim.ui.select` called
// with the items) over 1,000 chats in the chat directory (20 of them 1 MB) and a git project.
// Cold: the first listing of a freshly started host (nothing kept; the files in the OS's cache,
// as on a machine that used them); warm: the listings after it. Also how many files a warm
// listing reads (0: nothing changed). The usage ledger holds 10 requests of every other chat (some
// 1.3 MB), and 10 more are appended before each cold listing (read from where the index says).
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Driver, startDriver } from '../helpers/driver.js';
import { gitIn } from '../helpers/git.js';
import { type Lane, median, report } from './report.js';
import { BENCH_HOST_SETUP } from './loop.js';

const CHATS = 1000;
const LARGE_EVERY = 50;
const MB = 1024 * 1024;

/** Chat `i`: a JSON frontmatter on every third, some turns, 1 MB on every 50th. */
function chatText(i: number): string {
  const head =
    i % 3 === 0
      ? `\`\`\`json\n{ "title": "Chat ${String(i)}", "flemma": { "model": "gpt-5.4" } }\n\`\`\`\n`
      : '';
  const turns: string[] = [];
  for (let t = 0; t < 4 + (i % 7); t++) {
    turns.push(`@You:\nQuestion ${String(t)} of chat ${String(i)}?\n`);
    turns.push(`@Assistant:\n${'An answer line that goes on for a while. '.repeat(20)}\n`);
  }
  let text = head + turns.join('\n');
  if (i % LARGE_EVERY === 0) {
    const filler = `@Assistant:\n${'x'.repeat(120)}\n`.repeat(Math.ceil(MB / 133));
    text = head + turns.join('\n') + '\n' + filler.slice(0, MB - text.length);
  }
  return text;
}

/** The chat directory's file of chat `i`. */
function chatPath(home: string, i: number): string {
  const sub = `2026-${String(1 + (i % 12)).padStart(2, '0')}`;
  return join(home, 'data', 'nvim', 'flemma', 'chats', sub, `chat-${String(i)}.chat`);
}

/** The usage ledger's lines of `count` requests, of chats `from`… in turn. */
function ledgerLines(home: string, count: number, from = 0): string {
  let text = '';
  for (let k = 0; k < count; k++) {
    const line = { v: 1, at: Date.now(), chat: chatPath(home, (2 * (from + k)) % CHATS) };
    const tokens = { input: 2000, output: 410, cache_read: 6000, cache_write: 1000 };
    text += `${JSON.stringify({ ...line, provider: 'openai', model: 'gpt-5.4', ...tokens, cost: 0.0177 })}\n`;
  }
  return text;
}

/** The ledger of the bench's Neovim. */
const ledgerFile = (home: string): string => join(home, 'state', 'nvim', 'flemma', 'usage.jsonl');

function writeChats(home: string): void {
  for (let i = 0; i < CHATS; i++) {
    mkdirSync(join(chatPath(home, i), '..'), { recursive: true });
    writeFileSync(chatPath(home, i), chatText(i));
  }
  mkdirSync(join(ledgerFile(home), '..'), { recursive: true });
  writeFileSync(ledgerFile(home), ledgerLines(home, 5 * CHATS), { mode: 0o600 });
  // The project: a git work tree with a few chats of its own.
  const work = join(home, 'work');
  gitIn(home, work, 'init', '-q');
  for (let i = 0; i < 5; i++)
    writeFileSync(join(work, `project-${String(i)}.chat`), chatText(i + 1));
}

/** `:Flemma chats` (after a restart of the host when `restart`): resolves with the ms to shown. */
const PICK = `
local restart = ...
local function run()
  local t0 = vim.uv.hrtime()
  vim.ui.select = function(items)
    vim.api.nvim_exec_autocmds("User", {
      pattern = "BenchChatsShown",
      data = { ms = (vim.uv.hrtime() - t0) / 1e6, items = #items },
    })
  end
  vim.cmd("Flemma chats")
end
if restart then
  local host = require("flemma.host")
  host.restart()
  host.call("host:info", nil, function() vim.schedule(run) end)
else
  run()
end`;

async function shown(driver: Driver, restart: boolean): Promise<{ ms: number; items: number }> {
  const after = driver.eventCount;
  await driver.lua(PICK, restart);
  const event = await driver.waitForEvent('BenchChatsShown', { after, timeout: 60000 });
  return { ms: event.data['ms'] as number, items: event.data['items'] as number };
}

/** How many files a listing now reads (the host's answer says). */
function filesRead(driver: Driver): Promise<number> {
  return driver.lua<number>(`
    local done, read = false, -1
    require("flemma.host").call("chats:list", require("flemma.chats").sources(), function(_, answer)
      read, done = answer.read, true
    end)
    vim.wait(60000, function() return done end, 5)
    return read`);
}

export async function chatsBenchmark(lane: Lane): Promise<void> {
  const driver = await startDriver({ setup: BENCH_HOST_SETUP });
  try {
    writeChats(driver.home);
    // Warm the OS's cache and the host's code once.
    await shown(driver, true);
    const cold: number[] = [];
    const warm: number[] = [];
    let items = 0;
    for (let run = 0; run < 5; run++) {
      appendFileSync(ledgerFile(driver.home), ledgerLines(driver.home, 10, run * 10));
      const first = await shown(driver, true);
      cold.push(first.ms);
      items = first.items;
      for (let again = 0; again < 3; again++) warm.push((await shown(driver, false)).ms);
    }
    if (items !== CHATS + 5)
      throw new Error(`chats: ${String(items)} listed, not ${String(CHATS + 5)}`);
    const name = (metric: string): string => `chats.${metric}[nvim-${lane.lane}]`;
    report(name('1000.shown.cold.median'), median(cold), 'ms');
    report(name('1000.shown.warm.median'), median(warm), 'ms');
    report(name('1000.warm.files_read'), await filesRead(driver), 'files', 0);
  } finally {
    await driver.quit();
  }
}
