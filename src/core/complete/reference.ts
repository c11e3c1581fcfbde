// Completion of references in a message (docs/completion.md): `@./path`, `@../path`, `@/path`,
// `@~/path` and `@mcp:<server>:<uri>`, read from the text before the cursor as the parser reads a
// reference (src/core/chat/filerefs.ts): `@` not right after an ASCII letter or digit, then
// anything but whitespace.
import type { McpCatalog } from '../tools/mcp/types.js';
import { bytes, type CompleteItem, prefixMatcher } from './items.js';

/** What the text before the cursor asks to complete. */
export type ReferenceQuery =
  /** A path: list `dir` (as typed, decoded), keep the names starting with `prefix`. */
  | { kind: 'path'; typed: string; dir: string; prefix: string; start: number }
  /** Right after `@`, or a start of `./`, `../` or `mcp:`: the chat's directory and the servers. */
  | { kind: 'start'; prefix: string; start: number }
  | { kind: 'server'; prefix: string; start: number }
  | { kind: 'resource'; server: string; prefix: string; start: number };

const STARTS = ['./', '../', 'mcp:'];

/** `%XX` decoded and `+` a space, as the parser reads a path; a bad escape stays as written. */
export function decodePath(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/gu, ' '));
  } catch {
    return text;
  }
}

/** `%XX` of a character (its UTF-8 bytes when it is not ASCII). */
function hex(char: string): string {
  const code = char.charCodeAt(0);
  if (code >= 0x80) return encodeURIComponent(char);
  return `%${code.toString(16).toUpperCase().padStart(2, '0')}`;
}

/**
 * A name as a reference writes it: `%`, `+` and whitespace escaped, and for a file the ASCII
 * punctuation it ends with (which the parser leaves to the sentence: `see @./a.md.`).
 */
export function encodeName(name: string, file: boolean): string {
  const escaped = name.replace(/[%+\s]/gu, hex);
  if (!file) return escaped;
  const trailing = /[\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]+$/u.exec(escaped);
  if (trailing === null) return escaped;
  return escaped.slice(0, trailing.index) + trailing[0].replace(/./gu, hex);
}

/** The reference being typed before the cursor, or undefined when the cursor is in none. */
export function referenceQuery(before: string): ReferenceQuery | undefined {
  const match = /(^|[^A-Za-z0-9])@(\S*)$/u.exec(before);
  if (match === null) return undefined;
  const token = match[2] ?? '';
  const start = bytes(before) - bytes(token);
  if (token.startsWith('mcp:')) {
    const rest = token.slice(4);
    const colon = rest.indexOf(':');
    if (colon < 0) return { kind: 'server', prefix: rest, start: start };
    return { kind: 'resource', server: rest.slice(0, colon), prefix: rest.slice(colon + 1), start };
  }
  if (/^(?:\.\.?\/|\/|~\/)/u.test(token)) {
    const slash = token.lastIndexOf('/');
    const typed = token.slice(0, slash + 1);
    return {
      kind: 'path',
      typed,
      dir: decodePath(typed),
      prefix: decodePath(token.slice(slash + 1)),
      start,
    };
  }
  if (STARTS.some((form) => form.startsWith(token))) return { kind: 'start', prefix: token, start };
  return undefined;
}

/** The connected servers whose name starts with `prefix`, as `mcp:<server>:`. */
export function serverItems(catalog: McpCatalog, prefix: string): CompleteItem[] {
  const matches = prefixMatcher(prefix);
  return Object.keys(catalog)
    .filter(matches)
    .map((server) => ({
      word: `mcp:${server}:`,
      kind: 'mcp',
      menu: `${String(catalog[server]?.resources.length ?? 0)} resources`,
    }));
}

/** A server's resources whose URI starts with `prefix`, as `mcp:<server>:<uri>`. */
export function resourceItems(catalog: McpCatalog, server: string, prefix: string): CompleteItem[] {
  const resources = catalog[server]?.resources ?? [];
  return resources
    .filter((uri) => uri.startsWith(prefix))
    .sort()
    .map((uri) => ({ word: `mcp:${server}:${uri}`, abbr: uri, kind: 'mcp', menu: server }));
}
