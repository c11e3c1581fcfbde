// Renders a terminal capture (`tmux capture-pane -e -p -N`: text with ANSI SGR colour codes) as
// an SVG: a grid of cells in a monospace font, with colours, bold, italic, underline and
// reverse video. ansi-sequence-parser reads the escape codes; this file only lays out cells.
import { createAnsiSequenceParser, createColorPalette } from 'ansi-sequence-parser';
import { eastAsianWidth } from 'get-east-asian-width';

/** The xterm colours of the 16 named ANSI colours (palette entries 0 to 15). */
const NAMED = {
  black: '#000000',
  red: '#cd0000',
  green: '#00cd00',
  yellow: '#cdcd00',
  blue: '#0000ee',
  magenta: '#cd00cd',
  cyan: '#00cdcd',
  white: '#e5e5e5',
  brightBlack: '#7f7f7f',
  brightRed: '#ff0000',
  brightGreen: '#00ff00',
  brightYellow: '#ffff00',
  brightBlue: '#5c5cff',
  brightMagenta: '#ff00ff',
  brightCyan: '#00ffff',
  brightWhite: '#ffffff',
};

const FONT =
  "ui-monospace, 'SF Mono', Menlo, Consolas, 'DejaVu Sans Mono', 'Liberation Mono', monospace";

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

