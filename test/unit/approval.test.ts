// The tool-approval policy core: the resolver chain, presets and the built-in resolvers
// (src/core/approval/). No Neovim: Lua callbacks are stood in for by plain (async) functions.

import { describe, expect, it } from 'vitest';
import {
  ApprovalChain,
  ApprovalChainError,
  DEFAULT_PRIORITY,
  type Decision,
  type ToolCall,
  statusFor,
} from '../../src/core/approval/chain.js';
import {
  BUILTIN_PRESETS,
  type ApproveList,
  applyListOps,
  approveList,
  expandApproveList,
  listDecision,
  presetTable,
  suggestPreset,
} from '../../src/core/approval/presets.js';
import {
  type ApprovalConfig,
  type ApprovalContext,
  type ApprovalHooks,
  type AutoApproveSetting,
  CATCH_ALL_RESOLVER,
  CONFIG_RESOLVER,
  FRONTMATTER_RESOLVER,
  SANDBOX_RESOLVER,
  TOOL_DEFAULT_RESOLVER,
  buildChain,
  functionAnswer,
} from '../../src/core/approval/resolvers.js';
import type { CallScope } from '../../src/core/approval/scope.js';

const call = (toolName: string, input: unknown = {}): ToolCall => ({
  toolName,
  input,
  bufnr: 7,
  toolId: 'toolu_01',
});

/** One turn of the event loop: an answer that comes asynchronously. */
const later = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A command tool's scope: its working directory inside the project. */
const IN_PROJECT: CallScope = {
  project: ['/p'],
  cwd: { given: '/p', abs: '/p', real: '/p', inProject: true },
};

const list = (items: string[], removed: string[] = []): AutoApproveSetting => ({
  kind: 'list',
  list: { items, removed },
});

const sorted = (set: ReadonlySet<string>): string[] => [...set].sort();

/** A decision and the resolver that made it (null: none did). */
const decided = (decision: Decision, resolver: string | null) => ({ decision, resolver });

/** What `$default` approves, sorted. */
const DEFAULT_APPROVED = ['edit', 'find', 'grep', 'ls', 'read', 'write'];
describe('ApprovalChain: registry', () => {
  it('defaults the priority to 50 and the description to empty', () => {
    const chain = new ApprovalChain();
    chain.register('a', { resolve: () => undefined });
    expect(DEFAULT_PRIORITY).toBe(50);
    expect(chain.get('a')).toMatchObject({ name: 'a', priority: 50, description: '' });
  });

  it('lists resolvers by priority high to low, ties by name', () => {
    const chain = new ApprovalChain();
    chain.register('m', { resolve: () => undefined, priority: 10 });
    chain.register('b', { resolve: () => undefined });
    chain.register('z', { resolve: () => undefined, priority: 100 });
    chain.register('a', { resolve: () => undefined });
    chain.register('B', { resolve: () => undefined });
    chain.register('neg', { resolve: () => undefined, priority: -5 });
    chain.register('frac', { resolve: () => undefined, priority: 50.5 });
    expect(chain.getAll().map((e) => e.name)).toEqual(['z', 'frac', 'B', 'a', 'b', 'm', 'neg']);
  });

  it('getAll is a deep copy: mutating it leaves the registry alone', () => {
    const chain = new ApprovalChain();
    chain.register('a', { resolve: () => 'approve', priority: 10, description: 'first' });
    chain.register('b', { resolve: () => 'deny', priority: 20 });
    const all = chain.getAll();
    const first = all[0];
    if (first === undefined) throw new Error('empty');
    first.priority = -100;
    first.description = 'changed';
    first.name = 'renamed';
    all.pop();
    all.push({ name: 'x', priority: 1000, description: '', resolve: () => 'approve' });
    expect(chain.count()).toBe(2);
    expect(chain.getAll().map((e) => [e.name, e.priority, e.description])).toEqual([
      ['b', 20, ''],
      ['a', 10, 'first'],
    ]);
  });

  it('get returns a copy, or undefined for an unknown name', () => {
    const chain = new ApprovalChain();
    chain.register('a', { resolve: () => undefined, priority: 3 });
    const entry = chain.get('a');
    if (entry === undefined) throw new Error('missing');
    entry.priority = 99;
    expect(chain.get('a')?.priority).toBe(3);
    expect(chain.get('nope')).toBeUndefined();
  });

  it('unregister says whether the resolver existed', () => {
    const chain = new ApprovalChain();
    chain.register('a', { resolve: () => undefined });
    chain.register('b', { resolve: () => undefined });
    expect(chain.count()).toBe(2);
    expect(chain.unregister('a')).toBe(true);
    expect(chain.unregister('a')).toBe(false);
    expect(chain.unregister('never')).toBe(false);
    expect(chain.count()).toBe(1);
    expect(chain.get('a')).toBeUndefined();
  });

  it('re-registering a name replaces the resolver', async () => {
    const chain = new ApprovalChain();
    chain.register('p', { resolve: () => 'deny', priority: 10, description: 'old' });
    chain.register('p', { resolve: () => 'approve', priority: 70 });
    expect(chain.count()).toBe(1);
    expect(chain.get('p')).toMatchObject({ priority: 70, description: '' });
    const result = await chain.decide(call('read'));
    expect(result).toMatchObject({ decision: 'approve', resolver: 'p' });
  });

  it('rejects an empty name, a missing resolve and a non-finite priority', () => {
    const chain = new ApprovalChain();
    const register = (name: string, def: { resolve: unknown; priority?: unknown }) => () => {
      chain.register(name, def as Parameters<typeof chain.register>[1]);
    };
    expect(register('', { resolve: () => undefined })).toThrow(ApprovalChainError);
    expect(register('x', { resolve: 'approve' })).toThrow(/resolve must be a function/);
    expect(register('x', { resolve: () => undefined, priority: Number.NaN })).toThrow(
      /priority must be a finite number/,
    );
    expect(register('x', { resolve: () => undefined, priority: '5' })).toThrow(/priority/);
    expect(chain.count()).toBe(0);
  });
});

