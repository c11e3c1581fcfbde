// The Lua side of tools: the preview renderer (lua/flemma/tools/preview.lua), checked against
// the TypeScript original in this process, and what a Lua tool's context asks the host
// (`ctx.truncate`, `ctx.sandbox.is_path_writable`). One Neovim for the file; every case makes its
// own buffers and windows and puts options back.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { launch } from '../helpers/e2e.js';
import { fitPreview } from '../../src/core/tools/preview.js';
import {
  MAX_BYTES,
  MAX_LINES,
  type TruncateLimits,
  type TruncationResult,
  formatSize,
  truncateHead,
  truncateTail,
} from '../../src/core/tools/truncate.js';

let driver: Driver;

beforeAll(async () => {
  driver = (await launch({ provider: false })).d;
});

afterAll(async () => {
  await driver.quit();
});

type Extmark = [number, number, number, Record<string, unknown>];
type VirtLines = [string, string][][];

interface Item {
  row: unknown;
  name: unknown;
  tool_id?: string;
  body?: unknown;
}

/** A fresh buffer with `lines`, shown in the current window, which is `width` columns wide. */
async function showBuffer(lines: string[], width?: number): Promise<number> {
  return driver.lua<number>(
    `local lines, width = ...
    vim.cmd("only")
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = "wipe"
    vim.api.nvim_win_set_buf(0, buf)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    if width ~= vim.NIL then
      vim.cmd("vsplit")
      vim.api.nvim_win_set_width(0, width)
    end
    return buf`,
    lines,
    width ?? null,
  );
}

async function render(bufnr: number, items: Item[]): Promise<void> {
  await driver.lua('require("flemma.tools.preview").render(...)', bufnr, items);
}

/** The preview marks of a buffer as `[row, text, group]`, checking each is one virtual line. */
async function previews(bufnr: number): Promise<[number, string, string][]> {
  const marks: Extmark[] = await driver.extmarks('flemma_tool_preview', bufnr);
  return marks.map(([, row, col, details]) => {
    expect(col).toBe(0);
    const lines = details['virt_lines'] as VirtLines;
    expect(lines).toHaveLength(1);
    const chunks = lines[0] ?? [];
    expect(chunks).toHaveLength(1);
    const [text, group] = chunks[0] ?? ['', ''];
    return [row, text, group];
  });
}

async function strwidth(text: string): Promise<number> {
  return driver.lua<number>('return vim.api.nvim_strwidth(...)', text);
}

