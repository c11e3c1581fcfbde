// Flynn-style tools in the core (docs/tools.md, "Flynn-style tools", docs/policy.md): the registry contract and provider-safe names, the three module
// patterns, tool policy (profiles, globs, groups, layers), hooks, autonomy, the approval
// resolvers in the chain, audit entries and truncation.
import { describe, expect, it, vi } from 'vitest';
import { ToolRegistry, type ToolDefinition } from '../../src/core/tools/registry.js';
import { API_NAME_PATTERN, apiToolName } from '../../src/core/tools/names.js';
import {
  ToolPolicy,
  effectivePolicy,
  getAction,
  policyConfig,
  resolveAutonomy,
} from '../../src/core/tools/policy.js';
import {
  type Tool,
  type ToolDeps,
  type ToolRegistryApi,
  collectFlynnTools,
  executeTool,
  hasFlynnExports,
} from '../../src/core/tools/flynn.js';
import { ApprovalChain } from '../../src/core/approval/chain.js';
import {
  AUTONOMY_RESOLVER,
  HOOKS_RESOLVER,
  POLICY_RESOLVER,
  autonomyResolver,
  hooksResolver,
  policyResolver,
} from '../../src/core/approval/flynn.js';
import { buildChain, listSetting } from '../../src/core/approval/resolvers.js';
import { approveList } from '../../src/core/approval/presets.js';
import { applyFrontmatter, jsonFrontmatter } from '../../src/core/config/frontmatter.js';
import { createExecutionContext } from '../../src/core/tools/context.js';
import { auditEntry } from '../../src/core/tools/audit.js';
import { Redactor } from '../../src/core/secrets/redact.js';
import { truncateForResult } from '../../src/core/tools/truncate.js';
import { createBuiltinTools } from '../../src/core/tools/builtins.js';
import { ProcessManager } from '../../src/core/tools/background.js';
import { Probes } from '../../src/core/tools/probes.js';

function def(name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name,
    description: `the ${name} tool`,
    inputSchema: { type: 'object', properties: {} },
    execute: () => Promise.resolve({ ok: true, output: name }),
    ...extra,
  };
}

const ctx = createExecutionContext({ bufnr: 1, cwd: '/tmp', timeout: 30, toolId: 't1' }, '/home/u');

/** Flynn's built-in tool names (its TOOLS.md), for the profile scenarios. */
const FLYNN_BUILTINS = [
  'file.read',
  'file.write',
  'file.edit',
  'file.list',
  'file.patch',
  'shell.exec',
  'process.start',
  'process.status',
  'process.output',
  'process.kill',
  'process.list',
  'web.fetch',
  'web.search',
  'memory.read',
  'memory.write',
  'memory.search',
  'system.info',
];

