// The host's entry, dist/host.js: loads the host's bundle (dist/host-main.js) with V8's code
// cache, so that a start does not compile the bundle again (docs/testing.md, "Where the time
// goes"). Built on its own by scripts/build.mjs, which writes the bundle's content hash into it.
//
// Decisions:
// - Node.js 22.1 and later cache compiled code themselves (`module.enableCompileCache`): the
//   bundle is required as usual and Node keeps the cache in dist/.cache/.
// - On older Node.js (20 is the floor) the bundle is compiled here, as Node compiles a CommonJS
//   file (`Module.wrap`), with a `vm.Script` that takes the cache V8 wrote at an earlier start.
//   Its `import()`s (the provider SDKs, execa, Ajv…) go to Node's own loader
//   (`vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER`, Node.js 20.12); without that constant the
//   bundle is required as usual, uncached. Node calls that constant experimental and warns on
//   the first `import()`: that one warning is left out of stderr (the host's log), no other.
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
import { Script, constants } from 'node:vm';

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

/** Leaves Node's warning about `USE_MAIN_CONTEXT_DEFAULT_LOADER` out; every other one goes on. */
function quietLoaderWarning(): void {
  const listeners = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'ExperimentalWarning' && warning.message.includes('USE_MAIN_CONTEXT'))
      return;
    for (const listener of listeners) listener.call(process, warning);
  });
}

/** Node.js 20: compile the bundle as Node would, with the cache V8 wrote at an earlier start. */
function runCached(): void {
  quietLoaderWarning();
  const file = cacheName();
  const cachedData = readCache(file);
  const script = new Script(nodeModule.wrap(readFileSync(bundle, 'utf8')), {
    filename: bundle,
    cachedData,
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
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

const enableCompileCache = (nodeModule as { enableCompileCache?: (dir: string) => unknown })
  .enableCompileCache;
if (typeof enableCompileCache === 'function') {
  enableCompileCache(cacheDir);
  requireHere(bundle);
} else if (
  (constants as { USE_MAIN_CONTEXT_DEFAULT_LOADER?: unknown }).USE_MAIN_CONTEXT_DEFAULT_LOADER !==
  undefined
) {
  runCached();
} else {
  requireHere(bundle);
}
