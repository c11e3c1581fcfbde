// The `.chat` writer: exact buffer lines for every construct, and round trips through the parser.
import { describe, expect, it } from 'vitest';
import {
  type AbortedSegment,
  type ChatDocument,
  type Message,
  PLACEHOLDER_STATUSES,
  type Segment,
  type ThinkingSegment,
  type ToolResultSegment,
  type ToolUseSegment,
} from '../../src/core/chat/ast.js';
import { parseChat } from '../../src/core/chat/parser.js';
import {
  abortedMarker,
  assistantText,
  blockChunk,
  blockPrefix,
  ChatWriteError,
  fenceFor,
  placeholder,
  redactedPrefix,
  roleMarker,
  selfClosingThinking,
  thinking,
  toolResult,
  toolUse,
} from '../../src/core/chat/writer.js';
import { unescapeText } from '../../src/core/chat/escape.js';

const T3 = '```';
const T4 = '````';
const T5 = '`````';

describe('fenceFor', () => {
  it('is three backticks for content without backticks, empty content included', () => {
    expect(fenceFor('')).toBe(T3);
    expect(fenceFor('plain text\nover lines')).toBe(T3);
  });

  it('is three backticks when the longest run is one or two', () => {
    expect(fenceFor('use `x` here')).toBe(T3);
    expect(fenceFor('a `` b')).toBe(T3);
  });

  it('grows to one more than the longest run', () => {
    const contents = [
      '```ts\ncode\n```',
      '````\n```\n````',
      'inline ```` in text ` and ``',
      '``````',
    ];
    expect(contents.map((content) => fenceFor(content))).toEqual([T4, T5, T5, '```````']);
  });
});

describe('roleMarker', () => {
  it('writes the marker line', () => {
    expect(roleMarker('Assistant')).toEqual(['@Assistant:']);
    expect(roleMarker('You')).toEqual(['@You:']);
    expect(roleMarker('Notes2')).toEqual(['@Notes2:']);
  });

  it('refuses a role the grammar cannot read back', () => {
    for (const role of ['', 'My Role', 'You:', 'Ünicode', 'a-b']) {
      expect(() => roleMarker(role)).toThrow(ChatWriteError);
    }
  });
});

describe('assistantText', () => {
  it('splits text into lines, verbatim', () => {
    expect(assistantText('Hello!')).toEqual(['Hello!']);
    expect(assistantText('One\n\n  Two  \nThree\n')).toEqual(['One', '', '  Two  ', 'Three', '']);
    expect(assistantText('héllo ✓ 日本語 🙂')).toEqual(['héllo ✓ 日本語 🙂']);
  });

  it('gives no lines for empty text', () => {
    expect(assistantText('')).toEqual([]);
  });

  it('drops the \\r of \\r\\n line ends and keeps other \\r', () => {
    expect(assistantText('a\r\nb\rc\r\n')).toEqual(['a', 'b\rc', '']);
  });
});

