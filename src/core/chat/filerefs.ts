// Finds `@./x`, `@../x`, `@/abs` (also written `@//abs`) and `@~/x` file references inside a
// text segment, and `@mcp:<server>:<uri>` references to an MCP server's resource (read the same
// way, through the server: docs/mcp.md).
import type { FileReferenceSegment, TextSegment } from './ast.js';
import { PositionTracker } from './template.js';

interface FileReference {
  raw: string;
  path: string;
  mime: string | undefined;
  server?: string;
}

/** `mcp:<server>:<uri>`, and a `;type=<mime>` at its end (a URI may hold `;` of its own). */
const MCP_REFERENCE = /^mcp:([A-Za-z0-9_-]+):(.+?)(?:;type=([^;]+))?$/s;

/** An MCP reference (`raw` without its `@`); the URI is kept as written (no decoding). */
function readMcpReference(raw: string): FileReference | undefined {
  const match = MCP_REFERENCE.exec(raw);
  if (match === null) return undefined;
  const [, server, uri, mime] = match;
  if (server === undefined || uri === undefined) return undefined;
  return { raw, path: uri, mime, server };
}

/** Whitespace as JavaScript's `\s` defines it. */
function isWhitespace(unit: number): boolean {
  return (
    (unit >= 0x09 && unit <= 0x0d) ||
    unit === 0x20 ||
    unit === 0xa0 ||
    unit === 0x1680 ||
    (unit >= 0x2000 && unit <= 0x200a) ||
    unit === 0x2028 ||
    unit === 0x2029 ||
    unit === 0x202f ||
    unit === 0x205f ||
    unit === 0x3000 ||
    unit === 0xfeff
  );
}

/** ASCII punctuation as Lua's `%p` defines it (`_` included). */
function isAsciiPunctuation(unit: number): boolean {
  return (
    (unit >= 0x21 && unit <= 0x2f) ||
    (unit >= 0x3a && unit <= 0x40) ||
    (unit >= 0x5b && unit <= 0x60) ||
    (unit >= 0x7b && unit <= 0x7e)
  );
}

function isAsciiAlphanumeric(unit: number): boolean {
  return (
    (unit >= 0x30 && unit <= 0x39) ||
    (unit >= 0x41 && unit <= 0x5a) ||
    (unit >= 0x61 && unit <= 0x7a)
  );
}

function hexValue(unit: number): number {
  if (unit >= 0x30 && unit <= 0x39) return unit - 0x30;
  if (unit >= 0x41 && unit <= 0x46) return unit - 0x37;
  if (unit >= 0x61 && unit <= 0x66) return unit - 0x57;
  return -1;
}

/** Length of the well-formed UTF-8 sequence starting at `bytes[at]`, or 0 when there is none. */
function utf8SequenceLength(bytes: readonly number[], at: number): number {
  const lead = bytes[at] ?? -1;
  let length: number;
  let low = 0x80;
  let high = 0xbf;
  if (lead >= 0 && lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead === 0xe0) low = 0xa0;
    if (lead === 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead === 0xf0) low = 0x90;
    if (lead === 0xf4) high = 0x8f;
  } else return 0;
  for (let k = 1; k < length; k++) {
    const next = bytes[at + k] ?? -1;
    if (next < low || next > high) return 0;
    low = 0x80;
    high = 0xbf;
  }
  return length;
}

/** Decodes a run of `%XX` bytes as UTF-8; bytes that form no character stay as written. */
function decodeEscapedBytes(bytes: readonly number[], written: readonly string[]): string {
  let out = '';
  let at = 0;
  while (at < bytes.length) {
    const length = utf8SequenceLength(bytes, at);
    if (length === 0) {
      out += written[at] ?? '';
      at++;
      continue;
    }
    const lead = bytes[at] ?? 0;
    let codePoint = length === 1 ? lead : lead & (0xff >> (length + 1));
    for (let k = 1; k < length; k++) codePoint = (codePoint << 6) | ((bytes[at + k] ?? 0) & 0x3f);
    out += String.fromCodePoint(codePoint);
    at += length;
  }
  return out;
}

/** URL-decodes a path: `+` is a space, `%XX` a byte (read as UTF-8); malformed escapes stay. */
function decodePath(encoded: string): string {
  if (!encoded.includes('%') && !encoded.includes('+')) return encoded;
  let out = '';
  let i = 0;
  while (i < encoded.length) {
    const unit = encoded.charCodeAt(i);
    if (unit === 0x2b) {
      out += ' ';
      i++;
      continue;
    }
    if (unit !== 0x25) {
      out += encoded[i] ?? '';
      i++;
      continue;
    }
    const bytes: number[] = [];
    const written: string[] = [];
    while (encoded.charCodeAt(i) === 0x25) {
      const high = hexValue(encoded.charCodeAt(i + 1));
      const low = hexValue(encoded.charCodeAt(i + 2));
      if (high < 0 || low < 0) break;
      bytes.push(high * 16 + low);
      written.push(encoded.slice(i, i + 3));
      i += 3;
    }
    if (bytes.length === 0) {
      out += '%';
      i++;
    } else out += decodeEscapedBytes(bytes, written);
  }
  return out;
}

