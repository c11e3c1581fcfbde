// The tool loop, from the end of a reply that asks for tools to the follow-up request at the
// fake server: warm (S3: 8 `read` calls; S4: `bash` printing 5 MB) and first of a fresh Neovim.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Driver, ROOT, startDriver } from '../helpers/driver.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';
import { type Lane, median, percentile, report } from './report.js';
import { anthropicReply, anthropicToolReply } from './sse.js';

const BENCH_RTP = join(ROOT, 'test/bench');

/** The driver's setup: the host started with `FLEMMA_BENCH_NODE` when set (to profile it). */
export const BENCH_HOST_SETUP =
  'require("flemma").setup({ host = { node = os.getenv("FLEMMA_BENCH_NODE") or "node" } })';

/** A trace mark next to the host's (`FLEMMA_TRACE`), to place the bench's own moments. */
export function benchMark(label: string): void {
  const file = process.env['FLEMMA_TRACE'];
  if (file !== undefined && file !== '')
    appendFileSync(file, `${(performance.timeOrigin + performance.now()).toFixed(2)} ${label}\n`);
}

function envNumber(name: string, fallback: number): number {
  const value = process.env[name];
  return value === undefined || value === '' ? fallback : Number(value);
}

interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

/** What one loop asks for: the files it needs, its calls, and how many results come back. */
interface LoopCase {
  files: Record<string, string>;
  calls: (run: string) => ToolCall[];
  results: number;
}

/** 8 parallel `read` calls of small files, which the default policy approves. */
const READS: LoopCase = {
  files: Object.fromEntries(
    Array.from({ length: 8 }, (_, i) => [
      `file${String(i + 1)}.txt`,
      `contents of file ${String(i + 1)}\n`,
    ]),
  ),
  calls: (run) =>
    Array.from({ length: 8 }, (_, i) => ({
      id: `toolu_${run}_${String(i)}`,
      name: 'read',
      input: { label: 'file', path: `file${String(i + 1)}.txt`, offset: null, limit: null },
    })),
  results: 8,
};

/** One `bash` call printing 5 MB, approved in the sandbox (bubblewrap) by the default policy. */
const BASH_5MB: LoopCase = {
  files: {},
  calls: (run) => [
    {
      id: `toolu_${run}_bash`,
      name: 'bash',
      input: {
        label: 'print 5 MB',
        command: "head -c 5000000 /dev/zero | tr '\\0' x | fold -w 99",
        timeout: null,
      },
    },
  ],
  results: 1,
};

/** A Neovim for a bench against `fake`, set up with `setup`, its requests' ends watched. */
export function startBenchDriver(fake: FakeProvider, setup = BENCH_HOST_SETUP): Promise<Driver> {
  return startDriver({
    rtp: [BENCH_RTP],
    ui: { width: 120, height: 40 },
    events: ['FlemmaBootComplete', 'FlemmaRequestFinished'],
    env: { ANTHROPIC_API_KEY: 'sk-bench', ANTHROPIC_BASE_URL: fake.url },
    setup,
  });
}

async function startLoopDriver(fake: FakeProvider, loop: LoopCase): Promise<Driver> {
  const driver = await startBenchDriver(fake);
  for (const [name, text] of Object.entries(loop.files)) driver.writeFile(name, text);
  await driver.openChat('loop.chat', ['@You:', 'Do it.']);
  await driver.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
  return driver;
}

/**
 * One loop, started with `<C-]>` on the chat's last question: the reply asks for the calls, all
 * at once (or its first call at once and the rest `streamMs` later); autopilot runs them and
 * sends the results. Returns the ms from `<C-]>` to the first request's body at the server and
 * from the reply's end to the follow-up request, checked to carry every result.
 */
async function runLoop(
  driver: Driver,
  fake: FakeProvider,
  loop: LoopCase,
  run: string,
  streamMs: number,
): Promise<{ send: number; loop: number }> {
  const finished = driver.eventsSeen('FlemmaRequestFinished').length;
  const pressed = performance.now();
  void driver.nvim.input('<C-]>');
  const request = await fake.nextRequest({ path: /^\/v1\/messages/, timeout: 20000 });
  const send = performance.now() - pressed;
  const stream = request.stream();
  const reply = anthropicToolReply(loop.calls(run));
  if (streamMs > 0) {
    // The model starts its first call at once, then takes its time writing the calls.
    const cut = reply.indexOf('event: content_block_delta');
    await stream.write(reply.slice(0, cut));
    await new Promise((resolve) => setTimeout(resolve, streamMs));
    await stream.write(reply.slice(cut));
  } else {
    await stream.write(reply);
  }
  const ended = performance.now();
  benchMark('bench:ended');
  await stream.end();
  const follow = await fake.nextRequest({ path: /^\/v1\/messages/, timeout: 20000 });
  benchMark('bench:follow');
  const took = performance.now() - ended;
  const messages = (follow.body as { messages: { content: { type: string }[] }[] }).messages;
  const results = (messages[messages.length - 1]?.content ?? []).filter(
    (part) => part.type === 'tool_result',
  );
  if (results.length !== loop.results)
    throw new Error(`loop: the follow-up carries ${String(results.length)} results`);
  const answer = follow.stream();
  await answer.write(anthropicReply(['ok']));
  await answer.end();
  // Both requests of this run are finished (the tool reply and the follow-up).
  while (driver.eventsSeen('FlemmaRequestFinished').length < finished + 2) {
    await driver.waitForEvent('FlemmaRequestFinished', { after: driver.eventCount });
  }
  await driver.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Again." })');
  return { send, loop: took };
}

