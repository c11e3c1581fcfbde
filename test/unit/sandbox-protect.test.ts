// What the sandbox keeps from commands (issue 19): the sensitive places (the built-in list and
// tools.sensitive_paths), the session sockets, the scrubbed environment, the bwrap command line
// they turn into, and (where bubblewrap is installed) real runs that show they hold.
import { mkdirSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve as resolvePath } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import { type RunResult, runProcess } from '../../src/core/tools/process.js';
import type { SandboxPolicy } from '../../src/core/tools/sandbox/backends.js';
import { bwrapArgv, findExecutable } from '../../src/core/tools/sandbox/bwrap.js';
import { isScrubbed, scrubEnv, scrubbedNames } from '../../src/core/tools/sandbox/env.js';
import { resolveSandbox } from '../../src/core/tools/sandbox/index.js';
import { protection } from '../../src/core/tools/sandbox/protect.js';
import {
  GIT_DIR_LABEL,
  describeSensitive,
  isGitDir,
  expandEntry,
  findSensitive,
  sensitiveEntries,
} from '../../src/core/tools/sandbox/sensitive.js';
import {
  TopListings,
  sandboxPlaces,
  sessionPlaces,
} from '../../src/core/tools/sandbox/sensitive-places.js';
import { fileTempDir } from '../helpers/temp.js';

const dir = fileTempDir('flemma-protect-');
let home: string;
let project: string;

beforeAll(() => {
  home = join(dir(), 'home');
  project = join(home, 'project');
  mkdirSync(project, { recursive: true });
});

const editorDirs = () => ({
  config: join(home, '.config', 'nvim'),
  data: join(home, '.local', 'share', 'nvim'),
  state: join(home, '.local', 'state', 'nvim'),
  cache: join(home, '.cache', 'nvim'),
});

