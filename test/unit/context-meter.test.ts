import { describe, expect, it } from 'vitest';
import {
  breakdown,
  contextFigure,
  contextReport,
  contextWarning,
  formatTokens,
  levelOf,
  meterText,
  warnShare,
} from '../../src/core/context/meter.js';
import { estimateRequest } from '../../src/core/context/estimate.js';
import { parseChat } from '../../src/core/chat/parser.js';
import { parseConfig } from '../../src/core/config/config.js';
import type { EvaluatedMessage, ProviderRequest } from '../../src/core/provider/types.js';
import {
  assistantMessage,
  textPart,
  toolResultPart,
  toolUsePart,
  userMessage,
} from '../helpers/evaluated-parts.js';

describe('the meter’s figures', () => {
  it('writes tokens as the usage bar does', () => {
    expect([950, 9000, 48_213, 200_000, 1_048_576, 2_500_000].map(formatTokens)).toEqual([
      '950',
      '9k',
      '48.2k',
      '200k',
      '1M',
      '2.5M',
    ]);
  });

  it('shows the input against the window, rounded down so that a fitting request never reads 100%', () => {
    expect(meterText(48_213, 200_000)).toBe('48.2k / 200k (24%)');
    expect(meterText(199_999, 200_000)).toBe('200k / 200k (99%)');
    expect(meterText(210_000, 200_000)).toBe('210k / 200k (105%)');
  });

  it('carries the window and whether it is past the warning share', () => {
    const figure = contextFigure(
      170_000,
      { tokens: 200_000, source: 'model' },
      { provider: 'anthropic', model: 'claude-sonnet-4-6', warnAt: 0.8 },
    );
    expect(figure).toEqual({
      tokens: 170_000,
      window: 200_000,
      source: 'model',
      percent: 85,
      text: '170k / 200k (85%)',
      warn: true,
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
    });
    const off = contextFigure(
      170_000,
      { tokens: 200_000, source: 'model' },
      { provider: 'anthropic', model: 'm', warnAt: false },
    );
    expect(off.warn).toBe(false);
  });
});

describe('context.warn_at and context.window', () => {
  it('reads "N%" and false, and falls back to 80 % for anything else', () => {
    expect(warnShare('80%')).toBe(0.8);
    expect(warnShare('95%')).toBe(0.95);
    expect(warnShare(false)).toBe(false);
    expect(warnShare(undefined)).toBe(0.8);
    expect(warnShare('eighty')).toBe(0.8);
  });

  it('reaches the configuration', () => {
    expect(parseConfig({}).context).toEqual({ warnAt: 0.8, recovery: true });
    expect(parseConfig({ context: { window: 8192, warn_at: '50%' } }).context).toEqual({
      window: 8192,
      warnAt: 0.5,
      recovery: true,
    });
    expect(
      parseConfig({ context: { window: -1, warn_at: false, recovery: false } }).context,
    ).toEqual({
      warnAt: false,
      recovery: false,
    });
  });
});