describe('toolUse', () => {
  it('writes header, blank line and the compact JSON input in a json fence', () => {
    expect(
      toolUse({ name: 'calculator', id: 'toolu_01A', input: { expression: '15 * 7' } }),
    ).toEqual([
      '**Tool Use:** `calculator` (`toolu_01A`)',
      '',
      '```json',
      '{"expression":"15 * 7"}',
      '```',
    ]);
  });

  it('writes undefined input as {}', () => {
    expect(toolUse({ name: 'ls', id: 'call_1', input: undefined })).toEqual([
      '**Tool Use:** `ls` (`call_1`)',
      '',
      '```json',
      '{}',
      '```',
    ]);
  });

  it('writes input JSON cannot encode as {}', () => {
    expect(toolUse({ name: 'n', id: 'i', input: () => 1 })[3]).toBe('{}');
    expect(toolUse({ name: 'n', id: 'i', input: Symbol('s') })[3]).toBe('{}');
  });

  it('writes null, arrays and scalars as JSON', () => {
    expect(toolUse({ name: 'n', id: 'i', input: null })[3]).toBe('null');
    expect(toolUse({ name: 'n', id: 'i', input: [1, 'two'] })[3]).toBe('[1,"two"]');
    expect(toolUse({ name: 'n', id: 'i', input: 3 })[3]).toBe('3');
  });

  it('keeps newlines and unicode inside JSON strings on one line', () => {
    expect(
      toolUse({ name: 'write', id: 'toolu_02', input: { content: 'line 1\nline 2', s: 'ü日🙂' } }),
    ).toEqual([
      '**Tool Use:** `write` (`toolu_02`)',
      '',
      '```json',
      '{"content":"line 1\\nline 2","s":"ü日🙂"}',
      '```',
    ]);
  });

  it('sizes the fence for backticks inside JSON strings', () => {
    expect(
      toolUse({ name: 'write', id: 'toolu_03', input: { content: '```lua\nx = 1\n```' } }),
    ).toEqual([
      '**Tool Use:** `write` (`toolu_03`)',
      '',
      '````json',
      '{"content":"```lua\\nx = 1\\n```"}',
      '````',
    ]);
    expect(toolUse({ name: 'w', id: 'i', input: { a: '````' } })[2]).toBe('`````json');
  });

  it('accepts synthetic ids with colons', () => {
    expect(toolUse({ name: 'read', id: 'urn:flemma:tool:read:65f0a1b2c3d4', input: {} })[0]).toBe(
      '**Tool Use:** `read` (`urn:flemma:tool:read:65f0a1b2c3d4`)',
    );
  });

  it('refuses names and ids the header cannot carry', () => {
    const bad = [
      { name: '', id: 'x' },
      { name: 'a`b', id: 'x' },
      { name: 'a\nb', id: 'x' },
      { name: 'n', id: '' },
      { name: 'n', id: 'a)b' },
      { name: 'n', id: 'a`b' },
      { name: 'n', id: 'a\rb' },
    ];
    for (const { name, id } of bad) {
      expect(() => toolUse({ name, id, input: {} })).toThrow(ChatWriteError);
    }
  });
});

describe('placeholder', () => {
  it('writes the current form: bare header and a flemma:tool fence carrying the status', () => {
    expect(placeholder('toolu_01', 'pending')).toEqual([
      '**Tool Result:** `toolu_01`',
      '',
      '```flemma:tool status=pending',
      '```',
    ]);
  });

  it('writes every status', () => {
    for (const status of PLACEHOLDER_STATUSES) {
      expect(placeholder('toolu_01', status)[2]).toBe(`\`\`\`flemma:tool status=${status}`);
    }
  });

  it('treats empty content as no content', () => {
    expect(placeholder('toolu_01', 'approved', '')).toEqual([
      '**Tool Result:** `toolu_01`',
      '',
      '```flemma:tool status=approved',
      '```',
    ]);
  });

  it('puts content lines inside the fence', () => {
    expect(
      placeholder('toolu_01', 'rejected', "I don't want to run rm -rf on my home directory."),
    ).toEqual([
      '**Tool Result:** `toolu_01`',
      '',
      '```flemma:tool status=rejected',
      "I don't want to run rm -rf on my home directory.",
      '```',
    ]);
    expect(placeholder('toolu_01', 'pending', 'a\n\nb\n')).toEqual([
      '**Tool Result:** `toolu_01`',
      '',
      '```flemma:tool status=pending',
      'a',
      '',
      'b',
      '',
      '```',
    ]);
  });

  it('grows the fence for backticks in the content and keeps the info string', () => {
    expect(placeholder('toolu_01', 'pending', '```\n@You:\n```')).toEqual([
      '**Tool Result:** `toolu_01`',
      '',
      '````flemma:tool status=pending',
      '```',
      '@You:',
      '```',
      '````',
    ]);
  });

  it('refuses an id the header cannot carry', () => {
    expect(() => placeholder('a`b', 'pending')).toThrow(ChatWriteError);
  });
});