describe('sensitive entries', () => {
  it('expand ~ and variables anywhere; an unset variable drops the entry', () => {
    const env = { SECRETS: '/srv/secrets', EMPTY: '' };
    expect(expandEntry('~/.ssh', env, '/home/u')).toBe('/home/u/.ssh');
    expect(expandEntry('~', env, '/home/u')).toBe('/home/u');
    expect(expandEntry('${SECRETS}/*.pem', env, '/home/u')).toBe('/srv/secrets/*.pem');
    expect(expandEntry('$SECRETS/x/', env, '/home/u')).toBe('/srv/secrets/x');
    expect(expandEntry('${EMPTY:-~/.config}/fish', env, '/home/u')).toBe('/home/u/.config/fish');
    expect(expandEntry('${UNSET}/x', env, '/home/u')).toBeUndefined();
    expect(expandEntry('./.env*', env, '/home/u')).toBe('.env*');
    expect(expandEntry('./', env, '/home/u')).toBeUndefined();
  });

  it('match the built-in places, at any depth for relative ones, and nothing else', () => {
    const { entries, warnings } = sensitiveEntries(undefined, {
      home: '/home/u',
      env: {},
      editorDirs: editorDirs(),
    });
    expect(warnings).toEqual([]);
    const label = (path: string): string | undefined =>
      findSensitive([path], entries)?.label ?? undefined;
    // Each path and the label of the place it is in (undefined: none).
    const cases: [string, string | undefined][] = [
      ['/home/u/.ssh', '~/.ssh'],
      ['/home/u/.ssh/id_ed25519', '~/.ssh'],
      ['/home/u/.sshx', undefined],
      ['/home/u/.aws/credentials', '~/.aws'],
      ['/home/u/.config/gcloud/application_default_credentials.json', '~/.config/gcloud'],
      ['/home/u/.netrc', '~/.netrc'],
      ['/home/u/.bashrc', '~/.bashrc'],
      ['/home/u/.config/fish/config.fish', '${XDG_CONFIG_HOME:-~/.config}/fish'],
      ['/work/p/.env', '.env*'],
      ['/work/p/app/.env.local', '.env*'],
      ['/work/p/.envrc', '.env*'],
      ['/work/p/environment.md', undefined],
      ['/proc/1234/environ', '/proc/*/environ'],
      ['/proc/self/task/7/environ', '/proc/*/task/*/environ'],
      ['/work/p/.git/hooks/pre-commit', '.git'],
      ['/work/p/sub/.git/config', '.git'],
      ['/work/p/.git/HEAD', '.git'],
      ['/work/p/.nvim.lua', '.nvim.lua'],
      [join(home, '.local/share/nvim/site/plugin/x.lua'), 'stdpath("data")'],
      [join(home, '.config/nvim/init.lua'), 'stdpath("config")'],
      [join(home, '.cache/nvim/luac/x'), 'stdpath("cache")'],
      [join(home, '.cache/pip/x'), undefined],
      ['/work/p/src/main.ts', undefined],
    ];
    for (const [input, expected] of cases) expect(label(input), input).toBe(expected);
  });

  it('cover all of .git in any spelling and the code-running places; build scripts on write', () => {
    const { entries } = sensitiveEntries(undefined, { home: '/home/u', env: {} });
    const read = (path: string): string | undefined => findSensitive([path], entries)?.label;
    const write = (path: string): string | undefined =>
      findSensitive([path], entries, { write: true })?.label;
    for (const path of [
      '/w/p/.git',
      '/w/p/.git/config.worktree',
      '/w/p/.git/modules/x/config',
      '/w/p/.git/modules/x/hooks/pre-commit',
      '/w/p/.git/modules/a/modules/b/hooks/post-checkout',
      '/w/p/.git/worktrees/wt/config.worktree',
      '/w/p/.git/info/attributes',
      '/w/p/sub/.git',
      '/w/p/.GIT/hooks/pre-commit',
      '/w/p/.Git/config',
    ]) {
      expect([path, read(path), write(path)]).toEqual([path, '.git', '.git']);
    }
    // Written paths are normalized before they are judged (`./.git/../.git/hooks`, `.git//hooks`).
    expect(write(resolvePath('/w/p', './.git/../.git/hooks/x'))).toBe('.git');
    expect(write(resolvePath('/w/p', '.git//hooks/x'))).toBe('.git');
    expect(write('/w/p/.gitignore')).toBeUndefined();
    expect(write('/w/p/.github/CODEOWNERS')).toBeUndefined();
    expect(write('/w/p/src/git/hooks.ts')).toBeUndefined();
    const writeOnly: [string, string][] = [
      ['/w/p/.husky/pre-commit', '.husky'],
      ['/w/p/.lazy.lua', '.lazy.lua'],
      ['/w/p/.vscode/tasks.json', '.vscode/tasks.json'],
      ['/w/p/.vscode/settings.json', '.vscode/settings.json'],
      ['/w/p/.vscode/launch.json', '.vscode/launch.json'],
      ['/w/p/.idea/workspace.xml', '.idea'],
      ['/w/p/.pre-commit-config.yaml', '.pre-commit-config.yaml'],
      ['/w/p/lefthook.yml', '{.,}lefthook{,-local}.{yml,yaml}'],
      ['/w/p/Makefile', 'Makefile'],
      ['/w/p/sub/makefile', 'Makefile'],
      ['/w/p/GNUmakefile', 'GNUmakefile'],
      ['/w/p/package.json', 'package.json'],
      ['/w/p/pyproject.toml', 'pyproject.toml'],
      ['/w/p/setup.py', 'setup.py'],
      ['/w/p/crate/build.rs', 'build.rs'],
      ['/w/p/Cargo.toml', 'Cargo.toml'],
      ['/w/p/.github/workflows/ci.yml', '.github/workflows'],
    ];
    for (const [path, label] of writeOnly) {
      expect([path, write(path), read(path)]).toEqual([path, label, undefined]);
    }
    expect(write('/w/p/.vscode/extensions.json')).toBeUndefined();
    expect(write('/w/p/src/package.json.md')).toBeUndefined();
    // Neovim's exrc files stay sensitive to read as well.
    expect(read('/w/p/.nvim.lua')).toBe('.nvim.lua');
    expect(read('/w/p/.exrc')).toBe('.exrc');
  });

  it('count a directory shaped like a git directory (a gitdir: target) and all in it', () => {
    const gitdir = dir('shapes', 'store', 'repo.git');
    mkdirSync(join(gitdir, 'objects'));
    mkdirSync(join(gitdir, 'refs'));
    writeFileSync(join(gitdir, 'HEAD'), 'ref: refs/heads/main\n');
    const worktree = dir('shapes', 'store', 'wt-admin');
    writeFileSync(join(worktree, 'HEAD'), 'ref: refs/heads/x\n');
    writeFileSync(join(worktree, 'commondir'), '../repo.git\n');
    const plain = dir('shapes', 'plain');
    writeFileSync(join(plain, 'HEAD'), 'not git\n');
    const { entries } = sensitiveEntries(undefined, { home: '/home/u', env: {} });
    const hit = (path: string) => findSensitive([path], entries)?.label;
    expect(hit(join(gitdir, 'config'))).toBe(GIT_DIR_LABEL);
    expect(hit(join(gitdir, 'hooks', 'pre-commit'))).toBe(GIT_DIR_LABEL);
    expect(hit(gitdir)).toBe(GIT_DIR_LABEL);
    expect(hit(join(worktree, 'config.worktree'))).toBe(GIT_DIR_LABEL);
    expect(hit(join(plain, 'config'))).toBeUndefined();
    expect(isGitDir(gitdir)).toBe(true);
    expect(isGitDir(plain)).toBe(false);
  });

  it('add the globs of tools.sensitive_paths, and warn about bad entries', () => {
    const { entries, warnings } = sensitiveEntries(
      ['~/keys/*.pem', '${VAULT}', 'secrets', 42, '', '${NOPE}/x'],
      { home: '/home/u', env: { VAULT: '/srv/vault' } },
    );
    expect(warnings).toEqual([
      'tools.sensitive_paths[4] must be a non-empty string; ignored',
      'tools.sensitive_paths[5] must be a non-empty string; ignored',
    ]);
    const hit = (path: string) => findSensitive([path], entries);
    expect(hit('/home/u/keys/server.pem')?.source).toBe('tools.sensitive_paths');
    expect(hit('/home/u/keys/server.pub')).toBeUndefined();
    expect(hit('/srv/vault/a/b')?.label).toBe('${VAULT}');
    expect(hit('/work/p/secrets/db.txt')?.label).toBe('secrets');
    const secrets = hit('/work/p/secrets');
    const ssh = hit('/home/u/.ssh/x');
    expect(secrets && describeSensitive(secrets)).toBe('secrets (tools.sensitive_paths)');
    expect(ssh && describeSensitive(ssh)).toBe('~/.ssh (built in)');
    expect(sensitiveEntries({ not: 'a list' }, { home: '/h', env: {} }).warnings).toEqual([
      'tools.sensitive_paths must be a list of path globs; ignored',
    ]);
    // An empty Lua table may arrive as an object.
    expect(sensitiveEntries({}, { home: '/h', env: {} }).warnings).toEqual([]);
  });

  it('match an absolute place at its real location too (a ~/.ssh that is a link)', () => {
    const linkedHome = dir('linked-home');
    const keys = dir('elsewhere', 'keys');
    symlinkSync(keys, join(linkedHome, '.ssh'));
    const { entries } = sensitiveEntries(undefined, { home: linkedHome, env: {} });
    expect(findSensitive([join(keys, 'id_rsa')], entries)?.label).toBe('~/.ssh');
  });
});

