// Builds the host and its lazily loaded parts:
//   dist/host.js       the host's entry (src/host/boot.ts): loads dist/host-main.js with V8's code
//                      cache (kept in dist/.cache/, written by the host itself)
//   dist/host-main.js  the host (CommonJS: Node reaches its first line ~10 ms sooner than an ES module)
//   dist/sdk/*.mjs     one ES module bundle per provider SDK, loaded with import() on first use
//   dist/rplugin.cjs   the remote-plugin adapter
//   dist/testing.mjs   the mock-tool and middleware helpers for users' tests
//   dist/cli.js        `flemma run` (src/cli/main.ts; `bin` in package.json), with no Neovim client
//   doc/tags           the help tags, so that `:help flemma` works without `:helptags`
// and checks that no provider SDK is part of what the host loads at start-up.
import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeHelptags } from './helptags.mjs';
import { sourceHash } from './source-hash.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const hash = sourceHash(root);

/** Provider SDKs: package name → the bundle that carries it. */
const SDKS = { '@anthropic-ai/sdk': 'anthropic', openai: 'openai', '@google/genai': 'genai' };
/** The MCP SDK's client parts (loaded when the first MCP server is configured); they share chunks. */
const MCP = {
  '@modelcontextprotocol/sdk/client/index.js': 'mcp-client',
  '@modelcontextprotocol/sdk/client/stdio.js': 'mcp-stdio',
  '@modelcontextprotocol/sdk/client/streamableHttp.js': 'mcp-http',
};
/** Everything loaded with import() on first use: the SDKs, and execa and ajv (the first tool run). */
const LAZY = {
  ...SDKS,
  execa: 'execa',
  ajv: 'ajv',
  yaml: 'yaml',
  'fast-xml-parser': 'fast-xml-parser',
  ...MCP,
  // The Agent Client Protocol's SDK (the first send of a chat whose provider is `acp`).
  '@agentclientprotocol/sdk': 'acp',
};
/** The packages behind LAZY (a subpath such as `@scope/pkg/client/x.js` counts as `@scope/pkg`). */
const LAZY_PACKAGES = [
  ...new Set(
    Object.keys(LAZY).map((name) =>
      name
        .split('/')
        .slice(0, name.startsWith('@') ? 2 : 1)
        .join('/'),
    ),
  ),
];
const sdkVersions = Object.fromEntries(
  Object.keys(SDKS).map((name) => [
    name,
    lock.packages?.[`node_modules/${name}`]?.version ?? 'unknown',
  ]),
);

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  // FLEMMA_NO_MINIFY=1 keeps names and lines readable in CPU profiles.
  minify: process.env.FLEMMA_NO_MINIFY !== '1',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  alias: { winston: join(root, 'src/host/winston-stub.ts') },
  define: {
    __FLEMMA_VERSION__: JSON.stringify(pkg.version),
    __FLEMMA_SOURCE_HASH__: JSON.stringify(hash),
    __FLEMMA_SDK_VERSIONS__: JSON.stringify(sdkVersions),
  },
};

/** `import('openai')` in the host becomes `import('./sdk/openai.mjs')`, left for run time. */
const sdkBundles = {
  name: 'flemma-sdk-bundles',
  setup(build) {
    const filter = new RegExp(
      `^(${Object.keys(LAZY)
        .map((n) => n.replace(/[/.]/g, '\\$&'))
        .join('|')})$`,
    );
    build.onResolve({ filter }, (args) => {
      if (args.kind !== 'dynamic-import') {
        return {
          errors: [{ text: `${args.path} must be loaded with import(), not imported statically` }],
        };
      }
      return { path: `./sdk/${LAZY[args.path]}.mjs`, external: true };
    });
  },
};

