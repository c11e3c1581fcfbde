// Template scanning: tags, Lua-aware closers, trim markers and exact byte spans.
import { describe, expect, it } from 'vitest';
import type { Span, TextSegment } from '../../src/core/chat/ast.js';
import { scanTemplate, type TemplateSegment } from '../../src/core/chat/template.js';
import { mulberry32 } from '../helpers/random.js';
import { expectSpansTile, randomText } from '../helpers/span-tiling.js';

const encoder = new TextEncoder();

function span(startLine: number, startCol: number, endLine: number, endCol: number): Span {
  return { startLine, startCol, endLine, endCol };
}

/** The string offset a span position refers to, found independently of the scanner. */
function offsetOf(text: string, origin: { line: number; col: number }, line: number, col: number) {
  const lines = text.split('\n');
  const index = line - origin.line;
  const content = lines[index];
  if (content === undefined) throw new Error(`line ${line} is outside the text`);
  let offset = 0;
  for (let k = 0; k < index; k++) offset += (lines[k] ?? '').length + 1;
  let bytes = index === 0 ? origin.col : 0;
  let i = 0;
  while (bytes < col && i < content.length) {
    const char = String.fromCodePoint(content.codePointAt(i) ?? 0);
    bytes += encoder.encode(char).length;
    i += char.length;
  }
  if (bytes !== col) throw new Error(`column ${col} of line ${line} is not a character boundary`);
  return offset + i;
}

/** Checks the slice of an expression or code tag: its delimiters around its code. */
function expectTagSlice(slice: string, tag: Exclude<TemplateSegment, TextSegment>): void {
  expect(slice.startsWith(tag.kind === 'expression' ? '{{' : '{%')).toBe(true);
  expect(slice.endsWith(tag.kind === 'expression' ? '}}' : '%}')).toBe(true);
  expect(slice).toContain(tag.code);
}

const at1 = { line: 1, col: 0 };

// The segments scanTemplate returns, one call each: text, and expression and code tags (trim
// markers off unless given).
const textSeg = (value: string, at: Span) => ({ kind: 'text', value, span: at });
const tagSeg =
  (kind: 'expression' | 'code') =>
  (code: string, at: Span, trimBefore = false, trimAfter = false) => ({
    kind,
    code,
    trimBefore,
    trimAfter,
    span: at,
  });
const exprSeg = tagSeg('expression');
const codeSeg = tagSeg('code');

describe('scanTemplate: plain text', () => {
  it('returns nothing for empty text', () => {
    expect(scanTemplate('', at1)).toEqual([]);
  });

  it('returns text without tags as one segment', () => {
    expect(scanTemplate('hello', { line: 3, col: 0 })).toEqual([
      textSeg('hello', span(3, 0, 3, 5)),
    ]);
  });

  it('measures multi-line text in bytes, offsetting only the first line by the origin', () => {
    expect(scanTemplate('ab\ncdé', { line: 2, col: 4 })).toEqual([
      textSeg('ab\ncdé', span(2, 4, 3, 4)),
    ]);
  });

  it('ends a span that stops after a newline at column 0 of the next line', () => {
    expect(scanTemplate('abc\n', at1)).toEqual([textSeg('abc\n', span(1, 0, 2, 0))]);
  });

  it('keeps lone braces and stray closers as text', () => {
    const text = '{ a } {x} }} %} {';
    expect(scanTemplate(text, at1)).toEqual([textSeg(text, span(1, 0, 1, 17))]);
  });
});

