// The Lua module graph of `lua/` has no circle. Every `require("flemma…")` counts, the lazy ones
// too (`lazy.require("flemma…")`, `pcall(require, "flemma…")`): a module required late that
// requires its caller back is still a circle in the design. The check itself is shown to find one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

type Graph = Map<string, string[]>;

const REQUIRE =
  /\b(?:require|lazy\.require|lazy_require)\s*(?:\(\s*)?["'](flemma(?:\.[\w]+)*)["']|pcall\(\s*require\s*,\s*["'](flemma(?:\.[\w]+)*)["']/g;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.lua') ? [path] : [];
  });
}

/** `lua/flemma/ui/init.lua` → `flemma.ui`, `lua/flemma/ui/scan.lua` → `flemma.ui.scan`. */
function moduleName(root: string, file: string): string {
  return relative(root, file)
    .replace(/\.lua$/, '')
    .replace(/[/\\]init$/, '')
    .split(sep)
    .join('.');
}

/** Every flemma module named in a require of `text` (comments left out). */
export function requiredNames(text: string): string[] {
  const code = text.replace(/--\[(=*)\[[\s\S]*?\]\1\]/g, '').replace(/--[^\n]*/g, '');
  return [...code.matchAll(REQUIRE)].map((match) => match[1] ?? match[2] ?? '');
}

/** Each module with the flemma modules its text requires (comments left out). */
export function luaGraph(modules: Record<string, string>): Graph {
  const graph: Graph = new Map();
  for (const [name, text] of Object.entries(modules)) {
    const code = text.replace(/--\[(=*)\[[\s\S]*?\]\1\]/g, '').replace(/--[^\n]*/g, '');
    const deps = new Set<string>();
    for (const match of code.matchAll(REQUIRE)) {
      const target = match[1] ?? match[2] ?? '';
      if (target in modules && target !== name) deps.add(target);
    }
    graph.set(name, [...deps].sort());
  }
  return graph;
}

/** The strongly connected components with more than one module (Tarjan). */
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

export function luaModules(): Record<string, string> {
  const root = join(ROOT, 'lua');
  return Object.fromEntries(
    sources(root).map((file) => [moduleName(root, file), readFileSync(file, 'utf8')]),
  );
}

/** `require("flemma…")` calls that do not stand on a line of their own at the top level. */
export function innerRequires(text: string): string[] {
  return text
    .split('\n')
    .map((line, index) => ({ code: line.replace(/--.*$/, ''), index }))
    .filter(({ code }) => /(?<![.\w])require\s*\(?\s*["']flemma/.test(code) && /^\s/.test(code))
    .map(({ code, index }) => `${String(index + 1)}: ${code.trim()}`);
}

describe('the Lua module graph', () => {
  it('of lua/ has no circle, lazy requires included', () => {
    const modules = luaModules();
    expect(Object.keys(modules).length).toBeGreaterThan(50);
    expect(circles(luaGraph(modules))).toEqual([]);
  });

  it('requires only modules that exist (a module that moved is required by its new name)', () => {
    const modules = luaModules();
    const missing = Object.entries(modules).flatMap(([name, text]) =>
      requiredNames(text)
        .filter((target) => !(target in modules))
        .map((target) => `${name} → ${target}`),
    );
    expect(missing).toEqual([]);
  });

  it('names its requires at the top of each file, not inside functions', () => {
    const found = Object.entries(luaModules()).flatMap(([name, text]) =>
      innerRequires(text).map((at) => `${name}:${at}`),
    );
    expect(found).toEqual([]);
    expect(
      innerRequires(
        'local a = require("flemma.a")\nlocal function f()\n  return require("flemma.b")\nend',
      ),
    ).toEqual(['3: return require("flemma.b")']);
  });

  it('the check finds a circle, through a lazy require and a pcall too', () => {
    const modules = {
      'flemma.a': 'local b = require("flemma.b")',
      'flemma.b': 'local function f() return lazy.require("flemma.c") end',
      'flemma.c': 'local ok, a = pcall(require, "flemma.a")',
      'flemma.d': "local a = require 'flemma.a' -- require('flemma.d')",
      'flemma.e': '-- require("flemma.a")\nlocal x = 1',
    };
    expect(circles(luaGraph(modules))).toEqual([['flemma.a', 'flemma.b', 'flemma.c']]);
    expect(luaGraph(modules).get('flemma.e')).toEqual([]);
    expect(requiredNames('local t = require("flemma.trust") -- require("flemma.x")')).toEqual([
      'flemma.trust',
    ]);
  });
});
