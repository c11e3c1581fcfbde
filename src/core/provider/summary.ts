// One line that says what an unexpected answer was, for an error message: the title of an HTML
// page or the first words of its text, never the markup itself. It is a summary for a person,
// not a rendering: anything that does not look like text is dropped, and what is left is cut
// short, kept to one line, and cleared of the credential in case the server echoed it.

/** The longest summary, in characters (an ellipsis marks a cut). */
const MAX_SUMMARY = 100;

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  copy: '©',
  rsquo: '’',
  lsquo: '‘',
  rdquo: '”',
  ldquo: '“',
};

/** `text/html; charset=utf-8` → `text/html`; empty when there is none. */
export function mediaType(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
}

/** A content type as a message may show it: the media type, with nothing but its own characters. */
export function shownType(contentType: string | null | undefined): string {
  const type = mediaType(contentType)
    .replace(/[^a-z0-9.+/_-]/g, '')
    .slice(0, 60);
  return type === '' ? 'no content type' : `content type ${type}`;
}

export function isHtml(type: string, text: string): boolean {
  if (type === 'text/html' || type === 'application/xhtml+xml') return true;
  return /^\s*<(?:!doctype\s+html|html[\s>])/i.test(text);
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi, (whole, name: string) => {
    if (name.startsWith('#')) {
      const hex = name[1] === 'x' || name[1] === 'X';
      const code = Number.parseInt(name.slice(hex ? 2 : 1), hex ? 16 : 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : ' ';
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** What an HTML excerpt says: its title, else the words of its body. */
function htmlText(html: string): string {
  const title = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html)?.[1];
  if (title !== undefined && clean(decodeEntities(title.replace(/<[^>]*>/g, ' '))) !== '') {
    return decodeEntities(title.replace(/<[^>]*>/g, ' '));
  }
  const body = html
    .replace(/<!--[\s\S]*?(?:-->|$)/g, ' ')
    .replace(/<(script|style|head|template|noscript)\b[\s\S]*?(?:<\/\1\s*>|$)/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    // An excerpt may end inside a tag.
    .replace(/<[^>]*$/, ' ');
  return decodeEntities(body);
}

/** One line of printable text: no control characters, runs of white space made one space. */
function clean(text: string): string {
  return (
    text
      // C0 and C1 controls, the replacement character, and the bidirectional overrides, which
      // could make a message read other than it is.
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u001f\u007f-\u009f\ufffd\u202a-\u202e\u2066-\u2069]/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
  );
}

function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    // NOTE: short values are not secrets worth hiding, and hiding them would mangle the text.
    if (secret.length >= 8) out = out.split(secret).join('[redacted]');
  }
  return out;
}

/**
 * The summary of an answer's first bytes (`text`, as UTF-8): an HTML page's title or first words,
 * any other text's first words. Empty when nothing readable is there.
 */
export function summarise(type: string, text: string, secrets: readonly string[] = []): string {
  const words = redact(clean(isHtml(type, text) ? htmlText(text) : text), secrets);
  if (words.length <= MAX_SUMMARY) return words;
  // Cut at a word boundary when there is one near the end.
  const cut = words.slice(0, MAX_SUMMARY - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > MAX_SUMMARY * 0.6 ? cut.slice(0, space) : cut}…`;
}
