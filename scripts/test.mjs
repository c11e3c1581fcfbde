// `npm test`: prepares the checkout (dependencies, build, Neovim), then runs the unit lane and the
// end-to-end lane on Neovim 0.10 and the newest release, and ends with "N passed, N failed".
//   --lane unit|nvim   run one lane only; other arguments go to vitest (e.g. a file filter)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBuild, ensureDependencies, root } from './prepare.mjs';
import { resolveNvims } from './nvim.mjs';

const args = process.argv.slice(2);
let lanes = ['unit', 'nvim'];
const laneFlag = args.indexOf('--lane');
if (laneFlag >= 0) {
  lanes = [args[laneFlag + 1]];
  args.splice(laneFlag, 2);
}
if (lanes.some((lane) => lane !== 'unit' && lane !== 'nvim')) {
  console.error('test: --lane must be unit or nvim');
  process.exit(2);
}

ensureDependencies();
ensureBuild();

const results = join(root, '.tests/results');
rmSync(results, { recursive: true, force: true });
mkdirSync(results, { recursive: true });

const vitest = join(root, 'node_modules/vitest/vitest.mjs');
const tally = [];

function runVitest(label, project, env) {
  const output = join(results, `${label.replace(/[^\w.-]+/g, '_')}.json`);
  console.log(`\n=== ${label} ===`);
  const run = spawnSync(
    process.execPath,
    [
      vitest,
      'run',
      '--project',
      project,
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${output}`,
      ...args,
    ],
    { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } },
  );
  let passed = 0;
  let failed = 0;
  if (existsSync(output)) {
    const report = JSON.parse(readFileSync(output, 'utf8'));
    passed = report.numPassedTests;
    failed = report.numFailedTests;
    // A file that fails to load has no tests of its own; it still counts as a failure.
    failed += report.testResults.filter(
      (file) => file.status === 'failed' && file.assertionResults.length === 0,
    ).length;
  }
  if (run.status !== 0 && failed === 0) failed = 1;
  tally.push({ label, passed, failed });
}

if (lanes.includes('unit')) runVitest('unit', 'unit', {});
if (lanes.includes('nvim')) {
  const nvims = resolveNvims({ install: true });
  if (nvims.length === 0) {
    console.error('test: no Neovim >= 0.10 found or installed');
    tally.push({ label: 'nvim', passed: 0, failed: 1 });
  }
  for (const nvim of nvims) {
    runVitest(`nvim ${nvim.lane} (v${nvim.version})`, 'nvim', {
      FLEMMA_TEST_NVIM: nvim.bin,
      FLEMMA_TEST_NVIM_VERSION: nvim.version,
    });
  }
}

console.log('');
for (const lane of tally)
  console.log(`${lane.label}: ${lane.passed} passed, ${lane.failed} failed`);
const passed = tally.reduce((sum, lane) => sum + lane.passed, 0);
const failed = tally.reduce((sum, lane) => sum + lane.failed, 0);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