/**
 * Built-in modules no first message needs, left out of the host's start: each becomes functions
 * that load it on their first call. `node:crypto` (≈ 2 ms to load), `node:fs/promises` (≈ 0.7 ms:
 * it loads the readline and file-watching internals), `node:os`. A name imported but not listed
 * here fails the build. (Not `node:perf_hooks`: the global `performance` loads all of it; the
 * start does not touch it.)
 */
const LAZY_BUILTINS = {
  'node:crypto': ['createHash', 'randomBytes', 'randomUUID'],
  'node:fs/promises': [
    'access',
    'appendFile',
    'link',
    'lstat',
    'mkdir',
    'mkdtemp',
    'open',
    'readFile',
    'readdir',
    'readlink',
    'realpath',
    'rename',
    'rm',
    'stat',
    'symlink',
    'unlink',
    'writeFile',
  ],
  'node:os': ['homedir', 'tmpdir', 'userInfo'],
};
const lazyBuiltins = {
  name: 'flemma-lazy-builtins',
  setup(build) {
    const filter = new RegExp(`^(${Object.keys(LAZY_BUILTINS).join('|')})$`);
    build.onResolve({ filter }, (args) =>
      args.namespace === 'lazy' || args.kind === 'dynamic-import'
        ? undefined
        : { path: args.path, namespace: 'lazy' },
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy' }, (args) => ({
      loader: 'js',
      resolveDir: root,
      contents: [
        'let loaded;',
        `const load = () => (loaded ??= require(${JSON.stringify(args.path)}));`,
        ...LAZY_BUILTINS[args.path].map(
          (name) => `export const ${name} = (...args) => load().${name}(...args);`,
        ),
      ].join('\n'),
    }));
  },
};

/**
 * The data the source imports as JSON (the options' defaults and schema, 28 kB; the price table;
 * the redaction rules) is parsed on first use: each becomes an object whose top-level keys read
 * one `JSON.parse` of the file's text, done once. An object literal of that size would be
 * compiled into the code cache and run at every start (≈ 0.5 ms for the defaults, which the
 * start does not read).
 */
const lazyJson = {
  name: 'flemma-lazy-json',
  setup(build) {
    build.onLoad({ filter: /\.json$/ }, (args) => {
      if (!args.path.startsWith(join(root, 'src'))) return undefined;
      const value = JSON.parse(readFileSync(args.path, 'utf8'));
      const text = JSON.stringify(JSON.stringify(value));
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return { loader: 'js', contents: `export default JSON.parse(${text});\n` };
      }
      const keys = Object.keys(value).map((key) => JSON.stringify(key));
      return {
        loader: 'js',
        contents: [
          'let parsed;',
          `const data = () => (parsed ??= JSON.parse(${text}));`,
          'export default {',
          ...keys.map((key) => `  get ${key}() { return data()[${key}]; },`),
          '};',
        ].join('\n'),
      };
    });
  },
};

rmSync(join(root, 'dist'), { recursive: true, force: true });
mkdirSync(join(root, 'dist'), { recursive: true });
// The repository is "type": "module"; the host bundle is CommonJS.
writeFileSync(join(root, 'dist/package.json'), '{ "type": "commonjs" }\n');

const host = await esbuild.build({
  ...common,
  entryPoints: { 'host-main': 'src/host/main.ts' },
  outdir: 'dist',
  format: 'cjs',
  plugins: [sdkBundles, lazyBuiltins, lazyJson],
});

