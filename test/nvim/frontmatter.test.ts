// Per-buffer settings from a chat's frontmatter, end to end: Lua (trusted files only) and JSON,
// reaching the provider's request while the global configuration stays as it was.
import { textReply as anthropicText } from '../helpers/anthropic-script.js';
import { describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { launcher, sendChat, type Session, statusLines } from '../helpers/e2e.js';

const launch = launcher();

function start(setup = '{}', extra = ''): Promise<Session> {
  return launch({
    env: (fake) => ({ OPENAI_API_KEY: 'sk-openai-test', OPENAI_BASE_URL: `${fake.url}/v1` }),
    setup: `require("flemma").setup(${setup})\n${extra}`,
  });
}

/** `:trust` for the current buffer, as a user would after reviewing it. */
async function trust(d: Driver): Promise<void> {
  await d.command('trust');
}

interface AnthropicBody {
  model: string;
  temperature?: number;
  tools?: { name: string }[];
}

describe('Lua frontmatter', () => {
  it('switches provider and model for this buffer while the global configuration is unchanged', async () => {
    const session = await start();
    await sendChat(
      session,
      'switch.chat',
      [
        '```lua',
        'flemma.opt.provider = "openai"',
        'flemma.opt.model = "gpt-frontmatter"',
        'flemma.opt.temperature = 0.3',
        '```',
        '@You:',
        'Hello',
      ],
      { trust: true },
    );
    const { d, f, buf } = session;
    const request = await f.nextRequest({ path: /^\/v1\/responses/ });
    const body = request.body as { model: string; temperature?: number };
    expect(body.model).toBe('gpt-frontmatter');
    expect(body.temperature).toBe(0.3);
    await request.respond(400, { error: { type: 'invalid_request_error', message: 'enough' } });
    await d.waitForEvent('FlemmaRequestFinished');
    expect(await d.lua('return require("flemma.config").get().provider')).toBe('anthropic');
    expect(await d.lines(buf)).toHaveLength(7);
  });

  it('removes a tool from the request with flemma.opt.tools:remove', async () => {
    const session = await start();
    await sendChat(
      session,
      'tools.chat',
      ['```lua', 'flemma.opt.tools:remove("bash")', '```', '@You:', 'Hello'],
      { trust: true, boot: true },
    );
    const { d, f } = session;
    const request = await f.nextRequest({ path: '/v1/messages' });
    const names = ((request.body as AnthropicBody).tools ?? []).map((tool) => tool.name);
    expect(names).not.toContain('bash');
    expect(names).toContain('read');
    await anthropicText(request.stream(), 'ok');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('says "did you mean" for a misspelled tool, names the line, and sends nothing', async () => {
    const lines = ['```lua', 'flemma.opt.tools:remove("bsh")', '```', '@You:', 'Hello'];
    const session = await start();
    await sendChat(session, 'typo.chat', lines, { trust: true, boot: true });
    const { d, f, buf } = session;
    const note = await d.waitForNotification(/did you mean 'bash'/);
    expect(note.message).toContain('frontmatter line 2');
    expect(f.requests).toHaveLength(0);
    expect(await d.lines(buf)).toEqual(lines);
  });

  it('reports an error in the code with its buffer line', async () => {
    const lines = ['```lua', 'local x = 1', 'flemma.opt.temperature = "hot"', '```', '@You:', 'Hi'];
    const session = await start();
    await sendChat(session, 'bad.chat', lines, { trust: true });
    const { d, f, buf } = session;
    const note = await d.waitForNotification(/frontmatter line 3/);
    expect(note.message).toMatch(/temperature/);
    expect(f.requests).toHaveLength(0);
    expect(await d.lines(buf)).toEqual(lines);
  });

  it('does not run an untrusted file, says how to trust it, and runs it once trusted', async () => {
    const lines = ['```lua', 'flemma.opt.temperature = 0.7', '```', '@You:', 'Hello'];
    const session = await start();
    await sendChat(session, 'untrusted.chat', lines);
    const { d, f, buf } = session;
    const note = await d.waitForNotification(/:trust to run its Lua frontmatter/);
    expect(note.message).toContain('untrusted.chat');
    expect(f.requests).toHaveLength(0);
    expect(await d.lines(buf)).toEqual(lines);

    await trust(d);
    await d.command('Flemma send');
    const request = await f.nextRequest({ path: '/v1/messages' });
    expect((request.body as AnthropicBody).temperature).toBe(0.7);
    await anthropicText(request.stream(), 'ok');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('lets a frontmatter auto_approve function decide approvals', async () => {
    const { d } = await start();
    await d.openChat('approve.chat', [
      '```lua',
      'flemma.opt.tools.auto_approve = function(tool, input)',
      '  if tool == "bash" and input.command == "echo safe" then return true end',
      '  return false',
      'end',
      '```',
      '@You:',
      'Run two commands.',
      '',
      '@Assistant:',
      '**Tool Use:** `bash` (`toolu_safe`)',
      '',
      '```json',
      '{"label":"safe","command":"echo safe"}',
      '```',
      '',
      '**Tool Use:** `bash` (`toolu_other`)',
      '',
      '```json',
      '{"label":"other","command":"echo other"}',
      '```',
    ]);
    await trust(d);
    await d.command('Flemma autopilot:disable');
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaApprovalNeeded');
    const text = (await d.lines()).join('\n');
    expect(text).toMatch(/`toolu_safe`\n\n```flemma:tool status=approved/);
    expect(text).toMatch(/`toolu_other`\n\n```flemma:tool status=pending/);
    // The cursor is on the pending call; the frontmatter's function decided it.
    await d.press(':Flemma tool:why<CR>');
    await d.waitForNotification(
      /bash \(toolu_other\): require_approval — urn:flemma:approval:frontmatter/,
    );
  });
});

describe('YAML and custom frontmatter languages', () => {
  it('reads YAML like JSON, without trust, with its variables for templates', async () => {
    const { d, f } = await start();
    await d.openChat('yaml.chat', [
      '```yaml',
      'customer: Ana',
      'flemma:',
      '  parameters:',
      '    temperature: 0.6',
      '  tools:',
      '    $remove: [bash]',
      '```',
      '@You:',
      'Hello',
    ]);
    await d.waitForEvent('FlemmaBootComplete');
    expect(await d.lua('return #vim.diagnostic.get(0)')).toBe(0);
    await d.command('Flemma send');
    const request = await f.nextRequest({ path: '/v1/messages' });
    const body = request.body as AnthropicBody;
    expect(body.temperature).toBe(0.6);
    expect((body.tools ?? []).map((tool) => tool.name)).not.toContain('bash');
    await anthropicText(request.stream(), 'ok');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('names the line of a YAML error', async () => {
    const session = await start();
    await sendChat(session, 'yaml-bad.chat', ['```yaml', 'a: 1', 'b: [1, 2', '```', '@You:', 'Hi']);
    const { d, f } = session;
    const note = await d.waitForNotification(/invalid YAML/);
    expect(note.message).toMatch(/frontmatter line [2-4]: invalid YAML/);
    expect(f.requests).toHaveLength(0);
  });

  it('a language registered from Lua reads the frontmatter, and its tree has no diagnostic', async () => {
    const { d, f } = await start(
      '{}',
      `require("flemma.frontmatter").register_language("kv", function(code)
        local data = { flemma = { parameters = {} } }
        for key, value in code:gmatch("(%S+)%s*=%s*(%S+)") do
          data.flemma.parameters[key] = tonumber(value) or value
        end
        return data
      end)`,
    );
    await d.openChat('kv.chat', ['```kv', 'temperature = 0.2', '```', '@You:', 'Hello']);
    await d.waitForEvent('FlemmaBootComplete');
    await d.waitUntil('return #vim.diagnostic.get(0) == 0');
    await d.command('Flemma send');
    const request = await f.nextRequest({ path: '/v1/messages' });
    expect((request.body as AnthropicBody).temperature).toBe(0.2);
    await anthropicText(request.stream(), 'ok');
    await d.waitForEvent('FlemmaRequestFinished');
  });
});

describe(':Flemma status', () => {
  it('shows each value with the layer that set it: default, setup, runtime, frontmatter line', async () => {
    const { d } = await start('{ parameters = { max_tokens = 3000 } }');
    await d.openChat('status.chat', [
      '```lua',
      'flemma.opt.model = "claude-opus-4-6"',
      'flemma.opt.tools:remove("bash")',
      '```',
      '@You:',
      'Hello',
    ]);
    await trust(d);
    await d.waitForEvent('FlemmaBootComplete');
    await d.command('Flemma autopilot:disable');
    await d.waitForEvent('FlemmaConfigUpdated');
    // The layers keep their operations.
    expect(await d.lua('return require("flemma.config").log("runtime")')).toEqual([
      {
        op: 'set',
        path: 'tools.autopilot.enabled',
        value: false,
        source: ':Flemma autopilot:disable',
      },
    ]);
    expect(await d.lua('return require("flemma.config").log("setup")')).toEqual([
      { op: 'set', path: 'parameters.max_tokens', value: 3000 },
    ]);
    const lines = await statusLines(d);
    expect(lines).toContain('provider: "anthropic"  (default)');
    expect(lines).toContain('model: "claude-opus-4-6"  (frontmatter line 2)');
    expect(lines).toContain('  max_tokens = 3000  (setup)');
    expect(lines.find((line) => line.startsWith('tools ('))).toMatch(
      /^tools \(6\): edit, find, grep, ls, read, write {2}\(frontmatter line 3\)$/,
    );
    expect(lines.find((line) => line.startsWith('autopilot:'))).toMatch(
      /^autopilot: disabled, .*\(runtime \(:Flemma autopilot:disable\)\)/,
    );
    expect(lines).toContain('  100  urn:flemma:approval:config');
    // The report is a scratch window.
    expect(await d.lua('return vim.api.nvim_buf_get_name(0)')).toBe('flemma://status');
  });
});

describe('checking the frontmatter while editing', () => {
  type Item = { lnum: number; severity: number; message: string };

  /**
   * The frontmatter diagnostics of the current buffer, once `ready` (a Lua expression over
   * `list`) holds for them.
   */
  async function diagnostics(d: Driver, ready: string): Promise<Item[]> {
    const list = `local list = vim.tbl_map(function(x) return { lnum = x.lnum, severity = x.severity, message = x.message } end,
      vim.diagnostic.get(0, { namespace = vim.api.nvim_create_namespace("flemma.frontmatter") }))`;
    await d.waitUntil(`${list}\nreturn ${ready}`);
    return d.lua<Item[]>(`${list}\nreturn list`);
  }

  it('shows an error on its line as you type, a warning for an untrusted file, and clears them', async () => {
    const { d } = await start();
    await d.openChat('live.chat', ['```lua', 'flemma.opt.model = "m"', '```', '@You:', 'Hi']);
    const untrusted = await diagnostics(d, '#list == 1');
    expect(untrusted[0]).toMatchObject({ lnum: 0, severity: 2 });
    expect(untrusted[0]?.message).toContain(':trust');
    await trust(d);
    // A change of the frontmatter checks it again.
    await d.lua('vim.api.nvim_buf_set_lines(0, 1, 2, false, { "flemma.opt.model = 42" })');
    const wrong = await diagnostics(d, 'list[1] ~= nil and list[1].severity == 1');
    expect(wrong).toHaveLength(1);
    expect(wrong[0]).toMatchObject({ lnum: 1, severity: 1 });
    expect(wrong[0]?.message).toMatch(/model/);
    await d.lua('vim.api.nvim_buf_set_lines(0, 1, 2, false, { "flemma.opt.model = \\"m2\\"" })');
    expect(await diagnostics(d, '#list == 0')).toEqual([]);
  });
});

describe('JSON frontmatter', () => {
  it('sets options under "flemma" with operators, and needs no trust', async () => {
    const session = await start();
    await sendChat(
      session,
      'json.chat',
      [
        '```json',
        '{',
        '  "customer": "Ana",',
        '  "flemma": {',
        '    "parameters": { "temperature": 0.4 },',
        '    "tools": { "$remove": ["bash", "write"] }',
        '  }',
        '}',
        '```',
        '@You:',
        'Hello',
      ],
      { boot: true },
    );
    const { d, f } = session;
    const request = await f.nextRequest({ path: '/v1/messages' });
    const body = request.body as AnthropicBody;
    expect(body.temperature).toBe(0.4);
    const names = (body.tools ?? []).map((tool) => tool.name);
    expect(names).not.toContain('bash');
    expect(names).not.toContain('write');
    expect(names).toContain('read');
    await anthropicText(request.stream(), 'ok');
    await d.waitForEvent('FlemmaRequestFinished');
  });

  it('names the line of an unknown option', async () => {
    const lines = [
      '```json',
      '{',
      '  "flemma": {',
      '    "temperatur": 0.4',
      '  }',
      '}',
      '```',
      '@You:',
      'Hi',
    ];
    const session = await start();
    await sendChat(session, 'json-bad.chat', lines);
    const { d, f } = session;
    const note = await d.waitForNotification(/frontmatter line 4/);
    expect(note.message).toContain("did you mean 'temperature'");
    expect(f.requests).toHaveLength(0);
  });
});
