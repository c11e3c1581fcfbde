// docs/tools.md "One tool, eight ways": every example, taken from the document as it is, is
// installed the way its first line says and runs `word_count` on a three-word file through a
// `.chat` file's approved placeholder.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Driver, ROOT } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';

let driver: Driver | undefined;

const launch = neovimLauncher();

/** The first fenced block under each `### ` heading of the section. */
function examples(): Map<string, string> {
  const doc = readFileSync(join(ROOT, 'docs', 'tools.md'), 'utf8');
  const start = doc.indexOf('## One tool, eight ways');
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, end);
  const found = new Map<string, string>();
  for (const part of section.split('\n### ').slice(1)) {
    const title = part.slice(0, part.indexOf('\n'));
    const code = /```[a-z]+\n([\s\S]*?)\n```/.exec(part)?.[1];
    if (code !== undefined) found.set(title, code);
  }
  return found;
}

const EXAMPLES = examples();

function example(title: string): string {
  const code = EXAMPLES.get(title);
  if (code === undefined) throw new Error(`docs/tools.md has no example "${title}"`);
  return code;
}

function chat(tool: string): string[] {
  return [
    '@You:',
    'How many words?',
    '',
    '@Assistant:',
    `**Tool Use:** \`${tool}\` (\`toolu_W\`)`,
    '',
    '```json',
    '{"path":"notes.txt"}',
    '```',
    '',
    '@You:',
    '',
    '**Tool Result:** `toolu_W`',
    '',
    '```flemma:tool status=approved',
    '```',
  ];
}

/** Start Neovim with `setup` (Lua), run the approved call, and return the result's body. */
async function run(
  setup: string,
  options: { tool?: string; files?: Record<string, string>; waitFor?: string } = {},
): Promise<string[]> {
  driver = await launch();
  const d = driver;
  d.writeFile('notes.txt', 'three little words\n');
  for (const [path, content] of Object.entries(options.files ?? {})) d.writeFile(path, content);
  await d.lua(setup);
  await d.openChat('words.chat', chat(options.tool ?? 'word_count'));
  await d.waitForEvent(options.waitFor ?? 'FlemmaBootComplete', { timeout: 20000 });
  // The chat is the user's: its `approved` stands (in a file not trusted the chain would judge it).
  await d.command('trust');
  await d.press('<C-]>');
  const done = await d.waitForEvent('FlemmaToolCompleted', { timeout: 20000 });
  expect(done.data['status']).toBe('success');
  const lines = await d.lines();
  const header = lines.indexOf('**Tool Result:** `toolu_W`');
  const close = lines.indexOf('```', header + 3);
  return lines.slice(header + 3, close);
}

const SETUP = 'require("flemma").setup({ tools = { autopilot = false } })';

function moduleSetup(file: string): string {
  return `require("flemma").setup({ tools = { autopilot = false, modules = { vim.fn.getcwd() .. "/${file}" } } })`;
}

describe('docs/tools.md: one tool, eight ways', () => {
  it('has the eight examples', () => {
    expect([...EXAMPLES.keys()]).toEqual([
      'Lua',
      'JavaScript module',
      'Flynn: static',
      'Flynn: factory',
      'Flynn: multi-factory',
      'Declarative (Vega)',
      'CodeCompanion',
      'MCP server',
    ]);
  });

  it('Lua', async () => {
    expect(await run(`${SETUP}\n${example('Lua')}`)).toEqual(['3 words']);
  });

  it('JavaScript module', async () => {
    const files = { 'word-count.mjs': example('JavaScript module') };
    expect(await run(moduleSetup('word-count.mjs'), { files })).toEqual(['3 words']);
  });

  it('Flynn: static', async () => {
    const files = { 'word-count.mjs': example('Flynn: static') };
    expect(await run(moduleSetup('word-count.mjs'), { files })).toEqual(['3 words']);
  });

  it('Flynn: factory, with its settings injected', async () => {
    const files = { 'word-count.mjs': example('Flynn: factory') };
    const setup = `require("flemma").setup({ tools = { autopilot = false,
      modules = { vim.fn.getcwd() .. "/word-count.mjs" }, word_count = { unit = "tokens" } } })`;
    expect(await run(setup, { files })).toEqual(['3 tokens']);
  });

  it('Flynn: multi-factory', async () => {
    const files = { 'counts.mjs': example('Flynn: multi-factory') };
    expect(await run(moduleSetup('counts.mjs'), { files })).toEqual(['3 words']);
    expect(await run(moduleSetup('counts.mjs'), { files, tool: 'line_count' })).toEqual([
      '1 lines',
    ]);
  });

  it('Declarative (Vega)', async () => {
    const files = { 'tools/word_count.yaml': example('Declarative (Vega)') };
    const setup = `require("flemma").setup({ tools = { autopilot = false,
      declarative = { dirs = { vim.fn.getcwd() .. "/tools" } } } })`;
    expect(await run(setup, { files })).toEqual(['3 notes.txt']);
  });

  it('CodeCompanion', async () => {
    expect(await run(`${SETUP}\n${example('CodeCompanion')}`)).toEqual(['3 notes.txt']);
  });

  it('MCP server', async () => {
    // Inside the repository, so that the server finds the SDK (and zod) in its node_modules.
    const dir = join(ROOT, '.tests', 'docs-examples');
    mkdirSync(dir, { recursive: true });
    const server = join(dir, 'word-server.mjs');
    writeFileSync(server, example('MCP server'));
    const setup = `require("flemma").setup({ tools = { autopilot = false },
      mcp = { servers = { words = { command = "node", args = { "${server}" }, cwd = vim.fn.getcwd() } } } })`;
    expect(
      await run(setup, { tool: 'mcp:words:word_count', waitFor: 'FlemmaMcpConnected' }),
    ).toEqual(['3 words']);
  });
});
