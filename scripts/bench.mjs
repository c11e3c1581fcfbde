// `npm run bench`: prepares the checkout, bundles the benchmark (test/bench/main.ts) and runs it
// on every Neovim lane. Output: one `metric value unit` line per figure.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { ensureBuild, ensureDependencies, root } from './prepare.mjs';
import { resolveNvims } from './nvim.mjs';

ensureDependencies();
ensureBuild();
const nvims = resolveNvims({ install: true });
const out = join(root, '.tests/bench/main.mjs');
await esbuild.build({
  entryPoints: [join(root, 'test/bench/main.ts')],
  outfile: out,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  logLevel: 'warning',
});
const run = spawnSync(process.execPath, [out], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, FLEMMA_BENCH_NVIMS: JSON.stringify(nvims) },
});
process.exit(run.status ?? 1);