/** Escapes text for SVG content and attribute values. */
export function escapeXml(text) {
  return text.replace(/[&<>"']/g, (c) => `&#${String(c.codePointAt(0))};`);
}

/** How many cells a grapheme takes: 2 for East Asian wide and fullwidth, 0 for controls, else 1. */
export function cellWidth(grapheme) {
  const code = grapheme.codePointAt(0) ?? 0;
  if (code < 0x20 || (code >= 0x7f && code < 0xa0)) return 0;
  // NOTE: ambiguous characters (box drawing `─`, braille `⣾`) are narrow, as tmux counts them.
  return eastAsianWidth(code, { ambiguousAsWide: false });
}

/**
 * Reads a capture into rows of cells `{ text, width, fg, bg, bold, italic, underline, strike }`.
 * A wide character's cell has `width: 2` and the cell after it is left out; rows are padded
 * with blank cells (or cut) to `columns`.
 */
export function parseCapture(capture, { columns, rows, foreground, background }) {
  const palette = createColorPalette(NAMED);
  const parser = createAnsiSequenceParser();
  // NOTE: `ESC[m` is a reset like `ESC[0m`; the parser knows only the second spelling.
  const text = capture.replaceAll('\x1b[m', '\x1b[0m').replace(/\n$/, '');
  const lines = text.split('\n').slice(0, rows);
  while (lines.length < rows) lines.push('');
  return lines.map((line) => {
    const cells = [];
    let used = 0;
    for (const token of parser.parse(line)) {
      const style = styleOf(token, palette, foreground, background);
      for (const { segment } of segmenter.segment(token.value)) {
        const width = cellWidth(segment);
        if (width === 0 || used + width > columns) continue;
        cells.push({ text: segment, width, ...style });
        used += width;
      }
    }
    const blank = { fg: foreground, bg: background, bold: false, italic: false, underline: false };
    for (; used < columns; used++) cells.push({ text: ' ', width: 1, ...blank, strike: false });
    return cells;
  });
}

function styleOf(token, palette, foreground, background) {
  const d = token.decorations;
  let fg = token.foreground ? palette.value(token.foreground) : foreground;
  let bg = token.background ? palette.value(token.background) : background;
  if (d.has('reverse')) [fg, bg] = [bg, fg];
  if (d.has('hidden')) fg = bg;
  return {
    fg: d.has('dim') ? `${fg}99` : fg,
    bg,
    bold: d.has('bold'),
    italic: d.has('italic'),
    underline: d.has('underline'),
    strike: d.has('strikethrough'),
  };
}

const sameStyle = (a, b) =>
  a.fg === b.fg &&
  a.bold === b.bold &&
  a.italic === b.italic &&
  a.underline === b.underline &&
  a.strike === b.strike;

/**
 * Renders a capture as an SVG document.
 * Options: `columns`, `rows` (the pane size), `foreground`, `background` (the terminal's default
 * colours, `#rrggbb`), `title` (the image's accessible name), `cursor` (`{ x, y }`, drawn as a
 * block), `fontSize` (px, 14 by default).
 */
export function ansiToSvg(capture, options) {
  const { columns, rows, foreground, background, title, cursor } = options;
  const fontSize = options.fontSize ?? 14;
  const cw = round(fontSize * 0.6);
  const ch = round(fontSize * 1.25);
  const pad = fontSize;
  const width = round(columns * cw + 2 * pad);
  const height = round(rows * ch + 2 * pad);
  const grid = parseCapture(capture, { columns, rows, foreground, background });

  const rects = [];
  const texts = [];
  grid.forEach((cells, row) => {
    const y = round(pad + row * ch);
    const baseline = round(y + fontSize * 1.0);
    // Backgrounds: one rectangle per run of equal colour that is not the default.
    let col = 0;
    for (let i = 0; i < cells.length;) {
      let j = i;
      let span = 0;
      while (j < cells.length && cells[j].bg === cells[i].bg) span += cells[j++].width;
      if (cells[i].bg !== background)
        rects.push(rect(pad + col * cw, y, span * cw, ch, cells[i].bg));
      col += span;
      i = j;
    }
    // Text: one element per run of equal style; a wide character gets an element of its own so
    // that the font's idea of its width cannot shift what follows.
    col = 0;
    for (let i = 0; i < cells.length;) {
      let j = i + 1;
      if (cells[i].width === 1)
        while (j < cells.length && cells[j].width === 1 && sameStyle(cells[j], cells[i])) j++;
      const run = cells.slice(i, j);
      const span = run.reduce((sum, cell) => sum + cell.width, 0);
      // Blanks at either end are only background, unless a line goes through or under them.
      let [from, to] = [0, run.length];
      if (!run[0].underline && !run[0].strike) {
        while (from < to && run[from].text === ' ') from++;
        while (to > from && run[to - 1].text === ' ') to--;
      }
      if (from < to) {
        const drawn = run.slice(from, to);
        const text = drawn.map((cell) => cell.text).join('');
        const width = drawn.reduce((sum, cell) => sum + cell.width, 0);
        texts.push(textElement(pad + (col + from) * cw, baseline, width * cw, text, run[0]));
      }
      col += span;
      i = j;
    }
  });
  if (cursor && cursor.y >= 0 && cursor.y < rows && cursor.x >= 0 && cursor.x < columns)
    rects.push(rect(pad + cursor.x * cw, pad + cursor.y * ch, cw, ch, `${foreground}80`));

  return [
    `<svg xmlns="http://www.w3.org/2000/svg" xml:space="preserve" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(title ?? 'terminal')}">`,
    `<title>${escapeXml(title ?? 'terminal')}</title>`,
    `<style>text{font-family:${escapeXml(FONT)};font-size:${fontSize}px;white-space:pre}</style>`,
    `<rect width="100%" height="100%" rx="8" fill="${background}"/>`,
    ...rects,
    ...texts,
    '</svg>',
    '',
  ].join('\n');
}

function textElement(x, y, length, text, style) {
  const attrs = [`x="${round(x)}"`, `y="${y}"`, `fill="${style.fg}"`];
  // textLength pins the run to its cells whatever the font's advance width.
  if ([...segmenter.segment(text)].length > 1) attrs.push(`textLength="${round(length)}"`);
  if (style.bold) attrs.push('font-weight="bold"');
  if (style.italic) attrs.push('font-style="italic"');
  const lines = [style.underline && 'underline', style.strike && 'line-through'].filter(Boolean);
  if (lines.length > 0) attrs.push(`text-decoration="${lines.join(' ')}"`);
  return `<text ${attrs.join(' ')}>${escapeXml(text)}</text>`;
}

function rect(x, y, w, h, fill) {
  return `<rect x="${round(x)}" y="${round(y)}" width="${round(w)}" height="${round(h)}" fill="${fill}"/>`;
}

function round(n) {
  return Math.round(n * 100) / 100;
}
