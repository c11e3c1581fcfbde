// Where a tool call's paths lie (issue 19): the project, the sensitive places, and what the
// approval lists, the sandbox resolver and the sensitive-place guard make of them.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

import type { ApprovalResult, ToolCall } from '../../src/core/approval/chain.js';
import { approveList } from '../../src/core/approval/presets.js';
import {
  type ApprovalHooks,
  FRONTMATTER_RESOLVER,
  CONFIG_RESOLVER,
  SANDBOX_RESOLVER,
  buildChain,
} from '../../src/core/approval/resolvers.js';
import {
  type CallScope,
  SENSITIVE_GUARD,
  type ScopeFacts,
  callScope,
  guardSensitive,
  projectDirs,
  scopeFacts,
} from '../../src/core/approval/scope.js';
import { sensitiveEntries } from '../../src/core/tools/sandbox/sensitive.js';
import { fileTempDir } from '../helpers/temp.js';

const dir = fileTempDir('flemma-scope-');
let root: string;
let home: string;
let project: string;

beforeAll(() => {
  root = dir();
  home = dir('home');
  project = dir('home', 'project');
  dir('home', 'project', 'src');
  dir('home', '.ssh');
  writeFileSync(join(home, '.ssh', 'id_ed25519'), 'key\n');
  writeFileSync(join(project, '.env'), 'A=1\n');
  writeFileSync(join(home, 'elsewhere.txt'), 'x\n');
  symlinkSync(join(home, '.ssh'), join(project, 'keys'));
});

function facts(over: Partial<ScopeFacts> = {}): ScopeFacts {
  return {
    cwd: project,
    filename: join(project, 'chat.chat'),
    home,
    roots: [],
    fileBase: project,
    toolCwd: () => project,
    runsCommands: (tool) => tool === 'bash',
    sensitive: sensitiveEntries(undefined, {
      home,
      env: {},
      editorDirs: { data: join(home, '.local', 'share', 'nvim') },
    }).entries,
    ...over,
  };
}

const call = (toolName: string, input: unknown = {}): ToolCall => ({
  toolName,
  input,
  bufnr: 1,
  toolId: 'toolu_1',
});

describe('the project', () => {
  it('is the cwd, the chat directory and the roots, without / and the home directory', () => {
    const chats = join(root, 'chats');
    mkdirSync(chats, { recursive: true });
    expect(
      projectDirs({
        cwd: project,
        filename: join(chats, 'a.chat'),
        home,
        roots: ['/', join(root, 'data')],
      }),
    ).toEqual([chats, join(root, 'data'), project].sort());
    expect(projectDirs({ cwd: home, filename: join(home, 'a.chat'), home, roots: [] })).toEqual([]);
    expect(projectDirs({ cwd: root, filename: null, home, roots: [] })).toEqual([]);
  });
});

describe('callScope', () => {
  it('takes read/write/edit paths against the file base, and resolves links', () => {
    const inside = callScope('read', { path: 'src/a.ts' }, facts());
    expect(inside.paths).toEqual([
      {
        given: 'src/a.ts',
        abs: join(project, 'src', 'a.ts'),
        real: join(project, 'src', 'a.ts'),
        inProject: true,
      },
    ]);
    const outside = callScope('write', { path: '../elsewhere.txt' }, facts());
    expect(outside.paths?.[0]).toMatchObject({
      real: join(home, 'elsewhere.txt'),
      inProject: false,
    });
    const link = callScope('edit', { path: 'keys/id_ed25519' }, facts());
    expect(link.paths?.[0]?.real).toBe(join(home, '.ssh', 'id_ed25519'));
    expect(link.paths?.[0]?.sensitive?.label).toBe('~/.ssh');
    expect(
      callScope('read', { path: '~/.ssh/id_ed25519' }, facts()).paths?.[0]?.sensitive?.label,
    ).toBe('~/.ssh');
    expect(callScope('read', { path: '.env' }, facts()).paths?.[0]).toMatchObject({
      inProject: true,
      sensitive: { label: '.env*' },
    });
    expect(callScope('read', {}, facts()).paths).toEqual([]);
  });

  it('takes ls/grep/find paths against the tool cwd, which is also their default', () => {
    const tools = facts({ toolCwd: (tool) => (tool === 'grep' ? join(project, 'src') : project) });
    expect(callScope('grep', { pattern: 'x' }, tools).paths?.[0]).toMatchObject({
      given: join(project, 'src'),
      inProject: true,
    });
    expect(callScope('grep', { path: '..' }, tools).paths?.[0]?.real).toBe(project);
    expect(callScope('ls', { path: '~' }, tools).paths?.[0]).toMatchObject({
      real: home,
      inProject: false,
    });
  });

  it('gives a command tool its working directory, and other tools nothing', () => {
    expect(callScope('bash', { command: 'ls' }, facts()).cwd).toMatchObject({ inProject: true });
    expect(
      callScope('bash', { command: 'ls' }, facts({ toolCwd: () => join(home, '.ssh') })).cwd,
    ).toMatchObject({ inProject: false, sensitive: { label: '~/.ssh' } });
    const other = callScope('calculator', { expression: '1' }, facts());
    expect(other.paths).toBeUndefined();
    expect(other.cwd).toBeUndefined();
  });
});

