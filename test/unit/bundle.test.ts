// Checks on the built bundle (npm test builds it first): what start-up loads, and what it does not.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

const PROVIDER_HOSTS = ['api.anthropic.com', 'api.openai.com', 'generativelanguage.googleapis.com'];

function read(path: string): string {
  return readFileSync(join(ROOT, 'dist', path), 'utf8');
}

/** Every file start-up loads: host.js and, transitively, its static imports. */
function eagerFiles(): Set<string> {
  const seen = new Set<string>();
  const stack = ['host.js'];
  for (let file = stack.pop(); file !== undefined; file = stack.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
    for (const match of read(file).matchAll(/import\s*[^;()"']*?["'](\.\/[^"']+)["']/g)) {
      stack.push(join(dir, match[1] ?? '').replace(/\\/g, '/'));
    }
  }
  return seen;
}

describe('dist/host.js', () => {
  it('loads no provider SDK at start-up: each sits in a chunk behind import()', () => {
    const eager = eagerFiles();
    expect(eager.size).toBeGreaterThan(1);
    const eagerText = [...eager].map(read).join('\n');
    for (const host of PROVIDER_HOSTS) expect(eagerText.includes(host), host).toBe(false);
    const lazy = readdirSync(join(ROOT, 'dist/chunks'))
      .filter((name) => name.endsWith('.js'))
      .map((name) => `chunks/${name}`)
      .filter((file) => !eager.has(file));
    const lazyText = lazy.map(read).join('\n');
    for (const host of PROVIDER_HOSTS) expect(lazyText.includes(host), host).toBe(true);
    expect(read('host.js').match(/import\(["']\.\/chunks\//g)?.length).toBeGreaterThanOrEqual(3);
  });

  it('records the source fingerprint it was built from, for :checkhealth', () => {
    const info = JSON.parse(read('build-info.json')) as { source_hash: string };
    expect(info.source_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(existsSync(join(ROOT, 'dist/rplugin.cjs'))).toBe(true);
  });
});
