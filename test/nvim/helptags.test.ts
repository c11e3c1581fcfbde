// `:help flemma` after a plain install: a clone in a package directory has no doc/tags (git does
// not track it), and Neovim does not run `:helptags` for packages. The plugin makes the tags on
// first load (and again when the help file is newer), the build writes the same file
// (scripts/helptags.mjs), and `:checkhealth flemma` says whether the help opens.
import { mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { helptagsText } from '../../scripts/helptags.mjs';
import { type Driver, ROOT } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';
import { tempDirs } from '../helpers/temp.js';
import { copyInstall } from '../helpers/install.js';

let driver: Driver | undefined;
let data: string | undefined;
const temp = tempDirs();
const launch = neovimLauncher();

/** The README's install by hand: a clone in `site/pack/flemma/start/flemma` of the data directory. */
function installByHand(): string {
  data = temp('flemma-install-');
  const plugin = join(data, 'nvim', 'site', 'pack', 'flemma', 'start', 'flemma');
  mkdirSync(plugin, { recursive: true });
  return copyInstall(plugin);
}

function startInstalled(): Promise<Driver> {
  return launch({ installed: true, env: { XDG_DATA_HOME: data ?? '' } });
}

/** `:help {tag}` as typed; the help window's file and cursor line, and the last error. */
async function help(
  d: Driver,
  tag: string,
): Promise<{ file: string; line: string; error: string }> {
  await d.lua('vim.v.errmsg = ""');
  await d.press(`:help ${tag}<CR>`);
  return d.lua(`return {
    file = vim.bo.buftype == "help" and vim.fn.expand("%:t") or "",
    line = vim.api.nvim_get_current_line(),
    error = vim.v.errmsg,
  }`);
}

describe(':help flemma after an install by hand', () => {
  it('opens :help flemma-credentials in a fresh clone without doc/tags', async () => {
    const plugin = installByHand();
    expect(() => statSync(join(plugin, 'doc', 'tags'))).toThrow();
    driver = await startInstalled();
    // The package loaded as a user's Neovim loads it (plugin/flemma.lua ran).
    expect(await driver.lua('return vim.g.loaded_flemma')).toBe(true);
    const shown = await help(driver, 'flemma-credentials');
    expect(shown.error).toBe('');
    expect(shown.file).toBe('flemma.txt');
    expect(shown.line).toContain('*flemma-credentials*');
    // The tags are Neovim's own, and no temporary directory is left in doc/.
    expect(readFileSync(join(plugin, 'doc', 'tags'), 'utf8')).toBe(
      helptagsText(join(plugin, 'doc')),
    );
    expect(
      (await driver.lua<string[]>('return vim.fn.readdir(...)', join(plugin, 'doc'))).sort(),
    ).toEqual(['flemma.txt', 'tags']);
  });

  it('makes the tags again when the help file is newer (an update)', async () => {
    const plugin = installByHand();
    driver = await startInstalled();
    expect((await help(driver, 'flemma-credentials')).file).toBe('flemma.txt');
    await driver.quit();
    driver = undefined;
    // An update brings a help file with a new tag; the old tags do not know it.
    const file = join(plugin, 'doc', 'flemma.txt');
    writeFileSync(file, readFileSync(file, 'utf8') + '\nAdded  *flemma-zz-added*\n');
    const later = new Date(Date.now() + 60_000);
    utimesSync(file, later, later);
    driver = await startInstalled();
    const shown = await help(driver, 'flemma-zz-added');
    expect(shown.error).toBe('');
    expect(shown.line).toContain('*flemma-zz-added*');
  });

  it("answers :help flemma with the README's lazy.nvim spec before the plugin loads", async () => {
    // Where lazy.nvim clones it, off the runtimepath until it loads, with the tags lazy.nvim
    // makes after the clone (`:helptags` of its doc/).
    const plugin = copyInstall(join(temp('flemma-lazy-'), 'lazy', 'flemma'));
    driver = await launch({ plugin: temp('flemma-empty-') });
    await driver.command(`helptags ${join(plugin, 'doc')}`);
    // The spec as the README writes it; lazy.nvim runs its `init` at start-up.
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const spec = /### lazy\.nvim\s+```lua\n([\s\S]*?)\n```/.exec(readme)?.[1];
    expect(spec).toBeDefined();
    await driver.lua(
      `local spec, dir = ...
      assert(load("return " .. spec))().init({ dir = dir, name = "flemma" })`,
      spec,
      plugin,
    );
    const shown = await help(driver, 'flemma-credentials');
    expect(shown.error).toBe('');
    expect(shown.file).toBe('flemma.txt');
    expect(shown.line).toContain('*flemma-credentials*');
    // Flemma itself is not loaded.
    expect(await driver.lua('return { vim.g.loaded_flemma, package.loaded.flemma }')).toEqual([]);
  });

  it("writes doc/tags in the build as Neovim's :helptags does", async () => {
    driver = await launch();
    const dir = join(driver.home, 'doc');
    mkdirSync(dir);
    writeFileSync(join(dir, 'flemma.txt'), readFileSync(join(ROOT, 'doc', 'flemma.txt')));
    // Edge cases of the tag syntax beside the real file.
    writeFileSync(
      join(dir, 'extra.txt'),
      [
        '*extra.txt*  Edge cases',
        'a *b/c* and *d\\e* tag, **, *no tag*, x*not*, *end*.',
        '|link| *ok-1* *ok-2*\t*tab-after*\t',
        '',
      ].join('\n'),
    );
    const ours = helptagsText(dir);
    await driver.command(`helptags ${dir}`);
    expect(ours).toBe(readFileSync(join(dir, 'tags'), 'utf8'));
    expect(ours).toContain('b/c\textra.txt\t/*b\\/c*\n');
  });
});