describe('the registry contract (F-01 … F-04)', () => {
  it('F-01: adding a name twice throws "already registered" and keeps one tool', () => {
    const r = new ToolRegistry();
    r.add(def('echo'));
    expect(() => {
      r.add(def('echo'));
    }).toThrow(/already registered/);
    expect(r.list()).toHaveLength(1);
  });

  it('F-02: API names are provider-safe and map back to the definition', () => {
    const r = new ToolRegistry();
    r.add(def('file.read'));
    r.add(def('mcp:github:create_issue'));
    expect(r.apiName('file.read')).toBe('file_read');
    expect(r.apiName('mcp:github:create_issue')).toBe('mcp__github__create_issue');
    for (const tool of r.list()) expect(r.apiName(tool.name)).toMatch(API_NAME_PATTERN);
    expect(r.getByApiName('file_read')?.name).toBe('file.read');
    expect(r.getByApiName('mcp__github__create_issue')?.name).toBe('mcp:github:create_issue');
    expect(r.getByApiName('nope')).toBeUndefined();
    // A .chat file may hold either name.
    expect(r.resolve('file_read')?.name).toBe('file.read');
    expect(r.canonicalName('file_read')).toBe('file.read');
    expect(r.canonicalName('file.read')).toBe('file.read');
  });

  it('F-02: a name longer than 64 characters gets a hash suffix, and two such names differ', () => {
    const long = `mcp:${'s'.repeat(30)}:${'t'.repeat(40)}`;
    const a = apiToolName(`${long}_a`);
    const b = apiToolName(`${long}_b`);
    expect(a).toMatch(API_NAME_PATTERN);
    expect(a).toHaveLength(64);
    expect(a).not.toBe(b);
    expect(apiToolName('weird name/with*chars')).toBe('weird_name_with_chars');
    // Idempotent: an API name is its own API name.
    expect(apiToolName(a)).toBe(a);
  });

  it('F-03: a tool whose API name another tool has is refused', () => {
    const r = new ToolRegistry();
    r.add(def('a.b'));
    expect(() => {
      r.add(def('a_b'));
    }).toThrow('API name collision: a_b');
    // Replacing the same tool is not a collision (Lua tools override built-ins that way).
    r.register(def('a.b', { description: 'new' }));
    expect(r.get('a.b')?.description).toBe('new');
    // Once the holder is gone the name is free again.
    r.unregister('a.b');
    r.add(def('a_b'));
    expect(r.getByApiName('a_b')?.name).toBe('a_b');
  });

  it('F-04: an unregistered MCP tool is gone and executing it says so', async () => {
    const r = new ToolRegistry();
    r.add(def('mcp:fs:read_file'));
    r.unregister('mcp:fs:read_file');
    expect(r.has('mcp:fs:read_file')).toBe(false);
    expect(r.list().map((t) => t.name)).not.toContain('mcp:fs:read_file');
    expect(await executeTool(r, 'mcp:fs:read_file', {}, ctx)).toEqual({
      success: false,
      output: '',
      error: "Tool 'mcp:fs:read_file' not found",
    });
  });
});

describe('tools from a module: the three patterns', () => {
  function harness(): {
    api: ToolRegistryApi;
    deps: ToolDeps;
    registry: ToolRegistry;
    problems: string[];
    add: (tool: Tool) => void;
  } {
    const registry = new ToolRegistry();
    const toDef = (tool: Tool): ToolDefinition => ({
      ...def(tool.name),
      description: tool.description,
      inputSchema: tool.inputSchema,
    });
    const api = {
      register: (tool: Tool) => {
        registry.add(toDef(tool));
      },
      unregister: (name: string) => registry.unregister(name),
      has: (name: string) => registry.has(name),
    } as unknown as ToolRegistryApi;
    const deps: ToolDeps = {
      registry: api,
      getConfig: (key) => (key === 'github' ? { token_env: 'GH' } : undefined),
      log: { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() },
      modulePath: '/x/tools.mjs',
    };
    return {
      api,
      deps,
      registry,
      problems: [],
      add: (tool) => {
        api.register(tool);
      },
    };
  }
  const tool = (name: string): Tool => ({
    name,
    description: name,
    inputSchema: { type: 'object', properties: {} },
    execute: () => ({ success: true, output: name }),
  });

  it('static: `tool`, `tools` and a default export', async () => {
    const h = harness();
    const loaded = { tool: tool('one'), tools: [tool('two'), tool('three')] };
    expect(hasFlynnExports(loaded)).toBe(true);
    await collectFlynnTools(loaded, h.deps, h.add, (p) => h.problems.push(p));
    await collectFlynnTools({ default: tool('four') }, h.deps, h.add, (p) => h.problems.push(p));
    expect(h.registry.list().map((t) => t.name)).toEqual(['four', 'one', 'three', 'two']);
    expect(h.problems).toEqual([]);
  });

  it('factory: createTool receives its dependencies', async () => {
    const h = harness();
    const createTool = vi.fn((deps: ToolDeps): Tool => {
      const config = deps.getConfig('github');
      return { ...tool('git.status'), description: `token from ${String(config?.['token_env'])}` };
    });
    await collectFlynnTools({ createTool }, h.deps, h.add, (p) => h.problems.push(p));
    expect(createTool).toHaveBeenCalledWith(h.deps);
    expect(h.registry.get('git.status')?.description).toBe('token from GH');
  });

  it('multi-factory: createTools returns several tools sharing one dependency', async () => {
    const h = harness();
    const shared = { calls: 0 };
    const createTools = async (): Promise<Tool[]> => {
      await Promise.resolve();
      return ['browser.navigate', 'browser.screenshot'].map((name) => ({
        ...tool(name),
        execute: () => ({ success: true, output: String(++shared.calls) }),
      }));
    };
    await collectFlynnTools({ default: { createTools } }, h.deps, h.add, (p) => h.problems.push(p));
    expect(h.registry.list().map((t) => t.name)).toEqual([
      'browser.navigate',
      'browser.screenshot',
    ]);
  });

  it('setup(registry) and the problems a module can have, each reported, the rest loaded', async () => {
    const h = harness();
    await collectFlynnTools(
      {
        tools: [tool('dup'), tool('dup'), { name: 'no-execute' }],
        createTools: () => tool('not-an-array'),
        createTool: () => {
          throw new Error('no token');
        },
        setup: (registry: ToolRegistryApi) => {
          registry.register(tool('from.setup'));
        },
      },
      h.deps,
      h.add,
      (p) => h.problems.push(p),
    );
    expect(h.registry.list().map((t) => t.name)).toEqual(['dup', 'from.setup']);
    expect(h.problems).toEqual([
      "tools[1] ('dup'): Tool 'dup' is already registered",
      'tools[2] is not a tool (it needs a string name and an execute function)',
      'createTool() failed: no token',
      'createTools() must return an array of tools',
    ]);
  });
});

