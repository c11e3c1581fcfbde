// `:Flemma chats` in the host (docs/picker.md): what a chat's head and tail say of it, and the
// lister that reads only what it shows and, the second time, only the files that changed.
import {
  appendFileSync,
  mkdirSync,
  realpathSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { entryLine, headOf, lastExchange, relativeAge } from '../../src/core/chats/summary.js';
import { ChatLister, HEAD_BYTES, TAIL_BYTES } from '../../src/host/chats/lister.js';
import { listChats } from '../../src/host/chats/action.js';
import type { RequestRecord } from '../../src/core/usage/session.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();
const yaml = { parse };

describe('headOf', () => {
  it.each([
    [
      'JSON',
      [
        '```json',
        '{ "title": "Plans", "flemma": { "provider": "openai", "model": "gpt-5.4" } }',
        '```',
      ],
    ],
    [
      'Lua',
      [
        '```lua',
        'title = "Plans"',
        'flemma.opt.provider = "openai"',
        'flemma.opt.model = "gpt-5.4"',
        '```',
      ],
    ],
    [
      'YAML',
      ['```yaml', 'title: Plans', 'flemma:', '  provider: openai', '  model: gpt-5.4', '```'],
    ],
  ])('reads the title, provider and model of a %s frontmatter', (_kind, frontmatter) => {
    const text = [...frontmatter, '@You:', 'Hello.', ''].join('\n');
    expect(headOf(text, yaml)).toEqual({ title: 'Plans', provider: 'openai', model: 'gpt-5.4' });
  });

  it('falls back to the first line of the first @You: and the default model', () => {
    const text = ['@System:', 'Be brief.', '', '@You:', '', '  What is   a monad?', 'More.'].join(
      '\n',
    );
    expect(headOf(text, yaml)).toEqual({
      title: 'What is a monad?',
      provider: 'default',
      model: 'default',
    });
  });

  it('runs nothing of a Lua frontmatter: a computed title is not read', () => {
    const text = ['```lua', 'title = os.getenv("HOME")', '```', '@You:', 'Hi.'].join('\n');
    expect(headOf(text, yaml).title).toBe('Hi.');
  });
});

describe('lastExchange', () => {
  it('is the last @You: and the reply after it', () => {
    const exchange = (you: string, reply: string): string =>
      `@You:\n${you}\n\n@Assistant:\n${reply}\n`;
    const text = exchange('One', 'A') + exchange('Two', 'B');
    expect(lastExchange(text, false)).toEqual(['@You:', 'Two', '', '@Assistant:', 'B']);
  });

  it('says when the tail holds no @You: (a reply longer than the tail)', () => {
    const text = ['middle of a reply', '@Assistant:', 'B', ''].join('\n');
    expect(lastExchange(text, true)).toEqual(['…', '@Assistant:', 'B']);
  });
});

describe('entryLine', () => {
  it('shows the title, the model, the age, the cost and the size', () => {
    const now = Date.UTC(2026, 0, 10, 12);
    const entry = {
      title: 'Plans',
      provider: 'openai',
      model: 'gpt-5.4',
      path: '/x/plans.chat',
      mtime: now - 2 * 3600_000 - 5,
      size: 2048,
      cost: 0.0123,
    };
    expect(entryLine(entry, 'plans.chat', now)).toBe(
      'Plans · openai/gpt-5.4 · 2 h ago · $0.0123 · 2.0 KB · plans.chat',
    );
    expect(relativeAge(now - 40 * 86400_000, now)).toBe('2025-12-01');
  });
});

describe('ChatLister', () => {
  /** A chat of `bytes` bytes whose first `@You:` line is `title`. */
  function chat(path: string, title: string, bytes = 0): void {
    const head = `@You:\n${title}\n\n@Assistant:\n`;
    writeFileSync(path, head + 'x'.repeat(Math.max(0, bytes - head.length - 1)) + '\n');
  }

  it('reads each file once; a second listing reads only the files that changed', async () => {
    const dir = temp('flemma-chats-');
    mkdirSync(join(dir, 'sub'));
    for (let i = 0; i < 5; i++) chat(join(dir, `c${String(i)}.chat`), `Chat ${String(i)}`);
    chat(join(dir, 'sub', 'big.chat'), 'Big', 2 * 1024 * 1024);
    const lister = new ChatLister();
    const sources = { dirs: [dir], children: false };
    const first = await lister.list(sources, new Map());
    expect(first.read).toBe(6);
    expect(first.chats.map((c) => c.title).sort()).toEqual([
      'Big',
      'Chat 0',
      'Chat 1',
      'Chat 2',
      'Chat 3',
      'Chat 4',
    ]);
    expect((await lister.list(sources, new Map())).read).toBe(0);
    // One file changes (a reply appended), one is replaced by a file of another title.
    appendFileSync(join(dir, 'c1.chat'), '\n@You:\nMore.\n');
    chat(join(dir, 'c2.chat'), 'Renamed chat two');
    const future = new Date(Date.now() + 60_000);
    utimesSync(join(dir, 'c2.chat'), future, future);
    const third = await lister.list(sources, new Map([[join(dir, 'c3.chat'), 0.5]]));
    expect(third.read).toBe(2);
    expect(third.chats[0]).toMatchObject({ title: 'Renamed chat two' });
    expect(third.chats.find((c) => c.title === 'Chat 3')?.cost).toBe(0.5);
  });

  it('previews from the tail of a large file, and again only once it changed', async () => {
    const dir = temp('flemma-chats-');
    const path = join(dir, 'big.chat');
    chat(path, 'Big', HEAD_BYTES + 4 * TAIL_BYTES);
    appendFileSync(path, '\n@You:\nLast question\n\n@Assistant:\nLast answer\n');
    const lister = new ChatLister();
    expect(await lister.preview(path)).toEqual([
      '@You:',
      'Last question',
      '',
      '@Assistant:',
      'Last answer',
    ]);
    truncateSync(path, 0);
    chat(path, 'Short');
    expect(await lister.preview(path)).toEqual(['@You:', 'Short', '', '@Assistant:', '']);
  });

  it('leaves out the children of tasks unless asked for', async () => {
    const dir = temp('flemma-chats-');
    mkdirSync(join(dir, 'notes.tasks'));
    chat(join(dir, 'notes.chat'), 'Parent');
    chat(join(dir, 'notes.tasks', '01-child.chat'), 'Child');
    const lister = new ChatLister();
    const titles = async (children: boolean): Promise<string[]> =>
      (await lister.list({ dirs: [dir], children }, new Map())).chats.map((c) => c.title).sort();
    expect(await titles(false)).toEqual(['Parent']);
    expect(await titles(true)).toEqual(['Child', 'Parent']);
  });
});

describe('listChats', () => {
  it('shows what the session’s requests of a chat cost, found by its real path', async () => {
    const dir = temp('flemma-chats-');
    mkdirSync(join(dir, 'real'));
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    writeFileSync(join(dir, 'real', 'paid.chat'), '@You:\nPaid.\n');
    writeFileSync(join(dir, 'real', 'free.chat'), '@You:\nFree.\n');
    const record = (filepath: string, cost: number): RequestRecord =>
      ({ filepath, cost }) as unknown as RequestRecord;
    const paid = realpathSync(join(dir, 'real', 'paid.chat'));
    const records = [record(paid, 0.01), record(paid, 0.0023), { bufnr: 1 } as RequestRecord];
    const ctx = { chats: new ChatLister(), usage: { session: { requests: () => records } } };
    const { chats } = await listChats(ctx, { dirs: [join(dir, 'link')], children: false });
    expect(chats.map((c) => c.line.replace(/ · just now · .*/, '')).sort()).toEqual([
      'Free. · default',
      'Paid. · default',
    ]);
    expect(chats.find((c) => c.line.startsWith('Paid.'))?.line).toMatch(/ · \$0\.0123 · 12 B · /);
  });
});
