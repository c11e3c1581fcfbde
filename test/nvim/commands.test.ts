import { beforeEach, describe, expect, it } from 'vitest';
import { type Driver } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

let driver: Driver;

const ERROR = 4;

const launch = neovimLauncher();

beforeEach(async () => {
  driver = await launch();
  // Commands of our own, so these tests do not depend on what other modules register.
  await driver.lua(`
    local commands = require("flemma.commands")
    commands.register("demo:echo", {
      desc = "Store the arguments",
      run = function(args, ctx) vim.g.demo_args = args; vim.g.demo_bang = ctx.bang end,
      complete = function(arglead, args) return { "alpha", "beta", "gamma" } end,
    })
    commands.register("demo:fail", {
      desc = "Always fails",
      run = function() error("something broke") end,
    })
    commands.register("plain", { desc = "A top-level command", run = function() vim.g.plain_ran = true end })`);
});

/**
 * Type an Ex command as a user would. (Through the API, an ERROR-level message would turn into
 * an error of the API call instead of being shown.)
 */
async function typeCommand(cmd: string): Promise<void> {
  await driver.press(`:${cmd}<CR>`);
}

function complete(line: string): Promise<string[]> {
  return driver.lua('return vim.fn.getcompletion(..., "cmdline")', line);
}

describe(':Flemma', () => {
  it('exists after start-up with any number of arguments', async () => {
    expect(await driver.lua('return vim.api.nvim_get_commands({}).Flemma.nargs')).toBe('*');
    // Creating it again is harmless.
    await driver.lua('require("flemma.commands").setup(); require("flemma.commands").setup()');
    await driver.command('Flemma plain');
    expect(await driver.lua('return vim.g.plain_ran')).toBe(true);
  });

  it('passes the remaining arguments and the command context', async () => {
    await driver.command('Flemma demo:echo one two');
    expect(await driver.lua('return vim.g.demo_args')).toEqual(['one', 'two']);
    expect(await driver.lua('return vim.g.demo_bang')).toBe(false);
  });

  it('lists every command with its description when called without arguments', async () => {
    await driver.command('set lines=60');
    const output = await driver.commandOutput('Flemma');
    const lines = output.split('\n');
    expect(lines[0]).toMatch(/^Flemma commands/);
    const rows = lines.slice(1);
    const names = rows.map((row) => row.trim().split(/\s+/)[0]);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['demo:echo', 'demo:fail', 'plain']));
    // Descriptions start in the same column on every row.
    const echo = rows.find((row) => row.includes('demo:echo')) ?? '';
    const plain = rows.find((row) => row.includes('plain')) ?? '';
    expect(echo.indexOf('Store the arguments')).toBe(plain.indexOf('A top-level command'));
  });

  it('opens the list in a scratch buffer when it does not fit the screen', async () => {
    await driver.command('set lines=12');
    await driver.command('Flemma');
    expect(await driver.lua('return vim.api.nvim_buf_get_name(0)')).toBe('flemma://commands');
    const lines = await driver.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)');
    expect(lines[0]).toMatch(/^Flemma commands/);
    expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/^demo:echo\s+Store/)]));
    await driver.press('q');
    expect(await driver.lua('return vim.api.nvim_buf_get_name(0)')).not.toBe('flemma://commands');
  });

  it('lists the commands of a group given alone', async () => {
    const output = await driver.commandOutput('Flemma demo');
    expect(output.split('\n')).toEqual([
      expect.stringMatching(/^Flemma demo commands/),
      expect.stringMatching(/^\s+demo:echo\s+Store the arguments$/),
      expect.stringMatching(/^\s+demo:fail\s+Always fails$/),
    ]);
  });

  it('suggests the closest command for a typo, in one error message', async () => {
    const before = driver.notificationCount;
    await typeCommand('Flemma hots:status');
    await typeCommand('Flemma demo:ehco');
    const notes = driver.notifications().slice(before);
    expect(notes).toEqual([
      {
        message: "Flemma: unknown command 'hots:status' (did you mean 'host:status'?)",
        level: ERROR,
      },
      { message: "Flemma: unknown command 'demo:ehco' (did you mean 'demo:echo'?)", level: ERROR },
    ]);
  });

  it('reports a failing command once, without a traceback', async () => {
    const before = driver.notificationCount;
    await typeCommand('Flemma demo:fail');
    const notes = driver.notifications().slice(before);
    expect(notes).toEqual([{ message: 'Flemma: demo:fail: something broke', level: ERROR }]);
    expect(await driver.mode()).toBe('n');
  });
});

describe(':Flemma completion', () => {
  it('offers every command for an empty argument', async () => {
    const names = await driver.lua<string[]>('return require("flemma.commands").names()');
    expect(await complete('Flemma ')).toEqual(names);
    expect(names).toEqual(
      expect.arrayContaining(['demo:echo', 'demo:fail', 'plain', 'host:status']),
    );
  });

  it('matches full names by prefix and lists a group after its colon', async () => {
    const host = await complete('Flemma ho');
    expect(host.length).toBeGreaterThan(0);
    expect(host.every((name) => name.startsWith('host:'))).toBe(true);
    expect(host).toEqual(expect.arrayContaining(['host:restart', 'host:status']));
    expect(await complete('Flemma host:')).toEqual(host);
    expect(await complete('Flemma demo:')).toEqual(['demo:echo', 'demo:fail']);
    expect(await complete('Flemma demo:e')).toEqual(['demo:echo']);
  });

  it("delegates later arguments to the command's own completer", async () => {
    expect(await complete('Flemma demo:echo ')).toEqual(['alpha', 'beta', 'gamma']);
    expect(await complete('Flemma demo:echo b')).toEqual(['beta']);
    expect(await complete('Flemma demo:echo alpha g')).toEqual(['gamma']);
    expect(await complete('Flemma demo:fail ')).toEqual([]);
  });
});
