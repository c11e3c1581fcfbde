// A copy of the plugin as a user installs it: the files of a fresh clone (what git tracks, and
// new files not ignored yet to be committed; so no doc/tags and no dist/), and, when asked, the built dist/ (what the build adds). Tests of the
// install, of the help and of a rebuild while Neovim runs change such a copy, never the checkout.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from './paths.js';

/** Copy the plugin into `dest` (created); with `dist`, the built bundle too (without source maps). */
export function copyInstall(dest: string, options: { dist?: boolean } = {}): string {
  const files = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  )
    .split('\0')
    .filter((path) => path !== '' && existsSync(join(ROOT, path)));
  for (const path of files) {
    mkdirSync(dirname(join(dest, path)), { recursive: true });
    cpSync(join(ROOT, path), join(dest, path), { verbatimSymlinks: true });
  }
  if (options.dist === true) {
    cpSync(join(ROOT, 'dist'), join(dest, 'dist'), {
      recursive: true,
      filter: (source) => !source.endsWith('.map'),
    });
  }
  return dest;
}
