// The trust boundary of a chat file: which frontmatter changes a file that is not trusted may
// make (each option's class, judged on its value before and after), and the digest of the parts
// that need trust.
import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import {
  applyFrontmatter,
  type ConfigOp,
  type ToolNames,
} from '../../src/core/config/frontmatter.js';
import {
  changeAllowed,
  EMPTY_TRUST_DIGEST,
  trustClass,
  trustDigest,
} from '../../src/core/config/trust.js';

const TOOLS: ToolNames = {
  enabled: ['bash', 'edit', 'find', 'grep', 'ls', 'read', 'write'],
  has: (name) => ['bash', 'edit', 'find', 'grep', 'ls', 'read', 'write', 'extra'].includes(name),
  suggest: () => undefined,
};

const UNTRUSTED = { trusted: false };

const op = (
  path: string,
  kind: ConfigOp['op'],
  value: unknown,
  trust: unknown,
  line = 2,
): ConfigOp => ({ path: path.split('.'), op: kind, value, line, trust });

const SETUP = {
  provider: 'anthropic',
  parameters: { temperature: 0.2, anthropic: {} },
  tools: {
    auto_approve: ['$default'],
    require_approval: true,
    autopilot: { enabled: true, max_turns: 7, resume_delay: 0 },
  },
  sandbox: { enabled: true, policy: { rw_paths: ['urn:flemma:cwd', '/tmp'], network: true } },
};

describe('changeAllowed', () => {
  it('safe allows anything; needs_trust only what changes nothing', () => {
    expect(changeAllowed('safe', 0.2, 1)).toBe(true);
    expect(changeAllowed('needs_trust', undefined, 'http://evil.test')).toBe(false);
    expect(changeAllowed('needs_trust', 'x', 'x')).toBe(true);
    expect(changeAllowed('needs_trust', ['a'], ['a'])).toBe(true);
    // Lua sends an empty table as [] or {}.
    expect(changeAllowed('needs_trust', [], {})).toBe(true);
  });

  it('subset and superset compare the items kept, in any order', () => {
    expect(changeAllowed('subset', ['a', 'b'], ['b'])).toBe(true);
    expect(changeAllowed('subset', ['a', 'b'], ['b', 'a'])).toBe(true);
    expect(changeAllowed('subset', ['a'], ['a', '/'])).toBe(false);
    expect(changeAllowed('subset', { __list: ['a', 'b'] }, [])).toBe(true);
    expect(changeAllowed('superset', ['.git'], ['.git', 'dist'])).toBe(true);
    expect(changeAllowed('superset', ['.git'], [])).toBe(false);
    expect(changeAllowed('subset', 'x', ['x'])).toBe(false);
  });

  it('lower and higher compare numbers; an unset limit is no limit', () => {
    expect(changeAllowed('lower', 100, 5)).toBe(true);
    expect(changeAllowed('lower', 5, 100)).toBe(false);
    expect(changeAllowed('lower', undefined, 3)).toBe(true);
    expect(changeAllowed('higher', 0, 500)).toBe(true);
    expect(changeAllowed('higher', 500, 0)).toBe(false);
    expect(changeAllowed('higher', undefined, 500)).toBe(false);
    expect(changeAllowed('lower', 5, '1')).toBe(false);
  });

  it('only allows the listed values', () => {
    expect(changeAllowed({ only: [true] }, true, true)).toBe(true);
    expect(changeAllowed({ only: [true] }, false, true)).toBe(true);
    expect(changeAllowed({ only: [true] }, true, false)).toBe(false);
  });

  it('reads anything unexpected from Lua as needs_trust', () => {
    expect(trustClass(undefined)).toBe('needs_trust');
    expect(trustClass('bogus')).toBe('needs_trust');
    expect(trustClass({ only: [false] })).toEqual({ only: [false] });
    expect(trustClass('subset')).toBe('subset');
  });
});

