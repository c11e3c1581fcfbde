// `npm run qa`: every gate (typecheck, lint, format check, the Lua format and lint, both test
// lanes). Static gates run in
// parallel; output is shown only for a gate that fails.
import { spawn } from 'node:child_process';
import { ensureBuild, ensureDependencies, root } from './prepare.mjs';

function gate(name, command, args) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { cwd: root, env: { ...process.env, FORCE_COLOR: '1' } });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      resolve({ name, ok: code === 0, output, seconds });
    });
  });
}

ensureDependencies();
ensureBuild();
const results = await Promise.all([
  gate('typecheck', 'npm', ['run', '--silent', 'typecheck']),
  gate('lint', 'npm', ['run', '--silent', 'lint']),
  gate('format', 'npm', ['run', '--silent', 'format:check']),
  gate('lua format', 'npm', ['run', '--silent', 'format:lua:check']),
  gate('lua lint', 'npm', ['run', '--silent', 'lint:lua']),
]);
results.push(await gate('test', 'npm', ['test', '--silent']));
let failed = false;
for (const result of results) {
  if (result.ok) {
    console.log(`ok   ${result.name} (${result.seconds} s)`);
  } else {
    failed = true;
    console.log(`FAIL ${result.name} (${result.seconds} s)\n${result.output}`);
  }
}
const tally = results.at(-1)?.output.match(/^\d+ passed, \d+ failed$/m)?.[0];
if (tally) console.log(tally);
process.exit(failed ? 1 : 0);