describe('ApprovalChain: decide', () => {
  it('asks in priority order, ties by name, and stops at the first decision', async () => {
    const asked: string[] = [];
    const chain = new ApprovalChain();
    const resolver = (name: string, answer: unknown, priority: number): void => {
      chain.register(name, {
        priority,
        resolve: () => {
          asked.push(name);
          return answer;
        },
      });
    };
    resolver('low', 'approve', 10);
    resolver('tie-b', 'approve', 60);
    resolver('tie-a', undefined, 60);
    resolver('top', null, 100);
    resolver('deny-80', 'deny', 80);
    const result = await chain.decide(call('bash'));
    expect(asked).toEqual(['top', 'deny-80']);
    expect(result.decision).toBe('deny');
    expect(result.resolver).toBe('deny-80');
    expect(result.trace.map((t) => [t.resolver, t.outcome])).toEqual([
      ['top', 'passed'],
      ['deny-80', 'decided'],
    ]);
  });

  it('breaks a tie by name: the alphabetically first resolver decides', async () => {
    const chain = new ApprovalChain();
    chain.register('beta', { resolve: () => 'deny' });
    chain.register('alpha', { resolve: () => 'approve' });
    expect(await chain.decide(call('x'))).toMatchObject({ decision: 'approve', resolver: 'alpha' });
  });

  it('defaults to require_approval with no resolver when everyone passes', async () => {
    const empty = new ApprovalChain();
    expect(await empty.decide(call('read'))).toEqual({
      decision: 'require_approval',
      resolver: null,
      trace: [],
      skipped: [],
    });
    const chain = new ApprovalChain();
    chain.register('a', { resolve: () => undefined });
    chain.register('b', { resolve: () => null });
    chain.register('c', { resolve: () => Promise.resolve(undefined) });
    const result = await chain.decide(call('read'));
    expect(result.decision).toBe('require_approval');
    expect(result.resolver).toBeNull();
    expect(result.trace.map((t) => t.outcome)).toEqual(['passed', 'passed', 'passed']);
  });

  it('skips a throwing resolver, reports why, and goes on', async () => {
    const chain = new ApprovalChain();
    chain.register('sync-throw', {
      priority: 30,
      resolve: () => {
        throw new Error('boom');
      },
    });
    chain.register('async-reject', {
      priority: 20,
      resolve: () => Promise.reject(new Error('rpc failed')),
    });
    chain.register('fallback', { priority: 10, resolve: () => 'deny' });
    const result = await chain.decide(call('bash'));
    expect(result.decision).toBe('deny');
    expect(result.resolver).toBe('fallback');
    expect(result.skipped).toEqual([
      { resolver: 'sync-throw', reason: 'raised an error: boom' },
      { resolver: 'async-reject', reason: 'raised an error: rpc failed' },
    ]);
    expect(result.trace[0]).toMatchObject({ outcome: 'skipped', reason: 'raised an error: boom' });
  });

  it.each<[string, unknown]>([
    ['true', true],
    ['false', false],
    ['an unknown string', 'yes'],
    ['a wrongly cased decision', 'Approve'],
    ['a number', 1],
    ['a table', { decision: 'approve' }],
    ['a list', ['approve']],
  ])('skips a resolver that returns %s and goes on', async (_label, junk) => {
    const chain = new ApprovalChain();
    chain.register('junk', { priority: 60, resolve: () => junk });
    chain.register('next', { priority: 40, resolve: () => 'approve' });
    const result = await chain.decide(call('read'));
    expect(result).toMatchObject({ decision: 'approve', resolver: 'next' });
    expect(result.skipped).toHaveLength(1);
    expect(result.skipped[0]?.resolver).toBe('junk');
    expect(result.skipped[0]?.reason).toMatch(/^returned .*; a resolver must return/);
    expect(result.skipped[0]?.reason).toContain(JSON.stringify(junk));
  });

  it('reports skips even when nobody decides', async () => {
    const chain = new ApprovalChain();
    chain.register('junk', { resolve: () => 'maybe' });
    const result = await chain.decide(call('read'));
    expect(result.decision).toBe('require_approval');
    expect(result.resolver).toBeNull();
    expect(result.skipped).toEqual([
      {
        resolver: 'junk',
        reason:
          'returned "maybe"; a resolver must return "approve", "require_approval", "deny" or nil',
      },
    ]);
  });

  it('awaits asynchronous resolvers one at a time, in order', async () => {
    const events: string[] = [];
    let release = (): void => undefined;
    const slowAnswer = new Promise<void>((resolve) => {
      release = resolve;
    });
    const chain = new ApprovalChain();
    chain.register('slow', {
      priority: 90,
      resolve: async () => {
        events.push('slow:start');
        await slowAnswer;
        events.push('slow:end');
        return undefined;
      },
    });
    chain.register('fast', {
      priority: 80,
      resolve: async () => {
        events.push('fast:start');
        await later();
        events.push('fast:end');
        return 'approve';
      },
    });
    chain.register('never', {
      priority: 70,
      resolve: () => {
        events.push('never');
        return 'deny';
      },
    });
    const deciding = chain.decide(call('read'));
    await later();
    await later();
    // The next resolver waits until the slow one has answered.
    expect(events).toEqual(['slow:start']);
    release();
    const result = await deciding;
    expect(result).toMatchObject({ decision: 'approve', resolver: 'fast' });
    expect(events).toEqual(['slow:start', 'slow:end', 'fast:start', 'fast:end']);
  });

  it('decides with the order taken at the start', async () => {
    const chain = new ApprovalChain();
    chain.register('first', {
      priority: 90,
      resolve: () => {
        chain.register('late', { priority: 80, resolve: () => 'deny' });
        chain.unregister('second');
        return undefined;
      },
    });
    chain.register('second', { priority: 70, resolve: () => 'approve' });
    expect(await chain.decide(call('x'))).toMatchObject(decided('approve', 'second'));
    expect(await chain.decide(call('x'))).toMatchObject({ decision: 'deny', resolver: 'late' });
  });

  it('passes the call and context to resolvers and keeps their notes', async () => {
    const chain = new ApprovalChain<{ mode: string }>();
    const seen: unknown[] = [];
    chain.register('spy', {
      resolve: (c, context, note) => {
        seen.push(c, context);
        note('looked at it');
        return 'require_approval';
      },
    });
    const c = call('bash', { command: 'ls' });
    const result = await chain.decide(c, { mode: 'strict' });
    expect(seen).toEqual([c, { mode: 'strict' }]);
    expect(result.trace).toEqual([
      {
        resolver: 'spy',
        priority: 50,
        outcome: 'decided',
        decision: 'require_approval',
        notes: ['looked at it'],
      },
    ]);
  });
});

