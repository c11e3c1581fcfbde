// File references in text segments: forms, punctuation, options, decoding and exact byte spans.
import { describe, expect, it } from 'vitest';
import type { FileReferenceSegment, Span, TextSegment } from '../../src/core/chat/ast.js';
import { splitFileReferences } from '../../src/core/chat/filerefs.js';
import { scanTemplate } from '../../src/core/chat/template.js';
import { mulberry32 } from '../helpers/random.js';
import { expectSpansTile, randomText } from '../helpers/span-tiling.js';

const encoder = new TextEncoder();

function span(startLine: number, startCol: number, endLine: number, endCol: number): Span {
  return { startLine, startCol, endLine, endCol };
}

/** The buffer position of `text[offset]`, computed independently of the code under test. */
function positionOf(text: string, origin: { line: number; col: number }, offset: number) {
  const before = text.slice(0, offset).split('\n');
  const last = before[before.length - 1] ?? '';
  const col = (before.length === 1 ? origin.col : 0) + encoder.encode(last).length;
  return { line: origin.line + before.length - 1, col };
}

/** A text segment for `value` starting at `origin`. */
function textAt(value: string, line = 1, col = 0): TextSegment {
  const end = positionOf(value, { line, col }, value.length);
  return { kind: 'text', value, span: span(line, col, end.line, end.col) };
}

/** The string offset a span position refers to, found independently of the code under test. */
function offsetOf(text: string, origin: { line: number; col: number }, line: number, col: number) {
  for (let offset = 0; offset <= text.length; offset++) {
    const position = positionOf(text, origin, offset);
    if (position.line === line && position.col === col) return offset;
  }
  throw new Error(`${line}:${col} is not a character boundary of the text`);
}

const ref = (raw: string, path: string, spanned: Span, mime?: string): FileReferenceSegment =>
  mime === undefined
    ? { kind: 'file_reference', raw, path, span: spanned }
    : { kind: 'file_reference', raw, path, mime, span: spanned };

const text = (value: string, spanned: Span): TextSegment => ({
  kind: 'text',
  value,
  span: spanned,
});

/** Just the interesting fields, for compact expectations. */
function summary(value: string): string[] {
  return splitFileReferences(textAt(value)).map((part) =>
    part.kind === 'text'
      ? `text:${part.value}`
      : `ref:${part.raw}=>${part.path}${part.mime === undefined ? '' : ` (${part.mime})`}`,
  );
}

