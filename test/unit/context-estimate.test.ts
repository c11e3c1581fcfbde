import { describe, expect, it } from 'vitest';
import { estimateMessage, estimateRequest, estimateText } from '../../src/core/context/estimate.js';
import { contextWindow, UNKNOWN_PROVIDER_WINDOW } from '../../src/core/provider/windows.js';

describe('the token estimate', () => {
  it('counts bytes on the cautious side of every tokenizer', () => {
    expect(estimateText('')).toBe(0);
    // 35 ASCII bytes: 10 tokens; a real tokenizer gives 8–10 for such text.
    expect(estimateText('a'.repeat(35))).toBe(10);
    // Multi-byte text counts its bytes, not its characters.
    expect(estimateText('é'.repeat(35))).toBe(20);
  });

  it('counts an image by the providers’ figure, not by its base64 size', () => {
    const image = estimateMessage({
      role: 'user',
      parts: [
        { kind: 'image', mimeType: 'image/png', data: 'A'.repeat(4_000_000), filename: 'x.png' },
      ],
    });
    expect(image).toBeLessThan(2_000);
  });

  it('gives the same number for the same request and grows with each message', () => {
    const request = {
      system: 'You are helpful.',
      tools: [{ name: 'bash', description: 'Run a command', inputSchema: { type: 'object' } }],
      messages: [
        { role: 'user' as const, parts: [{ kind: 'text' as const, text: 'hello '.repeat(100) }] },
      ],
    };
    const first = estimateRequest(request);
    expect(estimateRequest(structuredClone(request))).toBe(first);
    const longer = {
      ...request,
      messages: [
        ...request.messages,
        { role: 'assistant' as const, parts: [{ kind: 'text' as const, text: 'hi' }] },
      ],
    };
    expect(estimateRequest(longer)).toBeGreaterThan(first);
  });
});

describe('the context window', () => {
  it('knows models, falls back to the provider’s floor, and yields to the configured value', () => {
    const asked: Parameters<typeof contextWindow>[] = [
      ['openai', 'gpt-4.1-2025-04-14'],
      ['anthropic', 'claude-sonnet-4-5-20250929'],
      ['anthropic', 'claude-next-9'],
      ['openai_compatible', 'llama'],
      ['anthropic', 'claude-sonnet-4-5', 1_000_000],
    ];
    expect(asked.map((args) => contextWindow(...args))).toEqual([
      { tokens: 1_047_576, source: 'model' },
      { tokens: 200_000, source: 'model' },
      { tokens: 200_000, source: 'provider floor' },
      { tokens: UNKNOWN_PROVIDER_WINDOW, source: 'default' },
      { tokens: 1_000_000, source: 'configured' },
    ]);
    expect(contextWindow('vertex', 'gemini-2.5-pro').tokens).toBe(1_048_576);
    expect(contextWindow('anthropic', 'claude-sonnet-4-5', 0).source).toBe('model');
  });
});