describe('the places the sandbox treats', () => {
  it('hides the existing ones, keeps .git/hooks and .git/config read-only, skips the missing', () => {
    const h = dir('places', 'home');
    const p = dir('places', 'home', 'project');
    mkdirSync(join(h, '.ssh'));
    writeFileSync(join(h, '.netrc'), 'machine x password y\n');
    writeFileSync(join(p, '.env'), 'A=1\n');
    writeFileSync(join(p, '.env.local'), 'A=2\n');
    mkdirSync(join(p, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(p, '.git', 'config'), '[core]\n');
    const { entries } = sensitiveEntries(undefined, { home: h, env: {} });
    const places = sandboxPlaces(entries, [p]);
    expect(places.hide.sort()).toEqual(
      [join(h, '.ssh'), join(h, '.netrc'), join(p, '.env'), join(p, '.env.local')].sort(),
    );
    expect(places.readOnly.sort()).toEqual([join(p, '.git', 'config'), join(p, '.git', 'hooks')]);
  });

  it('finds .env files and code places at every depth, git dirs a gitdir: file points to too', () => {
    const h = dir('deep', 'home');
    const p = dir('deep', 'home', 'project');
    const deep = dir('deep', 'home', 'project', 'sub', 'deeper', 'still');
    writeFileSync(join(p, 'sub', '.env'), 'A=1\n');
    writeFileSync(join(deep, '.env.production'), 'B=2\n');
    dir('deep', 'home', 'project', 'node_modules', 'pkg');
    writeFileSync(join(p, 'node_modules', 'pkg', '.env'), 'not looked for\n');
    dir('deep', 'home', 'project', 'sub', '.vscode');
    writeFileSync(join(p, 'sub', '.vscode', 'tasks.json'), '{}\n');
    writeFileSync(join(p, 'sub', 'Makefile'), 'all:\n');
    // A submodule's git directory inside .git, and a worktree whose .git file points elsewhere.
    const module = dir('deep', 'home', 'project', '.git', 'modules', 'lib', 'x');
    mkdirSync(join(module, 'objects'));
    mkdirSync(join(module, 'refs'));
    mkdirSync(join(module, 'hooks'));
    writeFileSync(join(module, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(module, 'config'), '[core]\n');
    const store = dir('deep', 'store.git');
    mkdirSync(join(store, 'objects'));
    mkdirSync(join(store, 'refs'));
    mkdirSync(join(store, 'hooks'));
    writeFileSync(join(store, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(store, 'config'), '[core]\n');
    dir('deep', 'home', 'project', 'linked');
    writeFileSync(join(p, 'linked', '.git'), `gitdir: ${store}\n`);
    const { entries } = sensitiveEntries(undefined, { home: h, env: {} });
    const places = sandboxPlaces(entries, [p]);
    expect(places.truncated).toBe(false);
    expect(places.hide.sort()).toEqual(
      [join(p, 'sub', '.env'), join(deep, '.env.production')].sort(),
    );
    expect(places.readOnly.sort()).toEqual(
      [
        join(p, 'sub', '.vscode', 'tasks.json'),
        join(module, 'config'),
        join(module, 'hooks'),
        join(store, 'config'),
        join(store, 'hooks'),
      ].sort(),
    );
  });

  it('looks at the shared temporary and cache directories at their top level only', () => {
    const h = dir('shared', 'home');
    const p = dir('shared', 'home', 'project');
    const tmp = dir('shared', 'tmp');
    const cache = dir('shared', 'home', '.cache');
    dir('shared', 'tmp', 'other-tool', 'tree');
    writeFileSync(join(tmp, '.env'), 'TOP=1\n');
    writeFileSync(join(tmp, 'other-tool', 'tree', '.env'), 'DEEP=1\n');
    dir('shared', 'home', '.cache', 'pkg');
    writeFileSync(join(cache, 'pkg', '.env'), 'DEEP=1\n');
    dir('shared', 'home', 'project', 'sub');
    writeFileSync(join(p, 'sub', '.env'), 'PROJECT=1\n');
    const result = protection({ cwd: p, filename: null }, { TMPDIR: tmp }, h, [p, tmp, cache], {
      envAllow: [],
      uid: undefined,
    });
    expect(result.hidden_paths).toContain(join(p, 'sub', '.env'));
    expect(result.hidden_paths).toContain(join(tmp, '.env'));
    expect(result.hidden_paths).not.toContain(join(tmp, 'other-tool', 'tree', '.env'));
    expect(result.hidden_paths).not.toContain(join(cache, 'pkg', '.env'));
    expect(result.warnings).toEqual([]);
  });

  describe('with the shared directories’ listings kept across commands', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('finds what a fresh look finds after each change: an .env added, renamed, removed', () => {
      const h = dir('kept', 'home');
      const tmp = dir('kept', 'tmp');
      for (let i = 0; i < 50; i++) writeFileSync(join(tmp, `junk-${String(i)}`), '');
      const { entries } = sensitiveEntries(undefined, { home: h, env: {} });
      const listings = new TopListings();
      const look = (): string[] => sandboxPlaces(entries, [], [tmp], listings).hide.sort();
      const fresh = (): string[] => sandboxPlaces(entries, [], [tmp]).hide.sort();
      // Each listing is read a while after the directory's last change, so it is kept.
      const later = (): void => {
        vi.useFakeTimers({ toFake: ['Date'] });
        vi.setSystemTime(Date.now() + 10_000);
      };
      later();
      expect(look()).toEqual([]);
      expect(look()).toEqual([]);
      vi.useRealTimers();
      writeFileSync(join(tmp, '.env'), 'A=1\n');
      later();
      expect(look()).toEqual([join(realpathSync(tmp), '.env')]);
      expect(look()).toEqual(fresh());
      vi.useRealTimers();
      renameSync(join(tmp, '.env'), join(tmp, '.env.local'));
      later();
      expect(look()).toEqual([join(realpathSync(tmp), '.env.local')]);
      vi.useRealTimers();
      rmSync(join(tmp, '.env.local'));
      later();
      expect(look()).toEqual([]);
      expect(look()).toEqual(fresh());
    });

    it('does not keep a listing read right after the directory changed, nor reuse it for other entries', () => {
      const h = dir('racy', 'home');
      const tmp = dir('racy', 'tmp');
      writeFileSync(join(tmp, 'secrets.kdbx'), '');
      const listings = new TopListings();
      const { entries } = sensitiveEntries(undefined, { home: h, env: {} });
      expect(sandboxPlaces(entries, [], [tmp], listings).hide).toEqual([]);
      const own = sensitiveEntries(['*.kdbx'], { home: h, env: {} }).entries;
      expect(sandboxPlaces(own, [], [tmp], listings).hide).toEqual([
        join(realpathSync(tmp), 'secrets.kdbx'),
      ]);
    });
  });

  it('adds the runtime directory, Neovim servers and agent sockets that exist', () => {
    const run = dir('session', 'run');
    const agent = dir('session', 'agent');
    writeFileSync(join(agent, 'sock'), '');
    const server = join(dir('session', 'nvim'), 'nvim.1.0');
    writeFileSync(server, '');
    const places = sessionPlaces(
      {
        XDG_RUNTIME_DIR: run,
        SSH_AUTH_SOCK: join(agent, 'sock'),
        DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(run, 'bus')},guid=1`,
        TMUX: '/nonexistent-flemma/tmux,1,0',
      },
      [server, '127.0.0.1:6666'],
      undefined,
    );
    expect(places).toContain(run);
    expect(places).toContain(join(agent, 'sock'));
    expect(places).toContain(server);
    expect(places.some((path) => path.startsWith('/nonexistent'))).toBe(false);
  });

  it('protection: outermost places, read-only only inside writable paths, sessions spare rw paths', () => {
    const h = dir('protect', 'home');
    const p = dir('protect', 'home', 'project');
    const run = dir('protect', 'run');
    mkdirSync(join(h, '.ssh', 'sub'), { recursive: true });
    mkdirSync(join(p, '.git', 'hooks'), { recursive: true });
    const outsideRepo = dir('protect', 'other');
    mkdirSync(join(outsideRepo, '.git', 'hooks'), { recursive: true });
    const result = protection(
      { cwd: p, filename: join(outsideRepo, 'x.chat'), servers: {} as unknown as string[] },
      { XDG_RUNTIME_DIR: run, ANTHROPIC_API_KEY: 'k', PATH: '/bin' },
      h,
      [p, run],
      {
        sensitivePaths: ['~/.ssh/sub'],
        credentialEnv: ['ANTHROPIC_API_KEY'],
        envAllow: [],
        uid: undefined,
      },
    );
    expect(result.hidden_paths).toContain(join(h, '.ssh'));
    expect(result.hidden_paths).not.toContain(join(h, '.ssh', 'sub'));
    // The runtime directory is writable here, so it is not taken away.
    expect(result.hidden_paths).not.toContain(run);
    expect(result.read_only_paths).toEqual([join(p, '.git', 'hooks')]);
    expect(result.env_unset).toContain('ANTHROPIC_API_KEY');
    expect(result.env_unset).not.toContain('PATH');
  });
});

describe('the scrubbed environment', () => {
  const rules = { known: ['ANTHROPIC_API_KEY', 'OPENAI_BASE_URL'], allow: ['MY_TOKEN'] };

  it('removes the known variables, secret-looking names and session sockets', () => {
    for (const name of [
      'ANTHROPIC_API_KEY',
      'OPENAI_BASE_URL',
      'GITHUB_TOKEN',
      'github_token',
      'AWS_SECRET_ACCESS_KEY',
      'STRIPE_SECRET',
      'PGPASSWORD',
      'DB_PASSWORD_FILE',
      'SSH_AUTH_SOCK',
      'NVIM',
      'DBUS_SESSION_BUS_ADDRESS',
      'GOOGLE_APPLICATION_CREDENTIALS',
    ]) {
      expect([name, isScrubbed(name, rules)]).toEqual([name, true]);
    }
    for (const name of ['PATH', 'HOME', 'LANG', 'TERM', 'KEYMAP', 'TOKENIZERS_PARALLELISM']) {
      expect([name, isScrubbed(name, rules)]).toEqual([name, false]);
    }
  });

  it('keeps what env_allow names, exactly as written', () => {
    expect(isScrubbed('MY_TOKEN', rules)).toBe(false);
    expect(isScrubbed('my_token', rules)).toBe(true);
  });

  it('lists names only, and copies the environment without them', () => {
    const env = { PATH: '/bin', GITHUB_TOKEN: 'ghp', MY_TOKEN: 'mine', UNSET: undefined };
    expect(scrubbedNames(env, rules)).toContain('GITHUB_TOKEN');
    expect(scrubbedNames(env, rules)).toContain('ANTHROPIC_API_KEY');
    expect(scrubbedNames(env, rules)).not.toContain('MY_TOKEN');
    expect(scrubEnv(env, rules)).toEqual({ PATH: '/bin', MY_TOKEN: 'mine' });
  });
});

describe('bwrap command line with protection', () => {
  it('hides directories with a read-only tmpfs, files with /dev/null; then read-only binds and unsetenv', () => {
    const policy: SandboxPolicy = {
      rw_paths: ['/home/u/p'],
      network: true,
      allow_privileged: false,
      hidden_paths: ['/home/u/.netrc', '/home/u/.ssh', '/gone'],
      read_only_paths: ['/home/u/p/.git/hooks'],
      env_unset: ['ANTHROPIC_API_KEY', 'GITHUB_TOKEN'],
    };
    const argv = bwrapArgv(
      ['true'],
      policy,
      {},
      (path) => path !== '/gone',
      (path) => path === '/home/u/.ssh' || path.endsWith('hooks'),
    );
    const dev = argv.indexOf('--proc');
    expect(argv.slice(dev + 2, argv.indexOf('--unshare-user'))).toEqual([
      '--dev-bind',
      '/dev/null',
      '/home/u/.netrc',
      '--tmpfs',
      '/home/u/.ssh',
      '--remount-ro',
      '/home/u/.ssh',
      '--ro-bind',
      '/home/u/p/.git/hooks',
      '/home/u/p/.git/hooks',
      '--unsetenv',
      'ANTHROPIC_API_KEY',
      '--unsetenv',
      'GITHUB_TOKEN',
    ]);
  });
});

const bwrapInstalled = (await findExecutable('bwrap', process.env['PATH'])) !== undefined;

describe.skipIf(!bwrapInstalled)('real bubblewrap with protection', () => {
  async function run(
    command: string,
    h: string,
    p: string,
    env: Record<string, string> = {},
  ): Promise<RunResult> {
    const state = await resolveSandbox(
      { backend: 'bwrap', policy: { rw_paths: [p], env_allow: ['KEEP_TOKEN'] } },
      { cwd: p, filename: null, sandbox_override: null },
      env,
      h,
      { credentialEnv: ['ANTHROPIC_API_KEY'] },
    );
    expect(state.builtinBackend).toBe(true);
    const wrapped = await state.access.wrap_command(['sh', '-c', command]);
    if (!wrapped.ok) throw new Error(wrapped.error);
    // The process gets the raw environment: bwrap itself must remove the variables.
    return runProcess(wrapped.argv, { cwd: p, env, mergeStderr: true, timeoutMs: 20_000 });
  }

  it('shows a sensitive directory empty and a sensitive file as empty, and cannot write them', async () => {
    const h = dir('real', 'home');
    const p = dir('real', 'home', 'project');
    mkdirSync(join(h, '.ssh'));
    writeFileSync(join(h, '.ssh', 'id_rsa'), 'PRIVATE\n');
    writeFileSync(join(h, '.netrc'), 'password hunter2\n');
    writeFileSync(join(p, '.env'), 'SECRET=1\n');
    const result = await run(
      `ls -A "${h}/.ssh"; cat "${h}/.netrc" "${p}/.env"; echo x > "${h}/.ssh/new" || echo refused`,
      h,
      p,
    );
    expect(result.output).not.toContain('id_rsa');
    expect(result.output).not.toContain('PRIVATE');
    expect(result.output).not.toContain('hunter2');
    expect(result.output).not.toContain('SECRET');
    expect(result.output).toContain('refused');
  });

  it('keeps .git/hooks readable but read-only inside a writable project', async () => {
    const h = dir('real-git', 'home');
    const p = dir('real-git', 'home', 'project');
    mkdirSync(join(p, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(p, '.git', 'hooks', 'README'), 'hooks\n');
    const result = await run(
      `cat .git/hooks/README; echo evil > .git/hooks/pre-commit || echo refused; echo ok > written`,
      h,
      p,
    );
    expect(result.output).toContain('hooks\n');
    expect(result.output).toContain('refused');
    expect(realpathSync(join(p, 'written'))).toBe(join(p, 'written'));
  });

  it('removes the provider keys and secret-named variables, keeping env_allow', async () => {
    const h = dir('real-env', 'home');
    const p = dir('real-env', 'home', 'project');
    const result = await run('echo "[$ANTHROPIC_API_KEY][$GH_TOKEN][$KEEP_TOKEN][$LANG]"', h, p, {
      ANTHROPIC_API_KEY: 'sk-secret',
      GH_TOKEN: 'ghp-secret',
      KEEP_TOKEN: 'kept',
      LANG: 'C',
    });
    expect(result.output).toBe('[][][kept][C]\n');
  });

  it('hides a server socket outside the writable paths', async () => {
    const h = dir('real-sock', 'home');
    const p = dir('real-sock', 'home', 'project');
    const socket = join(dir('real-sock', 'sockets'), 'nvim.sock');
    const server = createServer((client) => client.end('reached\n'));
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    try {
      const state = await resolveSandbox(
        { backend: 'bwrap', policy: { rw_paths: [p] } },
        { cwd: p, filename: null, sandbox_override: null, servers: [socket] },
        {},
        h,
      );
      const script = `require('net').connect('${socket}').on('data', (d) => process.stdout.write(d)).on('error', (e) => console.log(e.code))`;
      const wrapped = await state.access.wrap_command([process.execPath, '-e', script]);
      if (!wrapped.ok) throw new Error(wrapped.error);
      const result = await runProcess(wrapped.argv, { cwd: p, mergeStderr: true });
      expect(result.output).not.toContain('reached');
      expect(result.output).toMatch(/ECONNREFUSED|ENOTSOCK|EACCES|ENOENT/);
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    }
  });
});
