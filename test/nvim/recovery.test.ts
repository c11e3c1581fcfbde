// Crash-safe streaming, end to end (docs/context.md, "Recovery after a crash"): a reply streams
// from a fake Anthropic server, the host or Neovim is killed with SIGKILL once the reply's record
// holds chunk k, and a fresh Neovim with the same state directory offers and inserts what arrived.
// No timing: each wait is on a state (the record or the file holding a chunk) or an event.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  endMessage as finish,
  textDelta,
  MESSAGE_START,
  textDeltas,
} from '../helpers/anthropic-script.js';
import { type Driver, type Notification } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeProvider, type FakeStream, startFakeProvider } from '../helpers/fake-provider.js';

const homes: string[] = [];
let fake: FakeProvider | undefined;

// Declared before the launcher's: after hooks run last-declared first, so every Neovim has quit
// before its directory is removed and the shared fake provider stops.
afterEach(async () => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  await fake?.close();
  fake = undefined;
});

const launch = launcher();

const CHAT = ['@You:', 'Tell me a long story'];
const MARKER =
  '<!-- flemma:aborted: Response interrupted: Neovim or Flemma stopped while it streamed. -->';

/** Chunk n of the reply: one line of its own, so that what arrived reads as whole lines. */
function chunk(n: number): string {
  return `chunk ${String(n).padStart(2, '0')} of the story\n`;
}

async function start(options: { home?: string; setup?: string } = {}): Promise<Driver> {
  fake ??= await startFakeProvider();
  const { d } = await launch({
    provider: fake,
    ...(options.home === undefined ? {} : { home: options.home }),
    ...(options.setup === undefined ? {} : { setup: options.setup }),
  });
  if (options.home === undefined) homes.push(d.home);
  return d;
}

/** The record file of the chat `name` (in the work directory). */
function recordFile(d: Driver, name: string): Promise<string> {
  return d.lua<string>(
    'return require("flemma.chat.recovery").record_file(vim.fn.fnamemodify(..., ":p"))',
    name,
  );
}

/** Waits until the file `path` holds `text` (a state Neovim checks as it runs, not a sleep). */
async function waitForFileText(d: Driver, path: string, text: string): Promise<void> {
  await d.waitUntil(
    `local path, text = ...
    local handle = io.open(path, "rb")
    if not handle then return false end
    local content = handle:read("*a")
    handle:close()
    return content:find(vim.json.encode(text):sub(2, -2), 1, true) ~= nil
      or content:find(text, 1, true) ~= nil`,
    { args: [path, text] },
  );
}

/** Starts a reply and sends chunks 1..n of it. */
async function streamChunks(d: Driver, n: number): Promise<{ stream: FakeStream; sent: string[] }> {
  if (fake === undefined) throw new Error('no fake provider');
  await d.press('<C-]>');
  const request = await fake.nextRequest({ path: '/v1/messages' });
  const stream = request.stream();
  await stream.sse('message_start', MESSAGE_START);
  await textDeltas(stream, []);
  const sent: string[] = [];
  for (let i = 1; i <= n; i++) {
    sent.push(chunk(i));
    await textDelta(stream, chunk(i));
  }
  return { stream, sent };
}

async function hostPid(d: Driver): Promise<number> {
  return d.lua<number>(`return vim.rpcrequest(require("flemma.host").ensure(), "ping").pid`);
}

/** The reply's lines between `@Assistant:` and the marker (or the next `@You:`), as text. */
function replyText(lines: string[]): { text: string; after: string[] } {
  const from = lines.indexOf('@Assistant:');
  const rest = lines.slice(from + 1);
  const end = rest.findIndex((line) => line.startsWith('<!-- flemma:aborted') || line === '@You:');
  return { text: rest.slice(0, end).join('\n'), after: rest.slice(end) };
}

