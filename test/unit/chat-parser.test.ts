import { describe, expect, it } from 'vitest';
import type {
  ChatDocument,
  Message,
  ThinkingSegment,
  ToolResultSegment,
  ToolUseSegment,
} from '../../src/core/chat/ast.js';
import { parseChat, parseLines, reparse } from '../../src/core/chat/parser.js';
import { BASH_ROUND } from '../helpers/chat-lines.js';

const doc = (...lines: string[]): ChatDocument => parseLines(lines);
const roles = (d: ChatDocument): string[] => d.messages.map((m) => m.role);
const message = (d: ChatDocument, index: number): Message => {
  const m = d.messages[index];
  if (m === undefined) throw new Error(`no message ${String(index)}`);
  return m;
};
const kinds = (m: Message): string[] => m.segments.map((s) => s.kind);
const codes = (d: ChatDocument): string[] => d.diagnostics.map((x) => x.code);
function only<T>(items: T[]): T {
  expect(items).toHaveLength(1);
  return items[0] as T;
}
const toolUses = (m: Message): ToolUseSegment[] =>
  m.segments.filter((s): s is ToolUseSegment => s.kind === 'tool_use');
const toolResults = (m: Message): ToolResultSegment[] =>
  m.segments.filter((s): s is ToolResultSegment => s.kind === 'tool_result');
const thinkings = (m: Message): ThinkingSegment[] =>
  m.segments.filter((s): s is ThinkingSegment => s.kind === 'thinking');

describe('frontmatter (docs/chat-format.md §3)', () => {
  it('is a fence on line 1 with a language, closed by a bare three-backtick line', () => {
    const d = doc('```lua', 'x = 1', 'flemma.opt.thinking = "medium"', '```', '@You:', 'hi');
    expect(d.frontmatter).toEqual({
      kind: 'frontmatter',
      language: 'lua',
      code: 'x = 1\nflemma.opt.thinking = "medium"',
      span: { startLine: 1, endLine: 4 },
    });
    expect(roles(d)).toEqual(['You']);
    expect(d.diagnostics).toEqual([]);
  });

  it('accepts json and is case-insensitive about the language', () => {
    expect(doc('```JSON', '{}', '```', '@You:', 'x').diagnostics).toEqual([]);
  });

  it('while unclosed, is ignored with a warning, and never hides the messages after it', () => {
    const d = doc('```lua', 'x = 1', '@You:', 'hi', '@Assistant:', 'hello');
    expect(d.frontmatter).toBeUndefined();
    expect(roles(d)).toEqual(['You', 'Assistant']);
    expect(d.diagnostics).toMatchObject([
      { code: 'frontmatter-unclosed', severity: 'warning', span: { startLine: 1 } },
    ]);
  });

  it('is absent when unclosed or not on line 1, and a 4-backtick line does not close it', () => {
    expect(doc('```lua', 'x = 1', '@You:', 'hi').frontmatter).toBeUndefined();
    expect(doc('', '```lua', 'x', '```', '@You:').frontmatter).toBeUndefined();
    expect(doc('```lua', 'x', '````', '@You:', 'hi').frontmatter).toBeUndefined();
  });

  it('reports an unknown language as an error, unless registered', () => {
    const d = doc('```yaml', 'a: 1', '```', '@You:', 'hi');
    expect(d.frontmatter?.language).toBe('yaml');
    expect(d.diagnostics).toMatchObject([
      { severity: 'error', code: 'frontmatter-language', span: { startLine: 1, endLine: 3 } },
    ]);
    expect(d.diagnostics[0]?.message).toContain('Unsupported frontmatter language: yaml');
    const registered = parseLines(['```yaml', 'a: 1', '```'], {
      frontmatterLanguages: new Set(['lua', 'json', 'yaml']),
    });
    expect(registered.diagnostics).toEqual([]);
  });
});

