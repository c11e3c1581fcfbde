// Custom sandbox backends end to end: backends registered from Lua (selected by name, loaded as a
// Lua module) and from a JavaScript file, used by the bash tool on <M-CR>, by a Lua tool's
// `ctx.sandbox.wrap_command`, and listed by `:Flemma sandbox:status`.
import { describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { type Call, callChat } from '../helpers/chat-lines.js';
import { neovimLauncher, openBooted, runCallAt } from '../helpers/e2e.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

/** A Lua backend whose wrap prefixes `env FLEMMA_WRAPPED=<value>`, remembering what it got. */
function luaBackend(options: { available?: string; wrap?: string; value?: string } = {}): string {
  return `
_G.seen = {}
require("flemma.sandbox").register_backend({
  name = "mine",
  priority = 60,
  description = "Test backend",
  available = ${options.available ?? 'function(settings) _G.seen.available_settings = settings; return true end'},
  wrap = ${
    options.wrap ??
    `function(argv, policy, settings)
    _G.seen.policy = policy
    _G.seen.settings = settings
    local out = { "env", "FLEMMA_WRAPPED=${options.value ?? '1'}" }
    for _, arg in ipairs(argv) do out[#out + 1] = arg end
    return out
  end`
  },
})`;
}

function setup(sandbox: string, extra = ''): string {
  return `require("flemma").setup({ tools = { autopilot = false }, sandbox = ${sandbox} })
${extra}`;
}

/** Opens `name`: the user asks `question`, the model calls `call`; runs it with <M-CR>. */
async function runCall(
  d: Driver,
  name: string,
  question: string,
  call: Call,
): Promise<{ status: unknown; text: string }> {
  await openBooted(d, name, callChat(question, [call]));
  await runCallAt(d, 6);
  const done = await d.waitForEvent('FlemmaToolCompleted');
  return { status: done.data['status'], text: (await d.lines()).join('\n') };
}

/** Open a chat with one bash call, run it with <M-CR>, and answer the completion and the text. */
function runBash(d: Driver, command: string): Promise<{ status: unknown; text: string }> {
  const input = JSON.stringify({ label: 'x', command, timeout: null });
  return runCall(d, 'sandbox.chat', 'Run it.', ['bash', 'toolu_S1', input]);
}

/** Runs `echo ran` under the Lua backend `mine` made with `backend`; its status and the chat. */
async function echoUnder(backend: {
  available?: string;
  wrap?: string;
}): Promise<{ status: unknown; text: string }> {
  driver = await launch({ setup: setup('{ backend = "mine" }', luaBackend(backend)) });
  return runBash(driver, 'echo ran');
}

describe('sandbox backends registered from Lua', () => {
  it('a backend selected by name wraps bash, and gets the policy and its settings', async () => {
    driver = await launch({
      setup: setup(
        '{ backend = "mine", backends = { mine = { flavour = "strict" } }, policy = { rw_paths = { "urn:flemma:cwd" }, network = false } }',
        luaBackend(),
      ),
    });
    const d = driver;
    const { status, text } = await runBash(d, 'echo "wrapped=$FLEMMA_WRAPPED"');
    expect(status).toBe('success');
    expect(text).toContain('wrapped=1');
    const seen = await d.lua<{
      policy: {
        rw_paths: string[];
        network: boolean;
        allow_privileged: boolean;
        hidden_paths: string[];
        env_unset: string[];
      };
      settings: Record<string, unknown>;
      available_settings: Record<string, unknown>;
    }>('return _G.seen');
    const cwd = await d.lua<string>('return vim.uv.fs_realpath(vim.fn.getcwd())');
    expect(seen.policy).toMatchObject({ rw_paths: [cwd], network: false, allow_privileged: false });
    // What to keep from the command travels too: the runtime directory, the provider keys' names.
    const run = await d.lua<string>('return vim.uv.fs_realpath(vim.env.XDG_RUNTIME_DIR)');
    expect(seen.policy.hidden_paths).toContain(run);
    expect(seen.policy.env_unset).toContain('ANTHROPIC_API_KEY');
    expect(seen.settings).toEqual({ flavour: 'strict' });
    expect(seen.available_settings).toEqual({ flavour: 'strict' });
  });

  it('a Lua tool gets the backend as a wrap prefix through ctx.sandbox.wrap_command', async () => {
    driver = await launch({
      setup: setup(
        '{ backend = "mine" }',
        `${luaBackend()}
require("flemma.tools").register("wrap_probe", {
  description = "Reports how a command would be wrapped",
  input_schema = { type = "object", properties = {} },
  execute = function(input, ctx)
    local argv, err = ctx.sandbox.wrap_command({ "echo", "hi" })
    return { success = argv ~= nil, output = argv and table.concat(argv, " ") or nil, error = err }
  end,
})`,
      ),
    });
    const d = driver;
    const { status, text } = await runCall(d, 'probe.chat', 'Probe.', ['wrap_probe', 'toolu_W1']);
    expect(status).toBe('success');
    expect(text).toContain('\nenv FLEMMA_WRAPPED=1 echo hi\n');
  });

  it('an explicit backend that is not available makes bash fail with a clear error', async () => {
    const { status, text } = await echoUnder({
      available: 'function() return false, "no firejail here" end',
    });
    expect(status).toBe('error');
    expect(text).toContain("Sandbox backend 'mine' is not available: no firejail here");
    expect(text).not.toContain('\nran\n');
  });

  it('a backend that raises is unavailable with the error, and a raising wrap fails the call', async () => {
    const first = await echoUnder({ available: 'function() error("probe exploded") end' });
    expect(first.status).toBe('error');
    expect(first.text).toMatch(/Sandbox backend 'mine' is not available: .*probe exploded/);
    await driver?.quit();

    const second = await echoUnder({ wrap: 'function() error("wrap exploded") end' });
    expect(second.status).toBe('error');
    expect(second.text).toMatch(/Sandbox backend 'mine' failed: .*wrap exploded/);
    expect(second.text).not.toContain('\nran\n');
  });

  it(':Flemma sandbox:status lists Lua backends, and an unregistered one disappears', async () => {
    driver = await launch({
      setup: setup(
        '{ backend = "auto" }',
        `${luaBackend()}
require("flemma.sandbox").register_backend({
  name = "other",
  available = function() return false, "not here" end,
  wrap = function(argv) return argv end,
})`,
      ),
    });
    const d = driver;
    await d.openChat('status.chat', ['@You:', 'Hi.']);
    await d.waitForEvent('FlemmaBootComplete');
    expect(await d.lua('return require("flemma.sandbox").backends()')).toEqual(['mine', 'other']);
    await d.press(':Flemma sandbox:status<CR>');
    const status = await d.waitForNotification(/Sandbox: [\s\S]*Backends:/);
    expect(status.message).toContain('mine (priority 60, Test backend): available');
    expect(status.message).toContain('other (priority 50): unavailable: not here');

    const after = d.notificationCount;
    expect(await d.lua('return require("flemma.sandbox").unregister_backend("other")')).toBe(true);
    await d.press(':Flemma sandbox:status<CR>');
    const again = await d.waitForNotification(/Sandbox: [\s\S]*Backends:/, { after });
    expect(again.message).toContain('mine (priority 60, Test backend)');
    expect(again.message).not.toContain('other (priority');
  });

  it('register_backend refuses invalid definitions with a clear error', async () => {
    driver = await launch({ setup: 'require("flemma").setup({})' });
    const errors = await driver.lua<string[]>(`
local sandbox = require("flemma.sandbox")
local function try(def)
  local ok, err = pcall(function()
    sandbox.register_backend(def)
  end)
  assert(not ok, "accepted " .. vim.inspect(def))
  return tostring(err)
end
local wrap = function(argv) return argv end
local available = function() return true end
return {
  try("firejail"),
  try({ available = available, wrap = wrap }),
  try({ name = "auto", available = available, wrap = wrap }),
  try({ name = "x", available = available }),
  try({ name = "x", priority = "high", available = available, wrap = wrap }),
  try({ name = "bwrap", available = available, wrap = wrap }),
}`);
    expect(errors[0]).toMatch(/register_backend: the definition must be a table, got string/);
    expect(errors[1]).toMatch(/needs a name/);
    expect(errors[2]).toMatch(/'auto' is reserved/);
    expect(errors[3]).toMatch(/backend 'x' needs a function `wrap`/);
    expect(errors[4]).toMatch(/priority must be a finite number/);
    expect(errors[5]).toMatch(/'bwrap' is a built-in backend; set replace = true/);
    // The error points at the caller, not at flemma's own file.
    expect(errors[0]).not.toMatch(/flemma\/sandbox\.lua/);
  });
});

describe('sandbox backends from modules', () => {
  it('a Lua module named by sandbox.backend is required on first use and its backend used', async () => {
    const d = await launch({
      setup: setup('{ backend = "my_sandbox.backend" }'),
    });
    driver = d;
    d.writeFile(
      'rtp/lua/my_sandbox/backend.lua',
      `return {
  name = "from_module",
  available = function() return true end,
  wrap = function(argv)
    local out = { "env", "FLEMMA_WRAPPED=module" }
    for _, arg in ipairs(argv) do out[#out + 1] = arg end
    return out
  end,
}`,
    );
    await d.lua('vim.opt.rtp:prepend(vim.fn.getcwd() .. "/rtp")');
    const { status, text } = await runBash(d, 'echo "wrapped=$FLEMMA_WRAPPED"');
    expect(status).toBe('success');
    expect(text).toContain('wrapped=module');
    expect(await d.lua('return require("flemma.sandbox").backends()')).toEqual(['from_module']);
  });

  it('a JavaScript file named by sandbox.backend is imported by the host (~ expanded)', async () => {
    const d = await launch({ setup: setup('{ backend = "~/work/js/wrapper.mjs" }') });
    driver = d;
    d.writeFile(
      'js/wrapper.mjs',
      `export const backend = {
  name: 'js_wrapper',
  priority: 70,
  description: 'From a file',
  available: async () => true,
  wrap: async (argv, policy) => ['env', 'FLEMMA_WRAPPED=js-' + String(policy.network), ...argv],
};`,
    );
    const { status, text } = await runBash(d, 'echo "wrapped=$FLEMMA_WRAPPED"');
    expect(status).toBe('success');
    expect(text).toContain('wrapped=js-true');
    await d.press(':Flemma sandbox:status<CR>');
    const report = await d.waitForNotification(/Sandbox: [\s\S]*Backends:/);
    expect(report.message).toContain('Backend: js_wrapper (setting: ~/work/js/wrapper.mjs)');
    expect(report.message).toContain('js_wrapper (priority 70, From a file): available');
  });

  it('a JavaScript tool module may bring sandbox backends along', async () => {
    const d = await launch({
      setup: setup('{ backend = "tool_mod_backend" }').replace(
        'tools = { autopilot = false }',
        'tools = { autopilot = false, modules = { "~/work/js/tools.mjs" } }',
      ),
    });
    driver = d;
    d.writeFile(
      'js/tools.mjs',
      `export const sandboxBackends = [{
  name: 'tool_mod_backend',
  available: () => ({ ok: true }),
  wrap: (argv) => ['env', 'FLEMMA_WRAPPED=toolmod', ...argv],
}];`,
    );
    const { status, text } = await runBash(d, 'echo "wrapped=$FLEMMA_WRAPPED"');
    expect(status).toBe('success');
    expect(text).toContain('wrapped=toolmod');
  });
});
