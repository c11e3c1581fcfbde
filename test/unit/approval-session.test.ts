// Session approvals (docs/approval.md, "Always, YOLO and cancel"): "always" per buffer, per
// command for tools that ask for it, YOLO mode and neverAutoApprove, as resolvers of the chain.
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../../src/core/approval/chain.js';
import { approveList } from '../../src/core/approval/presets.js';
import {
  type ApprovalResolver,
  CONFIG_RESOLVER,
  buildChain,
  listSetting,
} from '../../src/core/approval/resolvers.js';
import {
  SESSION_RESOLVER,
  type SessionTool,
  SessionApprovals,
  YOLO_RESOLVER,
  alwaysEntryFor,
  describeEntry,
  sessionResolver,
  yoloResolver,
} from '../../src/core/approval/session.js';
import { bashTool } from '../../src/core/tools/definitions/bash.js';
import { readTool } from '../../src/core/tools/definitions/read.js';

function call(toolName: string, input: unknown = {}, bufnr = 1): ToolCall {
  return { toolName, input, bufnr, toolId: `toolu_${toolName}` };
}

const tools: Record<string, SessionTool> = {
  bash: bashTool,
  read: readTool,
  // Per-command approval without a command string: keyed by the input.
  deploy: { requireCmdApproval: true },
  broken: {
    requireCmdApproval: true,
    cmdString: () => {
      throw new Error('no command');
    },
  },
};
const lookup = (name: string): SessionTool | undefined => tools[name];

function chainFor(
  session: SessionApprovals,
  options: { yolo?: boolean; autoApprove?: string[] } = {},
): ReturnType<typeof buildChain>['chain'] {
  const extra: [string, ApprovalResolver][] = [
    [SESSION_RESOLVER, sessionResolver(session, lookup)],
    [YOLO_RESOLVER, yoloResolver(session, lookup, options.yolo === true)],
  ];
  const autoApprove =
    options.autoApprove === undefined ? undefined : listSetting(approveList(options.autoApprove));
  return buildChain({ autoApprove }, {}, extra).chain;
}

