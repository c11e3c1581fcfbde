// Elision: keeping a request under `context.budget` by sending old, large tool results as a
// one-line stub (docs/context.md, "Budget and elision"). The chat file is never changed; only the
// request is.
//
// Decisions:
// - Only tool results are elided, and only their content: the result stays where it is, with its
//   id, name and `is_error`, so every provider still finds a result for each call.
// - A "turn" here is one reply of the model with the results of the calls it made: in an agent
//   session one message of yours may start a hundred of them, and counting your messages would
//   protect the whole session. The last `keepTurns` replies and their results are never touched.
// - Stable blocks for prompt caching. The elided results are always the oldest eligible ones, up
//   to a cut that only moves forward, and it moves in large steps: when a request goes over the
//   budget, the cut goes on until the request is down to `lowWater` of the budget, so the next
//   requests keep the same stubs (the same prefix) until the chat grows past the budget again.
// - No state between sends: the cut is found by replaying the chat's own history, one step per
//   message of yours or of tool results (the points where a request goes out), against the
//   current system prompt, tools and budget. The same chat and budget give the same cut, and a
//   result elided once stays elided while the chat before it is unchanged.
import { estimateMessage, estimateRequest, estimateToolResult } from './estimate.js';
import type {
  EvaluatedMessage,
  EvaluatedPart,
  EvaluatedToolResult,
  ProviderRequest,
} from '../provider/types.js';

export interface ElideOptions {
  /** The input tokens a request may hold (the resolved `context.budget`). */
  budget: number;
  /** The model's last replies, with the results that answer them, that are never elided. */
  keepTurns: number;
  /** A result smaller than this (its content's bytes) is never elided. */
  minBytes: number;
  /** Once elision must go further, it goes until the request is at most this share of the budget. */
  lowWater: number;
}

/** One result sent as a stub. */
export interface ElidedResult {
  toolUseId: string;
  /** The tool's name as the chat has it. */
  name: string;
  /** The bytes of the content it replaced. */
  bytes: number;
  /** The estimated tokens the stub saved. */
  saved: number;
  /** The stub's text, as sent. */
  stub: string;
}

export interface Elision {
  /** The messages to send (the input itself when nothing is elided). */
  messages: EvaluatedMessage[];
  /** What was elided, oldest first. */
  elided: ElidedResult[];
  budget: number;
  /** The request's estimated input tokens before and after elision. */
  before: number;
  after: number;
  /** Why the request is still over the budget, when it is. */
  over?: string;
}

/** A tool result's candidate for elision. */
interface Candidate {
  message: number;
  part: number;
  result: EvaluatedToolResult;
  bytes: number;
  saved: number;
  stub: string;
}

/** The input keys that say what a call was about, most telling first. */
const TARGET_KEYS = [
  'path',
  'file_path',
  'filePath',
  'filename',
  'file',
  'command',
  'cmd',
  'pattern',
  'query',
  'url',
  'uri',
];
/** A target longer than this is shortened (a long command line, say). */
const TARGET_MAX = 80;

/** The bytes of a part as the chat holds it (base64 data counted as the bytes it decodes to). */
function partBytes(part: EvaluatedPart): number {
  switch (part.kind) {
    case 'text':
    case 'text_file':
      return Buffer.byteLength(part.text, 'utf8');
    case 'image':
    case 'pdf':
      return Math.floor((part.data.length * 3) / 4);
    case 'unsupported_file':
      return Buffer.byteLength(part.filename, 'utf8');
  }
}

/** The bytes of a result's content. */
export function resultBytes(result: EvaluatedToolResult): number {
  return result.parts.reduce((sum, part) => sum + partBytes(part), 0);
}

/** A size as people read it: `812 B`, `48 KB`, `1.2 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${String(bytes)} B`;
  if (bytes < 1024 * 1024) return `${String(Math.round(bytes / 1024))} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** What a call was about, from its input (a path, a command, a pattern), if it says. */
export function callTarget(input: unknown): string | undefined {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
  const record = input as Record<string, unknown>;
  for (const key of TARGET_KEYS) {
    const value = record[key];
    if (typeof value !== 'string') continue;
    const flat = value.replace(/\s+/g, ' ').trim();
    if (flat === '') continue;
    return flat.length > TARGET_MAX ? `${flat.slice(0, TARGET_MAX - 1)}…` : flat;
  }
  return undefined;
}

function plural(count: number, word: string): string {
  return `${String(count)} ${word}${count === 1 ? '' : 's'}`;
}

/** The stub a result is sent as: `[result of read src/x.ts elided: 48 KB; the chat file has it]`. */
export function stubText(result: EvaluatedToolResult, input: unknown, bytes: number): string {
  const target = callTarget(input);
  const images = result.parts.filter((part) => part.kind === 'image').length;
  const pdfs = result.parts.filter((part) => part.kind === 'pdf').length;
  const media = [
    ...(images > 0 ? [plural(images, 'image')] : []),
    ...(pdfs > 0 ? [plural(pdfs, 'PDF')] : []),
  ];
  const size = [formatBytes(bytes), ...media].join(', ');
  const what = target === undefined ? result.name : `${result.name} ${target}`;
  return `[result of ${what} elided: ${size}; the chat file has it]`;
}

/** The result with its content replaced by `stub` (id, name, `isError` kept). */
function stubbed(result: EvaluatedToolResult, stub: string): EvaluatedToolResult {
  return { ...result, parts: [{ kind: 'text', text: stub }] };
}

