// scripts/install-nvim.sh says what it does while it downloads a Neovim (about a minute on a slow
// line): a line per phase, the package lists by quarters, a line per package, and the total,
// without flooding a CI log. Run here against stand-ins for apt-get, apt-cache, dpkg and patchelf
// on PATH, so nothing is downloaded.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

const STAND_INS: Record<string, string> = {
  // update: progress on the Status-Fd; download: a .deb of 3 kB in the current directory, none for
  // lua-lpeg (a package the suite does not have).
  'apt-get': `#!/bin/bash
fd=""; command=""; packages=()
while [ $# -gt 0 ]; do
  case "$1" in
    -o) case "$2" in APT::Status-Fd=*) fd="\${2#APT::Status-Fd=}";; esac; shift 2;;
    -*) shift;;
    *) if [ -z "$command" ]; then command="$1"; else packages+=("$1"); fi; shift;;
  esac
done
case "$command" in
  update)
    if [ -n "$fd" ]; then
      for pct in 0.0000 10.5000 33.3333 52.0000 80.0000 100.0000; do
        echo "dlstatus:1:$pct:Retrieving file 1 of 3" >&"$fd"
      done
    fi;;
  download)
    for p in "\${packages[@]}"; do
      [ "$p" = lua-lpeg ] && exit 100
      head -c 3072 /dev/zero > "\${p}_1.0_amd64.deb"
    done;;
esac
`,
  'apt-cache': `#!/bin/sh
echo "neovim"
echo "  Depends: libtree-sitter0.25"
`,
  dpkg: `#!/bin/bash
# dpkg -x FILE DEST: the neovim package brings the binary, every package a library directory.
mkdir -p "$3/usr/lib/x86_64-linux-gnu"
case "$(basename "$2")" in
  neovim_*)
    mkdir -p "$3/usr/bin" "$3/usr/lib/nvim/parser"
    printf '#!/bin/sh\\necho "NVIM v0.12.4"\\n' > "$3/usr/bin/nvim"
    chmod +x "$3/usr/bin/nvim"
    : > "$3/usr/lib/nvim/parser/c.so";;
esac
`,
  patchelf: '#!/bin/sh\nexit 0\n',
};

let dir: string | undefined;

afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('scripts/install-nvim.sh', () => {
  it('shows a line per phase and per package, and prints the nvim path last', () => {
    dir = mkdtempSync(join(tmpdir(), 'flemma-install-nvim-'));
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    for (const [name, text] of Object.entries(STAND_INS)) {
      writeFileSync(join(bin, name), text);
      chmodSync(join(bin, name), 0o755);
    }
    const prefix = join(dir, 'nvim-sid');
    const run = spawnSync('bash', [join(ROOT, 'scripts/install-nvim.sh'), 'sid', prefix], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${bin}:/usr/bin:/bin` },
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').at(-1)).toBe(join(prefix, 'bin', 'nvim'));

    const lines = run.stderr.trim().split('\n');
    const phases = lines.filter((line) => /^install-nvim: \[\d\/4\]/.test(line));
    expect(phases).toEqual([
      'install-nvim: [1/4] package lists of Debian sid (deb.debian.org)',
      'install-nvim: [2/4] downloading 14 packages',
      `install-nvim: [3/4] unpacking into ${prefix}/root`,
      'install-nvim: [4/4] pointing nvim at the unpacked libraries (patchelf)',
    ]);
    expect(lines[0]).toBe(`install-nvim: Neovim from Debian sid into ${prefix}`);
    expect(lines.filter((line) => line.startsWith('install-nvim:   package lists'))).toEqual([
      'install-nvim:   package lists 25%',
      'install-nvim:   package lists 50%',
      'install-nvim:   package lists 75%',
      'install-nvim:   package lists done',
    ]);
    const packages = lines.filter((line) => /^install-nvim: {3}\d+\/14 /.test(line));
    expect(packages).toHaveLength(14);
    expect(packages[0]).toBe('install-nvim:   1/14 neovim (4 kB)');
    expect(packages).toContain('install-nvim:   9/14 lua-lpeg (not in sid, skipped)');
    expect(packages.at(-1)).toBe('install-nvim:   14/14 libtree-sitter0.25 (4 kB)');
    expect(lines.at(-1)).toMatch(/^install-nvim: NVIM v0\.12\.4 ready in \d+ s$/);
    // A CI log gets a screenful, not a line per percent.
    expect(lines.length).toBeLessThanOrEqual(30);
  });
});