describe('statusFor', () => {
  it.each<[Decision, string]>([
    ['approve', 'approved'],
    ['require_approval', 'pending'],
    ['deny', 'denied'],
  ])('%s → %s', (decision, status) => {
    expect(statusFor(decision)).toBe(status);
  });
});

describe('presets', () => {
  const builtins = presetTable(undefined).presets;
  const expand = (items: string[], removed: string[] = [], user?: unknown) =>
    expandApproveList({ items, removed }, presetTable(user).presets);

  it('has the built-in $readonly and $default', () => {
    expect(BUILTIN_PRESETS['$readonly']).toEqual({
      approve: ['read', 'ls', 'grep', 'find'],
      deny: [],
    });
    expect(sorted(expand(['$readonly']).approve)).toEqual(['find', 'grep', 'ls', 'read']);
    expect(sorted(expand(['$default']).approve)).toEqual(DEFAULT_APPROVED);
    expect(expand(['$default']).approve.has('bash')).toBe(false);
    expect(expand(['$default']).warnings).toEqual([]);
  });

  it('unions presets and plain tool names', () => {
    const e = expand(['$readonly', 'calculator', 'bash']);
    expect(sorted(e.approve)).toEqual(['bash', 'calculator', 'find', 'grep', 'ls', 'read']);
    expect(sorted(e.deny)).toEqual([]);
  });

  it('lets deny win over approve, whatever the order', () => {
    const user = {
      $yolo: { approve: ['bash', 'read', 'write', 'edit'] },
      '$no-bash': { deny: ['bash'] },
    };
    for (const items of [
      ['$yolo', '$no-bash'],
      ['$no-bash', '$yolo'],
      ['$no-bash', 'bash'],
    ]) {
      const e = expand(items, [], user);
      expect(e.approve.has('bash')).toBe(false);
      expect(e.deny.has('bash')).toBe(true);
      expect(listDecision(e, 'bash')).toBe('deny');
    }
    const e = expand(['$yolo', '$no-bash'], [], user);
    expect(listDecision(e, 'write')).toBe('approve');
    expect(listDecision(e, 'calculator')).toBeUndefined();
  });

  it('lets a user preset replace a built-in of the same name, whole', () => {
    const user = { $readonly: { approve: ['read'] } };
    expect(sorted(expand(['$readonly'], [], user).approve)).toEqual(['read']);
    // $default lists its own tools: overriding $readonly does not change it.
    expect(sorted(expand(['$default'], [], user).approve)).toEqual(DEFAULT_APPROVED);
    const denyOnly = { $default: { deny: ['write'] } };
    const e = expand(['$default'], [], denyOnly);
    expect(sorted(e.approve)).toEqual([]);
    expect(sorted(e.deny)).toEqual(['write']);
  });

  it('filters a removed tool out of the presets of the list', () => {
    const base: ApproveList = { items: ['$default'], removed: [] };
    const edited = applyListOps(base, [{ op: 'remove', item: 'write' }]);
    expect(edited).toEqual({ items: ['$default'], removed: ['write'] });
    const e = expandApproveList(edited, builtins);
    expect(listDecision(e, 'write')).toBeUndefined();
    expect(listDecision(e, 'edit')).toBe('approve');
    expect(listDecision(e, 'read')).toBe('approve');
  });

  it('applies list operations like the config store: append, prepend, remove, set', () => {
    const base: ApproveList = { items: ['$default'], removed: [] };
    // `+ "bash" - "write"`
    expect(
      applyListOps(base, [
        { op: 'append', item: 'bash' },
        { op: 'remove', item: 'write' },
      ]),
    ).toEqual({ items: ['$default', 'bash'], removed: ['write'] });
    // Appending a removed name brings it back; appending moves an existing name to the end.
    expect(
      applyListOps(base, [
        { op: 'remove', item: 'write' },
        { op: 'prepend', item: 'calculator' },
        { op: 'append', item: '$default' },
        { op: 'append', item: 'write' },
      ]),
    ).toEqual({ items: ['calculator', '$default', 'write'], removed: [] });
    // `set` replaces the items and forgets earlier removals.
    expect(
      applyListOps(base, [
        { op: 'remove', item: 'write' },
        { op: 'set', items: ['$readonly'] },
      ]),
    ).toEqual({ items: ['$readonly'], removed: [] });
    // Removing a preset drops it from the list.
    const noPreset = applyListOps(base, [{ op: 'remove', item: '$default' }]);
    expect(noPreset.items).toEqual([]);
    expect(sorted(expandApproveList(noPreset, builtins).approve)).toEqual([]);
    // The base is not modified.
    expect(base).toEqual({ items: ['$default'], removed: [] });
  });

  it('does not lift a denial by removing the name', () => {
    const user = { $safe: { approve: ['read'], deny: ['bash'] } };
    const e = expand(['$safe'], ['bash'], user);
    expect(listDecision(e, 'bash')).toBe('deny');
  });

  it('warns about an unknown preset, with a suggestion when one is close', () => {
    const e = expand(['$defualt', 'read']);
    expect(sorted(e.approve)).toEqual(['read']);
    expect(e.warnings).toEqual([
      "tools.auto_approve: unknown approval preset '$defualt' (did you mean '$default'?); it matches nothing",
    ]);
    const far = expand(['$completely-different']);
    expect(far.warnings).toEqual([
      "tools.auto_approve: unknown approval preset '$completely-different'; it matches nothing",
    ]);
    expect(sorted(far.approve)).toEqual([]);
    expect(suggestPreset('$READONLY', builtins)).toBe('$readonly');
    expect(suggestPreset('$yolo', builtins)).toBeUndefined();
  });

  it('expands presets that name presets, and cuts cycles with a warning', () => {
    const user = {
      $base: { approve: ['read', '$more'] },
      $more: { approve: ['ls', '$base'], deny: ['bash'] },
      $strict: { deny: ['$readonly'] },
    };
    const e = expand(['$base'], [], user);
    expect(sorted(e.approve)).toEqual(['ls', 'read']);
    expect(sorted(e.deny)).toEqual(['bash']);
    expect(e.warnings).toEqual([
      'tools.auto_approve: approval presets form a cycle ($base → $more → $base); cut there',
    ]);
    // A preset in a deny list denies what it would approve.
    const s = expand(['$default', '$strict'], [], user);
    expect(sorted(s.approve)).toEqual(['edit', 'write']);
    expect(sorted(s.deny)).toEqual(['find', 'grep', 'ls', 'read']);
  });

  it('validates user presets and ignores what is wrong, with warnings', () => {
    const table = presetTable({
      nodollar: { approve: ['read'] },
      $fine: { approve: ['read', 3, ''], deny: 'bash', extra: true },
      $bad: 'read',
      $empty: [],
    });
    expect(table.presets.has('nodollar')).toBe(false);
    expect(table.presets.get('$fine')).toEqual({ approve: ['read'], deny: [] });
    expect(table.presets.has('$bad')).toBe(false);
    expect(table.presets.get('$empty')).toEqual({ approve: [], deny: [] });
    expect(table.warnings).toEqual([
      `tools.presets["$bad"] must be a table with 'approve' and/or 'deny' lists; ignored`,
      `tools.presets["$fine"]: unknown key 'extra'`,
      `tools.presets["$fine"].approve[2] must be a tool or preset name; ignored`,
      `tools.presets["$fine"].approve[3] must be a tool or preset name; ignored`,
      `tools.presets["$fine"].deny must be a list of names; ignored`,
      `tools.presets["nodollar"]: a preset name starts with '$' (letters, digits, _ or -); ignored`,
    ]);
    expect(presetTable('nope').warnings).toEqual([
      'tools.presets must be a table of presets by name; ignored',
    ]);
    expect(presetTable({}).warnings).toEqual([]);
  });

  it('builds a list from plain configuration', () => {
    expect(approveList(['$default', 'bash'])).toEqual({ items: ['$default', 'bash'], removed: [] });
    expect(approveList({})).toEqual({ items: [], removed: [] });
    expect(approveList({ items: ['$default'], removed: ['write'] })).toEqual({
      items: ['$default'],
      removed: ['write'],
    });
    expect(() => approveList('my.module')).toThrow(TypeError);
    expect(() => approveList(['read', 4])).toThrow(
      'tools.auto_approve[2] must be a tool or preset name',
    );
    expect(() => approveList({ items: 'read' })).toThrow('tools.auto_approve.items must be a list');
  });
});

