// What completion answers (docs/completion.md): Vim complete-items and the byte column the word
// replaces from. Every source (paths, MCP, frontmatter options) ends here.

/** A Vim complete-item (`:help complete-items`); blink.cmp and nvim-cmp get the same fields. */
export interface CompleteItem {
  word: string;
  abbr?: string;
  /** `dir`, `file`, `mcp`, `option`, `value`, `tool`, `preset`. */
  kind: string;
  menu?: string;
  info?: string;
}

export interface CompleteAnswer {
  items: CompleteItem[];
  /** The 0-based byte column of the line where the completed word starts. */
  start: number;
  /** More matched than `items` holds: typing more narrows the list. */
  incomplete: boolean;
}

/** What `complete:items` is asked. */
export interface CompleteRequest {
  where: 'reference' | 'frontmatter';
  line: string;
  col: number;
  /** The chat file's directory (references). */
  dir: string;
  /** The frontmatter's language and its lines above the cursor's (frontmatter). */
  lang: string;
  lines: string[];
}

/** The items of one page: at most this many, the rest left for typing to narrow. */
export const PAGE_SIZE = 200;

/** Smart case: a prefix in lower case matches any case, one with a capital only itself. */
export function prefixMatcher(prefix: string): (name: string) => boolean {
  if (prefix === '') return () => true;
  if (prefix !== prefix.toLowerCase()) return (name) => name.startsWith(prefix);
  return (name) => name.toLowerCase().startsWith(prefix);
}

/** The answer for `items` (already sorted) cut to one page. */
export function page(items: CompleteItem[], start: number): CompleteAnswer {
  return {
    items: items.slice(0, PAGE_SIZE),
    start,
    incomplete: items.length > PAGE_SIZE,
  };
}

/** Nothing to offer here. */
export function none(start = 0): CompleteAnswer {
  return { items: [], start, incomplete: false };
}

/** The byte length of a string in UTF-8 (Neovim's columns are bytes). */
export function bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The text of `line` before the 0-based byte column `col`. */
export function beforeCol(line: string, col: number): string {
  return Buffer.from(line, 'utf8').subarray(0, Math.max(0, col)).toString('utf8');
}
