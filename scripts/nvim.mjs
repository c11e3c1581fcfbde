// Finds the Neovim binaries the end-to-end lane runs on: Neovim 0.10 and the newest release.
// Each lane takes, in order: its env override (FLEMMA_NVIM_0_10 / FLEMMA_NVIM_LATEST), a cached
// install under ~/.cache/flemma/, or a fresh install from Debian's packages (install-nvim.sh).
// `NVIM=/path/to/nvim npm test` runs the lane on that one binary instead.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export const LANES = [
  { name: '0.10', env: 'FLEMMA_NVIM_0_10', suite: 'trixie' },
  { name: 'latest', env: 'FLEMMA_NVIM_LATEST', suite: 'sid' },
];

export function cacheDir() {
  return (
    process.env.FLEMMA_CACHE_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'flemma')
  );
}

/** The version string (`0.10.4`) of an nvim binary, or undefined if it does not run. */
export function nvimVersion(bin) {
  try {
    const out = execFileSync(bin, ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return /NVIM v(\d+\.\d+\.\d+)/.exec(out)?.[1];
  } catch {
    return undefined;
  }
}

function atLeast(version, major, minor) {
  const [a, b] = version.split('.').map(Number);
  return a > major || (a === major && b >= minor);
}

function isExecutable(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Resolve one lane; installs it when `install` is set and nothing else is available. */
export function resolveLane(lane, { install = false } = {}) {
  const override = process.env[lane.env];
  if (override) {
    const version = nvimVersion(override);
    if (!version) throw new Error(`${lane.env}=${override} is not a working nvim`);
    return { lane: lane.name, bin: override, version };
  }
  const cached = join(cacheDir(), `nvim-${lane.suite}`, 'bin', 'nvim');
  if (existsSync(cached)) {
    const version = nvimVersion(cached);
    if (version) return { lane: lane.name, bin: cached, version };
  }
  if (!install) return undefined;
  process.stderr.write(
    `Neovim ${lane.name} for the tests is not installed yet: installing it (about a minute; progress below)\n`,
  );
  execFileSync(
    'bash',
    [join(root, 'scripts/install-nvim.sh'), lane.suite, dirname(dirname(cached))],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const version = nvimVersion(cached);
  if (!version) throw new Error(`installing Neovim ${lane.name} failed`);
  return { lane: lane.name, bin: cached, version };
}

/** The binaries the nvim lane runs on. */
export function resolveNvims({ install = false } = {}) {
  const explicit = process.env.NVIM;
  if (explicit) {
    const version = isExecutable(explicit) ? nvimVersion(explicit) : undefined;
    if (version && atLeast(version, 0, 10)) {
      return [{ lane: `nvim ${version}`, bin: explicit, version }];
    }
    // NOTE: inside a Neovim :terminal, $NVIM is the server address, not a binary.
    process.stderr.write(
      `NVIM=${explicit} is not a Neovim >= 0.10 executable; testing on Neovim 0.10 and the newest instead\n`,
    );
  }
  return LANES.map((lane) => resolveLane(lane, { install })).filter((found) => found !== undefined);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const install = process.argv[2] === 'install';
  for (const found of resolveNvims({ install }))
    console.log(`${found.lane}\t${found.version}\t${found.bin}`);
}
