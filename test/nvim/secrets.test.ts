// Credentials end to end: resolvers registered in Lua supply the key the fake provider checks, a
// refused key is resolved again once, and a missing one is explained resolver by resolver. No
// value ever reaches a buffer, a message or the log.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { anthropicBlocks, replyBlocks } from '../helpers/anthropic-script.js';
import { launcher, type Session } from '../helpers/e2e.js';
import { type FakeRequest } from '../helpers/fake-provider.js';

const launch = launcher();

function reply(request: FakeRequest, text: string): Promise<void> {
  return anthropicBlocks(request, replyBlocks(text, [], true), { input: 3, output: 2 });
}

/** A vault resolver: hands out `_G.vault_keys` one after the other (a key being rotated). */
const VAULT = `
_G.vault_calls = 0
_G.vault_seen_config = nil
require("flemma.secrets").register("vault", {
  priority = 60,
  supports = function(self, credential, ctx)
    if credential.service ~= "anthropic" then
      ctx:diagnostic("vault only has Anthropic keys")
      return false
    end
    return true
  end,
  resolve = function(self, credential, ctx)
    _G.vault_calls = _G.vault_calls + 1
    _G.vault_seen_config = ctx:get_config()
    local key = table.remove(_G.vault_keys or {}, 1)
    if not key then
      ctx:diagnostic("the vault is empty")
      return nil
    end
    return { value = key }
  end,
})`;

async function setup(keys: string[]): Promise<Session> {
  // No ANTHROPIC_API_KEY: the driver's environment has none.
  const session = await launch({
    key: false,
    env: (fake) => ({ ANTHROPIC_BASE_URL: fake.url }),
    setup: `require("flemma").setup({ secrets = { vault = { mount = "kv/team" } } })
_G.vault_keys = vim.json.decode('${JSON.stringify(keys)}')
${VAULT}`,
  });
  session.buf = await session.d.openChat('secrets.chat', ['@You:', 'Hello']);
  return session;
}

