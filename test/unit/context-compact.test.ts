// `:Flemma compact` without Neovim: the names of the chats that continue a file, the text of the
// new chat, what it carries over, the summary request, and the write beside the old file.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseChat as parse } from '../../src/core/chat/parser.js';
import { assemblePrompt } from '../../src/core/chat/prompt.js';
import {
  DEFAULT_COMPACT_PROMPT,
  carriedParts,
  compactPrompt,
  compactedChat,
  continuationName,
  summaryLines,
  summaryRequest,
  waitingCall,
} from '../../src/core/context/compact.js';
import type { ProviderRequest } from '../../src/core/provider/types.js';
import { writeContinuation } from '../../src/host/compact.js';
import { toolUse } from '../helpers/chat-lines.js';

function parts(lines: string[]): ReturnType<typeof carriedParts> {
  return carriedParts(parse(lines.join('\n')), lines);
}

describe('the name of the continuing chat', () => {
  it('numbers from 2 with a v, past the names that exist', () => {
    expect(continuationName('notes.chat', () => false)).toBe('notes.v2.chat');
    const taken = new Set(['notes.v2.chat', 'notes.v3.chat']);
    expect(continuationName('notes.chat', (name) => taken.has(name))).toBe('notes.v4.chat');
  });

  it('continues the number of a continuation', () => {
    expect(continuationName('notes.v2.chat', () => false)).toBe('notes.v3.chat');
    expect(continuationName('a.b.v9.chat', () => false)).toBe('a.b.v10.chat');
  });

  it('adds the suffix to a name without it', () => {
    expect(continuationName('notes', () => false)).toBe('notes.v2.chat');
    expect(continuationName('notes.md', () => false)).toBe('notes.md.v2.chat');
  });

  it('sorts after the file it continues, by bytes and with punctuation ignored', () => {
    for (const name of ['notes.chat', 'x.chat', 'notes.v2.chat', 'release-1.4.chat']) {
      const next = continuationName(name, () => false);
      expect(next > name).toBe(true);
      const letters = (text: string): string => text.replace(/[^A-Za-z0-9]/g, '').toLowerCase();
      expect(letters(next) > letters(name)).toBe(true);
    }
  });
});

describe('what the new chat carries over', () => {
  it('keeps the frontmatter, the last system prompt and the unanswered user messages', () => {
    const carried = parts([
      '```lua',
      'flemma.opt.model = "x"',
      '```',
      'scratch',
      '@System:',
      'first',
      '@System:',
      '',
      'second {{ name }}',
      '',
      '@You:',
      'Q1',
      '@Assistant:',
      'A1',
      '@You:',
      'Q2 with @./notes.md',
      '',
      '@Notes:',
      'never sent',
      '@You:',
      '  Q3',
      '',
      '',
    ]);
    expect(carried).toEqual({
      frontmatter: ['```lua', 'flemma.opt.model = "x"', '```'],
      system: ['second {{ name }}'],
      user: [['Q2 with @./notes.md'], ['  Q3']],
    });
  });

  it('leaves out tool results (they answer calls of the old chat) and blank messages', () => {
    const carried = parts([
      '@You:',
      'List the files.',
      '@Assistant:',
      '**Tool Use:** `bash` (`toolu_01`)',
      '',
      '```json',
      '{"command":"ls"}',
      '```',
      '@You:',
      '**Tool Result:** `toolu_01`',
      '',
      '```',
      'a.txt',
      '```',
      '',
      'Now read a.txt.',
      '@You:',
      '',
    ]);
    expect(carried.user).toEqual([['Now read a.txt.']]);
  });

  it('carries nothing when the chat ends with a reply', () => {
    expect(parts(['@You:', 'Hi', '@Assistant:', 'Hello', '', '@You:', '']).user).toEqual([]);
    expect(parts(['@You:', 'Hi', '@Assistant:', 'Hello']).user).toEqual([]);
  });

  it('stops at a tool call that waits for its result, not at an interrupted one', () => {
    const asked = ['@You:', 'go', '@Assistant:', ...toolUse('bash', 't1')];
    const waiting = assemblePrompt(
      parse(
        [
          ...asked,
          '@You:',
          '**Tool Result:** `t1`',
          '',
          '```flemma:tool status=pending',
          '```',
        ].join('\n'),
      ),
    );
    expect(waitingCall(waiting.pendingToolCalls)?.name).toBe('bash');
    const interrupted = assemblePrompt(
      parse(
        [...asked, '', '<!-- flemma:aborted: Response interrupted by the user. -->'].join('\n'),
      ),
    );
    expect(waitingCall(interrupted.pendingToolCalls)).toBeUndefined();
  });
});

