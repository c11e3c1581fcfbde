// What installing the plugin needs (docs/architecture.md, "Installing and building"): a plugin
// manager's build runs `npm ci --omit=dev && npm run build`, so everything the build reads must be
// among `dependencies`, and npm must know which packages may run install scripts (no warning, and
// no script that is not needed). The not-built message and the README name the same command.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dependenciesOutdated } from '../../scripts/prepare.mjs';
import { ROOT } from '../helpers/paths.js';

interface PackageJson {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  allowScripts?: Record<string, boolean>;
}

interface LockEntry {
  version?: string;
  dev?: boolean;
  hasInstallScript?: boolean;
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, LockEntry>;
};

function sources(dir: string, ext: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path, ext);
    return path.endsWith(ext) ? [path] : [];
  });
}

/** The package a bare specifier names (`@scope/pkg/sub.js` → `@scope/pkg`), or undefined. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:')) return undefined;
  if (builtinModules.includes(specifier)) return undefined;
  const parts = specifier.split('/');
  return parts.slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
}

/** The packages a file imports at run time (type-only imports are erased by the bundler). */
function runtimeImports(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = new Set<string>();
  const statics = /(?:^|\n)\s*(import|export)(\s+type)?\b[^'"]*?\bfrom\s+['"]([^'"]+)['"]/g;
  for (const match of code.matchAll(statics)) {
    if (match[2] !== undefined) continue;
    const name = packageOf(match[3] ?? '');
    if (name !== undefined) found.add(name);
  }
  for (const match of code.matchAll(/(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g)) {
    const name = packageOf(match[1] ?? '');
    if (name !== undefined) found.add(name);
  }
  for (const match of code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    const name = packageOf(match[1] ?? '');
    if (name !== undefined) found.add(name);
  }
  return [...found].sort();
}

/** The decision of `allowScripts` about an installed package: true, false or undefined. */
function scriptDecision(name: string, version: string | undefined): boolean | undefined {
  const policy = pkg.allowScripts ?? {};
  const pinned = version === undefined ? undefined : policy[`${name}@${version}`];
  return pinned ?? policy[name];
}

/** A file's imports of every kind the install must tell apart. */
const IMPORTS = [
  "import type { A } from 'typed-only';",
  "import { b } from 'left-pad/sub.js';",
  "import {\n  c,\n} from '@scope/pkg/client/x.js';",
  "import 'side-effect';",
  "export { d } from 're-exported';",
  "// import { e } from 'commented';",
  "/** @type {import('in-jsdoc').X} */",
  "const f = await import('lazy');",
  "import { g } from 'node:fs';",
  "import { h } from './local.js';",
].join('\n');

describe('the install', () => {
  it('finds the packages a file imports, without type-only imports and comments', () => {
    expect(runtimeImports(IMPORTS)).toEqual([
      '@scope/pkg',
      'lazy',
      'left-pad',
      're-exported',
      'side-effect',
    ]);
  });

  it('builds from `dependencies` alone (what `npm ci --omit=dev` installs)', () => {
    const deps = Object.keys(pkg.dependencies);
    // The bundler, for scripts/build.mjs.
    expect(deps).toContain('esbuild');
    const files = [
      join(ROOT, 'scripts/build.mjs'),
      join(ROOT, 'scripts/source-hash.mjs'),
      ...sources(join(ROOT, 'src'), '.ts'),
    ];
    const missing = files.flatMap((file) =>
      runtimeImports(readFileSync(file, 'utf8'))
        .filter((name) => !deps.includes(name))
        .map((name) => `${file.slice(ROOT.length + 1)}: ${name}`),
    );
    expect(missing, 'imports of packages that are not among `dependencies`').toEqual([]);
    // The lock agrees: nothing the build needs is marked as a development package.
    for (const name of deps) {
      expect(lock.packages[`node_modules/${name}`]?.dev, `${name} in the lock`).not.toBe(true);
    }
  });

  it('says which packages may run install scripts (npm warns about the others)', () => {
    const undecided = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript === true)
      .map(([path, entry]) => ({
        name: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length),
        version: entry.version,
      }))
      .filter(({ name, version }) => scriptDecision(name, version) === undefined)
      .map(({ name, version }) => `${name}@${String(version)}`);
    expect(undecided, 'add them to allowScripts with `npm install-scripts approve|deny`').toEqual(
      [],
    );
    // esbuild's postinstall checks (and if need be fetches) its native binary: the build needs it.
    expect(scriptDecision('esbuild', pkg.dependencies['esbuild'])).toBe(true);
    // protobufjs only warns about version schemes; @google/genai's preinstall is an echo.
    expect(scriptDecision('protobufjs', undefined)).toBe(false);
    expect(scriptDecision('@google/genai', undefined)).toBe(false);
  });

  it('names one build command in the not-built message, the README and the help', () => {
    const host = readFileSync(join(ROOT, 'lua/flemma/host/init.lua'), 'utf8');
    const command = /M\.BUILD_COMMAND = "([^"]+)"/.exec(host)?.[1];
    expect(command).toBe('npm ci --omit=dev && npm run build');
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`build = "${String(command)}"`);
    expect(readme).toContain(`\n${String(command)}\n`);
    expect(readme).toContain(':Lazy build flemma');
    const help = readFileSync(join(ROOT, 'doc/flemma.txt'), 'utf8');
    expect(help).toContain(`build = "${String(command)}"`);
    expect(help).not.toContain('<owner>');
    expect(readme).not.toMatch(/<owner>|<repository-url>/);
  });
});

describe('npm test on a checkout installed for the plugin only', () => {
  it('installs again when node_modules lacks the development packages', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flemma-deps-'));
    try {
      writeFileSync(
        join(dir, 'package.json'),
        JSON.stringify({ dependencies: { a: '1.0.0' }, devDependencies: { vitest: '1.0.0' } }),
      );
      writeFileSync(join(dir, 'package-lock.json'), '{}');
      expect(dependenciesOutdated(dir)).toBe('node_modules/ is missing');
      // What `npm ci --omit=dev` leaves: the hidden lock, the dependencies, no vitest.
      mkdirSync(join(dir, 'node_modules/a'), { recursive: true });
      writeFileSync(join(dir, 'node_modules/a/package.json'), '{}');
      writeFileSync(join(dir, 'node_modules/.package-lock.json'), '{}');
      expect(dependenciesOutdated(dir)).toMatch(/development packages are not installed \(vitest;/);
      mkdirSync(join(dir, 'node_modules/vitest'));
      writeFileSync(join(dir, 'node_modules/vitest/package.json'), '{}');
      expect(dependenciesOutdated(dir)).toBeUndefined();
      // A lock newer than the install.
      const later = new Date(Date.now() + 60_000);
      utimesSync(join(dir, 'package-lock.json'), later, later);
      expect(dependenciesOutdated(dir)).toBe('package-lock.json changed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
