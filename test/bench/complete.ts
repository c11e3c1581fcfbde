// Completion (docs/completion.md): `@./` in a chat at the top of a 100,000-file git work tree
// (a `.gitignore` hiding `node_modules/`, 40,000 of the files), from the question leaving Lua to
// the first page of items arriving in Lua. Cold: the first question of a host just started (no
// listing kept); warm: the same question again. Also a 600-file directory below (`@./src/d042/`).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Driver, ROOT, startDriver } from '../helpers/driver.js';
import { BENCH_HOST_SETUP } from './loop.js';
import { type Lane, percentile, report } from './report.js';

const BENCH_RTP = join(ROOT, 'test/bench');

/** The tree, made once for every lane: its top directory. */
let tree: string | undefined;

function makeTree(): string {
  if (tree !== undefined) return tree;
  const top = mkdtempSync(join(tmpdir(), 'flemma-bench-complete-'));
  // 100,000 files: gone with the benchmark's process (each run used to leave one behind).
  process.once('exit', () => {
    rmSync(top, { recursive: true, force: true });
  });
  mkdirSync(join(top, '.git'));
  writeFileSync(join(top, '.git/HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(join(top, '.gitignore'), 'node_modules/\n*.log\n');
  const fill = (dir: string, files: number, ext: string): void => {
    mkdirSync(dir, { recursive: true });
    for (let i = 0; i < files; i++) writeFileSync(join(dir, `f${String(i)}.${ext}`), '');
  };
  for (let d = 0; d < 200; d++) fill(join(top, 'node_modules', `pkg${String(d)}`), 200, 'js');
  for (let d = 0; d < 100; d++) fill(join(top, 'src', `d${String(d).padStart(3, '0')}`), 600, 'ts');
  writeFileSync(join(top, 'notes.chat'), '@You:\n@./\n@./src/d042/\n');
  tree = top;
  return top;
}

/** Milliseconds from asking (Lua) to the first page in Lua, for the reference on `row`. */
async function ask(driver: Driver, bufnr: number, row: number): Promise<number> {
  const after = driver.eventCount;
  await driver.lua(
    `local bufnr, row = ...
    local line = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1]
    local started = vim.uv.hrtime()
    require("flemma.complete").request(bufnr, function(items)
      vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaBenchComplete",
        data = { ms = (vim.uv.hrtime() - started) / 1e6, count = #items } })
    end, { row, #line })`,
    bufnr,
    row,
  );
  const event = await driver.waitForEvent('FlemmaBenchComplete', { after, timeout: 20000 });
  if ((event.data['count'] as number) === 0) throw new Error('complete: no items');
  return event.data['ms'] as number;
}

/** A host started again, and answering. */
async function freshHost(driver: Driver): Promise<void> {
  const after = driver.eventCount;
  await driver.lua(`local host = require("flemma.host")
    host.restart()
    host.call("host:info", nil, function()
      vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaBenchHostUp" })
    end, 20000)`);
  await driver.waitForEvent('FlemmaBenchHostUp', { after, timeout: 30000 });
}

export async function completeBenchmark(lane: Lane): Promise<void> {
  const top = makeTree();
  const driver = await startDriver({
    rtp: [BENCH_RTP],
    events: ['FlemmaBenchComplete', 'FlemmaBenchHostUp'],
    setup: BENCH_HOST_SETUP,
  });
  try {
    await driver.command(`edit ${join(top, 'notes.chat')}`);
    const bufnr = await driver.lua<number>('return vim.api.nvim_get_current_buf()');
    const name = (metric: string): string => `complete.${metric}[nvim-${lane.lane}]`;
    for (const [label, row] of [
      ['top', 2],
      ['dir_600', 3],
    ] as const) {
      const cold: number[] = [];
      const warm: number[] = [];
      for (let run = 0; run < 7; run++) {
        await freshHost(driver);
        cold.push(await ask(driver, bufnr, row));
        for (let again = 0; again < 3; again++) warm.push(await ask(driver, bufnr, row));
      }
      report(name(`path_${label}.first_page.cold.median`), percentile(cold, 50), 'ms');
      report(name(`path_${label}.first_page.cold.max`), Math.max(...cold), 'ms');
      report(name(`path_${label}.first_page.warm.median`), percentile(warm, 50), 'ms');
      report(name(`path_${label}.first_page.warm.max`), Math.max(...warm), 'ms');
    }
  } finally {
    await driver.quit();
  }
}
