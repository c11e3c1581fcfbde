// src/core keeps no state of its own between calls: no module-level mutable binding, no cache in
// a module variable (docs/testing.md, "No state in src/core"). Whatever must outlive a call lives
// in an object the host makes and passes in (Host). This reads the real source with the
// TypeScript compiler and fails on what would bring such state back; the last tests run the same
// check on sample code, so that the check itself cannot quietly stop seeing anything.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

/** Methods that change the collection or array they are called on. */
const MUTATORS: ReadonlySet<string> = new Set([
  'push',
  'pop',
  'shift',
  'unshift',
  'splice',
  'sort',
  'reverse',
  'fill',
  'copyWithin',
  'set',
  'add',
  'delete',
  'clear',
]);

/** `Object.<name>(target, …)` changes `target`. */
const OBJECT_MUTATORS: ReadonlySet<string> = new Set([
  'assign',
  'defineProperty',
  'defineProperties',
  'setPrototypeOf',
]);

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) tsFiles(path, out);
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** The identifier an access chain starts from (`a` of `a.b[c].d`), if it is one. */
function rootIdentifier(node: ts.Expression): ts.Identifier | undefined {
  let current: ts.Expression = node;
  while (
    ts.isPropertyAccessExpression(current) ||
    ts.isElementAccessExpression(current) ||
    ts.isParenthesizedExpression(current) ||
    ts.isNonNullExpression(current) ||
    ts.isAsExpression(current) ||
    ts.isSatisfiesExpression(current)
  ) {
    current = current.expression;
  }
  return ts.isIdentifier(current) ? current : undefined;
}

/** What an expression statement or expression writes to, if anything. */
function writeTarget(node: ts.Node): ts.Expression | undefined {
  if (
    ts.isBinaryExpression(node) &&
    node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
    node.operatorToken.kind <= ts.SyntaxKind.LastAssignment
  ) {
    return node.left;
  }
  if (
    (ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node)) &&
    (node.operator === ts.SyntaxKind.PlusPlusToken ||
      node.operator === ts.SyntaxKind.MinusMinusToken)
  ) {
    return node.operand;
  }
  if (ts.isDeleteExpression(node)) return node.expression;
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
    const callee = node.expression;
    if (MUTATORS.has(callee.name.text)) return callee.expression;
    if (
      ts.isIdentifier(callee.expression) &&
      callee.expression.text === 'Object' &&
      OBJECT_MUTATORS.has(callee.name.text)
    ) {
      return node.arguments[0];
    }
  }
  return undefined;
}

/** The flags of a regular expression literal or `new RegExp(…, flags)`; undefined otherwise. */
function regexFlags(init: ts.Expression): string | undefined {
  if (ts.isRegularExpressionLiteral(init)) return init.text.slice(init.text.lastIndexOf('/') + 1);
  if (ts.isNewExpression(init) && init.expression.getText() === 'RegExp') {
    const flags = init.arguments?.[1];
    if (flags === undefined) return '';
    return ts.isStringLiteralLike(flags) ? flags.text : 'g'; // computed flags: assume the worst
  }
  return undefined;
}

/**
 * Everything in `files` (all of src/, so that writes from src/host count too) that keeps state at
 * module level in a file under `<root>/src/core/`, as `path:line: what` lines.
 */