describe('tool policy (F-05 … F-10)', () => {
  it('F-05: minimal lists file.read, file.list and web.fetch; shell.exec is refused unrun', async () => {
    const policy = new ToolPolicy({ profile: 'minimal' });
    expect(policy.filter(FLYNN_BUILTINS.map((name) => ({ name }))).map((t) => t.name)).toEqual([
      'file.read',
      'file.list',
      'web.fetch',
    ]);
    const r = new ToolRegistry();
    const spy = vi.fn(() => Promise.resolve({ ok: true as const, output: 'hi' }));
    r.add(def('shell.exec', { execute: spy }));
    const result = await executeTool(r, 'shell.exec', { command: 'echo hi' }, ctx, policy);
    expect(result.error).toMatch(/not allowed by tool policy/);
    expect(result.success).toBe(false);
    expect(spy).toHaveBeenCalledTimes(0);
  });

  it("F-05 with Flemma's own tools: their Flynn aliases put them in the profiles", () => {
    const names = (profile: string): string[] =>
      new ToolPolicy({ profile })
        .filter(createBuiltinTools({ processes: new ProcessManager(), probes: new Probes() }))
        .map((t) => t.name);
    expect(names('minimal')).toEqual(['read', 'ls', 'grep', 'find', 'web_fetch']);
    expect(names('coding')).toEqual(
      expect.arrayContaining(['bash', 'write', 'edit', 'process_start']),
    );
    expect(names('coding')).not.toContain('calculator');
  });

  it('F-06: minimal ⊂ messaging ⊂ coding ⊂ full, and full includes MCP tools', () => {
    const all = [...FLYNN_BUILTINS, 'mcp:fs:read_file', 'mcp:gh:issue'].map((name) => ({ name }));
    const set = (profile: string): string[] =>
      new ToolPolicy({ profile }).filter(all).map((t) => t.name);
    const [minimal, messaging, coding, full] = ['minimal', 'messaging', 'coding', 'full'].map(set);
    const subset = (a: string[] = [], b: string[] = []): void => {
      for (const name of a) expect(b).toContain(name);
      expect(b.length).toBeGreaterThan(a.length);
    };
    subset(minimal, messaging);
    subset(messaging, coding);
    subset(coding, full);
    expect(full).toEqual(all.map((t) => t.name));
    expect(coding).not.toContain('mcp:fs:read_file');
  });

  it('F-07: deny shell.* takes shell.exec but not shellcheck.run (the dot is literal)', () => {
    const policy = new ToolPolicy({ profile: 'full', deny: ['shell.*'] });
    expect(policy.isAllowed('shell.exec')).toBe(false);
    expect(policy.isAllowed('shellcheck.run')).toBe(true);
    expect(policy.isAllowed('file.read')).toBe(true);
    // Flemma's bash is shell.exec by alias.
    expect(policy.isAllowed({ name: 'bash', aliases: ['shell.exec'] })).toBe(false);
  });

  it('F-08: coding minus group:runtime', () => {
    const policy = new ToolPolicy({ profile: 'coding', deny: ['group:runtime'] });
    expect(policy.isAllowed('shell.exec')).toBe(false);
    expect(policy.isAllowed('process.kill')).toBe(false);
    expect(policy.isAllowed('file.write')).toBe(true);
    expect(policy.isAllowed('bash')).toBe(false);
    expect(policy.isAllowed('write')).toBe(true);
    // A tool joins a group by declaring it.
    expect(policy.isAllowed({ name: 'deploy', groups: ['runtime'] })).toBe(false);
  });

  it('F-09: deny wins over allow', () => {
    const policy = new ToolPolicy({ allow: ['shell.exec'], deny: ['shell.*'] });
    expect(policy.explain('shell.exec')).toEqual({
      allowed: false,
      reason: "'shell.exec' matches deny pattern 'shell.*'",
    });
  });

  it('F-10: a buffer frontmatter deny applies to that buffer only', () => {
    const global = { tools: { policy: { profile: 'coding', allow: [], deny: [] } } };
    const parsed = jsonFrontmatter(
      '{"flemma": {"tools": {"policy": {"deny": ["file.write"]}}}}',
      2,
    );
    if ('error' in parsed) throw new Error(parsed.error);
    const names = { enabled: [], has: () => true, suggest: () => undefined };
    const bufferA = applyFrontmatter(global, parsed.ops, names, { trusted: true }).config as {
      tools: Record<string, unknown>;
    };
    expect(effectivePolicy(bufferA.tools, undefined).isAllowed('file.write')).toBe(false);
    expect(effectivePolicy(global.tools, undefined).isAllowed('file.write')).toBe(true);
  });

  it('per-provider overrides, user profiles, the allow-list form and an unknown profile', () => {
    const config = policyConfig({
      profile: 'coding',
      profiles: {
        reviewer: { extends: 'minimal', allow: ['git.*'], deny: ['web_fetch'] },
        tiny: ['read'],
      },
      providers: {
        openai: { profile: 'reviewer', deny: ['git.push'] },
        gemini: { allow: ['mcp:*'] },
      },
    });
    const anthropic = new ToolPolicy(config, 'anthropic');
    const openai = new ToolPolicy(config, 'openai');
    const gemini = new ToolPolicy(config, 'gemini');
    expect(anthropic.isAllowed('bash')).toBe(true);
    expect(openai.isAllowed('bash')).toBe(false);
    expect(openai.isAllowed('read')).toBe(true);
    expect(openai.isAllowed('git.log')).toBe(true);
    expect(openai.isAllowed('git.push')).toBe(false);
    expect(openai.isAllowed('web_fetch')).toBe(false);
    expect(gemini.isAllowed('mcp:gh:issue')).toBe(true);
    expect(anthropic.isAllowed('mcp:gh:issue')).toBe(false);
    expect(new ToolPolicy({ ...config, profile: 'tiny' }).isAllowed('ls')).toBe(false);
    const allowList = new ToolPolicy({ allow: ['read', 'grep'] });
    expect(allowList.isAllowed('read')).toBe(true);
    expect(allowList.isAllowed('ls')).toBe(false);
    expect(new ToolPolicy({}).permissive).toBe(true);
    const typo = new ToolPolicy({ profile: 'codng' });
    expect(typo.isAllowed('read')).toBe(false);
    expect(typo.warnings[0]).toMatch(/unknown profile 'codng'.*no tool is offered/);
    const loop = new ToolPolicy({
      profile: 'a',
      profiles: { a: { extends: 'b' }, b: { extends: 'a' } },
    });
    expect(loop.isAllowed('read')).toBe(false);
    expect(loop.warnings[0]).toMatch(/extends itself/);
  });
});