/** Every result that may be elided, in chat order, with its stub and what the stub saves. */
function candidates(messages: readonly EvaluatedMessage[], minBytes: number): Candidate[] {
  const inputs = new Map<string, unknown>();
  const out: Candidate[] = [];
  messages.forEach((message, index) => {
    if (message.role === 'assistant') {
      for (const part of message.parts)
        if (part.kind === 'tool_use') inputs.set(part.id, part.input);
      return;
    }
    message.parts.forEach((part, at) => {
      if (part.kind !== 'tool_result') return;
      const bytes = resultBytes(part);
      if (bytes < minBytes) return;
      const stub = stubText(part, inputs.get(part.toolUseId), bytes);
      const saved = estimateToolResult(part) - estimateToolResult(stubbed(part, stub));
      if (saved > 0) out.push({ message: index, part: at, result: part, bytes, saved, stub });
    });
  });
  return out;
}

/**
 * The first message of the protected tail of `messages[0..last]`: the `keepTurns`-th last reply
 * of the model (0, everything protected, when there are not that many).
 */
function protectedFrom(replies: readonly number[], last: number, keepTurns: number): number {
  let seen = 0;
  for (let index = replies.length - 1; index >= 0; index--) {
    const reply = replies[index] as number;
    if (reply > last) continue;
    seen++;
    if (seen === keepTurns) return reply;
  }
  return 0;
}

function tokens(value: number): string {
  return value.toLocaleString('en-US');
}

/**
 * The messages to send under `options.budget`, with what was elided. `rest` is the rest of the
 * request (system prompt and tools), counted as it will be sent.
 */
export function elide(
  messages: EvaluatedMessage[],
  rest: Pick<ProviderRequest, 'system' | 'tools'>,
  options: ElideOptions,
): Elision {
  const fixed = estimateRequest({ system: rest.system, tools: rest.tools, messages: [] });
  const sizes = messages.map(estimateMessage);
  const before = sizes.reduce((sum, size) => sum + size, fixed);
  const budget = options.budget;
  if (before <= budget) return { messages, elided: [], budget, before, after: before };
  const keepTurns = Math.max(1, Math.floor(options.keepTurns));
  const low = Math.floor(budget * Math.min(1, Math.max(0.05, options.lowWater)));
  const all = candidates(messages, options.minBytes);
  const replies: number[] = [];
  messages.forEach((message, index) => {
    if (message.role === 'assistant') replies.push(index);
  });
  // Replay: each point where a request went out (the chat up to a message of yours or of tool
  // results, and the chat as it is now), the cut moving only when that request is over budget.
  let cut = 0;
  let saved = 0;
  let prefix = fixed;
  for (let index = 0; index < messages.length; index++) {
    prefix += sizes[index] as number;
    const last = index === messages.length - 1;
    if (!last && messages[index]?.role !== 'user') continue;
    if (prefix - saved <= budget) continue;
    const boundary = protectedFrom(replies, index, keepTurns);
    const eligible = (at: number): boolean => (all[at]?.message ?? Infinity) < boundary;
    while (eligible(cut) && prefix - saved > low) saved += (all[cut++] as Candidate).saved;
    // The rest of the same message goes too: parallel calls' results stay together.
    while (cut > 0 && eligible(cut) && all[cut]?.message === all[cut - 1]?.message) {
      saved += (all[cut++] as Candidate).saved;
    }
  }
  const chosen = all.slice(0, cut);
  const out = chosen.length === 0 ? messages : apply(messages, chosen);
  const after = before - saved;
  const elision: Elision = {
    messages: out,
    elided: chosen.map((item) => ({
      toolUseId: item.result.toolUseId,
      name: item.result.name,
      bytes: item.bytes,
      saved: item.saved,
      stub: item.stub,
    })),
    budget,
    before,
    after,
  };
  if (after > budget) {
    elision.over = overReason(messages, sizes, fixed, after, chosen.length, {
      budget,
      keepTurns,
      boundary: protectedFrom(replies, messages.length - 1, keepTurns),
    });
  }
  return elision;
}

/** `messages` with the chosen results replaced by their stubs (new objects; the input is kept). */
function apply(messages: EvaluatedMessage[], chosen: readonly Candidate[]): EvaluatedMessage[] {
  const byMessage = new Map<number, Map<number, string>>();
  for (const item of chosen) {
    const parts = byMessage.get(item.message) ?? new Map<number, string>();
    parts.set(item.part, item.stub);
    byMessage.set(item.message, parts);
  }
  return messages.map((message, index) => {
    const parts = byMessage.get(index);
    if (parts === undefined || message.role !== 'user') return message;
    return {
      role: 'user',
      parts: message.parts.map((part, at) => {
        const stub = parts.get(at);
        return stub === undefined || part.kind !== 'tool_result' ? part : stubbed(part, stub);
      }),
    };
  });
}

/** Why a request is still over its budget after elision, naming what may not be elided. */
function overReason(
  messages: readonly EvaluatedMessage[],
  sizes: readonly number[],
  fixed: number,
  after: number,
  count: number,
  context: { budget: number; keepTurns: number; boundary: number },
): string {
  const kept = sizes.slice(context.boundary).reduce((sum, size) => sum + size, 0);
  const rest = after - kept - fixed;
  const turns = messages.slice(context.boundary).filter((m) => m.role === 'assistant').length;
  const parts = [
    `the last ${plural(turns, 'turn')} ≈${tokens(kept)} (never elided: context.elide.keep_turns)`,
    `the system prompt and tools ≈${tokens(fixed)}`,
  ];
  if (rest > 0) {
    parts.push(`older messages ≈${tokens(rest)} (text, and results under context.elide.min_bytes)`);
  }
  const done = count === 0 ? 'nothing could be elided' : `after eliding ${plural(count, 'result')}`;
  return `request ≈${tokens(after)} tokens, over context.budget ${tokens(context.budget)} (${done}): ${parts.join(', ')}`;
}
