// The recovery record (src/core/chat/recovery.ts) and its writer (src/host/recovery.ts): names,
// bases, the ending of a cut-off reply, and the pace of the writes on a manual clock.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  RECOVERED_MESSAGE,
  cutOffEnding,
  linesHash,
  parseRecord,
  recordName,
  recordStart,
} from '../../src/core/chat/recovery.js';
import { silentLogger } from '../../src/core/log.js';
import { RecoveryService, type RecoveryTimers } from '../../src/host/recovery.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the record', () => {
  it('is named from the full path: two chats of one name never share a record', () => {
    const a = recordName('/home/me/a/notes.chat');
    const b = recordName('/home/me/b/notes.chat');
    expect(a).toMatch(/^notes\.chat-[0-9a-f]{16}\.json$/);
    expect(b).toMatch(/^notes\.chat-[0-9a-f]{16}\.json$/);
    expect(a).not.toBe(b);
    expect(recordName('/home/me/a/notes.chat')).toBe(a);
    // As Lua sees the name: one `_` per byte outside ASCII (é is two bytes).
    expect(recordName('/x/é b.chat')).toMatch(/^___b\.chat-/);
  });

  it('hashes lines as Lua does: joined by newlines', () => {
    const expected = createHash('sha256').update('@You:\nhé').digest('hex');
    expect(linesHash(['@You:', 'hé'])).toBe(expected);
  });

  it('starts at the chat as sent, or continues an earlier record the chat still continues', () => {
    const chat = ['@You:', 'one'];
    const fresh = recordStart(chat, ['', '@Assistant:'], undefined);
    expect(fresh).toEqual({
      base: { rows: 2, sha256: linesHash(chat) },
      before: '\n\n@Assistant:',
    });
    // The earlier reply never reached the file: the new record keeps its base and carries it.
    const later = [...chat, '', '@Assistant:', 'first reply', '', '@You:', 'two'];
    const continued = recordStart(later, ['', '@Assistant:'], fresh.base);
    expect(continued.base).toEqual(fresh.base);
    expect(continued.before).toBe('\n\n@Assistant:\nfirst reply\n\n@You:\ntwo\n\n@Assistant:');
    // A chat that no longer begins with the earlier base starts afresh.
    const other = recordStart(['@You:', 'else'], ['', '@Assistant:'], fresh.base);
    expect(other.base.rows).toBe(2);
    expect(other.base.sha256).toBe(linesHash(['@You:', 'else']));
  });

  it('ends a cut-off reply with the interrupted marker and the next @You:', () => {
    expect(cutOffEnding('Once upon a time')).toBe(
      `\n\n<!-- flemma:aborted: ${RECOVERED_MESSAGE} -->\n\n@You:\n`,
    );
    expect(cutOffEnding('line\n')).toBe(
      `\n<!-- flemma:aborted: ${RECOVERED_MESSAGE} -->\n\n@You:\n`,
    );
    expect(cutOffEnding('')).toBe('');
  });

  it('refuses what another version or something else wrote', () => {
    expect(parseRecord('not json')).toBeUndefined();
    expect(parseRecord(JSON.stringify({ version: 2 }))).toBeUndefined();
  });
});

/** Timers a test moves by hand; `due()` lists what is scheduled. */
function manualTimers(): RecoveryTimers & {
  at: number;
  scheduled: { fn: () => void; ms: number; cancelled: boolean }[];
} {
  const timers = {
    at: 0,
    scheduled: [] as { fn: () => void; ms: number; cancelled: boolean }[],
    now: () => timers.at,
    setTimeout: (fn: () => void, ms: number) => {
      const entry = { fn, ms, cancelled: false };
      timers.scheduled.push(entry);
      return {
        cancel: () => {
          entry.cancelled = true;
        },
      };
    },
  };
  return timers;
}

/**
 * A recovery service on manual timers in a fresh directory, and the record it began for buffer
 * `bufnr` of the chat `path` (`@You:` "Hi"), with the path of the record's file.
 */