// Every `import()` of the bundle goes through the entry's (src/host/boot.ts: code taken from V8's
// cache cannot run `import()` in a `vm.Script` on Node.js 20). The name is as long as `import`, so
// that the source map's columns stay true.
const hostMain = join(root, 'dist/host-main.js');
let imports = 0;
const hostText = readFileSync(hostMain, 'utf8');
if (hostText.includes('__fimp')) {
  console.error('build: dist/host-main.js already uses the name __fimp');
  process.exit(1);
}
writeFileSync(
  hostMain,
  hostText.replace(/(?<![\w$.])import\(/g, () => {
    imports += 1;
    return '__fimp(';
  }),
);
if (imports < Object.keys(LAZY).length) {
  console.error(`build: expected an import() for each of ${Object.keys(LAZY).join(', ')}`);
  process.exit(1);
}

// The entry, with the bundle's content hash: a code cache is only read by the bundle it was made of.
await esbuild.build({
  ...common,
  sourcemap: false,
  metafile: false,
  entryPoints: { host: 'src/host/boot.ts' },
  outdir: 'dist',
  format: 'cjs',
  define: {
    __FLEMMA_BUNDLE_HASH__: JSON.stringify(
      createHash('sha256').update(readFileSync(hostMain)).digest('hex'),
    ),
  },
});

await esbuild.build({
  ...common,
  entryPoints: Object.fromEntries(Object.entries(LAZY).map(([name, file]) => [file, name])),
  outdir: 'dist/sdk',
  outExtension: { '.js': '.mjs' },
  format: 'esm',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  // NOTE: bundled CommonJS dependencies call require(); ES module output needs a real one.
  banner: {
    js: "import { createRequire as __flemmaCreateRequire } from 'node:module'; const require = __flemmaCreateRequire(import.meta.url);",
  },
});

const rplugin = await esbuild.build({
  ...common,
  entryPoints: { rplugin: 'src/host/rplugin.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  external: ['neovim', ...Object.keys(LAZY), ...LAZY_PACKAGES],
});

// Helpers for people testing their own tools (docs/tools.md, "Testing your tools"): an ES module
// without the host, importable from a plain Node or vitest test.
await esbuild.build({
  ...common,
  minify: false,
  sourcemap: false,
  entryPoints: { testing: 'src/core/tools/testing.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  format: 'esm',
  plugins: [sdkBundles],
});

// `flemma run` (docs/cli.md): its own bundle, so that the host's start stays as it is; the SDKs
// come from the same dist/sdk/ bundles. It must not load the Neovim client.
const cli = await esbuild.build({
  ...common,
  entryPoints: { cli: 'src/cli/main.ts' },
  outdir: 'dist',
  format: 'cjs',
  banner: { js: '#!/usr/bin/env node' },
  plugins: [sdkBundles, lazyBuiltins, lazyJson],
});
chmodSync(join(root, 'dist/cli.js'), 0o755);
const neovimInCli = Object.keys(cli.metafile.inputs).filter(
  (input) => input.includes('node_modules/neovim/') || input.endsWith('src/editor/client.ts'),
);
if (neovimInCli.length > 0) {
  console.error(
    `build: dist/cli.js must not load the Neovim client, but it contains:\n  ${neovimInCli.join('\n  ')}`,
  );
  process.exit(1);
}

const eager = Object.keys(host.metafile.inputs).filter((input) =>
  LAZY_PACKAGES.some((name) => input.includes(`node_modules/${name}/`)),
);
if (eager.length > 0) {
  console.error(
    `build: provider SDKs must stay out of dist/host-main.js, but it contains:\n  ${eager.slice(0, 5).join('\n  ')}`,
  );
  process.exit(1);
}

writeFileSync(
  join(root, 'dist/build-info.json'),
  JSON.stringify(
    { version: pkg.version, source_hash: hash, built_at: new Date().toISOString() },
    null,
    2,
  ) + '\n',
);
const tags = writeHelptags(join(root, 'doc'));
const size = (meta, out) => Math.round(meta.outputs[out].bytes / 1024);
console.log(
  `build: dist/host-main.js ${size(host.metafile, 'dist/host-main.js')} kB, dist/rplugin.cjs ${size(rplugin.metafile, 'dist/rplugin.cjs')} kB, dist/cli.js ${size(cli.metafile, 'dist/cli.js')} kB, dist/sdk/ (${Object.values(SDKS).join(', ')}), doc/tags (${tags} tags) (source ${hash.slice(0, 12)})`,
);
