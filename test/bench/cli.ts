// `flemma run` on a 1 MB chat (docs/cli.md, "Speed"): from the process's start to its request at
// a local fake server, beside a bare `node -e 0` (start to exit) measured in the same run as the
// yardstick. No Neovim: measured once, not per lane.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/driver.js';
import { startFakeProvider } from '../helpers/fake-provider.js';
import { largeChat } from './corpus.js';
import { percentile, report } from './report.js';
import { anthropicReply } from './sse.js';

/** The 1 MB corpus with nothing that needs Neovim: its templates and references as plain text. */
function chatText(): string {
  const text = largeChat(1024 * 1024, 400)
    .join('\n')
    .replace(/\{\{ recipient \}\}/g, 'the QA team')
    .replace(/@\.\//g, 'at ./');
  return `${text}\n@You:\nSummarise the conversation.\n`;
}

async function bareNode(): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await once(child, 'exit');
  return performance.now() - started;
}

export async function cliBenchmark(): Promise<void> {
  const fake = await startFakeProvider();
  const dir = mkdtempSync(join(tmpdir(), 'flemma-bench-cli-'));
  const chat = join(dir, 'big.chat');
  const text = chatText();
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: join(dir, 'home'),
    XDG_STATE_HOME: join(dir, 'state'),
    XDG_CONFIG_HOME: join(dir, 'config'),
    ANTHROPIC_API_KEY: 'sk-ant-bench-0123456789',
    ANTHROPIC_BASE_URL: fake.url,
  };
  const samples: number[] = [];
  const bare: number[] = [];
  const runs = Number(process.env['FLEMMA_BENCH_START_RUNS'] ?? '') || 15;
  try {
    // The first run warms the file cache, as on a user's machine.
    for (let run = 0; run <= runs; run++) {
      writeFileSync(chat, text);
      const started = performance.now();
      const child = spawn(
        process.execPath,
        [join(ROOT, 'dist/cli.js'), 'run', chat, '--trust', '--quiet'],
        { cwd: dir, env, stdio: 'ignore' },
      );
      const exited = once(child, 'exit');
      const request = await fake.nextRequest({ timeout: 60000 });
      const ms = performance.now() - started;
      const stream = request.stream();
      await stream.write(anthropicReply(['Done.']));
      await stream.end();
      const [code] = (await exited) as [number | null];
      if (code !== 0) throw new Error(`flemma run exited with ${String(code)}`);
      if (run > 0) samples.push(ms);
      if (run > 0) bare.push(await bareNode());
    }
  } finally {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
  report('cli.run_1mb.size', Buffer.byteLength(text) / 1024 / 1024, 'MiB', 2);
  report('cli.run_1mb.start_to_request.median', percentile(samples, 50), 'ms');
  report('cli.run_1mb.start_to_request.max', Math.max(...samples), 'ms');
  report('cli.run_1mb.bare_node.median', percentile(bare, 50), 'ms');
  report('cli.run_1mb.ratio_to_bare_node', percentile(samples, 50) / percentile(bare, 50), 'x', 2);
}
