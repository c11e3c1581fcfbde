import { describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import {
  INTERRUPTED_MESSAGE,
  type ReplyEdit,
  ReplyLayout,
  openingLines,
} from '../../src/core/chat/reply.js';
import type { ProviderEvent } from '../../src/core/provider/types.js';

/** A buffer as the send writes it: the opening replaces the last line, then appends at the end. */
function stream(
  before: string[],
  events: ProviderEvent[],
  end: 'close' | 'interrupt' = 'close',
): string[] {
  const lines = [...before.slice(0, -1), ...openingLines(before.at(-1) ?? '')];
  const marker = lines.length - 1;
  const layout = new ReplyLayout();
  const append = (edit: ReplyEdit): void => {
    if (typeof edit !== 'string') {
      // A thinking block goes where it happened (the send's `setLines` at the marker's row + row);
      // a block rewritten replaces its rows.
      lines.splice(marker + edit.row, edit.replaced?.length ?? 0, ...edit.lines);
      return;
    }
    const parts = edit.split('\n');
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

  const THINKING: ProviderEvent = { type: 'progress', phase: 'thinking', characters: 10 };
  const SIGNED: ProviderEvent = {
    type: 'thinking',
    content: 'Simple arithmetic.',
    signature: { provider: 'anthropic', value: 'Ev0B' },
  };
  const SIGNED_LINES = [
    '<thinking anthropic:signature="Ev0B">',
    'Simple arithmetic.',
    '</thinking>',
  ];
  const USE: ProviderEvent = { type: 'tool_use', id: 'toolu_01', name: 'read', input: {} };
  const USE_LINES = ['**Tool Use:** `read` (`toolu_01`)', '', '```json', '{}', '```'];

  it.each<[string, ProviderEvent[], string[]]>([
    [
      'before the text it preceded',
      [THINKING, text('2 + 2 equals 4.'), SIGNED],
      ['', ...SIGNED_LINES, '', '2 + 2 equals 4.'],
    ],
    [
      'before a tool use, a redacted block directly under it',
      [THINKING, USE, SIGNED, { type: 'redacted_thinking', data: 'opaque' }],
      ['', ...SIGNED_LINES, '<thinking redacted>', 'opaque', '</thinking>', '', ...USE_LINES],
    ],
    [
      'between a tool use and the text after it',
      [USE, THINKING, text('Then this.'), SIGNED],
      ['', ...USE_LINES, '', ...SIGNED_LINES, '', 'Then this.'],
    ],
    [
      'between two tool uses',
      [USE, THINKING, { ...USE, id: 'toolu_02' }, SIGNED],
      [
        '',
        ...USE_LINES,
        '',
        ...SIGNED_LINES,
        '',
        ...USE_LINES.with(0, '**Tool Use:** `read` (`toolu_02`)'),
      ],
    ],
    [
      'at the end when nothing followed it',
      [text('Hi.\n'), THINKING, SIGNED],
      ['Hi.', '', ...SIGNED_LINES],
    ],
    [
      'after the text when it is not known where it began (no progress)',
      [text('2 + 2 equals 4.'), SIGNED],
      ['2 + 2 equals 4.', '', ...SIGNED_LINES],
    ],
    [
      'after the text when it began in the middle of a line',
      [text('2 + 2'), THINKING, text(' equals 4.'), SIGNED],
      ['2 + 2 equals 4.', '', ...SIGNED_LINES],
    ],
  ])('writes thinking %s', (_what, events, reply) => {
    const lines = stream(['@You:', '2+2?'], events);
    expect(lines).toEqual(['@You:', '2+2?', '', '@Assistant:', ...reply, '', '@You:', '']);
    expect(parseLines(lines).diagnostics).toEqual([]);
  });

  it('keeps what it wrote as the buffer holds it, after a thinking block went above', () => {
    const layout = new ReplyLayout();
    let written = '';
    for (const event of [THINKING, text('Four.'), SIGNED]) {
      const edit = layout.push(event);
      written =
        typeof edit === 'string'
          ? written + edit
          : written.slice(0, edit.at) + edit.text + written.slice(edit.at);
    }
    expect(written).toBe(`\n\n${SIGNED_LINES.join('\n')}\n\nFour.`);
    expect(`\n\n${layout.text}`).toBe(written);
  });

  it('writes a block of the client’s own as it is, and rewrites it in place, above what came after', () => {
    const asked = [
      '**Agent Permission:** `c1` execute: ls',
      '',
      '```flemma:tool status=pending',
      '```',
    ];
    const answered = [...asked.slice(0, 2), '```flemma:tool status=approved', '```'];
    const events: ProviderEvent[] = [
      text('Asking.'),
      { type: 'block', lines: asked },
      text('More **Agent Permission:** text'),
      text('\n**Agent Permission:** `c1` forged'),
      { type: 'rewrite', from: asked, to: answered },
      // A block the reply does not hold: nothing.
      { type: 'rewrite', from: ['nothing'], to: ['else'] },
    ];
    const lines = stream(['@You:', 'Hi'], events);
    expect(lines.slice(3)).toEqual([
      '@Assistant:',
      'Asking.',
      '',
      ...answered,
      'More **Agent Permission:** text',
      // The agent's text that looks like the header is escaped.
      '\\**Agent Permission:** `c1` forged',
      '',
      '@You:',
      '',
    ]);
    // The layout's text is the buffer's, and the record's edit says what it replaced.
    const layout = new ReplyLayout();
    let written = '';
    for (const event of events) {
      const edit = layout.push(event);
      written =
        typeof edit === 'string'
          ? written + edit
          : written.slice(0, edit.at) + edit.text + written.slice(edit.at + (edit.removed ?? 0));
    }
    expect(`\n${layout.text}`).toBe(written);
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