describe('toolResult', () => {
  it('writes a string output as-is in a plain fence', () => {
    expect(toolResult({ id: 'toolu_01', output: '105', isError: false })).toEqual([
      '**Tool Result:** `toolu_01`',
      '',
      '```',
      '105',
      '```',
    ]);
  });

  it('keeps multi-line output, blank lines and a trailing newline', () => {
    expect(toolResult({ id: 'toolu_01', output: 'a\n\n  b\n', isError: false })).toEqual([
      '**Tool Result:** `toolu_01`',
      '',
      '```',
      'a',
      '',
      '  b',
      '',
      '```',
    ]);
  });

  it('writes an empty fence for empty, undefined or null output', () => {
    const empty = ['**Tool Result:** `toolu_01`', '', '```', '```'];
    expect(toolResult({ id: 'toolu_01', output: '', isError: false })).toEqual(empty);
    expect(toolResult({ id: 'toolu_01', output: undefined, isError: false })).toEqual(empty);
    expect(toolResult({ id: 'toolu_01', output: null, isError: false })).toEqual(empty);
  });

  it('writes numbers and booleans as text', () => {
    expect(toolResult({ id: 'i', output: 42, isError: false })[3]).toBe('42');
    expect(toolResult({ id: 'i', output: false, isError: false })[3]).toBe('false');
  });

  it('writes table output as compact JSON with a json tag', () => {
    expect(
      toolResult({ id: 'toolu_01', output: { files: ['a.lua', 'b.lua'], n: 2 }, isError: false }),
    ).toEqual([
      '**Tool Result:** `toolu_01`',
      '',
      '```json',
      '{"files":["a.lua","b.lua"],"n":2}',
      '```',
    ]);
  });

  it('sizes the json fence for backticks in the JSON text', () => {
    expect(toolResult({ id: 'i', output: { code: '```' }, isError: false })).toEqual([
      '**Tool Result:** `i`',
      '',
      '````json',
      '{"code":"```"}',
      '````',
    ]);
  });

  it('grows the fence for fenced code in the output', () => {
    expect(
      toolResult({ id: 'i', output: '# README\n```lua\nprint(1)\n```\n````\n', isError: false }),
    ).toEqual([
      '**Tool Result:** `i`',
      '',
      T5,
      '# README',
      '```lua',
      'print(1)',
      '```',
      '````',
      '',
      T5,
    ]);
  });

  it('keeps unicode', () => {
    expect(toolResult({ id: 'i', output: 'ß → 日本 🙂', isError: false })[3]).toBe('ß → 日本 🙂');
  });

  it('marks an error in the header and writes the message', () => {
    expect(
      toolResult({
        id: 'toolu_01ERROR123',
        output: 'Division by zero is undefined',
        isError: true,
      }),
    ).toEqual([
      '**Tool Result:** `toolu_01ERROR123` (error)',
      '',
      '```',
      'Division by zero is undefined',
      '```',
    ]);
  });

  it('writes Unknown error for an error without a message', () => {
    const expected = ['**Tool Result:** `i` (error)', '', '```', 'Unknown error', '```'];
    expect(toolResult({ id: 'i', output: '', isError: true })).toEqual(expected);
    expect(toolResult({ id: 'i', output: undefined, isError: true })).toEqual(expected);
  });

  it('never tags an error fence as json', () => {
    expect(toolResult({ id: 'i', output: { code: 2 }, isError: true })).toEqual([
      '**Tool Result:** `i` (error)',
      '',
      '```',
      '{"code":2}',
      '```',
    ]);
  });

  it('appends partial output under its own heading', () => {
    expect(
      toolResult({
        id: 'toolu_01',
        output: 'Command exited with code 2',
        isError: true,
        partialOutput: 'building...\nerror: foo.c:3',
      }),
    ).toEqual([
      '**Tool Result:** `toolu_01` (error)',
      '',
      '```',
      'Command exited with code 2',
      '',
      'Partial output:',
      'building...',
      'error: foo.c:3',
      '```',
    ]);
  });

  it('leaves out empty partial output and ignores partial output on success', () => {
    expect(toolResult({ id: 'i', output: 'boom', isError: true, partialOutput: '' })).toEqual([
      '**Tool Result:** `i` (error)',
      '',
      '```',
      'boom',
      '```',
    ]);
    expect(toolResult({ id: 'i', output: 'ok', isError: false, partialOutput: 'x' })).toEqual([
      '**Tool Result:** `i`',
      '',
      '```',
      'ok',
      '```',
    ]);
  });

  it('sizes the fence over message and partial output together', () => {
    expect(
      toolResult({ id: 'i', output: 'failed', isError: true, partialOutput: '````\nx\n````' }),
    ).toEqual([
      '**Tool Result:** `i` (error)',
      '',
      T5,
      'failed',
      '',
      'Partial output:',
      '````',
      'x',
      '````',
      T5,
    ]);
  });

  it('refuses an id the header cannot carry', () => {
    expect(() => toolResult({ id: '', output: 'x', isError: false })).toThrow(ChatWriteError);
  });
});

