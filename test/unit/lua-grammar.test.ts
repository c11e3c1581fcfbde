// The chat grammar is read on the Lua side in one place: the line scan (`lua/flemma/ui/scan.lua`,
// kept in step with the parser by test/nvim/ui-scan.test.ts); everything else asks it or uses
// the structure the host sends. A Lua file elsewhere that spells out a piece of the grammar as
// something to match (a role marker pattern, a tool block title, a fence, a thinking tag, the
// placeholder's info string) fails here. Writing a marker (`"@You:"` as a line) is not reading.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

const READERS: [string, RegExp][] = [
  ['a role marker pattern', /["']\^@/],
  ['a tool block title', /\*\*Tool (?:Use|Result):\*\*|%\*%\*Tool/],
  ['the placeholder fence', /flemma:tool/],
  ['a code fence', /["']\^?```|%`%`%`|`\{3/],
  ['a thinking tag', /<\/?\??thinking/],
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.lua') ? [path] : [];
  });
}

/** Each reading of the grammar in `text` (comments left out), as `line: what`. */
export function grammarReadings(text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, index) => {
    const code = line.replace(/--.*$/, '');
    for (const [what, pattern] of READERS) {
      if (pattern.test(code)) found.push(`${String(index + 1)}: ${what}`);
    }
  });
  return found;
}

describe('the chat grammar in Lua', () => {
  it('is read only by ui/scan.lua', () => {
    const lua = join(ROOT, 'lua');
    const scan = join(lua, 'flemma', 'ui', 'scan.lua');
    const found = sources(lua)
      .filter((file) => file !== scan)
      .flatMap((file) =>
        grammarReadings(readFileSync(file, 'utf8')).map((at) => `${relative(ROOT, file)}:${at}`),
      );
    expect(found).toEqual([]);
    expect(grammarReadings(readFileSync(scan, 'utf8')).length).toBeGreaterThan(3);
  });

  it('the check finds each kind of reading, and leaves writing and comments alone', () => {
    const text = [
      'if line:match("^@You:%s*$") then end',
      'local needle = "**Tool Result:** `" .. id .. "`"',
      'if lang == "flemma:tool" then end',
      'if text:match("^```") then end',
      'if text:match("^</?thinking") then end',
      'vim.api.nvim_buf_set_lines(0, 0, -1, false, { "@You:", "" })',
      '-- a comment naming **Tool Use:** and ```',
    ].join('\n');
    expect(grammarReadings(text)).toEqual([
      '1: a role marker pattern',
      '2: a tool block title',
      '3: the placeholder fence',
      '4: a code fence',
      '5: a thinking tag',
    ]);
  });
});