function begun(bufnr: number, path: string) {
  const dir = mkdtempSync(join(tmpdir(), 'flemma-recovery-'));
  dirs.push(dir);
  const timers = manualTimers();
  const service = new RecoveryService(silentLogger, timers);
  const record = service.begin({
    bufnr,
    dir,
    path,
    lines: ['@You:', 'Hi'],
    openingTail: ['', '@Assistant:'],
  });
  return { dir, timers, service, path, record, file: join(dir, recordName(path)) };
}

/** Runs the record's first scheduled write and waits for its file. */
async function firstWrite(timers: ReturnType<typeof manualTimers>, file: string): Promise<void> {
  timers.scheduled[0]?.fn();
  await vi.waitFor(() => {
    expect(existsSync(file)).toBe(true);
  });
}

describe('the writer', () => {
  it('writes at once, then at most once a second, atomically; the end at once', async () => {
    const { dir, timers, service, path, record, file } = begun(1, '/work/story.chat');
    const read = (): { reply: string; complete: boolean; ending: string } =>
      JSON.parse(readFileSync(file, 'utf8')) as {
        reply: string;
        complete: boolean;
        ending: string;
      };

    record.append('\nOne', 'One');
    expect(timers.scheduled.map((entry) => entry.ms)).toEqual([0]);
    await firstWrite(timers, file);
    expect(read().reply).toBe('\nOne');

    // 200 ms later: the next write waits for the rest of the second, and more text joins it.
    timers.at = 200;
    record.append(' two', 'One two');
    record.append(' three', 'One two three');
    expect(timers.scheduled.map((entry) => entry.ms)).toEqual([0, 800]);
    timers.at = 1000;
    timers.scheduled[1]?.fn();
    await vi.waitFor(() => {
      expect(read().reply).toBe('\nOne two three');
    });
    expect(read().complete).toBe(false);
    expect(read().ending).toBe(cutOffEnding('One two three'));

    // A thinking block written where it began, above the text (`ReplyLayout`'s insert).
    const content = '<thinking>\nHm.\n</thinking>\n\nOne two three';
    record.insert(1, '\n<thinking>\nHm.\n</thinking>\n\n', content);
    // The end: written now, whatever the pace, and settled before the reply is over.
    timers.at = 1100;
    record.append('\n\n@You:\n', content);
    service.end(1, record);
    await service.settled(1);
    expect(read()).toMatchObject({
      reply: '\n\n<thinking>\nHm.\n</thinking>\n\nOne two three\n\n@You:\n',
      complete: true,
      ending: '',
    });
    // No temporary file is left beside it.
    expect(readdirSync(dir)).toEqual([recordName(path)]);
  });

  it('writes synchronously what a write in flight would have written when Neovim goes away', async () => {
    const { timers, service, record, file } = begun(2, '/work/sync.chat');
    record.append('\nAll of it', 'All of it');
    // The base is ready once the record had its first look at the directory.
    await firstWrite(timers, file);
    timers.at = 100;
    record.append(' and more', 'All of it and more');
    service.flushSync();
    const written = JSON.parse(readFileSync(file, 'utf8')) as {
      reply: string;
    };
    expect(written.reply).toBe('\nAll of it and more');
  });

  it('keeps what the escape holds back: a crash writes it, escaped, before the marker', async () => {
    const { timers, service, record, file } = begun(3, '/work/held.chat');
    record.append('\nSure.\n', 'Sure.\n');
    await firstWrite(timers, file);
    // `@You:` arrived but its line has not ended: nothing is written to the buffer yet.
    record.append('', 'Sure.\n', '\\@You:');
    service.flushSync();
    const written = JSON.parse(readFileSync(file, 'utf8')) as {
      reply: string;
      ending: string;
    };
    expect(written.reply).toBe('\nSure.\n');
    expect(written.ending).toBe(
      `\\@You:\n\n<!-- flemma:aborted: ${RECOVERED_MESSAGE} -->\n\n@You:\n`,
    );
  });
});
