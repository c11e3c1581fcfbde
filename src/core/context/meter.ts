// The context meter (docs/context.md, "The context meter"): how much of the model's context
// window a request fills, as the usage bar, `:Flemma status`, the statusline and `:Flemma context`
// show it, and the rule of the warning before a send. Pure: the host keeps the per-buffer state.
import type { ChatDocument } from '../chat/ast.js';
import type { EvaluatedToolResult, ProviderRequest } from '../provider/types.js';
import type { WindowSource } from '../provider/windows.js';
import { estimateMessage, estimateText, estimateTool, estimateToolResult } from './estimate.js';

/** `context.warn_at` when the configuration has none (or one that cannot be read). */
export const DEFAULT_WARN_AT = 0.8;

/** 950 → "950", 9000 → "9k", 48_213 → "48.2k", 1_048_576 → "1M" (as the usage bar counts). */
export function formatTokens(n: number): string {
  const value = Math.max(0, Math.floor(n));
  if (value < 1000) return String(value);
  const [scaled, suffix] = value >= 999_950 ? [value / 1e6, 'M'] : [value / 1000, 'k'];
  return scaled.toFixed(1).replace(/\.0$/, '') + suffix;
}

/**
 * The share of the window, in whole percent. Rounded down, so that a request that fits never
 * reads "100%"; one over the window reads more than 100.
 */
export function percentOf(tokens: number, window: number): number {
  return window > 0 ? Math.floor((tokens / window) * 100) : 0;
}

/** `48.2k / 200k (24%)`. */
export function meterText(tokens: number, window: number): string {
  return `${formatTokens(tokens)} / ${formatTokens(window)} (${String(percentOf(tokens, window))}%)`;
}

/**
 * `context.warn_at` as a share of the window: `"80%"` → 0.8; `false` → false (no warning);
 * anything else → the default. The schema admits only `"N%"` and `false`, so the fallback is for
 * data that did not pass through it.
 */
export function warnShare(value: unknown): number | false {
  if (value === false) return false;
  if (typeof value === 'string') {
    const match = /^(\d+)%$/.exec(value);
    if (match !== null) return Number(match[1]) / 100;
  }
  return DEFAULT_WARN_AT;
}

/** Where a request stands against the window: below the warning, at or over it, over the window. */
export type ContextLevel = 'ok' | 'near' | 'over';

export function levelOf(tokens: number, window: number, warnAt: number | false): ContextLevel {
  if (window > 0 && tokens >= window) return 'over';
  if (warnAt !== false && window > 0 && tokens >= warnAt * window) return 'near';
  return 'ok';
}

const RANK: Record<ContextLevel, number> = { ok: 0, near: 1, over: 2 };

const WINDOW_WORDS: Record<WindowSource, string> = {
  configured: 'context.window',
  model: 'the model table',
  'provider floor': "the provider's smallest window (model not in the table)",
  default: 'the default for an unknown provider',
  agent: 'the agent',
};

/** Where a window comes from, in words. */
export function windowSource(source: WindowSource): string {
  return WINDOW_WORDS[source];
}

export interface ContextWarning {
  /** What to remember for the buffer's next send. */
  level: ContextLevel;
  /** The warning to show now, if any. */
  message?: string;
}

/**
 * The warning before a send. It is said once per crossing: when the request reaches the
 * `warn_at` share (or the whole window) and the buffer's previous send was below that level. A
 * long session near its window would otherwise repeat it on every turn of a tool loop; once the
 * request falls back below the share (a compaction, an elision budget, a deleted result), the
 * next crossing warns again.
 */
export function contextWarning(
  figures: { tokens: number; window: number; model: string; warnAt: number | false },
  previous: ContextLevel | undefined,
): ContextWarning {
  const { tokens, window, model, warnAt } = figures;
  const level = levelOf(tokens, window, warnAt);
  if (level === 'ok' || RANK[level] <= RANK[previous ?? 'ok']) return { level };
  const where = `Context ≈ ${meterText(tokens, window)} of ${model}'s window`;
  const help = 'Make room: :Flemma compact, or context.budget.';
  const message =
    level === 'over'
      ? `${where}: the provider will likely refuse it. ${help}`
      : `${where}. ${help}`;
  return { level, message };
}

/** One tool result of a request, for the breakdown. */
export interface ToolResultFigure {
  tokens: number;
  name: string;
  toolUseId: string;
  /** The line of its `**Tool Result:**` header in the chat (1-based), when the chat has it. */
  line?: number;
}

/** What a request is made of, in estimated tokens. */
export interface RequestBreakdown {
  total: number;
  system: number;
  tools: number;
  toolCount: number;
  messages: number;
  messageCount: number;
  /** All tool results together (part of `messages`). */
  toolResults: number;
  toolResultCount: number;
  /** The largest tool results, largest first. */
  largest: ToolResultFigure[];
}

/** The line of each tool result's header in the chat, by tool-use id (the last one wins). */
function resultLines(document: ChatDocument | undefined): Map<string, number> {
  const lines = new Map<string, number>();
  for (const message of document?.messages ?? []) {
    for (const segment of message.segments) {
      if (segment.kind === 'tool_result') lines.set(segment.toolUseId, segment.span.startLine);
    }
  }
  return lines;
}

/**
 * The breakdown of a request's estimate (`estimateRequest` is its total): the system prompt, the
 * tools' definitions, the messages, and the `top` largest tool results with where they are.
 */
