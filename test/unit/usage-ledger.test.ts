// The usage ledger (docs/usage.md, "The ledger"): a line per priced request of a chat file,
// appended and rotated by the host, and summed per chat by `:Flemma chats`, which reads only
// what was appended since it last read (its mark kept in the picker's index).
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listChats } from '../../src/host/chats/action.js';
import { LedgerCosts } from '../../src/host/chats/costs.js';
import { ChatLister } from '../../src/host/chats/lister.js';
import {
  LEDGER_MAX_BYTES,
  type LedgerLine,
  appendLedger,
  ledgerLine,
  ledgerPath,
  parseLedgerLine,
} from '../../src/host/ledger.js';
import { makeRecord, type RequestRecord } from '../../src/core/usage/session.js';
import { parseConfig } from '../../src/core/config/config.js';
import { UsageTracker } from '../../src/host/usage.js';
import type { PreparedRequest } from '../../src/host/send/request.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();
const same = (text: string): string => text;

/** A ledger line of `chat` that cost `cost`. */
function line(chat: string, cost: number): LedgerLine {
  return {
    v: 1,
    at: 1_700_000_000_000,
    chat,
    provider: 'openai',
    model: 'gpt-5.4',
    input: 10,
    output: 5,
    cache_read: 0,
    cache_write: 0,
    cost,
  };
}

describe('ledgerLine', () => {
  it('holds the numbers and the chat path of a priced request of a chat file, nothing else', () => {
    const done = {
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      usage: { input: 100, output: 20, cacheRead: 50, cacheCreation: 10 },
      bufnr: 3,
      startedAt: 1_000,
      completedAt: 2_500,
    };
    const record = makeRecord({ ...done, filepath: '/chats/a.chat' });
    expect(ledgerLine(record)).toEqual({
      v: 1,
      at: 2_500,
      chat: '/chats/a.chat',
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      input: 100,
      output: 20,
      cache_read: 50,
      cache_write: 10,
      cost: record.cost,
    });
    expect(ledgerLine(makeRecord(done))).toBeUndefined();
    expect(ledgerLine(makeRecord({ ...done, filepath: '/a.chat', model: 'unknown-model' }))).toBe(
      undefined,
    );
  });

  it('parses only ledger lines', () => {
    expect(parseLedgerLine(JSON.stringify(line('/a.chat', 0.5)))).toEqual(line('/a.chat', 0.5));
    for (const bad of [
      '{"v":1,"chat":"/a.chat"',
      JSON.stringify({ ...line('/a.chat', 0.5), v: 2 }),
      JSON.stringify({ ...line('/a.chat', 0.5), cost: '0.5' }),
      JSON.stringify({ ...line('/a.chat', 0.5), cost: -1 }),
      JSON.stringify({ ...line('', 0.5) }),
      'null',
    ]) {
      expect(parseLedgerLine(bad), bad).toBeUndefined();
    }
  });
});

describe('UsageTracker and the ledger', () => {
  /** A request of buffer 1 completed with usage; the ledger's text then (empty: none). */
  function finished(options: { ledger?: boolean; filename?: string | null; model?: string }): {
    text: string;
    inLedger: boolean;
  } {
    const state = temp('flemma-state-');
    const tracker = new UsageTracker(
      { lua: { notify: () => undefined }, logger: { warn: () => undefined } } as never,
      () => undefined,
    );
    const prepared = {
      providerName: 'anthropic',
      model: options.model ?? 'claude-sonnet-4-6',
      config: parseConfig(
        options.ledger === undefined ? {} : { usage: { ledger: options.ledger } },
      ),
      editor: {
        facts: {
          filename: options.filename === undefined ? join(state, 'a.chat') : options.filename,
          editor_dirs: { state },
        },
      },
    } as unknown as PreparedRequest;
    tracker.begin(1, prepared).observe({ type: 'usage', usage: { input: 1000, output: 100 } });
    const { record } = tracker.finish(1, true);
    let text = '';
    try {
      text = readFileSync(ledgerPath(state), 'utf8');
    } catch {
      // No ledger.
    }
    return { text, inLedger: record !== undefined && tracker.inLedger(record) };
  }

  it('records a priced request of a chat file unless usage.ledger is false', () => {
    const recorded = finished({});
    expect(parseLedgerLine(recorded.text.trimEnd())).toMatchObject({
      model: 'claude-sonnet-4-6',
      input: 1000,
      output: 100,
    });
    expect(recorded.inLedger).toBe(true);
    for (const options of [{ ledger: false }, { filename: null }, { model: 'no-price-model' }]) {
      expect(finished(options), JSON.stringify(options)).toEqual({ text: '', inLedger: false });
    }
  });
});

describe('appendLedger', () => {
  it('appends one line per request to a file of mode 0600, made on the first line', () => {
    const state = temp('flemma-state-');
    const file = ledgerPath(state);
    appendLedger(state, line('/a.chat', 0.25));
    appendLedger(state, line('/b.chat', 0.5));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines.map((text) => (text === '' ? undefined : parseLedgerLine(text)))).toEqual([
      line('/a.chat', 0.25),
      line('/b.chat', 0.5),
      undefined,
    ]);
  });

  it('rotates the file to .1 once it is past its cap, the older .1 replaced', () => {
    const state = temp('flemma-state-');
    const file = ledgerPath(state);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(`${file}.1`, 'the oldest\n');
    writeFileSync(file, 'x'.repeat(LEDGER_MAX_BYTES - 10) + '\n');
    appendLedger(state, line('/a.chat', 1));
    appendLedger(state, line('/b.chat', 2));
    expect(readFileSync(`${file}.1`, 'utf8')).toMatch(/"chat":"\/a\.chat".*\n$/);
    expect(statSync(`${file}.1`).size).toBeGreaterThan(LEDGER_MAX_BYTES);
    expect(readFileSync(file, 'utf8')).toBe(`${JSON.stringify(line('/b.chat', 2))}\n`);
  });
});