/** Every chunk up to `k` is in `text`, and `text` is what was sent up to some chunk. */
function expectPrefixOfSent(text: string, sent: string[], k: number): void {
  const prefixes: string[] = [];
  for (let j = k; j <= sent.length; j++) prefixes.push(sent.slice(0, j).join('').trimEnd());
  expect(prefixes).toContain(text.trimEnd());
}

/** Opens the chat in a fresh Neovim on the same state and waits for the offer. */
async function reopen(home: string, setup?: string): Promise<{ d: Driver; buf: number }> {
  const d = await start(setup === undefined ? { home } : { home, setup });
  const buf = await d.openChat('story.chat');
  await d.waitForNotification(/:Flemma recover inserts it/);
  return { d, buf };
}

/**
 * `:Flemma recover` in the Neovim started `again`: the chat, then the reply cut where it was
 * interrupted (a prefix of the `sent` chunks, at least `chunks` of them) and the marker.
 */
async function recovered(
  again: { d: Driver; buf: number },
  sent: string[],
  chunks: number,
): Promise<void> {
  await again.d.command('Flemma recover');
  const lines = await again.d.lines(again.buf);
  expect(lines.slice(0, 4)).toEqual([...CHAT, '', '@Assistant:']);
  const { text, after } = replyText(lines);
  expectPrefixOfSent(text, sent, chunks);
  expect(after).toEqual([MARKER, '', '@You:', '']);
}

/** Neovim with the story chat open, its record's path, and `<C-]>` streaming `count` chunks. */
async function streaming(
  count: number,
): Promise<{ d: Driver; record: string } & Awaited<ReturnType<typeof streamChunks>>> {
  const d = await start();
  await d.openChat('story.chat', CHAT);
  const record = await recordFile(d, 'story.chat');
  return { d, record, ...(await streamChunks(d, count)) };
}

/** Kills the host while the reply streams; what Flemma says about it. */
async function hostKilledMidReply(d: Driver): Promise<Notification> {
  const notes = d.notificationCount;
  const exited = d.waitForEvent('FlemmaHostExited');
  process.kill(await hostPid(d), 'SIGKILL');
  await exited;
  return d.waitForNotification(/the host stopped while the reply streamed/, { after: notes });
}

