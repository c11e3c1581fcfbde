// `:help flemma` and the completeness of doc/flemma.txt: the help opens on its `*flemma*` tag,
// `:helptags` reads the file without errors (a duplicate tag is one), every `|link|` resolves,
// every registered `:Flemma` subcommand has a `*:Flemma-<name>*` tag and every option path of the
// `setup()` schema a `*flemma-opt-<path>*` tag (the rule for paths: docs/testing.md, "The help
// file"). The checks themselves are shown to fail on an undocumented command and option.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { type Driver, ROOT } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

const HELP_FILE = join(ROOT, 'doc', 'flemma.txt');
const COVERAGE = join(ROOT, 'test', 'helpers', 'doc-coverage.lua');

interface Coverage {
  commands: string[];
  options: string[];
  duplicates: string[];
  links: string[];
}

let driver: Driver;
/** A runtime directory holding a copy of the help file, so the checkout gets no `doc/tags`. */
let runtime: string;

const launch = neovimLauncher();

beforeEach(async () => {
  driver = await launch({ setup: 'require("flemma").setup({})' });
  runtime = join(driver.home, 'runtime');
  mkdirSync(join(runtime, 'doc'), { recursive: true });
  copyFileSync(HELP_FILE, join(runtime, 'doc', 'flemma.txt'));
  await driver.lua('vim.opt.rtp:prepend(...)', runtime);
});

/** `:helptags {dir}`; returns the error it raised, or null. */
function helptags(dir: string): Promise<string | null> {
  return driver.lua(
    `local ok, err = pcall(vim.cmd.helptags, vim.fn.fnameescape(...))
    return ok and vim.NIL or tostring(err)`,
    dir,
  );
}

function coverage(): Promise<Coverage> {
  return driver.lua('return dofile(...).check(select(2, ...))', COVERAGE, HELP_FILE);
}

describe(':help flemma', () => {
  it('opens the help window on the *flemma* tag', async () => {
    expect(await helptags(join(runtime, 'doc'))).toBeNull();
    await driver.press(':help flemma<CR>');
    const shown = await driver.lua<{ buftype: string; file: string; line: string; wins: number }>(`
      return {
        buftype = vim.bo.buftype,
        file = vim.fn.expand("%:t"),
        line = vim.api.nvim_get_current_line(),
        wins = #vim.api.nvim_tabpage_list_wins(0),
      }`);
    const { line, ...window } = shown;
    expect(window).toEqual({ buftype: 'help', file: 'flemma.txt', wins: 2 });
    expect(line).toMatch(/\*flemma\*$/);
    // An option's tag works the same way.
    await driver.press(':help flemma-opt-tools.autopilot.max_turns<CR>');
    expect(await driver.lua('return vim.api.nvim_get_current_line()')).toContain(
      '*flemma-opt-tools.autopilot.max_turns*',
    );
  });

  it('is valid vimdoc: helptags without errors, links that resolve, the modeline', async () => {
    expect(await helptags(join(runtime, 'doc')), ':helptags on doc/flemma.txt').toBeNull();
    const result = await coverage();
    expect(result.duplicates, 'tags defined more than once').toEqual([]);
    expect(result.links, '|links| that name no help tag').toEqual([]);
    const lines = await driver.lua<string[]>('return vim.fn.readfile(...)', HELP_FILE);
    expect(lines.at(-1)).toBe(' vim:tw=78:ts=8:ft=help:norl:');
    const long = await driver.lua<string[]>(
      'return dofile(...).long_lines(vim.fn.readfile(select(2, ...)), 78)',
      COVERAGE,
      HELP_FILE,
    );
    expect(long, 'lines wider than 78 columns outside examples').toEqual([]);
    // Neovim's own vimdoc parser reads the file without errors (both versions bundle it).
    const errors = await driver.lua<string[] | null>(
      `vim.cmd.edit(vim.fn.fnameescape(select(2, ...)))
      return dofile(...).parse_errors(0)`,
      COVERAGE,
      HELP_FILE,
    );
    expect(errors, 'vimdoc parse errors').toEqual([]);
  });

  it('documents every registered :Flemma subcommand', async () => {
    const names = await driver.lua<string[]>('return require("flemma.commands").names()');
    expect(names).toEqual(expect.arrayContaining(['send', 'switch', 'tool:execute']));
    const result = await coverage();
    expect(result.commands, 'commands without a *:Flemma-<name>* tag in doc/flemma.txt').toEqual(
      [],
    );
  });

  it('documents every option of the setup() schema', async () => {
    const paths = await driver.lua<string[]>('return dofile(...).option_paths()', COVERAGE);
    // The walk reaches the leaves, table forms, named entries and provider tables.
    expect(paths).toEqual(
      expect.arrayContaining([
        'tools.autopilot',
        'tools.autopilot.max_turns',
        'highlights.tool_preview',
        'parameters.thinking.level',
        'parameters.{provider}.base_url',
        'parameters.anthropic.effort',
        'mcp.servers.{name}.command',
        'tools.{name}',
        'tools.approve',
      ]),
    );
    const result = await coverage();
    expect(result.options, 'options without a *flemma-opt-<path>* tag in doc/flemma.txt').toEqual(
      [],
    );
  });

  it('reports an undocumented command, option and duplicate tag', async () => {
    await driver.lua(`
      require("flemma.commands").register("zz:undocumented", { run = function() end })
      local schema = require("flemma.config.schema")
      schema.options.fields.tools.fields.zz_undocumented = schema.boolean(true)
      schema.options.fields.parameters.fields.openai.fields.zz_effort = schema.optional(schema.string())`);
    const result = await coverage();
    expect(result.commands).toContain('zz:undocumented');
    expect(result.options).toEqual(
      expect.arrayContaining(['parameters.openai.zz_effort', 'tools.zz_undocumented']),
    );

    const dir = join(driver.home, 'dup', 'doc');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'dup.txt'),
      ['*dup.txt*', '', 'A                *dup-a*', 'B                *dup-a*', ''].join('\n'),
    );
    expect(await helptags(dir)).toMatch(/E154/);
  });
});
