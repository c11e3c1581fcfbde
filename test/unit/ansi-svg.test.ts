// The ANSI → SVG rendering of the README screenshots (scripts/screenshots/ansi-svg.mjs): colours, bold,
// reverse video, escaping, and characters that take one cell or two.
import { describe, expect, it } from 'vitest';
import { ansiToSvg, cellWidth, parseCapture } from '../../scripts/screenshots/ansi-svg.mjs';

const ESC = '\x1b';
const OPTIONS = { columns: 12, rows: 2, foreground: '#c0c0c0', background: '#1c1c1c' };

/** The `<text>` elements of an SVG as `{attrs, text}`, text unescaped only as far as needed. */
function texts(svg: string): { attrs: string; text: string }[] {
  return [...svg.matchAll(/<text ([^>]*)>([^<]*)<\/text>/g)].map((m) => ({
    attrs: m[1] ?? '',
    text: m[2] ?? '',
  }));
}

describe('parseCapture', () => {
  it('reads truecolor, 256-colour and named colours, bold and reverse, across lines', () => {
    const capture =
      `${ESC}[1m${ESC}[38;2;255;135;0mab${ESC}[0m${ESC}[39m${ESC}[49mc\n` +
      `${ESC}[48;5;21m${ESC}[31md${ESC}[7me\n`;
    const [first, second] = parseCapture(capture, OPTIONS);
    expect(first?.slice(0, 3)).toEqual([
      expect.objectContaining({ text: 'a', fg: '#ff8700', bg: '#1c1c1c', bold: true }),
      expect.objectContaining({ text: 'b', fg: '#ff8700', bold: true }),
      expect.objectContaining({ text: 'c', fg: '#c0c0c0', bg: '#1c1c1c', bold: false }),
    ]);
    expect(second?.[0]).toMatchObject({ text: 'd', fg: '#cd0000', bg: '#0000ff' });
    // Reverse video swaps the colours.
    expect(second?.[1]).toMatchObject({ text: 'e', fg: '#0000ff', bg: '#cd0000' });
    // Rows are padded to the pane's width with blank default cells.
    expect(first).toHaveLength(12);
    expect(first?.[11]).toMatchObject({ text: ' ', fg: '#c0c0c0', bg: '#1c1c1c' });
  });

  it('keeps attributes across lines, as tmux writes them, and treats ESC[m as a reset', () => {
    const [first, second] = parseCapture(`${ESC}[32mx\ny${ESC}[mz\n`, OPTIONS);
    expect(first?.[0]).toMatchObject({ text: 'x', fg: '#00cd00' });
    expect(second?.[0]).toMatchObject({ text: 'y', fg: '#00cd00' });
    expect(second?.[1]).toMatchObject({ text: 'z', fg: '#c0c0c0' });
  });

  it('gives box drawing and braille one cell, CJK and emoji two', () => {
    expect(['─', '│', '⣾', '⠋', '↑', '…', 'a'].map(cellWidth)).toEqual([1, 1, 1, 1, 1, 1, 1]);
    expect(['字', '🙂'].map(cellWidth)).toEqual([2, 2]);
    const [row] = parseCapture('─⣾字x\n', OPTIONS);
    expect(row?.slice(0, 4).map((cell) => [cell.text, cell.width])).toEqual([
      ['─', 1],
      ['⣾', 1],
      ['字', 2],
      ['x', 1],
    ]);
    // 1 + 1 + 2 + 1 cells used, 7 blanks: 12 columns in 11 cells.
    expect(row).toHaveLength(11);
  });

  it('cuts a row at the pane width and adds missing rows', () => {
    const grid = parseCapture('0123456789abcdef\n', OPTIONS);
    expect(grid).toHaveLength(2);
    expect(grid[0]?.map((cell) => cell.text).join('')).toBe('0123456789ab');
    expect(grid[1]?.map((cell) => cell.text).join('')).toBe(' '.repeat(12));
  });
});

describe('ansiToSvg', () => {
  it('draws runs of one style as one text element, at their cells', () => {
    const svg = ansiToSvg(`ab ${ESC}[1m${ESC}[38;2;1;2;3mcd${ESC}[0m\n`, OPTIONS);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('<rect width="100%" height="100%" rx="8" fill="#1c1c1c"/>');
    const [plain, bold] = texts(svg);
    // 14 px font: cells are 8.4 px wide, 17.5 px high, after 14 px of padding.
    expect(plain).toEqual({
      // Trailing blanks are left to the background.
      attrs: 'x="14" y="28" fill="#c0c0c0" textLength="16.8"',
      text: 'ab',
    });
    expect(bold).toEqual({
      attrs: 'x="39.2" y="28" fill="#010203" textLength="16.8" font-weight="bold"',
      text: 'cd',
    });
  });

  it('leaves blanks at the ends of a run to the background, unless they are underlined', () => {
    const svg = ansiToSvg(`  ab  ${ESC}[4m  c${ESC}[0m\n`, OPTIONS);
    expect(texts(svg)).toEqual([
      { attrs: 'x="30.8" y="28" fill="#c0c0c0" textLength="16.8"', text: 'ab' },
      {
        attrs: 'x="64.4" y="28" fill="#c0c0c0" textLength="25.2" text-decoration="underline"',
        text: '  c',
      },
    ]);
  });

  it('paints non-default backgrounds as rectangles', () => {
    const svg = ansiToSvg(`x${ESC}[48;2;0;0;255myz${ESC}[0m\n`, OPTIONS);
    expect(svg).toContain('<rect x="22.4" y="14" width="16.8" height="17.5" fill="#0000ff"/>');
  });

  it('escapes < & > and quotes in the text and the title', () => {
    const svg = ansiToSvg('a<b & "c">\n', { ...OPTIONS, title: 'Flemma <demo> & co' });
    expect(texts(svg)[0]?.text).toBe('a&#60;b &#38; &#34;c&#34;&#62;');
    expect(svg).toContain('<title>Flemma &#60;demo&#62; &#38; co</title>');
    expect(svg).not.toMatch(/<b|& /);
  });

  it('places a wide character on its own and what follows two cells later', () => {
    const svg = ansiToSvg('─字x\n', OPTIONS);
    expect(texts(svg)).toEqual([
      { attrs: 'x="14" y="28" fill="#c0c0c0"', text: '─' },
      { attrs: 'x="22.4" y="28" fill="#c0c0c0"', text: '字' },
      { attrs: 'x="39.2" y="28" fill="#c0c0c0"', text: 'x' },
    ]);
  });

  it('draws the cursor as a block over its cell', () => {
    const svg = ansiToSvg('ab\n', { ...OPTIONS, cursor: { x: 1, y: 1 } });
    expect(svg).toContain('<rect x="22.4" y="31.5" width="8.4" height="17.5" fill="#c0c0c080"/>');
  });
});