describe('built-in resolvers', () => {
  const sandboxTools: ApprovalHooks['tools'] = {
    get: (name) =>
      name === 'bash'
        ? { canAutoApproveIfSandboxed: true }
        : name === 'calculator'
          ? {}
          : name === 'shell'
            ? { canAutoApproveIfSandboxed: false }
            : undefined,
  };
  // A call whose working directory is inside the project, unless the context says otherwise.
  const decide = (
    config: ApprovalConfig,
    toolName: string,
    context: ApprovalContext = {},
    hooks: ApprovalHooks = {},
  ) => buildChain(config, hooks).chain.decide(call(toolName), { scope: IN_PROJECT, ...context });

  it('registers the built-in resolvers with their priorities (docs/approval.md)', () => {
    const { chain } = buildChain({
      autoApprove: { kind: 'module', name: 'my_plugin.policy', resolve: () => undefined },
      requireApproval: false,
    });
    expect(chain.getAll().map((e) => [e.name, e.priority])).toEqual([
      ['my_plugin.policy', 100],
      [CONFIG_RESOLVER, 100],
      [FRONTMATTER_RESOLVER, 90],
      [SANDBOX_RESOLVER, 25],
      [TOOL_DEFAULT_RESOLVER, 10],
      [CATCH_ALL_RESOLVER, 0],
    ]);
  });

  it('registers the catch-all only when require_approval is false', () => {
    expect(buildChain({}).chain.get(CATCH_ALL_RESOLVER)).toBeUndefined();
    expect(buildChain({ requireApproval: true }).chain.get(CATCH_ALL_RESOLVER)).toBeUndefined();
    expect(buildChain({ requireApproval: false }).chain.get(CATCH_ALL_RESOLVER)).toBeDefined();
  });

  it('approves everything through the catch-all, which any higher resolver overrides', async () => {
    const built = buildChain({ requireApproval: false, autoApprove: list(['read']) });
    built.chain.register('policy', {
      resolve: (c) => (c.toolName === 'bash' ? 'deny' : undefined),
    });
    expect(await built.chain.decide(call('bash'), {})).toMatchObject(decided('deny', 'policy'));
    expect(await built.chain.decide(call('write'), {})).toMatchObject(
      decided('approve', CATCH_ALL_RESOLVER),
    );
    expect(await built.chain.decide(call('read'), {})).toMatchObject(
      decided('approve', CONFIG_RESOLVER),
    );
  });

  it('adds third-party resolvers at priority 50 unless they say otherwise', async () => {
    const { chain } = buildChain({ autoApprove: list(['$default']) }, {}, [
      ['third:party', { resolve: () => 'deny' }],
      ['override', { resolve: (c) => (c.toolName === 'read' ? 'deny' : undefined), priority: 200 }],
    ]);
    expect(chain.get('third:party')?.priority).toBe(50);
    expect(await chain.decide(call('read'), {})).toMatchObject(decided('deny', 'override'));
    expect(await chain.decide(call('write'), {})).toMatchObject(
      decided('approve', CONFIG_RESOLVER),
    );
    expect(await chain.decide(call('bash'), {})).toMatchObject(decided('deny', 'third:party'));
  });

  it('decides the default configuration: $default approved, bash pending', async () => {
    const config: ApprovalConfig = { autoApprove: list(['$default']) };
    for (const tool of ['read', 'write', 'edit', 'ls', 'grep', 'find']) {
      expect(await decide(config, tool)).toMatchObject(decided('approve', CONFIG_RESOLVER));
    }
    expect(await decide(config, 'bash')).toMatchObject(decided('require_approval', null));
  });

  it('reports unknown presets and bad user presets once, when building', () => {
    const { warnings } = buildChain({
      autoApprove: list(['$redonly']),
      presets: { nodollar: {} },
    });
    expect(warnings).toEqual([
      `tools.presets["nodollar"]: a preset name starts with '$' (letters, digits, _ or -); ignored`,
      "tools.auto_approve: unknown approval preset '$redonly' (did you mean '$readonly'?); it matches nothing",
    ]);
  });

  it('uses user presets from the configuration, deny winning', async () => {
    const config: ApprovalConfig = {
      autoApprove: list(['$yolo', '$no-bash']),
      presets: {
        $yolo: { approve: ['bash', 'read', 'write', 'edit'] },
        '$no-bash': { deny: ['bash'] },
      },
      requireApproval: false,
    };
    expect(await decide(config, 'bash')).toMatchObject(decided('deny', CONFIG_RESOLVER));
    expect(await decide(config, 'edit')).toMatchObject(decided('approve', CONFIG_RESOLVER));
  });

  describe('function form', () => {
    it.each<[string, unknown, Decision, string | null]>([
      ['true', true, 'approve', CONFIG_RESOLVER],
      ['false', false, 'require_approval', CONFIG_RESOLVER],
      ['"deny"', 'deny', 'deny', CONFIG_RESOLVER],
      ['"approve"', 'approve', 'approve', CONFIG_RESOLVER],
      ['nil (undefined)', undefined, 'approve', CATCH_ALL_RESOLVER],
      ['nil (null)', null, 'approve', CATCH_ALL_RESOLVER],
      ['junk', 'yes please', 'require_approval', CONFIG_RESOLVER],
    ])('maps %s', async (_label, answer, decision, resolver) => {
      // The catch-all shows whether the function passed or decided.
      const config: ApprovalConfig = {
        autoApprove: { kind: 'function', fn: () => answer },
        requireApproval: false,
      };
      expect(await decide(config, 'bash')).toMatchObject({ decision, resolver });
    });

    it('fails closed when the function raises, with a note saying why', async () => {
      const config: ApprovalConfig = {
        autoApprove: {
          kind: 'function',
          fn: () => Promise.reject(new Error('attempt to index a nil value')),
        },
        requireApproval: false,
      };
      const result = await decide(config, 'bash');
      expect(result).toMatchObject({ decision: 'require_approval', resolver: CONFIG_RESOLVER });
      expect(result.trace[0]?.notes).toEqual([
        'the auto_approve function raised an error: attempt to index a nil value; requiring approval',
      ]);
      expect(result.skipped).toEqual([]);
    });

    it('receives the tool name, the input and {bufnr, toolId}, and may be async', async () => {
      const seen: unknown[] = [];
      const config: ApprovalConfig = {
        autoApprove: {
          kind: 'function',
          fn: async (name, input, ctx) => {
            seen.push(name, input, ctx);
            await later();
            return (input as { command: string }).command.includes('rm -rf') ? 'deny' : true;
          },
        },
      };
      const { chain } = buildChain(config);
      const bad = await chain.decide(call('bash', { command: 'rm -rf /' }), {});
      expect(bad.decision).toBe('deny');
      expect(seen).toEqual(['bash', { command: 'rm -rf /' }, { bufnr: 7, toolId: 'toolu_01' }]);
      expect((await chain.decide(call('bash', { command: 'ls' }), {})).decision).toBe('approve');
    });

    it('functionAnswer maps without a chain', () => {
      const notes: string[] = [];
      const note = (m: string): void => {
        notes.push(m);
      };
      expect(functionAnswer(true, note)).toBe('approve');
      expect(functionAnswer(false, note)).toBe('require_approval');
      expect(functionAnswer('deny', note)).toBe('deny');
      expect(functionAnswer(null, note)).toBeUndefined();
      expect(notes).toEqual([]);
      expect(functionAnswer(0, note)).toBe('require_approval');
      expect(notes).toEqual([
        'the auto_approve function returned 0 (expected true, false, "deny" or nil); requiring approval',
      ]);
    });
  });

  describe('module form', () => {
    it('asks the module resolver, under its own name at 100', async () => {
      const config: ApprovalConfig = {
        autoApprove: {
          kind: 'module',
          name: 'my.policy',
          resolve: (c) => (c.toolName === 'bash' ? 'deny' : undefined),
        },
        requireApproval: false,
      };
      expect(await decide(config, 'bash')).toMatchObject(decided('deny', 'my.policy'));
      expect(await decide(config, 'read')).toMatchObject(decided('approve', CATCH_ALL_RESOLVER));
    });

    it('skips a module that answers like the function form (a boolean)', async () => {
      const config: ApprovalConfig = {
        autoApprove: { kind: 'module', name: 'my.policy', resolve: () => true },
      };
      const result = await decide(config, 'read');
      expect(result).toMatchObject({ decision: 'require_approval', resolver: null });
      expect(result.skipped.map((s) => s.resolver)).toEqual(['my.policy']);
    });
  });

  describe('frontmatter', () => {
    const global: ApprovalConfig = { autoApprove: list(['$default']) };

    it('passes when the buffer has no auto_approve of its own', async () => {
      const result = await decide(global, 'read');
      expect(result.resolver).toBe(CONFIG_RESOLVER);
      const fm = await decide(global, 'bash');
      expect(fm.trace.find((t) => t.resolver === FRONTMATTER_RESOLVER)?.outcome).toBe('passed');
    });

    it("decides from the buffer's effective list; the global list passes", async () => {
      const effective = applyListOps({ items: ['$default'], removed: [] }, [
        { op: 'remove', item: 'write' },
        { op: 'append', item: 'bash' },
      ]);
      const context: ApprovalContext = { frontmatter: { kind: 'list', list: effective } };
      expect(await decide(global, 'write', context)).toMatchObject(
        decided('require_approval', null),
      );
      expect(await decide(global, 'bash', context)).toMatchObject(
        decided('approve', FRONTMATTER_RESOLVER),
      );
      expect(await decide(global, 'edit', context)).toMatchObject(
        decided('approve', FRONTMATTER_RESOLVER),
      );
    });

    it('an empty buffer list approves nothing', async () => {
      const result = await decide(global, 'read', { frontmatter: list([]) });
      expect(result).toMatchObject({ decision: 'require_approval', resolver: null });
    });

    it('a buffer function answering nil passes below 90, not back to the global list', async () => {
      const { chain } = buildChain(global, {}, [
        ['third', { resolve: (c) => (c.toolName === 'write' ? 'deny' : undefined) }],
      ]);
      const context: ApprovalContext = {
        frontmatter: { kind: 'function', fn: (name) => (name === 'calculator' ? true : null) },
      };
      expect(await chain.decide(call('calculator'), context)).toMatchObject(
        decided('approve', FRONTMATTER_RESOLVER),
      );
      expect(await chain.decide(call('read'), context)).toMatchObject(
        decided('require_approval', null),
      );
      expect(await chain.decide(call('write'), context)).toMatchObject(decided('deny', 'third'));
    });

    it("notes unknown presets of the buffer's list on each decision", async () => {
      const result = await decide(global, 'read', { frontmatter: list(['$readonyl']) });
      expect(result.decision).toBe('require_approval');
      expect(result.trace.find((t) => t.resolver === FRONTMATTER_RESOLVER)?.notes).toEqual([
        "flemma.opt.tools.auto_approve: unknown approval preset '$readonyl' (did you mean '$readonly'?); it matches nothing",
      ]);
    });
  });

  describe('sandbox', () => {
    const base: ApprovalConfig = { autoApprove: list(['$default']) };
    const active: ApprovalHooks = { tools: sandboxTools, sandboxActive: () => true };

    it('approves a sandbox-capable tool when the sandbox is active', async () => {
      expect(await decide(base, 'bash', {}, active)).toMatchObject(
        decided('approve', SANDBOX_RESOLVER),
      );
    });

    it('asks about the sandbox for the call’s buffer, asynchronously', async () => {
      const asked: number[] = [];
      const hooks: ApprovalHooks = {
        tools: sandboxTools,
        sandboxActive: async (bufnr) => {
          asked.push(bufnr);
          await later();
          return bufnr === 7;
        },
      };
      expect((await decide(base, 'bash', {}, hooks)).decision).toBe('approve');
      expect(asked).toEqual([7]);
    });

    it.each<[string, ApprovalConfig, string, ApprovalContext, ApprovalHooks]>([
      [
        'auto_approve_sandboxed = false',
        { ...base, autoApproveSandboxed: false },
        'bash',
        {},
        active,
      ],
      ['a tool without the capability', base, 'calculator', {}, active],
      ['a tool whose capability is false', base, 'shell', {}, active],
      ['a tool the registry does not know', base, 'mystery', {}, active],
      [
        'the sandbox inactive',
        base,
        'bash',
        {},
        { tools: sandboxTools, sandboxActive: () => false },
      ],
      ['no sandbox hook', base, 'bash', {}, { tools: sandboxTools }],
      ['no tool lookup', base, 'bash', {}, { sandboxActive: () => true }],
      ['auto_approve not configured', {}, 'bash', {}, active],
      ['auto_approve an empty list', { autoApprove: list([]) }, 'bash', {}, active],
      [
        'the buffer removed the tool',
        base,
        'bash',
        { frontmatter: list(['$default'], ['bash']) },
        active,
      ],
      [
        'the global list removed the tool',
        { autoApprove: list(['$default'], ['bash']) },
        'bash',
        {},
        active,
      ],
      ['the buffer list is empty', base, 'bash', { frontmatter: list([]) }, active],
    ])('does not approve with %s', async (_label, config, tool, context, hooks) => {
      const result = await decide(config, tool, context, hooks);
      expect(result).toMatchObject({ decision: 'require_approval', resolver: null });
      expect(result.trace.find((t) => t.resolver === SANDBOX_RESOLVER)?.outcome).toBe('passed');
    });

    it('still approves when the buffer only appends to the global list', async () => {
      const appended = applyListOps({ items: ['$default'], removed: [] }, [
        { op: 'append', item: 'calculator' },
      ]);
      const frontmatter: AutoApproveSetting = { kind: 'list', list: appended };
      expect(
        await decide(base, 'bash', { frontmatter, frontmatterAssigned: false }, active),
      ).toMatchObject({ decision: 'approve', resolver: SANDBOX_RESOLVER });
    });

    it('passes when the buffer assigned its own list or function (docs/approval.md, "Global and per-buffer settings")', async () => {
      for (const frontmatter of [
        list(['$readonly']),
        { kind: 'function', fn: () => null },
      ] satisfies AutoApproveSetting[]) {
        const result = await decide(
          base,
          'bash',
          { frontmatter, frontmatterAssigned: true },
          active,
        );
        expect(result.trace.find((t) => t.resolver === SANDBOX_RESOLVER)?.outcome).toBe('passed');
        expect(result.resolver).not.toBe(SANDBOX_RESOLVER);
      }
    });

    it('does not ask the sandbox when an earlier condition fails', async () => {
      let asked = 0;
      const hooks: ApprovalHooks = {
        tools: sandboxTools,
        sandboxActive: () => {
          asked += 1;
          return true;
        },
      };
      await decide(base, 'calculator', {}, hooks);
      await decide({ ...base, autoApproveSandboxed: false }, 'bash', {}, hooks);
      expect(asked).toBe(0);
      await decide(base, 'bash', {}, hooks);
      expect(asked).toBe(1);
    });

    it('loses to a preset deny and to a third-party resolver at 50', async () => {
      const denying: ApprovalConfig = {
        autoApprove: list(['$default', '$no-bash']),
        presets: { '$no-bash': { deny: ['bash'] } },
      };
      expect(await decide(denying, 'bash', {}, active)).toMatchObject(
        decided('deny', CONFIG_RESOLVER),
      );
      const { chain } = buildChain(base, active, [
        ['community', { resolve: () => 'require_approval' }],
      ]);
      expect(await chain.decide(call('bash'), {})).toMatchObject(
        decided('require_approval', 'community'),
      );
    });

    it('is skipped and reported when asking about the sandbox fails', async () => {
      const hooks: ApprovalHooks = {
        tools: sandboxTools,
        sandboxActive: () => Promise.reject(new Error('backend probe failed')),
      };
      const result = await decide({ ...base, requireApproval: false }, 'bash', {}, hooks);
      expect(result).toMatchObject({ decision: 'approve', resolver: CATCH_ALL_RESOLVER });
      expect(result.skipped).toEqual([
        { resolver: SANDBOX_RESOLVER, reason: 'raised an error: backend probe failed' },
      ]);
    });
  });
});
