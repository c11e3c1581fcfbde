// The stream watchdog and answers that are not streams (docs/requests.md), end to end through
// each provider's real SDK against the fake server: a stream that goes quiet ends as a failed
// request after `parameters.stream_idle_timeout`, keeping what arrived; an HTML page where a
// stream was expected fails at once, summarised, and is not tried again.
import { describe, expect, it } from 'vitest';
import { MESSAGE_START, textDeltas, textDelta } from '../helpers/anthropic-script.js';
import { launcher, type Session } from '../helpers/e2e.js';
import { type Driver } from '../helpers/driver.js';
import { type FakeProvider, type FakeRequest, type FakeStream } from '../helpers/fake-provider.js';

const launch = launcher();

interface Case {
  provider: string;
  /** The name the provider's messages start with. */
  label: string;
  env: Record<string, string>;
  /** Lua source of the provider's own parameters table, given the fake server's URL. */
  own: (url: string) => string;
  model?: string;
  path: RegExp;
  /** Writes the start of a reply whose text is `Half a rep`. */
  begin: (stream: FakeStream) => Promise<void>;
}

const CASES: Case[] = [
  {
    provider: 'anthropic',
    label: 'anthropic',
    env: { ANTHROPIC_API_KEY: 'sk-ant-secret-key' },
    own: (url) => `{ base_url = "${url}" }`,
    path: /^\/v1\/messages/,
    begin: async (stream) => {
      await stream.sse('message_start', MESSAGE_START);
      await textDeltas(stream, []);
      await textDelta(stream, 'Half a rep');
    },
  },
  {
    provider: 'openai',
    label: 'openai',
    env: { OPENAI_API_KEY: 'sk-openai-secret-key' },
    own: (url) => `{ base_url = "${url}/v1" }`,
    path: /^\/v1\/responses/,
    begin: async (stream) => {
      const response = { id: 'resp_1', object: 'response', model: 'gpt-5.4', output: [] };
      await stream.sse('response.created', {
        type: 'response.created',
        sequence_number: 1,
        response: { ...response, status: 'in_progress' },
      });
      await stream.sse('response.output_text.delta', {
        type: 'response.output_text.delta',
        sequence_number: 2,
        item_id: 'm',
        output_index: 0,
        content_index: 0,
        delta: 'Half a rep',
      });
    },
  },
  {
    provider: 'openai_compatible',
    label: 'compatible',
    env: {},
    own: (url) => `{ base_url = "${url}/v1" }`,
    model: 'qwen3:8b',
    path: /^\/v1\/chat\/completions/,
    begin: async (stream) => {
      await stream.sse(undefined, {
        id: 'chatcmpl-fake',
        object: 'chat.completion.chunk',
        created: 0,
        model: 'qwen3:8b',
        choices: [
          {
            index: 0,
            delta: { role: 'assistant', content: 'Half a rep' },
            finish_reason: null,
          },
        ],
      });
    },
  },
  {
    provider: 'gemini',
    label: 'gemini',
    env: { GEMINI_API_KEY: 'gemini-secret-key' },
    own: (url) => `{ base_url = "${url}" }`,
    path: /:streamGenerateContent/,
    begin: async (stream) => {
      await stream.sse(undefined, {
        candidates: [{ content: { role: 'model', parts: [{ text: 'Half a rep' }] } }],
      });
    },
  },
];

/** A Neovim whose provider is `c`'s at the fake server, with these general parameters. */
function start(c: Case, parameters: string): Promise<Session> {
  const model = c.model === undefined ? '' : `model = "${c.model}", `;
  return launch({
    key: false,
    env: c.env,
    config: (fake) => `{ provider = "${c.provider}", ${model}parameters = {
      ${parameters}, ${c.provider} = ${c.own(fake.url)} } }`,
  });
}

/** `<C-]>` on the chat `name` asking `Hello` (Neovim as `start` sets it up); the request sent. */
async function sent(
  c: Case,
  parameters: string,
  name: string,
): Promise<{ d: Driver; f: FakeProvider; buf: number; request: FakeRequest }> {
  const { d, f } = await start(c, parameters);
  const buf = await d.openChat(name, ['@You:', 'Hello']);
  await d.press('<C-]>');
  return { d, f, buf, request: await f.nextRequest({ path: c.path }) };
}

const HUGE = 'stream_idle_timeout = 100000, timeout = 100000';

const PAGE =
  '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Guest Wi-Fi &amp; Login</title>' +
  '<script>var portal = "<b>";</script><style>body { color: red }</style></head>\n' +
  '<body><h1>Welcome</h1><p>Accept the terms to continue.</p>\n';

