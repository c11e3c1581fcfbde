// `flemma run FILE.chat` from the shell (docs/cli.md), the built dist/cli.js run as a child
// process against fake Anthropic servers on 127.0.0.1: a reply, a tool loop, a call that waits,
// --dry-run, --json, --max-turns, the trust of the file's frontmatter, what needs Neovim, and an
// interrupt. Each waits on what the child or the server does, never on time.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  anthropicError,
  anthropicMessages,
  anthropicReply,
  anthropicStream,
} from '../helpers/anthropic-script.js';
import { cliHome, flemma, stdoutLine } from '../helpers/cli.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();
let fake: FakeProvider;
let other: FakeProvider;

// Servers of each test's own: a request a failing test left unanswered never reaches the next.
beforeEach(async () => {
  fake = await startFakeProvider();
  other = await startFakeProvider();
});

afterEach(async () => {
  await fake.close();
  await other.close();
});

const home = (lines: readonly string[]) => cliHome(tempDir('flemma-cli-'), lines, fake.url);
const ASK = ['@You:', 'What is in notes.txt?'];
const READ_NOTES = { label: 'notes', path: 'notes.txt', offset: null, limit: null };

/** The `--json` lines as events. */
const eventsOf = (stdout: string) =>
  stdout.split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);

/** The events' types, a run of deltas as one (how the text is cut depends on the timing). */
const typesOf = (events: Record<string, unknown>[]) =>
  events
    .map((event) => event['type'])
    .filter((type, index, all) => !(type === 'delta' && all[index - 1] === 'delta'));

