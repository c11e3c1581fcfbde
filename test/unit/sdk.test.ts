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
});
