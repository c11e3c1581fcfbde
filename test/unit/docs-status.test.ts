// The documents say what works today, and stay true: the "Now" column of docs/configuration.md
// agrees with the help's "Not read yet" marks and, as far as a search of the sources can tell,
// with the code (an option marked as working is named by the Lua or TypeScript that reads it; one
// marked **later** is not); the README's command list covers every built-in `:Flemma` command;
// docs/hooks.md marks every event the host fires. The search's blind spots are listed below with
// the reason for each.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HOOK_NAMES } from '../../src/core/hooks.js';
import { ROOT } from '../helpers/paths.js';

interface Row {
  paths: string[];
  now: string;
}

/** The option rows of docs/configuration.md's "All options" tables. */
function configurationRows(text: string): Row[] {
  const body = text.slice(text.indexOf('## All options'), text.indexOf('## Decisions'));
  const rows: Row[] = [];
  for (const line of body.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const cells = line
      .split(/(?<!\\)\|/)
      .slice(1)
      .map((cell) => cell.trim());
    // Option rows have five columns (option, type, default, now, meaning); other tables in the
    // section (the output limits of the models) are not about options.
    if (cells.filter((cell) => cell !== '').length < 5) continue;
    // "`a.b`, `.c` for `<p>` = `x`, …": the paths come before " for ".
    const first = (cells[0] ?? '').split(' for ')[0] ?? '';
    const paths: string[] = [];
    for (const match of first.matchAll(/`([^`]+)`/g)) {
      let path = match[1] ?? '';
      const previous = paths.at(-1);
      if (path.startsWith('.') && previous !== undefined) {
        path = previous.slice(0, previous.lastIndexOf('.')) + path;
      }
      paths.push(path);
    }
    rows.push({ paths, now: (cells[3] ?? '').trim() });
  }
  return rows;
}

/** Each `*flemma-opt-<path>*` of the help, and whether its entry says "Not read yet". */
function helpMarks(text: string): Map<string, boolean> {
  const marks = new Map<string, boolean>();
  const lines = text.split('\n');
  const tagLine = /^\s+(\*flemma-opt-[^*\s]+\*\s*)+$/;
  let index = 0;
  while (index < lines.length) {
    if (!tagLine.test(lines[index] ?? '')) {
      index++;
      continue;
    }
    const tags: string[] = [];
    while (tagLine.test(lines[index] ?? '')) {
      for (const match of (lines[index] ?? '').matchAll(/\*flemma-opt-([^*\s]+)\*/g)) {
        tags.push(match[1] ?? '');
      }
      index++;
    }
    const entry: string[] = [];
    while (
      index < lines.length &&
      !tagLine.test(lines[index] ?? '') &&
      !/ ~$|^={10,}/.test(lines[index] ?? '')
    ) {
      entry.push(lines[index] ?? '');
      index++;
    }
    const notRead = /not\s+read\s+yet/i.test(entry.join(' '));
    for (const tag of tags) marks.set(tag, notRead);
  }
  return marks;
}

function files(dir: string, ext: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path, ext);
    return path.endsWith(ext) ? [path] : [];
  });
}

/** A source file: where each word appears in it (0-based lines). */
interface Reader {
  path: string;
  words: Map<string, number[]>;
}

function reader(path: string): Reader {
  const words = new Map<string, number[]>();
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      for (const match of line.matchAll(/[\w$]+/g)) {
        const at = words.get(match[0]) ?? [];
        if (at.at(-1) !== index) at.push(index);
        words.set(match[0], at);
      }
    });
  return { path: path.slice(ROOT.length + 1), words };
}

/** The code that reads options: Lua outside the schema and its validator, and the host. */
const READERS = [
  ...files(join(ROOT, 'lua'), '.lua').filter((path) => !path.includes('/lua/flemma/config/')),
  ...files(join(ROOT, 'src'), '.ts'),
].map(reader);

/** The named keys of a path (`parameters.<p>.timeout` → parameters, timeout). */
function keys(path: string): string[] {
  return path.split('.').filter((key) => !/^[<{]/.test(key));
}

/** Files where the option's key appears (anywhere: a loose test for options marked as working). */
function named(path: string): string[] {
  const leaf = keys(path).at(-1) ?? '';
  return READERS.filter((file) => file.words.has(leaf)).map((file) => file.path);
}

/**
 * Files where the option's key appears within a few lines of its parent key (`ruler` near
 * `char`): the tighter test for options marked **later**, which must not be read.
 */
function read(path: string): string[] {
  const named = keys(path);
  const leaf = named.at(-1) ?? '';
  const parent = named.at(-2);
  return READERS.filter((file) => {
    const leaves = file.words.get(leaf) ?? [];
    if (parent === undefined) return leaves.length > 0;
    const parents = file.words.get(parent) ?? [];
    return leaves.some((a) => parents.some((b) => Math.abs(a - b) <= 8));
  }).map((file) => file.path);
}

/**
 * Options marked **later** whose keys the search finds for another reason, checked by hand.
 * An entry goes when its mark does.
 */
const LATER_BUT_NAMED: Record<string, string> = {
  'parameters.<p>.temperature':
    'the general parameters.temperature is read; a provider table`s own temperature is not',
  'parameters.<p>.timeout': 'as above, for timeout',
  'parameters.<p>.cache_retention': 'as above, for cache_retention',
  experimental:
    'the top-level table is reserved; what the code reads is parameters.openai.experimental (its phase labels)',
  'ui.progress.position':
    'progress and position are common words; the request indicator is drawn at the end of its @Assistant: line',
};

/** Options marked as working whose key is not a word of the code, checked by hand. */
const NOW_BUT_UNNAMED: Record<string, string> = {};

const NOW = ['now', '**yes**', 'next request', 'next call'];

describe('docs/configuration.md', () => {
  const rows = configurationRows(readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8'));
  const options = rows.flatMap((row) =>
    row.paths
      .filter((path) => !/[[*]/.test(path))
      .map((path) => ({ path, later: row.now === 'later', now: row.now })),
  );

  it('reads its tables (every row has a path and a known mark)', () => {
    expect(options.length).toBeGreaterThan(150);
    expect(options.map((option) => option.path)).toEqual(
      expect.arrayContaining(['keymaps.normal.tool_execute', 'parameters.<p>.thinking']),
    );
    expect(rows.filter((row) => row.now !== 'later' && !NOW.includes(row.now))).toEqual([]);
  });

  it('marks **later** exactly the options the help marks "Not read yet"', () => {
    const help = helpMarks(readFileSync(join(ROOT, 'doc/flemma.txt'), 'utf8'));
    // `<p>` is the help's `{provider}`; a row for a whole named table (`mcp.servers.<name>`) is
    // the help's entry of the table (`mcp.servers`).
    const toHelp = (path: string): string => {
      const tag = path.replace(/<p>/g, '{provider}').replace(/<name>/g, '{name}');
      return help.has(tag) ? tag : tag.replace(/\.\{name\}$/, '');
    };
    const missing = options.filter((option) => !help.has(toHelp(option.path)));
    expect(
      missing.map((option) => option.path),
      'rows without a help entry',
    ).toEqual([]);
    const disagree = options
      .filter((option) => help.get(toHelp(option.path)) !== option.later)
      .map(
        (option) =>
          `${option.path}: ${option.later ? 'later' : option.now} here, ${help.get(toHelp(option.path)) === true ? '' : 'not '}"Not read yet" in the help`,
      );
    expect(disagree).toEqual([]);
  });

  it('marks as working only options the code names, and **later** none it reads', () => {
    const unnamed = options
      .filter((option) => !option.later && !(option.path in NOW_BUT_UNNAMED))
      .filter((option) => named(option.path).length === 0)
      .map((option) => `${option.path} is marked ${option.now}, but no code names it`);
    const readLater = options
      .filter((option) => option.later && !(option.path in LATER_BUT_NAMED))
      .map((option) => ({ option, files: read(option.path) }))
      .filter(({ files: found }) => found.length > 0)
      .map(
        ({ option, files: found }) =>
          `${option.path} is marked later, but ${found.join(', ')} read it`,
      );
    expect([...unnamed, ...readLater]).toEqual([]);
    // The exceptions stay exceptions: each is still marked later and still found by the search.
    for (const path of Object.keys(LATER_BUT_NAMED)) {
      expect(options.find((option) => option.path === path)?.later, path).toBe(true);
    }
  });

  it('catches an option marked later that the code reads', () => {
    expect(read('keymaps.normal.tool_execute')).toContain('lua/flemma/chat/init.lua');
    expect(read('ruler.char')).toContain('lua/flemma/ui/init.lua');
    expect(read('parameters.connect_timeout')).toEqual([]);
  });
});

describe('README.md', () => {
  it('lists every built-in :Flemma command (or its group)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const line = /\*\*`:Flemma` commands\*\*:([\s\S]*?);/.exec(readme)?.[1] ?? '';
    const listed = [...line.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');
    const lua = files(join(ROOT, 'lua'), '.lua').map((path) => readFileSync(path, 'utf8'));
    const builtin = readFileSync(join(ROOT, 'lua/flemma/commands/builtin.lua'), 'utf8');
    const table = builtin.slice(builtin.indexOf('M.commands = {'));
    const registered = [
      ...lua.flatMap((text) =>
        [...text.matchAll(/commands"?\)?\.register\("([\w:-]+)"/g)].map((match) => match[1] ?? ''),
      ),
      // The built-in table: `name = {` or `["group:name"] = {` at its first level.
      ...[...table.matchAll(/^ {2}(?:\["([\w:-]+)"\]|(\w+)) = \{/gm)].map(
        (match) => match[1] ?? match[2] ?? '',
      ),
    ];
    expect(registered).toEqual(expect.arrayContaining(['send', 'status', 'autopilot:enable']));
    const unlisted = registered.filter(
      (name) => !listed.includes(name) && !listed.includes(`${name.split(':')[0] ?? ''}:*`),
    );
    expect(unlisted, 'commands the README does not name').toEqual([]);
  });
});

describe('docs/hooks.md', () => {
  it('marks every event the host fires as firing today', () => {
    const hooks = readFileSync(join(ROOT, 'docs/hooks.md'), 'utf8');
    const table = hooks.slice(hooks.indexOf('## The events of the specification'));
    const unmarked = HOOK_NAMES.filter((name) => !table.includes(`| \`${name}\` ✓ |`));
    expect(unmarked).toEqual([]);
  });
});
