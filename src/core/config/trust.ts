// The trust boundary of a chat file (docs/security.md): which frontmatter changes a file that is
// not trusted may make, and the digest of the parts of a file that only a trusted file may use.
//
// Every option carries a trust class in the Lua schema (`schema.trust`); Lua sends it with each
// operation. A change is judged on the option's value before and after it:
//   safe          any change
//   needs_trust   none (unknown and new options too: fail closed)
//   subset        a list that keeps only items it held (removing tools, approvals, paths)
//   superset      a list that keeps every item it held (adding denials, exclusions)
//   lower/higher  a number no higher / no lower than before (an unset limit is no limit)
//   {only: [...]} one of these values (`sandbox.enabled = true`)
// A change that leaves the value as it was is always allowed: it changes nothing.
import { createHash, type Hash } from 'node:crypto';
import type { ChatDocument, Message } from '../chat/ast.js';

export type TrustClass =
  | 'safe'
  | 'needs_trust'
  | 'subset'
  | 'superset'
  | 'lower'
  | 'higher'
  | { only: readonly unknown[] };

/** A frontmatter operation that was not applied because the file is not trusted. */
export interface RefusedOp {
  /** The option as a user writes it: `flemma.opt.parameters.anthropic.base_url`. */
  key: string;
  /** The buffer line of the operation. */
  line: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Plain data as Lua sends it: an empty table may arrive as `[]` or `{}`. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const emptyA =
    (Array.isArray(a) && a.length === 0) || (isRecord(a) && Object.keys(a).length === 0);
  const emptyB =
    (Array.isArray(b) && b.length === 0) || (isRecord(b) && Object.keys(b).length === 0);
  if (emptyA || emptyB) return emptyA && emptyB;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, index) => sameValue(item, b[index]));
  }
  if (isRecord(a) && isRecord(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((key) => key in b && sameValue(a[key], b[key]))
    );
  }
  return false;
}

function asList(value: unknown): unknown[] | undefined {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value as unknown[];
  if (isRecord(value)) {
    const list = value['__list'];
    if (Array.isArray(list)) return list as unknown[];
    if (Object.keys(value).length === 0) return [];
  }
  return undefined;
}

function within(items: readonly unknown[], container: readonly unknown[]): boolean {
  return items.every((item) => container.some((other) => sameValue(item, other)));
}

/** The class as Lua sent it; anything unexpected is `needs_trust`. */
export function trustClass(value: unknown): TrustClass {
  if (
    value === 'safe' ||
    value === 'subset' ||
    value === 'superset' ||
    value === 'lower' ||
    value === 'higher'
  ) {
    return value;
  }
  if (isRecord(value) && Array.isArray(value['only'])) return { only: value['only'] };
  return 'needs_trust';
}

/** Whether a file that is not trusted may change an option of class `cls` from `before` to `after`. */
export function changeAllowed(cls: TrustClass, before: unknown, after: unknown): boolean {
  if (cls === 'safe' || sameValue(before, after)) return true;
  if (cls === 'needs_trust') return false;
  if (typeof cls === 'object') return cls.only.some((value) => sameValue(value, after));
  if (cls === 'subset' || cls === 'superset') {
    const old = asList(before);
    const next = asList(after);
    if (old === undefined || next === undefined) return false;
    return cls === 'subset' ? within(next, old) : within(old, next);
  }
  if (typeof after !== 'number') return false;
  if (before === undefined || before === null) return cls === 'lower';
  if (typeof before !== 'number') return false;
  return cls === 'lower' ? after <= before : after >= before;
}

/**
 * The digest of a tree with nothing that needs trust (no frontmatter, templates or references):
 * SHA-256 of nothing, written out so that loading the host computes no hash (a unit test checks it).
 */
export const EMPTY_TRUST_DIGEST =
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The digest of one message's template code and file references; '' when it has none. */
function messageDigest(message: Message): string {
  let hash: Hash | undefined;
  const add = (kind: string, text: string): void => {
    hash ??= createHash('sha256');
    hash.update(`${kind}\0${String(text.length)}\0${text}\0`);
  };
  for (const segment of message.segments) {
    if (segment.kind === 'expression' || segment.kind === 'code') add(segment.kind, segment.code);
    else if (segment.kind === 'file_reference') add('reference', segment.raw);
    else if (segment.kind === 'tool_result') {
      for (const piece of segment.segments) {
        if (piece.kind === 'file_reference') add('reference', piece.raw);
      }
    }
  }
  return hash === undefined ? '' : hash.digest('hex');
}

/**
 * The digest of what a file may do only when trusted: its frontmatter (any language: it sets
 * endpoints and programs too), the template code of its messages, and its file references (also
 * those in tool results). A change to any of them made outside the editor asks for trust again;
 * a change to the conversation's text does not. `memo` keeps each message's part (a reparse
 * keeps the messages before the change), so a long chat is not read again on every keystroke.
 */
export function trustDigest(document: ChatDocument, memo?: WeakMap<Message, string>): string {
  const hash = createHash('sha256');
  let empty = true;
  const frontmatter = document.frontmatter;
  if (frontmatter !== undefined) {
    const language = frontmatter.language.toLowerCase();
    hash.update(
      `frontmatter:${language}\0${String(frontmatter.code.length)}\0${frontmatter.code}\0`,
    );
    empty = false;
  }
  for (const message of document.messages) {
    let part = memo?.get(message);
    if (part === undefined) {
      part = messageDigest(message);
      memo?.set(message, part);
    }
    if (part === '') continue;
    hash.update(part);
    empty = false;
  }
  return empty ? EMPTY_TRUST_DIGEST : hash.digest('hex');
}
