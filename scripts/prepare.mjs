// Brings a checkout to a testable state using only Node's built-ins: installs dependencies when
// package-lock.json changed since the last install or only the plugin's own were installed, and
// rebuilds dist/ when the sources changed.
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

/**
 * Why `npm ci` must run before the development scripts, or undefined when node_modules is current:
 * missing, older than package-lock.json, or installed for the plugin only (`npm ci --omit=dev`,
 * the plugin managers' build), which lacks the test, lint and format tools.
 */
export function dependenciesOutdated(dir = root) {
  const marker = join(dir, 'node_modules/.package-lock.json');
  const lock = join(dir, 'package-lock.json');
  if (!existsSync(marker)) return 'node_modules/ is missing';
  if (statSync(marker).mtimeMs < statSync(lock).mtimeMs) return 'package-lock.json changed';
  const { devDependencies = {} } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const absent = Object.keys(devDependencies).filter(
    (name) => !existsSync(join(dir, 'node_modules', name, 'package.json')),
  );
  if (absent.length > 0) {
    return `the development packages are not installed (${absent.slice(0, 3).join(', ')}${absent.length > 3 ? ', …' : ''}; an install for the plugin only?)`;
  }
  return undefined;
}

export function ensureDependencies() {
  const reason = dependenciesOutdated();
  if (reason === undefined) return false;
  process.stderr.write(`Installing dependencies (npm ci): ${reason}...\n`);
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
