// CodeCompanion's approval default as a resolver (`urn:flemma:approval:tool-default`, C-13) and
// the answer to a call of a tool that does not exist (C-11).
import { describe, expect, it } from 'vitest';
import { type ToolCall } from '../../src/core/approval/chain.js';
import {
  CONFIG_RESOLVER,
  FRONTMATTER_RESOLVER,
  TOOL_DEFAULT_RESOLVER,
  buildChain,
} from '../../src/core/approval/resolvers.js';
import { notFoundText } from '../../src/host/tools/verdicts.js';
import { approveList } from '../../src/core/approval/presets.js';

function call(toolName: string, input: unknown = {}): ToolCall {
  return { toolName, input, bufnr: 1, toolId: 'toolu_1' };
}

type Setting = boolean | ((input: unknown, ctx: { bufnr: number; toolId: string }) => unknown);

function lookup(settings: Record<string, Setting>): {
  get(name: string): { requireApproval?: Setting | undefined } | undefined;
} {
  return { get: (name) => (name in settings ? { requireApproval: settings[name] } : undefined) };
}

describe('the tool-default resolver', () => {
  it('maps requires_approval: false approves, true requires approval, unset passes', async () => {
    const tools = lookup({ calm: false, careful: true });
    const { chain } = buildChain({}, { tools });
    expect(await chain.decide(call('calm'), {})).toMatchObject({
      decision: 'approve',
      resolver: TOOL_DEFAULT_RESOLVER,
    });
    expect(await chain.decide(call('careful'), {})).toMatchObject({
      decision: 'require_approval',
      resolver: TOOL_DEFAULT_RESOLVER,
    });
    expect(await chain.decide(call('other'), {})).toMatchObject({
      decision: 'require_approval',
      resolver: null,
    });
  });

  it('C-13: a function of the input and context decides per call (paths inside cwd run)', async () => {
    const seen: unknown[] = [];
    const tools = lookup({
      read: (input, ctx) => {
        seen.push(ctx);
        const path = (input as { path: string }).path;
        return path.startsWith('/') || path.startsWith('..');
      },
    });
    const { chain } = buildChain({}, { tools });
    expect((await chain.decide(call('read', { path: 'src/a.ts' }), {})).decision).toBe('approve');
    expect((await chain.decide(call('read', { path: '/etc/hosts' }), {})).decision).toBe(
      'require_approval',
    );
    expect(seen[0]).toEqual({ bufnr: 1, toolId: 'toolu_1' });
  });

  it('a function that raises requires approval, with a note; decisions pass through', async () => {
    const tools = lookup({
      broken: () => {
        throw new Error('boom');
      },
      strict: () => 'deny',
    });
    const { chain } = buildChain({}, { tools });
    const broken = await chain.decide(call('broken'), {});
    expect(broken.decision).toBe('require_approval');
    expect(broken.trace.find((t) => t.resolver === TOOL_DEFAULT_RESOLVER)?.notes[0]).toMatch(
      /raised an error: boom/,
    );
    expect((await chain.decide(call('strict'), {})).decision).toBe('deny');
  });

  it('sits below the configuration and the frontmatter, above the catch-all', async () => {
    const tools = lookup({ careful: true, calm: false });
    const { chain } = buildChain(
      {
        autoApprove: { kind: 'list', list: approveList(['careful']) },
        requireApproval: false,
      },
      { tools },
    );
    expect(await chain.decide(call('careful'), {})).toMatchObject({
      decision: 'approve',
      resolver: CONFIG_RESOLVER,
    });
    expect(
      await chain.decide(call('careful'), {
        frontmatter: { kind: 'list', list: approveList([]) },
      }),
    ).toMatchObject({ decision: 'require_approval', resolver: TOOL_DEFAULT_RESOLVER });
    const frontmatter = await chain.decide(call('calm'), {
      frontmatter: { kind: 'function', fn: () => false },
    });
    expect(frontmatter).toMatchObject({
      decision: 'require_approval',
      resolver: FRONTMATTER_RESOLVER,
    });
    // The catch-all (require_approval = false) does not override a tool that asks for approval.
    const { chain: lenient } = buildChain({ requireApproval: false }, { tools });
    expect((await lenient.decide(call('careful'), {})).decision).toBe('require_approval');
  });
});

describe('C-11: a tool that does not exist', () => {
  it('lists the available tools, sorted', () => {
    expect(notFoundText('foo', ['read', 'bash', 'edit'])).toBe(
      'Tool `foo` not found. The available tools are: `bash`, `edit`, `read`',
    );
    expect(notFoundText('foo', [])).toBe('Tool `foo` not found. No tools available');
  });
});
