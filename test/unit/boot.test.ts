// The host's entry (src/host/boot.ts, built as dist/host.js; npm test builds it first): the code
// cache it writes once idle, and a start that takes that cache still loads what it imports later.
import { type ChildProcess, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

/** A copy of dist/, so that the cache written here is this test's alone. */
const dir = mkdtempSync(join(tmpdir(), 'flemma-boot-'));
cpSync(join(ROOT, 'dist'), join(dir, 'dist'), {
  recursive: true,
  filter: (source) => !source.endsWith('.map') && !source.includes('.cache'),
});
const cacheDir = join(dir, 'dist', '.cache');
const hosts: ChildProcess[] = [];

afterAll(() => {
  for (const host of hosts) host.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** msgpack-RPC request `[0, 1, "ping", []]`. */
const PING = Buffer.from([0x94, 0x00, 0x01, 0xa4, ...Buffer.from('ping'), 0x90]);

/** Starts the host with `trace` as its trace file; resolves with it once it answered a ping. */
async function start(trace: string): Promise<ChildProcess> {
  const host = spawn(process.execPath, [join(dir, 'dist', 'host.js')], {
    cwd: dir,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, FLEMMA_TRACE: trace, FLEMMA_LOG_FILE: join(dir, 'host.log') },
  });
  hosts.push(host);
  host.stdin.write(PING);
  await new Promise((resolve, reject) => {
    host.stdout.once('data', resolve);
    host.once('exit', (code) => {
      reject(new Error(`the host exited (${String(code)})`));
    });
  });
  return host;
}

/** Waits until `check` holds, polling the files the host writes. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
}

function traced(file: string, label: string): boolean {
  return existsSync(file) && readFileSync(file, 'utf8').includes(` ${label}`);
}

function cacheFiles(): string[] {
  return existsSync(cacheDir) ? readdirSync(cacheDir).filter((n) => n.endsWith('.v8')) : [];
}

describe('the host entry', () => {
  it('writes the code cache once idle and warm, and a start that takes it still imports (Ajv, execa)', async () => {
    const first = join(dir, 'first.trace');
    const host = await start(first);
    // Idle after its start, the host warms the tool loop (which imports Ajv and execa), then
    // writes its cache.
    await until(() => traced(first, 'warm:over'));
    expect(traced(first, 'warm:done')).toBe(true);
    expect(cacheFiles()).toHaveLength(1);
    host.kill('SIGKILL');
    const [name] = cacheFiles();
    const written = statSync(join(cacheDir, name ?? '')).mtimeMs;

    const second = join(dir, 'second.trace');
    const again = await start(second);
    await until(() => traced(second, 'warm:over'));
    // Warming got through Ajv's and execa's import(), with the code taken from the cache…
    expect(traced(second, 'warm:schemas')).toBe(true);
    expect(traced(second, 'warm:done')).toBe(true);
    again.kill('SIGKILL');
    // …which was taken, not written again.
    expect(cacheFiles()).toEqual([name]);
    expect(statSync(join(cacheDir, name ?? '')).mtimeMs).toBe(written);
  });
});
