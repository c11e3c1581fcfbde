// The layout of a streamed reply (behaviour.md §2.13): how provider events become text appended
// under `@Assistant:`, so that what streams in reads back as the same tree. Pure: the send turns
// each returned string into one append at the reply's stream anchor.
import type { ProviderEvent } from '../provider/types.js';
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

  /** Whether the reply has any content (text or a block) yet. */
  get hasContent(): boolean {
    return this.content !== '';
  }

  /** The reply as written so far. */
  get text(): string {
    return this.content;
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
    return this.content.endsWith('\n') ? '\n@You:\n' : '\n\n@You:\n';
  }

  private appendText(text: string): string {
    if (this.content === '') {
      // Whitespace before the first real content is dropped, and the reply starts on the line
      // after the marker.
      if (text.trim() === '') return '';
      const start = text.replace(/^(?:[ \t]*\r?\n)+/, '');
      this.content = start;
      return '\n' + start;
    }
    this.content += text;
    return text;
  }

  private appendBlock(lines: string[]): string {
    if (lines.length === 0) return '';
    if (this.content === '') {
      // A block that opens the reply sits one blank line under the marker.
      const block = lines.join('\n') + '\n';
      this.content = block;
      return '\n\n' + block;
    }
    const chunk = writer.blockChunk(this.content, lines);
    this.content += chunk;
    return chunk;
  }
}

function assertNever(value: never): never {
  throw new Error(`unexpected provider event ${JSON.stringify(value)}`);
}