describe('role markers and message boundaries (docs/chat-format.md §4, §5; scenarios 1–3)', () => {
  it('ignores text before the first marker and splits on whole-line markers', () => {
    const d = doc('preamble', '@System:', 'Be brief.', '@You:', 'Hello', '', '@Assistant:', 'Hi!');
    expect(roles(d)).toEqual(['System', 'You', 'Assistant']);
    expect(message(d, 1).span).toEqual({ startLine: 4, endLine: 6 });
    expect(message(d, 1).segments).toEqual([
      { kind: 'text', value: 'Hello', span: { startLine: 5, endLine: 5, startCol: 0, endCol: 5 } },
    ]);
  });

  it('does not take `@You: hello` or an indented marker as a marker, but allows trailing space', () => {
    expect(roles(doc('@You:', 'a', '@You: hello', ' @Assistant:', '@Assistant:   '))).toEqual([
      'You',
      'Assistant',
    ]);
  });

  it('keeps unknown roles as messages', () => {
    expect(roles(doc('@Notes:', 'scratch', '@You:', 'q'))).toEqual(['Notes', 'You']);
  });

  it('scenario 1: a marker inside a fence does not split the message', () => {
    const d = doc('@You:', '```', '@You:', '```', 'after');
    expect(roles(d)).toEqual(['You']);
  });

  it('scenario 2: a 4-backtick fence is not closed by a 3-backtick line', () => {
    const d = doc('@You:', '````md', '```', '@Assistant:', '```', '````', '@Assistant:', 'ok');
    expect(roles(d)).toEqual(['You', 'Assistant']);
    expect(message(d, 1).span.startLine).toBe(7);
  });

  it('scenario 3: ```How are you?``` and ```Hello `World? are not fence openers', () => {
    expect(roles(doc('@You:', '```How are you?```', '@Assistant:', 'x'))).toEqual([
      'You',
      'Assistant',
    ]);
    expect(roles(doc('@You:', '```Hello `World?', '@Assistant:', 'x'))).toEqual([
      'You',
      'Assistant',
    ]);
  });

  it('an unclosed fence swallows the rest, with a warning at its opener', () => {
    const d = doc('@You:', '```python', 'x = 1', '@Assistant:', 'reply');
    expect(roles(d)).toEqual(['You']);
    expect(d.diagnostics).toMatchObject([{ code: 'fence-unclosed', span: { startLine: 2 } }]);
  });

  it('a message span runs to the line before the next marker; content drops blank edges', () => {
    const d = doc('@You:', '', 'question', '', '', '@Assistant:');
    expect(message(d, 0).span).toEqual({ startLine: 1, endLine: 5 });
    expect(message(d, 0).segments).toMatchObject([{ kind: 'text', value: 'question' }]);
    expect(message(d, 1).segments).toEqual([]);
  });
});

