// `flemma run`'s configuration without Neovim: a Lua frontmatter's literal forms read as Lua
// would record them (and anything needing evaluation refused with its line), operations checked
// against the schema's data with Lua's canonical paths and trust classes, a user's JSON options
// merged over the defaults, and the command line.
import { describe, expect, it } from 'vitest';
import { luaLiteralFrontmatter } from '../../src/core/config/lua-literal.js';
import { checkOps, schemaDefaults } from '../../src/core/config/schema-data.js';
import { mergeUserConfig } from '../../src/core/config/user-config.js';
import { readArgs } from '../../src/cli/args.js';
import { failureLine } from '../../src/cli/output.js';

describe('a Lua frontmatter read as literals', () => {
  it('records assignments, list methods, + and -, and variables with their buffer lines', () => {
    const code = [
      'flemma.opt.provider = "openai" -- a comment',
      "flemma.opt.parameters['temperature'] = 0.5",
      'flemma.opt.tools:remove("bash")',
      'flemma.opt.tools.auto_approve:append({ "read", "grep" })',
      'flemma.opt.tools = flemma.opt.tools - "write" + "ls"',
      '--[[ a long',
      'comment ]] customer = [[Ana]]',
      'limits = { a = 1, [ "b" ] = -2.5e1, 3, true, nil }',
    ].join('\n');
    expect(luaLiteralFrontmatter(code, 2)).toEqual({
      ops: [
        { path: ['provider'], op: 'set', value: 'openai', line: 2 },
        { path: ['parameters', 'temperature'], op: 'set', value: 0.5, line: 3 },
        { path: ['tools'], op: 'remove', value: 'bash', line: 4 },
        { path: ['tools', 'auto_approve'], op: 'append', value: 'read', line: 5 },
        { path: ['tools', 'auto_approve'], op: 'append', value: 'grep', line: 5 },
        { path: ['tools'], op: 'remove', value: 'write', line: 6 },
        { path: ['tools'], op: 'append', value: 'ls', line: 6 },
      ],
      variables: { customer: 'Ana', limits: { a: 1, b: -25, __list: [3, true, null] } },
    });
  });

  it.each([
    ['flemma.opt.model = os.getenv("MODEL")', 2, "'os'"],
    ['\n\nflemma.opt.model = "a" .. "b"', 4, "'..'"],
    ['flemma.opt.tools.auto_approve = function() return true end', 2, "'function'"],
    ['local x = 1', 2, "'local'"],
    ['if true then end', 2, "'if'"],
    ['flemma.opt.model = "unfinished', 2, 'unfinished string'],
  ])('refuses %j at its line', (code, line, what) => {
    const answer = luaLiteralFrontmatter(code, 2);
    expect('error' in answer).toBe(true);
    const { error } = answer as { error: string };
    expect(error.startsWith(`frontmatter line ${String(line)}: `)).toBe(true);
    expect(error).toContain(what);
  });
});

describe('operations checked against the schema data', () => {
  const op = (path: string[], value: unknown, kind: 'set' | 'append' = 'set') => ({
    path,
    op: kind,
    value,
    line: 3,
  });

  it('answers canonical paths and the trust classes Lua gives', () => {
    expect(
      checkOps([
        op(['thinking'], 'high'),
        op(['anthropic', 'base_url'], 'http://x'),
        op(['tools', 'approve'], ['read']),
        op(['tools'], 'read', 'append'),
        op(['tools', 'yolo'], false),
        op(['model'], 'm'),
      ]),
    ).toEqual({
      ops: [
        { ...op(['parameters', 'thinking'], 'high'), trust: 'safe' },
        { ...op(['parameters', 'anthropic', 'base_url'], 'http://x'), trust: 'needs_trust' },
        { ...op(['tools', 'auto_approve'], ['read']), trust: 'subset' },
        { ...op(['tools'], 'read', 'append'), trust: 'subset' },
        { ...op(['tools', 'yolo'], false), trust: { only: [false] } },
        { ...op(['model'], 'm'), trust: 'safe' },
      ],
    });
  });

  it.each([
    [op(['tools', 'max_concurent'], 2), 'unknown option flemma.opt.tools.max_concurent'],
    [op(['tools', 'max_concurrent'], 'two'), "option 'flemma.opt.tools.max_concurrent' must be"],
    [op(['model'], 'x', 'append'), 'flemma.opt.model is not a list'],
  ])('refuses a wrong one with its line (%j)', (entry, message) => {
    expect(checkOps([entry])).toEqual({
      error: expect.stringContaining(`frontmatter line 3: ${message}`) as unknown,
    });
  });
});

describe("the user's JSON options", () => {
  it('merge over the defaults: objects by key, lists replaced, aliases moved', () => {
    const merged = mergeUserConfig(
      schemaDefaults(),
      {
        provider: 'openai',
        thinking: 'low',
        tools: ['read'],
        sandbox: { policy: { network: false } },
      },
      'config.json',
    );
    expect('config' in merged).toBe(true);
    const config = (merged as { config: Record<string, Record<string, unknown>> }).config;
    expect(config['provider']).toBe('openai');
    expect(config['parameters']?.['thinking']).toBe('low');
    expect(config['tools']?.['__list']).toEqual(['read']);
    expect(config['tools']?.['max_concurrent']).toBe(2);
    expect(config['sandbox']?.['policy']).toMatchObject({
      network: false,
      allow_privileged: false,
    });
  });

  it('name the file and the wrong option', () => {
    expect(mergeUserConfig(schemaDefaults(), { tool: {} }, 'c.json')).toEqual({
      error: "c.json: unknown option 'tool'",
    });
    expect(
      mergeUserConfig(
        schemaDefaults(),
        { temperature: 1, parameters: { temperature: 1 } },
        'c.json',
      ),
    ).toEqual({
      error: expect.stringContaining('set only one of them') as unknown,
    });
  });
});

describe('the command line', () => {
  it('reads run and its options', () => {
    expect(
      readArgs([
        'run',
        'a.chat',
        '--trust',
        '--max-turns',
        '3',
        '--max-cost',
        '0.5',
        '--model',
        'm',
      ]),
    ).toEqual({
      command: 'run',
      file: 'a.chat',
      trust: true,
      json: false,
      dryRun: false,
      quiet: false,
      maxTurns: 3,
      maxCost: 0.5,
      model: 'm',
    });
  });

  it.each([
    [['run'], 'needs a chat file'],
    [['run', 'a.chat', 'b.chat'], 'takes one chat file'],
    [['run', 'a.chat', '--max-turns', '0'], '--max-turns must be a whole number above 0'],
    [['run', 'a.chat', '--bogus'], "Unknown option '--bogus'"],
    [['walk'], "unknown command 'walk'"],
  ])('refuses %j', (argv, message) => {
    expect(() => readArgs(argv)).toThrow(message);
  });
});

describe('the line of an error nothing else caught', () => {
  it('says the error with the secrets of the environment and key-shaped strings redacted', () => {
    const env = { ANTHROPIC_API_KEY: 'sk-ant-very-secret-value-1234', HOME: '/home/me' };
    const line = failureLine(
      new Error('could not read /home/me/x: sk-ant-very-secret-value-1234 rejected'),
      env,
    );
    expect(line).toMatch(/^flemma: error: could not read \/home\/me\/x: .* rejected\n$/);
    expect(line).not.toContain('very-secret');
    expect(failureLine('plain', {}, '')).toBe('flemma: plain\n');
  });
});