function moduleStateViolations(root: string, files: readonly string[]): string[] {
  const coreDir = join(root, 'src', 'core') + sep;
  const isCore = (file: string): boolean => file.startsWith(coreDir);
  const program = ts.createProgram(files, {
    noLib: true,
    noResolve: true,
    types: [],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const out: string[] = [];
  const where = (node: ts.Node): string => {
    const file = node.getSourceFile();
    const line = file.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    return `${relative(root, file.fileName)}:${String(line)}`;
  };

  /** The module-level declaration in src/core that `id` refers to, if it refers to one. */
  const coreModuleBinding = (id: ts.Identifier): ts.Declaration | undefined => {
    let symbol = checker.getSymbolAtLocation(id);
    if (symbol === undefined) return undefined;
    if (symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    const declaration = symbol.valueDeclaration ?? symbol.declarations?.[0];
    if (declaration === undefined || !isCore(declaration.getSourceFile().fileName)) {
      return undefined;
    }
    const statement = ts.isVariableDeclaration(declaration)
      ? declaration.parent.parent
      : declaration;
    return statement.parent === declaration.getSourceFile() ? declaration : undefined;
  };

  /** Module-level regexes with a `g` or `y` flag, by declaration: their `lastIndex` is state. */
  const statefulRegexes = new Set<ts.Declaration>();

  for (const file of program.getSourceFiles()) {
    if (!isCore(file.fileName)) continue;
    for (const statement of file.statements) {
      if (ts.isClassDeclaration(statement)) {
        for (const member of statement.members) {
          if (ts.isPropertyDeclaration(member) && ts.canHaveModifiers(member)) {
            const modifiers = ts.getModifiers(member) ?? [];
            if (modifiers.some((m) => m.kind === ts.SyntaxKind.StaticKeyword)) {
              out.push(`${where(member)}: static field ${member.name.getText()}`);
            }
          }
        }
        continue;
      }
      if (!ts.isVariableStatement(statement)) continue;
      const constant = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
      for (const declaration of statement.declarationList.declarations) {
        const name = declaration.name.getText();
        const init = declaration.initializer;
        if (!constant) {
          out.push(`${where(declaration)}: module-level let/var ${name}`);
          continue;
        }
        if (init === undefined) continue;
        const flags = regexFlags(init);
        if (flags !== undefined) {
          if (/[gy]/u.test(flags)) statefulRegexes.add(declaration);
          continue;
        }
        if (ts.isNewExpression(init)) {
          const made = init.expression.getText();
          const annotation = declaration.type?.getText() ?? '';
          const readonlyView =
            (made === 'Set' && annotation.startsWith('ReadonlySet<')) ||
            (made === 'Map' && annotation.startsWith('ReadonlyMap<'));
          if (!readonlyView) out.push(`${where(declaration)}: module-level new ${made} (${name})`);
          continue;
        }
        const callee = ts.isCallExpression(init) ? init.expression : undefined;
        if (
          callee !== undefined &&
          (ts.isParenthesizedExpression(callee) ||
            ts.isFunctionExpression(callee) ||
            ts.isArrowFunction(callee))
        ) {
          out.push(`${where(declaration)}: module-level closure (${name})`);
        }
      }
    }
  }

  for (const file of program.getSourceFiles()) {
    if (!files.includes(file.fileName)) continue;
    const visit = (node: ts.Node): void => {
      const target = writeTarget(node);
      const id = target === undefined ? undefined : rootIdentifier(target);
      const declaration = id === undefined ? undefined : coreModuleBinding(id);
      if (id !== undefined && declaration !== undefined) {
        out.push(`${where(node)}: writes the module-level ${id.text}`);
      }
      if (
        ts.isPropertyAccessExpression(node) &&
        ['exec', 'test', 'lastIndex'].includes(node.name.text) &&
        ts.isIdentifier(node.expression)
      ) {
        const regex = coreModuleBinding(node.expression);
        if (regex !== undefined && statefulRegexes.has(regex)) {
          out.push(
            `${where(node)}: ${node.name.text} of the shared g/y regex ${node.expression.text}`,
          );
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return out;
}

describe('no state in src/core', () => {
  // Reading all of src/ takes a few seconds; the generous limit is only there so that a loaded
  // machine does not fail it (nothing here measures time).
  it('keeps no mutable state at module level', { timeout: 120_000 }, () => {
    expect(moduleStateViolations(ROOT, tsFiles(join(ROOT, 'src')))).toEqual([]);
  });
});

describe('the module-state check', () => {
  const root = mkdtempSync(join(tmpdir(), 'flemma-core-state-'));
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });
  const write = (path: string, lines: string[]): string => {
    const full = join(root, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, lines.join('\n'));
    return full;
  };

  it('finds each kind of module-level state, and nothing in constants', () => {
    const files = [
      write('src/core/probe.ts', [
        'let loading: Promise<void> | undefined;',
        'const cache = new Map<string, number>();',
        'const seen = new WeakMap<object, number>();',
        'class Registry { register(): void {} }',
        'export const registry = new Registry();',
        'export const list: string[] = [];',
        'const memo = (() => { const m = new Map(); return (k: string) => m.get(k); })();',
        'const OPENER = /\\{\\{/g;',
        'export function next(text: string): number {',
        '  OPENER.lastIndex = 0;',
        '  return OPENER.test(text) ? OPENER.lastIndex : -1;',
        '}',
        'class Clock { static now = 0; }',
        '// Constants are fine:',
        "const NAMES: ReadonlySet<string> = new Set(['a']);",
        "export const LEVELS: readonly string[] = ['x'];",
        'const PLAIN = /\\d+/u;',
        'const SPLIT = /,/g;',
        "export const parts = (s: string): string[] => s.split(SPLIT).concat(s.replace(SPLIT, ''));",
        'export const uses = [loading, cache, seen, memo, NAMES, PLAIN, Clock];',
      ]),
      write('src/host/user.ts', [
        "import { list } from '../core/probe.js';",
        "export function add(): void { list.push('x'); }",
      ]),
    ];
    const found = moduleStateViolations(root, files).map((line) => line.replace(/^[^:]*:/u, ''));
    expect(found).toEqual([
      '1: module-level let/var loading',
      '2: module-level new Map (cache)',
      '3: module-level new WeakMap (seen)',
      '5: module-level new Registry (registry)',
      '7: module-level closure (memo)',
      '13: static field now',
      '10: writes the module-level OPENER',
      '10: lastIndex of the shared g/y regex OPENER',
      '11: test of the shared g/y regex OPENER',
      '11: lastIndex of the shared g/y regex OPENER',
      '2: writes the module-level list',
    ]);
  });
});
