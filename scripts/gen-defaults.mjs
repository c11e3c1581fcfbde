// `npm run gen:defaults`: writes src/core/config/defaults.json, the configuration's defaults and
// schema as data (scripts/gen-defaults.lua, run by Neovim), which `flemma run` reads without
// Neovim. test/nvim/cli-defaults.test.ts fails when the file is not what the schema gives.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { resolveNvims } from './nvim.mjs';
import { root } from './prepare.mjs';

export const DEFAULTS_FILE = join(root, 'src/core/config/defaults.json');

/** Objects' keys sorted, at every depth: the file does not change with Lua's table order. */
function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted(value[key])]),
  );
}

/** The file's text for the JSON that scripts/gen-defaults.lua writes (as Prettier lays it out). */
export async function defaultsText(json) {
  const options = (await prettier.resolveConfig(DEFAULTS_FILE)) ?? {};
  return prettier.format(JSON.stringify(sorted(JSON.parse(json))), {
    ...options,
    filepath: DEFAULTS_FILE,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bin = process.env.FLEMMA_TEST_NVIM || resolveNvims({ install: true })[0]?.bin;
  if (bin === undefined) throw new Error('gen:defaults: no Neovim found');
  const json = execFileSync(
    bin,
    [
      '--headless',
      '--clean',
      '--cmd',
      `set rtp^=${root}`,
      '-l',
      join(root, 'scripts/gen-defaults.lua'),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  writeFileSync(DEFAULTS_FILE, await defaultsText(json));
  console.log(`gen:defaults: wrote ${DEFAULTS_FILE}`);
}