describe('hooks and autonomy (F-11, F-13)', () => {
  it('F-11: getAction', () => {
    const hooks = { confirm: ['shell.*', 'file.write'], log: ['web.*'] };
    expect(getAction('shell.exec', hooks)).toBe('confirm');
    expect(getAction('web.fetch', hooks)).toBe('log');
    expect(getAction('file.read', hooks)).toBe('silent');
    expect(getAction('x.y', hooks)).toBe('silent');
  });

  it('F-13: conservative overrides silent for file.write, not for file.read', async () => {
    expect(resolveAutonomy('file.write', 'silent', 'conservative')).toMatchObject({
      action: 'confirm',
      overridden: true,
      reason: expect.stringMatching(/autonomy/) as unknown,
    });
    expect(resolveAutonomy('file.read', 'silent', 'conservative')).toMatchObject({
      action: 'silent',
      overridden: false,
    });
    // Through the chain: the hook resolver asks, and says why.
    const chain = new ApprovalChain<unknown>();
    const lookup = (): undefined => undefined;
    chain.register(HOOKS_RESOLVER, hooksResolver({ silent: ['*'] }, 'conservative', lookup));
    chain.register(AUTONOMY_RESOLVER, autonomyResolver('conservative', lookup));
    const call = (toolName: string) => ({ toolName, input: {}, bufnr: 1, toolId: 't' });
    const write = await chain.decide(call('file.write'));
    expect(write.decision).toBe('require_approval');
    expect(write.resolver).toBe(HOOKS_RESOLVER);
    expect(write.trace[0]?.notes.join(' ')).toMatch(/overridden: autonomy level 'conservative'/);
    const read = await chain.decide(call('file.read'));
    expect(read.decision).toBe('approve');
    expect(read.trace[0]?.notes.join(' ')).not.toMatch(/overridden/);
  });

  it('autonomy without hooks: conservative asks for dangerous tools, autonomous approves the rest', async () => {
    const lookup = (name: string) => (name === 'deploy' ? { name, dangerous: true } : undefined);
    const conservative = autonomyResolver('conservative', lookup);
    const autonomous = autonomyResolver('autonomous', lookup);
    const note = vi.fn();
    const call = (toolName: string) => ({ toolName, input: {}, bufnr: 1, toolId: 't' });
    expect(await conservative.resolve(call('bash'), undefined, note)).toBe('require_approval');
    expect(await conservative.resolve(call('deploy'), undefined, note)).toBe('require_approval');
    expect(await conservative.resolve(call('read'), undefined, note)).toBeUndefined();
    expect(await autonomous.resolve(call('read'), undefined, note)).toBe('approve');
    expect(await autonomous.resolve(call('bash'), undefined, note)).toBeUndefined();
  });
});

