// The Lua module graph of `lua/` has no circle. Every `require("flemma…")` counts, the lazy ones
// too (`lazy.require("flemma…")`, `pcall(require, "flemma…")`): a module required late that
// requires its caller back is still a circle in the design. The check itself is shown to find one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';
import { type Graph, circles } from '../helpers/graph.js';

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