describe('LedgerCosts', () => {
  /** A ledger file of `lines` (text) in a new state directory. */
  function ledger(lines: string[]): string {
    const file = ledgerPath(temp('flemma-state-'));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, lines.map((text) => `${text}\n`).join(''));
    return file;
  }
  const text = (chat: string, cost: number): string => JSON.stringify(line(chat, cost));

  it('sums the cost per chat, skips corrupt lines and leaves a line not ended for later', async () => {
    const file = ledger([text('/a.chat', 0.25), 'not json', text('/b.chat', 1), '{"v":1']);
    appendFileSync(file, text('/a.chat', 0.5).slice(0, 20));
    const costs = new LedgerCosts();
    expect(await costs.update(file)).toBe(true);
    expect(Object.fromEntries(costs.costs)).toEqual({ '/a.chat': 0.25, '/b.chat': 1 });
    appendFileSync(file, `${text('/a.chat', 0.5).slice(20)}\n`);
    expect(await costs.update(file)).toBe(true);
    expect(costs.costs.get('/a.chat')).toBe(0.75);
    expect(await costs.update(file)).toBe(false);
  });

  it('counts each line once when two listings read at once', async () => {
    const file = ledger([text('/a.chat', 1), text('/a.chat', 2)]);
    const costs = new LedgerCosts();
    await Promise.all([costs.update(file), costs.update(file)]);
    expect(costs.costs.get('/a.chat')).toBe(3);
  });

  it('goes on from its mark after a restart, reading only what was appended since', async () => {
    const file = ledger([text('/a.chat', 0.25)]);
    const first = new LedgerCosts();
    await first.update(file);
    const mark = first.mark();
    expect(mark).toMatchObject({ file, offset: statSync(file).size, costs: { '/a.chat': 0.25 } });
    if (mark === undefined) return;
    appendFileSync(file, `${text('/a.chat', 0.5)}\n`);
    // What is before the mark is not read again: a sum changed there stays as it was.
    const fresh = new LedgerCosts();
    fresh.restore({ ...mark, costs: { '/a.chat': 10 } });
    await fresh.update(file);
    expect(fresh.costs.get('/a.chat')).toBe(10.5);
  });

  it('follows a rotation: the rest of .1, then the new file', async () => {
    const file = ledger([text('/a.chat', 1)]);
    const costs = new LedgerCosts();
    await costs.update(file);
    appendFileSync(file, `${text('/a.chat', 2)}\n`);
    renameSync(file, `${file}.1`);
    writeFileSync(file, `${text('/b.chat', 4)}\n`);
    await costs.update(file);
    expect(Object.fromEntries(costs.costs)).toEqual({ '/a.chat': 3, '/b.chat': 4 });
    // A mark of a file neither current nor .1: starts over from what is on disk.
    const lost = new LedgerCosts();
    lost.restore({ file, dev: 0, ino: 1, offset: 5, costs: { '/gone.chat': 9 } });
    await lost.update(file);
    expect(Object.fromEntries(lost.costs)).toEqual({ '/a.chat': 3, '/b.chat': 4 });
  });
});

describe('listChats with the ledger', () => {
  it('shows each chat its ledger sum, by its real path, across a fresh lister (the index)', async () => {
    const dir = temp('flemma-chats-');
    const state = join(dir, 'state');
    mkdirSync(join(dir, 'real'));
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    for (const name of ['paid', 'free', 'mine']) {
      writeFileSync(join(dir, 'real', `${name}.chat`), `@You:\n${name}\n`);
    }
    const real = (name: string): string => realpathSync(join(dir, 'real', `${name}.chat`));
    appendLedger(state, line(real('paid'), 0.01));
    appendLedger(state, line(real('paid'), 0.0023));
    appendLedger(state, line(real('mine'), 0.5));
    // This host's own request of `mine` is in the ledger (counted once); one of `free` is not.
    const own = { filepath: real('mine'), cost: 0.5 } as unknown as RequestRecord;
    const unrecorded = { filepath: real('free'), cost: 0.002 } as unknown as RequestRecord;
    const usage = {
      session: { requests: () => [own, unrecorded] },
      inLedger: (record: RequestRecord) => record === own,
    };
    const params = { dirs: [join(dir, 'link')], children: false, state, cache: join(dir, 'c') };
    const shown = async (lister: ChatLister, records = usage): Promise<string[]> =>
      (await listChats({ chats: lister, usage: records }, params)).chats
        .map((c) => c.line.replace(/ · just now · /, ' · ').replace(/ · \d+ B · .*/, ''))
        .sort();
    expect(await shown(new ChatLister(same))).toEqual([
      'free · default · $0.0020',
      'mine · default · $0.5000',
      'paid · default · $0.0123',
    ]);
    // A fresh host: no session, the sums from the index's mark and the lines appended since
    // (what is before the mark is not read again: blanked in place, it changes nothing).
    const file = ledgerPath(state);
    const fd = openSync(file, 'r+');
    writeSync(fd, ' '.repeat(statSync(file).size - 1));
    closeSync(fd);
    appendLedger(state, line(real('free'), 1));
    const none = { ...usage, session: { requests: () => [] } };
    expect(await shown(new ChatLister(same), none)).toEqual([
      'free · default · $1.00',
      'mine · default · $0.5000',
      'paid · default · $0.0123',
    ]);
  });
});