describe('the approval chain with the Flynn resolvers (F-12, X-01 … X-03)', () => {
  const call = (toolName: string) => ({ toolName, input: {}, bufnr: 1, toolId: 'toolu_1' });

  it('F-12: a confirm hook makes the call wait for the user', async () => {
    const chain = new ApprovalChain<unknown>();
    chain.register(
      HOOKS_RESOLVER,
      hooksResolver({ confirm: ['shell.exec'] }, 'standard', () => undefined),
    );
    chain.register('catch-all', { priority: 0, resolve: () => 'approve' });
    expect((await chain.decide(call('shell.exec'))).decision).toBe('require_approval');
    expect((await chain.decide(call('file.read'))).decision).toBe('approve');
  });

  it('X-01: policy:deny at 200 beats auto_approve at 100', async () => {
    const { chain } = buildChain({ autoApprove: listSetting(approveList(['bash'])) }, {}, [
      [POLICY_RESOLVER, policyResolver(new ToolPolicy({ profile: 'minimal' }), () => undefined)],
    ]);
    const outcome = await chain.decide(call('bash'), {});
    expect(outcome).toMatchObject({ decision: 'deny', resolver: POLICY_RESOLVER });
    expect(outcome.trace[0]?.notes[0]).toMatch(/not in profile 'minimal'/);
    expect((await chain.decide(call('read'), {})).decision).toBe('require_approval');
  });

  it('X-02: a resolver at 150 that throws is skipped and the next one decides', async () => {
    const { chain } = buildChain({ autoApprove: listSetting(approveList(['read'])) }, {}, [
      [POLICY_RESOLVER, policyResolver(new ToolPolicy({ profile: 'full' }), () => undefined)],
      [
        'broken',
        {
          priority: 150,
          resolve: () => {
            throw new Error('boom');
          },
        },
      ],
    ]);
    const outcome = await chain.decide(call('read'), {});
    expect(outcome.decision).toBe('approve');
    expect(outcome.skipped).toEqual([{ resolver: 'broken', reason: 'raised an error: boom' }]);
  });

  it('X-03: when no resolver answers, the call waits for approval', async () => {
    const { chain } = buildChain({}, {}, [
      [POLICY_RESOLVER, policyResolver(new ToolPolicy({ profile: 'full' }), () => undefined)],
      [HOOKS_RESOLVER, hooksResolver({ log: ['web.*'] }, 'standard', () => undefined)],
    ]);
    expect(await chain.decide(call('write'), {})).toMatchObject({
      decision: 'require_approval',
      resolver: null,
    });
  });
});