describe('splitFileReferences: forms', () => {
  it('returns a segment without @ unchanged', () => {
    const segment = textAt('no references here');
    expect(splitFileReferences(segment)[0]).toBe(segment);
    expect(splitFileReferences(segment)).toHaveLength(1);
  });

  it('returns a segment whose @ start no reference unchanged', () => {
    const segment = textAt('@You: write to email@example.com or @ alone');
    expect(splitFileReferences(segment)).toEqual([segment]);
    expect(splitFileReferences(segment)[0]).toBe(segment);
  });

  it('finds a relative reference inside text, with exact spans', () => {
    expect(splitFileReferences(textAt('See @./notes.md please', 4, 2))).toEqual([
      text('See ', span(4, 2, 4, 6)),
      ref('./notes.md', './notes.md', span(4, 6, 4, 17)),
      text(' please', span(4, 17, 4, 24)),
    ]);
  });

  it('finds a parent-relative reference at the start of the text', () => {
    expect(splitFileReferences(textAt('@../up/x.txt'))).toEqual([
      ref('../up/x.txt', '../up/x.txt', span(1, 0, 1, 12)),
    ]);
  });

  it('drops one leading slash from an absolute reference', () => {
    expect(splitFileReferences(textAt('@//tmp/a.txt'))).toEqual([
      ref('//tmp/a.txt', '/tmp/a.txt', span(1, 0, 1, 12)),
    ]);
  });

  it('reads @/abs as an absolute path too', () => {
    expect(splitFileReferences(textAt('@/tmp/a.txt'))).toEqual([
      ref('/tmp/a.txt', '/tmp/a.txt', span(1, 0, 1, 11)),
    ]);
    expect(summary('see @/etc/hosts.')).toEqual([
      'text:see ',
      'ref:/etc/hosts=>/etc/hosts',
      'text:.',
    ]);
  });

  it('keeps a home-relative reference as written', () => {
    expect(summary('read @~/docs/b.md')).toEqual(['text:read ', 'ref:~/docs/b.md=>~/docs/b.md']);
  });

  it('accepts extra dots and slashes after the prefix, as the pattern does', () => {
    expect(summary('@.//x')).toEqual(['ref:.//x=>.//x']);
    expect(summary('@./../x')).toEqual(['ref:./../x=>./../x']);
    expect(summary('@./.hidden')).toEqual(['ref:./.hidden=>./.hidden']);
  });

  it('finds several references on a line', () => {
    expect(splitFileReferences(textAt('Compare @./a.txt and @./b.txt, then @~/c.md.'))).toEqual([
      text('Compare ', span(1, 0, 1, 8)),
      ref('./a.txt', './a.txt', span(1, 8, 1, 16)),
      text(' and ', span(1, 16, 1, 21)),
      ref('./b.txt', './b.txt', span(1, 21, 1, 29)),
      text(', then ', span(1, 29, 1, 36)),
      ref('~/c.md', '~/c.md', span(1, 36, 1, 43)),
      text('.', span(1, 43, 1, 44)),
    ]);
  });

  it('places references on later lines of multi-line text', () => {
    expect(splitFileReferences(textAt('line one\nsee @./x.md\nend', 10, 3))).toEqual([
      text('line one\nsee ', span(10, 3, 11, 4)),
      ref('./x.md', './x.md', span(11, 4, 11, 11)),
      text('\nend', span(11, 11, 12, 3)),
    ]);
  });

  it('counts UTF-8 bytes before and inside references', () => {
    expect(splitFileReferences(textAt('é🙂 @./café.md!', 2, 4))).toEqual([
      text('é🙂 ', span(2, 4, 2, 11)),
      ref('./café.md', './café.md', span(2, 11, 2, 22)),
      text('!', span(2, 22, 2, 23)),
    ]);
  });

  it('treats a span without a start column as starting at column 0', () => {
    const segment: TextSegment = {
      kind: 'text',
      value: 'x @./a',
      span: { startLine: 7, endLine: 7 },
    };
    expect(splitFileReferences(segment)).toEqual([
      text('x ', span(7, 0, 7, 2)),
      ref('./a', './a', span(7, 2, 7, 6)),
    ]);
  });

  it('ends a reference at any whitespace, including tabs and no-break spaces', () => {
    expect(summary('@./a\tb @./c\u00a0d')).toEqual([
      'ref:./a=>./a',
      'text:\tb ',
      'ref:./c=>./c',
      'text:\u00a0d',
    ]);
  });

  it('takes the whole whitespace-free run, even through a second @', () => {
    expect(summary('@./a@./b')).toEqual(['ref:./a@./b=>./a@./b']);
  });
});

describe('splitFileReferences: what is not a reference', () => {
  it.each([
    'email@example.com',
    '@You:',
    '@',
    'a lone @ sign',
    '@ ./x',
    '@./',
    '@../',
    '@.x',
    '@...',
    '@.../x',
    '@/',
    '@//',
    '@~x',
    '@~/',
    '@./.',
    '@./..,',
    '@./;type=text/plain',
  ])('%j stays text', (value) => {
    expect(summary(value)).toEqual([`text:${value}`]);
  });

  // Choice: a reference may not follow an ASCII letter or digit, since `name@./x` reads as an
  // address or a handle. Punctuation and scripts written without spaces still lead into one.
  it('ignores @ right after an ASCII letter or digit', () => {
    expect(summary('me@./x')).toEqual(['text:me@./x']);
    expect(summary('v2@~/x and user@//host')).toEqual(['text:v2@~/x and user@//host']);
  });

  it('accepts @ after punctuation, quotes, brackets and non-ASCII letters', () => {
    expect(summary('(@./a.png)')).toEqual(['text:(', 'ref:./a.png=>./a.png', 'text:)']);
    expect(summary('"@./a"')).toEqual(['text:"', 'ref:./a=>./a', 'text:"']);
    expect(summary('**@./a.md**')).toEqual(['text:**', 'ref:./a.md=>./a.md', 'text:**']);
    expect(summary('看@./a.png')).toEqual(['text:看', 'ref:./a.png=>./a.png']);
    expect(summary('x @@./a')).toEqual(['text:x @', 'ref:./a=>./a']);
  });

  it('skips a rejected candidate and finds the next one', () => {
    expect(summary('me@./x then @./y')).toEqual(['text:me@./x then ', 'ref:./y=>./y']);
  });
});

