// Navigation in chat buffers (docs/navigation.md): `gd` between a tool use and its result, `gf`
// on `@./file` references resolved from the chat's directory, and the in-process language
// server's definition and hover. The keys and the server ask the host, which holds the parsed
// tree; the answer arrives as a Lua call, so each check waits for its effect.
import { describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';
import { NAVIGATION_CHAT } from '../helpers/chat-lines.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

/** Open the chat at `project/chats/talk.chat` while Neovim's current directory is `work/`. */
async function openProjectChat(d: Driver): Promise<number> {
  d.writeFile('project/chats/notes.md', 'notes next to the chat\n');
  d.writeFile('project/shared/style.md', 'the style guide\n');
  // Decoys where a cwd-relative lookup would land.
  d.writeFile('notes.md', 'notes in the current directory\n');
  return d.openChat('project/chats/talk.chat', NAVIGATION_CHAT);
}

async function cursor(d: Driver): Promise<[number, number]> {
  return d.lua('return vim.api.nvim_win_get_cursor(0)');
}

/** Wait (in Neovim) until the cursor is at `line`, `col`; answers where it is then. */
async function cursorAt(d: Driver, line: number, col: number): Promise<[number, number]> {
  return d.lua(
    `local line, col = ...
    vim.wait(5000, function()
      local at = vim.api.nvim_win_get_cursor(0)
      return at[1] == line and at[2] == col
    end, 1)
    return vim.api.nvim_win_get_cursor(0)`,
    line,
    col,
  );
}

/** Wait (in Neovim) until the current buffer's name ends with `suffix`. */
async function fileOpened(d: Driver, suffix: string): Promise<void> {
  await d.lua(
    `local suffix = ...
    vim.wait(5000, function() return vim.endswith(vim.api.nvim_buf_get_name(0), suffix) end, 1)`,
    suffix,
  );
}

async function setCursor(d: Driver, line: number, col: number): Promise<void> {
  await d.lua('vim.api.nvim_win_set_cursor(0, { ... })', line, col);
}

/** The current buffer's name relative to the private home, and its first line. */
async function currentFile(d: Driver): Promise<{ name: string; first: string }> {
  const [name, first] = await d.lua<[string, string]>(
    `return { vim.api.nvim_buf_get_name(0), vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] }`,
  );
  return { name: name.slice(d.home.length), first };
}

/** Wait (in Neovim) until the flemma language server is attached to the buffer. */
async function lspAttached(d: Driver, bufnr: number): Promise<boolean> {
  return d.lua(
    `local bufnr = ...
    return vim.wait(5000, function()
      return #vim.lsp.get_clients({ bufnr = bufnr, name = "flemma" }) > 0
    end, 5)`,
    bufnr,
  );
}

/** A request to the buffer's flemma client, answered synchronously for the test. */
async function lspRequest<T>(
  d: Driver,
  bufnr: number,
  method: string,
  line: number,
  character: number,
): Promise<T | null> {
  return d.lua(
    `local bufnr, method, line, character = ...
    local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = line, character = character } }
    local replies = vim.lsp.buf_request_sync(bufnr, method, params, 5000) or {}
    for _, reply in pairs(replies) do
      if reply.error then error(vim.inspect(reply.error)) end
      return reply.result
    end
    return nil`,
    bufnr,
    method,
    line,
    character,
  );
}

describe('navigation in a chat buffer', () => {
  it('gd goes from a tool use (its header or its JSON) to the result, and back', async () => {
    driver = await launch();
    await openProjectChat(driver);
    await setCursor(driver, 7, 5);
    await driver.press('gd');
    expect(await cursorAt(driver, 28, 0)).toEqual([28, 0]);
    await driver.press('gd');
    expect(await cursorAt(driver, 7, 0)).toEqual([7, 0]);
    // From inside the JSON fence.
    await setCursor(driver, 11, 4);
    await driver.press('gd');
    expect(await cursorAt(driver, 28, 0)).toEqual([28, 0]);
    // The jump is in the jumplist.
    await driver.press('<C-o>');
    expect(await cursor(driver)).toEqual([11, 4]);
  });

  it('gd on a tool use without a result, or on plain text, says so briefly and stays', async () => {
    driver = await launch();
    await openProjectChat(driver);
    await setCursor(driver, 18, 2);
    const before = driver.notificationCount;
    await driver.press('gd');
    const note = await driver.waitForNotification(/No result for tool use/, { after: before });
    expect(note.message).toBe('Flemma: No result for tool use toolu_02Bash (bash) yet');
    expect(await cursor(driver)).toEqual([18, 2]);
    // The header inside a fence is an example: nothing to go to.
    await setCursor(driver, 24, 3);
    await driver.press('gd');
    await driver.waitForNotification(/Nothing to go to here/, { after: before });
    expect(await cursor(driver)).toEqual([24, 3]);
    const errors = await driver.lua<string>('return vim.v.errmsg');
    expect(errors).toBe('');
  });

  it('gf opens @./ and @../ references relative to the chat, not the current directory', async () => {
    driver = await launch();
    const chat = await openProjectChat(driver);
    expect(await driver.lua('return vim.fn.getcwd()')).toBe(`${driver.home}/work`);
    await setCursor(driver, 2, 12); // on `notes.md` of `@./notes.md,`
    await driver.press('gf');
    await fileOpened(driver, '/notes.md');
    expect(await currentFile(driver)).toEqual({
      name: '/work/project/chats/notes.md',
      first: 'notes next to the chat',
    });
    await driver.command(`buffer ${String(chat)}`);
    await setCursor(driver, 2, 44); // the last character before the stripped `.`
    await driver.press('gf');
    await fileOpened(driver, '/style.md');
    expect(await currentFile(driver)).toEqual({
      name: '/work/project/shared/style.md',
      first: 'the style guide',
    });
  });

  it("gf elsewhere is Neovim's own gf", async () => {
    driver = await launch();
    driver.writeFile('plain.txt', 'plain\n');
    await driver.openChat('own.chat', ['@You:', 'see plain.txt']);
    await setCursor(driver, 2, 6);
    await driver.press('gf');
    await fileOpened(driver, '/plain.txt');
    expect(await currentFile(driver)).toEqual({ name: '/work/plain.txt', first: 'plain' });
  });

  it("gf on a missing file says so; Neovim's own gf reports its error as it always does", async () => {
    driver = await launch();
    await driver.openChat('missing.chat', ['@You:', 'see @./gone.md and nowhere.txt']);
    const before = driver.notificationCount;
    await setCursor(driver, 2, 6);
    await driver.press('gf');
    const note = await driver.waitForNotification(/no such file/, { after: before });
    expect(note).toEqual({
      message: `Flemma: @./gone.md: no such file: ${driver.home}/work/gone.md`,
      level: 3, // vim.log.levels.WARN
    });
    await setCursor(driver, 2, 22);
    await driver.press('gf');
    const errmsg = await driver.lua<string>(
      `vim.wait(5000, function() return vim.v.errmsg ~= "" end, 1)
      return vim.v.errmsg`,
    );
    expect(errmsg).toMatch(/^E447: Can't find file "nowhere.txt" in path/);
    expect((await currentFile(driver)).name).toBe('/work/missing.chat');
  });

  it('gd right after an edit answers from the edited text', async () => {
    driver = await launch();
    const buf = await openProjectChat(driver);
    // A result for the bash call, typed at the end; gd at once from the call.
    await driver.press('G');
    await driver.type('o**Tool Result:** `toolu_02Bash`\n\n```\nfile.txt\n```');
    await driver.press('<Esc>');
    const row = (await driver.lines(buf)).indexOf('**Tool Result:** `toolu_02Bash`') + 1;
    expect(row).toBe(34);
    await setCursor(driver, 15, 0);
    await driver.press('gd');
    expect(await cursorAt(driver, row, 0)).toEqual([row, 0]);
  });

  it('gd with the host stopped starts it and jumps once it answers', async () => {
    driver = await launch();
    await openProjectChat(driver);
    await driver.waitForEvent('FlemmaHostStarted');
    const stopped = driver.eventCount;
    await driver.command('Flemma host:stop');
    await driver.waitForEvent('FlemmaHostExited', { after: stopped });
    expect(await driver.lua('return require("flemma.host").channel() == nil')).toBe(true);
    const after = driver.eventCount;
    await setCursor(driver, 28, 0);
    await driver.press('gd');
    await driver.waitForEvent('FlemmaHostStarted', { after });
    expect(await cursorAt(driver, 7, 0)).toEqual([7, 0]);
  });

  it('the language server answers definition and hover, leaves <C-]> alone, and stops cleanly', async () => {
    driver = await launch();
    const buf = await openProjectChat(driver);
    expect(await lspAttached(driver, buf)).toBe(true);

    const definition = await lspRequest<{ uri: string; range: { start: { line: number } } }>(
      driver,
      buf,
      'textDocument/definition',
      6,
      0,
    );
    expect(definition).toEqual({
      uri: `file://${driver.home}/work/project/chats/talk.chat`,
      range: { start: { line: 27, character: 0 }, end: { line: 27, character: 0 } },
    });
    const file = await lspRequest<{ uri: string }>(driver, buf, 'textDocument/definition', 1, 10);
    expect(file?.uri).toBe(`file://${driver.home}/work/project/chats/notes.md`);

    const hover = await lspRequest<{ contents: { kind: string; value: string } }>(
      driver,
      buf,
      'textDocument/hover',
      27,
      5,
    );
    expect(hover?.contents.kind).toBe('markdown');
    expect(hover?.contents.value).toContain(
      '**Tool result** for `read` (`toolu_01Read`): finished',
    );
    expect(hover?.contents.value).toContain('Tool use on line 7');

    // vim.lsp.buf.definition() jumps like gd.
    await setCursor(driver, 28, 0);
    await driver.lua('vim.lsp.buf.definition()');
    expect(
      await driver.lua(
        'return vim.wait(5000, function() return vim.api.nvim_win_get_cursor(0)[1] == 7 end, 5)',
      ),
    ).toBe(true);

    // Attaching did not take over the send key.
    const send = await driver.lua<{ desc?: string; buffer?: number }>(
      `local map = vim.fn.maparg("<C-]>", "n", false, true)
      return { desc = map.desc, buffer = map.buffer }`,
    );
    expect(send).toMatchObject({ desc: 'Flemma: run approved tools, or send', buffer: 1 });

    // Stopping the client ends it quietly.
    const before = driver.notificationCount;
    const stopped = await driver.lua<boolean>(
      `local client = vim.lsp.get_clients({ name = "flemma" })[1]
      -- client:stop() since 0.11; client.stop() before (deprecated, with a message, after).
      if vim.fn.has("nvim-0.11") == 1 then client:stop() else client.stop() end
      return vim.wait(5000, function() return #vim.lsp.get_clients({ name = "flemma" }) == 0 end, 5)`,
    );
    expect(stopped).toBe(true);
    expect(driver.notifications().slice(before)).toEqual([]);
    expect((await driver.commandOutput('messages')).trim()).toBe('');
  });

  it('Neovim with the language server running exits at once, with status 0', async () => {
    driver = await launch();
    const buf = await openProjectChat(driver);
    expect(await lspAttached(driver, buf)).toBe(true);
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      driver?.proc.once('exit', (code, signal) => {
        resolve({ code, signal });
      });
    });
    await driver.quit();
    driver = undefined;
    expect(await exited).toEqual({ code: 0, signal: null });
  });

  it('lsp.enabled = false starts no server; keymaps can be renamed or turned off', async () => {
    driver = await launch({
      setup: `require("flemma").setup({
        lsp = { enabled = false },
        keymaps = { normal = { goto_definition = "<leader>j", goto_file = false } },
      })`,
    });
    const buf = await openProjectChat(driver);
    const maps = await driver.lua<{ gd: string; gf: string; leader: string; clients: number }>(
      `local bufnr = ...
      -- The deferred attach would have run by the time a 0 ms timer queued now fires.
      local fired = false
      vim.defer_fn(function() fired = true end, 0)
      vim.wait(5000, function() return fired end, 5)
      return {
        gd = vim.fn.maparg("gd", "n"),
        gf = vim.fn.maparg("gf", "n"),
        leader = vim.fn.maparg("<leader>j", "n", false, true).desc or "",
        clients = #vim.lsp.get_clients({ bufnr = bufnr }),
      }`,
      buf,
    );
    expect(maps).toEqual({
      gd: '',
      gf: '',
      leader: 'Flemma: go to the matching tool result or use, or the referenced file',
      clients: 0,
    });
  });
});
