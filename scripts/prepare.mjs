// Brings a checkout to a testable state using only Node's built-ins: installs dependencies when
// package-lock.json changed since the last install, and rebuilds dist/ when the sources changed.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceHash } from './source-hash.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (exit ${String(result.status)})`);
  }
}

export function ensureDependencies() {
  const marker = join(root, 'node_modules/.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return false;
  process.stderr.write('Installing dependencies (npm ci)...\n');
  run('npm', ['ci', '--no-audit', '--no-fund']);
  return true;
}

export function ensureBuild() {
  const info = join(root, 'dist/build-info.json');
  if (existsSync(info) && existsSync(join(root, 'dist/host.js'))) {
    const built = JSON.parse(readFileSync(info, 'utf8'));
    if (built.source_hash === sourceHash(root)) return false;
  }
  run(process.execPath, [join(root, 'scripts/build.mjs')]);
  return true;
}
