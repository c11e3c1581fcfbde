// The frontmatter layer: operations applied over the configuration (docs/frontmatter.md,
// "Layers"; scenarios 27, 30 and 31) and JSON frontmatter's operators.
import { describe, expect, it } from 'vitest';
import * as yaml from 'yaml';
import {
  applyFrontmatter,
  type ConfigOp,
  jsonFrontmatter,
  type ToolNames,
  yamlFrontmatter,
} from '../../src/core/config/frontmatter.js';

const TOOLS: ToolNames = {
  enabled: ['bash', 'edit', 'find', 'grep', 'ls', 'read', 'write'],
  has: (name) => ['bash', 'edit', 'find', 'grep', 'ls', 'read', 'write', 'extra'].includes(name),
  suggest: (name) => (name === 'bsh' ? 'bash' : undefined),
};

const op = (path: string, kind: ConfigOp['op'], value: unknown, line = 2): ConfigOp => ({
  path: path.split('.'),
  op: kind,
  value,
  line,
});

const TRUSTED = { trusted: true };

const SETUP = {
  provider: 'anthropic',
  model: 'claude-sonnet-4-6',
  parameters: { temperature: 0.2, anthropic: {} },
  tools: {
    auto_approve: ['$default'],
    max_concurrent: 2,
    autopilot: { enabled: true, max_turns: 7 },
  },
};

describe('applyFrontmatter', () => {
  it('switches provider and model for the buffer and leaves the snapshot it was given alone', () => {
    const applied = applyFrontmatter(
      SETUP,
      [op('provider', 'set', 'openai'), op('model', 'set', 'o3')],
      TOOLS,
      TRUSTED,
    );
    expect(applied.error).toBeUndefined();
    expect(applied.config['provider']).toBe('openai');
    expect(applied.config['model']).toBe('o3');
    expect(SETUP.provider).toBe('anthropic');
  });

  it('sets nested parameters and keeps their siblings', () => {
    const applied = applyFrontmatter(
      SETUP,
      [op('parameters.anthropic.thinking_budget', 'set', 2048)],
      TOOLS,
      TRUSTED,
    );
    expect(applied.config['parameters']).toEqual({
      temperature: 0.2,
      anthropic: { thinking_budget: 2048 },
    });
  });

  it('starts flemma.opt.tools from every enabled tool and applies list operations in order', () => {
    const applied = applyFrontmatter(
      SETUP,
      [
        op('tools', 'remove', 'bash'),
        op('tools', 'append', 'extra'),
        op('tools', 'prepend', 'read'),
      ],
      TOOLS,
      TRUSTED,
    );
    expect((applied.config['tools'] as { __list: string[] }).__list).toEqual([
      'read',
      'edit',
      'find',
      'grep',
      'ls',
      'write',
      'extra',
    ]);
    // The other tools settings are kept.
    expect((applied.config['tools'] as { max_concurrent: number }).max_concurrent).toBe(2);
  });

  it('starts from the configured list when there is one, and a set replaces it', () => {
    const configured = { ...SETUP, tools: { ...SETUP.tools, __list: ['read', 'grep'] } };
    expect(
      (
        applyFrontmatter(configured, [op('tools', 'append', 'ls')], TOOLS, TRUSTED).config[
          'tools'
        ] as {
          __list: string[];
        }
      ).__list,
    ).toEqual(['read', 'grep', 'ls']);
    expect(
      (
        applyFrontmatter(configured, [op('tools', 'set', ['bash'])], TOOLS, TRUSTED).config[
          'tools'
        ] as {
          __list: string[];
        }
      ).__list,
    ).toEqual(['bash']);
  });

  it('names the line and suggests a tool for an unknown name', () => {
    const applied = applyFrontmatter(SETUP, [op('tools', 'remove', 'bsh', 3)], TOOLS, TRUSTED);
    expect(applied.error).toBe(
      "frontmatter line 3: unknown tool 'bsh' in flemma.opt.tools (did you mean 'bash'?)",
    );
    expect(applyFrontmatter(SETUP, [op('tools', 'append', 'nope')], TOOLS, TRUSTED).error).toBe(
      "frontmatter line 2: unknown tool 'nope' in flemma.opt.tools",
    );
  });

  describe('tools.auto_approve (scenario 27)', () => {
    it('a set replaces the configuration’s list', () => {
      const applied = applyFrontmatter(
        SETUP,
        [op('tools.auto_approve', 'set', ['bash'])],
        TOOLS,
        TRUSTED,
      );
      expect(applied.approval).toEqual({
        kind: 'list',
        list: { items: ['bash'], removed: [] },
        assigned: true,
      });
    });

    it(':remove("write") on $default keeps the preset and records the removal', () => {
      const applied = applyFrontmatter(
        SETUP,
        [op('tools.auto_approve', 'remove', 'write')],
        TOOLS,
        TRUSTED,
      );
      expect(applied.approval).toEqual({
        kind: 'list',
        list: { items: ['$default'], removed: ['write'] },
        assigned: false,
      });
    });

    it('an empty list approves nothing; $default + bash appends', () => {
      expect(
        applyFrontmatter(SETUP, [op('tools.auto_approve', 'set', [])], TOOLS, TRUSTED).approval,
      ).toEqual({ kind: 'list', list: { items: [], removed: [] }, assigned: true });
      expect(
        applyFrontmatter(SETUP, [op('tools.auto_approve', 'append', 'bash')], TOOLS, TRUSTED)
          .approval,
      ).toEqual({
        kind: 'list',
        list: { items: ['$default', 'bash'], removed: [] },
        assigned: false,
      });
    });

    it('a function stays a function; list operations on it are an error', () => {
      const fn = { __function: true };
      expect(
        applyFrontmatter(SETUP, [op('tools.auto_approve', 'set', fn)], TOOLS, TRUSTED).approval,
      ).toEqual({ kind: 'function', assigned: true });
      const onFunction = applyFrontmatter(
        SETUP,
        [op('tools.auto_approve', 'set', fn), op('tools.auto_approve', 'append', 'read', 4)],
        TOOLS,
        TRUSTED,
      );
      expect(onFunction.error).toMatch(/^frontmatter line 4: .*is a function/);
    });

    it('no frontmatter approval when it does not touch auto_approve', () => {
      expect(
        applyFrontmatter(SETUP, [op('model', 'set', 'x')], TOOLS, TRUSTED).approval,
      ).toBeUndefined();
    });
  });

  it('autopilot = false switches it off and keeps max_turns (scenario 32)', () => {
    const applied = applyFrontmatter(SETUP, [op('tools.autopilot', 'set', false)], TOOLS, TRUSTED);
    expect((applied.config['tools'] as { autopilot: unknown }).autopilot).toEqual({
      enabled: false,
      max_turns: 7,
    });
  });
});

