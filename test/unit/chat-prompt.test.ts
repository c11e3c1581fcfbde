import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { NO_RESULT_TEXT, assemblePrompt, nothingNewToSend } from '../../src/core/chat/prompt.js';
import { toolResultPart, toolUsePart } from '../helpers/evaluated-parts.js';

const prompt = (...lines: string[]) => assemblePrompt(parseLines(lines));

const TOOL_USE = ['**Tool Use:** `calculator` (`t1`)', '```json', '{"expression":"15 * 7"}', '```'];

describe('prompt assembly (docs/chat-format.md §11)', () => {
  it('takes the system text from the last @System: and maps roles in order', () => {
    const p = prompt(
      '@System:',
      'first',
      '@You:',
      'Hi',
      '@System:',
      'second',
      '@Assistant:',
      'Hello!',
      '@Notes:',
      'never sent',
      '@You:',
      'Bye',
    );
    expect(p.system).toEqual([{ kind: 'text', text: 'second' }]);
    expect(p.messages).toEqual([
      { role: 'user', parts: [{ kind: 'text', text: 'Hi' }], line: 3 },
      { role: 'assistant', parts: [{ kind: 'text', text: 'Hello!' }], line: 7 },
      { role: 'user', parts: [{ kind: 'text', text: 'Bye' }], line: 11 },
    ]);
    expect(p.pendingToolCalls).toEqual([]);
    expect(p.diagnostics).toEqual([]);
  });

  it('carries templates and file references as typed parts for later evaluation', () => {
    const p = prompt(
      '@System:',
      'Help {{ name }}.',
      '@You:',
      'Read @./notes.md;type=text/plain please',
    );
    expect(p.system).toEqual([
      { kind: 'text', text: 'Help ' },
      { kind: 'expression', code: 'name', trimBefore: false, trimAfter: false, line: 2 },
      { kind: 'text', text: '.' },
    ]);
    expect(p.messages[0]?.parts).toEqual([
      { kind: 'text', text: 'Read ' },
      {
        kind: 'file_reference',
        path: './notes.md',
        raw: './notes.md;type=text/plain',
        mime: 'text/plain',
        line: 4,
      },
      { kind: 'text', text: ' please' },
    ]);
  });

  it('keeps tool uses, results (with the tool name), error results and thinking with signatures', () => {
    const p = prompt(
      '@You:',
      'What is 15 * 7?',
      '@Assistant:',
      '<thinking anthropic:signature="sig">',
      'Use the calculator.',
      '</thinking>',
      ...TOOL_USE,
      '@You:',
      '**Tool Result:** `t1` (error)',
      '```',
      'Division by zero',
      '```',
      'Try again?',
    );
    expect(p.messages[1]).toEqual({
      role: 'assistant',
      line: 3,
      parts: [
        {
          kind: 'thinking',
          content: 'Use the calculator.',
          redacted: false,
          signature: { provider: 'anthropic', value: 'sig' },
        },
        toolUsePart('t1', 'calculator', { expression: '15 * 7' }),
      ],
    });
    expect(p.messages[2]?.parts).toEqual([
      toolResultPart('t1', 'calculator', 'Division by zero', { isError: true }),
      { kind: 'text', text: 'Try again?' },
    ]);
    expect(p.pendingToolCalls).toEqual([]);
  });

  it('sends "No result provided" and warns for every tool use without a finished result', () => {
    const p = prompt(
      '@Assistant:',
      ...TOOL_USE,
      '**Tool Use:** `read` (`t2`)',
      '```json',
      '{"path":"a"}',
      '```',
      '@You:',
      '**Tool Result:** `t2`',
      '```flemma:tool status=pending',
      '```',
      'Go on.',
    );
    expect(p.pendingToolCalls).toEqual([
      { id: 't1', name: 'calculator', line: 2, aborted: false },
      { id: 't2', name: 'read', line: 6, aborted: false },
    ]);
    expect(p.diagnostics.map((d) => [d.code, d.severity, d.span.startLine])).toEqual([
      ['tool-use-unresolved', 'warning', 2],
      ['tool-use-unresolved', 'warning', 6],
    ]);
    expect(p.messages[1]).toEqual({
      role: 'user',
      line: 10,
      parts: [
        toolResultPart('t1', 'calculator', NO_RESULT_TEXT, { isError: true, synthetic: true }),
        toolResultPart('t2', 'read', NO_RESULT_TEXT, { isError: true, synthetic: true }),
        { kind: 'text', text: 'Go on.' },
      ],
    });
  });

  it('adds a user message for synthetic results when the chat ends with the tool use', () => {
    const p = prompt('@You:', 'go', '@Assistant:', ...TOOL_USE);
    expect(p.messages.at(-1)).toMatchObject({
      role: 'user',
      parts: [{ kind: 'tool_result', synthetic: true }],
    });
  });

  it('turns an abort marker into a note without tool uses, drops it with them, and marks their calls aborted', () => {
    const text = prompt(
      '@Assistant:',
      'partial answer',
      '<!-- flemma:aborted: Response interrupted by the user. -->',
    );
    expect(text.messages[0]?.parts).toEqual([
      { kind: 'text', text: 'partial answer' },
      { kind: 'text', text: '<!-- Response interrupted by the user. -->' },
    ]);
    const tools = prompt('@Assistant:', 'doing', ...TOOL_USE, '<!-- flemma:aborted: stopped -->');
    expect(tools.messages[0]?.parts.map((part) => part.kind)).toEqual(['text', 'tool_use']);
    expect(tools.pendingToolCalls).toEqual([
      { id: 't1', name: 'calculator', line: 3, aborted: true },
    ]);
  });

  it('drops an empty trailing @You: and keeps a finished result in place of its placeholder', () => {
    const p = prompt(
      '@Assistant:',
      ...TOOL_USE,
      '@You:',
      '**Tool Result:** `t1`',
      '```',
      '105',
      '```',
      '',
      '@Assistant:',
      'It is 105.',
      '@You:',
      '',
    );
    expect(p.messages.map((m) => m.role)).toEqual(['assistant', 'user', 'assistant']);
    expect(p.pendingToolCalls).toEqual([]);
  });

  it('counts only results after their tool use, sends the last of duplicates, and drops orphans', () => {
    const early = prompt(
      '@You:',
      '**Tool Result:** `t1`',
      '```',
      'too early',
      '```',
      '@Assistant:',
      ...TOOL_USE,
    );
    expect(early.pendingToolCalls.map((call) => call.id)).toEqual(['t1']);
    expect(early.messages.map((m) => m.role)).toEqual(['assistant', 'user']);
    const twice = prompt(
      '@Assistant:',
      ...TOOL_USE,
      '@You:',
      '**Tool Result:** `t1`',
      '```',
      'first',
      '```',
      '**Tool Result:** `t1`',
      '```',
      'second',
      '```',
      '**Tool Result:** `ghost`',
      '```',
      'orphan',
      '```',
    );
    expect(twice.messages[1]?.parts).toEqual([toolResultPart('t1', 'calculator', 'second')]);
  });

  it('puts the results first, in the order of the tool uses', () => {
    const p = prompt(
      '@Assistant:',
      ...TOOL_USE,
      '**Tool Use:** `read` (`t2`)',
      '```json',
      '{}',
      '```',
      '@You:',
      'note first',
      '**Tool Result:** `t2`',
      '```',
      'two',
      '```',
    );
    expect(
      p.messages[1]?.parts.map((part) =>
        part.kind === 'tool_result' ? part.toolUseId : part.kind,
      ),
    ).toEqual(['t1', 't2', 'text']);
  });
});