describe('thinking', () => {
  const anthropic = { provider: 'anthropic', value: 'EqQBCkYIBxgCKkB+/x=' };

  it('writes a signed block with trimmed content', () => {
    expect(
      thinking({
        content: '\n  The user wants a product.\nUse the calculator.  \n',
        signature: anthropic,
      }),
    ).toEqual([
      '<thinking anthropic:signature="EqQBCkYIBxgCKkB+/x=">',
      'The user wants a product.',
      'Use the calculator.',
      '</thinking>',
    ]);
  });

  it('writes an unsigned block', () => {
    expect(thinking({ content: 'Hmm.' })).toEqual(['<thinking>', 'Hmm.', '</thinking>']);
  });

  it('writes a redacted block', () => {
    expect(thinking({ content: 'EmwKAhgBEgy3va3pzix/LafPsn4a', redacted: true })).toEqual([
      '<thinking redacted>',
      'EmwKAhgBEgy3va3pzix/LafPsn4a',
      '</thinking>',
    ]);
  });

  it('writes a signature without content as an empty block', () => {
    expect(thinking({ content: '', signature: { provider: 'vertex', value: 'c2ln' } })).toEqual([
      '<thinking vertex:signature="c2ln">',
      '</thinking>',
    ]);
    expect(
      thinking({ content: '  \n ', signature: { provider: 'openai', value: 'gAAA' } }),
    ).toEqual(['<thinking openai:signature="gAAA">', '</thinking>']);
  });

  it('writes nothing without content and signature', () => {
    expect(thinking({ content: '' })).toEqual([]);
    expect(thinking({ content: ' \n\t' })).toEqual([]);
    expect(thinking({ content: '', signature: { provider: 'anthropic', value: '' } })).toEqual([]);
    expect(thinking({ content: '', redacted: true })).toEqual([]);
  });

  it('keeps inner blank lines and unicode', () => {
    expect(thinking({ content: 'Étape 1\n\nÉtape 2 🙂' })).toEqual([
      '<thinking>',
      'Étape 1',
      '',
      'Étape 2 🙂',
      '</thinking>',
    ]);
  });

  it('escapes a content line that would close the block', () => {
    expect(thinking({ content: 'The format ends with\n</thinking>\nthen text.' })).toEqual([
      '<thinking>',
      'The format ends with',
      '\\</thinking>',
      'then text.',
      '</thinking>',
    ]);
    expect(thinking({ content: 'a\n</thinking>  \nb' })[2]).toBe('\\</thinking>  ');
    expect(thinking({ content: 'a\n</thinking> more\nb' })[2]).toBe('\\</thinking> more');
  });

  it('escapes a role marker line, inside a fence too', () => {
    expect(thinking({ content: 'User wrote\n@You:\nearlier.\n```\n@You:\n```' })).toEqual([
      '<thinking>',
      'User wrote',
      '\\@You:',
      'earlier.',
      '```',
      '\\@You:',
      '```',
      '</thinking>',
    ]);
  });

  it('escapes a fence opener that is never closed, and what it would have hidden', () => {
    expect(thinking({ content: 'Draft:\n```lua\nlocal x = 1\n@Assistant:' })).toEqual([
      '<thinking>',
      'Draft:',
      '\\```lua',
      'local x = 1',
      '\\@Assistant:',
      '</thinking>',
    ]);
  });

  it('lets a longer fence hold shorter ones', () => {
    const content = '````md\n```\nplain\n```\n````';
    expect(thinking({ content })).toEqual(['<thinking>', ...content.split('\n'), '</thinking>']);
  });

  it('escapes a </thinking> line even inside a fence', () => {
    expect(thinking({ content: '```\n</thinking>\n```' })).toEqual([
      '<thinking>',
      '```',
      '\\</thinking>',
      '```',
      '</thinking>',
    ]);
  });

  it('refuses signatures and providers it cannot write back unchanged', () => {
    const refused = [
      { provider: 'anthropic', value: 'a"b' },
      { provider: 'anthropic', value: 'a\nb' },
      { provider: 'open-ai', value: 'x' },
      { provider: '', value: 'x' },
    ];
    for (const signature of refused) {
      expect(() => thinking({ content: 'x', signature })).toThrow(ChatWriteError);
      expect(() => selfClosingThinking(signature)).toThrow(ChatWriteError);
    }
  });

  it('refuses a redacted block with a signature', () => {
    expect(() => thinking({ content: 'x', redacted: true, signature: anthropic })).toThrow(
      ChatWriteError,
    );
  });
});

