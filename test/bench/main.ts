// `npm run bench`: host cold start and streaming writes through the editor adapter, on every
// Neovim lane. Prints `metric value unit` lines.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LuaBridge, rpcPortOf } from '../../src/editor/lua.js';
import { WriteScheduler } from '../../src/editor/writequeue.js';
import { countWrites } from '../helpers/write-counter.js';
import { parseLines, reparse } from '../../src/core/chat/parser.js';
import { splitFileReferences } from '../../src/core/chat/filerefs.js';
import { scanTemplate } from '../../src/core/chat/template.js';
import type { TextSegment } from '../../src/core/chat/ast.js';
import { largeChat } from './corpus.js';
import { elide } from '../../src/core/context/elide.js';
import type { EvaluatedMessage } from '../../src/core/provider/types.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';
import { type Driver, ROOT, startDriver } from '../helpers/driver.js';
import { type Lane, median, percentile, report } from './report.js';
import { anthropicReply, anthropicReplyStart } from './sse.js';
import { tasksBenchmark } from './tasks.js';
import { rewindBenchmark } from './rewind.js';
import { BENCH_HOST_SETUP, benchMark, firstToolLoopBenchmark, toolLoopBenchmark } from './loop.js';
import { cliBenchmark } from './cli.js';
import { completeBenchmark } from './complete.js';
import { chatsBenchmark } from './chats.js';
import { acpBenchmark } from './acp.js';

const lanes = JSON.parse(process.env['FLEMMA_BENCH_NVIMS'] ?? '[]') as Lane[];
const BENCH_RTP = join(ROOT, 'test/bench');

/** Waits (at most 10 s) until the host's code cache (src/host/boot.ts) is on disk. */
/** Waits until the chat `buf` has its `expected` message marks (the host has parsed it). */
async function messagesMarked(driver: Driver, buf: number, expected: number): Promise<void> {
  await driver.lua(
    `local bufnr, expected = ...
    local ns = vim.api.nvim_create_namespace("flemma.messages")
    vim.wait(10000, function() return #vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, {}) == expected end, 5)`,
    buf,
    expected,
  );
}

