// The import graph of `src/` has no circle (type imports included): services depend on narrow
// interfaces and the wiring (`src/host/wiring.ts`) is the only place that builds them. The check
// itself is shown to find a circle.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';
import { type Graph, circles } from '../helpers/graph.js';

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g;
const DYNAMIC = /import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function graphOf(files: Record<string, string>): Graph {
  const graph: Graph = new Map();
  for (const [file, text] of Object.entries(files)) {
    const deps = new Set<string>();
    for (const pattern of [IMPORT, DYNAMIC]) {
      for (const match of text.matchAll(pattern)) {
        const target = resolve(dirname(file), match[1] ?? '').replace(/\.js$/, '.ts');
        if (target in files) deps.add(target);
      }
    }
    graph.set(file, [...deps]);
  }
  return graph;
}

describe('the import graph', () => {
  it('of src/ has no circle', () => {
    const src = join(ROOT, 'src');
    const files = Object.fromEntries(
      sources(src).map((file) => [file, readFileSync(file, 'utf8')]),
    );
    expect(Object.keys(files).length).toBeGreaterThan(100);
    const found = circles(graphOf(files)).map((circle) =>
      circle.map((file) => relative(src, file)),
    );
    expect(found).toEqual([]);
  });

  it('the check finds a circle, through type imports too', () => {
    const files = {
      '/x/a.ts': "import { b } from './b.js';",
      '/x/b.ts': "import type { C } from './c.js';",
      '/x/c.ts': "export { a } from './a.js';",
      '/x/d.ts': "import { a } from './a.js';",
    };
    expect(circles(graphOf(files))).toEqual([['/x/a.ts', '/x/b.ts', '/x/c.ts']]);
  });
});
