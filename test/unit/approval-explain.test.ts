// What `:Flemma status` and `:Flemma tool:why` say of a buffer's approval policy
// (src/core/approval/explain.ts): the list it uses, where each part came from, and the resolvers
// its frontmatter's own setting puts aside.
import { describe, expect, it } from 'vitest';
import { approvalOps, policyLines } from '../../src/core/approval/explain.js';
import { presetTable } from '../../src/core/approval/presets.js';

const presets = presetTable(undefined).presets;

describe('policyLines', () => {
  it('shows the configuration list with its layer and what a preset expands to', () => {
    expect(
      policyLines({
        configured: ['$readonly', 'bash'],
        layer: 'setup',
        ops: [],
        presets,
        sandboxed: true,
      }),
    ).toEqual([
      'approval policy of this buffer:',
      '  tools.auto_approve: ["$readonly","bash"]',
      '    $readonly  (setup) = read, ls, grep, find',
      '    bash  (setup)',
    ]);
  });

  it('names the frontmatter line of each part a buffer added or removed', () => {
    const lines = policyLines({
      configured: ['$default'],
      layer: 'default',
      own: {
        kind: 'list',
        assigned: false,
        list: { items: ['$default', 'bash'], removed: ['edit'] },
      },
      ops: [
        { op: 'append', value: 'bash', line: 2 },
        { op: 'remove', value: 'edit', line: 3 },
      ],
      presets,
      sandboxed: true,
    });
    expect(lines).toContain('    $default  (default) = read, ls, grep, find, write');
    expect(lines).toContain('    bash  (frontmatter line 2)');
    expect(lines).toContain('    removed: edit  (frontmatter line 3)');
    expect(lines.at(-1)).toBe(
      '  the frontmatter edits the list: urn:flemma:approval:frontmatter decides, in place of urn:flemma:approval:config (tools.auto_approve of default)',
    );
  });

  it('says an assigned list puts the sandbox resolver aside too (unless it is off)', () => {
    const input = {
      configured: ['$default'],
      layer: 'setup',
      own: { kind: 'list' as const, assigned: true, list: { items: ['read'], removed: [] } },
      ops: [{ op: 'set' as const, value: ['read'], line: 2 }],
      presets,
    };
    const on = policyLines({ ...input, sandboxed: true });
    expect(on).toContain('    read  (frontmatter line 2)');
    expect(on.at(-1)).toContain(
      'urn:flemma:approval:config (tools.auto_approve of setup) and urn:flemma:approval:sandbox (sandboxed tools)',
    );
    expect(policyLines({ ...input, sandboxed: false }).at(-1)).not.toContain('sandbox');
  });

  it('shows a function and a module as such', () => {
    expect(
      policyLines({
        configured: 'my.policy',
        layer: 'setup',
        ops: [],
        presets,
        sandboxed: true,
      })[1],
    ).toBe("  tools.auto_approve: the module 'my.policy'  (setup)");
    const own = policyLines({
      configured: ['$default'],
      layer: 'default',
      own: { kind: 'function', assigned: true },
      ops: [{ op: 'set', value: { __function: true }, line: 4 }],
      presets,
      sandboxed: true,
    });
    expect(own[1]).toBe('  tools.auto_approve: a function  (frontmatter line 4)');
    expect(own.at(-1)).toContain('the frontmatter assigns its own function');
  });
});

describe('approvalOps', () => {
  it('keeps the operations on tools.auto_approve that were applied', () => {
    expect(
      approvalOps(
        [
          { path: ['model'], op: 'set', value: 'm', line: 1 },
          { path: ['tools', 'auto_approve'], op: 'append', value: 'bash', line: 2 },
          { path: ['tools', 'auto_approve'], op: 'append', value: 'write', line: 3 },
        ],
        [{ key: 'flemma.opt.tools.auto_approve', line: 3 }],
      ),
    ).toEqual([{ op: 'append', value: 'bash', line: 2 }]);
  });
});
