// The layout of a streamed reply (docs/chat-format.md §12): how provider events become text appended
// under `@Assistant:`, so that what streams in reads back as the same tree. Pure: the send turns
// each returned string into one append at the reply's stream anchor. The reply's text is the
// model's, never structure: it goes through the format's escape as it streams (escape.ts).
import type { ProviderEvent } from '../provider/types.js';
import { TextEscaper } from './escape.js';
import * as writer from './writer.js';

/** The message of the marker written when the user interrupts a reply. */
export const INTERRUPTED_MESSAGE = 'Response interrupted by the user.';

/**
 * The lines that replace the buffer's last line when a reply starts: that line, then the
 * `@Assistant:` marker, with a blank line between them unless the last line already is blank.
 */
export function openingLines(lastLine: string): string[] {
  return lastLine.trim() === '' ? [lastLine, '@Assistant:'] : [lastLine, '', '@Assistant:'];
}

/**
 * A thinking block that arrived after what followed it (adapters hand thinking over whole, when
 * the reply ends or its signature is known) goes back where the thinking happened: `lines` are
 * inserted before the row `row` rows under the `@Assistant:` marker's, which is `at` characters
 * into everything written after the marker so far (`text`: the same lines as one string).
 */
export interface ReplyInsert {
  row: number;
  lines: string[];
  at: number;
  text: string;
  /**
   * The rows the lines replace (none: they are inserted), and their characters after `at`: a
   * block of the client's own rewritten (an agent's permission placeholder answered).
   */
  replaced?: string[];
  removed?: number;
}

/** What one event writes: text appended at the reply's end, or a block inserted above it. */
export type ReplyEdit = string | ReplyInsert;

export class ReplyLayout {
  /** Everything appended after the `@Assistant:` line so far (without its leading newline). */
  private content = '';
  /** The newlines written before `content` (one before text, two before a block). */
  private lead = '';
  /**
   * Where in `content` the thinking being streamed began (a line's start), while its block has
   * not been written; `afterThinking`: a thinking block was just put there (a redacted one that
   * follows sits directly under it).
   */
  private thinkingAt: number | undefined;
  private afterThinking = false;
  /** The escape of the reply's text (it may hold back the start of a line). */
  private readonly escaper = new TextEscaper();
  /** Text or a block came: whitespace is no longer dropped. */
  private started = false;

  /** Whether the reply has any content (text or a block) yet, written or held back. */
  get hasContent(): boolean {
    return this.content !== '' || this.escaper.holding;
  }

  /** The reply as written so far. */
  get text(): string {
    return this.content;
  }

  /**
   * What the text written so far still owes, were the reply to end now (the start of a line held
   * back, a closing fence); a crash's recovery record writes it before its interrupted marker.
   */
  get owed(): string {
    return this.escaper.ending();
  }

  /**
   * What one event writes: the text to append (`''` when it writes nothing), or a thinking block
   * to insert where the thinking happened, above what was written after it.
   */
  push(event: Exclude<ProviderEvent, { type: 'thinking' | 'redacted_thinking' }>): string;
  push(event: ProviderEvent): ReplyEdit;
  push(event: ProviderEvent): ReplyEdit {
    switch (event.type) {
      case 'text':
        return this.appendText(event.text);
      case 'thinking': {
        const lines = writer.thinking(
          event.signature === undefined
            ? { content: event.content }
            : { content: event.content, signature: event.signature },
        );
        return this.placeThinking(lines);
      }
      case 'redacted_thinking':
        return this.placeThinking(writer.thinking({ content: event.data, redacted: true }));
      case 'tool_use':
        return this.appendBlock(
          writer.toolUse({ name: event.name, id: event.id, input: event.input }),
        );
      case 'progress':
        if (event.phase === 'thinking') this.thinkingStarts();
        return '';
      case 'block':
        return this.appendBlock(event.lines);
      case 'rewrite':
        return this.rewrite(event.from, event.to);
      case 'usage':
      case 'warning':
      case 'done':
        return '';
      default:
        return assertNever(event);
    }
  }

  /** The interrupted-reply marker, when the user cancels a reply that has content. */
  interrupt(message = INTERRUPTED_MESSAGE): string {
    if (!this.hasContent) return '';
    return this.appendBlock(writer.abortedMarker(message));
  }