describe('"always" approvals', () => {
  it('sit at 95 and 92, between the config (100) and the frontmatter (90)', () => {
    const names = chainFor(new SessionApprovals())
      .getAll()
      .map((r) => `${r.name}@${String(r.priority)}`);
    expect(names.slice(0, 4)).toEqual([
      `${CONFIG_RESOLVER}@100`,
      `${SESSION_RESOLVER}@95`,
      `${YOLO_RESOLVER}@92`,
      'urn:flemma:approval:frontmatter@90',
    ]);
  });

  it('C-08: "always" on read in buffer 1 approves the next read there, not in buffer 2', async () => {
    const session = new SessionApprovals();
    const chain = chainFor(session);
    const first = call('read', { path: 'a.txt' }, 1);
    expect((await chain.decide(first, {})).decision).toBe('require_approval');
    session.remember(1, await alwaysEntryFor(first, lookup));
    const again = await chain.decide(call('read', { path: 'b.txt' }, 1), {});
    expect(again).toMatchObject({ decision: 'approve', resolver: SESSION_RESOLVER });
    expect(again.trace.find((s) => s.outcome === 'decided')?.notes).toEqual([
      'approved "always" in this buffer: read',
    ]);
    expect(await chain.decide(call('read', { path: 'b.txt' }, 2), {})).toMatchObject({
      decision: 'require_approval',
      resolver: null,
    });
  });

  it('C-09: bash is remembered per command: ls -la runs, rm x still asks', async () => {
    const session = new SessionApprovals();
    const chain = chainFor(session);
    const ls = call('bash', { label: 'list', command: 'ls -la', timeout: null });
    const entry = await alwaysEntryFor(ls, lookup);
    expect(entry).toEqual({ tool: 'bash', command: 'ls -la' });
    expect(describeEntry(entry)).toBe('bash: ls -la');
    session.remember(1, entry);
    expect(
      await chain.decide(call('bash', { label: 'again', command: 'ls -la', timeout: 5 }), {}),
    ).toMatchObject({ decision: 'approve', resolver: SESSION_RESOLVER });
    expect(
      await chain.decide(call('bash', { label: 'rm', command: 'rm x', timeout: null }), {}),
    ).toMatchObject({ decision: 'require_approval', resolver: null });
  });

  it('keys a per-command tool without a command string by its input', async () => {
    const session = new SessionApprovals();
    const chain = chainFor(session);
    session.remember(1, await alwaysEntryFor(call('deploy', { env: 'staging' }), lookup));
    expect((await chain.decide(call('deploy', { env: 'staging' }), {})).decision).toBe('approve');
    expect((await chain.decide(call('deploy', { env: 'prod' }), {})).decision).toBe(
      'require_approval',
    );
  });

  it('skips the resolver when the command string raises (the call asks)', async () => {
    const session = new SessionApprovals();
    session.remember(1, { tool: 'read' });
    const outcome = await chainFor(session).decide(call('broken'), {});
    expect(outcome.decision).toBe('require_approval');
    expect(outcome.skipped[0]).toMatchObject({ resolver: SESSION_RESOLVER });
  });

  it('never overrides a deny above it (config at 100)', async () => {
    const session = new SessionApprovals();
    session.remember(1, { tool: 'read' });
    const chain = buildChain(
      { autoApprove: listSetting(approveList(['$nope'])), presets: { $nope: { deny: ['read'] } } },
      {},
      [[SESSION_RESOLVER, sessionResolver(session, lookup)]],
    ).chain;
    expect(await chain.decide(call('read'), {})).toMatchObject({
      decision: 'deny',
      resolver: CONFIG_RESOLVER,
    });
  });

  it('lists, forgets (all or one tool) and clears per buffer', () => {
    const session = new SessionApprovals();
    expect(session.remember(1, { tool: 'read' })).toBe(true);
    expect(session.remember(1, { tool: 'read' })).toBe(false);
    session.remember(1, { tool: 'bash', command: 'ls' });
    session.remember(1, { tool: 'bash', command: 'pwd' });
    session.remember(2, { tool: 'read' });
    expect(session.list(1).map(describeEntry)).toEqual(['read', 'bash: ls', 'bash: pwd']);
    expect(session.forget(1, 'bash')).toBe(2);
    expect(session.list(1)).toEqual([{ tool: 'read' }]);
    expect(session.forget(1)).toBe(1);
    expect(session.list(1)).toEqual([]);
    session.setYolo(2, true);
    session.clear(2);
    expect(session.list(2)).toEqual([]);
    expect(session.yolo(2)).toBeUndefined();
  });
});

describe('YOLO mode', () => {
  it('C-10: approves read but lets bash (neverAutoApprove) fall through and ask', async () => {
    const session = new SessionApprovals();
    session.setYolo(1, true);
    const chain = chainFor(session);
    expect(await chain.decide(call('read'), {})).toMatchObject({
      decision: 'approve',
      resolver: YOLO_RESOLVER,
    });
    const bash = await chain.decide(call('bash', { command: 'ls', label: 'l', timeout: null }), {});
    expect(bash).toMatchObject({ decision: 'require_approval', resolver: null });
    expect(bash.trace.find((s) => s.resolver === YOLO_RESOLVER)).toMatchObject({
      outcome: 'passed',
      notes: ["YOLO mode is on, but 'bash' is never approved automatically"],
    });
    // Only in that buffer.
    expect((await chain.decide(call('read', {}, 2), {})).decision).toBe('require_approval');
  });

  it('follows tools.yolo unless the buffer toggled it', async () => {
    const session = new SessionApprovals();
    const chain = chainFor(session, { yolo: true });
    expect((await chain.decide(call('read'), {})).resolver).toBe(YOLO_RESOLVER);
    session.setYolo(1, false);
    expect((await chain.decide(call('read'), {})).decision).toBe('require_approval');
  });
});
