// The drawing scan (lua/flemma/ui/scan.lua) must see the same messages and blocks as the host's
// parser: it decides highlights and folds without asking the host. Both read the same chats —
// the fixtures, the benchmark corpus, and a few thousand random edits of them — and must agree;
// the scan's incremental path (after an edit) must agree with a full scan.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLines } from '../../src/core/chat/parser.js';
import { largeChat } from '../bench/corpus.js';
import { type Driver, ROOT } from '../helpers/driver.js';
import { launch } from '../helpers/e2e.js';

interface Outline {
  messages: { role: string; row: number; end_row: number }[];
  blocks: {
    kind: string;
    row: number;
    end_row: number;
    status?: string;
    error?: boolean;
    name?: string;
    args?: string;
  }[];
  frontmatter: number | null;
}

/** What the host's parser says, in the scan's terms (0-based rows). */
function hostOutline(lines: string[]): Outline {
  const doc = parseLines(lines);
  const blocks: Outline['blocks'] = [];
  for (const message of doc.messages) {
    for (const segment of message.segments) {
      const row = segment.span.startLine - 1;
      const end = segment.span.endLine - 1;
      if (segment.kind === 'thinking' || segment.kind === 'tool_use' || segment.kind === 'aborted')
        blocks.push({ kind: segment.kind, row, end_row: end });
      else if (segment.kind === 'slash_command')
        blocks.push({ kind: 'slash', row, end_row: end, name: segment.name, args: segment.args });
      else if (segment.kind === 'tool_result') {
        const block: Outline['blocks'][number] = { kind: 'tool_result', row, end_row: end };
        if (segment.placeholder !== undefined) block.status = segment.placeholder.status;
        if (segment.isError) block.error = true;
        blocks.push(block);
      }
    }
  }
  return {
    messages: doc.messages.map((m) => ({
      role: m.role,
      row: m.span.startLine - 1,
      end_row: m.span.endLine - 1,
    })),
    blocks,
    frontmatter: doc.frontmatter === undefined ? null : doc.frontmatter.span.endLine - 1,
  };
}

// Lua: the scan's outline of a list of chats; tool uses whose JSON the host rejects are
// dropped (the scan does not read JSON: it draws such a block anyway).
const LUA_OUTLINE = `
local scan = require("flemma.ui.scan")
local function outline(st, json_rows)
  local out = { messages = {}, blocks = {}, frontmatter = st.frontmatter and st.frontmatter.end_row or vim.NIL }
  for _, m in ipairs(st.messages) do
    out.messages[#out.messages + 1] = { role = m.role, row = m.row, end_row = m.end_row }
  end
  for _, b in ipairs(st.blocks) do
    local keep = (b.kind == "thinking" or b.kind == "tool_use" or b.kind == "tool_result" or b.kind == "aborted" or b.kind == "slash")
      and not b.open and not (b.kind == "tool_use" and json_rows[b.row])
    if keep then
      local item = { kind = b.kind, row = b.row, end_row = b.end_row }
      if b.kind == "tool_result" then
        item.status = b.status
        item.error = b.error
      elseif b.kind == "slash" then
        item.name = b.name
        item.args = b.args
      end
      out.blocks[#out.blocks + 1] = item
    end
  end
  return out
end
_G.__flemma_outline = outline
`;

let driver: Driver;

beforeAll(async () => {
  driver = (await launch({ provider: false })).d;
  await driver.lua(LUA_OUTLINE);
});

afterAll(async () => {
  await driver.quit();
});

/** Rows of tool uses whose input the host cannot read as JSON. */
function badJsonRows(lines: string[]): number[] {
  return parseLines(lines)
    .diagnostics.filter((d) => d.code === 'tool-use-json')
    .map((d) => d.span.startLine - 1);
}

async function luaOutlines(chats: string[][]): Promise<Outline[]> {
  return driver.lua<Outline[]>(
    `local chats, bad = ...
    local out = {}
    for i, lines in ipairs(chats) do
      local rows = {}
      for _, r in ipairs(bad[i]) do rows[r] = true end
      out[i] = _G.__flemma_outline(require("flemma.ui.scan").scan(lines), rows)
    end
    return out`,
    chats,
    chats.map(badJsonRows),
  );
}