export function breakdown(
  request: Pick<ProviderRequest, 'system' | 'messages' | 'tools'>,
  document?: ChatDocument,
  top = 5,
): RequestBreakdown {
  const system = estimateText(request.system);
  let tools = 0;
  for (const tool of request.tools) tools += estimateTool(tool);
  let messages = 0;
  const results: ToolResultFigure[] = [];
  const lines = resultLines(document);
  for (const message of request.messages) {
    messages += estimateMessage(message);
    if (message.role !== 'user') continue;
    for (const part of message.parts) {
      if (part.kind !== 'tool_result') continue;
      const result: EvaluatedToolResult = part;
      const figure: ToolResultFigure = {
        tokens: estimateToolResult(result),
        name: result.name,
        toolUseId: result.toolUseId,
      };
      const line = lines.get(result.toolUseId);
      if (line !== undefined && !result.synthetic) figure.line = line;
      results.push(figure);
    }
  }
  const toolResults = results.reduce((sum, result) => sum + result.tokens, 0);
  // Largest first; among equals, the earlier in the chat first (a stable order for the report).
  const largest = results
    .map((result, index) => ({ result, index }))
    .sort((a, b) => b.result.tokens - a.result.tokens || a.index - b.index)
    .slice(0, top)
    .map((item) => item.result);
  return {
    total: system + tools + messages,
    system,
    tools,
    toolCount: request.tools.length,
    messages,
    messageCount: request.messages.length,
    toolResults,
    toolResultCount: results.length,
    largest,
  };
}

export interface ContextReportInput {
  breakdown: RequestBreakdown;
  window: { tokens: number; source: WindowSource };
  provider: string;
  model: string;
  warnAt: number | false;
  /** The buffer's last completed request, when there is one. */
  last?: { tokens: number; window: number; model: string };
  /**
   * Between turns: the chat ends with an empty `@You:` (`empty`) or has no message yet (`none`);
   * the estimate is of the conversation so far.
   */
  betweenTurns?: 'empty' | 'none';
}

/** The line that says an estimate is of the conversation so far (see `betweenTurns`). */
const BETWEEN_TURNS = {
  empty: 'Between turns: the chat so far, without the empty @You: message at its end.',
  none: 'No message yet: the system prompt and the tools only.',
} as const;

/** `:Flemma context`: the next request's estimate against the window, and what it is made of. */
export function contextReport(input: ContextReportInput): string[] {
  const { breakdown: b, window } = input;
  const row = (label: string, tokens: number, note = ''): string =>
    `  ${label.padEnd(18)}${formatTokens(tokens).padStart(7)}${note === '' ? '' : `  ${note}`}`;
  const plural = (n: number, word: string): string => `${String(n)} ${word}${n === 1 ? '' : 's'}`;
  const lines = [
    `Next request ≈ ${meterText(b.total, window.tokens)} tokens, ${input.model} (${input.provider})`,
    `  window: ${formatTokens(window.tokens)} from ${windowSource(window.source)}`,
    ...(input.betweenTurns === undefined ? [] : [BETWEEN_TURNS[input.betweenTurns]]),
    '',
    row('system prompt', b.system),
    row('tool definitions', b.tools, plural(b.toolCount, 'tool')),
    row('messages', b.messages, plural(b.messageCount, 'message')),
    row('  tool results', b.toolResults, plural(b.toolResultCount, 'result')),
  ];
  if (b.largest.length > 0) {
    lines.push('', 'Largest tool results:');
    for (const result of b.largest) {
      const where = result.line === undefined ? '(not in the chat)' : `line ${String(result.line)}`;
      lines.push(
        `  ${formatTokens(result.tokens).padStart(7)}  ${result.name}  ${where}  ${result.toolUseId}`,
      );
    }
  }
  if (input.last !== undefined) {
    lines.push(
      '',
      `Last request: ${meterText(input.last.tokens, input.last.window)} (${input.last.model}, as the provider counted it)`,
    );
  }
  const level = levelOf(b.total, window.tokens, input.warnAt);
  lines.push('');
  if (level === 'over') {
    lines.push('Over the window: the provider will likely refuse this request.');
  }
  if (level !== 'ok') {
    lines.push(
      'To make room: :Flemma compact (a fresh chat from a summary), or context.budget (old tool',
      'results left out of the request; the file keeps them).',
    );
  }
  lines.push(
    'An estimate from the size (≈ 3.5 bytes a token, on the high side); the provider’s own',
    'count: :Flemma usage:estimate. Nothing was sent.',
  );
  return lines;
}

/** A request's input against its model's window, as the usage bar and the statusline show it. */
export interface ContextFigure {
  /** All input the provider counted: non-cached, cache reads and cache writes. */
  tokens: number;
  window: number;
  source: WindowSource;
  percent: number;
  /** `48.2k / 200k (24%)`. */
  text: string;
  /** At or over the `warn_at` share (or the window). */
  warn: boolean;
  provider: string;
  model: string;
}

export function contextFigure(
  tokens: number,
  window: { tokens: number; source: WindowSource },
  where: { provider: string; model: string; warnAt: number | false },
): ContextFigure {
  return {
    tokens,
    window: window.tokens,
    source: window.source,
    percent: percentOf(tokens, window.tokens),
    text: meterText(tokens, window.tokens),
    warn: levelOf(tokens, window.tokens, where.warnAt) !== 'ok',
    provider: where.provider,
    model: where.model,
  };
}