describe('selfClosingThinking', () => {
  it('writes the signature on one self-closing line', () => {
    expect(selfClosingThinking({ provider: 'anthropic', value: 'Ev0BCkYI+/=' })).toEqual([
      '<thinking anthropic:signature="Ev0BCkYI+/="/>',
    ]);
  });
});

describe('abortedMarker', () => {
  it('writes the comment line', () => {
    expect(abortedMarker('Response interrupted by the user.')).toEqual([
      '<!-- flemma:aborted: Response interrupted by the user. -->',
    ]);
  });

  it('writes an empty message without a double space', () => {
    expect(abortedMarker('')).toEqual(['<!-- flemma:aborted: -->']);
    expect(abortedMarker(' \n ')).toEqual(['<!-- flemma:aborted: -->']);
  });

  it('folds line breaks into single spaces and trims', () => {
    expect(abortedMarker('  first line\n  second\r\n\r\nthird  ')).toEqual([
      '<!-- flemma:aborted: first line second third -->',
    ]);
  });

  it('defuses --> inside the message', () => {
    expect(abortedMarker('a --> b')).toEqual(['<!-- flemma:aborted: a -- > b -->']);
    expect(abortedMarker('--->-->')).toEqual(['<!-- flemma:aborted: --- >-- > -->']);
    expect(abortedMarker('ends with --')).toEqual(['<!-- flemma:aborted: ends with -- -->']);
  });

  it('keeps unicode and other punctuation', () => {
    expect(abortedMarker('Abgebrochen ✗ <!-- "quoted" `x`')).toEqual([
      '<!-- flemma:aborted: Abgebrochen ✗ <!-- "quoted" `x` -->',
    ]);
  });
});

describe('block prefixes', () => {
  it('puts nothing before a block in an empty reply', () => {
    expect(blockPrefix('')).toBe('');
    expect(redactedPrefix('')).toBe('');
  });

  it('puts one newline after a newline and two otherwise', () => {
    expect(blockPrefix('Some text.\n')).toBe('\n');
    expect(blockPrefix('Some text.')).toBe('\n\n');
  });

  it('puts a redacted block directly under what precedes it', () => {
    expect(redactedPrefix('</thinking>\n')).toBe('');
    expect(redactedPrefix('Some text.')).toBe('\n');
  });

  it('builds stream chunks', () => {
    const use = toolUse({ name: 'ls', id: 'toolu_1', input: {} });
    expect(blockChunk('', use)).toBe(`${use.join('\n')}\n`);
    expect(blockChunk('Let me look.', use)).toBe(`\n\n${use.join('\n')}\n`);
    expect(blockChunk('Let me look.\n', use)).toBe(`\n${use.join('\n')}\n`);
    const redacted = thinking({ content: 'data', redacted: true });
    expect(blockChunk('</thinking>\n', redacted)).toBe('<thinking redacted>\ndata\n</thinking>\n');
    expect(blockChunk('text', [])).toBe('');
  });
});

