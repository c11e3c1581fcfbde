// Builds dist/host.js (the host, ESM, SDKs split into lazily loaded chunks) and dist/rplugin.cjs
// (the remote-plugin adapter), then checks that no provider SDK is loaded at start-up.
import * as esbuild from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceHash } from './source-hash.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const hash = sourceHash(root);
const LAZY_ONLY = ['@anthropic-ai/sdk', 'openai', '@google/genai'];
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const sdkVersions = Object.fromEntries(
  LAZY_ONLY.map((name) => [name, lock.packages?.[`node_modules/${name}`]?.version ?? 'unknown']),
);

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  legalComments: 'none',
  minify: true,
  logLevel: 'warning',
  metafile: true,
  alias: { winston: join(root, 'src/host/winston-stub.ts') },
  define: {
    __FLEMMA_VERSION__: JSON.stringify(pkg.version),
    __FLEMMA_SOURCE_HASH__: JSON.stringify(hash),
    __FLEMMA_SDK_VERSIONS__: JSON.stringify(sdkVersions),
  },
};

rmSync(join(root, 'dist'), { recursive: true, force: true });
mkdirSync(join(root, 'dist'), { recursive: true });

const host = await esbuild.build({
  ...common,
  absWorkingDir: root,
  entryPoints: { host: 'src/host/main.ts' },
  outdir: 'dist',
  format: 'esm',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  // NOTE: bundled CommonJS dependencies call require(); ESM output needs a real one.
  banner: {
    js: "import { createRequire as __flemmaCreateRequire } from 'node:module'; const require = __flemmaCreateRequire(import.meta.url);",
  },
});

const rplugin = await esbuild.build({
  ...common,
  absWorkingDir: root,
  entryPoints: { rplugin: 'src/host/rplugin.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  external: ['neovim', ...LAZY_ONLY],
});

// Walk the static imports of the entry chunk: a provider SDK there would slow every start-up.
function staticClosure(metafile, entry) {
  const seen = new Set();
  const stack = [entry];
  while (stack.length > 0) {
    const file = stack.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    for (const imp of metafile.outputs[file]?.imports ?? []) {
      if (imp.kind === 'import-statement' && !imp.external) stack.push(imp.path);
    }
  }
  return seen;
}
const eager = staticClosure(host.metafile, 'dist/host.js');
const offenders = [];
for (const file of eager) {
  for (const input of Object.keys(host.metafile.outputs[file]?.inputs ?? {})) {
    if (LAZY_ONLY.some((name) => input.includes(`node_modules/${name}/`))) offenders.push(input);
  }
}
if (offenders.length > 0) {
  console.error(
    `build: provider SDKs must be loaded with import(), but these are in the start-up graph:\n  ${offenders.slice(0, 5).join('\n  ')}`,
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
const size = (meta, out) => Math.round(meta.outputs[out].bytes / 1024);
console.log(
  `build: dist/host.js ${size(host.metafile, 'dist/host.js')} kB, dist/rplugin.cjs ${size(rplugin.metafile, 'dist/rplugin.cjs')} kB (source ${hash.slice(0, 12)})`,
);