describe('audit entries and truncation (F-15, F-19)', () => {
  it('F-19: an audit entry redacts secrets in the arguments', () => {
    const entry = auditEntry({
      tool: 'web.fetch',
      id: 'toolu_1',
      bufnr: 3,
      args: {
        url: 'https://example.com/?q=1',
        headers: { Authorization: 'Bearer abcdefghijklmnop', 'X-Api-Key': 'k-123' },
        body: 'token sk-abcdefghijklmnopqrstu',
        password: 'hunter2',
      },
      success: true,
      durationMs: 12.6,
      now: new Date('2026-01-02T03:04:05Z'),
    });
    expect(entry).toEqual({
      time: '2026-01-02T03:04:05.000Z',
      tool: 'web.fetch',
      id: 'toolu_1',
      bufnr: 3,
      args: {
        url: 'https://example.com/?q=1',
        headers: { Authorization: '[REDACTED]', 'X-Api-Key': '[REDACTED]' },
        body: 'token [REDACTED]',
        password: '[REDACTED]',
      },
      success: true,
      durationMs: 13,
    });
    expect(new Redactor().value(['ghp_abcdefghijklmnopqrstuvwxyz'])).toEqual(['[REDACTED]']);
  });

  it('F-15: 200 KiB of output is cut to 51 200 bytes with a marker; the spill file has it all', async () => {
    const line = 'x'.repeat(1023) + '\n';
    const text = line.repeat(200);
    expect(Buffer.byteLength(text)).toBe(204_800);
    const files = new Map<string, string>();
    const cut = await truncateForResult(
      text,
      { source: 'big', id: 'toolu_big', mode: 'head' },
      {
        writeFile: (path, data) => {
          files.set(path, Buffer.from(data).toString());
          return Promise.resolve();
        },
        tmpdir: () => '/tmp',
      },
    );
    const [kept, marker] = cut.text.split('\n\n');
    expect(Buffer.byteLength(kept ?? '')).toBeLessThanOrEqual(51_200);
    // Flemma's notice (docs/tools.md, "Execution") stands in for Flynn's marker: what was kept, of how
    // much, the limit, and where the whole output is.
    expect(marker).toBe(
      `[Showing lines 1-50 of 200 (50.0KB limit). Full output: ${cut.fullOutputPath ?? ''}]`,
    );
    expect(cut.fullOutputPath).not.toBeNull();
    expect(files.get(cut.fullOutputPath ?? '')).toHaveLength(204_800);
  });
});