// ---------------------------------------------------------------------------------------------
// Round trips: what the writer writes, the parser reads back unchanged.

function messageOf(document: ChatDocument, index: number, role: string): Message {
  const message = document.messages[index];
  if (message === undefined) throw new Error(`no message ${index}`);
  expect(message.role).toBe(role);
  return message;
}

function only<K extends Segment['kind']>(
  segments: Segment[],
  kind: K,
): Extract<Segment, { kind: K }>[] {
  return segments.filter(
    (segment): segment is Extract<Segment, { kind: K }> => segment.kind === kind,
  );
}

describe('round trip through parseChat', () => {
  it('reads back an assistant reply built from stream chunks', () => {
    const inputs: { name: string; id: string; input: unknown }[] = [
      { name: 'bash', id: 'toolu_01A', input: { command: 'echo "```"', timeout: null } },
      {
        name: 'read',
        id: 'call_B',
        input: { path: 'ü/日本.md', lines: [1, 2], nested: { a: '````' } },
      },
      { name: 'noop', id: 'urn:flemma:tool:noop:65f0a1b2', input: undefined },
    ];
    const signature = { provider: 'anthropic', value: 'EqQBCkYIBxgCKkB+/x=' };
    let reply = 'Let me look.\nTwo `lines`.';
    for (const use of inputs) reply += blockChunk(reply, toolUse(use));
    reply += blockChunk(
      reply,
      thinking({ content: 'Plan:\n```\n@You:\n```\nthen run.', signature }),
    );
    reply += blockChunk(reply, thinking({ content: 'opaque==', redacted: true }));
    reply += blockChunk(reply, thinking({ content: 'unsigned </thinking>\n</thinking>' }));
    reply += blockChunk(
      reply,
      thinking({ content: '', signature: { provider: 'vertex', value: 's' } }),
    );
    reply += blockChunk(reply, selfClosingThinking({ provider: 'openai', value: 'gAAA==' }));
    reply += blockChunk(reply, abortedMarker('Cut --> off\nhere'));
    const text = [
      ...roleMarker('You'),
      'Go.',
      '',
      ...roleMarker('Assistant'),
      ...assistantText(reply),
      '',
      ...roleMarker('You'),
      '',
    ].join('\n');

    const document = parseChat(text);
    expect(document.diagnostics).toEqual([]);
    expect(document.messages.map((message) => message.role)).toEqual(['You', 'Assistant', 'You']);
    const segments = messageOf(document, 1, 'Assistant').segments;
    expect(segments.map((segment) => segment.kind)).toEqual([
      'text',
      'tool_use',
      'tool_use',
      'tool_use',
      'thinking',
      'thinking',
      'thinking',
      'thinking',
      'thinking',
      'aborted',
    ]);
    expect(only(segments, 'text')[0]?.value).toBe('Let me look.\nTwo `lines`.');

    const uses: ToolUseSegment[] = only(segments, 'tool_use');
    expect(uses.map(({ name, id }) => ({ name, id }))).toEqual(
      inputs.map(({ name, id }) => ({ name, id })),
    );
    expect(uses[0]?.input).toEqual(inputs[0]?.input);
    expect(uses[1]?.input).toEqual(inputs[1]?.input);
    expect(uses[1]?.fence.ticks).toBe(T5);
    expect(uses[2]?.input).toEqual({});

    const thoughts: ThinkingSegment[] = only(segments, 'thinking');
    expect(
      // The buffer holds the format's escape; read back, the content is as the provider sent it.
      thoughts.map(({ content, signature, redacted, selfClosing }) => ({
        content: unescapeText(content),
        signature,
        redacted,
        selfClosing,
      })),
    ).toEqual([
      {
        content: 'Plan:\n```\n@You:\n```\nthen run.',
        signature,
        redacted: false,
        selfClosing: false,
      },
      { content: 'opaque==', signature: undefined, redacted: true, selfClosing: false },
      {
        content: 'unsigned </thinking>\n</thinking>',
        signature: undefined,
        redacted: false,
        selfClosing: false,
      },
      {
        content: '',
        signature: { provider: 'vertex', value: 's' },
        redacted: false,
        selfClosing: false,
      },
      {
        content: '',
        signature: { provider: 'openai', value: 'gAAA==' },
        redacted: false,
        selfClosing: true,
      },
    ]);

    const aborted: AbortedSegment[] = only(segments, 'aborted');
    expect(aborted[0]?.message).toBe('Cut -- > off here');
  });

  it('reads back placeholders of every status and finished results', () => {
    const ids = PLACEHOLDER_STATUSES.map((_, index) => `toolu_0${index}`);
    const uses = [...ids, 'toolu_ok', 'toolu_json', 'toolu_err', 'toolu_partial'];
    const body: string[] = [...roleMarker('Assistant')];
    for (const id of uses) body.push('', ...toolUse({ name: 'bash', id, input: { n: 1 } }));
    body.push('', ...roleMarker('You'));
    PLACEHOLDER_STATUSES.forEach((status, index) => {
      const content = status === 'rejected' ? 'Not on my machine.\n```\nrm -rf ~\n```' : '';
      body.push('', ...placeholder(ids[index] ?? '', status, content));
    });
    body.push(
      '',
      ...toolResult({ id: 'toolu_ok', output: 'line 1\n\n```ts\nx\n```\n', isError: false }),
      '',
      ...toolResult({ id: 'toolu_json', output: { ok: true, list: ['`'] }, isError: false }),
      '',
      ...toolResult({ id: 'toolu_err', output: 'Division by zero', isError: true }),
      '',
      ...toolResult({
        id: 'toolu_partial',
        output: 'exit 1',
        isError: true,
        partialOutput: 'compiling…\n@Assistant:',
      }),
      '',
      'Thanks!',
    );

    const document = parseChat(body.join('\n'));
    expect(document.diagnostics).toEqual([]);
    const you = messageOf(document, 1, 'You');
    expect(document.messages).toHaveLength(2);
    const results: ToolResultSegment[] = only(you.segments, 'tool_result');
    expect(results.map((result) => result.toolUseId)).toEqual(uses);

    PLACEHOLDER_STATUSES.forEach((status, index) => {
      const result = results[index];
      expect(result?.placeholder).toEqual({ status, form: 'fence' });
      expect(result?.isError).toBe(false);
      expect(result?.fence.language).toBe('flemma:tool');
      expect(result?.fence.info).toBe(`status=${status}`);
      expect(result?.content).toBe(
        status === 'rejected' ? 'Not on my machine.\n```\nrm -rf ~\n```' : '',
      );
    });

    const [ok, json, err, partial] = results.slice(PLACEHOLDER_STATUSES.length);
    expect(ok?.placeholder).toBeUndefined();
    expect(ok?.isError).toBe(false);
    expect(ok?.content).toBe('line 1\n\n```ts\nx\n```\n');
    expect(json?.fence.language).toBe('json');
    expect(JSON.parse(json?.content ?? '')).toEqual({ ok: true, list: ['`'] });
    expect(err?.isError).toBe(true);
    expect(err?.placeholder).toBeUndefined();
    expect(err?.content).toBe('Division by zero');
    expect(partial?.isError).toBe(true);
    expect(partial?.content).toBe('exit 1\n\nPartial output:\ncompiling…\n@Assistant:');
    expect(only(you.segments, 'text').at(-1)?.value).toBe('Thanks!');
  });
});
