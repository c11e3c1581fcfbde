import { describe, expect, it } from 'vitest';
import {
  type ApprovalCall,
  BUILTIN_PRESETS,
  RESOLVER_CATCH_ALL,
  RESOLVER_CONFIG,
  RESOLVER_SANDBOX,
  ResolverChain,
  buildChain,
  expandList,
  functionAnswer,
  listDecision,
  presetTable,
  statusFor,
} from '../../src/core/approval/policy.js';

const call = (toolName: string, input: unknown = {}): ApprovalCall => ({
  bufnr: 1,
  toolId: `toolu_${toolName}`,
  toolName,
  input,
});

describe('the resolver chain', () => {
  it('asks by priority (high first), ties by name, and the first decision wins', async () => {
    const chain = new ResolverChain();
    const asked: string[] = [];
    const answer = (name: string, value: unknown) => () => {
      asked.push(name);
      return value;
    };
    chain.register('b-low', { priority: 10, resolve: answer('b-low', 'deny') });
    chain.register('z-mid', { priority: 50, resolve: answer('z-mid', undefined) });
    chain.register('a-mid', { priority: 50, resolve: answer('a-mid', null) });
    chain.register('top', { priority: 200, resolve: answer('top', undefined) });
    const outcome = await chain.decide(call('bash'));
    expect(asked).toEqual(['top', 'a-mid', 'z-mid', 'b-low']);
    expect(outcome).toEqual({ decision: 'deny', resolver: 'b-low', skipped: [] });
  });

  it('defaults to require_approval with no resolver named', async () => {
    const chain = new ResolverChain();
    chain.register('pass', { resolve: () => undefined });
    expect(await chain.decide(call('bash'))).toEqual({
      decision: 'require_approval',
      resolver: null,
      skipped: [],
    });
  });

  it('skips throwing and junk resolvers, recording why, and goes on', async () => {
    const chain = new ResolverChain();
    chain.register('throws', {
      priority: 90,
      resolve: () => {
        throw new Error('boom');
      },
    });
    chain.register('junk', { priority: 80, resolve: () => 'yes please' });
    chain.register('bool', { priority: 70, resolve: () => true });
    chain.register('async', { priority: 60, resolve: () => Promise.resolve('approve') });
    const outcome = await chain.decide(call('read'));
    expect(outcome.decision).toBe('approve');
    expect(outcome.resolver).toBe('async');
    expect(outcome.skipped.map((s) => s.name)).toEqual(['throws', 'junk', 'bool']);
    expect(outcome.skipped[0]?.reason).toBe('raised: boom');
    expect(outcome.skipped[1]?.reason).toMatch(/returned "yes please"/);
  });

  it('register replaces, unregister says whether it existed, getAll is a copy', () => {
    const chain = new ResolverChain();
    chain.register('x', { priority: 1, resolve: () => 'deny' });
    chain.register('x', { priority: 7, resolve: () => 'approve', description: 'second' });
    expect(chain.count()).toBe(1);
    expect(chain.get('x')).toMatchObject({ priority: 7, description: 'second' });
    const all = chain.getAll();
    (all[0] as { priority: number }).priority = 999;
    expect(chain.get('x')?.priority).toBe(7);
    expect(chain.unregister('x')).toBe(true);
    expect(chain.unregister('x')).toBe(false);
    expect(() => {
      chain.register('bad', { priority: 1.5, resolve: () => undefined });
    }).toThrow(/integer/);
  });

  it('maps decisions to placeholder statuses', () => {
    expect(statusFor('approve')).toBe('approved');
    expect(statusFor('require_approval')).toBe('pending');
    expect(statusFor('deny')).toBe('denied');
  });
});

describe('presets', () => {
  const table = presetTable(undefined);

  it('$readonly and $default', () => {
    expect([...expandList({ items: ['$readonly'] }, table).approve].sort()).toEqual([
      'find',
      'grep',
      'ls',
      'read',
    ]);
    expect([...expandList({ items: ['$default'] }, table).approve].sort()).toEqual([
      'edit',
      'find',
      'grep',
      'ls',
      'read',
      'write',
    ]);
    expect(BUILTIN_PRESETS['$default']?.approve).toContain('$readonly');
  });

  it('unions presets and names; deny wins over approve from any preset', () => {
    const user = presetTable({
      $yolo: { approve: ['bash', 'read', 'write', 'edit'] },
      '$no-bash': { deny: ['bash'] },
    });
    const expansion = expandList({ items: ['$yolo', '$no-bash', 'calculator'] }, user);
    expect(listDecision(expansion, 'bash')).toBe('deny');
    expect(listDecision(expansion, 'write')).toBe('approve');
    expect(listDecision(expansion, 'calculator')).toBe('approve');
    expect(listDecision(expansion, 'grep')).toBeUndefined();
  });

  it('user presets override built-ins by name', () => {
    const user = presetTable({ $readonly: { approve: ['ls'] } });
    expect(listDecision(expandList({ items: ['$readonly'] }, user), 'read')).toBeUndefined();
    expect(listDecision(expandList({ items: ['$default'] }, user), 'ls')).toBe('approve');
  });

  it('a name removed from a list holding a preset is filtered out after expansion', () => {
    const expansion = expandList({ items: ['$default'], removed: ['write'] }, table);
    expect(listDecision(expansion, 'write')).toBeUndefined();
    expect(listDecision(expansion, 'edit')).toBe('approve');
  });

  it('reports unknown presets and survives cycles', () => {
    const cyclic = presetTable({ $a: { approve: ['$b', 'x'] }, $b: { approve: ['$a', 'y'] } });
    const expansion = expandList({ items: ['$a', '$nope'] }, cyclic);
    expect([...expansion.approve].sort()).toEqual(['x', 'y']);
    expect(expansion.unknown).toEqual(['$nope']);
  });
});