describe('credentials', () => {
  it('a Lua resolver supplies the key; it is asked once and its config is a copy', async () => {
    const { d, f, buf } = await setup(['sk-vault-111']);
    await d.press('<C-]>');
    const first = await f.nextRequest({ path: '/v1/messages' });
    expect(first.apiKey()).toBe('sk-vault-111');
    let before = d.eventCount;
    await reply(first, 'Hi.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    expect(await d.lua('return _G.vault_seen_config')).toEqual({ mount: 'kv/team' });
    // The value is cached: the next send does not ask again.
    await d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Again." })');
    await d.press('<C-]>');
    const second = await f.nextRequest({ path: '/v1/messages' });
    expect(second.apiKey()).toBe('sk-vault-111');
    before = d.eventCount;
    await reply(second, 'Hi again.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    expect(await d.lua('return _G.vault_calls')).toBe(1);
    // Invalidated from Lua, it is resolved anew.
    await d.lua(`_G.vault_keys = { "sk-vault-222" }
      require("flemma.secrets").invalidate("api_key", "anthropic")`);
    await d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Once more." })');
    await d.press('<C-]>');
    const third = await f.nextRequest({ path: '/v1/messages' });
    expect(third.apiKey()).toBe('sk-vault-222');
    expect(await d.lua('return _G.vault_calls')).toBe(2);
    before = d.eventCount;
    await reply(third, 'Done.');
    await d.waitForEvent('FlemmaRequestFinished', { after: before });
    expect((await d.lines(buf)).slice(-4)).toEqual(['Done.', '', '@You:', '']);
  });

  it('with no credential anywhere, lists every resolver and why, and leaves the buffer alone', async () => {
    const { d, f, buf } = await setup([]);
    await d.press('<C-]>');
    const note = await d.waitForNotification(/no credential for the Anthropic API key/);
    const lines = note.message.split('\n');
    expect(lines[0]).toBe(
      'Flemma: anthropic: no credential for the Anthropic API key (api_key:anthropic). Tried:',
    );
    expect(lines).toContain('  environment: ANTHROPIC_API_KEY not set');
    expect(lines).toContain('  vault: the vault is empty');
    expect(lines).toContain('  keychain: only on macOS');
    expect(lines).toContain('  gcloud: only for access tokens');
    expect(lines.some((line) => line.startsWith('  secret_tool: '))).toBe(true);
    expect(await d.lines(buf)).toEqual(['@You:', 'Hello']);
    expect(await d.lua('return vim.bo.modifiable')).toBe(true);
    expect(f.requests).toHaveLength(0);
  });

  it('a refused key is resolved again and the request made once more; no key is ever shown', async () => {
    const { d, f, buf } = await setup(['sk-old-SECRET-1', 'sk-new-SECRET-2']);
    await d.command('Flemma log:level debug');
    await d.press('<C-]>');
    const refused = await f.nextRequest({ path: '/v1/messages' });
    expect(refused.apiKey()).toBe('sk-old-SECRET-1');
    await refused.respond(401, {
      type: 'error',
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
    });
    const retried = await f.nextRequest({ path: '/v1/messages' });
    expect(retried.apiKey()).toBe('sk-new-SECRET-2');
    const before = d.eventCount;
    await reply(retried, 'Rotated.');
    const finished = await d.waitForEvent('FlemmaRequestFinished', { after: before });
    expect(finished.data['status']).toBe('completed');
    expect((await d.lines(buf)).join('\n')).toContain('Rotated.');
    // Nothing in any buffer (the raw stream's sink included), message or the log holds a key.
    const everything = await d.lua<string>(`
      local out = {}
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        out[#out + 1] = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\\n")
      end
      return table.concat(out, "\\n")`);
    const log = readFileSync(await d.lua<string>('return require("flemma.log").path()'), 'utf8');
    expect(log).toContain('trying a newly resolved one');
    for (const secret of ['sk-old-SECRET-1', 'sk-new-SECRET-2', 'SECRET']) {
      expect(everything).not.toContain(secret);
      expect(log).not.toContain(secret);
      expect(d.notifications().some((n) => n.message.includes(secret))).toBe(false);
    }
  });

  it('a Lua resolver that raises could not help: the next one is asked, and the reason is listed', async () => {
    const { d, f } = await setup([]);
    await d.lua(`require("flemma.secrets").register("broken", {
      priority = 70,
      resolve = function() error("vault is sealed") end,
    })`);
    await d.press('<C-]>');
    const note = await d.waitForNotification(/no credential for the Anthropic API key/);
    expect(note.message).toMatch(/\n {2}broken: resolve\(\) raised: .*vault is sealed/);
    expect(note.message).toContain('  vault: the vault is empty');
    expect(f.requests).toHaveLength(0);
    // With a key in the vault the chain goes past the broken resolver to it.
    await d.lua('_G.vault_keys = { "sk-after-broken" }');
    await d.press('<C-]>');
    const request = await f.nextRequest({ path: '/v1/messages' });
    expect(request.apiKey()).toBe('sk-after-broken');
    await request.respond(500, { type: 'error', error: { type: 'api_error', message: 'stop' } });
  });

  it('get_all lists the built-ins and Lua resolvers by priority; register checks its input', async () => {
    const { d } = await setup([]);
    const all = await d.lua<{ name: string; priority: number }[]>(
      'return vim.tbl_map(function(r) return { name = r.name, priority = r.priority } end, require("flemma.secrets").get_all())',
    );
    expect(all).toEqual([
      { name: 'environment', priority: 100 },
      { name: 'vault', priority: 60 },
      { name: 'keychain', priority: 50 },
      { name: 'secret_tool', priority: 50 },
      { name: 'gcloud', priority: 25 },
    ]);
    const message = await d.lua<string>(
      'local ok, err = pcall(require("flemma.secrets").register, "gcloud", { resolve = function() end }); return err',
    );
    expect(message).toContain("'gcloud' is a built-in resolver");
    expect(await d.lua('return require("flemma.secrets").unregister("vault")')).toBe(true);
    expect(await d.lua('return require("flemma.secrets").unregister("vault")')).toBe(false);
  });
});