describe('recovery after a crash', () => {
  it('keeps a reply whose host was killed mid-stream; :Flemma recover inserts it, one undo step', async () => {
    const { d, record, sent, stream } = await streaming(6);
    await waitForFileText(d, record, chunk(6).trimEnd());
    // More arrives after the state seen: it may or may not be kept.
    sent.push(chunk(7));
    await textDelta(stream, chunk(7));
    const exited = d.waitForEvent('FlemmaHostExited');
    process.kill(await hostPid(d), 'SIGKILL');
    await exited;
    // The buffer was not written: the file has only what the user wrote.
    expect(readFileSync(`${d.home}/work/story.chat`, 'utf8')).toBe(CHAT.join('\n') + '\n');
    await d.quit({ keepHome: true });

    const again = await reopen(d.home);
    expect(await again.d.lines(again.buf)).toEqual(CHAT);
    await recovered(again, sent, 6);
    // One undo step takes it all back; nothing the user wrote changed.
    await again.d.press('u');
    expect(await again.d.lines(again.buf)).toEqual(CHAT);
  });

  it('keeps a reply whose Neovim was killed mid-stream', async () => {
    const { d, record, sent } = await streaming(4);
    await waitForFileText(d, record, chunk(4).trimEnd());
    await d.kill();

    const again = await reopen(d.home);
    await recovered(again, sent, 4);
    // Written, the chat holds the reply and the record goes.
    await again.d.command('write');
    await again.d.waitUntil('return vim.uv.fs_stat(...) == nil', { args: [record] });
  });

  it('offers a finished reply quit with :q! before it was written, without a marker', async () => {
    const { d, record, stream } = await streaming(2);
    await finish(stream);
    await d.waitForEvent('FlemmaRequestFinished');
    // The finished reply's record is on disk (it goes there after the event, or at the latest
    // when the host exits; this Neovim's host may outlive it by a moment).
    await d.waitUntil(
      'local f = io.open(...); if not f then return false end; local s = f:read("*a"); f:close(); return s:find(\'"complete":true\', 1, true) ~= nil',
      { args: [record] },
    );
    const expected = await d.lines();
    await d.quit({ keepHome: true });

    const again = await reopen(d.home);
    await again.d.command('Flemma recover');
    expect(await again.d.lines(again.buf)).toEqual(expected);
    expect(expected.slice(-3)).toEqual(['', '@You:', '']);
  });

  it('offers nothing after a normal save', async () => {
    const { d, record, stream } = await streaming(2);
    await finish(stream);
    await d.waitForEvent('FlemmaRequestFinished');
    // The reply's last record goes to disk after the event (nothing waits for it).
    await d.waitUntil('return vim.uv.fs_stat(...) ~= nil', { args: [record] });
    await d.command('write');
    await d.waitUntil('return vim.uv.fs_stat(...) == nil', { args: [record] });
    await d.quit({ keepHome: true });

    const again = await start({ home: d.home });
    await again.openChat('story.chat');
    const before = again.notificationCount;
    await again.command('Flemma recover');
    const note = await again.waitForNotification(/recover/, { after: before });
    expect(note.message).toMatch(/nothing to recover for story\.chat/);
    expect(again.notifications().some((n) => /Flemma recover inserts it/.test(n.message))).toBe(
      false,
    );
  });

  it('with editing.auto_write, the file itself holds the partial reply; recover adds only the rest', async () => {
    const setup = 'require("flemma").setup({ editing = { auto_write = true } })';
    const d = await start({ setup });
    await d.openChat('story.chat', CHAT);
    const file = `${d.home}/work/story.chat`;
    const { sent } = await streamChunks(d, 5);
    await waitForFileText(d, file, chunk(5).trimEnd());
    await d.kill();
    const onDisk = readFileSync(file, 'utf8').split('\n');
    expect(onDisk.slice(0, 4)).toEqual([...CHAT, '', '@Assistant:']);
    expectPrefixOfSent(replyText(onDisk).text, sent, 5);

    const again = await reopen(d.home, setup);
    await again.d.command('Flemma recover');
    const lines = await again.d.lines(again.buf);
    // Not repeated: one `@Assistant:`, the reply once, then the marker.
    expect(lines.filter((line) => line === '@Assistant:')).toHaveLength(1);
    const { text, after } = replyText(lines);
    expectPrefixOfSent(text, sent, 5);
    expect(after).toEqual([MARKER, '', '@You:', '']);
  });

  it('with editing.auto_write, a finished reply is in the file and leaves no record', async () => {
    const d = await start({
      setup: 'require("flemma").setup({ editing = { auto_write = true } })',
    });
    await d.openChat('story.chat', CHAT);
    const record = await recordFile(d, 'story.chat');
    const { stream } = await streamChunks(d, 3);
    await finish(stream);
    await d.waitForEvent('FlemmaRequestFinished');
    // The write after the reply (the file now holds it) removed the record.
    await d.waitUntil('return vim.uv.fs_stat(...) == nil', { args: [record] });
    const expected = await d.lines();
    expect(readFileSync(`${d.home}/work/story.chat`, 'utf8')).toBe(expected.join('\n') + '\n');
    expect(expected).toContain(chunk(3).trimEnd());
  });

  it('puts the reply at the end, and says so, when the chat changed since', async () => {
    const { d, record, sent } = await streaming(3);
    await waitForFileText(d, record, chunk(3).trimEnd());
    await d.kill();
    // Meanwhile, the file was edited elsewhere.
    const edited = ['@You:', 'Tell me a short story instead'];
    d.writeFile('story.chat', edited.join('\n') + '\n');

    const again = await reopen(d.home);
    const before = again.d.notificationCount;
    await again.d.command('Flemma recover');
    await again.d.waitForNotification(/changed since the reply started/, { after: before });
    const lines = await again.d.lines(again.buf);
    expect(lines.slice(0, 4)).toEqual([...edited, '', '@Assistant:']);
    expectPrefixOfSent(replyText(lines).text, sent, 3);
  });

  it(':Flemma recover discard deletes the record', async () => {
    const { d, record } = await streaming(2);
    await waitForFileText(d, record, chunk(2).trimEnd());
    await d.kill();

    const again = await reopen(d.home);
    await again.d.command('Flemma recover discard');
    expect(existsSync(record)).toBe(false);
    expect(await again.d.lines(again.buf)).toEqual(CHAT);
  });
});