describe('the built-in chain', () => {
  const base = {
    presets: undefined,
    requireApproval: true,
    autoApproveSandboxed: true,
    sandboxCapable: (name: string) => name === 'bash',
    sandboxActive: () => Promise.resolve(true),
  };

  it('config list: $default approves read, leaves bash to the sandbox resolver', async () => {
    const { chain } = buildChain({ ...base, autoApprove: { items: ['$default'] } });
    expect(await chain.decide(call('read'))).toMatchObject({
      decision: 'approve',
      resolver: RESOLVER_CONFIG,
    });
    expect(await chain.decide(call('bash'))).toMatchObject({
      decision: 'approve',
      resolver: RESOLVER_SANDBOX,
    });
    expect(await chain.decide(call('calculator'))).toMatchObject({
      decision: 'require_approval',
      resolver: null,
    });
  });

  it('the sandbox resolver needs auto_approve_sandboxed, an active sandbox, and bash not removed', async () => {
    const off = buildChain({
      ...base,
      autoApproveSandboxed: false,
      autoApprove: { items: ['$default'] },
    });
    expect((await off.chain.decide(call('bash'))).decision).toBe('require_approval');
    const inactive = buildChain({
      ...base,
      sandboxActive: () => Promise.resolve(false),
      autoApprove: { items: ['$default'] },
    });
    expect((await inactive.chain.decide(call('bash'))).decision).toBe('require_approval');
    const removed = buildChain({
      ...base,
      autoApprove: { items: ['$default'], removed: ['bash'] },
    });
    expect((await removed.chain.decide(call('bash'))).decision).toBe('require_approval');
  });

  it('function form: true, false, "deny", nothing', async () => {
    const answers: Record<string, unknown> = { a: true, b: false, c: 'deny', d: undefined };
    const { chain } = buildChain({
      ...base,
      autoApprove: 'function',
      callConfig: (c) => Promise.resolve(answers[c.toolName]),
      sandboxCapable: () => false,
    });
    expect((await chain.decide(call('a'))).decision).toBe('approve');
    expect((await chain.decide(call('b'))).decision).toBe('require_approval');
    expect((await chain.decide(call('c'))).decision).toBe('deny');
    expect(await chain.decide(call('d'))).toMatchObject({
      decision: 'require_approval',
      resolver: null,
    });
    expect(functionAnswer(true)).toBe('approve');
  });

  it('a module path is its own resolver at priority 100', async () => {
    const { chain } = buildChain({
      ...base,
      autoApprove: 'function',
      moduleName: 'my.policy',
      callConfig: () => Promise.resolve('deny'),
    });
    expect(chain.get('my.policy')?.priority).toBe(100);
    expect(await chain.decide(call('x'))).toMatchObject({
      decision: 'deny',
      resolver: 'my.policy',
    });
  });

  it('catch-all only without require_approval, and higher resolvers still win over it', async () => {
    const strict = buildChain({ ...base, autoApprove: { items: [] } });
    expect(strict.chain.get(RESOLVER_CATCH_ALL)).toBeUndefined();
    const open = buildChain({ ...base, requireApproval: false, autoApprove: { items: [] } });
    expect(await open.chain.decide(call('anything'))).toMatchObject({
      decision: 'approve',
      resolver: RESOLVER_CATCH_ALL,
    });
    open.chain.register('policy', { resolve: (c) => (c.toolName === 'bash' ? 'deny' : undefined) });
    expect((await open.chain.decide(call('bash'))).decision).toBe('deny');
  });

  it('reports unknown presets of the config list', () => {
    expect(buildChain({ ...base, autoApprove: { items: ['$defualt'] } }).unknownPresets).toEqual([
      '$defualt',
    ]);
  });
});
