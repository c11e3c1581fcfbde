// The typed configuration: Lua's snapshot parsed once per generation (src/core/config/config.ts,
// src/host/config.ts), and a buffer's frontmatter applied over it (src/host/buffer-settings.ts).
import { describe, expect, it } from 'vitest';
import { CONFIG_DEFAULTS, parseConfig } from '../../src/core/config/config.js';
import { ConfigStore } from '../../src/host/config.js';
import {
  type BufferSettings,
  settingsQuestion,
  resolveSettings,
} from '../../src/host/buffer-settings.js';
import type { ContextAnswer } from '../../src/editor/protocol/wire.js';
import type { LuaCaller } from '../../src/host/sandbox.js';

const facts = { cwd: '/w', filename: null, sandbox_override: null };

function answer(extra: Partial<ContextAnswer> = {}): ContextAnswer {
  return { facts, env: [], trust: { trusted: true, why: 'authored' }, ...extra };
}

describe('parseConfig', () => {
  it("gives what the snapshot leaves out the schema's defaults", () => {
    const config = parseConfig({});
    expect(config.provider).toBe(CONFIG_DEFAULTS.provider);
    expect(config.model).toBeUndefined();
    expect(config.parameters).toEqual(CONFIG_DEFAULTS.parameters);
    expect(config.tools).toEqual(CONFIG_DEFAULTS.tools);
    expect(config.tools.__list).toBeUndefined();
    expect(config.maxSessionCost).toBeUndefined();
    expect(config.autoWrite).toBe(CONFIG_DEFAULTS.editing.auto_write);
    expect(config.data).toEqual({});
  });

  it('reads editing.auto_write, the one editing option the host acts on', () => {
    expect(parseConfig({ editing: { auto_write: true, conceal: '2nv' } }).autoWrite).toBe(true);
    expect(parseConfig({ editing: { auto_write: false } }).autoWrite).toBe(false);
    expect(parseConfig({ editing: { auto_write: 'yes' } }).autoWrite).toBe(false);
  });

  it('keeps the data, and the sections with the options it does not type', () => {
    const data = {
      provider: 'openai',
      model: 'gpt-x',
      parameters: { max_tokens: 3000, temperature: 0.2, openai: { reasoning: 'high' } },
      tools: { __list: ['read', 'bash'], max_concurrent: 0, autopilot: { enabled: false }, x: {} },
      sandbox: { enabled: true },
      limits: { max_session_cost: 0 },
    };
    const config = parseConfig(data);
    expect(config.data).toBe(data);
    expect(config).toMatchObject({ provider: 'openai', model: 'gpt-x', maxSessionCost: 0 });
    expect(config.parameters).toMatchObject({
      max_tokens: 3000,
      temperature: 0.2,
      openai: { reasoning: 'high' },
      timeout: 600,
    });
    expect(config.tools).toMatchObject({
      __list: ['read', 'bash'],
      max_concurrent: 0,
      autopilot: { enabled: false },
      x: {},
    });
    expect(config.sandbox).toEqual({ enabled: true });
  });

  it('takes a value of the wrong type, or an empty list, as unset', () => {
    const config = parseConfig({
      provider: 3,
      parameters: { temperature: 'hot', cache_retention: 'forever' },
      tools: { __list: [], show_spinner: 'no', cursor_after_result: 'up', yolo: 'yes' },
      sandbox: [],
    });
    expect(config.provider).toBe('anthropic');
    expect('temperature' in config.parameters).toBe(false);
    expect(config.parameters.cache_retention).toBe('short');
    expect('__list' in config.tools).toBe(false);
    expect(config.tools).toMatchObject({
      show_spinner: true,
      cursor_after_result: 'result',
      yolo: false,
    });
    expect(config.sandbox).toBeUndefined();
  });

  it('is frozen, data included: every step shares it', () => {
    const config = parseConfig({ tools: { hooks: { log: ['bash'] } } });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.tools)).toBe(true);
    expect(Object.isFrozen(config.data['tools'])).toBe(true);
    expect(() => {
      (config.tools['hooks'] as { log: string[] }).log.push('read');
    }).toThrow(TypeError);
  });
});

