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

export class ReplyLayout {
  /** Everything appended after the `@Assistant:` line so far (without its leading newline). */
  private content = '';
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

  /** The text to append for one event (`''` when the event writes nothing). */
  push(event: ProviderEvent): string {
    switch (event.type) {
      case 'text':
        return this.appendText(event.text);
      case 'thinking': {
        const lines = writer.thinking(
          event.signature === undefined
            ? { content: event.content }
            : { content: event.content, signature: event.signature },
        );
        return this.appendBlock(lines);
      }
      case 'redacted_thinking':
        return this.appendBlock(writer.thinking({ content: event.data, redacted: true }));
      case 'tool_use':
        return this.appendBlock(
          writer.toolUse({ name: event.name, id: event.id, input: event.input }),
        );
      case 'progress':
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

  private appendText(text: string): string {
    if (!this.started) {
      // Whitespace before the first real content is dropped, and the reply starts on the line
      // after the marker.
      if (text.trim() === '') return '';
      this.started = true;
      const start = this.escaper.push(text.replace(/^(?:[ \t]*\r?\n)+/, ''));
      this.content = start;
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
