// Tasks (docs/tasks.md): a child's start, from the end of the parent's reply that asks for a
// `task` (auto-approved) to the child's first request at the fake server; and 8 children at once
// streaming 2,000 deltas each: Neovim's main-loop lag in the parent meanwhile (the children's
// lines in its previews) and every child's file byte-exact once they ended.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Driver } from '../helpers/driver.js';
import {
  type FakeProvider,
  type FakeRequest,
  startFakeProvider,
} from '../helpers/fake-provider.js';
import { type Lane, percentile, report } from './report.js';
import { startBenchDriver } from './loop.js';
import { anthropicReply, anthropicToolReply } from './sse.js';

const MESSAGES = /^\/v1\/messages/;

/** The parent offers `task`, approved, and runs 8 children at once. */
const SETUP = `require("flemma").setup({
  host = { node = os.getenv("FLEMMA_BENCH_NODE") or "node" },
  tools = {
    "read", "grep", "find", "ls", "task",
    auto_approve = { "$default", "task" },
    task = { max_concurrent = 8 },
  },
})`;

function taskCall(id: string, prompt: string): { id: string; name: string; input: unknown } {
  return { id, name: 'task', input: { label: prompt, prompt, agent: null, name: null } };
}

/** The bench's Neovim, its fake server and the parent chat's buffer. */
interface Bench {
  driver: Driver;
  fake: FakeProvider;
  buf: number;
}

async function startTasksDriver(fake: FakeProvider): Promise<Bench> {
  const driver = await startBenchDriver(fake, SETUP);
  const buf = await driver.openChat('parent.chat', ['@You:', 'Delegate.']);
  await driver.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
  return { driver, fake, buf };
}

async function answer(request: FakeRequest, text: string): Promise<void> {
  const stream = request.stream();
  await stream.write(anthropicReply([text]));
  await stream.end();
}

/** Child `n`'s prompt in round `round` (its file: `NN-round-<round>-child-<n>.chat`). */
function roundPrompt(round: number, n: number): string {
  return `Round ${String(round)} child ${String(n)} streams`;
}

/** Which child of round `round` a request is: the prompt its text holds. */
function childOf(request: FakeRequest, round: number, count: number): number {
  for (let n = 0; n < count; n++) if (request.rawBody.includes(roundPrompt(round, n))) return n;
  throw new Error(`tasks: a request of no child: ${request.rawBody.slice(0, 200)}`);
}

/** A child's file, read from the work directory. */
function childFile(driver: Driver, name: string): string {
  return readFileSync(join(driver.home, 'work', 'parent.tasks', name), 'utf8');
}

/** `<C-]>` on the parent; its reply asks for `calls`. Resolves when that reply has ended. */
async function delegate(
  driver: Driver,
  fake: FakeProvider,
  calls: { id: string; name: string; input: unknown }[],
): Promise<number> {
  void driver.nvim.input('<C-]>');
  const request = await fake.nextRequest({ path: MESSAGES, timeout: 20000 });
  const stream = request.stream();
  await stream.write(anthropicToolReply(calls));
  await stream.end();
  return performance.now();
}

/** The requests of the parent that finished so far. */
function parentFinished({ driver, buf }: Bench): number {
  return driver.eventsSeen('FlemmaRequestFinished').filter((event) => event.data['bufnr'] === buf)
    .length;
}

/** Until the parent's requests since `finished` are both over (its tool reply, its follow-up). */
async function parentSettled(bench: Bench, finished: number): Promise<void> {
  const { driver } = bench;
  while (parentFinished(bench) < finished + 2) {
    await driver.waitForEvent('FlemmaRequestFinished', { after: driver.eventCount });
  }
  await driver.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Again." })');
}

/**
 * A child's whole file as the first child start left it (prompt `Child 0 of run 0`, id
 * `toolu_s0`, reply `ok`), split around its reply: what any child's file must be, byte for byte.
 */
interface Written {
  head: string;
  ending: string;
}

function expectedFile(written: Written, toolId: string, prompt: string, reply: string): string {
  const head = written.head
    .replace('"toolu_s0"', `"${toolId}"`)
    .replace('Child 0 of run 0', prompt);
  return `${head}@Assistant:\n${reply}${written.ending}`;
}

/**
 * Child starts: `runs` delegations of one task each; from the end of the parent's reply to the
 * child's first request. Returns the samples (the first two left out) and the first child's
 * file (`Written`), every later one checked against it.
 */
async function childStarts(
  bench: Bench,
  runs: number,
): Promise<{ samples: number[]; written: Written }> {
  const { driver, fake } = bench;
  const samples: number[] = [];
  let written: Written | undefined;
  for (let run = 0; run < runs; run++) {
    const finished = parentFinished(bench);
    const id = `toolu_s${String(run)}`;
    const prompt = `Child 0 of run ${String(run)}`;
    const ended = await delegate(driver, fake, [taskCall(id, prompt)]);
    const child = await fake.nextRequest({ path: MESSAGES, timeout: 20000 });
    samples.push(performance.now() - ended);
    await answer(child, 'ok');
    await answer(await fake.nextRequest({ path: MESSAGES, timeout: 60000 }), 'ok');
    await parentSettled(bench, finished);
    const file = childFile(driver, `${String(run + 1).padStart(2, '0')}-child-0-of-run.chat`);
    if (written === undefined) {
      const [head = '', ending = ''] = file.split('@Assistant:\nok');
      written = { head, ending };
    }
    if (file !== expectedFile(written, id, prompt, 'ok'))
      throw new Error(`tasks: the child's file is not what it should be:\n${file}`);
  }
  if (written === undefined) throw new Error('tasks: no child ran');
  return { samples: samples.slice(2), written };
}

