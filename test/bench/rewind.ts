// `:Flemma rewind` (docs/history.md): a turn whose reply made 20 `edit` calls (auto-approved, one
// file each; autopilot sent their results and the model answered), rewound to the question that
// started it. From the command typed to the end the host announces (`history:finished`): every
// record checked, the 20 files restored, the sibling file written and the messages out of the
// buffer; the files are checked afterwards.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Driver, ROOT, startDriver } from '../helpers/driver.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';
import { type Lane, percentile, report } from './report.js';
import { anthropicReply, anthropicToolReply } from './sse.js';

const EDITS = 20;
const MESSAGES = /^\/v1\/messages/;

const SETUP = `require("flemma").setup({
  host = { node = os.getenv("FLEMMA_BENCH_NODE") or "node" },
  tools = { auto_approve = { "$default", "edit" } },
})`;

function fileName(n: number): string {
  return `f${String(n).padStart(2, '0')}.txt`;
}

function original(n: number): string {
  return `line one of ${String(n)}\nline two\n`;
}

/** The reply's calls: each file's first line changed. */
function edits(run: number): { id: string; name: string; input: unknown }[] {
  return Array.from({ length: EDITS }, (_, n) => ({
    id: `toolu_r${String(run)}_${String(n)}`,
    name: 'edit',
    input: { label: 'e', path: fileName(n), oldText: 'line one', newText: 'LINE ONE' },
  }));
}

/** A chat of its own whose turn made the 20 edits (its follow-up answered): the buffer. */
async function turn(driver: Driver, fake: FakeProvider, run: number): Promise<void> {
  for (let n = 0; n < EDITS; n++) driver.writeFile(fileName(n), original(n));
  await driver.openChat(`rewind-${String(run)}.chat`, ['@You:', 'Change every file.']);
  const finished = driver.eventsSeen('FlemmaRequestFinished').length;
  await driver.press('G');
  void driver.nvim.input('<C-]>');
  const reply = (await fake.nextRequest({ path: MESSAGES, timeout: 20000 })).stream();
  await reply.write(anthropicToolReply(edits(run)));
  await reply.end();
  const follow = (await fake.nextRequest({ path: MESSAGES, timeout: 20000 })).stream();
  await follow.write(anthropicReply(['Done.']));
  await follow.end();
  while (driver.eventsSeen('FlemmaRequestFinished').length < finished + 2) {
    await driver.waitForEvent('FlemmaRequestFinished', { after: driver.eventCount });
  }
  const changed = readFileSync(join(driver.home, 'work', fileName(EDITS - 1)), 'utf8');
  if (!changed.startsWith('LINE ONE')) throw new Error('rewind bench: the edits did not run');
}

/** `:Flemma rewind` on the question: ms to `history:finished`, its files checked. */
async function rewind(driver: Driver): Promise<number> {
  const count = driver.eventCount;
  await driver.command('normal! 2G');
  const typed = performance.now();
  void driver.nvim.input(':Flemma rewind<CR>');
  const done = await driver.waitForEvent('FlemmaHistoryFinished', { after: count, timeout: 20000 });
  const took = performance.now() - typed;
  if (done.data['status'] !== 'done')
    throw new Error(`rewind bench: ${String(done.data['status'])}`);
  for (let n = 0; n < EDITS; n++) {
    if (readFileSync(join(driver.home, 'work', fileName(n)), 'utf8') !== original(n)) {
      throw new Error(`rewind bench: ${fileName(n)} was not restored`);
    }
  }
  return took;
}

export async function rewindBenchmark(lane: Lane): Promise<void> {
  const fake = await startFakeProvider();
  const driver = await startDriver({
    rtp: [join(ROOT, 'test/bench')],
    events: ['FlemmaBootComplete', 'FlemmaRequestFinished', 'FlemmaHistoryFinished'],
    env: { ANTHROPIC_API_KEY: 'sk-bench', ANTHROPIC_BASE_URL: fake.url },
    setup: SETUP,
  });
  try {
    await driver.openChat('warm.chat', ['@You:', 'Hello.']);
    await driver.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
    const runs = Number(process.env['FLEMMA_BENCH_REWIND_RUNS'] ?? '') || 8;
    const samples: number[] = [];
    for (let run = 0; run < runs; run++) {
      await turn(driver, fake, run);
      samples.push(await rewind(driver));
    }
    // The first run warms the modules the rewind loads.
    const warm = samples.slice(1);
    const name = (metric: string): string => `${metric}[nvim-${lane.lane}]`;
    report(name('history.rewind_20_edits.median'), percentile(warm, 50), 'ms');
    report(name('history.rewind_20_edits.max'), Math.max(...warm), 'ms');
  } finally {
    await driver.quit();
    await fake.close();
  }
}