describe('scanTemplate: tags', () => {
  it('splits an expression out of surrounding text', () => {
    expect(scanTemplate('Hi {{ name }}!', at1)).toEqual([
      textSeg('Hi ', span(1, 0, 1, 3)),
      exprSeg('name', span(1, 3, 1, 13)),
      textSeg('!', span(1, 13, 1, 14)),
    ]);
  });

  it('recognises code tags', () => {
    expect(scanTemplate('{% for i = 1, 3 do %}x{% end %}', at1)).toEqual([
      codeSeg('for i = 1, 3 do', span(1, 0, 1, 21)),
      textSeg('x', span(1, 21, 1, 22)),
      codeSeg('end', span(1, 22, 1, 31)),
    ]);
  });

  it('emits adjacent tags without empty text between them', () => {
    const segments = scanTemplate('{{ a }}{% b %}{{ c }}', at1);
    expect(segments.map((s) => s.kind)).toEqual(['expression', 'code', 'expression']);
    expect(segments.map((s) => s.span)).toEqual([
      span(1, 0, 1, 7),
      span(1, 7, 1, 14),
      span(1, 14, 1, 21),
    ]);
  });

  it('lets the earliest opener win', () => {
    const segments = scanTemplate('{% x = "{{" %} {{ "{%" }}', at1);
    expect(segments).toMatchObject([
      { kind: 'code', code: 'x = "{{"' },
      { kind: 'text', value: ' ' },
      { kind: 'expression', code: '"{%"' },
    ]);
  });

  it('records trim markers without trimming the text', () => {
    expect(scanTemplate('a \n{{- x -}}\n b', at1)).toEqual([
      textSeg('a \n', span(1, 0, 2, 0)),
      exprSeg('x', span(2, 0, 2, 9), true, true),
      textSeg('\n b', span(2, 9, 3, 2)),
    ]);
    expect(scanTemplate('{%- if a then -%}', at1)).toEqual([
      codeSeg('if a then', span(1, 0, 1, 17), true, true),
    ]);
  });

  it('reads each trim marker on its own', () => {
    expect(scanTemplate('{{-x}}', at1)).toMatchObject([
      { code: 'x', trimBefore: true, trimAfter: false },
    ]);
    expect(scanTemplate('{{x-}}', at1)).toMatchObject([
      { code: 'x', trimBefore: false, trimAfter: true },
    ]);
    expect(scanTemplate('{%x -%}', at1)).toMatchObject([
      { kind: 'code', code: 'x', trimBefore: false, trimAfter: true },
    ]);
    // One dash cannot be both markers.
    expect(scanTemplate('{{-}}', at1)).toMatchObject([
      { code: '', trimBefore: true, trimAfter: false },
    ]);
    expect(scanTemplate('{%-%}', at1)).toMatchObject([
      { kind: 'code', code: '', trimBefore: true, trimAfter: false },
    ]);
  });

  it('handles tags at the start and end of lines', () => {
    expect(scanTemplate('x {{ a }}\n{{ b }} y', at1)).toEqual([
      textSeg('x ', span(1, 0, 1, 2)),
      exprSeg('a', span(1, 2, 1, 9)),
      textSeg('\n', span(1, 9, 2, 0)),
      exprSeg('b', span(2, 0, 2, 7)),
      textSeg(' y', span(2, 7, 2, 9)),
    ]);
  });

  it('spans multi-line tags', () => {
    const origin = { line: 5, col: 2 };
    expect(scanTemplate('a\n{{\n x \n}}\nb', origin)).toEqual([
      textSeg('a\n', span(5, 2, 6, 0)),
      exprSeg('x', span(6, 0, 8, 2)),
      textSeg('\nb', span(8, 2, 9, 1)),
    ]);
  });

  it('counts UTF-8 bytes before, inside and after tags', () => {
    expect(scanTemplate('é🙂 {{ "ü" }}ñ', { line: 1, col: 3 })).toEqual([
      textSeg('é🙂 ', span(1, 3, 1, 10)),
      exprSeg('"ü"', span(1, 10, 1, 20)),
      textSeg('ñ', span(1, 20, 1, 22)),
    ]);
  });
});

describe('scanTemplate: Lua-aware closers', () => {
  const codeOf = (text: string): string[] =>
    scanTemplate(text, at1).map((s) => (s.kind === 'text' ? `text:${s.value}` : s.code));

  it('skips closers inside quoted strings, with escapes', () => {
    expect(codeOf('{{ "}}" }}')).toEqual(['"}}"']);
    expect(codeOf("{{ 'a\\'}}' }}")).toEqual(["'a\\'}}'"]);
    expect(codeOf('{{ "a\\"}}" .. x }}')).toEqual(['"a\\"}}" .. x']);
    expect(codeOf('{% s = "%}" %}')).toEqual(['s = "%}"']);
    expect(codeOf("{% s = '-%}' %}")).toEqual(["s = '-%}'"]);
  });

  it('skips closers inside long strings', () => {
    expect(codeOf('{{ [[ }} ]] }}')).toEqual(['[[ }} ]]']);
    expect(codeOf('{{ [==[ ]] }} ]=] ]==] }}')).toEqual(['[==[ ]] }} ]=] ]==]']);
    expect(codeOf('{% s = [[\n%}\n]] %}')).toEqual(['s = [[\n%}\n]]']);
  });

  it('does not take a lone [ or [= for a long bracket', () => {
    expect(codeOf('{{ t[1] }}')).toEqual(['t[1]']);
    expect(codeOf('{{ t[ = }}')).toEqual(['t[ =']);
  });

  it('skips closers inside comments', () => {
    expect(codeOf('{% x = 1 -- ends here %}\ny = 2 %}')).toEqual(['x = 1 -- ends here %}\ny = 2']);
    expect(codeOf('{{ x --[[ }} ]] }}')).toEqual(['x --[[ }} ]]']);
    expect(codeOf('{{ x --[==[ ]] }} ]==] + 1 }}')).toEqual(['x --[==[ ]] }} ]==] + 1']);
  });

  it('tracks table braces in expressions', () => {
    expect(codeOf('{{ {a=1} }}')).toEqual(['{a=1}']);
    expect(codeOf('{{ {a={b=2}} }}')).toEqual(['{a={b=2}}']);
    expect(codeOf('{{{a=1}}}')).toEqual(['{a=1}']);
    expect(codeOf('{{ f{ "}}" } }} tail')).toEqual(['f{ "}}" }', 'text: tail']);
  });

  it('ignores a stray closing brace at depth 0 in an expression', () => {
    expect(codeOf('{{ a } b }}')).toEqual(['a } b']);
  });

  it('does not track braces in code tags', () => {
    expect(codeOf('{% t = { %}x{% } %}')).toEqual(['t = {', 'text:x', '}']);
  });
});

