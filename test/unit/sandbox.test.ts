// The tool sandbox: path variables, rw path normalization, the write check, the backend registry,
// the bwrap command line, the policy resolution, and (where bubblewrap is installed) real runs
// that show the sandbox holds: writes outside the rw paths and network access are refused.
import { existsSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

import { noSandbox } from '../../src/core/tools/context.js';
import { type RunResult, runProcess } from '../../src/core/tools/process.js';
import {
  type Availability,
  type BackendDefinition,
  type BackendSettings,
  BWRAP_PRIORITY,
  DEFAULT_BACKEND_PRIORITY,
  type SandboxPolicy,
  SandboxBackendRegistry,
  normalizeAvailability,
  wrapCommand,
} from '../../src/core/tools/sandbox/backends.js';
import {
  type ProbeRunFn,
  bwrapArgv,
  createBwrapBackend,
  createSandboxBackends,
  findExecutable,
} from '../../src/core/tools/sandbox/bwrap.js';
import {
  DEFAULT_RW_PATHS,
  type SandboxFacts,
  parseSandboxSettings,
  resolveSandbox,
  sandboxStatus,
} from '../../src/core/tools/sandbox/index.js';
import {
  type ModuleSelection,
  backendsFromToolModule,
  expandModulePath,
} from '../../src/core/tools/sandbox/modules.js';
import {
  PathVariableError,
  expandPathVariable,
  isPathWritable,
  normalizeRwPaths,
  resolveReal,
  resolveRwPaths,
} from '../../src/core/tools/sandbox/paths.js';
import {
  type LuaCaller,
  LuaSandboxBackends,
  sandboxFor,
  sandboxStatusFor,
} from '../../src/host/sandbox.js';
import { RUN_OK } from '../helpers/processes.js';
import { fileTempDir } from '../helpers/temp.js';

/** A fresh directory under the test root. */
const dir = fileTempDir('flemma-sandbox-');
let root: string;
let home: string;
let cwd: string;

beforeAll(() => {
  root = dir();
  home = dir('home');
  cwd = dir('project');
});

const factsFor = (over: Partial<SandboxFacts> = {}): SandboxFacts => ({
  cwd,
  filename: null,
  sandbox_override: null,
  ...over,
});

/** A backend that answers as told and prefixes `[name]`, counting availability questions. */
function fakeBackend(
  name: string,
  answer: Availability,
  priority?: number,
): { calls: BackendSettings[]; def: Parameters<SandboxBackendRegistry['register']>[0] } {
  const calls: BackendSettings[] = [];
  return {
    calls,
    def: {
      name,
      ...(priority === undefined ? {} : { priority }),
      available: (settings) => {
        calls.push(settings);
        return Promise.resolve(answer);
      },
      wrap: (argv, policy) => [name, `net=${String(policy.network)}`, ...argv],
    },
  };
}

describe('path variables', () => {
  const facts = () => ({ cwd, filename: null });

  it('expands urn:flemma:cwd to the editor cwd', () => {
    expect(expandPathVariable('urn:flemma:cwd', facts(), {}, home)).toBe(cwd);
  });

  it('expands urn:flemma:buffer:path to the directory of the real chat file', () => {
    const real = dir('chats-real');
    writeFileSync(join(real, 'a.chat'), '');
    const link = join(root, 'chats-link');
    symlinkSync(real, link);
    const path = expandPathVariable(
      'urn:flemma:buffer:path',
      { cwd, filename: join(link, 'a.chat') },
      {},
      home,
    );
    expect(path).toBe(real);
    // A relative file name is taken against the editor cwd.
    writeFileSync(join(cwd, 'b.chat'), '');
    expect(
      expandPathVariable('urn:flemma:buffer:path', { cwd, filename: 'b.chat' }, {}, home),
    ).toBe(cwd);
  });

  it('drops urn:flemma:buffer:path for an unnamed buffer', () => {
    expect(expandPathVariable('urn:flemma:buffer:path', facts(), {}, home)).toBeUndefined();
  });

  it('expands $VAR, dropping it when unset or empty', () => {
    expect(expandPathVariable('$DATA', facts(), { DATA: '/srv/data' }, home)).toBe('/srv/data');
    expect(expandPathVariable('${DATA}', facts(), { DATA: '/srv/data/' }, home)).toBe('/srv/data');
    expect(expandPathVariable('$DATA', facts(), {}, home)).toBeUndefined();
    expect(expandPathVariable('$DATA', facts(), { DATA: '' }, home)).toBeUndefined();
  });

  it('expands ${VAR:-default}: the value when non-empty, else the default with ~ expanded', () => {
    const env = { XDG_CACHE_HOME: '/var/cache/me' };
    expect(expandPathVariable('${XDG_CACHE_HOME:-~/.cache}', facts(), env, home)).toBe(
      '/var/cache/me',
    );
    expect(expandPathVariable('${XDG_CACHE_HOME:-~/.cache}', facts(), {}, home)).toBe(
      join(home, '.cache'),
    );
    expect(
      expandPathVariable('${XDG_CACHE_HOME:-~/.cache}', facts(), { XDG_CACHE_HOME: '' }, home),
    ).toBe(join(home, '.cache'));
    expect(expandPathVariable('${TMPDIR:-/tmp}', facts(), {}, home)).toBe('/tmp');
    expect(expandPathVariable('${NOPE:-}', facts(), {}, home)).toBeUndefined();
  });

  it('expands ~ and ~/…, and takes literals as they are (relative ones against the cwd)', () => {
    expect(expandPathVariable('~', facts(), {}, home)).toBe(home);
    expect(expandPathVariable('~/notes', facts(), {}, home)).toBe(join(home, 'notes'));
    expect(expandPathVariable('/opt/x/', facts(), {}, home)).toBe('/opt/x');
    expect(expandPathVariable('build/out', facts(), {}, home)).toBe(join(cwd, 'build/out'));
    // Variables anywhere in the entry, as in every path of the configuration (expand-path.ts).
    expect(expandPathVariable('$HOME/x', facts(), { HOME: home }, home)).toBe(join(home, 'x'));
  });

  it('rejects an unknown urn:', () => {
    expect(() => expandPathVariable('urn:flemma:nope', facts(), {}, home)).toThrow(
      PathVariableError,
    );
    expect(() => expandPathVariable('urn:flemma:nope', facts(), {}, home)).toThrow(
      /Unknown path variable 'urn:flemma:nope'/,
    );
  });
});

describe('rw path normalization', () => {
  it('resolves symlinks, also below a prefix that does not exist yet', () => {
    const real = dir('norm', 'real');
    const link = join(root, 'norm', 'link');
    symlinkSync(real, link);
    expect(resolveReal(link)).toBe(real);
    expect(resolveReal(join(link, 'not', 'yet'))).toBe(join(real, 'not', 'yet'));
  });

  it('follows a dangling symlink to where it points', () => {
    const base = dir('norm', 'dangling');
    symlinkSync(join(root, 'norm', 'elsewhere', 'file'), join(base, 'ghost'));
    expect(resolveReal(join(base, 'ghost'))).toBe(join(root, 'norm', 'elsewhere', 'file'));
  });

  it('drops paths under another kept path (on a / boundary) and sorts', () => {
    expect(
      normalizeRwPaths(['/tmp/ab', '/tmp/a/x', '/tmp/a', '/srv', '/srv/', '/tmp/a/y/z']),
    ).toEqual(['/srv', '/tmp/a', '/tmp/ab']);
    expect(normalizeRwPaths(['/x', '/'])).toEqual(['/']);
  });

  it('expands, drops unset variables, resolves and de-duplicates a whole list', () => {
    const real = dir('list', 'real');
    const link = join(root, 'list', 'link');
    symlinkSync(real, link);
    const paths = resolveRwPaths(
      ['urn:flemma:cwd', '$UNSET', '${LINKED:-/nope}', join(real, 'sub'), 'urn:flemma:buffer:path'],
      { cwd, filename: null },
      { LINKED: link },
      home,
    );
    expect(paths).toEqual([real, cwd].sort());
  });
});

describe('isPathWritable', () => {
  let rw: string;
  let outside: string;

  beforeAll(() => {
    rw = dir('w', 'rw');
    outside = dir('w', 'outside');
    symlinkSync(outside, join(rw, 'escape'));
    symlinkSync(join(outside, 'new-file'), join(rw, 'dangling'));
  });

  it('allows the rw path itself and anything below it, existing or not', () => {
    expect(isPathWritable(rw, [rw])).toBe(true);
    expect(isPathWritable(join(rw, 'a', 'b', 'c.txt'), [rw])).toBe(true);
    expect(isPathWritable('a.txt', [rw], rw)).toBe(true);
  });

  it('refuses paths outside, including a sibling sharing a name prefix', () => {
    expect(isPathWritable(join(outside, 'x'), [rw])).toBe(false);
    expect(isPathWritable(`${rw}-other/x`, [rw])).toBe(false);
    expect(isPathWritable(join(rw, '..', 'outside', 'x'), [rw])).toBe(false);
  });

  it('refuses relative escapes and absolute system paths', () => {
    expect(isPathWritable('../../etc/passwd', [rw], rw)).toBe(false);
    expect(isPathWritable('sub/../../../etc/passwd', [rw], rw)).toBe(false);
    expect(isPathWritable('/etc/passwd', [rw])).toBe(false);
    expect(isPathWritable('/', [rw])).toBe(false);
  });

  it('refuses a symlink inside the rw path that points outside (existing or dangling)', () => {
    expect(isPathWritable(join(rw, 'escape', 'x.txt'), [rw])).toBe(false);
    expect(isPathWritable(join(rw, 'dangling'), [rw])).toBe(false);
    expect(isPathWritable(join(rw, 'escape', 'x.txt'), [rw, outside])).toBe(true);
  });
});

describe('bwrap command line', () => {
  const yes = (): boolean => true;
  const policy = (over: Partial<SandboxPolicy> = {}): SandboxPolicy => ({
    rw_paths: ['/home/u/p', '/tmp'],
    network: true,
    allow_privileged: false,
    hidden_paths: [],
    read_only_paths: [],
    env_unset: [],
    ...over,
  });
  // What every command line of policy() mounts: the root read-only, the rw paths writable.
  const MOUNTS = [
    ...['--ro-bind', '/', '/'],
    ...['--bind', '/home/u/p', '/home/u/p'],
    ...['--bind', '/tmp', '/tmp'],
    ...['--dev', '/dev', '--proc', '/proc'],
  ];

  it('with network', () => {
    expect(bwrapArgv(['bash', '-c', 'ls'], policy(), {}, yes)).toEqual([
      'bwrap',
      ...MOUNTS,
      '--unshare-user',
      '--unshare-pid',
      '--unshare-uts',
      '--unshare-ipc',
      '--share-net',
      '--die-with-parent',
      '--new-session',
      'bash',
      '-c',
      'ls',
    ]);
  });

  it('without network, privileged, with a custom path and extra args', () => {
    const settings = { path: '/opt/bin/bwrap', extra_args: ['--setenv', 'A', 'B', '--uid', 0] };
    expect(
      bwrapArgv(['true'], policy({ network: false, allow_privileged: true }), settings, yes),
    ).toEqual([
      '/opt/bin/bwrap',
      ...MOUNTS,
      '--unshare-pid',
      '--unshare-uts',
      '--unshare-ipc',
      '--unshare-net',
      '--die-with-parent',
      '--new-session',
      '--setenv',
      'A',
      'B',
      '--uid',
      '0',
      'true',
    ]);
  });

  it('leaves out rw paths that do not exist (bwrap would abort) and reads [] extra_args', () => {
    const argv = bwrapArgv(['true'], policy(), { extra_args: {} }, (p) => p === '/tmp');
    expect(argv.slice(0, 7)).toEqual(['bwrap', '--ro-bind', '/', '/', '--bind', '/tmp', '/tmp']);
    expect(argv).not.toContain('/home/u/p');
    expect(argv.at(-1)).toBe('true');
  });
});

describe('bwrap availability', () => {
  const ok: RunResult = RUN_OK;

  it('needs Linux', async () => {
    const backend = createBwrapBackend({ platform: 'darwin' });
    const answer = await backend.available({});
    expect(answer).toEqual({ ok: false, error: expect.stringContaining('needs Linux') as string });
  });

  it('needs an executable binary', async () => {
    const backend = createBwrapBackend({ platform: 'linux', pathVar: '' });
    expect(await backend.available({})).toEqual({
      ok: false,
      error: expect.stringContaining("not found at 'bwrap'") as string,
    });
    const missing = createBwrapBackend({ platform: 'linux' });
    expect((await missing.available({ path: join(root, 'no-bwrap') })).ok).toBe(false);
  });

  it('probes the binary, and reports a failing probe', async () => {
    const bin = dir('fakebin');
    const fake = join(bin, 'bwrap');
    writeFileSync(fake, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const seen: (readonly string[])[] = [];
    const run = (result: RunResult): ProbeRunFn => {
      return (argv) => {
        seen.push(argv);
        return Promise.resolve(result);
      };
    };
    const good = createBwrapBackend({ platform: 'linux', pathVar: bin, run: run(ok) });
    expect(await good.available({})).toEqual({ ok: true });
    expect(seen[0]?.[0]).toBe(fake);
    expect(seen[0]).toContain('--unshare-user');
    expect(seen[0]?.at(-1)).toBe('true');
    const bad = createBwrapBackend({
      platform: 'linux',
      run: run({ ...ok, exitCode: 1, stderr: 'bwrap: No permissions to create new namespace\n' }),
    });
    expect(await bad.available({ path: fake })).toEqual({
      ok: false,
      error: 'bwrap cannot create a sandbox here: bwrap: No permissions to create new namespace',
    });
  });
});

describe('backend registry', () => {
  it('lists by priority (default 50), replaces by name, unregisters', () => {
    const registry = new SandboxBackendRegistry();
    registry.register(fakeBackend('low', { ok: true }, 10).def);
    registry.register(fakeBackend('mid', { ok: true }).def);
    registry.register(fakeBackend('high', { ok: true }, BWRAP_PRIORITY).def);
    expect(registry.list().map((b) => [b.name, b.priority])).toEqual([
      ['high', 100],
      ['mid', DEFAULT_BACKEND_PRIORITY],
      ['low', 10],
    ]);
    registry.register(fakeBackend('low', { ok: true }, 200).def);
    expect(registry.list().map((b) => b.name)).toEqual(['low', 'high', 'mid']);
    expect(registry.unregister('mid')).toBe(true);
    expect(registry.unregister('mid')).toBe(false);
    expect(() => {
      registry.register(fakeBackend('auto', { ok: true }).def);
    }).toThrow(/reserved/);
  });

  it("has bwrap registered at priority 100 in the host's registry", () => {
    expect(createSandboxBackends().get('bwrap')?.priority).toBe(100);
  });

  it('caches availability until the registry or the backend settings change', async () => {
    const registry = new SandboxBackendRegistry();
    const a = fakeBackend('a', { ok: true });
    registry.register(a.def);
    await registry.resolve('auto', { a: { x: 1 } });
    await registry.resolve('auto', { a: { x: 1 } });
    await registry.resolve('a', { a: { x: 1 } });
    expect(a.calls).toEqual([{ x: 1 }]);
    await registry.resolve('auto', { a: { x: 2 } });
    expect(a.calls).toHaveLength(2);
    registry.register(fakeBackend('b', { ok: false, error: 'no' }).def);
    await registry.resolve('auto', { a: { x: 2 } });
    expect(a.calls).toHaveLength(3);
  });

  it('auto takes the first available backend by priority', async () => {
    const registry = new SandboxBackendRegistry();
    registry.register(fakeBackend('first', { ok: false, error: 'broken' }, 90).def);
    registry.register(fakeBackend('second', { ok: true }, 80).def);
    registry.register(fakeBackend('third', { ok: true }, 70).def);
    const resolution = await registry.resolve('auto', {});
    expect(resolution.kind === 'backend' && resolution.backend.name).toBe('second');
  });

  it('reports a throwing availability check as unavailable', async () => {
    const registry = new SandboxBackendRegistry();
    registry.register({
      name: 'boom',
      available: () => {
        throw new Error('kaput');
      },
      wrap: (argv) => [...argv],
    });
    expect(await registry.availability('boom')).toEqual({ ok: false, error: 'kaput' });
  });
});

describe('resolveSandbox', () => {
  function registryWith(...defs: ReturnType<typeof fakeBackend>[]): SandboxBackendRegistry {
    const registry = new SandboxBackendRegistry();
    for (const d of defs) registry.register(d.def);
    return registry;
  }

  it('fills in the documented defaults (Lua empty tables may arrive as [])', () => {
    const expected = {
      enabled: true,
      backend: 'auto',
      rw_paths: [...DEFAULT_RW_PATHS],
      network: true,
      allow_privileged: false,
      env_allow: [],
      backends: {},
    };
    expect(parseSandboxSettings(undefined)).toEqual(expected);
    expect(parseSandboxSettings([])).toEqual(expected);
    expect(parseSandboxSettings({ policy: [], backends: [] })).toEqual(expected);
    expect(parseSandboxSettings({ policy: { rw_paths: [] } }).rw_paths).toEqual([]);
    expect(parseSandboxSettings({ backends: { bwrap: [] } }).backends).toEqual({ bwrap: {} });
  });

  it('resolves the default rw paths', async () => {
    // Paths outside the temporary directory, so none is swallowed by /tmp; they need not exist.
    const chatDir = dir('defaults', 'chats');
    writeFileSync(join(chatDir, 'x.chat'), '');
    const fakeHome = '/nonexistent-flemma-home/u';
    const state = await resolveSandbox(
      undefined,
      {
        cwd: '/nonexistent-flemma-project',
        filename: join(chatDir, 'x.chat'),
        sandbox_override: null,
      },
      { TMPDIR: '/nonexistent-flemma-tmp' },
      fakeHome,
      { registry: registryWith() },
    );
    expect(state.enabled).toBe(true);
    const tmp = realpathSync('/tmp');
    expect(state.rwPaths).toEqual(
      [
        '/nonexistent-flemma-project',
        tmp, // the chat directory lies below it and is dropped
        '/nonexistent-flemma-tmp',
        `${fakeHome}/.cache`,
      ].sort(),
    );
    expect(chatDir.startsWith(`${tmp}/`)).toBe(true);
    const noTmp = await resolveSandbox(
      { policy: { rw_paths: ['urn:flemma:buffer:path'] } },
      factsFor({ filename: join(chatDir, 'x.chat') }),
      {},
      home,
      { registry: registryWith() },
    );
    expect(noTmp.rwPaths).toEqual([chatDir]);
  });

  it('when disabled: nothing wrapped, everything writable, no backend probed', async () => {
    const probe = fakeBackend('p', { ok: true });
    const state = await resolveSandbox({ enabled: false }, factsFor(), {}, home, {
      registry: registryWith(probe),
    });
    expect(state.enabled).toBe(false);
    expect(state.access).toBe(noSandbox);
    expect(state.access.is_path_writable('/etc/passwd')).toBe(true);
    expect(await state.access.wrap_command(['ls'])).toEqual({ ok: true, argv: ['ls'] });
    expect(probe.calls).toHaveLength(0);
  });

  it('lets the runtime override beat the configuration, both ways', async () => {
    const registry = registryWith(fakeBackend('p', { ok: true }));
    const overridden = (enabled: boolean, sandbox_override: boolean) =>
      resolveSandbox({ enabled }, factsFor({ sandbox_override }), {}, home, { registry });
    const on = await overridden(false, true);
    expect(on.enabled).toBe(true);
    expect(on.access.enabled).toBe(true);
    const off = await overridden(true, false);
    expect(off.enabled).toBe(false);
  });

  it('wraps with the chosen backend and exposes the prefix for Lua tools', async () => {
    const rw = dir('wrap', 'rw');
    const state = await resolveSandbox(
      { policy: { rw_paths: [rw], network: false } },
      factsFor(),
      {},
      home,
      { registry: registryWith(fakeBackend('p', { ok: true })) },
    );
    expect(state.backend).toBe('p');
    expect(state.wrapPrefix).toEqual(['p', 'net=false']);
    expect(state.wrapError).toBeUndefined();
    expect(await state.access.wrap_command(['ls', '-la'])).toEqual({
      ok: true,
      argv: ['p', 'net=false', 'ls', '-la'],
    });
    expect(state.access.is_path_writable(join(rw, 'f'))).toBe(true);
    expect(state.access.is_path_writable(join(root, 'f'))).toBe(false);
  });

  it('errors for an explicit backend that is missing or unavailable', async () => {
    const registry = registryWith(fakeBackend('sick', { ok: false, error: 'no kernel support' }));
    const missing = await resolveSandbox({ backend: 'firejail' }, factsFor(), {}, home, {
      registry,
    });
    expect(missing.wrapError).toMatch(/^Sandbox backend 'firejail' is not available: /);
    expect(missing.wrapPrefix).toBeUndefined();
    expect(await missing.access.wrap_command(['ls'])).toEqual({
      ok: false,
      error: missing.wrapError,
    });
    const sick = await resolveSandbox({ backend: 'sick' }, factsFor(), {}, home, { registry });
    expect(sick.wrapError).toBe("Sandbox backend 'sick' is not available: no kernel support");
  });

  it('auto with no available backend runs commands unwrapped, with a warning', async () => {
    const registry = registryWith(fakeBackend('sick', { ok: false, error: 'nope' }));
    const auto = await resolveSandbox({ backend: 'auto' }, factsFor(), {}, home, { registry });
    expect(auto.enabled).toBe(true);
    expect(auto.backend).toBeUndefined();
    expect(auto.wrapPrefix).toBeUndefined();
    expect(auto.wrapError).toBeUndefined();
    expect(auto.warning).toMatch(
      /Sandbox is enabled but no backend is available \(.*sick: nope.*\)/,
    );
    expect(await auto.access.wrap_command(['ls'])).toEqual({ ok: true, argv: ['ls'] });
    expect(auto.access.is_path_writable('/etc/x')).toBe(false);
    const required = await resolveSandbox({ backend: 'required' }, factsFor(), {}, home, {
      registry,
    });
    expect(await required.access.wrap_command(['ls'])).toEqual({ ok: true, argv: ['ls'] });
    expect(required.warning).toMatch(/required but none is available.*sick: nope/);
  });

  it('refuses commands and writes when rw_paths names an unknown urn:', async () => {
    const state = await resolveSandbox(
      { policy: { rw_paths: ['urn:flemma:cwd', 'urn:flemma:home'] } },
      factsFor(),
      {},
      home,
      { registry: registryWith(fakeBackend('p', { ok: true })) },
    );
    expect(state.wrapError).toMatch(/Unknown path variable 'urn:flemma:home'/);
    expect(state.access.is_path_writable(join(cwd, 'x'))).toBe(false);
    expect((await state.access.wrap_command(['ls'])).ok).toBe(false);
  });

  it('gives Lua tools an error, not an unwrapped run, for a backend that does not prefix', async () => {
    const registry = new SandboxBackendRegistry();
    registry.register({
      name: 'shellish',
      available: () => Promise.resolve({ ok: true }),
      wrap: (argv) => ['runner', '--cmd', argv.join(' ')],
    });
    const state = await resolveSandbox({}, factsFor(), {}, home, { registry });
    expect(state.wrapPrefix).toBeUndefined();
    expect(state.wrapError).toMatch(/does not wrap commands by prefix/);
    expect(await state.access.wrap_command(['ls', '-l'])).toEqual({
      ok: true,
      argv: ['runner', '--cmd', 'ls -l'],
    });
  });
});

describe('sandboxStatus', () => {
  it('describes enablement, backend, paths and policy', async () => {
    const registry = new SandboxBackendRegistry();
    registry.register(fakeBackend('sick', { ok: false, error: 'nope' }).def);
    const rw = dir('status', 'rw');
    const status = await sandboxStatus(
      { enabled: true, policy: { rw_paths: [rw], network: false } },
      factsFor({ sandbox_override: false }),
      {},
      home,
      { registry },
    );
    expect(status).toMatchObject({
      enabled: false,
      enabled_by: 'override',
      backend_setting: 'auto',
      backend: null,
      backends: [{ name: 'sick', priority: 50, available: false, error: 'nope' }],
      rw_paths: [rw],
      network: false,
      allow_privileged: false,
    });
    expect(status.backend_reason).toMatch(/No sandbox backend is available/);
    expect(status.lines[0]).toBe('Sandbox: disabled (runtime override)');
    expect(status.lines).toContain(`  ${rw}`);
    expect(status.lines).toContain('Network: blocked');
  });
});

const bwrapInstalled = (await findExecutable('bwrap', process.env['PATH'])) !== undefined;

describe.skipIf(!bwrapInstalled)('real bubblewrap', () => {
  let rw: string;
  let outside: string;

  beforeAll(() => {
    rw = dir('real', 'rw');
    outside = dir('real', 'outside');
  });

  const settings = (network: boolean) => ({
    backend: 'bwrap',
    policy: { rw_paths: [rw], network },
  });

  async function run(argv: string[], network = true): Promise<RunResult> {
    const state = await resolveSandbox(settings(network), factsFor({ cwd: rw }), {}, home);
    expect(state.backend).toBe('bwrap');
    const wrapped = await state.access.wrap_command(argv);
    if (!wrapped.ok) throw new Error(wrapped.error);
    return runProcess(wrapped.argv, { cwd: rw, mergeStderr: true, timeoutMs: 20_000 });
  }

  it('allows writing to an rw path', async () => {
    const result = await run(['sh', '-c', `echo inside > '${rw}/written' && cat '${rw}/written'`]);
    expect(result.exitCode).toBe(0);
    expect(result.output).toBe('inside\n');
    expect(existsSync(join(rw, 'written'))).toBe(true);
  });

  it('refuses writing outside the rw paths', async () => {
    const target = join(outside, 'nope');
    const result = await run(['sh', '-c', `echo x > '${target}'`]);
    expect(result.exitCode).not.toBe(0);
    expect(result.output).toContain('Read-only file system');
    expect(existsSync(target)).toBe(false);
  });

  it('has only the loopback interface without network', async () => {
    const result = await run(['cat', '/proc/net/dev'], false);
    expect(result.exitCode).toBe(0);
    const interfaces = result.output
      .split('\n')
      .slice(2)
      .map((line) => line.split(':')[0]?.trim())
      .filter((name) => name !== undefined && name !== '');
    expect(interfaces).toEqual(['lo']);
  });

  it('cannot reach a listening host port without network, and can with it', async () => {
    const server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const script = [
        `const s = require('net').connect(${port}, '127.0.0.1');`,
        "s.on('connect', () => { console.log('connected'); process.exit(0); });",
        "s.on('error', (e) => { console.log(e.code); process.exit(3); });",
      ].join('\n');
      const blocked = await run([process.execPath, '-e', script], false);
      expect(blocked.exitCode).toBe(3);
      expect(blocked.output).toMatch(/ECONNREFUSED|ENETUNREACH/);
      const open = await run([process.execPath, '-e', script], true);
      expect(open.output).toBe('connected\n');
      expect(open.exitCode).toBe(0);
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    }
  });

  it('gives the host a wrap prefix that runs commands in the same sandbox', async () => {
    const registry = createSandboxBackends();
    const state = await sandboxFor(
      settings(true),
      factsFor({ cwd: rw }),
      home,
      registry,
      undefined,
      {
        prefix: true,
      },
    );
    expect(state.wrapPrefix?.slice(0, 4)).toEqual(['bwrap', '--ro-bind', '/', '/']);
    expect(state.wrapPrefix).toContain(rw);
    const prefix = state.wrapPrefix ?? [];
    const target = join(outside, 'via-prefix');
    const result = await runProcess([...prefix, 'sh', '-c', `touch '${target}'`], {
      cwd: rw,
      mergeStderr: true,
    });
    expect(result.output).toContain('Read-only file system');
    expect(existsSync(target)).toBe(false);
    const status = await sandboxStatusFor(settings(true), factsFor({ cwd: rw }), home, registry);
    expect(status.backend).toBe('bwrap');
    expect(status.lines).toContain('Backend: bwrap (setting: bwrap)');
  });

  it('without a prefix to hand out, looks for the sensitive places only when a command is wrapped', async () => {
    const project = join(rw, 'lazy');
    mkdirSync(join(project, 'sub', 'deeper'), { recursive: true });
    const secret = join(project, 'sub', 'deeper', '.env');
    writeFileSync(secret, 'TOKEN=lazy-secret\n');
    const registry = createSandboxBackends();
    const state = await sandboxFor(settings(true), factsFor({ cwd: project }), home, registry);
    expect(state.wrapError).toBeUndefined();
    expect(state.wrapPrefix).toBeUndefined();
    const wrapped = await state.access.wrap_command(['cat', secret]);
    if (!wrapped.ok) throw new Error(wrapped.error);
    const result = await runProcess(wrapped.argv, { cwd: project, mergeStderr: true });
    expect(result.output).not.toContain('lazy-secret');
  });

  it("the host's registry probes bwrap successfully here", async () => {
    expect(await createSandboxBackends().availability('bwrap', {})).toEqual({ ok: true });
  });

  it("probes bwrap once for the warm-up's settings and the loop's (Lua's defaults filled in)", () => {
    const registry = createSandboxBackends();
    const warmUp = registry.availability('bwrap', {});
    expect(registry.availability('bwrap', { path: 'bwrap', extra_args: [] })).toBe(warmUp);
    expect(registry.availability('bwrap', { extra_args: ['--unshare-net'] })).toBe(warmUp);
    // Another program is probed on its own.
    expect(registry.availability('bwrap', { path: '/nowhere/bwrap' })).not.toBe(warmUp);
  });
});

describe('custom backends', () => {
  const policy: SandboxPolicy = {
    rw_paths: ['/tmp'],
    network: true,
    allow_privileged: false,
    hidden_paths: [],
    read_only_paths: [],
    env_unset: [],
  };
  const prefixer = (name: string, extra: Partial<BackendDefinition> = {}): BackendDefinition => ({
    name,
    available: () => true,
    wrap: (argv) => Promise.resolve([name, ...argv]),
    ...extra,
  });

  it('awaits an asynchronous wrap for the Lua prefix and for wrap_command', async () => {
    const registry = new SandboxBackendRegistry();
    registry.register(prefixer('later'));
    const state = await resolveSandbox({ backend: 'later' }, factsFor(), {}, home, { registry });
    expect(state.backend).toBe('later');
    expect(state.wrapPrefix).toEqual(['later']);
    expect(state.wrapError).toBeUndefined();
    expect(await state.access.wrap_command(['ls'])).toEqual({ ok: true, argv: ['later', 'ls'] });
  });

  it('reads true/false and {ok, error} from available, and anything else as unavailable', async () => {
    expect(normalizeAvailability(true)).toEqual({ ok: true });
    expect(normalizeAvailability(false)).toEqual({ ok: false, error: 'unavailable' });
    expect(normalizeAvailability({ ok: false, error: 'why' })).toEqual({ ok: false, error: 'why' });
    expect(normalizeAvailability({ ok: false })).toEqual({ ok: false, error: 'unavailable' });
    expect(normalizeAvailability('yes')).toEqual({
      ok: false,
      error: 'available() must answer true, false or {ok, error}, got "yes"',
    });
    const registry = new SandboxBackendRegistry();
    registry.register(prefixer('rejects', { available: () => Promise.reject(new Error('gone')) }));
    registry.register(prefixer('no', { available: () => false }));
    expect(await registry.availability('rejects')).toEqual({ ok: false, error: 'gone' });
    expect(await registry.availability('no')).toEqual({ ok: false, error: 'unavailable' });
  });

  it('turns a throwing, rejecting or malformed wrap into "Sandbox backend … failed"', async () => {
    const backends: [BackendDefinition, RegExp][] = [
      [
        prefixer('throws', {
          wrap: () => {
            throw new Error('kaput');
          },
        }),
        /^Sandbox backend 'throws' failed: kaput$/,
      ],
      [
        prefixer('rejects', { wrap: () => Promise.reject(new Error('later kaput')) }),
        /^Sandbox backend 'rejects' failed: later kaput$/,
      ],
      [
        prefixer('text', { wrap: () => 'bwrap ls' as unknown as string[] }),
        /^Sandbox backend 'text' failed: wrap\(\) must return a non-empty list of strings, got "bwrap ls"$/,
      ],
      [
        prefixer('empty', { wrap: () => [] }),
        /^Sandbox backend 'empty' failed: wrap\(\) must return a non-empty list of strings/,
      ],
    ];
    for (const [def, error] of backends) {
      const registry = new SandboxBackendRegistry();
      registry.register(def);
      const state = await resolveSandbox({ backend: def.name }, factsFor(), {}, home, {
        registry,
      });
      expect(state.wrapError).toMatch(error);
      const wrapped = await state.access.wrap_command(['ls']);
      expect(wrapped.ok).toBe(false);
      expect(wrapped.ok ? '' : wrapped.error).toMatch(error);
    }
    // The helper on its own, as the registry's users call it.
    const registry = new SandboxBackendRegistry();
    const entry = registry.register(prefixer('p'));
    expect(await wrapCommand(entry, ['a'], policy, {})).toEqual({ ok: true, argv: ['p', 'a'] });
  });

  it('validates definitions, and replaces a built-in only when asked (unregister restores it)', () => {
    const registry = new SandboxBackendRegistry();
    expect(() => registry.register({ name: 'x', available: () => true } as never)).toThrow(
      "Sandbox backend 'x' needs a function `wrap`",
    );
    expect(() => registry.register(prefixer('x', { priority: Number.NaN }))).toThrow(
      /invalid priority/,
    );
    const builtin = registry.register(prefixer('bwrap'), { builtin: true });
    expect(registry.isBuiltin('bwrap')).toBe(true);
    expect(() => registry.register(prefixer('bwrap'))).toThrow(
      "Sandbox backend 'bwrap' is built in; a backend that replaces it must set replace = true",
    );
    const replacement = registry.register(prefixer('bwrap', { replace: true, priority: 5 }));
    expect(registry.get('bwrap')).toBe(replacement);
    expect(registry.unregister('bwrap')).toBe(true);
    expect(registry.get('bwrap')).toBe(builtin);
    // Removing the built-in itself removes it.
    expect(registry.unregister('bwrap')).toBe(true);
    expect(registry.get('bwrap')).toBeUndefined();
    expect(createSandboxBackends().isBuiltin('bwrap')).toBe(true);
  });

  it('loads a JavaScript module named by sandbox.backend, once, with its own settings', async () => {
    const modules = dir('modules');
    const path = join(modules, 'firejail.mjs');
    writeFileSync(
      path,
      `globalThis.__flemmaImports = (globalThis.__flemmaImports ?? 0) + 1;
export const backend = {
  name: 'firejail-js',
  priority: 70,
  description: 'Firejail (test)',
  async available(settings) {
    return settings.ok === true ? true : { ok: false, error: 'settings.ok is not set' };
  },
  async wrap(argv, policy, settings) {
    return ['firejail', '--net=' + String(policy.network), '--mode=' + settings.mode, ...argv];
  },
};`,
    );
    const registry = new SandboxBackendRegistry();
    const config = {
      backend: path,
      backends: { 'firejail-js': { ok: true, mode: 'strict' } },
      policy: { rw_paths: [cwd], network: false },
    };
    const state = await resolveSandbox(config, factsFor(), {}, home, { registry });
    expect(state.backend).toBe('firejail-js');
    expect(state.wrapPrefix).toEqual(['firejail', '--net=false', '--mode=strict']);
    expect(await state.access.wrap_command(['ls'])).toEqual({
      ok: true,
      argv: ['firejail', '--net=false', '--mode=strict', 'ls'],
    });
    const again = await resolveSandbox(config, factsFor(), {}, home, { registry });
    expect(again.backend).toBe('firejail-js');
    expect((globalThis as { __flemmaImports?: number }).__flemmaImports).toBe(1);
    // Settings decide availability; the error names the backend.
    const off = await resolveSandbox({ backend: path }, factsFor(), {}, home, { registry });
    expect(off.wrapError).toBe(
      "Sandbox backend 'firejail-js' is not available: settings.ok is not set",
    );
    const status = await sandboxStatus(config, factsFor(), {}, home, { registry });
    expect(status.backend).toBe('firejail-js');
    expect(status.lines).toContain(`Backend: firejail-js (setting: ${path})`);
    expect(status.lines).toContain('  firejail-js (priority 70, Firejail (test)): available');
  });

  it('expands ~ and relative module paths; a CommonJS default export works', async () => {
    dir('home', 'backends');
    writeFileSync(
      join(home, 'backends', 'tilde.cjs'),
      `module.exports = { backend: { name: 'tilde', available: () => true, wrap: (argv) => ['t', ...argv] } };`,
    );
    dir('project', 'local');
    writeFileSync(
      join(cwd, 'local', 'rel.js'),
      `export default { name: 'relative', available: () => true, wrap: (argv) => ['r', ...argv] };`,
    );
    expect(expandModulePath('~/backends/tilde.cjs', home, cwd)).toBe(
      join(home, 'backends', 'tilde.cjs'),
    );
    const registry = new SandboxBackendRegistry();
    const tilde = await resolveSandbox({ backend: '~/backends/tilde.cjs' }, factsFor(), {}, home, {
      registry,
    });
    expect(tilde.wrapPrefix).toEqual(['t']);
    const relative = await resolveSandbox({ backend: 'local/rel.js' }, factsFor(), {}, home, {
      registry,
    });
    expect(relative.wrapPrefix).toEqual(['r']);
    expect(registry.list().map((b) => b.name)).toEqual(['relative', 'tilde']);
  });

  it('reports a module that is missing, broken or exports no backend', async () => {
    const modules = dir('bad-modules');
    writeFileSync(join(modules, 'nothing.mjs'), 'export const other = 1;');
    writeFileSync(join(modules, 'broken.mjs'), 'export const backend = {;');
    writeFileSync(
      join(modules, 'invalid.mjs'),
      `export const backend = { name: 'auto', available: () => true, wrap: (a) => a };`,
    );
    const registry = new SandboxBackendRegistry();
    const cases: [string, RegExp][] = [
      ['nothing.mjs', /exports no `backend`/],
      ['broken.mjs', /could not be loaded: .+/],
      ['invalid.mjs', /'auto' is reserved/],
      ['missing.mjs', /could not be loaded: .*(Cannot find|ERR_MODULE_NOT_FOUND)/],
    ];
    for (const [file, error] of cases) {
      const path = join(modules, file);
      const state = await resolveSandbox({ backend: path }, factsFor(), {}, home, { registry });
      expect(state.wrapError).toMatch(`Sandbox backend module '${path}' could not be loaded: `);
      expect(state.wrapError).toMatch(error);
      expect((await state.access.wrap_command(['ls'])).ok).toBe(false);
      const status = await sandboxStatus({ backend: path }, factsFor(), {}, home, { registry });
      expect(status.backend_error).toBe(true);
      expect(status.backend_reason).toBe(state.wrapError);
    }
  });

  it('asks loadNamed about unknown names, and uses the name it answers', async () => {
    const registry = new SandboxBackendRegistry();
    const asked: string[] = [];
    const loadNamed = (selection: string): Promise<ModuleSelection | undefined> => {
      asked.push(selection);
      if (selection === 'my.module') {
        registry.register(prefixer('from-lua'));
        return Promise.resolve({ name: 'from-lua' });
      }
      if (selection === 'broken.module') return Promise.resolve({ error: 'it broke' });
      if (selection === 'throws') return Promise.reject(new Error('no Neovim'));
      return Promise.resolve(undefined);
    };
    const withLoader = (backend: string) =>
      resolveSandbox({ backend }, factsFor(), {}, home, { registry, loadNamed });
    const loaded = await withLoader('my.module');
    expect(loaded.backend).toBe('from-lua');
    const broken = await withLoader('broken.module');
    expect(broken.wrapError).toBe('it broke');
    const throws = await withLoader('throws');
    expect(throws.wrapError).toBe("Sandbox backend 'throws' could not be loaded: no Neovim");
    const unknown = await withLoader('nope');
    expect(unknown.wrapError).toMatch(/^Sandbox backend 'nope' is not available: no backend/);
    // Registered names and auto never reach the loader.
    await withLoader('from-lua');
    await withLoader('auto');
    expect(asked).toEqual(['my.module', 'broken.module', 'throws', 'nope']);
  });

  it('finds the sandboxBackends of a JavaScript tool module', () => {
    const def = prefixer('x');
    expect(backendsFromToolModule({ sandboxBackends: [def] })).toEqual([def]);
    expect(backendsFromToolModule({ default: { sandboxBackends: [def] } })).toEqual([def]);
    expect(backendsFromToolModule({ definitions: [] })).toEqual([]);
  });
});

describe('Lua backend proxies', () => {
  /** A stand-in for the Lua side: records calls and answers from `answers`. */
  function fakeLua(answers: Record<string, (params: Record<string, unknown>) => unknown>): {
    calls: [string, Record<string, unknown>][];
    lua: LuaCaller;
  } {
    const calls: [string, Record<string, unknown>][] = [];
    return {
      calls,
      lua: {
        call: ((method: string, params: unknown) => {
          const p = params as Record<string, unknown>;
          calls.push([method, p]);
          const answer = answers[method];
          if (answer === undefined) return Promise.reject(new Error(`no method ${method}`));
          try {
            return Promise.resolve(answer(p));
          } catch (error) {
            return Promise.reject(error instanceof Error ? error : new Error(String(error)));
          }
        }) as LuaCaller['call'],
      },
    };
  }

  it('registers proxies whose available and wrap call Lua, and removes them when Lua drops them', async () => {
    const registry = new SandboxBackendRegistry();
    const { calls, lua } = fakeLua({
      'sandbox.available': (p) =>
        p['name'] === 'mine' ? { ok: true } : { ok: false, error: 'no' },
      'sandbox.wrap': (p) => ({ argv: ['env', 'W=1', ...(p['argv'] as string[])] }),
    });
    const proxies = new LuaSandboxBackends(lua, registry);
    expect(
      proxies.define([
        { name: 'mine', priority: 60, description: 'Mine' },
        { name: 'other' },
        { priority: 3 },
      ]),
    ).toEqual(['a Lua sandbox backend without a name was ignored: {"priority":3}']);
    expect(registry.list().map((b) => [b.name, b.priority, b.description])).toEqual([
      ['mine', 60, 'Mine'],
      ['other', 50, undefined],
    ]);
    const state = await resolveSandbox(
      { backend: 'mine', backends: { mine: { level: 2 } }, policy: { rw_paths: [cwd] } },
      factsFor(),
      {},
      home,
      { registry },
    );
    expect(state.wrapPrefix).toEqual(['env', 'W=1']);
    expect(await state.access.wrap_command(['ls'])).toEqual({
      ok: true,
      argv: ['env', 'W=1', 'ls'],
    });
    expect(calls[0]).toEqual(['sandbox.available', { name: 'mine', settings: { level: 2 } }]);
    expect(calls[1]?.[0]).toBe('sandbox.wrap');
    expect(calls[1]?.[1]).toMatchObject({
      name: 'mine',
      policy: { rw_paths: [cwd], network: true, allow_privileged: false },
      settings: { level: 2 },
    });
    // An unchanged list keeps the cached availability; a shorter one removes the proxy.
    const before = registry.generation;
    proxies.define([{ name: 'mine', priority: 60, description: 'Mine' }, { name: 'other' }]);
    expect(registry.generation).toBe(before);
    proxies.define([{ name: 'mine', priority: 60, description: 'Mine' }]);
    expect(registry.list().map((b) => b.name)).toEqual(['mine']);
    expect(proxies.names()).toEqual(['mine']);
  });

  it('turns Lua errors into clear sandbox errors', async () => {
    const registry = new SandboxBackendRegistry();
    const { lua } = fakeLua({
      'sandbox.available': (p) => {
        if (p['name'] === 'dead') throw new Error('Error executing lua: boom');
        return { ok: true };
      },
      'sandbox.wrap': () => ({ error: '[string "init.lua"]:3: wrap exploded' }),
    });
    const proxies = new LuaSandboxBackends(lua, registry);
    proxies.define([{ name: 'dead' }, { name: 'raiser' }]);
    const dead = await resolveSandbox({ backend: 'dead' }, factsFor(), {}, home, { registry });
    expect(dead.wrapError).toBe(
      "Sandbox backend 'dead' is not available: Error executing lua: boom",
    );
    const raiser = await resolveSandbox({ backend: 'raiser' }, factsFor(), {}, home, { registry });
    expect(raiser.wrapError).toBe(
      `Sandbox backend 'raiser' failed: [string "init.lua"]:3: wrap exploded`,
    );
    expect(await raiser.access.wrap_command(['ls'])).toEqual({
      ok: false,
      error: raiser.wrapError,
    });
  });

  it('replaces bwrap only with replace = true, and brings it back when Lua drops it', () => {
    const registry = new SandboxBackendRegistry();
    const builtin = registry.register(createBwrapBackend({ platform: 'darwin' }), {
      builtin: true,
    });
    const { lua } = fakeLua({});
    const proxies = new LuaSandboxBackends(lua, registry);
    expect(proxies.define([{ name: 'bwrap' }])).toEqual([
      "Lua sandbox backend 'bwrap': Sandbox backend 'bwrap' is built in; a backend that replaces it must set replace = true",
    ]);
    expect(registry.get('bwrap')).toBe(builtin);
    expect(proxies.define([{ name: 'bwrap', replace: true, priority: 100 }])).toEqual([]);
    expect(registry.get('bwrap')).not.toBe(builtin);
    proxies.define([]);
    expect(registry.get('bwrap')).toBe(builtin);
  });

  it('loads a Lua module named by sandbox.backend through sandbox.load, once', async () => {
    const registry = new SandboxBackendRegistry();
    const { calls, lua } = fakeLua({
      'sandbox.load': (p) =>
        p['module'] === 'my.firejail'
          ? { name: 'firejail', backend: { name: 'firejail', priority: 60 } }
          : p['module'] === 'my.broken'
            ? { error: "module 'my.broken': backend 'x' needs a function `wrap`" }
            : { found: false },
      'sandbox.available': () => ({ ok: true }),
      'sandbox.wrap': (p) => ({ argv: ['fj', ...(p['argv'] as string[])] }),
    });
    const proxies = new LuaSandboxBackends(lua, registry);
    const options = { registry, loadNamed: proxies.loadNamed };
    const state = await resolveSandbox({ backend: 'my.firejail' }, factsFor(), {}, home, options);
    expect(state.backend).toBe('firejail');
    expect(state.wrapPrefix).toEqual(['fj']);
    await resolveSandbox({ backend: 'my.firejail' }, factsFor(), {}, home, options);
    expect(calls.filter(([method]) => method === 'sandbox.load')).toHaveLength(1);
    const broken = await resolveSandbox({ backend: 'my.broken' }, factsFor(), {}, home, options);
    expect(broken.wrapError).toBe(
      "Sandbox backend module 'my.broken' could not be loaded: module 'my.broken': backend 'x' needs a function `wrap`",
    );
    const missing = await resolveSandbox({ backend: 'typo' }, factsFor(), {}, home, options);
    expect(missing.wrapError).toMatch(
      /^Sandbox backend 'typo' is not available: no backend of that name is registered \(registered: firejail\)$/,
    );
  });
});