describe('the text of the new chat', () => {
  it('names the old file, holds the summary as a reply, then the carried message', () => {
    const text = compactedChat({
      from: 'notes.chat',
      summary: '\n## Goal\nShip it.\n\n',
      parts: {
        frontmatter: ['```json', '{}', '```'],
        system: ['Be careful.'],
        user: [['Next: the tests.'], ['And the docs.']],
      },
    });
    expect(text).toBe(
      [
        '```json',
        '{}',
        '```',
        'Continues notes.chat (compacted with :Flemma compact; the earlier conversation is there).',
        '',
        '@System:',
        'Be careful.',
        '',
        '@You:',
        'The conversation so far is in notes.chat; it grew too long to go on there. Summarise it so that the work can continue here.',
        '',
        '@Assistant:',
        '## Goal',
        'Ship it.',
        '',
        '@You:',
        'Next: the tests.',
        '',
        '@You:',
        'And the docs.',
        '',
      ].join('\n'),
    );
    // It reads back as the chat it means to be: the line naming the old file is sent nowhere.
    const document = parse(text);
    expect(document.messages.map((message) => message.role)).toEqual([
      'System',
      'You',
      'Assistant',
      'You',
      'You',
    ]);
    expect(document.diagnostics).toEqual([]);
    const prompt = assemblePrompt(document);
    expect(JSON.stringify(prompt)).not.toContain('Continues notes.chat');
  });

  it('ends with an empty @You: when nothing is carried, and has no system prompt without one', () => {
    const text = compactedChat({
      from: 'a.chat',
      summary: 'S',
      parts: { frontmatter: [], system: [], user: [] },
    });
    expect(text.split('\n')).toEqual([
      'Continues a.chat (compacted with :Flemma compact; the earlier conversation is there).',
      '',
      '@You:',
      'The conversation so far is in a.chat; it grew too long to go on there. Summarise it so that the work can continue here.',
      '',
      '@Assistant:',
      'S',
      '',
      '@You:',
      '',
      '',
    ]);
  });

  it('keeps a summary from breaking the chat: markers, blocks and unclosed fences are defused', () => {
    const summary = [
      '@You:',
      '**Tool Use:** `bash` (`x`)',
      '<thinking>',
      '<!-- flemma:aborted: x -->',
      '```ts',
      '@Assistant:',
      '```',
      '````',
      'never closed',
    ].join('\n');
    // The format's escape (escape.ts), inside a closed fence too; the request removes it.
    expect(summaryLines(summary)).toEqual([
      '\\@You:',
      '\\**Tool Use:** `bash` (`x`)',
      '\\<thinking>',
      '\\<!-- flemma:aborted: x -->',
      '```ts',
      '\\@Assistant:',
      '```',
      '\\````',
      'never closed',
    ]);
    const text = compactedChat({
      from: 'a.chat',
      summary,
      parts: { frontmatter: [], system: [], user: [['Go on.']] },
    });
    const document = parse(text);
    expect(document.messages.map((message) => message.role)).toEqual(['You', 'Assistant', 'You']);
    expect(
      document.messages[1]?.segments.every(
        (segment) => segment.kind === 'text' || segment.kind === 'aborted',
      ),
    ).toBe(true);
    expect(document.messages[1]?.segments.some((segment) => segment.kind === 'aborted')).toBe(
      false,
    );
  });
});

describe('the summary request', () => {
  const base: ProviderRequest = {
    model: 'm',
    system: 'sys',
    messages: [
      { role: 'user', parts: [{ kind: 'text', text: 'Q1' }] },
      { role: 'assistant', parts: [{ kind: 'text', text: 'A1' }] },
    ],
    tools: [],
    maxTokens: 100,
    cacheRetention: 'short',
  };

  it('adds the prompt as a user message after a reply, or to the last user message', () => {
    expect(summaryRequest(base, 'P').messages).toEqual([
      ...base.messages,
      { role: 'user', parts: [{ kind: 'text', text: 'P' }] },
    ]);
    const open: ProviderRequest = {
      ...base,
      messages: [...base.messages, { role: 'user', parts: [{ kind: 'text', text: 'Q2' }] }],
    };
    const asked = summaryRequest(open, 'P');
    expect(asked.messages.at(-1)).toEqual({
      role: 'user',
      parts: [
        { kind: 'text', text: 'Q2' },
        { kind: 'text', text: 'P' },
      ],
    });
    // The chat's own request is not changed.
    expect(open.messages).toHaveLength(3);
    expect(open.messages.at(-1)?.parts).toHaveLength(1);
  });

  it('takes context.compact.prompt, else the default', () => {
    expect(compactPrompt({})).toBe(DEFAULT_COMPACT_PROMPT);
    expect(compactPrompt({ context: { compact: { prompt: '  ' } } })).toBe(DEFAULT_COMPACT_PROMPT);
    expect(compactPrompt({ context: { compact: { prompt: 'Mine.' } } })).toBe('Mine.');
  });
});

describe('writing the new chat', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('never replaces a file and leaves no temporary file', async () => {
    dir = mkdtempSync(join(tmpdir(), 'flemma-compact-'));
    const old = join(dir, 'notes.chat');
    writeFileSync(old, 'old');
    writeFileSync(join(dir, 'notes.v2.chat'), 'someone else');
    const written = await writeContinuation(old, 'new\n');
    expect(written).toBe(join(dir, 'notes.v3.chat'));
    expect(readFileSync(written, 'utf8')).toBe('new\n');
    expect(readFileSync(join(dir, 'notes.v2.chat'), 'utf8')).toBe('someone else');
    expect(readFileSync(old, 'utf8')).toBe('old');
    expect(readdirSync(dir).sort()).toEqual(['notes.chat', 'notes.v2.chat', 'notes.v3.chat']);
  });

  it('fails without leaving anything where it cannot write', async () => {
    dir = mkdtempSync(join(tmpdir(), 'flemma-compact-'));
    await expect(writeContinuation(join(dir, 'gone', 'notes.chat'), 'x')).rejects.toThrow(/ENOENT/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
