// The wire form (JSON, as UTF-8 bytes) of each message of a chat's last request, kept so that the chat's next
// request serialises only what changed: a send of a long chat otherwise builds and serialises
// every message again (issue 29, S1). One cache per chat (the request builder keeps one per
// buffer). A message's JSON is reused only when the message equals, part by part and value by
// value, the one at the same place in the last request serialised with the same variant (the
// provider and the settings that shape a message's wire form): whatever changed it — an edit, a
// template's value, a file read again, an elided result — gives a different message, which is
// serialised again. The body is then the same, byte for byte, as without the cache.
import type { EvaluatedMessage, MessageSerialiser } from './types.js';

interface Entry {
  message: EvaluatedMessage;
  /** The message's JSON in UTF-8; empty when the provider sends nothing for it. */
  json: Buffer;
}

export class MessageWireCache implements MessageSerialiser {
  private variant: string | undefined;
  private entries: Entry[] = [];

  /**
   * The JSON of each of `messages` in UTF-8 (`encode` makes one, '' for a message left out),
   * reusing the last request's where the message at the same place is the same. `variant` names
   * the provider and every setting `encode` reads besides the message.
   */
  serialise(
    variant: string,
    messages: readonly EvaluatedMessage[],
    encode: (message: EvaluatedMessage) => string,
  ): Buffer[] {
    const previous = variant === this.variant ? this.entries : [];
    const entries = messages.map((message, index): Entry => {
      const before = previous[index];
      if (before !== undefined && sameValue(before.message, message)) {
        return { message, json: before.json };
      }
      return { message, json: Buffer.from(encode(message)) };
    });
    this.variant = variant;
    this.entries = entries;
    return entries.map((entry) => entry.json);
  }
}

/**
 * Whether two JSON-like values (what an evaluated message holds: strings, numbers, booleans,
 * null, undefined, arrays and plain objects) are the same, their objects' keys in the same order.
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, index) => sameValue(item, b[index]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  const others = Object.keys(right);
  return (
    keys.length === others.length &&
    keys.every((key, index) => others[index] === key && sameValue(left[key], right[key]))
  );
}
