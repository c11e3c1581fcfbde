// A chat held in a file, run by a host with no Neovim (src/files/): the same loop as a buffer's
// (`<C-]>` with autopilot), against the fake provider; the file is checked byte for byte.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHeadlessHost, type HeadlessHost } from '../../src/files/headless.js';
import type { RunEvent } from '../../src/files/api.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { anthropicReply } from '../helpers/anthropic-script.js';
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
      tools: { auto_approve: ['read'] },
    },
    env: { ANTHROPIC_API_KEY: 'sk-test-key', ANTHROPIC_BASE_URL: fake.url },
  });
  return { dir, fake, host };
}

describe('a chat on a file with no Neovim', () => {
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