describe('scanTemplate: unclosed openers', () => {
  it('turns everything from an unclosed opener on into one text segment', () => {
    expect(scanTemplate('before {{ x', at1)).toEqual([
      textSeg('before ', span(1, 0, 1, 7)),
      textSeg('{{ x', span(1, 7, 1, 11)),
    ]);
  });

  it('keeps earlier tags and stops at the unclosed one', () => {
    const segments = scanTemplate('a {{ x }} b {% y\nz {{ w }}', at1);
    expect(segments).toEqual([
      textSeg('a ', span(1, 0, 1, 2)),
      exprSeg('x', span(1, 2, 1, 9)),
      textSeg(' b ', span(1, 9, 1, 12)),
      textSeg('{% y\nz {{ w }}', span(1, 12, 2, 9)),
    ]);
  });

  it('treats an unterminated string or long string as swallowing the closer', () => {
    expect(scanTemplate('{{ "x }} {{ y }}', at1)).toEqual([
      textSeg('{{ "x }} {{ y }}', span(1, 0, 1, 16)),
    ]);
    expect(scanTemplate('{% [[ %}', at1)).toMatchObject([{ kind: 'text', value: '{% [[ %}' }]);
    expect(scanTemplate('{{ --[[ }}', at1)).toMatchObject([{ kind: 'text', value: '{{ --[[ }}' }]);
  });

  it('treats an opener at the very end as text', () => {
    expect(scanTemplate('x {{', at1)).toEqual([
      textSeg('x ', span(1, 0, 1, 2)),
      textSeg('{{', span(1, 2, 1, 4)),
    ]);
    expect(scanTemplate('x {', at1)).toEqual([textSeg('x {', span(1, 0, 1, 3))]);
  });
});

// How long these inputs take is measured by `npm run bench` (`chat.scan_template_*`); a unit test
// holds no wall-clock bound. Here: what comes out of them.
describe('scanTemplate: large input', () => {
  const line = 'The quick brown fox jumps over the lazy dog, é and 🙂 included.\n';
  const megabyte = line.repeat(Math.ceil(1_000_000 / line.length));

  it('returns a megabyte of text without braces as one segment', () => {
    expect(scanTemplate(megabyte, at1)).toEqual([
      { kind: 'text', value: megabyte, span: expect.any(Object) as unknown },
    ]);
  });

  it('scans a megabyte with a few tags', () => {
    const third = Math.floor(megabyte.length / 3);
    const text = `{{ a }}${megabyte.slice(0, third)}{% b %}${megabyte.slice(third)}{{ {c=1} }}`;
    const segments = scanTemplate(text, at1);
    expect(segments.map((segment) => segment.kind)).toEqual([
      'expression',
      'text',
      'code',
      'text',
      'expression',
    ]);
    expectSpansTile(text, at1, segments, offsetOf, expectTagSlice);
  });
});

describe('scanTemplate: degenerate input', () => {
  it('reads many tags, each as its own segment', () => {
    const text = '{{ }}{% %}'.repeat(20_000);
    const segments = scanTemplate(text, at1);
    expect(segments).toHaveLength(40_000);
    // One line of ASCII: each tag is the next five columns.
    const wrong = segments.findIndex(
      (s, i) =>
        s.kind !== (i % 2 === 0 ? 'expression' : 'code') ||
        s.span.startCol !== 5 * i ||
        s.span.endCol !== 5 * i + 5,
    );
    expect(wrong).toBe(-1);
  });

  it.each([
    ['many dashes in an unclosed tag', `{% ${'- '.repeat(100_000)}`],
    ['many escapes in an unclosed string', `{{ ${'"\\"'.repeat(70_000)}`],
    ['many long-bracket openers', `{{ ${'[=['.repeat(70_000)}`],
    ['many stray braces', '{x}'.repeat(70_000)],
  ])('keeps %s as text', (_name, text) => {
    const segments = scanTemplate(text, at1);
    expect(segments).toHaveLength(1);
    expect(segments[0]?.kind === 'text' && segments[0].value === text).toBe(true);
  });
});

describe('scanTemplate: property', () => {
  // prettier-ignore
  const alphabet = [
    '{', '}', '%', '-', "'", '"', '[', ']', '=', '@', '.', '/', '~', ';', '\n', '\\', ' ', 'a',
    'é', '🙂', '日', '\ud83d', '\ude42', '{{', '}}', '{%', '%}', '--', '[[', ']]', '[=[', ']=]', '@./', '-}}',
  ];

  it('tiles every random input exactly with ordered spans', () => {
    const random = mulberry32(0x5eed);
    for (let run = 0; run < 2000; run++) {
      const { text, origin } = randomText(random, alphabet, 40);
      let segments: TemplateSegment[] = [];
      expect(() => (segments = scanTemplate(text, origin)), JSON.stringify(text)).not.toThrow();
      expectSpansTile(text, origin, segments, offsetOf, expectTagSlice);
    }
  });
});