describe('jsonFrontmatter (scenario 30)', () => {
  const code = (value: unknown): string => JSON.stringify(value, null, 2);

  it('turns "flemma" keys into operations and the rest into template variables', () => {
    const result = jsonFrontmatter(
      code({
        customer: 'Ana',
        items: [1, 2],
        flemma: { parameters: { temperature: 0.4 }, provider: 'openai' },
      }),
      2,
    );
    expect(result).toEqual({
      variables: { customer: 'Ana', items: [1, 2] },
      ops: [
        { path: ['parameters', 'temperature'], op: 'set', value: 0.4, line: 10 },
        { path: ['provider'], op: 'set', value: 'openai', line: 12 },
      ],
    });
  });

  it('understands $set, $append, $prepend and $remove, with a value or a list, beside child keys', () => {
    const result = jsonFrontmatter(
      code({
        flemma: {
          tools: {
            $remove: ['bash', 'write'],
            $append: 'extra',
            auto_approve: { $prepend: 'ls', $set: ['$readonly'] },
            max_concurrent: 1,
          },
        },
      }),
      2,
    );
    if ('error' in result) throw new Error(result.error);
    expect(result.ops.map((o) => [o.path.join('.'), o.op, o.value])).toEqual([
      ['tools', 'remove', 'bash'],
      ['tools', 'remove', 'write'],
      ['tools', 'append', 'extra'],
      ['tools.auto_approve', 'prepend', 'ls'],
      ['tools.auto_approve', 'set', ['$readonly']],
      ['tools.max_concurrent', 'set', 1],
    ]);
  });

  it('reports an unknown operator with its line', () => {
    const result = jsonFrontmatter(code({ flemma: { tools: { $delete: 'bash' } } }), 2);
    expect(result).toEqual({
      error:
        'frontmatter line 4: unknown operator "$delete" (use $set, $append, $prepend or $remove)',
    });
  });

  it('reports invalid JSON as an error of the frontmatter', () => {
    // NOTE: Node 20's message has no position; newer ones give one, which becomes the line.
    const result = jsonFrontmatter('{\n  "a": 1,\n  "b": \n}', 2);
    expect('error' in result && result.error).toMatch(/^frontmatter line [25]: invalid JSON: /);
  });

  it('refuses a frontmatter that is not an object, and a "flemma" that is not one', () => {
    expect(jsonFrontmatter('[1]', 2)).toEqual({
      error: 'frontmatter line 2: a JSON frontmatter must be an object',
    });
    expect(jsonFrontmatter('{"flemma": 3}', 2)).toEqual({
      error: 'frontmatter line 2: "flemma" must be an object of options',
    });
  });

  it('applies with list operations over the tools (removing two built-ins)', () => {
    const result = jsonFrontmatter(code({ flemma: { tools: { $remove: ['bash', 'write'] } } }), 2);
    if ('error' in result) throw new Error(result.error);
    const applied = applyFrontmatter(SETUP, result.ops, TOOLS, TRUSTED);
    expect((applied.config['tools'] as { __list: string[] }).__list).toEqual([
      'edit',
      'find',
      'grep',
      'ls',
      'read',
    ]);
  });
});

describe('yamlFrontmatter', () => {
  it('reads like JSON: options under flemma with operators, the rest as variables', () => {
    const code = [
      'customer: Ana',
      'flemma:',
      '  provider: openai',
      '  tools:',
      '    $remove: [bash]',
    ].join('\n');
    expect(yamlFrontmatter(code, 2, yaml)).toEqual({
      variables: { customer: 'Ana' },
      ops: [
        { path: ['provider'], op: 'set', value: 'openai', line: 4 },
        { path: ['tools'], op: 'remove', value: 'bash', line: 5 },
      ],
    });
  });

  it('names the line of a syntax error, and takes an empty frontmatter as nothing', () => {
    const result = yamlFrontmatter('a: 1\nb: [1, 2\n', 2, yaml);
    expect('error' in result && result.error).toMatch(
      /^frontmatter line [2-4]: invalid YAML: Flow sequence/,
    );
    expect(yamlFrontmatter('', 2, yaml)).toEqual({ ops: [], variables: {} });
  });
});
