// One redactor for every log line (issue 19): with every logging option on, a key that goes
// through a send, a tool's input and output, the tool middleware's record, the audit entry, an
// error reply and the shim's own log never reaches the log file or the audit file; the marker
// does. The shim's Lua redaction gives what the host's gives on the same corpus.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeRequest } from '../helpers/fake-provider.js';
import { REDACTION_CORPUS } from '../helpers/redaction-corpus.js';

const launch = launcher();

/** Key-shaped, and distinctive enough that finding it anywhere means it leaked. */
const KEY = 'sk-ant-api03-FlemmaLogProbe_7f3c9a1e5b2d8064-QwErTy';
/** Not key-shaped: only known as the value of a secret-looking variable. */
const OPAQUE = 'opaque-probe-value-5150';

/** Streams an Anthropic reply: a text block naming the key, then one bash tool_use block. */
function replyWithBash(request: FakeRequest, id: string, command: string): Promise<void> {
  return anthropicReply(request, `Checking ${KEY}.`, [
    { id, name: 'bash', input: { command, label: 'echo', timeout: 10 } },
  ]);
}

describe('one redactor for every log line', () => {
  it('the shim redacts the corpus exactly as the host does, and the values the host sends it', async () => {
    const { d } = await launch({ key: false });
    const texts = REDACTION_CORPUS.map((entry) => entry.text);
    const redacted = await d.lua<string[]>(
      `local r = require("flemma.host.redact")
       return vim.tbl_map(r.text, ...)`,
      texts,
    );
    expect(redacted).toEqual(REDACTION_CORPUS.map((entry) => entry.redacted));
    // What the host tells it (`log.secrets`) is redacted from then on.
    const known = await d.lua<string>(
      `local r = require("flemma.host.redact")
       local before = r.text("a known-to-host-value here")
       require("flemma.rpc").dispatch("log.secrets", { values = { "known-to-host-value" } })
       return before .. " | " .. r.text("a known-to-host-value here")`,
    );
    expect(known).toBe('a known-to-host-value here | a [REDACTED] here');
  });

  it('with every logging option on, the key reaches neither the log nor the audit file', async () => {
    const { d, f } = await launch({ key: KEY, env: { FLEMMA_PROBE_TOKEN: OPAQUE } });
    await d.lua(
      `require("flemma").setup({
         logging = { enabled = true, level = "TRACE" },
         host = { log_level = "debug" },
         tools = {
           autopilot = false,
           middleware = { logging = true },
           hooks = { log = { "bash" }, audit_file = vim.fn.expand("~/state/audit.jsonl") },
         },
       })`,
    );
    const buf = await d.openChat('probe.chat', ['@You:', 'Show me the key.']);
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    const first = await f.nextRequest({ path: '/v1/messages' });
    expect(first.apiKey()).toBe(KEY);
    await replyWithBash(first, 'toolu_KEY', `echo ${KEY}; echo ${OPAQUE}`);
    await d.waitForEvent('FlemmaRequestFinished');
    // The log hook approves bash: it runs at once, and its output holds the key.
    await d.press('<C-]>');
    const done = await d.waitForEvent('FlemmaToolCompleted');
    expect(done.data['status']).toBe('success');
    expect((await d.lines(buf)).join('\n')).toContain(`${KEY}\n`);
    // The result goes out; the provider fails with an error that echoes the key in its body and
    // its headers.
    await d.press('<C-]>');
    const second = await f.nextRequest({ path: '/v1/messages' });
    await second.respond(
      400,
      { type: 'error', error: { type: 'invalid_request_error', message: `bad key ${KEY}` } },
      { 'x-echo-api-key': KEY, 'x-echo-authorization': `Bearer ${KEY}` },
    );
    await d.waitForEvent('FlemmaRequestFinished', {
      match: (event) => event.data['status'] !== 'completed',
    });
    // The shim's own log lines go through the same rules.
    await d.lua(
      `require("flemma.log").write("error", "probe " .. vim.env.ANTHROPIC_API_KEY .. " " .. vim.env.FLEMMA_PROBE_TOKEN)`,
    );

    const log = readFileSync(await d.lua<string>('return require("flemma.log").path()'), 'utf8');
    const audit = readFileSync(join(d.home, 'state', 'audit.jsonl'), 'utf8');
    for (const [name, text] of [
      ['log', log],
      ['audit', audit],
    ] as const) {
      expect(text.includes(KEY), `${name} holds the key`).toBe(false);
      expect(text.includes(OPAQUE), `${name} holds the variable's value`).toBe(false);
      expect(text.includes('FlemmaLogProbe'), `${name} holds part of the key`).toBe(false);
      expect(text).toContain('[REDACTED]');
    }
    // Every writer wrote: the middleware's record, the audit line, the error, the shim's line.
    expect(log).toMatch(/INFO tool call \{"tool":"bash".*\[REDACTED\]/);
    expect(log).toMatch(/INFO audit \{.*"tool":"bash"/);
    expect(log).toMatch(/\[lua\] ERROR probe \[REDACTED\] \[REDACTED\]/);
    expect(log).toMatch(/send failed/);
    expect(JSON.parse(audit.trim().split('\n')[0] ?? '{}')).toMatchObject({
      tool: 'bash',
      id: 'toolu_KEY',
      success: true,
    });
  });
});