/** A small deterministic random source (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRUCTURE_LINES = [
  '@You:',
  '@Assistant:',
  '@System:',
  '@Notes:',
  '```',
  '````',
  '```json',
  '```lua',
  '```flemma:tool status=approved',
  '```flemma:tool status=bogus',
  '<thinking>',
  '</thinking>',
  '<thinking redacted>',
  '<thinking anthropic:signature="abc">',
  '<thinking openai:signature="x"/>',
  '<!-- flemma:aborted: stopped -->',
  '**Tool Use:** `bash` (`toolu_9`)',
  '**Tool Result:** `toolu_9`',
  '**Tool Result:** `toolu_9` (pending)',
  '**Tool Result:** `toolu_9` (error)',
  '**Tool Result:** `toolu_9` (status=rejected)',
  '{"command": "ls"}',
  '',
  'plain text',
];

interface Edit {
  first: number;
  deleted: number;
  inserted: string[];
}

function randomEdit(lines: string[], next: () => number): Edit {
  const first = Math.floor(next() * (lines.length + 1));
  const deleted = Math.min(lines.length - first, Math.floor(next() * 3));
  const inserted: string[] = [];
  const count = Math.floor(next() * 3);
  for (let i = 0; i < count; i++) {
    inserted.push(
      next() < 0.7
        ? (STRUCTURE_LINES[Math.floor(next() * STRUCTURE_LINES.length)] ?? '')
        : (lines[Math.floor(next() * lines.length)] ?? ''),
    );
  }
  return { first, deleted, inserted };
}

function apply(lines: string[], edit: Edit): string[] {
  const out = lines.slice();
  out.splice(edit.first, edit.deleted, ...edit.inserted);
  return out.length === 0 ? [''] : out;
}

const fixtureDir = join(ROOT, 'test', 'fixtures', 'chat');
const fixtures = readdirSync(fixtureDir)
  .filter((name) => name.endsWith('.chat'))
  .map((name) => ({
    name,
    lines: readFileSync(join(fixtureDir, name), 'utf8').replace(/\n$/, '').split('\n'),
  }));

describe('the drawing scan agrees with the host parser', () => {
  it('on every fixture chat and on the benchmark corpus', async () => {
    const chats = [...fixtures.map((f) => f.lines), largeChat(256 * 1024, 100)];
    const got = await luaOutlines(chats);
    chats.forEach((lines, i) => {
      const name = fixtures[i]?.name ?? 'corpus';
      expect({ name, ...got[i] }).toEqual({ name, ...hostOutline(lines) });
    });
    // The corpus has every kind of block.
    const corpus = got[got.length - 1];
    const kinds = new Set(corpus?.blocks.map((b) => b.kind));
    expect([...kinds].sort()).toEqual(['thinking', 'tool_result', 'tool_use']);
  });

  it('on slash command lines, and on lines that only look like one', async () => {
    const chat = [
      '@You:',
      '/thinking off',
      '/flemma:model  anthropic/claude-haiku-4-5 ',
      '/pirate',
      '/usr/bin/env is text',
      '/1x is text',
      '/a: is text',
      ' /indented is text',
      '```',
      '/in-a-fence',
      '```',
      '@Assistant:',
      '/not-in-a-reply',
      '**Tool Use:** `bash` (`t1`)',
      '```json',
      '{"command":"ls"}',
      '```',
      '@You:',
      '**Tool Result:** `t1`',
      '```',
      '/not-in-a-result',
      '```',
      '/compact',
    ];
    const [got] = await luaOutlines([chat]);
    expect(got).toEqual(hostOutline(chat));
    expect(got?.blocks.filter((b) => b.kind === 'slash')).toEqual([
      { kind: 'slash', row: 1, end_row: 1, name: 'thinking', args: 'off' },
      {
        kind: 'slash',
        row: 2,
        end_row: 2,
        name: 'flemma:model',
        args: 'anthropic/claude-haiku-4-5',
      },
      { kind: 'slash', row: 3, end_row: 3, name: 'pirate', args: '' },
      { kind: 'slash', row: 22, end_row: 22, name: 'compact', args: '' },
    ]);
  });

  it('on results marked undone by :Flemma tool:undo, with and without an error', async () => {
    const chat = [
      '@You:',
      'Go.',
      '@Assistant:',
      '**Tool Use:** `edit` (`t1`)',
      '```json',
      '{"path":"a"}',
      '```',
      '**Tool Use:** `write` (`t2`)',
      '```json',
      '{"path":"b"}',
      '```',
      '@You:',
      '**Tool Result:** `t1` (undone)',
      '```',
      'Edited a',
      '```',
      '**Tool Result:** `t2` (error undone)',
      '```',
      'Cannot write b',
      '```',
    ];
    const [got] = await luaOutlines([chat]);
    expect(got).toEqual(hostOutline(chat));
    expect(got?.blocks.filter((b) => b.kind === 'tool_result')).toEqual([
      { kind: 'tool_result', row: 12, end_row: 15 },
      { kind: 'tool_result', row: 16, end_row: 19, error: true },
    ]);
  });

  it('after thousands of random edits of the fixtures', async () => {
    const next = random(20261123);
    const chats: string[][] = [];
    for (const fixture of fixtures) {
      let lines = fixture.lines;
      for (let step = 0; step < 150; step++) {
        lines = apply(lines, randomEdit(lines, next));
        chats.push(lines);
      }
    }
    expect(chats.length).toBeGreaterThan(2000);
    const got = await luaOutlines(chats);
    const wrong = chats.filter((lines, i) => !isDeepStrictEqual(got[i], hostOutline(lines)));
    if (wrong[0] !== undefined) {
      const index = chats.indexOf(wrong[0]);
      expect({ chat: wrong[0], outline: got[index] }).toEqual({
        chat: wrong[0],
        outline: hostOutline(wrong[0]),
      });
    }
    expect(wrong.length).toBe(0);
  });

  it('scanning again after an edit gives what a full scan gives', async () => {
    const next = random(7);
    const cases: { before: string[]; edit: Edit }[] = [];
    for (const fixture of fixtures) {
      let lines = fixture.lines;
      for (let step = 0; step < 60; step++) {
        const edit = randomEdit(lines, next);
        cases.push({ before: lines, edit });
        lines = apply(lines, edit);
      }
    }
    const mismatches = await driver.lua<number[]>(
      `local scan = require("flemma.ui.scan")
      local cases = ...
      local bad = {}
      for i, c in ipairs(cases) do
        local after = vim.deepcopy(c.before)
        for _ = 1, c.edit.deleted do table.remove(after, c.edit.first + 1) end
        for j, line in ipairs(c.edit.inserted) do table.insert(after, c.edit.first + j, line) end
        if #after == 0 then after = { "" } end
        local previous = scan.scan(c.before)
        local again = scan.rescan(previous, c.edit.first, #after, function(from)
          return vim.list_slice(after, from + 1)
        end, after[1])
        if not vim.deep_equal(again, scan.scan(after)) then bad[#bad + 1] = i end
      end
      return bad`,
      cases,
    );
    expect(mismatches).toEqual([]);
  });
});
