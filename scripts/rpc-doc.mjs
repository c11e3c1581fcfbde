// `npm run docs:rpc`: writes the protocol table of docs/rpc.md from src/editor/protocol/
// (through src/editor/protocol/doc.ts, bundled in memory). `--check` only says whether the page
// is current (exit 1 when it is not); the unit test `test/unit/protocol.test.ts` checks the same.
import * as esbuild from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const page = join(root, 'docs/rpc.md');

const built = await esbuild.build({
  absWorkingDir: root,
  entryPoints: ['src/editor/protocol/doc.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  write: false,
});
const source = built.outputFiles[0].text;
const { withProtocolTable } = await import(
  `data:text/javascript;base64,${Buffer.from(source).toString('base64')}`
);

const current = readFileSync(page, 'utf8');
const next = withProtocolTable(current);
if (next === undefined) {
  console.error('docs:rpc: docs/rpc.md has no protocol table markers');
  process.exit(2);
}
if (process.argv.includes('--check')) {
  if (next !== current) {
    console.error('docs:rpc: docs/rpc.md is not current; run npm run docs:rpc');
    process.exit(1);
  }
  console.log('docs:rpc: docs/rpc.md is current');
} else if (next !== current) {
  writeFileSync(page, next);
  console.log('docs:rpc: docs/rpc.md updated');
} else {
  console.log('docs:rpc: docs/rpc.md is current');
}