/**
 * Reads the reference at `text[at, end)`: an `@`, a form prefix of `prefix` characters, and the
 * rest of its whitespace-free run up to `end`, where trailing punctuation starts.
 */
function readReference(
  text: string,
  at: number,
  prefix: number,
  end: number,
): FileReference | undefined {
  const raw = text.slice(at + 1, end);
  if (raw.startsWith('mcp:')) return readMcpReference(raw);
  const semicolon = raw.indexOf(';');
  const written = semicolon === -1 ? raw : raw.slice(0, semicolon);
  if (written.length <= prefix) return undefined; // nothing names a file after `./`, `~/`…

  let mime: string | undefined;
  if (semicolon !== -1) {
    for (const option of raw.slice(semicolon + 1).split(';')) {
      if (option.startsWith('type=') && option.length > 'type='.length) {
        mime = option.slice('type='.length);
      }
    }
  }
  const decoded = decodePath(written);
  const path = written.startsWith('//') ? decoded.slice(1) : decoded;
  return { raw, path, mime };
}

/**
 * Splits a text segment around the file references it contains; a segment without any is
 * returned as the only element.
 */
export function splitFileReferences(segment: TextSegment): (TextSegment | FileReferenceSegment)[] {
  const text = segment.value;
  if (!text.includes('@')) return [segment];

  const parts: (TextSegment | FileReferenceSegment)[] = [];
  let tracker: PositionTracker | undefined;
  let textStart = 0;
  // The whitespace-free run around the current candidate, and where its trailing punctuation
  // starts; kept across candidates so a long run is measured once.
  let runEnd = -1;
  let punctuationStart = -1;
  // `@./`, `@../`, `@/`, `@//`, `@~/` or `@mcp:`: where a reference may start. (`@//abs` is the
  // form files from Flemma 0.11 use for an absolute path; `@/abs` is the one people type.) A `g`
  // regex keeps its place in `lastIndex`, so each split makes its own.
  const candidates = /@(?:\.\.?\/|\/\/?|~\/|mcp:)/g;
  for (
    let candidate = candidates.exec(text);
    candidate !== null;
    candidate = candidates.exec(text)
  ) {
    const at = candidate.index;
    // NOTE: `name@./x` reads as an address or a handle, so a reference may not follow an ASCII
    // letter or digit. Punctuation (`(@./x)`, `**@./x**`) and scripts written without spaces
    // (`看@./x.png`) still introduce one.
    if (at > 0 && isAsciiAlphanumeric(text.charCodeAt(at - 1))) continue;
    const prefix = candidate[0].length - 1;
    if (runEnd <= at) {
      runEnd = at + 1 + prefix;
      while (runEnd < text.length && !isWhitespace(text.charCodeAt(runEnd))) runEnd++;
      // Trailing punctuation belongs to the sentence: `see @./a.md.`, `@./a;type=text/plain).`
      punctuationStart = runEnd;
      while (
        punctuationStart > at + 1 &&
        isAsciiPunctuation(text.charCodeAt(punctuationStart - 1))
      ) {
        punctuationStart--;
      }
    }
    const end = Math.max(punctuationStart, at + 1);
    const reference = readReference(text, at, prefix, end);
    if (reference === undefined) continue;
    tracker ??= new PositionTracker(text, {
      line: segment.span.startLine,
      col: segment.span.startCol ?? 0,
    });
    if (at > textStart) {
      parts.push({
        kind: 'text',
        value: text.slice(textStart, at),
        span: tracker.spanOf(textStart, at),
      });
    }
    const span = tracker.spanOf(at, end);
    const { raw, path, mime, server } = reference;
    parts.push({
      kind: 'file_reference',
      raw,
      path,
      ...(mime === undefined ? {} : { mime }),
      ...(server === undefined ? {} : { server }),
      span,
    });
    textStart = end;
    candidates.lastIndex = runEnd;
  }
  if (tracker === undefined) return [segment];
  if (text.length > textStart) {
    parts.push({
      kind: 'text',
      value: text.slice(textStart),
      span: tracker.spanOf(textStart, text.length),
    });
  }
  return parts;
}