describe('nothingNewToSend', () => {
  const nothingNew = (...lines: string[]): boolean => {
    const document = parseLines(lines);
    return nothingNewToSend(document, assemblePrompt(document));
  };
  const ANSWERED = ['@You:', 'Hi', '', '@Assistant:', 'Hello!', ''];

  it('an empty or blank @You: after a reply: nothing new', () => {
    expect(nothingNew(...ANSWERED, '@You:')).toBe(true);
    expect(nothingNew(...ANSWERED, '@You:', '', '   ', '\t')).toBe(true);
    expect(nothingNew(...ANSWERED, '@You:', '', '@You:', ' ')).toBe(true);
    // A role the request never carries changes nothing.
    expect(nothingNew(...ANSWERED, '@Notes:', 'mine', '@You:')).toBe(true);
  });

  it('a question, a template, a reference or a new system prompt is new', () => {
    expect(nothingNew(...ANSWERED, '@You:', 'And?')).toBe(false);
    expect(nothingNew(...ANSWERED, '@You:', '{{ question }}')).toBe(false);
    expect(nothingNew(...ANSWERED, '@You:', '@./notes.txt')).toBe(false);
    expect(nothingNew(...ANSWERED, '@System:', 'Be brief.', '@You:')).toBe(false);
  });

  it('a chat that ends with the reply, or has no reply yet, is not this case', () => {
    expect(nothingNew(...ANSWERED)).toBe(false);
    expect(nothingNew('@You:', '')).toBe(false);
  });

  it('tool calls: an unanswered call (its error result goes back) or a result is new', () => {
    const asks = ['@You:', 'Go', '', '@Assistant:', ...TOOL_USE, ''];
    expect(nothingNew(...asks, '@You:', '')).toBe(false);
    expect(
      nothingNew(...asks, '@You:', '', '**Tool Result:** `t1`', '', '```', '105', '```', ''),
    ).toBe(false);
    expect(
      nothingNew(
        ...asks,
        '@You:',
        '',
        '**Tool Result:** `t1`',
        '',
        '```flemma:tool status=pending',
        '```',
      ),
    ).toBe(false);
  });
});