describe('scopeFacts', () => {
  it('starts the file tools at the first root while the sandbox confines them', () => {
    const data = join(root, 'data');
    mkdirSync(data, { recursive: true });
    const input = {
      facts: { cwd: project, filename: join(project, 'chat.chat'), sandbox_override: null },
      home,
      env: {},
      tools: { bash: { cwd: 'urn:flemma:buffer:path' }, sensitive_paths: ['secret'] },
      sandbox: { roots: [{ name: 'data', path: data }] },
      runsCommands: () => false,
    };
    const built = scopeFacts(input).facts;
    expect(built.roots).toEqual([data]);
    expect(built.fileBase).toBe(data);
    expect(built.toolCwd('bash')).toBe(project);
    expect(built.toolCwd('ls')).toBe(project);
    expect(built.sensitive.some((entry) => entry.label === 'secret')).toBe(true);
    const off = scopeFacts({ ...input, facts: { ...input.facts, sandbox_override: false } }).facts;
    expect(off.fileBase).toBe(project);
    expect(off.roots).toEqual([data]);
  });
});

describe('the approval lists and the sandbox resolver', () => {
  const $default = { kind: 'list' as const, list: approveList(['$default']) };
  const tools: NonNullable<ApprovalHooks['tools']> = {
    get: (name) => (name === 'bash' ? { canAutoApproveIfSandboxed: true } : {}),
  };

  async function decide(
    toolName: string,
    input: unknown,
    options: { frontmatter?: boolean; scopeFacts?: ScopeFacts; sandbox?: boolean } = {},
  ): Promise<ApprovalResult> {
    const { chain } = buildChain(
      { autoApprove: $default },
      { tools, sandboxActive: () => options.sandbox ?? true },
    );
    const scope = callScope(toolName, input, options.scopeFacts ?? facts());
    return chain.decide(call(toolName, input), {
      scope,
      ...(options.frontmatter === true ? { frontmatter: $default } : {}),
    });
  }

  it('approve a file in the project, as before', async () => {
    expect(await decide('read', { path: 'src/a.ts' })).toMatchObject({
      decision: 'approve',
      resolver: CONFIG_RESOLVER,
    });
    expect(await decide('write', { path: 'src/new.ts' }, { frontmatter: true })).toMatchObject({
      decision: 'approve',
      resolver: FRONTMATTER_RESOLVER,
    });
  });

  it('pass, with a note, for a path outside the project or a sensitive place', async () => {
    const outside = await decide('read', { path: '../elsewhere.txt' });
    expect(outside).toMatchObject({ decision: 'require_approval', resolver: null });
    const notes = outside.trace.find((t) => t.resolver === CONFIG_RESOLVER)?.notes ?? [];
    expect(notes).toEqual([
      `read of ../elsewhere.txt (${join(home, 'elsewhere.txt')}) is outside the project (${project}): only the project is approved automatically`,
    ]);
    const secret = await decide('read', { path: '.env' }, { frontmatter: true });
    expect(secret.decision).toBe('require_approval');
    expect(secret.trace.find((t) => t.resolver === FRONTMATTER_RESOLVER)?.notes).toEqual([
      `read of .env (${join(project, '.env')}) touches a sensitive place, .env* (built in): it is never approved automatically`,
    ]);
    const data = join(home, '.local', 'share', 'nvim', 'site', 'plugin', 'x.lua');
    expect((await decide('write', { path: data })).decision).toBe('require_approval');
  });

  it('let the sandbox approve a command only in the project, away from sensitive places', async () => {
    expect(await decide('bash', { command: 'ls' })).toMatchObject({
      decision: 'approve',
      resolver: SANDBOX_RESOLVER,
    });
    const away = await decide(
      'bash',
      { command: 'ls' },
      { scopeFacts: facts({ toolCwd: () => home }) },
    );
    expect(away).toMatchObject({ decision: 'require_approval', resolver: null });
    expect(away.trace.find((t) => t.resolver === SANDBOX_RESOLVER)?.notes[0]).toMatch(
      /^bash running in .* is outside the project/,
    );
    const inactive = await decide('bash', { command: 'ls' }, { sandbox: false });
    expect(inactive.trace.find((t) => t.resolver === SANDBOX_RESOLVER)?.notes[0]).toMatch(
      /not the built-in bubblewrap/,
    );
  });

  it('let the sandbox approve nothing when the working directory is not known', async () => {
    const { chain } = buildChain({ autoApprove: $default }, { tools, sandboxActive: () => true });
    const result = await chain.decide(call('bash', { command: 'ls' }), {});
    expect(result.decision).toBe('require_approval');
  });
});

describe('the sensitive-place guard', () => {
  const approved = (resolver: string | null): ApprovalResult => ({
    decision: 'approve',
    resolver,
    trace: [],
    skipped: [],
  });
  const sensitiveScope = (): CallScope => callScope('read', { path: '~/.ssh/id_ed25519' }, facts());

  it('turns any approval of a sensitive place into a question, naming the place and the approver', () => {
    const result = guardSensitive(approved('urn:flemma:approval:yolo'), sensitiveScope(), 'read');
    expect(result).toMatchObject({ decision: 'require_approval', resolver: SENSITIVE_GUARD });
    expect(result.trace.at(-1)?.notes[0]).toBe(
      `read of ~/.ssh/id_ed25519 (${join(home, '.ssh', 'id_ed25519')}) touches a sensitive place, ~/.ssh (built in): urn:flemma:approval:yolo approved it, but a sensitive place is never approved automatically`,
    );
  });

  it('leaves denials, questions, other places and tools without known paths alone', () => {
    const deny: ApprovalResult = { ...approved('x'), decision: 'deny' };
    expect(guardSensitive(deny, sensitiveScope(), 'read')).toBe(deny);
    const fine = approved('x');
    expect(guardSensitive(fine, callScope('read', { path: 'src/a.ts' }, facts()), 'read')).toBe(
      fine,
    );
    expect(
      guardSensitive(fine, callScope('bash', { command: 'cat ~/.ssh/x' }, facts()), 'bash'),
    ).toBe(fine);
    expect(guardSensitive(fine, undefined, 'read')).toBe(fine);
  });
});