describe('@Assistant: bodies (docs/chat-format.md §6; scenarios 4, 5, 8, 10)', () => {
  it('reads text, tool use with JSON input, and signed thinking anywhere', () => {
    const d = doc(
      '@Assistant:',
      "I'll calculate that.",
      '',
      '**Tool Use:** `calculator` (`toolu_01A`)',
      '',
      '```json',
      '{"expression":"15 * 7","precise":null}',
      '```',
      '',
      '<thinking anthropic:signature="EqQB+/=">',
      'The user wants a product.',
      '</thinking>',
    );
    const m = message(d, 0);
    expect(kinds(m)).toEqual(['text', 'tool_use', 'thinking']);
    expect(only(toolUses(m))).toMatchObject({
      id: 'toolu_01A',
      name: 'calculator',
      input: { expression: '15 * 7', precise: null },
      span: { startLine: 4, endLine: 8 },
      fence: { ticks: '```', language: 'json', openLine: 6, closeLine: 8 },
    });
    expect(only(thinkings(m))).toEqual({
      kind: 'thinking',
      content: 'The user wants a product.',
      signature: { provider: 'anthropic', value: 'EqQB+/=' },
      redacted: false,
      selfClosing: false,
      span: { startLine: 10, endLine: 12 },
    });
    expect(d.diagnostics).toEqual([]);
  });

  it('scenario 4: plain and redacted thinking with multi-line content', () => {
    const d = doc(
      '@Assistant:',
      'Hi',
      '<thinking>',
      'a',
      '',
      'b',
      '</thinking>',
      '<thinking redacted>',
      'xyz',
      '</thinking>',
    );
    const [plain, redacted] = thinkings(message(d, 0));
    expect(plain).toMatchObject({
      content: 'a\n\nb',
      redacted: false,
      span: { startLine: 3, endLine: 7 },
    });
    expect(plain?.signature).toBeUndefined();
    expect(redacted).toMatchObject({ content: 'xyz', redacted: true });
  });

  it('scenario 5: self-closing thinking carries a vertex signature and no content', () => {
    const m = message(doc('@Assistant:', '<thinking vertex:signature="c2ln"/>', 'text'), 0);
    expect(only(thinkings(m))).toMatchObject({
      content: '',
      selfClosing: true,
      signature: { provider: 'vertex', value: 'c2ln' },
    });
  });

  it('closes a thinking block on </thinking> with trailing blanks', () => {
    const m = message(doc('@Assistant:', '<thinking>', 'x', '</thinking>  ', 'after'), 0);
    expect(kinds(m)).toEqual(['thinking', 'text']);
  });

  it('an unclosed thinking block stays text, with a warning', () => {
    const d = doc('@Assistant:', '<thinking>', 'never closed');
    expect(message(d, 0).segments).toMatchObject([
      { kind: 'text', value: '<thinking>\nnever closed' },
    ]);
    expect(codes(d)).toEqual(['thinking-unclosed']);
  });

  it('scenario 8: a 4-backtick fence holds JSON that contains ```', () => {
    const d = doc(
      '@Assistant:',
      '**Tool Use:** `write` (`t1`)',
      '',
      '````json',
      '{"content":"```js\\nx\\n```"}',
      '````',
      '@You:',
      '**Tool Result:** `t1`',
      '',
      '````',
      'wrote ```js',
      '```',
      '````',
    );
    expect(only(toolUses(message(d, 0))).input).toEqual({ content: '```js\nx\n```' });
    expect(only(toolResults(message(d, 1))).content).toBe('wrote ```js\n```');
    expect(roles(d)).toEqual(['Assistant', 'You']);
  });

  it('reports bad tool input and keeps reading after the fence', () => {
    const d = doc(
      '@Assistant:',
      '**Tool Use:** `bash` (`t1`)',
      '```json',
      '{"command": ',
      '```',
      'still here',
    );
    expect(toolUses(message(d, 0))).toEqual([]);
    expect(message(d, 0).segments).toMatchObject([{ kind: 'text', value: 'still here' }]);
    expect(d.diagnostics).toMatchObject([
      { code: 'tool-use-json', severity: 'warning', span: { startLine: 2, endLine: 5 } },
    ]);
    expect(d.diagnostics[0]?.message).toContain('Failed to parse tool input');
  });

  it('reports a tool use without a fence, or with an unclosed one', () => {
    expect(codes(doc('@Assistant:', '**Tool Use:** `bash` (`t1`)', '', 'text'))).toEqual([
      'tool-use-missing-fence',
    ]);
    const unclosed = doc('@Assistant:', '**Tool Use:** `bash` (`t1`)', '```json', '{}');
    expect(codes(unclosed)).toEqual(expect.arrayContaining(['tool-use-unclosed-fence']));
  });

  it('scenario 10: the abort marker is a segment in @Assistant: and text in @You:', () => {
    const d = doc(
      '@Assistant:',
      'partial',
      '<!-- flemma:aborted:  Response interrupted by the user.  -->',
      '@You:',
      '<!-- flemma:aborted: x -->',
    );
    expect(message(d, 0).segments).toMatchObject([
      { kind: 'text', value: 'partial' },
      { kind: 'aborted', message: 'Response interrupted by the user.' },
    ]);
    expect(kinds(message(d, 1))).toEqual(['text']);
  });

  it('reads structure only outside code fences: an example in a code block stays text', () => {
    const d = doc(
      '@Assistant:',
      'A tool call looks like this:',
      '````markdown',
      '**Tool Use:** `bash` (`example`)',
      '```json',
      '{}',
      '```',
      '<thinking>',
      '````',
      'That was an example.',
    );
    expect(kinds(message(d, 0))).toEqual(['text']);
    expect(d.diagnostics).toEqual([]);
    const you = doc('@You:', '```', '**Tool Result:** `t1`', '```', 'done');
    expect(kinds(message(you, 0))).toEqual(['text']);
    expect(you.diagnostics).toEqual([]);
  });

  it('does not read templates or file references in @Assistant:', () => {
    expect(kinds(message(doc('@Assistant:', 'see @./a.txt and {{ x }}'), 0))).toEqual(['text']);
  });
});