describe('splitFileReferences: trailing punctuation', () => {
  it.each([
    ['Look at @./a.png.', ['text:Look at ', 'ref:./a.png=>./a.png', 'text:.']],
    ['@./a.txt!?', ['ref:./a.txt=>./a.txt', 'text:!?']],
    ['@./a.lua,', ['ref:./a.lua=>./a.lua', 'text:,']],
    ["'@./x.lua'", ["text:'", 'ref:./x.lua=>./x.lua', "text:'"]],
    ['[@./x]', ['text:[', 'ref:./x=>./x', 'text:]']],
    ['{@./x}', ['text:{', 'ref:./x=>./x', 'text:}']],
    ['@./x:', ['ref:./x=>./x', 'text::']],
    ['@./file_', ['ref:./file=>./file', 'text:_']],
    ['@./dir/', ['ref:./dir=>./dir', 'text:/']],
    ['@./a.txt;', ['ref:./a.txt=>./a.txt', 'text:;']],
  ])('%j', (value, expected) => {
    expect(summary(value)).toEqual(expected);
  });

  it('keeps punctuation inside the path', () => {
    expect(summary('@./a_b-c.d/e.f!x')).toEqual(['ref:./a_b-c.d/e.f!x=>./a_b-c.d/e.f!x']);
  });

  it('gives the stripped punctuation its own span', () => {
    expect(splitFileReferences(textAt('@./a.md).'))).toEqual([
      ref('./a.md', './a.md', span(1, 0, 1, 7)),
      text(').', span(1, 7, 1, 9)),
    ]);
  });
});

describe('splitFileReferences: options', () => {
  it('reads a ;type= override and strips punctuation after it', () => {
    expect(splitFileReferences(textAt('Use @./data.json;type=text/plain.'))).toEqual([
      text('Use ', span(1, 0, 1, 4)),
      ref('./data.json;type=text/plain', './data.json', span(1, 4, 1, 32), 'text/plain'),
      text('.', span(1, 32, 1, 33)),
    ]);
  });

  it('reads the override before closing brackets', () => {
    expect(summary('(@./x;type=image/png)')).toEqual([
      'text:(',
      'ref:./x;type=image/png=>./x (image/png)',
      'text:)',
    ]);
  });

  it('leaves punctuation before the ; in the path', () => {
    expect(summary('@./x.;type=a/b')).toEqual(['ref:./x.;type=a/b=>./x. (a/b)']);
  });

  it('ignores other options and an empty type', () => {
    expect(summary('@./a;charset=utf-8')).toEqual(['ref:./a;charset=utf-8=>./a']);
    expect(summary('@./a;type=text/plain;charset=utf-8')).toEqual([
      'ref:./a;type=text/plain;charset=utf-8=>./a (text/plain)',
    ]);
    expect(summary('@./a;type=.')).toEqual(['ref:./a;type=>./a', 'text:=.']);
  });

  it('handles the override on every form', () => {
    expect(summary('@//tmp/x;type=text/plain @~/y;type=image/png')).toEqual([
      'ref://tmp/x;type=text/plain=>/tmp/x (text/plain)',
      'text: ',
      'ref:~/y;type=image/png=>~/y (image/png)',
    ]);
  });
});

describe('splitFileReferences: URL decoding', () => {
  it.each([
    ['@./my%20file.txt', './my file.txt'],
    ['@./a+b.txt', './a b.txt'],
    ['@./caf%C3%A9.md', './café.md'],
    ['@./caf%c3%a9.md', './café.md'],
    ['@./%F0%9F%99%82.png', './🙂.png'],
    ['@./100%.txt', './100%.txt'],
    ['@./x%zz', './x%zz'],
    ['@./x%4', './x%4'],
    ['@./bad%FF.txt', './bad%FF.txt'],
    ['@./mix%C3%A9%FF', './mixé%FF'],
    ['@./over%C0%AFlong', './over%C0%AFlong'],
    ['@./cut%E2%82', './cut%E2%82'],
    ['@./%2E%2E/x', './../x'],
    ['@//tmp/a%20b', '/tmp/a b'],
  ])('%j decodes to %j', (value, path) => {
    const parts = splitFileReferences(textAt(value));
    expect(parts).toEqual([ref(value.slice(1), path, span(1, 0, 1, encoder.encode(value).length))]);
  });
});