/**
 * Warm loops in one Neovim: `runs` of them, the first two left out; and the CPU time Neovim and
 * its host used per loop meanwhile (the whole run: the send, the reply, the tools, the follow-up
 * and its reply), which a loaded machine disturbs far less than the wall time.
 */
async function warmLoops(
  fake: FakeProvider,
  loop: LoopCase,
  runs: number,
): Promise<{ samples: number[]; cpu: { nvim: number; host: number } }> {
  const driver = await startLoopDriver(fake, loop);
  try {
    const samples: number[] = [];
    let before = { nvim: 0, host: 0 };
    for (let run = 0; run < runs; run++) {
      if (run === 2) before = await loopCpu(driver);
      samples.push((await runLoop(driver, fake, loop, `r${String(run)}`, 0)).loop);
    }
    const after = await loopCpu(driver);
    const per = (side: 'nvim' | 'host'): number => (after[side] - before[side]) / (runs - 2);
    return { samples: samples.slice(2), cpu: { nvim: per('nvim'), host: per('host') } };
  } finally {
    await driver.quit();
  }
}

/** CPU time in ms so far: Neovim's and its host's (flemma_bench.cpu). */
function loopCpu(driver: Driver): Promise<{ nvim: number; host: number }> {
  return driver.lua<{ nvim: number; host: number }>('return require("flemma_bench").cpu()');
}

/**
 * S3, the warm tool loop: 8 parallel `read` calls of small files; S4, `bash` printing 5 MB (run
 * in the sandbox). From the end of the reply to the follow-up request with every result.
 * `FLEMMA_BENCH_S3_RUNS` takes more samples (when comparing two builds on a noisy machine).
 */
export async function toolLoopBenchmark(lane: Lane): Promise<void> {
  const fake = await startFakeProvider();
  try {
    const runs = envNumber('FLEMMA_BENCH_S3_RUNS', 12);
    const name = (metric: string): string => `${metric}[nvim-${lane.lane}]`;
    const s3 = await warmLoops(fake, READS, runs);
    report(name('tools.s3_stream_end_to_followup.median'), percentile(s3.samples, 50), 'ms');
    report(name('tools.s3_stream_end_to_followup.max'), Math.max(...s3.samples), 'ms');
    const s4 = await warmLoops(fake, BASH_5MB, Math.max(4, Math.round(runs / 2)));
    report(name('tools.s4_stream_end_to_followup.median'), percentile(s4.samples, 50), 'ms');
    report(name('tools.s4_stream_end_to_followup.max'), Math.max(...s4.samples), 'ms');
    for (const [figure, measured] of [
      ['s3', s3],
      ['s4', s4],
    ] as const) {
      report(name(`tools.${figure}_cpu_per_loop.nvim`), measured.cpu.nvim, 'ms');
      report(name(`tools.${figure}_cpu_per_loop.host`), measured.cpu.host, 'ms');
    }
  } finally {
    await fake.close();
  }
}

/** First loops: each sample a fresh Neovim and host, idle `idleMs` before `<C-]>`. */
async function firstLoops(
  fake: FakeProvider,
  loop: LoopCase,
  runs: number,
): Promise<{ sends: number[]; loops: number[] }> {
  const streamMs = envNumber('FLEMMA_BENCH_FIRST_STREAM_MS', 0);
  const idleMs = envNumber('FLEMMA_BENCH_FIRST_IDLE_MS', 1000);
  const sends: number[] = [];
  const loops: number[] = [];
  for (let run = 0; run < runs; run++) {
    const driver = await startLoopDriver(fake, loop);
    try {
      // The user writes the question: the host is idle meanwhile.
      if (idleMs > 0) await new Promise((resolve) => setTimeout(resolve, idleMs));
      const sample = await runLoop(driver, fake, loop, 'first', streamMs);
      sends.push(sample.send);
      loops.push(sample.loop);
    } finally {
      await driver.quit();
    }
  }
  return { sends, loops };
}

/**
 * The first tool loop of a session: like S3 and S4, but each sample is a fresh Neovim and host
 * with one chat, so every sample is the first loop its host runs. The chat is sent
 * `FLEMMA_BENCH_FIRST_IDLE_MS` (default 1000) after the host booted, as a user who writes the
 * question; the reply then arrives all at once (`FLEMMA_BENCH_FIRST_STREAM_MS=250` starts the
 * first call at once and sends the rest 250 ms later, as a model writing the calls), so nothing
 * can warm while it streams. Measured: from the end of that reply to the follow-up request, and
 * from `<C-]>` to the first request's body at the server (the session's first send).
 * `FLEMMA_BENCH_FIRST_RUNS=N` takes another number of samples (default 9).
 */
export async function firstToolLoopBenchmark(lane: Lane): Promise<void> {
  const fake = await startFakeProvider();
  const runs = envNumber('FLEMMA_BENCH_FIRST_RUNS', 9);
  const name = (metric: string): string => `${metric}[nvim-${lane.lane}]`;
  try {
    const reads = await firstLoops(fake, READS, runs);
    report(name('tools.first_loop_stream_end_to_followup.median'), median(reads.loops), 'ms');
    report(name('tools.first_loop_stream_end_to_followup.max'), Math.max(...reads.loops), 'ms');
    report(name('send.first_keypress_to_body.median'), median(reads.sends), 'ms');
    const bash = await firstLoops(fake, BASH_5MB, runs);
    report(
      name('tools.first_loop_bash_5mb_stream_end_to_followup.median'),
      median(bash.loops),
      'ms',
    );
    report(
      name('tools.first_loop_bash_5mb_stream_end_to_followup.max'),
      Math.max(...bash.loops),
      'ms',
    );
  } finally {
    await fake.close();
  }
}
