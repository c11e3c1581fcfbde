// Slash commands in the core (docs/slash-commands.md): the parser reads `/name args` lines of
// `@You:` messages only (not in fences, tool results or replies), the prompt leaves their lines
// out or puts a rewrite's text in their place, and the plan keeps the options of the message
// being sent only.
import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { assemblePrompt, nothingNewToSend } from '../../src/core/chat/prompt.js';
import {
  type SlashResolution,
  readSlashCommand,
  slashPlan,
  slashUses,
} from '../../src/core/chat/slash.js';
import { toolResult, toolUse } from '../helpers/chat-lines.js';

const CHAT = [
  '@You:',
  'One.',
  '/thinking off',
  '@Assistant:',
  'Two.',
  '@You:',
  'Three.',
  '/pirate treasure',
  '',
  'Four.',
  '/model x',
];

describe('readSlashCommand', () => {
  it.each([
    ['/thinking off', { name: 'thinking', args: 'off' }],
    ['/flemma:model\tanthropic/claude ', { name: 'flemma:model', args: 'anthropic/claude' }],
    ['/a-b_c', { name: 'a-b_c', args: '' }],
  ])('reads %j', (line, expected) => {
    expect(readSlashCommand(line, 4)).toEqual({
      kind: 'slash_command',
      ...expected,
      span: { startLine: 4, endLine: 4 },
    });
  });

  it.each(['/usr/bin/env', '/1x', '/a:', '/a:b:c', ' /indented', '/', 'text /thinking'])(
    'leaves %j as text',
    (line) => {
      expect(readSlashCommand(line, 1)).toBeUndefined();
    },
  );
});

describe('slash commands in the tree and the prompt', () => {
  it('are read in @You: text only, and their lines are not sent', () => {
    const document = parseLines([
      ...CHAT.slice(0, 3),
      '```',
      '/in-a-fence',
      '```',
      '@Assistant:',
      '/in-a-reply',
    ]);
    expect(slashUses(document)).toEqual([{ name: 'thinking', args: 'off', line: 3, last: true }]);
    const prompt = assemblePrompt(document);
    expect(prompt.messages.map((message) => message.parts)).toEqual([
      [
        { kind: 'text', text: 'One.' },
        { kind: 'text', text: '\n' },
        { kind: 'text', text: '```\n/in-a-fence\n```' },
      ],
      [{ kind: 'text', text: '/in-a-reply' }],
    ]);
  });

  it('marks the commands of the last message, and a rewrite stands in its line', () => {
    const document = parseLines(CHAT);
    expect(slashUses(document).map((use) => [use.name, use.last])).toEqual([
      ['thinking', false],
      ['pirate', true],
      ['model', true],
    ]);
    const texts = new Map([[8, 'Answer as a pirate.']]);
    const last = assemblePrompt(document, texts).messages.at(-1);
    expect(last?.parts.map((part) => (part.kind === 'text' ? part.text : '')).join('')).toBe(
      'Three.\nAnswer as a pirate.\nFour.',
    );
  });

  it('a message of commands only sends nothing, unless a rewrite gives it text', () => {
    const document = parseLines(['@You:', 'Hi.', '@Assistant:', 'Hello.', '@You:', '/pirate']);
    expect(nothingNewToSend(document, assemblePrompt(document))).toBe(true);
    const texts = new Map([[6, 'Arr.']]);
    expect(nothingNewToSend(document, assemblePrompt(document, texts), texts)).toBe(false);
    expect(assemblePrompt(document, texts).messages.at(-1)?.parts).toEqual([
      { kind: 'text', text: 'Arr.' },
    ]);
  });
});

describe('the turn a send goes on with', () => {
  const RESULTS = [
    '@Assistant:',
    ...toolUse('bash', 'toolu_1', '{"command":"ls"}'),
    '',
    '@You:',
    ...toolResult('toolu_1', ['a.txt']),
  ];
  const marked = (lines: string[]): boolean[] =>
    slashUses(parseLines(lines)).map((use) => use.last);

  it.each<[string, string[], boolean[]]>([
    ['a follow-up after tool results', [...CHAT, ...RESULTS], [false, true, true]],
    ['a follow-up after two rounds', [...CHAT, ...RESULTS, ...RESULTS], [false, true, true]],
    [
      'a new message of the user',
      [...CHAT, ...RESULTS, '', '@You:', 'Next.'],
      [false, false, false],
    ],
    [
      'an empty @You: after the reply',
      [...CHAT, '@Assistant:', 'Done.', '@You:', ''],
      [false, false, false],
    ],
  ])('%s', (_, lines, expected) => {
    expect(marked(lines)).toEqual(expected);
  });
});

describe('slashPlan', () => {
  const uses = slashUses(parseLines(CHAT));
  const op = { path: ['parameters', 'thinking'], op: 'set' as const, value: false, line: 1 };

  it('keeps the rewrites of every message and the options of the last one', () => {
    const plan = slashPlan(uses, [
      { kind: 'options', ops: [op] },
      { kind: 'rewrite', text: 'Arr.' },
      { kind: 'options', ops: [{ ...op, path: ['model'], value: 'x' }] },
    ]);
    expect(plan).toEqual({
      texts: new Map([[8, 'Arr.']]),
      ops: [{ ...op, path: ['model'], value: 'x', line: 11 }],
    });
  });

  it.each<[SlashResolution[], string]>([
    [[{ kind: 'error', message: 'unknown slash command /thinking' }], 'line 3: unknown'],
    [[], '/thinking (line 3): no answer from the registry'],
  ])('stops at the first problem', (resolutions, problem) => {
    expect(slashPlan(uses, resolutions).problem).toContain(problem);
  });
});
