// The import graph of `src/` has no circle (type imports included): services depend on narrow
// interfaces and the wiring (`src/host/wiring.ts`) is the only place that builds them. The check
// itself is shown to find a circle.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

type Graph = Map<string, string[]>;

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

/** The strongly connected components with more than one file (Tarjan). */
function circles(graph: Graph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      for (;;) {
        const member = stack.pop();
        if (member === undefined) break;
        onStack.delete(member);
        component.push(member);
        if (member === node) break;
      }
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
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
