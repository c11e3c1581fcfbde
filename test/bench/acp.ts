// Agents of the Agent Client Protocol (docs/agents.md), against the fake agent
// (test/helpers/fake-acp-agent.mjs): from `:Flemma send` to the agent's first chunk in the buffer,
// once the agent is up (its process started by a first turn); and a turn of 20,000 chunks: from
// the agent writing its last one to the reply being complete, and Neovim's main-loop lag meanwhile.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDriver, ROOT } from '../helpers/driver.js';
import { agentConfig, fakeAgent, say } from '../helpers/fake-acp.js';
import { type Lane, percentile, report } from './report.js';

const BENCH_RTP = join(ROOT, 'test/bench');
const CHUNKS = 20000;
const WORDS = ['lorem ', 'ipsum ', 'dolor ', 'sit ', 'amet\n'];

export async function acpBenchmark(lane: Lane): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'flemma-bench-acp-'));
  const agent = fakeAgent(dir, {
    turns: [
      { match: 'many', steps: [{ chunks: CHUNKS, texts: WORDS }] },
      { steps: [say('first')] },
    ],
  });
  const node = 'host = { node = os.getenv("FLEMMA_BENCH_NODE") or "node" }';
  const driver = await startDriver({
    rtp: [BENCH_RTP],
    ui: { width: 120, height: 40 },
    events: ['FlemmaBootComplete', 'FlemmaRequestFinished'],
    setup: `require("flemma").setup(${agentConfig(agent, node)})`,
  });
  const name = (metric: string): string => `${metric}[nvim-${lane.lane}]`;
  /** The chat's last line becomes `text`, sent; the event count before the send. */
  const send = async (text: string): Promise<number> => {
    await driver.lua('vim.api.nvim_buf_set_lines(0, -2, -1, false, { ... })', text);
    const after = driver.eventCount;
    await driver.command('Flemma send');
    return after;
  };
  try {
    await driver.openChat('acp.chat', ['@You:', '']);
    await driver.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
    // The agent's start (a node process) is not measured: a first turn brings it up.
    let after = await send('Hello.');
    await driver.waitForEvent('FlemmaRequestFinished', { after, timeout: 60000 });
    const first: number[] = [];
    for (let run = 0; run < 15; run++) {
      const started = performance.now();
      after = await send(`Turn ${String(run)}.`);
      // The agent's chunk below this turn's question (earlier replies say the same).
      await driver.waitUntil(
        `local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
        for i = #lines, 1, -1 do
          if lines[i] == ... then return vim.tbl_contains(vim.list_slice(lines, i + 1), "first") end
        end
        return false`,
        { args: [`Turn ${String(run)}.`], timeout: 10000 },
      );
      first.push(performance.now() - started);
      await driver.waitForEvent('FlemmaRequestFinished', { after, timeout: 10000 });
    }
    report(name('acp.first_chunk_in_buffer.median'), percentile(first.slice(2), 50), 'ms');
    report(name('acp.first_chunk_in_buffer.p90'), percentile(first.slice(2), 90), 'ms');

    await driver.lua('require("flemma_bench").lag_start(5)');
    after = await send('Write many words.');
    await driver.waitForEvent('FlemmaRequestFinished', { after, timeout: 120000 });
    const done = performance.timeOrigin + performance.now();
    const lag = await driver.lua<number[]>('return require("flemma_bench").lag_stop()');
    const sent = agent.events('chunks-sent').map((entry) => Number(entry['at']));
    report(name('acp.chunks_20k.complete_after_last'), done - Math.max(...sent), 'ms');
    report(name('acp.chunks_20k.main_loop_lag.p99'), percentile(lag, 99), 'ms');
    report(name('acp.chunks_20k.main_loop_lag.max'), Math.max(0, ...lag), 'ms');
    const text = (await driver.lines()).join('\n');
    if (!text.includes('amet\nlorem ipsum dolor sit amet')) {
      throw new Error('acp: the reply in the buffer is not what the agent streamed');
    }
  } finally {
    await driver.quit();
    rmSync(dir, { recursive: true, force: true });
  }
}