describe('the warning before a send', () => {
  const at = (tokens: number, warnAt: number | false = 0.8) => ({
    tokens,
    window: 1000,
    model: 'claude-sonnet-4-6',
    warnAt,
  });

  it('says nothing below the share, and warns at it with the figures and what to do', () => {
    expect(contextWarning(at(799), undefined)).toEqual({ level: 'ok' });
    const near = contextWarning(at(800), undefined);
    expect(near.level).toBe('near');
    expect(near.message).toBe(
      "Context ≈ 800 / 1k (80%) of claude-sonnet-4-6's window. Make room: :Flemma compact, or context.budget.",
    );
  });

  it('says the provider will likely refuse a request at or over the window', () => {
    const over = contextWarning(at(1000), undefined);
    expect(over.level).toBe('over');
    expect(over.message).toContain('(100%)');
    expect(over.message).toContain('the provider will likely refuse it');
  });

  it('warns once per crossing, not on every send', () => {
    let level = contextWarning(at(850), undefined);
    expect(level.message).toBeDefined();
    // Still near: quiet, however many sends.
    level = contextWarning(at(900), level.level);
    expect(level).toEqual({ level: 'near' });
    // Over the window is a new crossing.
    level = contextWarning(at(1200), level.level);
    expect(level.message).toContain('likely refuse');
    level = contextWarning(at(1300), level.level);
    expect(level.message).toBeUndefined();
    // Back under the share (a compaction, a budget), then up again: a new warning.
    level = contextWarning(at(300), level.level);
    expect(level).toEqual({ level: 'ok' });
    expect(contextWarning(at(810), level.level).message).toBeDefined();
  });

  it('with warn_at = false, still says when a request is over the window', () => {
    expect(levelOf(990, 1000, false)).toBe('ok');
    expect(contextWarning(at(990, false), undefined).message).toBeUndefined();
    expect(contextWarning(at(1000, false), undefined).message).toContain('likely refuse');
  });
});

describe('the breakdown of :Flemma context', () => {
  const chat = [
    '@You:',
    'Read both files.',
    '',
    '@Assistant:',
    '**Tool Use:** `read` (`toolu_a`)',
    '```json',
    '{"path": "a.ts"}',
    '```',
    '',
    '**Tool Use:** `read` (`toolu_b`)',
    '```json',
    '{"path": "b.ts"}',
    '```',
    '',
    '@You:',
    '**Tool Result:** `toolu_a`',
    '```',
    'small',
    '```',
    '',
    '**Tool Result:** `toolu_b`',
    '```',
    'large',
    '```',
    '',
    'Thanks.',
  ];
  const messages: EvaluatedMessage[] = [
    userMessage(textPart('Read both files.')),
    assistantMessage(
      toolUsePart('toolu_a', 'read', { path: 'a.ts' }),
      toolUsePart('toolu_b', 'read', { path: 'b.ts' }),
    ),
    userMessage(
      toolResultPart('toolu_a', 'read', 'x'.repeat(700)),
      toolResultPart('toolu_b', 'read', 'y'.repeat(35_000)),
      textPart('Thanks.'),
    ),
  ];
  const request: Pick<ProviderRequest, 'system' | 'messages' | 'tools'> = {
    system: 'Be brief.',
    tools: [{ name: 'read', description: 'Read a file', inputSchema: { type: 'object' } }],
    messages,
  };

  it('adds up to the estimate and names the largest results with their lines', () => {
    const parts = breakdown(request, parseChat(chat.join('\n')));
    expect(parts.total).toBe(estimateRequest(request));
    expect(parts.system + parts.tools + parts.messages).toBe(parts.total);
    expect(parts).toMatchObject({ toolCount: 1, messageCount: 3, toolResultCount: 2 });
    expect(parts.largest.map((r) => [r.toolUseId, r.name, r.line])).toEqual([
      ['toolu_b', 'read', 21],
      ['toolu_a', 'read', 16],
    ]);
    expect(parts.largest[0]?.tokens).toBe(12 + 10_000);
  });

  it('reports the estimate against the window, and what to do past the share', () => {
    const lines = contextReport({
      breakdown: breakdown(request, parseChat(chat.join('\n'))),
      window: { tokens: 12_000, source: 'configured' },
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      warnAt: 0.8,
      last: { tokens: 9000, window: 200_000, model: 'claude-opus-4-6' },
    });
    expect(lines[0]).toBe('Next request ≈ 10.3k / 12k (85%) tokens, claude-sonnet-4-6 (anthropic)');
    expect(lines[1]).toBe('  window: 12k from context.window');
    expect(lines).toContain('      10k  read  line 21  toolu_b');
    expect(lines).toContain(
      'Last request: 9k / 200k (4%) (claude-opus-4-6, as the provider counted it)',
    );
    expect(lines.some((line) => line.includes(':Flemma compact'))).toBe(true);
  });
});