describe('flemma run', () => {
  it('sends the chat, writes the reply into the file and prints it', async () => {
    const h = home(ASK);
    const run = flemma(h, ['run', 'chat.chat']);
    await anthropicReply(await fake.nextRequest(), 'It holds a shopping list.');
    const result = await run;
    expect([result.exitCode, result.stdout]).toEqual([0, 'It holds a shopping list.']);
    expect(h.text()).toContain('@Assistant:\nIt holds a shopping list.');
  });

  it('runs an auto-approved read and sends its result (a tool loop), its events in --json', async () => {
    const h = home(ASK);
    writeFileSync(join(h.dir, 'notes.txt'), 'milk\neggs\n');
    const run = flemma(h, ['run', h.chat, '--json']);
    await anthropicReply(await fake.nextRequest(), 'Reading it.', [
      { id: 'toolu_r1', name: 'read', input: READ_NOTES },
    ]);
    const second = await fake.nextRequest();
    expect(JSON.stringify(anthropicMessages(second).at(-1))).toContain('milk');
    await anthropicReply(second, 'Milk and eggs.');
    const result = await run;
    const events = eventsOf(result.stdout);
    expect(typesOf(events)).toEqual([
      'request',
      'delta',
      'usage',
      'tool_start',
      'tool_end',
      'request',
      'delta',
      'usage',
      'result',
    ]);
    expect(events.find((event) => event['type'] === 'tool_end')).toEqual({
      type: 'tool_end',
      id: 'toolu_r1',
      name: 'read',
      status: 'success',
    });
    expect(events.at(-1)).toMatchObject({ exit_code: 0, text: 'Milk and eggs.', turns: 2 });
    expect(h.text()).toContain('**Tool Result:** `toolu_r1`');
  });

  it('stops with exit code 3 at a call that waits for approval, its placeholder in the file', async () => {
    const h = home(ASK);
    // Not approved in the sandbox either: the call waits for the user.
    h.config({ tools: { auto_approve_sandboxed: false } });
    const run = flemma(h, ['run', h.chat]);
    await anthropicReply(await fake.nextRequest(), '', [
      { id: 'toolu_b1', name: 'bash', input: { label: 'list', command: 'ls', timeout: null } },
    ]);
    const result = await run;
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('waiting for approval: bash (toolu_b1)');
    expect(h.text()).toMatch(/\*\*Tool Result:\*\* `toolu_b1`\n\n```flemma:tool status=pending/);
  });

  it('--dry-run prints the request body, sends nothing and leaves the file as it was', async () => {
    const h = home(ASK);
    h.config({ model: 'claude-haiku-4-5' });
    const before = h.text();
    const sent = fake.requests.length;
    const result = await flemma(h, ['run', h.chat, '--dry-run']);
    expect(result.exitCode).toBe(0);
    const body = JSON.parse(result.stdout) as { model: string; messages: unknown[] };
    expect(body.model).toBe('claude-haiku-4-5');
    expect(JSON.stringify(body.messages)).toContain('What is in notes.txt?');
    expect([fake.requests.length, h.text()]).toEqual([sent, before]);
    // --model goes over the configuration file.
    const overridden = await flemma(h, ['run', h.chat, '--dry-run', '--model', 'claude-opus-4-5']);
    expect((JSON.parse(overridden.stdout) as { model: string }).model).toBe('claude-opus-4-5');
  });

  it('fills a trusted chat’s tags that name its string variables without Neovim', async () => {
    const h = home(['```json', '{ "name": "Ana" }', '```', '@You:', 'Hello {{ name }}!']);
    const result = await flemma(h, ['run', h.chat, '--dry-run', '--trust']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Hello Ana!');
    // Anything more than a variable's name still needs Lua.
    const other = home([
      '```json',
      '{ "name": "Ana" }',
      '```',
      '@You:',
      'Hello {{ name:upper() }}',
    ]);
    const refused = await flemma(other, ['run', other.chat, '--dry-run', '--trust']);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('templates');
  });

  it('--json prints one event per line', async () => {
    const h = home(ASK);
    const run = flemma(h, ['run', h.chat, '--json']);
    await anthropicReply(await fake.nextRequest(), 'Short answer.');
    const result = await run;
    const events = eventsOf(result.stdout);
    expect(typesOf(events)).toEqual(['request', 'delta', 'usage', 'result']);
    expect(events.at(-1)).toMatchObject({
      outcome: 'done',
      exit_code: 0,
      text: 'Short answer.',
      turns: 1,
    });
  });

  it('--max-turns stops with exit code 4 before a request past the limit', async () => {
    const h = home(ASK);
    writeFileSync(join(h.dir, 'notes.txt'), 'milk\n');
    const run = flemma(h, ['run', h.chat, '--max-turns', '1']);
    await anthropicReply(await fake.nextRequest(), '', [
      { id: 'toolu_r2', name: 'read', input: READ_NOTES },
    ]);
    const result = await run;
    expect([result.exitCode, fake.requests.length]).toEqual([4, 1]);
    // The call the last reply asked for is left for the next run.
    expect(h.text()).toContain('**Tool Use:** `read` (`toolu_r2`)');
    expect(h.text()).not.toContain('**Tool Result:**');
  });

  const endpoint = (url: string) => [
    '```json',
    JSON.stringify({
      flemma: { model: 'claude-haiku-4-5', parameters: { anthropic: { base_url: url } } },
    }),
    '```',
    ...ASK,
  ];

  it("ignores an untrusted file's endpoint and says so, applies its model; --trust applies both", async () => {
    const h = home(endpoint(other.url));
    const untrusted = flemma(h, ['run', h.chat]);
    const request = await fake.nextRequest();
    // An option any file may set applies all the same.
    expect((request.body as { model: string }).model).toBe('claude-haiku-4-5');
    await anthropicReply(request, 'From the configured server.');
    const first = await untrusted;
    expect(first.exitCode).toBe(0);
    expect(first.stderr).toContain('chat.chat is not trusted');
    expect(first.stderr).toContain('flemma.opt.parameters.anthropic.base_url');

    const again = home(endpoint(other.url));
    const trusted = flemma(again, ['run', again.chat, '--trust']);
    await anthropicReply(await other.nextRequest(), 'From the file’s server.');
    expect((await trusted).exitCode).toBe(0);
  });

  it.each([
    [
      ['```lua', 'flemma.opt.tools.auto_approve = function() return true end', '```', ...ASK],
      "frontmatter line 2: 'function'",
    ],
    [['```lua', 'flemma.opt.tools = { "my_lua_tool" }', '```', ...ASK], "'my_lua_tool'"],
    [['@You:', 'Hello {{ name }}'], 'templates'],
    [[...ASK, '@Assistant:', 'A list.', '@You:', ''], 'nothing new to send'],
  ])(
    'stops before sending with exit code 2 when the chat cannot run here (%j)',
    async (lines, said) => {
      const h = home(lines);
      const result = await flemma(h, ['run', h.chat, '--trust']);
      expect([result.exitCode, result.stdout]).toEqual([2, '']);
      expect(result.stderr).toContain(said);
      expect(fake.requests.length).toBe(0);
    },
  );

  it('exits with 1 on a provider error and prints no secret', async () => {
    const h = home(ASK);
    const run = flemma(h, ['run', h.chat]);
    const key = h.env['ANTHROPIC_API_KEY'] ?? '';
    await anthropicError(await fake.nextRequest(), 401, 'authentication_error', `bad key ${key}`);
    const result = await run;
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('flemma: error:');
    expect(result.stderr + result.stdout).not.toContain(key);
  });

  it('on SIGINT cancels, keeps the partial reply marked as aborted, and exits with 130', async () => {
    const h = home(ASK);
    const run = flemma(h, ['run', h.chat, '--json']);
    const stream = await anthropicStream(await fake.nextRequest());
    await stream.text('Half of the ans');
    await stdoutLine(run, (line) => line.includes('"delta"'));
    run.kill('SIGINT');
    const result = await run;
    expect(result.exitCode).toBe(130);
    expect(h.text()).toContain('Half of the ans');
    expect(h.text()).toContain('<!-- flemma:aborted');
  });
});