describe('@You: bodies, results and placeholders (docs/chat-format.md §7, §8; scenarios 6, 7, 9, 13)', () => {
  const withUse = (...you: string[]): ChatDocument =>
    doc('@Assistant:', '**Tool Use:** `bash` (`t1`)', '```json', '{}', '```', '@You:', ...you);

  it('reads a finished result, then the user text after it', () => {
    const d = withUse('**Tool Result:** `t1`', '', '```', '105', '```', '', 'Thanks! Now 20 + 30?');
    const m = message(d, 1);
    expect(kinds(m)).toEqual(['tool_result', 'text']);
    expect(only(toolResults(m))).toMatchObject({
      toolUseId: 't1',
      content: '105',
      isError: false,
      segments: [{ kind: 'text', value: '105' }],
      span: { startLine: 7, endLine: 11 },
    });
    expect(only(toolResults(m)).placeholder).toBeUndefined();
    expect(d.diagnostics).toEqual([]);
  });

  it('scenario 7: (error) marks a finished error result', () => {
    const r = only(
      toolResults(
        message(withUse('**Tool Result:** `t1` (error)', '```', 'Division by zero', '```'), 1),
      ),
    );
    expect(r).toMatchObject({ isError: true, content: 'Division by zero' });
    expect(r.placeholder).toBeUndefined();
  });

  it('reads the current placeholder form: a flemma:tool fence with status=…, content kept', () => {
    for (const status of ['pending', 'approved', 'denied', 'rejected', 'aborted'] as const) {
      const r = only(
        toolResults(
          message(
            withUse('**Tool Result:** `t1`', '', `\`\`\`flemma:tool status=${status}`, '```'),
            1,
          ),
        ),
      );
      expect(r.placeholder).toEqual({ status, form: 'fence' });
      expect(r.content).toBe('');
      expect(r.segments).toEqual([]);
    }
    const typed = only(
      toolResults(
        message(
          withUse(
            '**Tool Result:** `t1`',
            '```flemma:tool status=rejected',
            "I don't want rm -rf.",
            '```',
          ),
          1,
        ),
      ),
    );
    expect(typed).toMatchObject({
      placeholder: { status: 'rejected', form: 'fence' },
      content: "I don't want rm -rf.",
    });
  });

  it('needs three backticks for a tool fence: `inline code` after a header is not one', () => {
    const d = withUse('**Tool Result:** `t1`', '`npm test` passed', '`done`');
    expect(toolResults(message(d, 1))).toEqual([]);
    expect(codes(d)).toEqual(['tool-result-missing-fence']);
  });

  it('warns about a second result for the same tool use', () => {
    const d = withUse(
      '**Tool Result:** `t1`',
      '```',
      'a',
      '```',
      '**Tool Result:** `t1`',
      '```',
      'b',
      '```',
    );
    expect(d.diagnostics).toMatchObject([
      { code: 'tool-result-duplicate', span: { startLine: 11 } },
    ]);
  });

  it('reads a flemma:tool fence without a known status as pending, with a warning if it said something', () => {
    const bare = withUse('**Tool Result:** `t1`', '```flemma:tool', '```');
    expect(only(toolResults(message(bare, 1))).placeholder?.status).toBe('pending');
    expect(bare.diagnostics).toEqual([]);
    const odd = withUse('**Tool Result:** `t1`', '```flemma:tool status=maybe', '```');
    expect(codes(odd)).toEqual(['placeholder-status']);
    const error = withUse('**Tool Result:** `t1`', '```flemma:tool status=error', '```');
    expect(codes(error)).toEqual(['placeholder-status']);
    const other = withUse('**Tool Result:** `t1`', '```flemma:tool sandbox=false', '```');
    expect(only(toolResults(message(other, 1))).placeholder?.status).toBe('pending');
    expect(other.diagnostics).toEqual([]);
  });

  it('scenario 6: the older header-suffix form, aliases, meta, and no suffix', () => {
    const status = (suffix: string): ToolResultSegment =>
      only(toolResults(message(withUse(`**Tool Result:** \`t1\` ${suffix}`, '```', '```'), 1)));
    expect(status('(pending)').placeholder).toEqual({ status: 'pending', form: 'suffix' });
    expect(status('(approved)').placeholder?.status).toBe('approved');
    expect(status('(denied)').placeholder?.status).toBe('denied');
    expect(status('(reject)').placeholder?.status).toBe('rejected');
    expect(status('(deny)').placeholder?.status).toBe('denied');
    expect(status('(status=pending sandbox=false)')).toMatchObject({
      placeholder: { status: 'pending' },
      meta: { sandbox: 'false' },
    });
    const foo = status('(foo)');
    expect(foo.placeholder).toBeUndefined();
    expect(foo.meta).toEqual({ '1': 'foo' });
    expect(status('').placeholder).toBeUndefined();
    expect(status('not parenthesised').placeholder).toBeUndefined();
  });

  it('scenario 9: malformed JSON or YAML inside a closed result fence is plain text', () => {
    const d = withUse('**Tool Result:** `t1`', '```yaml', '{ "result": 105', '```');
    expect(only(toolResults(message(d, 1))).content).toBe('{ "result": 105');
    expect(d.diagnostics).toEqual([]);
  });

  it('reports a result without a fence, an unclosed one, and a result that answers nothing', () => {
    expect(codes(withUse('**Tool Result:** `t1`', 'no fence'))).toEqual([
      'tool-result-missing-fence',
    ]);
    expect(codes(withUse('**Tool Result:** `t1`', '```', 'open'))).toEqual(
      expect.arrayContaining(['tool-result-unclosed-fence']),
    );
    const orphan = doc('@You:', '**Tool Result:** `ghost`', '```', 'x', '```');
    expect(orphan.diagnostics).toMatchObject([
      { code: 'tool-result-orphaned', span: { startLine: 2 } },
    ]);
  });

  it('recognises templates and file references in @You: and @System: text', () => {
    const d = doc(
      '@System:',
      'You help {{ name }}.',
      '@You:',
      'Read @./notes.md, then {% if x then %}go{% end %}',
    );
    expect(kinds(message(d, 0))).toEqual(['text', 'expression', 'text']);
    expect(kinds(message(d, 1))).toEqual([
      'text',
      'file_reference',
      'text',
      'code',
      'text',
      'code',
    ]);
  });

  it('recognises a file reference in a finished result body (e.g. a binary file read)', () => {
    const r = only(
      toolResults(
        message(withUse('**Tool Result:** `t1`', '```', '@./image.png;type=image/png', '```'), 1),
      ),
    );
    expect(r.segments).toMatchObject([
      { kind: 'file_reference', path: './image.png', mime: 'image/png' },
    ]);
  });
});

