// What a chat buffer looks like: highlight groups on screen, folds, the fold toggle, rulers,
// and a large chat staying responsive. Asserted on the screen of an attached UI.
import { describe, expect, it } from 'vitest';
import { largeChat } from '../bench/corpus.js';
import { type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';
import { toolUse } from '../helpers/chat-lines.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

const CHAT = [
  '```lua',
  'recipient = "Ada"',
  '```',
  '@System:',
  'Be brief.',
  '',
  '@You:',
  'Hello {{ recipient }}, read @./notes.md. And @mcp:docs:docs://g.md.',
  '',
  '@Assistant:',
  '<thinking>',
  'The user wants a file read.',
  'I will call the tool.',
  '</thinking>',
  '',
  '## Plan',
  'I will use `read` on **notes.md**.',
  '',
  ...toolUse('read', 'toolu_1', '{"path":"notes.md"}'),
  '',
  ...toolUse('bash', 'toolu_2', '{"command":"ls"}'),
  '',
  '@You:',
  '**Tool Result:** `toolu_1` (error)',
  '',
  '```',
  'no such file',
  '```',
  '',
  '**Tool Result:** `toolu_2` (pending)',
  '',
  '```',
  '```',
  '',
  'go on',
];

const SETUP = 'require("flemma").setup({})';
/** Screen rows start with the text: the turn gutter has its own tests (turns.test.ts). */
const NO_GUTTER = 'require("flemma").setup({ turns = { enabled = false } })';

async function open(lines: string[] = CHAT): Promise<Driver> {
  driver = await launch({ setup: NO_GUTTER, ui: { width: 100, height: 60 } });
  await driver.openChat('ui.chat', lines);
  return driver;
}

/**
 * Give every Flemma group a colour of its own instead of its link, so that the screen names the
 * Flemma group that drew each cell (a UI sees the group a link ends at).
 */
async function unlink(d: Driver): Promise<void> {
  await d.lua(`local n = 0
    for name, spec in pairs(vim.api.nvim_get_hl(0, {})) do
      if name:match("^Flemma") then
        n = n + 1
        vim.api.nvim_set_hl(0, name, { fg = 0x100000 + n, bg = spec.bg })
      end
    end`);
}

/** The screen column of `needle` in the screen row showing `rowText`. */
function at(d: Driver, rowText: string | RegExp, needle: string): [number, number] {
  const row = d.screen.find(rowText);
  expect(row, `a screen row showing ${String(rowText)}`).toBeGreaterThanOrEqual(0);
  const col = d.screen.row(row).indexOf(needle);
  expect(col, `"${needle}" on screen row ${String(row)}`).toBeGreaterThanOrEqual(0);
  return [row, col];
}

function groupsOf(d: Driver, rowText: string | RegExp, needle: string): string[] {
  const [row, col] = at(d, rowText, needle);
  return d.screen.groupsAt(row, col);
}

describe('highlighting', () => {
  it('colours role markers, tool headers, statuses, thinking, templates and references', async () => {
    const d = await open();
    // One colour per status, each linked to a standard group by default.
    const groups = await d.lua<Record<string, unknown>>(
      `local out = {}
      for _, status in ipairs({ "Pending", "Approved", "Denied", "Rejected", "Aborted", "Error" }) do
        out[status] = vim.api.nvim_get_hl(0, { name = "FlemmaToolResult" .. status }).link
      end
      return out`,
    );
    expect(groups).toEqual({
      Pending: 'DiagnosticInfo',
      Approved: 'DiagnosticOk',
      Denied: 'DiagnosticError',
      Rejected: 'DiagnosticWarn',
      Aborted: 'DiagnosticError',
      Error: 'DiagnosticError',
    });
    await unlink(d);
    // Everything open, to see every line.
    await d.command('normal! zR');
    await d.redraw();
    expect(groupsOf(d, /^@System:/, '@System:')).toContain('FlemmaRoleSystem');
    expect(groupsOf(d, /^@Assistant:/, '@Assistant:')).toContain('FlemmaRoleAssistant');
    expect(groupsOf(d, 'Hello', '{{')).toContain('FlemmaLuaDelimiter');
    expect(groupsOf(d, 'Hello', 'recipient')).toContain('FlemmaLuaExpression');
    expect(groupsOf(d, 'Hello', '@./notes.md')).toContain('FlemmaUserFileReference');
    // The trailing full stop is not part of the reference.
    const [row, col] = at(d, 'Hello', '@./notes.md');
    expect(d.screen.groupsAt(row, col + '@./notes.md'.length)).not.toContain(
      'FlemmaUserFileReference',
    );
    // An MCP resource reference is drawn like a file reference, its punctuation left out.
    expect(groupsOf(d, 'Hello', '@mcp:docs:')).toContain('FlemmaUserFileReference');
    const [mcpRow, mcpCol] = at(d, 'Hello', '@mcp:docs:');
    expect(d.screen.groupsAt(mcpRow, mcpCol + '@mcp:docs:docs://g.md'.length)).not.toContain(
      'FlemmaUserFileReference',
    );
    expect(groupsOf(d, /^<thinking>/, '<thinking>')).toContain('FlemmaThinkingTag');
    expect(groupsOf(d, 'The user wants', 'user')).toContain('FlemmaThinkingBlock');
    expect(groupsOf(d, /^\*\*Tool Use:\*\* `read`/, 'Tool Use')).toContain('FlemmaToolUseTitle');
    expect(groupsOf(d, /^\*\*Tool Use:\*\* `read`/, 'read')).toContain('FlemmaToolName');
    expect(groupsOf(d, /toolu_1` \(error\)/, '(error)')).toContain('FlemmaToolResultError');
    expect(groupsOf(d, /toolu_2` \(pending\)/, '(pending)')).toContain('FlemmaToolResultPending');
    expect(groupsOf(d, /^\*\*Tool Result:\*\* `toolu_1`/, 'Tool Result')).toContain(
      'FlemmaToolResultTitle',
    );
    expect(groupsOf(d, /^## Plan/, 'Plan')).toContain('FlemmaMarkdownHeading');
    expect(groupsOf(d, /^I will use/, 'read')).toContain('FlemmaMarkdownCode');
    expect(groupsOf(d, /^I will use/, 'notes.md')).toContain('FlemmaMarkdownStrong');
    expect(groupsOf(d, /^recipient = /, 'recipient')).toEqual(
      expect.arrayContaining(['FlemmaLineFrontmatter']),
    );
    // Templates are not read in assistant text, so they are not coloured there.
    expect(groupsOf(d, /^I will use/, 'I')).not.toContain('FlemmaLuaExpression');
    // A ruler follows each role marker.
    expect(d.screen.row(d.screen.find(/^@You:/))).toMatch(/^@You: ─+/);
    expect(groupsOf(d, /^@You:/, '─')).toContain('FlemmaRuler');
  });

  it('draws an agent’s permission placeholder as a tool placeholder: its title, its call, its status', async () => {
    const d = await open([
      '@You:',
      'List.',
      '',
      '@Assistant:',
      '**Agent Permission:** `ls_1` execute: ls',
      '',
      '```flemma:tool status=pending',
      '```',
      '',
      '**Agent Permission:** `ls_2` execute: ls -a',
      '',
      '```flemma:tool status=cancelled',
      '```',
    ]);
    await unlink(d);
    await d.command('normal! zR');
    await d.redraw();
    expect(groupsOf(d, /^\*\*Agent Permission:\*\* `ls_1`/, 'Agent')).toContain(
      'FlemmaToolResultTitle',
    );
    expect(groupsOf(d, /^\*\*Agent Permission:\*\* `ls_1`/, '`ls_1`')).toContain(
      'FlemmaToolDetail',
    );
    expect(groupsOf(d, 'status=pending', 'status=pending')).toContain('FlemmaToolResultPending');
    expect(groupsOf(d, 'status=cancelled', 'status=cancelled')).toContain(
      'FlemmaToolResultAborted',
    );
  });

  it('follows highlights.* and defines the groups again after a colorscheme change', async () => {
    driver = await launch({
      setup: `require("flemma").setup({ highlights = {
        tool_result_pending = "#ff0000",
        system = "NoSuchGroup,Title",
        thinking_block = { dark = "Comment+bg:#101010", light = "Comment-bg:#101010" },
      }, ruler = { enabled = false }, line_highlights = { enabled = false }, turns = { enabled = false } })`,
      ui: { width: 100, height: 60 },
    });
    const d = driver;
    await d.openChat('ui.chat', CHAT);
    const read = (): Promise<Record<string, unknown>> =>
      d.lua(`return {
        pending = vim.api.nvim_get_hl(0, { name = "FlemmaToolResultPending" }).fg,
        system = vim.api.nvim_get_hl(0, { name = "FlemmaSystem" }).link,
        thinking = vim.api.nvim_get_hl(0, { name = "FlemmaThinkingBlock" }).bg ~= nil,
      }`);
    expect(await read()).toEqual({ pending: 0xff0000, system: 'Title', thinking: true });
    await d.command('colorscheme blue');
    expect(await read()).toEqual({ pending: 0xff0000, system: 'Title', thinking: true });
    await d.command('normal! zR');
    await unlink(d);
    await d.redraw();
    // No ruler and no line backgrounds when turned off.
    expect(d.screen.row(d.screen.find(/^@You:/)).trim()).toBe('@You:');
    expect(groupsOf(d, /^recipient = /, 'recipient')).not.toContain('FlemmaLineFrontmatter');
  });
});

describe('folding', () => {
  it('folds complete thinking and tool blocks; the frontmatter and messages stay open', async () => {
    const d = await open();
    const state = await d.lua<Record<string, number>>(
      `local function closed(pattern)
        for l = 1, vim.api.nvim_buf_line_count(0) do
          if vim.fn.getline(l):match(pattern) then return vim.fn.foldclosed(l) end
        end
      end
      return {
        thinking = closed("^<thinking>"),
        use = closed("^%*%*Tool Use:%*%* .read"),
        result = closed("^%*%*Tool Result:%*%* .toolu_1"),
        frontmatter = closed("^recipient"),
        system = closed("^Be brief"),
        level = vim.fn.foldlevel(12),
      }`,
    );
    expect(state).toEqual({
      thinking: 11,
      use: 19,
      result: 32,
      frontmatter: -1,
      system: -1,
      level: 2,
    });
    await unlink(d);
    await d.redraw();
    // A closed fold shows its first line, a preview and its size.
    expect(d.screen.row(d.screen.find(/^<thinking>/))).toMatch(
      /^<thinking> The user wants a file read\. \(4 lines\)/,
    );
    expect(groupsOf(d, /^<thinking>/, '(4 lines)')).toContain('FlemmaFoldMeta');
  });

  it('a thinking block folds to its first words, never its signature or opaque data', async () => {
    const d = await open([
      '@You:',
      'Hi',
      '',
      '@Assistant:',
      '<thinking anthropic:signature="EqQBCkgIBxAC' + 'x'.repeat(300) + '">',
      '',
      'First words of the thinking.',
      'More of it.',
      '</thinking>',
      '<thinking redacted>',
      'b3BhcXVlIGRhdGE=',
      '</thinking>',
      '',
      'Hello.',
      '',
      '@You:',
      'Thanks',
    ]);
    await d.waitUntil('return vim.fn.foldclosed(5) == 5 and vim.fn.foldclosed(10) == 10');
    expect(await d.lua('return { vim.fn.foldtextresult(5), vim.fn.foldtextresult(10) }')).toEqual([
      '<thinking> First words of the thinking. (5 lines)',
      '<thinking redacted> (3 lines)',
    ]);
  });

  it('<Space> toggles the fold of the message under the cursor, the last one too', async () => {
    const d = await open();
    await d.command('call cursor(5, 1)'); // "Be brief."
    await d.press('<Space>');
    expect(await d.lua('return vim.fn.foldclosed(5)')).toBe(4);
    await d.press('<Space>');
    expect(await d.lua('return vim.fn.foldclosed(5)')).toBe(-1);
    // The last message gets its fold when toggled.
    await d.command('normal! G');
    await d.press('<Space>');
    expect(await d.lua('return vim.fn.foldclosed(vim.fn.line("$") - 1)')).toBe(31);
    await d.press('<Space>');
    expect(await d.lua('return vim.fn.foldclosed(vim.fn.line("$") - 1)')).toBe(-1);
  });

  it('a streamed reply gets its folds as blocks complete, without folding again everything', async () => {
    const d = await open(['@You:', 'hi', '', '@Assistant:']);
    const append = (lines: string[]): Promise<unknown> =>
      d.lua('vim.api.nvim_buf_set_lines(0, -1, -1, false, ...)', lines);
    await append(['<thinking>', 'step one']);
    await d.afterScheduled();
    expect(await d.lua('return vim.fn.foldclosed(5)')).toBe(-1);
    await append(['step two', '</thinking>', '', 'The answer.']);
    // Folds follow on the next tick.
    await d.afterScheduled();
    expect(await d.lua('return vim.fn.foldclosed(6)')).toBe(5);
    // The user opens it; more text streams in; it stays open.
    await d.command('5foldopen');
    await append(['More text.', '', '**Tool Use:** `bash` (`t1`)', '', '```json', '{}', '```']);
    await d.afterScheduled();
    expect(await d.lua('return vim.fn.foldclosed(6)')).toBe(-1);
    expect(await d.lua('return vim.fn.foldclosed(14)')).toBe(13);
    // A new message: the reply gets its message fold (open), its blocks keep their state.
    await append(['', '@You:', '']);
    await d.afterScheduled();
    expect(
      await d.lua(
        'return { vim.fn.foldlevel(4), vim.fn.foldclosed(4), vim.fn.foldclosed(6), vim.fn.foldclosed(14) }',
      ),
    ).toEqual([1, -1, -1, 13]);
  });

  it('a new window and a reloaded buffer get their folds', async () => {
    const d = await open();
    const closed = (): Promise<number[]> =>
      d.lua('return { vim.fn.foldclosed(11), vim.fn.foldclosed(19), vim.fn.foldclosed(32) }');
    await d.command('vsplit');
    expect(await closed()).toEqual([11, 19, 32]);
    await d.command('wincmd p | 11foldopen');
    await d.command('edit!');
    await d.afterScheduled();
    expect(await closed()).toEqual([11, 19, 32]);
  });

  it('typing inside a message keeps every fold as it was', async () => {
    const d = await open();
    await d.command('3foldclose'); // the frontmatter, closed by hand
    await d.command('call cursor(17, 1)');
    await d.type('oNew line one');
    await d.press('<CR>');
    await d.type('and two');
    await d.press('<Esc>');
    await d.afterScheduled();
    const state = await d.lua<number[]>(
      'return { vim.fn.foldclosed(1), vim.fn.foldclosed(11), vim.fn.foldclosed(21), vim.fn.foldclosed(34) }',
    );
    expect(state).toEqual([1, 11, 21, 34]);
  });
});

describe('a large chat', () => {
  it('opens highlighted and folded, and can be moved through', async () => {
    driver = await launch({ setup: SETUP, ui: { width: 120, height: 40 } });
    const d = driver;
    const lines = largeChat(1024 * 1024, 400);
    d.writeFile('large.chat', lines.join('\n') + '\n');
    const result = await d.lua<{ folds: number }>(
      `vim.cmd("edit large.chat")
      vim.cmd("redraw")
      local folds = 0
      for l = 1, vim.api.nvim_buf_line_count(0) do
        if vim.fn.foldclosed(l) == l then folds = folds + 1 end
      end
      for _, keys in ipairs({ "G", "gg", "50%", "]m]m]m", "[m", "20\\\\<C-d>", "10\\\\<C-u>", "75%", "zR", "G", "zM", "gg" }) do
        vim.cmd('exe "normal ' .. keys .. '"')
        vim.cmd("redraw")
      end
      return { folds = folds }`,
    );
    // 100 thinking blocks, 50 tool uses and 50 results are folded. How long opening and moving
    // take is measured by the benchmark (`chat.open_1mb.*` in `npm run bench`).
    expect(result.folds).toBe(200);
  });
});
