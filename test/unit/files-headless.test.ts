// A chat held in a file, run by a host with no Neovim (src/files/): the same loop as a buffer's
// (`<C-]>` with autopilot), against the fake provider; the file is checked byte for byte.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHeadlessHost, type HeadlessHost } from '../../src/files/headless.js';
import type { RunEvent } from '../../src/files/api.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { anthropicReply, anthropicStream } from '../helpers/anthropic-script.js';
import { parseLines } from '../../src/core/chat/parser.js';
import { tempDirs } from '../helpers/temp.js';

const makeDir = tempDirs();
let fake: FakeProvider | undefined;
let host: HeadlessHost | undefined;

afterEach(async () => {
  await host?.close();
  host = undefined;
  await fake?.close();
  fake = undefined;
});

async function setUp(): Promise<{ dir: string; fake: FakeProvider; host: HeadlessHost }> {
  fake = await startFakeProvider();
  const dir = makeDir('flemma-files-');
  host = createHeadlessHost({
    config: {
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      tools: { auto_approve: ['read'], auto_approve_sandboxed: false },
    },
    env: { ANTHROPIC_API_KEY: 'sk-test-key', ANTHROPIC_BASE_URL: fake.url },
  });
  return { dir, fake, host };
}

/** The run's events, and a wait for the first one after now that `matches`. */
function recorder(): {
  events: RunEvent[];
  onEvent: (event: RunEvent) => void;
  next: (matches: (event: RunEvent) => boolean) => Promise<RunEvent>;
} {
  const events: RunEvent[] = [];
  let waiters: { matches: (event: RunEvent) => boolean; resolve: (event: RunEvent) => void }[] = [];
  return {
    events,
    onEvent: (event) => {
      events.push(event);
      const ready = waiters.filter((waiter) => waiter.matches(event));
      waiters = waiters.filter((waiter) => !ready.includes(waiter));
      for (const waiter of ready) waiter.resolve(event);
    },
    next: (matches) =>
      new Promise((resolve) => {
        waiters.push({ matches, resolve });
      }),
  };
}

const READ = {
  id: 'toolu_1',
  name: 'read',
  input: { label: 'notes', path: 'notes.txt', offset: null, limit: null },
};

/** A chat file in `dir` holding one `@You:` message. */
function chatFile(dir: string, text: string, frontmatter = ''): string {
  const path = join(dir, 'job.chat');
  writeFileSync(path, `${frontmatter}@You:\n${text}\n`);
  return path;
}