describe('never throws, and positions stay inside the document', () => {
  it('handles empty and odd input', () => {
    expect(parseChat('')).toMatchObject({ messages: [], diagnostics: [], lineCount: 1 });
    expect(parseChat('@You:')).toMatchObject({ messages: [{ role: 'You', segments: [] }] });
    expect(roles(parseChat('@You:\r\nhi\r\n@Assistant:\r\n'))).toEqual(['You', 'Assistant']);
  });
});

describe('reparse', () => {
  const base = [
    '```lua',
    'x = 1',
    '```',
    '@You:',
    'one',
    '@Assistant:',
    'reply',
    ...BASH_ROUND,
    '@Assistant:',
    'Streaming',
  ];

  function same(lines: string[], firstChanged: number): void {
    const previous = parseLines(base);
    expect(reparse(previous, lines, firstChanged)).toEqual(parseLines(lines));
  }

  it('gives the same tree as a full parse after appends and edits anywhere', () => {
    same([...base.slice(0, -1), 'Streaming more text', 'and a new line'], 18);
    same([...base, '', '@You:', 'next question'], 19);
    same([...base.slice(0, 16), '@Assistant:'], 17);
    same(['```lua', 'x = 2', '```', ...base.slice(3)], 2);
    same([...base.slice(0, 11), '@You:', '```', 'unclosed now', ...base.slice(12)], 13);
    same(base.slice(0, 5), 5);
  });

  it('reuses the messages before the change', () => {
    const previous = parseLines(base);
    const next = reparse(previous, [...base, ' more'], 19);
    expect(next.messages[0]).toBe(previous.messages[0]);
    expect(next.messages[2]).toBe(previous.messages[2]);
  });
});
