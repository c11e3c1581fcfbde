import { describe, expect, it } from 'vitest';
import { SDK_NAMES, SdkLoader } from '../../src/core/provider/sdk.js';

describe('SdkLoader', () => {
  it('loads nothing until asked, then each SDK once', async () => {
    const loader = new SdkLoader();
    expect(SDK_NAMES.map((name) => loader.isLoaded(name))).toEqual([false, false, false]);
    const first = loader.load('openai');
    expect(loader.load('openai')).toBe(first);
    const openai = await first;
    expect(typeof openai.default).toBe('function');
    expect(loader.isLoaded('openai')).toBe(true);
    expect(loader.isLoaded('anthropic')).toBe(false);
  });

  it('reports every SDK as loadable, with its load time', async () => {
    const report = await new SdkLoader().probe();
    for (const name of SDK_NAMES) {
      expect(report[name].ok).toBe(true);
      expect(report[name].load_ms).toBeGreaterThanOrEqual(0);
    }
  });

  it('keeps one client per kind and options, the least recently used going beyond eight', () => {
    const loader = new SdkLoader();
    let made = 0;
    const make = (): { n: number } => ({ n: ++made });
    const a = loader.client('anthropic', { apiKey: 'k1' }, make);
    expect(loader.client('anthropic', { apiKey: 'k1' }, make)).toBe(a);
    // Another key, another kind: other clients.
    expect(loader.client('anthropic', { apiKey: 'k2' }, make)).not.toBe(a);
    expect(loader.client('openai', { apiKey: 'k1' }, make)).not.toBe(a);
    expect(made).toBe(3);
    // `a` is used again, so it stays; the next oldest ones go.
    for (let i = 0; i < 7; i++) {
      loader.client('anthropic', { apiKey: 'k1' }, make);
      loader.client('x', { i }, make);
    }
    expect(loader.client('anthropic', { apiKey: 'k1' }, make)).toBe(a);
    const before = made;
    loader.client('anthropic', { apiKey: 'k2' }, make);
    expect(made).toBe(before + 1);
  });
});