describe('a chat on a file with no Neovim', () => {
  it('has the partial reply on disk while it streams, and the aborted marker once cancelled', async () => {
    const { dir, fake, host } = await setUp();
    const chat = await host.files.open(chatFile(dir, 'Count.'), { trust: true, cwd: dir });
    const controller = new AbortController();
    const { onEvent, next } = recorder();
    const running = host.files.run(chat, { signal: controller.signal, onEvent });
    const stream = await anthropicStream(await fake.nextRequest());
    const written = next((event) => event.type === 'written');
    await stream.text('one, two');
    await written;
    // What a crash now would leave: the file as last written, a chat with the partial reply.
    const onDisk = parseLines(readFileSync(chat.path, 'utf8').split('\n'));
    expect(onDisk.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(onDisk.messages.map((message) => message.role)).toEqual(['You', 'Assistant']);
    expect(readFileSync(chat.path, 'utf8')).toContain('one, two');
    controller.abort();
    expect(await running).toMatchObject({ kind: 'cancelled', turns: 1 });
    expect(readFileSync(chat.path, 'utf8')).toMatch(
      /@Assistant:\none, two\n\n<!-- flemma:aborted.*-->\n/,
    );
  });

  it('stops where a call waits for approval, its placeholder written; approved, it goes on', async () => {
    const { dir, fake, host } = await setUp();
    const chat = await host.files.open(chatFile(dir, 'List the files.'), { trust: true, cwd: dir });
    const running = host.files.run(chat);
    await anthropicReply(await fake.nextRequest(), 'Listing.', [
      {
        id: 'toolu_b',
        name: 'bash',
        input: { label: 'echo', command: 'echo hi from bash', timeout: null },
      },
    ]);
    expect(await running).toMatchObject({
      kind: 'approval',
      calls: [{ id: 'toolu_b', name: 'bash' }],
      turns: 1,
    });
    expect(readFileSync(chat.path, 'utf8')).toContain('```flemma:tool status=pending');
    // Approved from outside (a parent's task preview), the next run runs it and goes on.
    await host.files.decide(chat, 'toolu_b', 'approved');
    const again = host.files.run(chat);
    const next = await fake.nextRequest();
    expect(JSON.stringify(next.body)).toContain('hi from bash');
    await anthropicReply(next, 'Done.');
    expect(await again).toMatchObject({ kind: 'done', text: 'Done.', turns: 1 });
  });

  it.each([
    ['max_cost', { maxCost: 1e-9 }],
    ['max_turns', { maxTurns: 1 }],
  ] as const)('stops at its own limit (%s) once a reply asked for tools', async (kind, limit) => {
    const { dir, fake, host } = await setUp();
    writeFileSync(join(dir, 'notes.txt'), 'alpha\n');
    const chat = await host.files.open(chatFile(dir, 'Read notes.txt.'), { trust: true, cwd: dir });
    const running = host.files.run(chat, limit);
    await anthropicReply(await fake.nextRequest(), 'Reading.', [READ]);
    expect(await running).toMatchObject({ kind, turns: 1 });
    expect(fake.requests).toHaveLength(1);
  });

  it('fails at once, saying why, when its frontmatter needs Lua', async () => {
    const { dir, host } = await setUp();
    const path = chatFile(dir, 'Hi.', '```lua\nflemma.opt.model = "x"\n```\n');
    const chat = await host.files.open(path, { trust: true, cwd: dir });
    const outcome = await host.files.run(chat);
    expect(outcome).toMatchObject({ kind: 'error', turns: 0 });
    expect(outcome.kind === 'error' ? outcome.message : '').toMatch(/Lua frontmatter needs Neovim/);
  });

  it('fails at once, saying why, when a message has a slash command', async () => {
    const { dir, fake, host } = await setUp();
    const chat = await host.files.open(chatFile(dir, '/thinking off\nHi.'), {
      trust: true,
      cwd: dir,
    });
    const outcome = await host.files.run(chat);
    expect(outcome).toMatchObject({ kind: 'error', turns: 0 });
    expect(outcome.kind === 'error' ? outcome.message : '').toMatch(
      /slash commands: their registry needs Neovim/,
    );
    expect(fake.requests).toHaveLength(0);
  });

  it('runs a tool loop (read, auto-approved) and writes the file', async () => {
    const { dir, fake, host } = await setUp();
    writeFileSync(join(dir, 'notes.txt'), 'alpha\n');
    const path = join(dir, 'job.chat');
    writeFileSync(path, '@You:\nWhat does notes.txt say?\n');
    const chat = await host.files.open(path, { trust: true, cwd: dir });
    const events: RunEvent[] = [];
    const running = host.files.run(chat, { onEvent: (event) => events.push(event) });
    const first = await fake.nextRequest();
    await anthropicReply(first, 'Reading.', [
      {
        id: 'toolu_1',
        name: 'read',
        input: { label: 'notes', path: 'notes.txt', offset: null, limit: null },
      },
    ]);
    const second = await fake.nextRequest();
    await anthropicReply(second, 'It says alpha.');
    const outcome = await running;
    expect(outcome).toMatchObject({ kind: 'done', text: 'It says alpha.', turns: 2 });
    expect(readFileSync(path, 'utf8')).toBe(
      [
        '@You:',
        'What does notes.txt say?',
        '',
        '@Assistant:',
        'Reading.',
        '',
        '**Tool Use:** `read` (`toolu_1`)',
        '',
        '```json',
        '{"label":"notes","path":"notes.txt","offset":null,"limit":null}',
        '```',
        '',
        '@You:',
        '',
        '**Tool Result:** `toolu_1`',
        '',
        '```',
        'alpha',
        '```',
        '',
        '@Assistant:',
        'It says alpha.',
        '',
        '@You:',
        '',
        '',
      ].join('\n'),
    );
    expect(events.map((event) => event.type)).toContain('tool_started');
  });
});
