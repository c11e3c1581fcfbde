import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { INTERRUPTED_MESSAGE, ReplyLayout, openingLines } from '../../src/core/chat/reply.js';
import type { ProviderEvent } from '../../src/core/provider/types.js';

/** A buffer as the send writes it: the opening replaces the last line, then appends at the end. */
function stream(
  before: string[],
  events: ProviderEvent[],
  end: 'close' | 'interrupt' = 'close',
): string[] {
  const lines = [...before.slice(0, -1), ...openingLines(before.at(-1) ?? '')];
  const layout = new ReplyLayout();
  const append = (text: string): void => {
    const parts = text.split('\n');
    lines[lines.length - 1] = (lines[lines.length - 1] ?? '') + (parts[0] ?? '');
    lines.push(...parts.slice(1));
  };
  for (const event of events) append(layout.push(event));
  if (end === 'interrupt') append(layout.interrupt());
  append(layout.close());
  return lines;
}

const text = (value: string): ProviderEvent => ({ type: 'text', text: value });

describe('the layout of a streamed reply (docs/chat-format.md §12)', () => {
  it('puts the marker after a blank line, streams text under it, and ends with a @You: prompt', () => {
    const lines = stream(
      ['@You:', 'Hello'],
      [
        text('\n  \n'),
        text('Hello! How'),
        text(' can I help'),
        text(' you today?'),
        { type: 'done', stopReason: 'end_turn' },
      ],
    );
    expect(lines).toEqual([
      '@You:',
      'Hello',
      '',
      '@Assistant:',
      'Hello! How can I help you today?',
      '',
      '@You:',
      '',
    ]);
  });

  it('reuses a blank last line for the marker', () => {
    expect(stream(['@You:', 'Hi', ''], [text('Yes.')])).toEqual([
      '@You:',
      'Hi',
      '',
      '@Assistant:',
      'Yes.',
      '',
      '@You:',
      '',
    ]);
  });

  it('writes thinking after the text, as a signed block', () => {
    const lines = stream(
      ['@You:', '2+2?'],
      [
        text('2 + 2 equals 4.'),
        {
          type: 'thinking',
          content: 'Simple arithmetic.',
          signature: { provider: 'anthropic', value: 'Ev0B' },
        },
      ],
    );
    expect(lines).toEqual([
      '@You:',
      '2+2?',
      '',
      '@Assistant:',
      '2 + 2 equals 4.',
      '',
      '<thinking anthropic:signature="Ev0B">',
      'Simple arithmetic.',
      '</thinking>',
      '',
      '@You:',
      '',
    ]);
  });

  it('opens with a blank line before a tool use, and separates parallel tool uses', () => {
    const lines = stream(
      ['@You:', 'calc'],
      [
        { type: 'tool_use', id: 'toolu_01', name: 'calculator', input: { expression: '15 * 7' } },
        { type: 'tool_use', id: 'toolu_02', name: 'calculator', input: { expression: '2 ** 10' } },
      ],
    );
    expect(lines.slice(2)).toEqual([
      '',
      '@Assistant:',
      '',
      '**Tool Use:** `calculator` (`toolu_01`)',
      '',
      '```json',
      '{"expression":"15 * 7"}',
      '```',
      '',
      '**Tool Use:** `calculator` (`toolu_02`)',
      '',
      '```json',
      '{"expression":"2 ** 10"}',
      '```',
      '',
      '@You:',
      '',
    ]);
    const document = parseLines(lines);
    expect(document.diagnostics).toEqual([]);
    expect(document.messages.at(-2)?.segments.map((s) => s.kind)).toEqual(['tool_use', 'tool_use']);
  });

  it('marks an interrupted reply, and writes nothing for a reply that never started', () => {
    const lines = stream(['@You:', 'long'], [text('Part of an ans')], 'interrupt');
    expect(lines.slice(3)).toEqual([
      '@Assistant:',
      'Part of an ans',
      '',
      `<!-- flemma:aborted: ${INTERRUPTED_MESSAGE} -->`,
      '',
      '@You:',
      '',
    ]);
    const layout = new ReplyLayout();
    expect(layout.interrupt()).toBe('');
    expect(layout.hasContent).toBe(false);
  });

  it('reads back as the same reply, whatever the chunking', () => {
    const events: ProviderEvent[] = [
      text('Let me '),
      text('check.\nTwo lines.'),
      { type: 'tool_use', id: 't1', name: 'read', input: { path: 'a.md' } },
      { type: 'redacted_thinking', data: 'opaque' },
      {
        type: 'thinking',
        content: 'Then answer.',
        signature: { provider: 'openai', value: 'b64' },
      },
    ];
    const document = parseLines(stream(['@You:', 'q'], events));
    expect(document.diagnostics).toEqual([]);
    const reply = document.messages.find((message) => message.role === 'Assistant');
    expect(reply?.segments).toMatchObject([
      { kind: 'text', value: 'Let me check.\nTwo lines.' },
      { kind: 'tool_use', id: 't1', name: 'read', input: { path: 'a.md' } },
      { kind: 'thinking', redacted: true, content: 'opaque' },
      {
        kind: 'thinking',
        content: 'Then answer.',
        signature: { provider: 'openai', value: 'b64' },
      },
    ]);
    expect(document.messages.at(-1)?.role).toBe('You');
  });
});