async function codeCacheWritten(): Promise<void> {
  const dir = join(ROOT, 'dist/.cache');
  for (let waited = 0; waited < 200; waited++) {
    if (existsSync(dir) && readdirSync(dir).some((name) => !name.endsWith('.tmp'))) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Host cold start: from the shim starting the job to the first answered request; and, after
 * each start, a bare `node -e 0` (start to exit), the yardstick: the ratio of the medians.
 */
async function coldStart(lane: Lane): Promise<void> {
  const driver = await startDriver({ rtp: [BENCH_RTP] });
  try {
    // One warm-up start so that the file cache holds node and the bundle, as on a user's machine,
    // and the host, idle, writes its code cache.
    await driver.lua('require("flemma_bench").cold_start_async(1)');
    await driver.waitForEvent('FlemmaBenchColdStart', { timeout: 20000 });
    await codeCacheWritten();
    const runs = Number(process.env['FLEMMA_BENCH_START_RUNS'] ?? '') || 15;
    await driver.lua('require("flemma_bench").cold_start_async(...)', runs);
    const done = await driver.waitForEvent('FlemmaBenchColdStart', {
      after: driver.eventCount,
      timeout: 120000,
    });
    const samples = done.data['samples'] as number[];
    const bare = done.data['bare'] as number[];
    const name = (metric: string): string => `${metric}[nvim-${lane.lane}]`;
    report(name('host.cold_start.median'), percentile(samples, 50), 'ms');
    report(name('host.cold_start.min'), Math.min(...samples), 'ms');
    report(name('host.cold_start.max'), Math.max(...samples), 'ms');
    report(name('host.cold_start.bare_node.median'), percentile(bare, 50), 'ms');
    report(
      name('host.cold_start.ratio_to_bare_node'),
      percentile(samples, 50) / percentile(bare, 50),
      'x',
      2,
    );
  } finally {
    await driver.quit();
  }
}

async function streaming(lane: Lane): Promise<void> {
  const driver = await startDriver({ rtp: [BENCH_RTP], ui: { width: 120, height: 40 } });
  try {
    const buf = await driver.openChat('bench.chat', [
      '@You:',
      'Write a long answer.',
      '',
      '@Assistant:',
    ]);
    const count = countWrites(new LuaBridge(rpcPortOf(driver.nvim)));
    const writes = new WriteScheduler(count.bridge);
    const writer = writes.buffer(buf);
    const words = ['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'elit', 'sed', 'tempor'];
    const chunks: string[] = [];
    for (let i = 0; i < 20000; i++) {
      const word = words[i % words.length] ?? 'x';
      chunks.push(i % 12 === 11 ? `${word}\n` : `${word} `);
    }
    const expected = chunks.join('');
    await driver.lua('require("flemma_bench").lag_start(5)');
    const cpuBefore = await cpuNow(driver);
    const started = performance.now();
    for (const chunk of chunks) {
      writer.append(chunk);
      // One chunk per macrotask, as a network stream delivers them.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await writer.flushed();
    const total = performance.now() - started;
    const cpuAfter = await cpuNow(driver);
    const lag = await driver.lua<number[]>('return require("flemma_bench").lag_stop()');
    const text = (await driver.lines(buf)).slice(3).join('\n');
    if (text !== '@Assistant:' + expected)
      throw new Error('streamed text does not match what was sent');
    report(`stream.20k_chunks.total[nvim-${lane.lane}]`, total, 'ms');
    report(`stream.20k_chunks.bytes[nvim-${lane.lane}]`, Buffer.byteLength(expected) / 1024, 'KiB');
    report(`stream.20k_chunks.rpc_batches[nvim-${lane.lane}]`, count.batches, 'batches');
    report(`stream.20k_chunks.cpu.nvim[nvim-${lane.lane}]`, cpuAfter.nvim - cpuBefore.nvim, 'ms');
    report(`stream.main_loop_lag.p99[nvim-${lane.lane}]`, percentile(lag, 99), 'ms');
    report(`stream.main_loop_lag.max[nvim-${lane.lane}]`, Math.max(...lag), 'ms');
  } finally {
    await driver.quit();
  }
}

function timeIt(runs: number, fn: () => void): number[] {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    fn();
    samples.push(performance.now() - started);
  }
  return samples;
}

/** The `.chat` parser (no Neovim): full parses of 1 MB and 10 MB, and a re-parse after an append. */
function parser(): void {
  const small = largeChat(1024 * 1024, 400);
  const large = largeChat(10 * 1024 * 1024, 4000);
  const messages = parseLines(small).messages.length;
  // Warm up the JIT as a long-running host would be.
  timeIt(5, () => parseLines(small));
  report('chat.parse_1mb.median', median(timeIt(15, () => parseLines(small))), 'ms');
  report('chat.parse_1mb.size', Buffer.byteLength(small.join('\n')) / 1024 / 1024, 'MiB', 2);
  report('chat.parse_1mb.messages', messages, 'messages', 0);
  report('chat.parse_10mb.size', Buffer.byteLength(large.join('\n')) / 1024 / 1024, 'MiB', 2);
  report('chat.parse_10mb.median', median(timeIt(5, () => parseLines(large))), 'ms');
  const parsed = parseLines(small);
  const appended = [...small, 'one more streamed line'];
  report(
    'chat.reparse_append_1mb.median',
    median(timeIt(200, () => reparse(parsed, appended, appended.length))),
    'ms',
    3,
  );
}

/**
 * The template scanner and the file-reference splitter on large and degenerate input (no
 * Neovim): the figures the unit tests of both used to bound (test/unit/chat-template.test.ts,
 * chat-filerefs.test.ts check what comes out).
 */
function scanners(): void {
  const at1 = { line: 1, col: 0 };
  const best = (runs: number, fn: () => void): number => Math.min(...timeIt(runs, fn));
  // The slowest input, each by the median of 3 runs.
  const slowest = (inputs: string[], fn: (input: string) => unknown): number =>
    Math.max(
      ...inputs.map((input) =>
        median(
          timeIt(3, () => {
            fn(input);
          }),
        ),
      ),
    );
  const line = 'The quick brown fox jumps over the lazy dog, é and 🙂 included.\n';
  const megabyte = line.repeat(Math.ceil(1_000_000 / line.length));
  const third = Math.floor(megabyte.length / 3);
  const tagged = `{{ a }}${megabyte.slice(0, third)}{% b %}${megabyte.slice(third)}{{ {c=1} }}`;
  // Warm up the JIT as a long-running host would be.
  timeIt(3, () => scanTemplate(tagged, at1));
  report(
    'chat.scan_template_1mb.best',
    best(5, () => scanTemplate(megabyte, at1)),
    'ms',
    2,
  );
  report(
    'chat.scan_template_1mb_tags.best',
    best(5, () => scanTemplate(tagged, at1)),
    'ms',
    2,
  );
  report(
    'chat.scan_template_degenerate.max',
    slowest(
      [
        '{{ }}{% %}'.repeat(20_000),
        `{% ${'- '.repeat(100_000)}`,
        `{{ ${'"\\"'.repeat(70_000)}`,
        `{{ ${'[=['.repeat(70_000)}`,
        '{x}'.repeat(70_000),
      ],
      (text) => scanTemplate(text, at1),
    ),
    'ms',
  );
  const textAt = (value: string): TextSegment => ({
    kind: 'text',
    value,
    span: { startLine: 1, startCol: 0, endLine: 1, endCol: Buffer.byteLength(value) },
  });
  const prose = 'Mail me@example.com or @ someone about @You: and more é text here.\n'.repeat(
    Math.ceil(1_000_000 / 66),
  );
  const step = Math.floor(prose.length / 100);
  let references = '';
  for (let k = 0; k < 100; k++)
    references += `${prose.slice(k * step, (k + 1) * step)} see @./a.md. `;
  timeIt(3, () => splitFileReferences(textAt(references)));
  report(
    'chat.filerefs_1mb.best',
    best(5, () => splitFileReferences(textAt(references))),
    'ms',
    2,
  );
  report(
    'chat.filerefs_degenerate.max',
    slowest(['(@./;'.repeat(40_000), 'x@./'.repeat(50_000), '.@./a'.repeat(40_000)], (value) =>
      splitFileReferences(textAt(value)),
    ),
    'ms',
  );
}

/**
 * Elision under `context.budget` on a long agent session (no Neovim): 600 replies, each with a
 * `read` call whose result is 8 KB (≈ 5 MB, ≈ 1.4M estimated tokens), against a 150k budget.
 * The cut is found by replaying the chat's history, so this is the cost each send pays once a
 * session is over its budget.
 */
function elision(): void {
  const messages: EvaluatedMessage[] = [{ role: 'user', parts: [{ kind: 'text', text: 'go' }] }];
  for (let i = 0; i < 600; i++) {
    const id = `toolu_${String(i)}`;
    messages.push({
      role: 'assistant',
      parts: [
        { kind: 'text', text: `Reading file ${String(i)}.` },
        { kind: 'tool_use', id, name: 'read', input: { path: `src/f${String(i)}.ts` } },
      ],
    });
    const text = `// file ${String(i)}\n` + 'const x = 1;\n'.repeat(630);
    messages.push({
      role: 'user',
      parts: [
        {
          kind: 'tool_result',
          toolUseId: id,
          name: 'read',
          parts: [{ kind: 'text', text }],
          isError: false,
          synthetic: false,
        },
      ],
    });
  }
  const rest = { system: 'You are a careful engineer.', tools: [] };
  const options = { budget: 150_000, keepTurns: 8, minBytes: 4096, lowWater: 0.7 };
  timeIt(3, () => elide(messages, rest, options));
  const runs = timeIt(15, () => elide(messages, rest, options));
  report('context.elide_600_turns.median', median(runs), 'ms');
  report(
    'context.elide_600_turns.elided',
    elide(messages, rest, options).elided.length,
    'results',
    0,
  );
}

parser();
scanners();
elision();
/**
 * Opening a 1 MB chat: time until it is highlighted and folded on screen (issue 10), and until
 * the host has parsed it and Lua shows its message marks.
 */
async function openLargeChat(lane: Lane): Promise<void> {
  const driver = await startDriver({ rtp: [BENCH_RTP], ui: { width: 120, height: 40 } });
  try {
    const lines = largeChat(1024 * 1024, 400);
    const expected = parseLines(lines).messages.length;
    driver.writeFile('large.chat', lines.join('\n') + '\n');
    // A running host, as when a second chat is opened.
    await driver.lua(`require("flemma.host").call("host:info", nil, function()
      vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaBenchHostReady" })
    end)`);
    await driver.waitForEvent('FlemmaBenchHostReady', { timeout: 20000 });
    await driver.lua('require("flemma_bench").lag_start(5)');
    // The corpus's thinking blocks, tool uses and tool results are folded once it is open.
    const folds = lines.filter(
      (line) =>
        line === '<thinking>' ||
        line.startsWith('<thinking ') ||
        /^\*\*Tool (Use|Result):\*\*/.test(line),
    ).length;
    await driver.lua('require("flemma_bench").open_async(...)', 'large.chat', expected, folds);
    const opened = await driver.waitForEvent('FlemmaBenchOpened', { timeout: 20000 });
    const lag = await driver.lua<number[]>('return require("flemma_bench").lag_stop()');
    report(
      `chat.open_1mb.highlighted_folded[nvim-${lane.lane}]`,
      opened.data['drawn'] as number,
      'ms',
    );
    report(`chat.open_1mb.structure_shown[nvim-${lane.lane}]`, opened.data['ms'] as number, 'ms');
    report(`chat.open_1mb.main_loop_lag.max[nvim-${lane.lane}]`, Math.max(0, ...lag), 'ms');
    const motion = await driver.lua<number>('return require("flemma_bench").motions()');
    report(`chat.open_1mb.motion_redraw.max[nvim-${lane.lane}]`, motion, 'ms');
  } finally {
    await driver.quit();
  }
}

/**
 * One S2 run in a new chat: `deltas` streamed as fast as the socket takes them, with
 * `context.recovery` on or off. From the last byte to `request:finished`, and the 5 ms timer's
 * lateness meanwhile. With recovery on, the reply's record is checked to hold the whole reply.
 */
async function s2Run(
  driver: Driver,
  fake: FakeProvider,
  deltas: string[],
  name: string,
  recovery: boolean,
): Promise<{ complete: number; lag: number[]; cpu: Cpu }> {
  await driver.lua('require("flemma").setup({ context = { recovery = ... } })', recovery);
  await driver.command('enew');
  const buf = await driver.openChat(name, ['@You:', 'Write a lot.']);
  const after = driver.eventCount;
  void driver.nvim.input('<C-]>');
  const request = await fake.nextRequest({ path: /^\/v1\/messages/ });
  await driver.lua('require("flemma_bench").lag_start(5)');
  const cpuBefore = await cpuNow(driver);
  const stream = request.stream();
  const bytes = Buffer.from(anthropicReply(deltas));
  for (let offset = 0; offset < bytes.length; offset += 64 * 1024) {
    await stream.write(bytes.subarray(offset, offset + 64 * 1024));
  }
  const lastByte = performance.now();
  await stream.end();
  await driver.waitForEvent('FlemmaRequestFinished', { after, timeout: 60000 });
  const complete = performance.now() - lastByte;
  const cpuAfter = await cpuNow(driver);
  const lag = await driver.lua<number[]>('return require("flemma_bench").lag_stop()');
  const text = (await driver.lines(buf)).join('\n');
  const expected = deltas.join('').trimEnd();
  if (!text.includes(expected))
    throw new Error('S2: the reply in the buffer is not what was streamed');
  // The reply's last record goes to disk after the request's end (nothing waits for it).
  if (recovery)
    await driver.waitUntil(
      `local file = require("flemma.chat.recovery").record_file(vim.fn.fnamemodify(..., ":p"))
      local handle = io.open(file, "rb")
      if not handle then return false end
      local content = handle:read("*a")
      handle:close()
      return content:find('"complete":true', 1, true) ~= nil`,
      { args: [name], timeout: 10000 },
    );
  const record = await driver.lua<string | null>(
    `local file = require("flemma.chat.recovery").record_file(vim.fn.fnamemodify(..., ":p"))
    local handle = io.open(file, "rb")
    if not handle then return nil end
    local content = handle:read("*a")
    handle:close()
    return content`,
    name,
  );
  if (
    recovery &&
    (record === null || !(JSON.parse(record) as { reply: string }).reply.includes(expected))
  )
    throw new Error('S2: the recovery record does not hold the reply');
  if (!recovery && record !== null) throw new Error('S2: a record was written with recovery off');
  const cpu = { nvim: cpuAfter.nvim - cpuBefore.nvim, host: cpuAfter.host - cpuBefore.host };
  return { complete, lag, cpu };
}

/** CPU time in ms: Neovim's and its host's (see flemma_bench.cpu). */
interface Cpu {
  nvim: number;
  host: number;
}

async function cpuNow(driver: Driver): Promise<Cpu> {
  const cpu = await driver.lua<{ nvim: number; host?: number }>(
    'return require("flemma_bench").cpu()',
  );
  return { nvim: cpu.nvim, host: cpu.host ?? NaN };
}

/**
 * S1: a 1 MB, 400-message chat; from pressing <C-]> to the fake Anthropic server having the whole
 * request body. S2: a reply of 20,000 text deltas written to the socket as fast as it goes; from
 * its last byte to the buffer being complete, and the main-loop lag meanwhile.
 */
async function sendBenchmarks(lane: Lane): Promise<void> {
  const fake = await startFakeProvider();
  const driver = await startDriver({
    rtp: [BENCH_RTP],
    ui: { width: 120, height: 40 },
    env: { ANTHROPIC_API_KEY: 'sk-bench', ANTHROPIC_BASE_URL: fake.url },
    setup: BENCH_HOST_SETUP,
  });
  try {
    const lines = largeChat(1024 * 1024, 400);
    // The corpus ends in an @Assistant: turn; a question makes it ready to send.
    lines.push('@You:', 'Summarise the discussion.');
    // The chat's templates run (its file is trusted, as a user's own would be) and its file
    // references are read: the files exist.
    for (let i = 0; i < 400; i += 2) {
      driver.writeFile(`src/file${String(i)}.lua`, `return ${String(i)}\n`);
    }
    const buf = await driver.openChat('s1.chat', lines);
    await driver.command('trust');
    const expected = parseLines(lines).messages.length;
    await messagesMarked(driver, buf, expected);
    /** One send: `<C-]>` to the body at the server (ms); its reply; then a question appended. */
    const s1Send = async (): Promise<number> => {
      const after = driver.eventCount;
      const started = performance.now();
      benchMark('bench:s1-pressed');
      void driver.nvim.input('<C-]>');
      const request = await fake.nextRequest({ path: /^\/v1\/messages/ });
      const elapsed = performance.now() - started;
      benchMark('bench:s1-body');
      const stream = request.stream();
      await stream.write(anthropicReply(['ok']));
      await stream.end();
      await driver.waitForEvent('FlemmaRequestFinished', { after });
      await driver.lua('vim.cmd("normal! Go")');
      await driver.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "One more question." })');
      return elapsed;
    };
    const s1: number[] = [];
    let cpuFrom: Cpu = { nvim: 0, host: 0 };
    for (let run = 0; run < 17; run++) {
      if (run === 2) cpuFrom = await cpuNow(driver);
      s1.push(await s1Send());
    }
    report(`send.s1_keypress_to_body.median[nvim-${lane.lane}]`, percentile(s1.slice(2), 50), 'ms');
    // The CPU time per send (its reply and the edit after it included): steadier than the wall
    // time on a loaded machine.
    const cpuTo = await cpuNow(driver);
    report(`send.s1_cpu_per_send.host[nvim-${lane.lane}]`, (cpuTo.host - cpuFrom.host) / 15, 'ms');
    report(`send.s1_cpu_per_send.nvim[nvim-${lane.lane}]`, (cpuTo.nvim - cpuFrom.nvim) / 15, 'ms');
    // The same sends as a user makes them: a pause between the question and <C-]> (the edit
    // published, the host idle). Informative; the target is the figure above.
    const pause = Number(process.env['FLEMMA_BENCH_S1_PAUSE_MS'] ?? '') || 300;
    const paused: number[] = [];
    for (let run = 0; run < 9; run++) {
      await new Promise((resolve) => setTimeout(resolve, pause));
      paused.push(await s1Send());
    }
    report(
      `send.s1_keypress_to_body_after_pause.median[nvim-${lane.lane}]`,
      percentile(paused, 50),
      'ms',
    );

    // S2 on a small chat, so that only the reply's cost is measured (recovery on, the default).
    const words = ['lorem ', 'ipsum ', 'dolor ', 'sit ', 'amet\n'];
    const deltas = Array.from({ length: 20000 }, (_, i) => words[i % words.length] ?? 'x ');
    const { complete, lag } = await s2Run(driver, fake, deltas, 's2.chat', true);
    report(`send.s2_complete_after_last_byte[nvim-${lane.lane}]`, complete, 'ms');
    report(
      `send.s2_reply_bytes[nvim-${lane.lane}]`,
      Buffer.byteLength(deltas.join('')) / 1024,
      'KiB',
    );
    report(`send.s2_main_loop_lag.p99[nvim-${lane.lane}]`, percentile(lag, 99), 'ms');
    report(`send.s2_main_loop_lag.max[nvim-${lane.lane}]`, Math.max(0, ...lag), 'ms');

    // Recovery on against off, alternating (the machine is shared: a burst of load hits both).
    const runs: Record<'on' | 'off', { complete: number[]; p99: number[]; cpu: Cpu[] }> = {
      on: { complete: [], p99: [], cpu: [] },
      off: { complete: [], p99: [], cpu: [] },
    };
    const pairs = Number(process.env['FLEMMA_BENCH_S2_PAIRS'] ?? '4');
    for (let run = 0; run < pairs * 2; run++) {
      const side = run % 2 === 0 ? 'on' : 'off';
      const result = await s2Run(
        driver,
        fake,
        deltas,
        `s2-${side}-${String(run)}.chat`,
        side === 'on',
      );
      runs[side].complete.push(result.complete);
      runs[side].p99.push(percentile(result.lag, 99));
      runs[side].cpu.push(result.cpu);
    }
    for (const side of ['on', 'off'] as const) {
      const name = `send.s2_recovery_${side}`;
      const { complete: done, p99 } = runs[side];
      report(
        `${name}.complete_after_last_byte.median[nvim-${lane.lane}]`,
        percentile(done, 50),
        'ms',
      );
      report(`${name}.complete_after_last_byte.max[nvim-${lane.lane}]`, Math.max(...done), 'ms');
      report(`${name}.main_loop_lag.p99.median[nvim-${lane.lane}]`, percentile(p99, 50), 'ms');
      report(`${name}.main_loop_lag.p99.max[nvim-${lane.lane}]`, Math.max(...p99), 'ms');
      const cpu = runs[side].cpu;
      report(`${name}.cpu.nvim.median[nvim-${lane.lane}]`, median(cpu.map((c) => c.nvim)), 'ms');
      report(`${name}.cpu.host.median[nvim-${lane.lane}]`, median(cpu.map((c) => c.host)), 'ms');
    }

    // Cancel: from <C-c> mid-stream to the server seeing the connection closed.
    const cancels: number[] = [];
    let lostKeys = 0;
    for (let run = 0; run < 7; run++) {
      await driver.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Again, please." })');
      const before = driver.eventCount;
      void driver.nvim.input('<C-]>');
      const pending = await fake.nextRequest({ path: /^\/v1\/messages/ });
      const open = pending.stream();
      await open.write(anthropicReplyStart(['Once upon', ' a time']));
      await driver.lua(
        `vim.wait(5000, function()
          return vim.api.nvim_buf_get_lines(0, -2, -1, false)[1] == "Once upon a time"
        end, 1)`,
      );
      const pressed = performance.now();
      void driver.nvim.input('<C-c>');
      // Now and then (1 run in 20–50 of this benchmark) the <C-c> never reaches the mapping: a
      // <C-c> that Neovim reads while busy can become an interrupt (got_int) instead of a key. The
      // key is pressed again after a second, as a user would; the time counts from the first
      // press, and the extra presses are reported.
      let closed = false;
      void open.closed.then(() => {
        closed = true;
      });
      const isClosed = (): boolean => closed;
      for (let waited = 0; !isClosed(); waited += 1) {
        if (waited === 10) {
          throw new Error(`cancel: the request stayed open 10 s after <C-c> (run ${String(run)})`);
        }
        await Promise.race([open.closed, new Promise((resolve) => setTimeout(resolve, 1000))]);
        if (!isClosed()) {
          lostKeys += 1;
          void driver.nvim.input('<C-c>');
        }
      }
      cancels.push(performance.now() - pressed);
      await driver.waitForEvent('FlemmaRequestFinished', { after: before });
    }
    report(
      `send.cancel_to_abort.median[nvim-${lane.lane}]`,
      percentile(cancels.slice(2), 50),
      'ms',
    );
    report(`send.cancel_to_abort.max[nvim-${lane.lane}]`, Math.max(...cancels.slice(2)), 'ms');
    report(`send.cancel_keys_pressed_again[nvim-${lane.lane}]`, lostKeys, 'presses', 0);
  } finally {
    await driver.quit();
    await fake.close();
  }
}

interface HostInfo {
  memory: { rss: number; max_rss: number };
}

async function hostInfo(driver: Awaited<ReturnType<typeof startDriver>>): Promise<HostInfo> {
  const after = driver.eventCount;
  await driver.lua(`require("flemma.host").call("host:info", nil, function(err, info)
    vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaBenchHostInfo", data = { info = info, err = err } })
  end)`);
  const event = await driver.waitForEvent('FlemmaBenchHostInfo', { after });
  return event.data['info'] as HostInfo;
}

/**
 * S4: `bash` printing 5 MB. From the process's exit (a timestamp it writes as its last act) to
 * the truncated result being in the buffer (the `tool:completed` hook, which fires after the
 * write), the host's peak memory growth, and Neovim's main-loop lag meanwhile.
 */
async function toolBenchmarks(lane: Lane): Promise<void> {
  const driver = await startDriver({
    rtp: [BENCH_RTP],
    ui: { width: 120, height: 40 },
    setup: 'require("flemma").setup({ tools = { autopilot = false } })',
  });
  try {
    const stamp = driver.writeFile('exit-stamp', '');
    const command = `head -c 5000000 /dev/zero | tr '\\0' x | fold -w 99; date +%s%N > ${stamp}`;
    const input = JSON.stringify({ label: 'print 5 MB', command, timeout: null });
    await driver.openChat('s4.chat', [
      '@You:',
      'Print a lot.',
      '',
      '@Assistant:',
      '**Tool Use:** `bash` (`toolu_S4`)',
      '',
      '```json',
      input,
      '```',
      '',
      '@You:',
      '',
      '**Tool Result:** `toolu_S4`',
      '',
      '```flemma:tool status=approved',
      '```',
    ]);
    await driver.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
    await driver.lua(`require("flemma.hooks").on("tool:completed", function()
      local sec, usec = vim.uv.gettimeofday()
      _G.s4_injected_ns = sec * 1e9 + usec * 1e3
    end)`);
    const before = await hostInfo(driver);
    await driver.lua('require("flemma_bench").lag_start(5)');
    const after = driver.eventCount;
    await driver.press('<C-]>');
    const done = await driver.waitForEvent('FlemmaToolCompleted', { after, timeout: 60000 });
    const lag = await driver.lua<number[]>('return require("flemma_bench").lag_stop()');
    const injectedNs = await driver.lua<number>('return _G.s4_injected_ns');
    const exitNs = Number(readFileSync(stamp, 'utf8').trim());
    const later = await hostInfo(driver);
    const text = (await driver.lines()).join('\n');
    const saved = /Full output: (\S+)\]/.exec(text)?.[1];
    if (done.data['status'] !== 'success' || saved === undefined) {
      throw new Error(`S4: the result is not a truncated success:\n${text.slice(-400)}`);
    }
    const full = statSync(saved).size;
    if (full < 5_000_000) throw new Error(`S4: the saved output holds ${String(full)} bytes`);
    report(`tools.s4_inject_after_exit[nvim-${lane.lane}]`, (injectedNs - exitNs) / 1e6, 'ms');
    report(
      `tools.s4_host_peak_memory_growth[nvim-${lane.lane}]`,
      (later.memory.max_rss - before.memory.max_rss) / (1024 * 1024),
      'MB',
    );
    report(`tools.s4_saved_output[nvim-${lane.lane}]`, full / (1024 * 1024), 'MB', 2);
    report(`tools.s4_main_loop_lag.p99[nvim-${lane.lane}]`, percentile(lag, 99), 'ms');
    report(`tools.s4_main_loop_lag.max[nvim-${lane.lane}]`, Math.max(0, ...lag), 'ms');
    report(`tools.s4_main_loop_lag.samples[nvim-${lane.lane}]`, lag.length, 'samples', 0);
  } finally {
    await driver.quit();
  }
}

