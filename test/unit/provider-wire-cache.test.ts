// A chat's messages kept in their wire form between its requests (src/core/provider/wire-cache.ts):
// the body serialised with the cache is the body serialised without it, after every kind of
// change a chat sees between two sends, and an unchanged message is not serialised again.
import { describe, expect, it } from 'vitest';
import {
  buildAnthropicBody,
  serialiseAnthropicBody,
} from '../../src/core/provider/adapters/anthropic.js';
import type { EvaluatedMessage, ProviderRequest } from '../../src/core/provider/types.js';
import { MessageWireCache, sameValue } from '../../src/core/provider/wire-cache.js';
import { helloRequest } from '../helpers/provider-request.js';
import * as evaluated from '../helpers/evaluated-parts.js';
import { imagePart, textFilePart } from '../helpers/attachment-parts.js';
import { redactedThinkingPart, thinkingPart } from '../helpers/thinking-parts.js';

const { assistantMessage, textPart, toolResultPart, toolUsePart, userMessage } = evaluated;

/** A chat as its templates and files rendered it: every kind of part, in both roles. */
function chat(): ProviderRequest {
  return helloRequest('claude-test', 4000, {
    system: 'Be brief.',
    cacheRetention: 'short',
    tools: [{ name: 'bash', description: 'Runs a command', inputSchema: { type: 'object' } }],
    messages: [
      userMessage(textPart('Question for QA team: '), textFilePart('src/a.lua', 'return "é 🙂"\n')),
      assistantMessage(
        thinkingPart('I should look.', 'anthropic', 'sig-1'),
        thinkingPart('Foreign thoughts.', 'openai', 'sig-x'),
        textPart('Reading it.'),
        toolUsePart('toolu_1', 'bash', { command: 'ls', options: { all: true, depth: [1, 2] } }),
      ),
      userMessage(
        toolResultPart('toolu_1', 'bash', 'a.lua\nb.lua'),
        textPart('And this picture: '),
        imagePart('shot.png', 'aGVsbG8='),
      ),
      assistantMessage(redactedThinkingPart('opaque'), textPart('Done.')),
      userMessage(textPart('Summarise.')),
    ],
  });
}

type Change = (request: ProviderRequest) => void;

function message(request: ProviderRequest, index: number): EvaluatedMessage {
  const found = request.messages[index];
  if (found === undefined) throw new Error(`no message ${String(index)}`);
  return found;
}

function part(request: ProviderRequest, index: number, at: number): Record<string, unknown> {
  const found = message(request, index).parts[at];
  if (found === undefined) throw new Error(`no part ${String(at)}`);
  return found as unknown as Record<string, unknown>;
}

/** A change that sets `key` of the part `at` of the message `index` to `value`. */
function set(index: number, at: number, key: string, value: unknown): Change {
  return (r) => {
    part(r, index, at)[key] = value;
  };
}

// Each change is made on a copy of the request before it (new objects, as a new parse and render
// make them), and they add up: the cache sees them one send after another.
const changes: [string, Change][] = [
  ['nothing (the same chat sent again)', () => undefined],
  [
    'a reply and a question appended (the usual next send)',
    (r) => {
      r.messages.push(assistantMessage(textPart('Sure.')), userMessage(textPart('More?')));
    },
  ],
  [
    'one character edited in an earlier message (same length)',
    set(0, 0, 'text', 'Question for QA teem: '),
  ],
  [
    "a template's value changed (the rendered text differs)",
    set(0, 0, 'text', 'Question for the release team: '),
  ],
  ['a referenced text file changed on disk', set(0, 1, 'text', 'return 2\n')],
  ['a referenced image changed on disk', set(2, 2, 'data', 'd29ybGQ=')],
  [
    "a tool use's nested input changed",
    (r) => {
      (part(r, 1, 3)['input'] as { options: { depth: number[] } }).options.depth[1] = 3;
    },
  ],
  ['a tool result became an error', set(2, 0, 'isError', true)],
  [
    "a thinking block's signature changed",
    set(1, 0, 'signature', { provider: 'anthropic', value: 'sig-2' }),
  ],
  [
    'foreign thinking dropped instead of preserved (an option)',
    (r) => {
      r.thinking = { level: 'low', budget: 2048, foreign: 'drop' };
    },
  ],
  [
    'the model, the limits and the temperature changed',
    (r) => {
      r.model = 'claude-other';
      r.maxTokens = 8000;
      r.temperature = 0.3;
    },
  ],
  [
    'the system prompt, the tools and the prompt caching changed',
    (r) => {
      r.system = 'Be thorough.';
      r.tools = [];
      r.cacheRetention = 'none';
    },
  ],
  [
    'a message inserted before others',
    (r) => {
      r.messages.splice(1, 0, userMessage(textPart('Inserted.')));
    },
  ],
  [
    'a message removed',
    (r) => {
      r.messages.splice(2, 1);
    },
  ],
  [
    'a message left with nothing to send',
    (r) => {
      r.messages.splice(1, 0, userMessage(textPart('   ')));
    },
  ],
];

describe('the wire cache', () => {
  const cache = new MessageWireCache();
  let request = chat();

  it('gives the body made without it on a first send', () => {
    expect(serialiseAnthropicBody(request, cache).toString()).toBe(
      JSON.stringify(buildAnthropicBody(request)),
    );
  });

  it.each(changes)('gives the body made without it after: %s', (_name, change) => {
    request = structuredClone(request);
    change(request);
    const cached = serialiseAnthropicBody(request, cache);
    expect(cached.toString()).toBe(JSON.stringify(buildAnthropicBody(request)));
    expect(cached.equals(serialiseAnthropicBody(request, undefined))).toBe(true);
  });

  it('serialises again only the messages that changed, each at its place', () => {
    const kept = new MessageWireCache();
    const encoded: string[] = [];
    const encode = (m: EvaluatedMessage): string => {
      const text = JSON.stringify(m);
      encoded.push(text);
      return text;
    };
    const first = chat();
    kept.serialise('a', first.messages, encode);
    expect(encoded).toHaveLength(5);
    const next = structuredClone(first);
    next.messages.push(userMessage(textPart('More?')));
    part(next, 0, 1)['text'] = 'return 2\n';
    encoded.length = 0;
    const out = kept.serialise('a', next.messages, encode);
    expect(encoded).toEqual([JSON.stringify(next.messages[0]), JSON.stringify(next.messages[5])]);
    expect(out.map(String)).toEqual(next.messages.map((m) => JSON.stringify(m)));
    // Another variant (another provider, or options that shape a message) starts again.
    encoded.length = 0;
    kept.serialise('b', next.messages, encode);
    expect(encoded).toHaveLength(6);
  });

  it('compares values, arrays and keys in order', () => {
    expect(sameValue({ a: [1, { b: 'x' }] }, { a: [1, { b: 'x' }] })).toBe(true);
    expect(sameValue({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameValue({ a: undefined }, {})).toBe(false);
    expect(sameValue([1, 2], { 0: 1, 1: 2 })).toBe(false);
    expect(sameValue(null, {})).toBe(false);
    expect(sameValue('1', 1)).toBe(false);
  });
});