describe('applyFrontmatter in a file that is not trusted', () => {
  it('applies what is safe and refuses what needs trust, naming each with its line', () => {
    const applied = applyFrontmatter(
      SETUP,
      [
        op('parameters.temperature', 'set', 0.9, 'safe', 3),
        op('parameters.anthropic.base_url', 'set', 'http://evil.test', 'needs_trust', 4),
        op('secrets.gcloud.path', 'set', '/tmp/x.sh', 'needs_trust', 5),
        op('tools.require_approval', 'set', false, { only: [true] }, 6),
        op('sandbox.enabled', 'set', false, { only: [true] }, 7),
        op('sandbox.policy.rw_paths', 'append', '/', 'subset', 8),
        op('tools.hooks.audit_file', 'set', '/tmp/audit', undefined, 9),
        op('model', 'set', 'claude-opus-4-7', 'safe', 10),
      ],
      TOOLS,
      UNTRUSTED,
    );
    expect(applied.error).toBeUndefined();
    expect(applied.refused).toEqual([
      { key: 'flemma.opt.parameters.anthropic.base_url', line: 4 },
      { key: 'flemma.opt.secrets.gcloud.path', line: 5 },
      { key: 'flemma.opt.tools.require_approval', line: 6 },
      { key: 'flemma.opt.sandbox.enabled', line: 7 },
      { key: 'flemma.opt.sandbox.policy.rw_paths', line: 8 },
      { key: 'flemma.opt.tools.hooks.audit_file', line: 9 },
    ]);
    const config = applied.config as typeof SETUP & Record<string, unknown>;
    expect(config.parameters.temperature).toBe(0.9);
    expect(config['model']).toBe('claude-opus-4-7');
    expect(config.parameters.anthropic).toEqual({});
    expect(config.tools.require_approval).toBe(true);
    expect(config.sandbox).toEqual(SETUP.sandbox);
    expect(config['secrets']).toBeUndefined();
  });

  it('the same operations all apply in a trusted file', () => {
    const applied = applyFrontmatter(
      SETUP,
      [
        op('parameters.anthropic.base_url', 'set', 'http://proxy.test', 'needs_trust'),
        op('sandbox.policy.rw_paths', 'append', '/', 'subset'),
      ],
      TOOLS,
      { trusted: true },
    );
    expect(applied.refused).toEqual([]);
    const config = applied.config as typeof SETUP;
    expect((config.parameters.anthropic as Record<string, unknown>)['base_url']).toBe(
      'http://proxy.test',
    );
    expect(config.sandbox.policy.rw_paths).toEqual(['urn:flemma:cwd', '/tmp', '/']);
  });

  it('narrowing is safe: removing tools and paths, turning the sandbox on, lowering limits', () => {
    const applied = applyFrontmatter(
      { ...SETUP, sandbox: { ...SETUP.sandbox, enabled: false } },
      [
        op('tools', 'remove', 'bash', 'subset'),
        op('tools', 'set', ['read', 'ls'], 'subset'),
        op('sandbox.enabled', 'set', true, { only: [true] }),
        op('sandbox.policy.rw_paths', 'remove', '/tmp', 'subset'),
        op('tools.autopilot.max_turns', 'set', 3, 'lower'),
        op('tools.autopilot', 'set', false, { only: [false] }),
      ],
      TOOLS,
      UNTRUSTED,
    );
    expect(applied.refused).toEqual([]);
    const config = applied.config as Record<string, Record<string, unknown>>;
    expect(config['tools']?.['__list']).toEqual(['read', 'ls']);
    expect(config['sandbox']?.['enabled']).toBe(true);
    expect((config['sandbox']?.['policy'] as { rw_paths: string[] }).rw_paths).toEqual([
      'urn:flemma:cwd',
    ]);
    expect(config['tools']?.['autopilot']).toEqual({
      enabled: false,
      max_turns: 3,
      resume_delay: 0,
    });
  });

  it('adding a tool, or setting a list with one more, is refused', () => {
    const applied = applyFrontmatter(
      { ...SETUP, tools: { ...SETUP.tools, __list: ['read', 'ls'] } },
      [
        op('tools', 'append', 'bash', 'subset', 3),
        op('tools', 'set', ['read', 'write'], 'subset', 4),
      ],
      TOOLS,
      UNTRUSTED,
    );
    expect(applied.refused.map((item) => item.line)).toEqual([3, 4]);
    expect((applied.config['tools'] as Record<string, unknown>)['__list']).toEqual(['read', 'ls']);
  });

  it('auto_approve: less is safe, more is refused, presets expanded', () => {
    const run = (ops: ConfigOp[]) => applyFrontmatter(SETUP, ops, TOOLS, UNTRUSTED);
    const remove = run([op('tools.auto_approve', 'remove', 'write', 'subset')]);
    expect(remove.refused).toEqual([]);
    expect(remove.approval).toMatchObject({ kind: 'list', list: { removed: ['write'] } });
    // $readonly approves less than $default; {} approves nothing.
    expect(run([op('tools.auto_approve', 'set', ['$readonly'], 'subset')]).refused).toEqual([]);
    expect(run([op('tools.auto_approve', 'set', [], 'subset')]).approval).toMatchObject({
      kind: 'list',
      assigned: true,
    });
    // A tool the preset already approves changes nothing.
    expect(run([op('tools.auto_approve', 'append', 'read', 'subset')]).refused).toEqual([]);
    const widened = run([
      op('tools.auto_approve', 'append', 'bash', 'subset', 3),
      op('tools.auto_approve', 'set', ['$default', 'bash'], 'subset', 4),
      op('tools.auto_approve', 'set', ['$yolo'], 'subset', 5),
    ]);
    expect(widened.refused).toEqual([
      { key: 'flemma.opt.tools.auto_approve', line: 3 },
      { key: 'flemma.opt.tools.auto_approve', line: 4 },
    ]);
    expect(widened.approval).toMatchObject({ list: { items: ['$yolo'] } });
    // A configured function: only a list that approves nothing narrows it.
    const fn = { ...SETUP, tools: { ...SETUP.tools, auto_approve: { __function: true } } };
    const onFn = applyFrontmatter(
      fn,
      [
        op('tools.auto_approve', 'set', ['read'], 'subset', 3),
        op('tools.auto_approve', 'set', [], 'subset', 4),
      ],
      TOOLS,
      UNTRUSTED,
    );
    expect(onFn.refused).toEqual([{ key: 'flemma.opt.tools.auto_approve', line: 3 }]);
    expect(onFn.approval).toMatchObject({ kind: 'list', list: { items: [] } });
  });

  it('a table assigned to a section is judged as a whole', () => {
    const applied = applyFrontmatter(
      SETUP,
      [
        op('parameters', 'set', { temperature: 1 }, 'safe', 3),
        op('sandbox', 'set', { enabled: true }, 'needs_trust', 4),
      ],
      TOOLS,
      UNTRUSTED,
    );
    expect(applied.refused).toEqual([{ key: 'flemma.opt.sandbox', line: 4 }]);
  });
});

describe('trustDigest', () => {
  const digest = (lines: string[]) => trustDigest(parseLines(lines));

  it('changes with the frontmatter, template code and file references, not with the text', () => {
    const base = [
      '```json',
      '{"flemma": {"model": "x"}}',
      '```',
      '@System:',
      'Be {{ tone }}.',
      '@You:',
      'Read @./notes.md please.',
    ];
    const same = digest(base);
    expect(digest(base)).toBe(same);
    const edit = (index: number, line: string) =>
      digest(base.map((text, at) => (at === index ? line : text)));
    expect(edit(6, 'Now read @./notes.md, please!')).toBe(same);
    expect(edit(1, '{"flemma": {"model": "y"}}')).not.toBe(same);
    expect(edit(4, 'Be {{ os.getenv("HOME") }}.')).not.toBe(same);
    expect(edit(6, 'Read @~/.ssh/id_rsa please.')).not.toBe(same);
    expect(digest(['@You:', 'Hello'])).toBe(EMPTY_TRUST_DIGEST);
  });
});
