// What a running tool printed so far, for the live view under its block and `:Flemma tool:output`
// (docs/tools.md, "Watching a command run").
//
// Decisions:
// - Memory is bounded: only the last `keep` characters are kept (the whole output of a finished
//   call is the file the truncation saved). A chunk costs one concatenation; the text is cut back
//   to `keep` only once it is twice as long, so the cost stays linear in what was printed.
// - Formatting happens only when the view is drawn (at most once a frame): the last lines are
//   found from the end, and only those are made safe to show.
// - The output is untrusted and shown as virtual text, never interpreted: escape sequences (CSI,
//   OSC, the two-character ones), control characters (C0, DEL, C1) and the bidirectional
//   overrides are removed, a tab becomes spaces, and a line rewritten with `\r` (a progress bar)
//   shows what it says last, as a terminal would.

/** Characters kept of a running call's output (as the result keeps, 50 KB, with room). */
export const TAIL_KEEP_CHARS = 64 * 1024;
/** A shown line is cut to this many characters. */
export const LIVE_LINE_CHARS = 240;

// eslint-disable-next-line no-control-regex -- the escape sequences are what is removed
const ESCAPES = /\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~]?)/g;
// eslint-disable-next-line no-control-regex -- the control characters are what is removed
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** One line of untrusted output as it may be shown: no escapes, no controls, at most `max` chars. */
export function displayLine(raw: string, max = LIVE_LINE_CHARS): string {
  let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  const rewritten = line.lastIndexOf('\r');
  if (rewritten >= 0) line = line.slice(rewritten + 1);
  // Escapes are short: a few times the shown width is enough to find what is shown.
  if (line.length > max * 4) line = line.slice(0, max * 4);
  line = line.replace(ESCAPES, '').replace(CONTROLS, '').replaceAll('\t', '    ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** The tail of one call's output. */
export class OutputTail {
  private text = '';
  private total = 0;

  constructor(private readonly keep = TAIL_KEEP_CHARS) {}

  /** More output arrived. */
  push(chunk: string): void {
    this.text += chunk;
    this.total += chunk.length;
    if (this.text.length > this.keep * 2) this.text = this.text.slice(-this.keep);
  }

  /** The kept text (its start cut when more was printed) and how many characters came before. */
  snapshot(): { text: string; dropped: number } {
    const text = this.text.length > this.keep ? this.text.slice(-this.keep) : this.text;
    return { text, dropped: this.total - text.length };
  }

  /** The last `count` lines, made safe to show; blank lines at the end are left out. */
  lastLines(count: number): string[] {
    const lines: string[] = [];
    let end = this.text.length;
    while (lines.length < count && end > 0) {
      const start = this.text.lastIndexOf('\n', end - 1);
      const line = displayLine(this.text.slice(start + 1, end));
      end = Math.max(start, 0);
      if (lines.length > 0 || line.trim() !== '') lines.unshift(line);
    }
    return lines;
  }
}