describe('ConfigStore', () => {
  /** A Lua side whose configuration is `current` at generation `generation`. */
  function lua(state: { generation: number; data: Record<string, unknown> }) {
    const asked: unknown[] = [];
    const bridge = {
      call: ((method: string, params: { generation?: number }) => {
        expect(method).toBe('config.snapshot');
        asked.push(params.generation);
        return Promise.resolve(
          params.generation === state.generation
            ? { generation: state.generation }
            : { generation: state.generation, config: state.data },
        );
      }) as LuaCaller['call'],
    };
    return { bridge, asked };
  }

  it('is sent the snapshot when it holds none or an older one, and keeps it', async () => {
    const state = { generation: 7, data: { model: 'a' } as Record<string, unknown> };
    const { bridge, asked } = lua(state);
    const store = new ConfigStore();
    const first = await store.get(bridge);
    const second = await store.get(bridge);
    expect(first.model).toBe('a');
    expect(second).toBe(first);
    state.generation = 8;
    state.data = { model: 'b' };
    expect((await store.get(bridge)).model).toBe('b');
    expect(asked).toEqual([undefined, 7, 7]);
    expect(store.held()?.generation).toBe(8);
  });

  it('refuses an answer without a configuration when it asked with none', () => {
    expect(() => new ConfigStore().accept({ generation: 1 }, undefined)).toThrow(
      /no configuration/,
    );
  });
});

/** Buffer 1's settings (its frontmatter is Lua) from Lua's answer of generation 1. */
async function withLuaFrontmatter(
  store: ConfigStore,
  extra: Partial<ContextAnswer>,
): Promise<BufferSettings> {
  const question = await settingsQuestion(1, undefined, { config: store });
  question.params.frontmatter = { code: 'flemma.opt.model = "x"', line: 1 };
  return resolveSettings(question, answer({ generation: 1, ...extra }));
}

describe('the editor context and the configuration', () => {
  it('asks with the generation held, and uses that configuration when Lua sends none', async () => {
    const store = new ConfigStore();
    const first = await settingsQuestion(1, undefined, { config: store });
    expect(first.params.generation).toBeUndefined();
    const context = resolveSettings(first, answer({ generation: 3, config: { model: 'm' } }));
    expect(context.config.model).toBe('m');
    const next = await settingsQuestion(1, undefined, { config: store });
    expect(next.params.generation).toBe(3);
    expect(resolveSettings(next, answer({ generation: 3 })).config).toBe(context.config);
  });

  it("applies a frontmatter's operations over the data and parses the result", async () => {
    const store = new ConfigStore();
    const context = await withLuaFrontmatter(store, {
      config: { model: 'global', tools: { max_concurrent: 4 } },
      frontmatter: {
        ops: [
          { path: ['model'], op: 'set', value: 'local', line: 2 },
          { path: ['tools', 'max_concurrent'], op: 'set', value: 1, line: 3 },
        ],
      },
    });
    expect(context.config.model).toBe('local');
    expect(context.config.tools.max_concurrent).toBe(1);
    expect(context.config.data['model']).toBe('local');
    // The global configuration is not changed.
    expect(store.held()?.config.model).toBe('global');
  });

  it("applies the chat's own switch over the global configuration, under its frontmatter", async () => {
    const store = new ConfigStore();
    const context = await withLuaFrontmatter(store, {
      config: { provider: 'anthropic', model: 'global', parameters: { temperature: 0.5 } },
      switched: [
        { path: ['model'], value: 'switched' },
        { path: ['parameters', 'temperature'] },
        { path: ['parameters', 'openai', 'reasoning_summary'], value: 'detailed' },
        { path: ['provider'], value: 'openai' },
      ],
      frontmatter: { ops: [{ path: ['model'], op: 'set', value: 'pinned', line: 2 }] },
    });
    expect(context.config.provider).toBe('openai');
    expect(context.config.model).toBe('pinned');
    expect(context.config.data['parameters']).toEqual({
      openai: { reasoning_summary: 'detailed' },
    });
    // The global configuration is not changed.
    expect(store.held()?.config.data).toEqual({
      provider: 'anthropic',
      model: 'global',
      parameters: { temperature: 0.5 },
    });
  });
});