/**
 * `gd` and `gf` on a 1 MB chat: from the key press to the cursor on the tool result (or the
 * referenced file open), with the buffer unchanged since the last press and right after an edit.
 */
async function navigation(lane: Lane): Promise<void> {
  const driver = await startDriver({ rtp: [BENCH_RTP], ui: { width: 120, height: 40 } });
  try {
    const lines = largeChat(1024 * 1024, 400);
    const document = parseLines(lines);
    // The last tool use and its result: the whole buffer lies before them.
    let use = 0;
    let result = 0;
    for (const message of document.messages) {
      for (const segment of message.segments) {
        if (segment.kind === 'tool_use') use = segment.span.startLine;
        if (segment.kind === 'tool_result' && use > 0 && segment.span.startLine > use) {
          result = segment.span.startLine;
        }
      }
    }
    const refLine = lines.findIndex((line, i) => i > result && line.includes('@./src/file'));
    const refCol = (lines[refLine] ?? '').indexOf('@./src/file') + 4;
    driver.writeFile(
      `src/${/@\.\/src\/(file\d+\.lua)/.exec(lines[refLine] ?? '')?.[1] ?? ''}`,
      'x\n',
    );
    const buf = await driver.openChat('nav.chat', lines);
    const expected = document.messages.length;
    await messagesMarked(driver, buf, expected);
    const press = async (keys: string): Promise<number> => {
      const after = driver.eventCount;
      await driver.lua('require("flemma_bench").navigate_async(...)', keys);
      const done = await driver.waitForEvent('FlemmaBenchNavigated', { after });
      return done.data['ms'] as number;
    };
    const gd: number[] = [];
    const gdEdited: number[] = [];
    const gf: number[] = [];
    for (let run = 0; run < 12; run++) {
      await driver.lua('vim.api.nvim_win_set_cursor(0, { ..., 0 })', use);
      gd.push(await press('gd'));
      // An edit at the end (as typing the next question does) before the next press.
      await driver.lua(
        'vim.api.nvim_buf_set_lines(..., -1, -1, false, { "edit " .. vim.uv.hrtime() })',
        buf,
      );
      await driver.lua('vim.api.nvim_win_set_cursor(0, { ..., 0 })', use);
      gdEdited.push(await press('gd'));
      await driver.lua(
        'local r, c = ... vim.api.nvim_win_set_cursor(0, { r, c })',
        refLine + 1,
        refCol,
      );
      gf.push(await press('gf'));
      await driver.command(`buffer ${String(buf)}`);
    }
    report(`navigate.gd_1mb.median[nvim-${lane.lane}]`, percentile(gd.slice(2), 50), 'ms', 2);
    report(
      `navigate.gd_1mb_after_edit.median[nvim-${lane.lane}]`,
      percentile(gdEdited.slice(2), 50),
      'ms',
      2,
    );
    report(`navigate.gf_1mb.median[nvim-${lane.lane}]`, percentile(gf.slice(2), 50), 'ms', 2);
  } finally {
    await driver.quit();
  }
}

// `FLEMMA_BENCH_ONLY=tools,loop` runs only the named groups (when profiling one of them).
const groups: [string, (lane: Lane) => Promise<void>][] = [
  ['tools', toolBenchmarks],
  ['loop', toolLoopBenchmark],
  ['first', firstToolLoopBenchmark],
  ['send', sendBenchmarks],
  ['start', coldStart],
  ['stream', streaming],
  ['open', openLargeChat],
  ['navigate', navigation],
  ['tasks', tasksBenchmark],
  ['rewind', rewindBenchmark],
  ['complete', completeBenchmark],
  ['chats', chatsBenchmark],
  ['acp', acpBenchmark],
];
const only = (process.env['FLEMMA_BENCH_ONLY'] ?? '').split(',').filter((name) => name !== '');
// `flemma run` needs no Neovim: once, not per lane.
if (only.length === 0 || only.includes('cli')) await cliBenchmark();
for (const lane of lanes) {
  process.env['FLEMMA_TEST_NVIM'] = lane.bin;
  for (const [name, run] of groups) {
    if (only.length === 0 || only.includes(name)) await run(lane);
  }
}