/** Child `n`'s reply: `count` deltas, a line break every 16 words, no trailing blank. */
function childDeltas(n: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const word = `c${String(n)}w${String(i)}`;
    if (i === count - 1) return word;
    return i % 16 === 15 ? `${word}\n` : `${word} `;
  });
}

/**
 * 8 children at once, each streaming `deltas` deltas (written round-robin, a few KB at a time,
 * as fast as the sockets take them); Neovim's 5 ms timer lateness from the first byte to the
 * parent's follow-up. Every child file is checked to be its first text, the reply exactly as
 * streamed, and what the writer puts around it (`written`).
 */
async function eightChildren(
  bench: Bench,
  round: number,
  deltas: number,
  written: Written,
): Promise<number[]> {
  const { driver, fake } = bench;
  const count = 8;
  const finished = parentFinished(bench);
  const id = (n: number): string => `toolu_r${String(round)}p${String(n)}`;
  const calls = Array.from({ length: count }, (_, n) => taskCall(id(n), roundPrompt(round, n)));
  await delegate(driver, fake, calls);
  const requests: FakeRequest[] = [];
  for (let i = 0; i < count; i++) {
    const request = await fake.nextRequest({ path: MESSAGES, timeout: 20000 });
    requests[childOf(request, round, count)] = request;
  }
  const files = await driver.lua<string[]>(
    `local pattern = ... return vim.fn.readdir(vim.fn.getcwd() .. "/parent.tasks",
      function(n) return n:match(pattern) and 1 or 0 end)`,
    `^%d+%-round%-${String(round)}%-child%-%d%.chat$`,
  );
  if (files.length !== count) throw new Error(`tasks: ${String(files.length)} child files`);
  const replies = requests.map((_, n) => childDeltas(n, deltas));
  const bytes = replies.map((reply) => Buffer.from(anthropicReply(reply)));
  const streams = requests.map((request) => request.stream());
  await driver.lua('require("flemma_bench").lag_start(5)');
  const chunk = 4 * 1024;
  const longest = Math.max(...bytes.map((b) => b.length));
  for (let offset = 0; offset < longest; offset += chunk) {
    await Promise.all(
      streams.map((stream, n) =>
        offset < (bytes[n]?.length ?? 0)
          ? stream.write((bytes[n] as Buffer).subarray(offset, offset + chunk))
          : Promise.resolve(),
      ),
    );
  }
  await Promise.all(streams.map((stream) => stream.end()));
  const follow = await fake.nextRequest({ path: MESSAGES, timeout: 120000 });
  const lag = await driver.lua<number[]>('return require("flemma_bench").lag_stop()');
  await answer(follow, 'ok');
  await parentSettled(bench, finished);
  files.forEach((name) => {
    const n = Number(/child-(\d)\.chat$/.exec(name)?.[1]);
    const expected = expectedFile(
      written,
      id(n),
      roundPrompt(round, n),
      (replies[n] ?? []).join(''),
    );
    if (childFile(driver, name) !== expected)
      throw new Error(`tasks: ${name} is not byte-exact:\n${childFile(driver, name).slice(-300)}`);
  });
  return lag;
}

/** The "tasks" group: a child's start, and 8 children streaming at once. */
export async function tasksBenchmark(lane: Lane): Promise<void> {
  const fake = await startFakeProvider();
  const name = (metric: string): string => `${metric}[nvim-${lane.lane}]`;
  try {
    const bench = await startTasksDriver(fake);
    try {
      const runs = Number(process.env['FLEMMA_BENCH_TASK_RUNS'] ?? '') || 12;
      const { samples, written } = await childStarts(bench, runs);
      report(name('tasks.child_start.median'), percentile(samples, 50), 'ms');
      report(name('tasks.child_start.max'), Math.max(...samples), 'ms');
      // Three rounds, their timer samples pooled: one round streams for well under a second.
      const lag: number[] = [];
      for (let round = 0; round < 3; round++)
        lag.push(...(await eightChildren(bench, round, 2000, written)));
      report(name('tasks.eight_children_2000_deltas.main_loop_lag.p99'), percentile(lag, 99), 'ms');
      report(name('tasks.eight_children_2000_deltas.main_loop_lag.max'), Math.max(0, ...lag), 'ms');
      report(
        name('tasks.eight_children_2000_deltas.main_loop_lag.samples'),
        lag.length,
        'samples',
        0,
      );
      report(name('tasks.eight_children_2000_deltas.files_byte_exact'), 24, 'files', 0);
    } finally {
      await bench.driver.quit();
    }
  } finally {
    await fake.close();
  }
}