  /** What ends a reply: a blank line, then the next `@You:` prompt and an empty line for it. */
  close(): string {
    const owed = this.endText();
    return owed + (this.content.endsWith('\n') ? '\n@You:\n' : '\n\n@You:\n');
  }

  /**
   * Thinking streams (a progress event): remember where it began, when that is a line's start
   * (the reply's, or after a block); in the middle of a line its block is appended at the end.
   */
  private thinkingStarts(): void {
    if (this.thinkingAt !== undefined || this.escaper.holding) return;
    this.afterThinking = false;
    if (this.content === '' || this.content.endsWith('\n')) this.thinkingAt = this.content.length;
  }

  /**
   * A thinking block where its thinking began: inserted above what was written since (with a
   * blank line on each side, or directly under the thinking block it follows when redacted),
   * else appended as any block.
   */
  private placeThinking(lines: string[]): ReplyEdit {
    const at = this.thinkingAt;
    if (lines.length === 0) return '';
    if (at === undefined || at >= this.content.length) {
      this.thinkingAt = undefined;
      this.afterThinking = false;
      return this.appendBlock(lines);
    }
    const block = lines.join('\n') + '\n';
    // What goes in `content` at `at`: the block, and where it starts there.
    let inserted: string;
    let start: number;
    if (this.afterThinking) [inserted, start] = [block, at];
    else if (at === 0) [inserted, start] = [block + '\n', 0];
    else [inserted, start] = ['\n' + block + (this.content[at] === '\n' ? '' : '\n'), at + 1];
    // A reply that began with text now begins with a block: one blank line under the marker.
    const opening = at === 0 && !this.afterThinking && this.lead === '\n';
    const offset = this.lead.length + at;
    const before = (this.lead + this.content).slice(0, offset);
    this.content = this.content.slice(0, at) + inserted + this.content.slice(at);
    if (opening) this.lead = '\n\n';
    this.thinkingAt = start + block.length;
    this.afterThinking = true;
    const text = (opening ? '\n' : '') + inserted;
    return {
      row: before.split('\n').length - 1,
      lines: text.slice(0, -1).split('\n'),
      at: offset,
      text,
    };
  }

  /**
   * The last block of the client's own that reads `from` (whole lines) becomes `to`; nothing when
   * the reply holds no such block.
   */
  private rewrite(from: readonly string[], to: readonly string[]): ReplyEdit {
    const old = from.join('\n') + '\n';
    const text = this.content;
    let at = text.lastIndexOf(old);
    while (at > 0 && text[at - 1] !== '\n') at = text.lastIndexOf(old, at - 1);
    if (at < 0) return '';
    const fresh = to.join('\n') + '\n';
    this.content = text.slice(0, at) + fresh + text.slice(at + old.length);
    if (this.thinkingAt !== undefined && this.thinkingAt > at) {
      this.thinkingAt += fresh.length - old.length;
    }
    const offset = this.lead.length + at;
    return {
      row: (this.lead + text).slice(0, offset).split('\n').length - 1,
      lines: [...to],
      at: offset,
      text: fresh,
      replaced: [...from],
      removed: old.length,
    };
  }

  private appendText(text: string): string {
    if (!this.started) {
      // Whitespace before the first real content is dropped, and the reply starts on the line
      // after the marker.
      if (text.trim() === '') return '';
      this.started = true;
      const start = this.escaper.push(text.replace(/^(?:[ \t]*\r?\n)+/, ''));
      this.content = start;
      this.lead = '\n';
      return '\n' + start;
    }
    const out = this.escaper.push(text);
    this.content += out;
    return out;
  }

  /** The end of the text before a block or the reply's end (what the escaper held back). */
  private endText(): string {
    const owed = this.escaper.end();
    this.content += owed;
    return owed;
  }

  private appendBlock(lines: string[]): string {
    if (lines.length === 0) return '';
    this.started = true;
    const owed = this.endText();
    if (this.content === '') {
      // A block that opens the reply sits one blank line under the marker.
      const block = lines.join('\n') + '\n';
      this.content = block;
      this.lead = '\n\n';
      return '\n\n' + block;
    }
    const chunk = writer.blockChunk(this.content, lines);
    this.content += chunk;
    return owed + chunk;
  }
}

function assertNever(value: never): never {
  throw new Error(`unexpected provider event ${JSON.stringify(value)}`);
}
