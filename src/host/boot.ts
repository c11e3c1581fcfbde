// The host's entry, dist/host.js: loads the host's bundle (dist/host-main.js) with V8's code
// cache, so that a start does not compile the bundle again (docs/testing.md, "Where the time
// goes"). Built on its own by scripts/build.mjs, which writes the bundle's content hash into it.
//
// Decisions:
// - Node.js 22.1 and later cache compiled code themselves (`module.enableCompileCache`): the
//   bundle is required as usual and Node keeps the cache in dist/.cache/.
// - On older Node.js (20 is the floor) the bundle is compiled here, as Node compiles a CommonJS
//   file (`Module.wrap`), with a `vm.Script` that takes the cache V8 wrote at an earlier start.
// - Code that V8 takes from a cache loses what `import()` needs in a `vm.Script` on Node.js 20
//   ("A dynamic import callback was not specified"): the build turns each `import(x)` of the
//   bundle into `__fimp(x)`, which this file defines as its own `import()`. This file is
//   compiled by Node as usual and lies next to the bundle, so a relative specifier
//   (`./sdk/openai.mjs`) means the same file.
// - V8 checks a cache against the source's length and its own version and flags only, not the
//   content: the cache's name carries the bundle's content hash (written here by the build), its
//   size and modification time, and the Node.js version, so a cache is only read by the start
//   of the same bundle and Node.js.
// - The cache is written when none was taken (missing or rejected), once the host is idle after
//   it started and has warmed the tool loop (src/host/main.ts calls `saveCodeCache`): V8 then
//   includes every function the start and the warm-up compiled. Writing goes through a temporary
//   file and a rename, so that two hosts starting at once never read half a cache; a directory
//   that cannot be written (a read-only plugin directory) leaves the host uncached, nothing else.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { join } from 'node:path';
import { Script } from 'node:vm';

declare const __FLEMMA_BUNDLE_HASH__: string;

const bundle = join(__dirname, 'host-main.js');
const cacheDir = join(__dirname, '.cache');
const requireHere = nodeModule.createRequire(__filename);

/** What the bundle calls once the host is idle after its start (see above). */
const SAVE = Symbol.for('flemma.saveCodeCache');
type Saver = () => void;

function setSaver(save: Saver): void {
  (globalThis as Record<symbol, unknown>)[SAVE] = save;
}

function cacheName(): string {
  const stat = statSync(bundle);
  const key = [
    __FLEMMA_BUNDLE_HASH__.slice(0, 16),
    String(stat.size),
    Math.trunc(stat.mtimeMs).toString(36),
    process.version,
    process.arch,
  ].join('-');
  return join(cacheDir, `host-${key}.v8`);
}

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

function writeCache(file: string, data: Buffer): void {
  try {
    mkdirSync(cacheDir, { recursive: true });
    const temp = `${file}.${String(process.pid)}.tmp`;
    writeFileSync(temp, data);
    renameSync(temp, file);
  } catch {
    // A directory that cannot be written: the next start compiles again.
  }
}

/** Node.js 20: compile the bundle as Node would, with the cache V8 wrote at an earlier start. */
function runCached(): void {
  const file = cacheName();
  const cachedData = readCache(file);
  const script = new Script(nodeModule.wrap(readFileSync(bundle, 'utf8')), {
    filename: bundle,
    cachedData,
  });
  if (cachedData === undefined || script.cachedDataRejected === true) {
    let saved = false;
    setSaver(() => {
      if (saved) return;
      saved = true;
      writeCache(file, script.createCachedData());
    });
  }
  const run = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: { exports: unknown },
    filename: string,
    dirname: string,
  ) => void;
  const mod = { exports: {} };
  run.call(mod.exports, mod.exports, nodeModule.createRequire(bundle), mod, bundle, __dirname);
}

// The bundle's `import()` (see above).
Object.defineProperty(globalThis, '__fimp', {
  value: (specifier: string): Promise<unknown> => import(specifier),
});
const enableCompileCache = (nodeModule as { enableCompileCache?: (dir: string) => unknown })
  .enableCompileCache;
if (typeof enableCompileCache === 'function') {
  enableCompileCache(cacheDir);
  requireHere(bundle);
} else {
  runCached();
}
