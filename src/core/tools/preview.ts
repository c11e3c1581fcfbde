// The text of a tool-call preview: the virtual line shown under an empty `flemma:tool`
// placeholder, `<name>: <body>`. The host computes the body here; the editor fits the whole line
// to its window (the Lua renderer), and `fitPreview` does the same for callers without one.
//
// Body rules (docs/tools.md, "Previews"):
// - A tool's `formatPreview(input, maxLength)` is used when present. A plain string is the whole
//   body. Parts become `<detail>  # <label>`, or the detail alone, or the label alone; a detail
//   list is joined by two spaces (empty entries dropped). A formatter that throws or returns
//   something else falls back to the generic body.
// - The generic body lists the input as `key="value", key=2, …`: scalars first, then tables
//   (`{a, b}`, `{a, b, +N more}`, `[N items]`), each group sorted by key in code-unit order.
//   Strings are JSON-quoted, so newlines and tabs inside them show as `\n` and `\t`. A string
//   `label` is not listed: it becomes the label part.
// - The body is at most `maxLength` cells; a longer one is cut and ends in `…`.
//
// Cell widths are approximate: East Asian wide and fullwidth characters and the common emoji
// blocks count 2, combining marks and zero-width characters 0, everything else 1.

import type { ToolDefinition } from './registry.js';

const ELLIPSIS = '…';
/** What a line break becomes in `fitPreview` (Neovim's default `eol` of 'listchars' is `↵`). */
const EOL_CHAR = '↵';
/** An object value shows at most this many of its keys. */
const OBJECT_KEYS_SHOWN = 2;

/**
 * The body of the preview of one call of `def` (after `name: `), at most `maxLength` cells.
 * `input` is the call's input; anything but a plain object is treated as `{}`. `def` may be
 * `undefined` (an unknown tool): the generic body is used.
 */
export function previewBody(
  def: ToolDefinition | undefined,
  input: unknown,
  maxLength: number,
): string {
  const args = isPlainObject(input) ? input : {};
  const room = Number.isNaN(maxLength) ? Infinity : Math.max(0, Math.floor(maxLength));
  let body: string | undefined;
  if (def?.formatPreview !== undefined) {
    try {
      body = fromPreview(def.formatPreview(args, room));
    } catch {
      body = undefined;
    }
  }
  return cutToCells(body ?? genericBody(args, room), room);
}

/**
 * The preview line `name: body` (just `name` when the body is empty) cut to `width` display
 * cells, ending in `…` when cut. Line breaks show as `↵` and tabs as a space, so it is one line.
 */
export function fitPreview(name: string, body: string, width: number): string {
  const line = body === '' ? name : `${name}: ${body}`;
  const oneLine = line.replace(/\r?\n|\r/g, EOL_CHAR).replace(/\t/g, ' ');
  return cutToCells(oneLine, Number.isNaN(width) ? Infinity : Math.floor(width));
}

/** Display width of `text` in cells (see the note on widths at the top). */
export function cellWidth(text: string): number {
  let cells = 0;
  for (const ch of text) cells += charCells(ch);
  return cells;
}

// ---------------------------------------------------------------------------------------------

/** A formatter's answer as a body, or `undefined` when it is not a usable `Preview`. */
function fromPreview(preview: unknown): string | undefined {
  if (typeof preview === 'string') return preview;
  if (!isPlainObject(preview)) return undefined;
  const rawDetail = preview['detail'];
  const rawLabel = preview['label'];
  let detail = '';
  if (typeof rawDetail === 'string') {
    detail = rawDetail;
  } else if (Array.isArray(rawDetail)) {
    detail = rawDetail
      .filter((part) => part !== undefined && part !== null && part !== '')
      .map((part) => (typeof part === 'string' ? part : String(part)))
      .join('  ');
  } else if (rawDetail !== undefined && rawDetail !== null) {
    return undefined;
  }
  if (rawLabel !== undefined && rawLabel !== null && typeof rawLabel !== 'string') return undefined;
  return joinParts(detail, rawLabel ?? '');
}

function joinParts(detail: string, label: string): string {
  if (detail !== '' && label !== '') return `${detail}  # ${label}`;
  return detail !== '' ? detail : label;
}