describe('splitFileReferences: property', () => {
  // prettier-ignore
  const alphabet = [
    '{', '}', '%', '-', "'", '"', '[', ']', '=', '@', '.', '/', '~', ';', '\n', ' ', '\t', 'a',
    '_', ')', '+', '%C3', '%A9', 'é', '🙂', '日', '\ud83d', '\ude42', '@./', '@../', '@//', '@~/', ';type=', '{{', '}}',
  ];

  /** Checks the slice of a file reference: `@` and the reference as written. */
  function expectReferenceSlice(slice: string, reference: FileReferenceSegment): void {
    expect(slice).toBe(`@${reference.raw}`);
    expect(reference.path.length).toBeGreaterThan(0);
  }

  it('tiles every random input exactly with ordered spans', () => {
    const random = mulberry32(0xf11e);
    for (let run = 0; run < 2000; run++) {
      const { text: value, origin } = randomText(random, alphabet, 30);
      const label = JSON.stringify(value);

      let parts: ReturnType<typeof splitFileReferences> = [];
      const segment = textAt(value, origin.line, origin.col);
      expect(() => (parts = splitFileReferences(segment)), label).not.toThrow();
      if (value.length > 0) expectSpansTile(value, origin, parts, offsetOf, expectReferenceSlice);

      // Through the template scanner first, as the parser does: the text pieces still land
      // exactly where they were.
      let pieces: ReturnType<typeof scanTemplate> = [];
      expect(() => (pieces = scanTemplate(value, origin)), label).not.toThrow();
      for (const piece of pieces) {
        if (piece.kind !== 'text') continue;
        const { startLine, startCol } = piece.span;
        const from = offsetOf(value, origin, startLine, startCol ?? 0);
        const start = positionOf(value, origin, from);
        const pieceParts = splitFileReferences(piece);
        expectSpansTile(piece.value, start, pieceParts, offsetOf, expectReferenceSlice);
      }
    }
  });
});

// How long these inputs take is measured by `npm run bench` (`chat.filerefs_*`); a unit test holds
// no wall-clock bound. Here: what comes out of them.
describe('splitFileReferences: large and degenerate input', () => {
  it.each([
    ['rejected candidates in one long run', '(@./;'.repeat(40_000)],
    ['candidates after letters', 'x@./'.repeat(50_000)],
  ])('keeps %s as one text', (_name, value) => {
    const parts = splitFileReferences(textAt(value));
    expect(parts).toHaveLength(1);
    expect(parts[0]?.kind === 'text' && parts[0].value === value).toBe(true);
  });

  it('reads one reference spanning a long run', () => {
    const value = '.@./a'.repeat(40_000);
    const parts = splitFileReferences(textAt(value));
    expect(parts.map((part) => part.kind)).toEqual(['text', 'file_reference']);
    expect(parts[0]?.kind === 'text' && parts[0].value === '.').toBe(true);
    expect(parts[1]?.kind === 'file_reference' && `.@${parts[1].raw}` === value).toBe(true);
  });

  it('splits a megabyte with many stray @ signs and a hundred references', () => {
    const line = 'Mail me@example.com or @ someone about @You: and more é text here.\n';
    const prose = line.repeat(Math.ceil(1_000_000 / line.length));
    const step = Math.floor(prose.length / 100);
    let value = '';
    for (let k = 0; k < 100; k++) value += `${prose.slice(k * step, (k + 1) * step)} see @./a.md. `;
    const segment: TextSegment = { ...textAt(''), value };
    const parts = splitFileReferences(segment);
    expect(parts).toHaveLength(201);
    expect(parts.filter((part) => part.kind === 'file_reference')).toHaveLength(100);
  });
});
