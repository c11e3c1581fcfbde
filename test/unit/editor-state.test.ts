// What the host keeps of a chat buffer's settings (src/host/editor-state.ts): asked once, kept
// until Lua says they went stale or the frontmatter's text changed, updated by what a user's
// action brings along, and a trusted buffer's new digest told to Lua without asking.
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/chat/ast.js';
import { parseLines } from '../../src/core/chat/parser.js';
import type { ContextAnswer, ContextParams } from '../../src/editor/protocol/wire.js';
import { ConfigStore } from '../../src/host/config.js';
import { EditorStates } from '../../src/host/editor-state.js';

const FACTS = { cwd: '/work', filename: '/work/a.chat', sandbox_override: null };

/** A Lua side that answers `editor.context` and records what it was asked and told. */
function fakeLua(trusted = true) {
  const asked: ContextParams[] = [];
  const told: { method: string; params: unknown }[] = [];
  let generation = 1;
  const lua = {
    call: (_method: 'editor.context', params: ContextParams): Promise<ContextAnswer> => {
      asked.push(params);
      const answer: ContextAnswer = {
        generation,
        facts: FACTS,
        env: { ANTHROPIC_API_KEY: 'old' },
        trust: trusted
          ? { trusted, why: 'allowed' }
          : { trusted, why: 'untrusted', placeholders: { toolu_1: 'approved', toolu_2: 'denied' } },
      };
      if (params.generation !== generation) answer.config = { provider: 'anthropic' };
      if (params.frontmatter !== undefined) answer.frontmatter = { ops: [] };
      return Promise.resolve(answer);
    },
    notify: (method: string, params: unknown): void => {
      told.push({ method, params });
    },
    bump: () => {
      generation += 1;
    },
  };
  return { lua, asked, told };
}

function states(trusted = true) {
  const fake = fakeLua(trusted);
  const store = new EditorStates({
    lua: fake.lua as never,
    config: new ConfigStore(),
    memo: new WeakMap<Message, string>(),
    tools: () => ({ enabled: [], has: () => true, suggest: () => undefined }),
  });
  return { store, ...fake };
}

const chat = (extra: string[] = [], frontmatter = 'return {}') =>
  parseLines(['```lua', frontmatter, '```', '@You:', 'hello', ...extra]);

describe('the settings the host keeps of a buffer', () => {
  it('are asked once, then held while the frontmatter and the configuration stay', async () => {
    const { store, asked } = states();
    await store.get(1, chat());
    const again = await store.get(1, chat(['', '@Assistant:', 'hi', '', '@You:', 'more']));
    expect(asked).toHaveLength(1);
    expect(again.facts).toEqual(FACTS);
  });

  it('are asked again once Lua says they are stale, or when the frontmatter changed', async () => {
    const { store, asked, lua } = states();
    await store.get(1, chat());
    lua.bump();
    store.stale();
    await store.get(1, chat());
    expect(asked).toHaveLength(2);
    expect(asked[1]?.generation).toBe(1);
    await store.get(1, chat([], 'return { x = 1 }'));
    expect(asked).toHaveLength(3);
    store.stale(1);
    await store.get(1, chat([], 'return { x = 1 }'));
    expect(asked).toHaveLength(4);
  });

  it('a changed frontmatter is asked at its parse; the step then finds the answer', async () => {
    const { store, asked } = states();
    await store.get(1, chat());
    store.parsed(1, chat([], 'return { y = 2 }'));
    store.parsed(1, chat([], 'return { y = 2 }'));
    await store.get(1, chat([], 'return { y = 2 }'));
    expect(asked).toHaveLength(2);
  });

  it('take the environment and the facts a user action brings along', async () => {
    const { store, asked } = states();
    await store.get(1, chat());
    store.pushed(1, { env: { ANTHROPIC_API_KEY: 'new' }, facts: { ...FACTS, cwd: '/other' } });
    const settings = await store.get(1, chat());
    expect(settings.env).toEqual({ ANTHROPIC_API_KEY: 'new' });
    expect(store.facts(1)?.cwd).toBe('/other');
    expect(asked).toHaveLength(1);
  });

  it('tell Lua a trusted tree’s new digest; one not trusted stays so and is not told', async () => {
    const trusted = states(true);
    await trusted.store.get(1, chat());
    await trusted.store.get(1, chat(['', '@Assistant:', 'hi', '', '@You:', 'For {{ name }}']));
    expect(trusted.told.map((item) => item.method)).toEqual(['trust.seen']);
    const untrusted = states(false);
    await untrusted.store.get(1, chat());
    const again = await untrusted.store.get(
      1,
      chat(['', '@Assistant:', 'hi', '', '@You:', 'For {{ name }}']),
    );
    expect(again.trust.trusted).toBe(false);
    expect(untrusted.told).toEqual([]);
  });

  it('forget the statuses the user confirmed here', async () => {
    const { store } = states(false);
    const settings = await store.get(1, chat());
    expect(settings.trust.placeholders).toEqual({ toolu_1: 'approved', toolu_2: 'denied' });
    store.confirmed(1, ['toolu_1']);
    expect((await store.get(1, chat())).trust.placeholders).toEqual({ toolu_2: 'denied' });
  });
});