function genericBody(input: Record<string, unknown>, room: number): string {
  const label = typeof input['label'] === 'string' ? input['label'] : '';
  const scalars: string[] = [];
  const tables: string[] = [];
  for (const key of Object.keys(input).sort(compareKeys)) {
    if (key === 'label' && typeof input[key] === 'string') continue;
    const value = input[key];
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
    const shownKey = escapeControls(key);
    if (typeof value === 'object' && value !== null) {
      tables.push(`${shownKey}=${describeTable(value)}`);
    } else {
      scalars.push(`${shownKey}=${describeScalar(value, room)}`);
    }
  }
  return joinParts([...scalars, ...tables].join(', '), escapeControls(clip(label, room)));
}

/** A start of `text` long enough to fill `room` cells: what lies past them is cut anyway. */
function clip(text: string, room: number): string {
  const limit = 2 * room + 16;
  if (!Number.isFinite(room) || text.length <= limit) return text;
  const start = text.slice(0, limit);
  return /[\uD800-\uDBFF]$/.test(start) ? start.slice(0, -1) : start;
}

function describeScalar(value: unknown, room: number): string {
  // Do not quote megabytes only to throw them away.
  if (typeof value === 'string') return JSON.stringify(clip(value, room));
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  return 'null';
}

function describeTable(value: object): string {
  if (Array.isArray(value)) {
    return value.length === 1 ? '[1 item]' : `[${value.length} items]`;
  }
  const keys = Object.keys(value).sort(compareKeys).map(escapeControls);
  if (keys.length <= OBJECT_KEYS_SHOWN) return `{${keys.join(', ')}}`;
  const shown = keys.slice(0, OBJECT_KEYS_SHOWN).join(', ');
  return `{${shown}, +${keys.length - OBJECT_KEYS_SHOWN} more}`;
}

/** Control characters written as JSON escapes (`\n`, `\t`, `\u001b`), so text stays on one line. */
function escapeControls(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f]/g, (ch) => {
    if (ch === '\n') return '\\n';
    if (ch === '\r') return '\\r';
    if (ch === '\t') return '\\t';
    return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/** Code-unit order, so the result does not depend on the locale. */
function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `text` when it fits in `width` cells, else its longest start that fits with `…` after it. */
function cutToCells(text: string, width: number): string {
  // Quick accept: no code point is wider than 2 cells.
  if (width === Infinity || text.length * 2 <= width) return text;
  if (width < 1) return cellWidth(text) <= width ? text : '';
  let used = 0;
  let end = 0;
  let cutAt = -1;
  for (const ch of text) {
    const cells = charCells(ch);
    if (cutAt < 0 && used + cells > width - 1) cutAt = end;
    used += cells;
    if (used > width) return text.slice(0, cutAt) + ELLIPSIS;
    end += ch.length;
  }
  return text;
}

const COMBINING_MARK = /^[\p{Mn}\p{Me}]$/u;

/** Combining marks, zero-width spaces and joiners, variation selectors, the BOM. */
function isZeroWidth(ch: string, cp: number): boolean {
  return (
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0xfe00 && cp <= 0xfe0f) ||
    cp === 0xfeff ||
    COMBINING_MARK.test(ch)
  );
}

