// The fingerprint of what the bundle is built from; `:checkhealth flemma` computes the same one
// in Lua (lua/flemma/health.lua) to tell whether dist/ is current.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

function walk(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

/** sha256 over "path\ncontent\n" for src/** and package.json, sorted by path. */
export function sourceHash(root) {
  const files = walk(join(root, 'src'), []).concat([join(root, 'package.json')]);
  const rel = files.map((file) => relative(root, file).split(sep).join('/')).sort();
  const hash = createHash('sha256');
  for (const path of rel) {
    hash.update(path + '\n');
    hash.update(readFileSync(join(root, path)));
    hash.update('\n');
  }
  return hash.digest('hex');
}