describe.each(CASES)('through $provider', (c) => {
  it('a stream that stalls ends as failed: the reply so far kept and marked, the buffer unlocked', async () => {
    const { d, f, buf, request } = await sent(
      c,
      'stream_idle_timeout = 1, timeout = 100000',
      'stall.chat',
    );
    const stream = request.stream();
    await c.begin(stream);
    await d.lua(
      `local bufnr = ...
      vim.wait(5000, function()
        return vim.api.nvim_buf_get_lines(bufnr, -2, -1, false)[1] == "Half a rep"
      end, 5)`,
      buf,
    );
    // Nothing more comes: no byte, no end.
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const message = `${c.label} (127.0.0.1:${String(f.port)}): stalled: no data for 1 s. If the model pauses longer than that, raise parameters.stream_idle_timeout.`;
    expect(await d.lines(buf)).toEqual([
      '@You:',
      'Hello',
      '',
      '@Assistant:',
      'Half a rep',
      '',
      `<!-- flemma:aborted: Response interrupted: ${message} -->`,
      '',
      '@You:',
      '',
    ]);
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(true);
    expect(d.notifications().filter((n) => n.level === 4)).toEqual([
      { level: 4, message: `Flemma: ${message}` },
    ]);
    // The connection was closed, and the request was not made again.
    expect(await stream.closed).toBe('client');
    expect(f.requests).toHaveLength(1);
  });

  it('an HTML page where a stream was expected fails at once, summarised, without a retry', async () => {
    // Timeouts far beyond the test's own: passing means the page was refused at once.
    const { d, f, buf, request } = await sent(c, HUGE, 'page.chat');
    const page = request.begin(200, { 'content-type': 'text/html; charset=utf-8' });
    // The page never ends, as a captive portal's may not.
    await page.write(PAGE);
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const errors = d.notifications().filter((n) => n.level === 4);
    expect(errors.map((n) => n.message)).toEqual([
      `Flemma: ${c.label} (127.0.0.1:${String(f.port)}): HTTP 200 with content type text/html, not a stream: "Guest Wi-Fi & Login". Check the base URL, and any proxy or login page on the way.`,
    ]);
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(true);
    expect(await page.closed).toBe('client');
    expect(f.requests).toHaveLength(1);
  });
});

describe('answers that cannot succeed', () => {
  const anthropic = CASES[0] as Case;

  it('a stream that stalls before its first byte leaves the buffer as it was, without a retry', async () => {
    const { d, f, buf, request } = await sent(
      anthropic,
      'stream_idle_timeout = 1, timeout = 100000',
      'quiet.chat',
    );
    const stream = request.stream();
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
    expect(await d.lua('return vim.bo[...].modifiable', buf)).toBe(true);
    expect(
      d
        .notifications()
        .filter((n) => n.level === 4)
        .map((n) => n.message),
    ).toEqual([
      expect.stringMatching(/^Flemma: anthropic \(127\.0\.0\.1:\d+\): stalled: no data for 1 s\./),
    ]);
    expect(await stream.closed).toBe('client');
    expect(f.requests).toHaveLength(1);
  });

  it('an HTML error page (a 503 from a proxy) is summarised, never shown raw, and not retried', async () => {
    const { d, f, buf, request } = await sent(anthropic, HUGE, 'proxy.chat');
    await request.respond(
      503,
      '<html><body><center><h1>503 Service Temporarily Unavailable</h1></center><hr>' +
        '<center>nginx</center></body></html>',
      { 'content-type': 'text/html' },
    );
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const errors = d.notifications().filter((n) => n.level === 4);
    expect(errors.map((n) => n.message)).toEqual([
      `Flemma: anthropic (127.0.0.1:${String(f.port)}): HTTP 503 with content type text/html: "503 Service Temporarily Unavailable nginx". Check the base URL, and any proxy or login page on the way.`,
    ]);
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
    expect(f.requests).toHaveLength(1);
  });

  it('a JSON answer where a stream was asked for fails at once, and the key is never shown', async () => {
    const { d, f, buf, request } = await sent(anthropic, HUGE, 'json.chat');
    await request.respond(200, { note: 'echoing your key sk-ant-secret-key', streaming: false });
    const finished = await d.waitForEvent('FlemmaRequestFinished');
    expect(finished.data).toEqual({ bufnr: buf, status: 'errored' });
    const errors = d.notifications().filter((n) => n.level === 4);
    expect(errors.map((n) => n.message)).toEqual([
      `Flemma: anthropic (127.0.0.1:${String(f.port)}): HTTP 200 with content type application/json, not a stream: "{"note":"echoing your key [redacted]","streaming":false}". Check the base URL, and any proxy or login page on the way.`,
    ]);
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
    expect(f.requests).toHaveLength(1);
  });
});
