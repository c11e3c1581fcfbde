// `:Flemma chats` in the host (docs/picker.md): what a chat's head and tail say of it, and the
// lister that reads only what it shows and, the second time, only the files that changed.
import {
  appendFileSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { entryLine, headOf, lastExchange, relativeAge } from '../../src/core/chats/summary.js';
import type { ChatSources } from '../../src/host/chats/find.js';
import {
  type ChatListing,
  ChatLister,
  HEAD_BYTES,
  TAIL_BYTES,
} from '../../src/host/chats/lister.js';
import { listChats } from '../../src/host/chats/action.js';
import { indexPath } from '../../src/host/chats/index-file.js';
import { REDACTED, Redactor } from '../../src/core/secrets/redact.js';
import type { RequestRecord } from '../../src/core/usage/session.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();
const yaml = { parse };
/** No redaction (a title as it is). */
const same = (text: string): string => text;

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
    const lister = new ChatLister(same);
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
    const lister = new ChatLister(same);
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
    const lister = new ChatLister(same);
    const titles = async (children: boolean): Promise<string[]> =>
      (await lister.list({ dirs: [dir], children }, new Map())).chats.map((c) => c.title).sort();
    expect(await titles(false)).toEqual(['Parent']);
    expect(await titles(true)).toEqual(['Child', 'Parent']);
  });
});

describe('ChatLister, the index on disk', () => {
  /** `count` chats in a new directory, and the sources of a listing keeping its index in `cache`. */
  function chats(count: number): { dir: string; sources: ChatSources; paths: string[] } {
    const dir = temp('flemma-chats-');
    const paths = Array.from({ length: count }, (_, i) => join(dir, `c${String(i)}.chat`));
    paths.forEach((path, i) => {
      writeFileSync(path, `@You:\nChat ${String(i)}\n`);
    });
    return { dir, sources: { dirs: [dir], children: false, cache: join(dir, 'cache') }, paths };
  }
  const titles = (listing: ChatListing): string[] => listing.chats.map((c) => c.title).sort();
  /** The index file's entries. */
  const stored = (file: string): Record<string, unknown> =>
    (JSON.parse(readFileSync(file, 'utf8')) as { chats: Record<string, unknown> }).chats;

  it('lets a fresh lister read no file when nothing changed, and only the changed ones', async () => {
    const { sources, paths } = chats(3);
    expect((await new ChatLister(same).list(sources, new Map())).read).toBe(3);
    const file = indexPath(join(sources.cache ?? ''));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const fresh = await new ChatLister(same).list(sources, new Map());
    expect(fresh.read).toBe(0);
    expect(titles(fresh)).toEqual(['Chat 0', 'Chat 1', 'Chat 2']);
    // One changes (its size), one goes: a fresh lister reads the one and drops the other.
    writeFileSync(paths[1] ?? '', '@You:\nChat one, changed\n');
    rmSync(paths[2] ?? '');
    const changed = await new ChatLister(same).list(sources, new Map());
    expect(changed.read).toBe(1);
    expect(titles(changed)).toEqual(['Chat 0', 'Chat one, changed']);
    expect(Object.keys(stored(file)).sort()).toEqual(paths.slice(0, 2));
    expect((await new ChatLister(same).list(sources, new Map())).read).toBe(0);
  });

  it('reads a file again whose modification time changed (the same size)', async () => {
    const { sources, paths } = chats(1);
    await new ChatLister(same).list(sources, new Map());
    writeFileSync(paths[0] ?? '', '@You:\nChat X\n');
    const later = new Date(Date.now() + 60_000);
    utimesSync(paths[0] ?? '', later, later);
    const listing = await new ChatLister(same).list(sources, new Map());
    expect(listing.read).toBe(1);
    expect(titles(listing)).toEqual(['Chat X']);
  });

  it.each([
    ['not JSON', '{"kind": "flemma-chats-'],
    ['another file', JSON.stringify({ name: 'something else', chats: {} })],
    ['another version', JSON.stringify({ kind: 'flemma-chats-index', version: 99, chats: {} })],
  ])('ignores an index that is %s, and replaces it', async (_what, text) => {
    const { sources } = chats(2);
    const file = indexPath(sources.cache ?? '');
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, text);
    const listing = await new ChatLister(same).list(sources, new Map());
    expect(listing.read).toBe(2);
    expect(titles(listing)).toEqual(['Chat 0', 'Chat 1']);
    expect((await new ChatLister(same).list(sources, new Map())).read).toBe(0);
  });

  it('uses no entry of the wrong shape', async () => {
    const { sources, paths } = chats(2);
    await new ChatLister(same).list(sources, new Map());
    const file = indexPath(sources.cache ?? '');
    const rows = { ...stored(file), [paths[0] ?? '']: ['now', 1, 'Wrong', 'default', 'default'] };
    writeFileSync(file, JSON.stringify({ kind: 'flemma-chats-index', version: 1, chats: rows }));
    const listing = await new ChatLister(same).list(sources, new Map());
    expect(listing.read).toBe(1);
    expect(titles(listing)).toEqual(['Chat 0', 'Chat 1']);
  });

  it('shows and keeps a title with its secrets redacted', async () => {
    const { sources, paths } = chats(1);
    const key = `sk-ant-${'a1B2'.repeat(10)}`;
    writeFileSync(paths[0] ?? '', `@You:\nWhy does ${key} fail?\n`);
    const redactor = new Redactor();
    const listing = await new ChatLister((text) => redactor.text(text)).list(sources, new Map());
    expect(titles(listing)).toEqual([`Why does ${REDACTED} fail?`]);
    const text = readFileSync(indexPath(sources.cache ?? ''), 'utf8');
    expect(text).not.toContain(key);
    expect(text).toContain(REDACTED);
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
    const usage = {
      session: { requests: () => records },
      inLedger: () => false,
    };
    const ctx = { chats: new ChatLister(same), usage };
    const { chats } = await listChats(ctx, { dirs: [join(dir, 'link')], children: false });
    expect(chats.map((c) => c.line.replace(/ · just now · .*/, '')).sort()).toEqual([
      'Free. · default',
      'Paid. · default',
    ]);
    expect(chats.find((c) => c.line.startsWith('Paid.'))?.line).toMatch(/ · \$0\.0123 · 12 B · /);
  });
});