describe('preview lines', () => {
  beforeEach(async () => {
    await driver.lua(`vim.o.listchars = "tab:> ,trail:-,nbsp:+"
      vim.o.columns = 80`);
  });

  it('draws `  name: body` under the row, in FlemmaToolPreview, in namespace flemma_tool_preview', async () => {
    const buf = await showBuffer(['a', 'b', 'c', 'd']);
    await render(buf, [
      { row: 1, name: 'bash', tool_id: 'toolu_1', body: '$ make test  # running tests' },
      { row: 3, name: 'calculator', tool_id: 'toolu_2', body: '2 + 2' },
    ]);
    expect(await previews(buf)).toEqual([
      [1, '  bash: $ make test  # running tests', 'FlemmaToolPreview'],
      [3, '  calculator: 2 + 2', 'FlemmaToolPreview'],
    ]);
    const ns = await driver.lua<number>(
      'return vim.api.nvim_get_namespaces()["flemma_tool_preview"]',
    );
    expect(ns).toBe(await driver.lua<number>('return require("flemma.tools.preview").ns'));
    // Below the row, not above it, and the buffer text is untouched.
    const marks: Extmark[] = await driver.extmarks('flemma_tool_preview', buf);
    expect(marks[0]?.[3]['virt_lines_above']).toBe(false);
    expect(await driver.lines(buf)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('shows the name alone for an empty body', async () => {
    const buf = await showBuffer(['x']);
    await render(buf, [{ row: 0, name: 'mcp:slack:post', body: '' }]);
    expect(await previews(buf)).toEqual([[0, '  mcp:slack:post', 'FlemmaToolPreview']]);
  });

  it('fits the line to the window, ending in …', async () => {
    const body = 'src/config.lua  +0,50  # reading the whole configuration file';
    const buf = await showBuffer(['x'], 40);
    await render(buf, [{ row: 0, name: 'read', body }]);
    const [[, text] = [0, '']] = await previews(buf);
    // 40 columns, one left free at the edge, two of indent.
    expect(text).toBe('  ' + fitPreview('read', body, 37));
    expect(text).toBe('  read: src/config.lua  +0,50  # readi…');
    expect(await strwidth(text)).toBe(39);

    // A short body is not cut.
    await render(buf, [{ row: 0, name: 'read', body: 'a.txt' }]);
    expect((await previews(buf))[0]?.[1]).toBe('  read: a.txt');
  });

  it('leaves out the number column and counts wide characters as two cells', async () => {
    const body = '日本語のテキストを検索する  # 検索';
    const buf = await showBuffer(['x'], 30);
    await driver.lua('vim.wo.number = true'); // textoff 4 → 26 text cells
    await render(buf, [{ row: 0, name: 'grep', body }]);
    const [[, text] = [0, '']] = await previews(buf);
    expect(text).toBe('  ' + fitPreview('grep', body, 23));
    expect(text.endsWith('…')).toBe(true);
    expect(await strwidth(text)).toBeLessThanOrEqual(25);
    expect(await strwidth(text)).toBeGreaterThanOrEqual(24);
  });

  it('uses the editor width when no window shows the buffer', async () => {
    await driver.lua('vim.o.columns = 50');
    const buf = await driver.lua<number>(`
      local buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "x" })
      return buf`);
    const body = 'y'.repeat(100);
    await render(buf, [{ row: 0, name: 'tool', body }]);
    const [[, text] = [0, '']] = await previews(buf);
    expect(text).toBe('  ' + fitPreview('tool', body, 47));
    expect(await strwidth(text)).toBe(49);
    await driver.lua('vim.api.nvim_buf_delete(..., { force = true })', buf);
  });

  it('shows newlines as the eol char of listchars (default ↵)', async () => {
    const buf = await showBuffer(['x']);
    const body = 'echo one\necho two\r\necho\tthree';
    await render(buf, [{ row: 0, name: 'bash', body }]);
    expect((await previews(buf))[0]?.[1]).toBe('  bash: echo one↵echo two↵echo three');

    await driver.lua('vim.o.listchars = "tab:> ,eol:$"');
    await render(buf, [{ row: 0, name: 'bash', body }]);
    expect((await previews(buf))[0]?.[1]).toBe('  bash: echo one$echo two$echo three');

    // The window's own value wins; a `%` is not special.
    await driver.lua('vim.wo.listchars = "eol:%"');
    await render(buf, [{ row: 0, name: 'bash', body }]);
    expect((await previews(buf))[0]?.[1]).toBe('  bash: echo one%echo two%echo three');
  });

  it('replaces the previous lines on each render; an empty list or clear() removes them', async () => {
    const buf = await showBuffer(['a', 'b', 'c']);
    await render(buf, [
      { row: 0, name: 'one', body: '1' },
      { row: 2, name: 'two', body: '2' },
    ]);
    expect(await previews(buf)).toHaveLength(2);
    await render(buf, [{ row: 1, name: 'three', body: '3' }]);
    expect(await previews(buf)).toEqual([[1, '  three: 3', 'FlemmaToolPreview']]);
    await render(buf, []);
    expect(await previews(buf)).toEqual([]);

    await render(buf, [{ row: 1, name: 'three', body: '3' }]);
    await driver.lua('require("flemma.tools.preview").clear(...)', buf);
    expect(await previews(buf)).toEqual([]);
  });

  it('skips rows outside the buffer and malformed items, and ignores an invalid buffer', async () => {
    const buf = await showBuffer(['a', 'b']);
    await render(buf, [
      { row: 2, name: 'past_end', body: 'x' },
      { row: 99, name: 'far', body: 'x' },
      { row: -1, name: 'negative', body: 'x' },
      { row: 'one', name: 'text_row', body: 'x' },
      { row: 0, name: 42, body: 'x' },
      { row: 1, name: 'kept', body: 'ok' },
      { row: 0, name: 'no_body' },
    ]);
    expect(await previews(buf)).toEqual([
      [0, '  no_body', 'FlemmaToolPreview'],
      [1, '  kept: ok', 'FlemmaToolPreview'],
    ]);
    const errors = await driver.lua<string[]>(`
      local preview = require("flemma.tools.preview")
      local errs = {}
      for _, call in ipairs({
        function() preview.render(999999, { { row = 0, name = "x", body = "y" } }) end,
        function() preview.render(999999, {}) end,
        function() preview.clear(999999) end,
      }) do
        local ok, err = pcall(call)
        if not ok then errs[#errs + 1] = tostring(err) end
      end
      return errs`);
    expect(errors).toEqual([]);
  });

  it('is what flemma.tools.ui.previews draws for host items', async () => {
    const buf = await showBuffer(['a', 'b']);
    await driver.lua('require("flemma.tools.ui").previews(...)', {
      bufnr: buf,
      items: [{ row: 1, name: 'ls', tool_id: 'toolu_9', body: '.  # looking around' }],
    });
    expect(await previews(buf)).toEqual([[1, '  ls: .  # looking around', 'FlemmaToolPreview']]);
  });
});

describe('FlemmaToolPreview', () => {
  async function group(): Promise<Record<string, unknown>> {
    return driver.lua('return vim.api.nvim_get_hl(0, { name = "FlemmaToolPreview", link = true })');
  }

  beforeEach(async () => {
    await driver.command('highlight clear FlemmaToolPreview');
    await driver.command('colorscheme default');
  });

  it('links to Comment by default, as a default definition', async () => {
    await driver.lua('require("flemma.tools.preview").setup_highlights({})');
    expect(await group()).toEqual({ link: 'Comment', default: true });
    await driver.lua('require("flemma.tools.preview").setup_highlights(nil)');
    expect(await group()).toEqual({ link: 'Comment', default: true });
    await driver.lua(
      'require("flemma.tools.preview").setup_highlights(require("flemma.config").defaults().highlights)',
    );
    expect(await group()).toEqual({ link: 'Comment', default: true });
  });

  it('follows highlights.tool_preview: a group to link, attributes, or a dark/light pair', async () => {
    const setup = (value: string): Promise<unknown> =>
      driver.lua(`require("flemma.tools.preview").setup_highlights({ tool_preview = ${value} })`);
    await setup('"Special"');
    expect(await group()).toEqual({ link: 'Special', default: true });
    // A later setup replaces our own earlier definition.
    await setup('{ fg = "#00ff00", italic = true }');
    expect(await group()).toMatchObject({ fg: 0x00ff00, italic: true, default: true });
    expect(await group()).not.toHaveProperty('link');
    await setup('"#123456"');
    expect(await group()).toMatchObject({ fg: 0x123456, default: true });
    await driver.lua('vim.o.background = "light"');
    await setup('{ dark = "Error", light = "Todo" }');
    expect(await group()).toEqual({ link: 'Todo', default: true });
    await driver.lua('vim.o.background = "dark"');
    await setup('"Comment+bg:#000000"');
    expect(await group()).toEqual({ link: 'Comment', default: true });
  });

  it('picks the dark or light value again when the colorscheme reloads', async () => {
    await driver.lua('vim.o.background = "dark"');
    await driver.lua(
      'require("flemma.tools.preview").setup_highlights({ tool_preview = { dark = "Error", light = "Todo" } })',
    );
    expect(await group()).toEqual({ link: 'Error', default: true });
    await driver.lua('vim.o.background = "light"'); // reloads the colorscheme
    await driver.command('colorscheme default');
    expect(await group()).toEqual({ link: 'Todo', default: true });
    await driver.lua('vim.o.background = "dark"');
    await driver.command('colorscheme default');
    expect(await group()).toEqual({ link: 'Error', default: true });
  });

  it('falls back to Comment for attributes Neovim rejects', async () => {
    const err = await driver.lua<string | null>(`
      local ok, err = pcall(require("flemma.tools.preview").setup_highlights, { tool_preview = { fg = "no-such-colour" } })
      return ok and vim.NIL or tostring(err)`);
    expect(err).toBeNull();
    expect(await group()).toEqual({ link: 'Comment', default: true });
  });

  it('is set by flemma.setup()', async () => {
    await driver.lua('require("flemma").setup({ highlights = { tool_preview = "Identifier" } })');
    expect(await group()).toEqual({ link: 'Identifier', default: true });
    await driver.lua('require("flemma").setup({})');
    expect(await group()).toEqual({ link: 'Comment', default: true });
  });

  it('survives :colorscheme, default and override alike', async () => {
    await driver.lua('require("flemma.tools.preview").setup_highlights({})');
    await driver.command('colorscheme blue');
    expect(await group()).toEqual({ link: 'Comment', default: true });
    await driver.lua(
      'require("flemma.tools.preview").setup_highlights({ tool_preview = "Special" })',
    );
    await driver.command('colorscheme default');
    expect(await group()).toEqual({ link: 'Special', default: true });
    await driver.command('colorscheme blue');
    expect(await group()).toEqual({ link: 'Special', default: true });
    // Only one autocmd, however often setup runs.
    const count = await driver.lua<number>(
      'return #vim.api.nvim_get_autocmds({ group = "flemma_tool_preview", event = "ColorScheme" })',
    );
    expect(count).toBe(1);
  });

  it('leaves a definition made by a colorscheme or the user alone', async () => {
    await driver.lua('require("flemma.tools.preview").setup_highlights({})');
    await driver.lua('vim.api.nvim_set_hl(0, "FlemmaToolPreview", { fg = "#ff0000" })');
    await driver.lua(
      'require("flemma.tools.preview").setup_highlights({ tool_preview = "Special" })',
    );
    expect(await group()).toEqual({ fg: 0xff0000 });
    // Nor is it replaced by a later setup.
    await driver.lua('require("flemma.tools.preview").setup_highlights({})');
    expect(await group()).toEqual({ fg: 0xff0000 });
    // A colorscheme that defines the group itself keeps its definition.
    driver.writeFile(
      'rtp/colors/flemmatest.lua',
      [
        'vim.cmd("highlight clear")',
        'vim.g.colors_name = "flemmatest"',
        'vim.api.nvim_set_hl(0, "FlemmaToolPreview", { link = "WarningMsg" })',
      ].join('\n'),
    );
    await driver.lua('vim.opt.rtp:append(vim.fn.getcwd() .. "/rtp")');
    await driver.command('colorscheme flemmatest');
    expect(await group()).toEqual({ link: 'WarningMsg' });
    await driver.lua(
      'require("flemma.tools.preview").setup_highlights({ tool_preview = "Special" })',
    );
    expect(await group()).toEqual({ link: 'WarningMsg' });
    // Back to a colorscheme without it: the configured link returns.
    await driver.command('colorscheme default');
    expect(await group()).toEqual({ link: 'Special', default: true });
  });
});

// ---------------------------------------------------------------------------------------------

interface LuaCutLine {
  line: number;
  line_bytes: number;
  kept_bytes: number;
}

interface LuaResult {
  content: string;
  truncated: boolean;
  truncated_by?: 'lines' | 'bytes';
  total_lines: number;
  total_bytes: number;
  shown_lines: number;
  shown_bytes: number;
  cut_line?: LuaCutLine;
  output_lines?: number;
  output_bytes?: number;
}

/** The TypeScript result with the Lua field names; `null` fields are absent, as nil in Lua. */
function snake(result: TruncationResult): LuaResult {
  const out: LuaResult = {
    content: result.content,
    truncated: result.truncated,
    total_lines: result.totalLines,
    total_bytes: result.totalBytes,
    shown_lines: result.shownLines,
    shown_bytes: result.shownBytes,
  };
  if (result.truncatedBy !== null) out.truncated_by = result.truncatedBy;
  if (result.cutLine !== null) {
    out.cut_line = {
      line: result.cutLine.line,
      line_bytes: result.cutLine.lineBytes,
      kept_bytes: result.cutLine.keptBytes,
    };
  }
  return out;
}

interface Case {
  text: string;
  limits?: TruncateLimits;
}

/**
 * Runs every case through `ctx.truncate.truncate_head` and `truncate_tail` of a Lua tool's context
 * (from inside `execute`, where the answers come back like plain return values); results are head,
 * tail pairs.
 */
async function luaTruncate(cases: Case[]): Promise<[LuaResult, LuaResult][]> {
  const payload = cases.map((c) => ({
    text: c.text,
    opts:
      c.limits === undefined
        ? null
        : { max_lines: c.limits.maxLines, max_bytes: c.limits.maxBytes },
  }));
  return runInTool<[LuaResult, LuaResult][]>(
    `local out = {}
    for i, c in ipairs(args) do
      local opts = c.opts ~= vim.NIL and c.opts or nil
      out[i] = { ctx.truncate.truncate_head(c.text, opts), ctx.truncate.truncate_tail(c.text, opts) }
    end
    done(out)`,
    payload,
  );
}

let runs = 0;

/**
 * Run `body` (Lua with `ctx`, `args` and `done` in scope) as the `execute` of a Lua tool, the way
 * the host has Neovim run one (`tools.execute`, with the facts the host sends); answers the value
 * the body passes to `done` (at once, or later from a callback).
 */
async function runInTool<T>(
  body: string,
  args: unknown,
  facts: Record<string, unknown> = {},
): Promise<T> {
  runs += 1;
  const name = `probe_${String(runs)}`;
  await driver.lua(
    `local name, body, args, facts = ...
    local run = assert(loadstring("local ctx, args, done = ... " .. body))
    _G.tool_answers = _G.tool_answers or {}
    require("flemma.tools").register(name, {
      description = "runs a test body",
      execute = function(_, ctx)
        local function done(value)
          _G.tool_answers[name] = { value = value }
        end
        local ok, err = pcall(run, ctx, args, done)
        if not ok then
          _G.tool_answers[name] = { error = tostring(err) }
        end
        return { success = true, output = "done" }
      end,
    })
    require("flemma.tools").execute({
      call_id = name,
      name = name,
      input = {},
      ctx = vim.tbl_extend("force", { bufnr = 1, cwd = vim.fn.getcwd(), tool_id = name, truncate = {
        max_lines = 2000, max_bytes = 51200,
        head_cut_marker = " ... [truncated]", tail_cut_marker = "[truncated] ... " } }, facts),
    })`,
    name,
    body,
    args,
    facts,
  );
  const answer = await driver.lua<{ value?: T; error?: string }>(
    `local name = ...
    vim.wait(20000, function() return _G.tool_answers[name] ~= nil end, 5)
    return _G.tool_answers[name] or { error = "no answer" }`,
    name,
  );
  if (answer.error !== undefined) throw new Error(answer.error);
  return answer.value as T;
}

function withoutAliases(result: LuaResult): LuaResult {
  expect(result.output_lines).toBe(result.shown_lines);
  expect(result.output_bytes).toBe(result.shown_bytes);
  const copy = { ...result };
  delete copy.output_lines;
  delete copy.output_bytes;
  return copy;
}

async function expectParity(cases: Case[]): Promise<void> {
  const results = await luaTruncate(cases);
  expect(results).toHaveLength(cases.length);
  cases.forEach((c, i) => {
    const [head, tail] = results[i] ?? [];
    const what = `${JSON.stringify(c.text.slice(0, 40))} (${c.text.length} chars) ${JSON.stringify(c.limits)}`;
    expect(withoutAliases(head as LuaResult), `head of ${what}`).toEqual(
      snake(truncateHead(c.text, c.limits)),
    );
    expect(withoutAliases(tail as LuaResult), `tail of ${what}`).toEqual(
      snake(truncateTail(c.text, c.limits)),
    );
  });
}

describe("what a Lua tool's ctx asks the host", () => {
  it('answers inside execute as if the functions were plain ones', async () => {
    const answer = await runInTool<unknown[]>(
      `done({ ctx.truncate.MAX_LINES, ctx.truncate.MAX_BYTES, ctx.truncate.format_size(12345),
        ctx.truncate.truncate_tail("a\\nb\\nc", { max_lines = 2 }).content })`,
      null,
    );
    expect(answer).toEqual([MAX_LINES, MAX_BYTES, '12.1KB', 'b\nc']);
    expect([MAX_LINES, MAX_BYTES]).toEqual([2000, 51200]);
  });

  it('takes a callback outside execute, and says so when it gets none', async () => {
    const answer = await runInTool<unknown[]>(
      `local t = ctx.truncate
      -- Later, from a timer: outside execute.
      vim.defer_fn(function()
        local refused = select(2, pcall(t.truncate_tail, "x"))
        t.truncate_head("one\\ntwo\\nthree", { max_lines = 1 }, function(r)
          t.format_size(2048, function(size)
            done({ r.content, size, refused })
          end)
        end)
      end, 0)`,
      null,
    );
    expect(answer[0]).toBe('one');
    expect(answer[1]).toBe('2.0KB');
    expect(answer[2]).toMatch(
      /ctx\.truncate\.truncate_tail: outside a tool's execute, pass a callback: truncate_tail\(…, function\(result, err\) … end\)/,
    );
  });

  it('asks the host about the write policy too (ctx.sandbox.is_path_writable)', async () => {
    const home = driver.home;
    const answer = await runInTool<unknown[]>(
      `local base = ctx.cwd
      local inside = ctx.sandbox.is_path_writable("notes.txt")
      local outside = ctx.sandbox.is_path_writable("/etc/hosts")
      vim.uv.fs_symlink("/etc/flemma-never-created", base .. "/dangling-" .. ctx.tool_id)
      local dangling = ctx.sandbox.is_path_writable("dangling-" .. ctx.tool_id)
      vim.defer_fn(function()
        ctx.sandbox.is_path_writable(base .. "/sub/new.txt", function(later)
          done({ inside, outside, dangling, later })
        end)
      end, 0)`,
      null,
      { sandbox: { enabled: true, rw_paths: [`${home}/work`] } },
    );
    expect(answer).toEqual([true, false, false, true]);
  });

  it('gives the answers of truncate.ts on small and edge inputs', async () => {
    const texts = [
      '',
      'a',
      'a\n',
      '\n',
      '\n\n',
      'a\nb\nc',
      'a\nb\nc\n',
      'one\r\ntwo\r\n',
      'x\n\ny',
    ];
    const limits: (TruncateLimits | undefined)[] = [
      undefined,
      {},
      { maxLines: 1 },
      { maxLines: 2 },
      { maxLines: 0 },
      { maxBytes: 0 },
      { maxBytes: 1 },
      { maxBytes: 3 },
      { maxBytes: 4 },
      { maxLines: 2.9, maxBytes: 3.5 },
      { maxLines: -3, maxBytes: -1 },
      { maxLines: NaN, maxBytes: NaN },
    ];
    const cases: Case[] = [];
    for (const text of texts) {
      for (const l of limits) cases.push(l === undefined ? { text } : { text, limits: l });
    }
    await expectParity(cases);
  });

  it('gives the answers of truncate.ts exactly at and just over the default limits', async () => {
    const line = 'x'.repeat(24); // 25 bytes with its newline
    const lines = (n: number): string => Array.from({ length: n }, () => line).join('\n');
    await expectParity([
      { text: lines(MAX_LINES) },
      { text: lines(MAX_LINES) + '\n' },
      { text: lines(MAX_LINES + 1) },
      { text: 'y'.repeat(MAX_BYTES) },
      { text: 'y'.repeat(MAX_BYTES) + '\n' },
      { text: 'y'.repeat(MAX_BYTES + 1) },
      { text: 'a\n' + 'y'.repeat(MAX_BYTES + 1) },
      { text: 'y'.repeat(MAX_BYTES + 1) + '\nb' },
      { text: 'z'.repeat(2047) + '\n' + 'y'.repeat(MAX_BYTES) },
    ]);
  });

  it('counts UTF-8 bytes and never cuts inside a character', async () => {
    const samples = [
      'é'.repeat(40), // 2-byte
      '日本語のテキスト'.repeat(5), // 3-byte
      '😀'.repeat(20), // 4-byte
      'aé日😀'.repeat(10), // mixed
    ];
    const cases: Case[] = [];
    for (const sample of samples) {
      for (let maxBytes = 0; maxBytes <= 40; maxBytes++) {
        cases.push({ text: sample, limits: { maxBytes } });
        cases.push({ text: `${sample}\n${sample}\n`, limits: { maxBytes } });
      }
      cases.push({ text: `ab\n${sample}\ncd`, limits: { maxBytes: 5 } });
      cases.push({ text: `${sample}\nab`, limits: { maxBytes: 64 } });
    }
    await expectParity(cases);

    // The content a Lua tool gets is valid UTF-8 and within the limit.
    const bad = await runInTool<string[]>(
      `local t = ctx.truncate
      local function valid(s)
        local i = 1
        while i <= #s do
          local b = s:byte(i)
          local n = b < 0x80 and 1 or (b >= 0xC2 and b < 0xE0) and 2 or (b >= 0xE0 and b < 0xF0) and 3
            or (b >= 0xF0 and b < 0xF5) and 4 or nil
          if not n then
            return false
          end
          for j = i + 1, i + n - 1 do
            local c = s:byte(j)
            if not c or c < 0x80 or c >= 0xC0 then
              return false
            end
          end
          i = i + n
        end
        return true
      end
      local bad = {}
      for _, s in ipairs(args) do
        for n = 0, 40 do
          for _, r in ipairs({ t.truncate_head(s, { max_bytes = n }), t.truncate_tail(s, { max_bytes = n }) }) do
            if not valid(r.content) or r.shown_bytes > n or r.shown_bytes ~= #r.content then
              bad[#bad + 1] = n .. ": " .. r.content
            end
          end
        end
      end
      done(bad)`,
      samples,
    );
    expect(bad).toEqual([]);
  });

  it('gives the answers of truncate.ts on a 5 MB input', async () => {
    const row = 'línea de registro número {n} — 日本語 ✓ ok\n';
    const parts: string[] = [];
    let size = 0;
    for (let n = 0; size < 5 * 1024 * 1024; n++) {
      const text = row.replace('{n}', String(n));
      parts.push(text);
      size += Buffer.byteLength(text);
    }
    const manyLines = parts.join('');
    const oneLine = '日本語😀é'.repeat(Math.ceil((5 * 1024 * 1024) / 15));
    expect(Buffer.byteLength(manyLines)).toBeGreaterThanOrEqual(5 * 1024 * 1024);
    expect(Buffer.byteLength(oneLine)).toBeGreaterThanOrEqual(5 * 1024 * 1024);
    await expectParity([
      { text: manyLines },
      { text: oneLine },
      { text: manyLines + oneLine, limits: { maxLines: 10 } },
    ]);
  });

  it('formats sizes as truncate.ts does', async () => {
    const values = [
      0,
      1,
      0.4,
      0.5,
      1.5,
      2.5,
      511.5,
      512,
      1000,
      1023,
      1023.49,
      1023.5,
      1024,
      1025,
      1075,
      1126,
      1280,
      1536,
      1792,
      10239,
      10240,
      12345,
      51200,
      1048063,
      1048064,
      1048575,
      1048576,
      1572864,
      1073741823,
      1073741824,
      5 * 2 ** 40,
      3 * 2 ** 50,
      -5,
      NaN,
      Infinity,
      -Infinity,
      1.25 * 1024,
      2.75 * 1024 ** 2,
      0.05 * 1024 * 1024,
      1023.95 * 1024,
      1023.949 * 1024,
    ];
    // And a deterministic spread of integers over every unit.
    let seed = 12345;
    for (let i = 0; i < 320; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      values.push(Math.floor((seed / 2 ** 31) * 2 ** (10 + (i % 32))));
    }
    const lua = await runInTool<string[]>(
      `local out = {}
      for i, v in ipairs(args) do out[i] = ctx.truncate.format_size(v) end
      done(out)`,
      values,
    );
    expect(lua).toEqual(values.map(formatSize));
  });
});
