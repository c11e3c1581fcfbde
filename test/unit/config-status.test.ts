// `:Flemma status`: each value with the layer that set it.
import { describe, expect, it } from 'vitest';
import { flatten, layerOf, statusLines } from '../../src/core/config/status.js';

const op = (path: string, line: number) => ({
  path: path.split('.'),
  op: 'set' as const,
  value: null,
  line,
});

describe('layerOf', () => {
  it('prefers the frontmatter (its last operation on the option, a parent or a child)', () => {
    const ops = [op('tools.auto_approve', 3), op('parameters.temperature', 4), op('tools', 5)];
    expect(layerOf('tools.auto_approve', {}, ops)).toBe('frontmatter line 5');
    expect(layerOf('parameters.temperature', { 'parameters.temperature': 'setup' }, ops)).toBe(
      'frontmatter line 4',
    );
  });

  it('a list operation on tools is about the list, not the options under tools', () => {
    const ops = [{ path: ['tools'], op: 'remove' as const, value: 'bash', line: 3 }];
    expect(layerOf('tools', {}, ops)).toBe('frontmatter line 3');
    expect(layerOf('tools.autopilot', {}, ops)).toBe('default');
    expect(layerOf('tools.autopilot', {}, [op('tools', 4)])).toBe('frontmatter line 4');
  });

  it('then the origin of the option or of its nearest parent, else default', () => {
    const origins = {
      model: 'setup',
      'tools.autopilot.enabled': 'runtime (:Flemma autopilot:disable)',
    };
    expect(layerOf('model', origins, [])).toBe('setup');
    expect(layerOf('tools.autopilot', origins, [])).toBe('runtime (:Flemma autopilot:disable)');
    expect(layerOf('provider', origins, [])).toBe('default');
  });
});

describe('flatten', () => {
  it('lists leaves, lists as leaves, the tools list as "tools", functions as values', () => {
    expect(
      flatten({
        provider: 'x',
        tools: {
          __list: ['read'],
          auto_approve: { __function: true },
          autopilot: { enabled: true },
        },
      }),
    ).toEqual([
      ['provider', 'x'],
      ['tools', ['read']],
      ['tools.auto_approve', { __function: true }],
      ['tools.autopilot.enabled', true],
    ]);
  });
});

describe('statusLines', () => {
  const input = {
    bufnr: 3,
    name: 'chats/a.chat',
    config: {
      provider: 'openai',
      model: 'gpt-5.4',
      parameters: {
        temperature: 0.3,
        max_tokens: 4000,
        anthropic: { thinking_budget: 1 },
        openai: { reasoning: 'high' },
      },
      tools: {
        auto_approve: ['$default'],
        autopilot: { enabled: false, max_turns: 100, resume_delay: 0 },
      },
      sandbox: { enabled: true },
    },
    origins: { 'parameters.max_tokens': 'setup' },
    ops: [op('provider', 2), op('model', 3), op('parameters.temperature', 4)],
    tools: ['bash', 'read'],
    resolvers: [
      { name: 'urn:flemma:approval:config', priority: 100, description: '' },
      { name: 'urn:flemma:approval:frontmatter', priority: 90, description: '' },
    ],
    sandbox: 'enabled, backend bwrap',
    autopilot: { state: 'idle', iteration: 0 },
    trust: { trusted: true, why: 'allowed' },
    refused: [],
    verbose: false,
  };

  it('shows the provider’s own parameters with the general ones, each with its layer', () => {
    const lines = statusLines(input);
    expect(lines).toContain('provider: "openai"  (frontmatter line 2)');
    expect(lines).toContain('model: "gpt-5.4"  (frontmatter line 3)');
    expect(lines).toContain('  temperature = 0.3  (frontmatter line 4)');
    expect(lines).toContain('  max_tokens = 4000  (setup)');
    expect(lines).toContain('  openai.reasoning = "high"  (default)');
    expect(lines.join('\n')).not.toContain('thinking_budget');
    expect(lines).toContain('tools (2): bash, read  (default)');
    expect(lines).toContain('   90  urn:flemma:approval:frontmatter');
    expect(lines.some((line) => line.startsWith('autopilot: disabled, max_turns 100'))).toBe(true);
    expect(lines).toContain('sandbox: enabled, backend bwrap  (default)');
  });

  it('lists every option when verbose, and the frontmatter’s problem first', () => {
    const lines = statusLines({ ...input, verbose: true, problem: 'frontmatter line 2: boom' });
    expect(lines[2]).toBe('! frontmatter line 2: boom');
    expect(lines).toContain('  parameters.anthropic.thinking_budget = 1  (default)');
  });

  it('says whether the file is trusted, and lists what it refuses with their lines', () => {
    expect(statusLines(input)).toContain('trust: trusted (:trust)');
    const lines = statusLines({
      ...input,
      trust: { trusted: false, why: 'untrusted' },
      refused: [
        { what: 'flemma.opt.parameters.anthropic.base_url', line: 4 },
        { what: '@~/.ssh/id_rsa', line: 9 },
      ],
    });
    expect(lines).toContain('trust: not trusted (:trust applies what needs trust)');
    const at = lines.indexOf('refused until :trust:');
    expect(lines.slice(at + 1, at + 3)).toEqual([
      '  line 4: flemma.opt.parameters.anthropic.base_url',
      '  line 9: @~/.ssh/id_rsa',
    ]);
    expect(statusLines({ ...input, trust: { trusted: false, why: 'changed' } })).toContain(
      'trust: not trusted: changed outside this Neovim since :trust (review it, then :trust)',
    );
  });
});