describe('a host that stops while a reply streams', () => {
  /** The chat after chunks 1..n and the interrupted marker, as a cancel would have left it. */
  const cutOff = (n: number): string[] => [
    ...CHAT,
    '',
    '@Assistant:',
    ...Array.from({ length: n }, (_, i) => chunk(i + 1).trimEnd()),
    '',
    MARKER,
    '',
    '@You:',
    '',
  ];

  async function killMidReply(d: Driver, n: number): Promise<number> {
    await d.openChat('story.chat', CHAT);
    await d.waitForEvent('FlemmaBootComplete');
    await streamChunks(d, n);
    await d.waitUntil('return vim.fn.search(..., "n") > 0', { args: [chunk(n).trimEnd()] });
    const notes = d.notificationCount;
    const exited = d.waitForEvent('FlemmaHostExited');
    process.kill(await hostPid(d), 'SIGKILL');
    await exited;
    return notes;
  }

  it('puts back from the record what had not reached the chat yet, and says so', async () => {
    const { d, record } = await streaming(2);
    await waitForFileText(d, record, chunk(2).trimEnd());
    await d.waitUntil('return vim.fn.search(..., "n") > 0', { args: [chunk(2).trimEnd()] });
    // The host had recorded chunk 3 and died before it reached the buffer (nothing more streams,
    // so the host writes the record no more).
    const kept = JSON.parse(readFileSync(record, 'utf8')) as { reply: string; ending: string };
    expect(kept.reply.endsWith(chunk(2))).toBe(true);
    kept.reply += chunk(3);
    writeFileSync(record, JSON.stringify(kept));
    const note = await hostKilledMidReply(d);
    expect(note.message).toMatch(/bytes that had not reached the chat, from its recovery record/);
    expect(note.message).toContain(':Flemma recover');
    expect(await d.lines()).toEqual(cutOff(3));
    await d.press('u');
    expect(await d.lines()).toEqual(CHAT);
  });

  it('puts the chat back as it was when nothing of the reply arrived', async () => {
    const d = await start();
    await d.openChat('story.chat', CHAT);
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    await fake?.nextRequest({ path: '/v1/messages' });
    await d.waitUntil('return vim.fn.getline("$") == "@Assistant:"');
    const note = await hostKilledMidReply(d);
    expect(note.message).toMatch(/before any of it arrived; the chat is as it was/);
    expect(await d.lines()).toEqual(CHAT);
  });

  for (const recovery of [true, false]) {
    it(`marks the half reply as interrupted where it ended, and says so (context.recovery = ${String(recovery)})`, async () => {
      const d = await start({
        setup: `require("flemma").setup({ context = { recovery = ${String(recovery)} } })`,
      });
      const notes = await killMidReply(d, 3);
      const note = await d.waitForNotification(/the host stopped while the reply streamed/, {
        after: notes,
      });
      expect(note.message).toContain('story.chat');
      expect(note.message).toMatch(/marked as interrupted\. Send again/);
      expect(await d.lines()).toEqual(cutOff(3));
      expect(await d.lua('return vim.bo.modifiable')).toBe(true);
      // The marker is part of the reply's undo step: one u and the chat is as the user wrote it.
      await d.press('u');
      expect(await d.lines()).toEqual(CHAT);
    });
  }
});