/** [first, last] code points of wide (2-cell) characters, sorted. */
const WIDE_RANGES: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], // Hangul Jamo initials
  [0x231a, 0x231b],
  [0x2329, 0x232a],
  [0x23e9, 0x23ec],
  [0x23f0, 0x23f0],
  [0x23f3, 0x23f3],
  [0x25fd, 0x25fe],
  [0x2614, 0x2615],
  [0x2648, 0x2653],
  [0x267f, 0x267f],
  [0x2693, 0x2693],
  [0x26a1, 0x26a1],
  [0x26aa, 0x26ab],
  [0x26bd, 0x26be],
  [0x26c4, 0x26c5],
  [0x26ce, 0x26ce],
  [0x26d4, 0x26d4],
  [0x26ea, 0x26ea],
  [0x26f2, 0x26f3],
  [0x26f5, 0x26f5],
  [0x26fa, 0x26fa],
  [0x26fd, 0x26fd],
  [0x2705, 0x2705],
  [0x270a, 0x270b],
  [0x2728, 0x2728],
  [0x274c, 0x274c],
  [0x274e, 0x274e],
  [0x2753, 0x2755],
  [0x2757, 0x2757],
  [0x2795, 0x2797],
  [0x27b0, 0x27b0],
  [0x27bf, 0x27bf],
  [0x2b1b, 0x2b1c],
  [0x2b50, 0x2b50],
  [0x2b55, 0x2b55],
  [0x2e80, 0x303e], // CJK radicals, punctuation
  [0x3041, 0x33ff], // kana, bopomofo, CJK compatibility
  [0x3400, 0x4dbf], // CJK extension A
  [0x4e00, 0x9fff], // CJK unified ideographs
  [0xa000, 0xa4cf], // Yi
  [0xa960, 0xa97f], // Hangul Jamo extended A
  [0xac00, 0xd7a3], // Hangul syllables
  [0xf900, 0xfaff], // CJK compatibility ideographs
  [0xfe10, 0xfe19], // vertical forms
  [0xfe30, 0xfe6f], // CJK compatibility forms, small forms
  [0xff00, 0xff60], // fullwidth forms
  [0xffe0, 0xffe6],
  [0x16fe0, 0x18cff], // Tangut and friends
  [0x1b000, 0x1b2ff], // kana supplement and extensions
  [0x1f004, 0x1f004],
  [0x1f0cf, 0x1f0cf],
  [0x1f18e, 0x1f18e],
  [0x1f191, 0x1f19a],
  [0x1f200, 0x1f2ff], // enclosed ideographic supplement
  [0x1f300, 0x1f320], // emoji
  [0x1f32d, 0x1f335],
  [0x1f337, 0x1f37c],
  [0x1f37e, 0x1f393],
  [0x1f3a0, 0x1f3ca],
  [0x1f3cf, 0x1f3d3],
  [0x1f3e0, 0x1f3f0],
  [0x1f3f4, 0x1f3f4],
  [0x1f3f8, 0x1f43e],
  [0x1f440, 0x1f440],
  [0x1f442, 0x1f4fc],
  [0x1f4ff, 0x1f53d],
  [0x1f54b, 0x1f54e],
  [0x1f550, 0x1f567],
  [0x1f57a, 0x1f57a],
  [0x1f595, 0x1f596],
  [0x1f5a4, 0x1f5a4],
  [0x1f5fb, 0x1f64f],
  [0x1f680, 0x1f6c5],
  [0x1f6cc, 0x1f6cc],
  [0x1f6d0, 0x1f6d2],
  [0x1f6d5, 0x1f6d7],
  [0x1f6dc, 0x1f6df],
  [0x1f6eb, 0x1f6ec],
  [0x1f6f4, 0x1f6fc],
  [0x1f7e0, 0x1f7eb],
  [0x1f7f0, 0x1f7f0],
  [0x1f90c, 0x1f93a],
  [0x1f93c, 0x1f945],
  [0x1f947, 0x1f9ff],
  [0x1fa70, 0x1faff],
  [0x20000, 0x2fffd], // CJK extensions B–F
  [0x30000, 0x3fffd], // CJK extension G and later
];

function charCells(ch: string): number {
  const cp = ch.codePointAt(0) ?? 0;
  if (cp < 0x300) return 1;
  if (isZeroWidth(ch, cp)) return 0;
  let lo = 0;
  let hi = WIDE_RANGES.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const range = WIDE_RANGES[mid];
    if (range === undefined) break;
    if (cp < range[0]) hi = mid - 1;
    else if (cp > range[1]) lo = mid + 1;
    else return 2;
  }
  return 1;
}

/**
 * `def` with `extra` added to what its formatter says: after the detail of a `{detail, label}`
 * preview (before `# label`), or after a plain string. Used for the line counts of a pending
 * file change, which the host knows and the tool's formatter does not.
 */
export function withPreviewDetail(
  def: ToolDefinition | undefined,
  extra: string,
): ToolDefinition | undefined {
  const format = def?.formatPreview;
  if (def === undefined || format === undefined) return def;
  return {
    ...def,
    formatPreview: (input, maxLength) => {
      const preview = format(input, maxLength);
      if (typeof preview === 'string') return preview === '' ? extra : `${preview}  ${extra}`;
      const detail = preview.detail;
      const parts = Array.isArray(detail) ? [...detail] : detail === undefined ? [] : [detail];
      return { ...preview, detail: [...parts, extra] };
    },
  };
}
