// Where `gd`, `gf` and hover lead (src/core/chat/navigation.ts), from the parsed tree: the tool
// blocks (dropped ones included), the references on a line with their byte columns, and the
// answers and texts the keys and the language server show.
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type FileProbe,
  type NavigationPlace,
  definitionAt,
  hoverAt,
  lineReferences,
  navigationBlocks,
  referenceAt,
} from '../../src/core/chat/navigation.js';
import { parseLines, splitLines } from '../../src/core/chat/parser.js';
import { NAVIGATION_CHAT } from '../helpers/chat-lines.js';

const FILES: Record<string, 'directory' | { size: number }> = {
  '/project/chats/notes.md': { size: 23 },
  '/project/chats/parts': 'directory',
  '/home/me/todo.md': { size: 5 },
};
const probe: FileProbe = (path) => FILES[path] ?? 'missing';
const PLACE: NavigationPlace = { baseDir: '/project/chats', home: '/home/me', probe };

const NOTHING = {
  message:
    'Nothing to go to here (put the cursor on a tool use, a tool result or an @./file reference)',
};

function definition(lines: string[], line: number, col: number, filesOnly = false) {
  return definitionAt(parseLines(lines), lines, line - 1, col, PLACE, filesOnly);
}

function hover(lines: string[], line: number, col: number) {
  return hoverAt(parseLines(lines), lines, line - 1, col, PLACE);
}

describe('gd between tool uses and results', () => {
  it('goes from a tool use (header, blank line or JSON) to its result, and back to the header', () => {
    for (const line of [7, 8, 9, 11, 13])
      expect(definition(NAVIGATION_CHAT, line, 3)).toEqual({ row: 27 });
    for (const line of [28, 29, 31, 32])
      expect(definition(NAVIGATION_CHAT, line, 0)).toEqual({ row: 6 });
  });

  it('says why when there is nothing to go to', () => {
    expect(definition(NAVIGATION_CHAT, 18, 2)).toEqual({
      message: 'No result for tool use toolu_02Bash (bash) yet',
    });
    const nothing = NOTHING;
    // A header inside a fence is an example; prose, markers and the frontmatter are nothing.
    expect(definition(NAVIGATION_CHAT, 24, 3)).toEqual(nothing);
    expect(definition(NAVIGATION_CHAT, 5, 0)).toEqual(nothing);
    expect(definition(NAVIGATION_CHAT, 4, 0)).toEqual(nothing);
    const orphan = ['@You:', '**Tool Result:** `toolu_gone`', '', '```', 'x', '```'];
    expect(definition(orphan, 2, 0)).toEqual({
      message: 'No tool use with id toolu_gone in this chat',
    });
  });

  it('still navigates tool blocks the parser drops with a warning', () => {
    const lines = [
      '@Assistant:', // 1
      '**Tool Use:** `bash` (`bad_json`)', // 2
      '```json',
      '{ not json',
      '```',
      '**Tool Use:** `bash` (`no_fence`)', // 6
      'prose',
      '@You:', // 8
      '**Tool Result:** `bad_json`', // 9
      '```',
      'ok',
      '```',
      '**Tool Result:** `no_fence` (error)', // 13
      'no fence here',
    ];
    expect(definition(lines, 4, 0)).toEqual({ row: 8 });
    expect(definition(lines, 9, 0)).toEqual({ row: 1 });
    expect(definition(lines, 6, 0)).toEqual({ row: 12 });
    expect(definition(lines, 13, 0)).toEqual({ row: 5 });
    // The dropped block is the header line alone when it has no fence.
    expect(definition(lines, 7, 0)).toEqual(NOTHING);
    expect(hover(lines, 13, 0)).toContain(
      '**Tool result** for `bash` (`no_fence`): finished with an error',
    );
  });

  it('from a result, the last use with its id before it; from a use, the first result after it', () => {
    const lines = [
      '@Assistant:', // 1
      '**Tool Use:** `a` (`same`)', // 2
      '```json',
      '{}',
      '```',
      '@You:', // 6
      '**Tool Result:** `same`', // 7
      '```',
      '1',
      '```',
      '@Assistant:', // 11
      '**Tool Use:** `a` (`same`)', // 12
      '```json',
      '{}',
      '```',
      '@You:', // 16
      '**Tool Result:** `same`', // 17
      '```',
      '2',
      '```',
      '@You:', // 21
      '**Tool Result:** `early`', // 22
      '```',
      '```',
      '@Assistant:', // 25
      '**Tool Use:** `b` (`early`)', // 26
      '```json',
      '{}',
      '```',
    ];
    expect(definition(lines, 2, 0)).toEqual({ row: 6 });
    expect(definition(lines, 12, 0)).toEqual({ row: 16 });
    expect(definition(lines, 17, 0)).toEqual({ row: 11 });
    expect(definition(lines, 7, 0)).toEqual({ row: 1 });
    // Out of order: the nearest one the other way.
    expect(definition(lines, 22, 0)).toEqual({ row: 25 });
    expect(definition(lines, 26, 0)).toEqual({ row: 21 });
  });
});

describe('references under the cursor', () => {
  it('has the byte columns of each reference, stripped punctuation and multibyte text counted', () => {
    const line = '看@./x.png, then @../up/y.md. include("parts/a.md") and include( \'b.md\' )';
    const refs = lineReferences(line);
    const enc = (text: string): number => Buffer.byteLength(text, 'utf8');
    expect(refs.map((r) => [r.startCol, r.endCol, r.raw, r.path, r.include])).toEqual([
      [enc('看'), enc('看@./x.png'), './x.png', './x.png', false],
      [
        enc('看@./x.png, then '),
        enc('看@./x.png, then @../up/y.md'),
        '../up/y.md',
        '../up/y.md',
        false,
      ],
      [
        enc('看@./x.png, then @../up/y.md. '),
        enc('看@./x.png, then @../up/y.md. include("parts/a.md")'),
        'parts/a.md',
        'parts/a.md',
        true,
      ],
      [
        enc('看@./x.png, then @../up/y.md. include("parts/a.md") and '),
        enc(line),
        'b.md',
        'b.md',
        true,
      ],
    ]);
    const first = refs[0];
    expect(referenceAt(line, first?.startCol ?? -1)?.raw).toBe('./x.png');
    expect(referenceAt(line, (first?.endCol ?? 0) - 1)?.raw).toBe('./x.png');
    expect(referenceAt(line, first?.endCol ?? 0)).toBeUndefined();
    expect(referenceAt(line, 0)).toBeUndefined();
  });

  it('decodes as the host reads references, and skips an empty include()', () => {
    expect(lineReferences('see @./ci%20failure.png and @//tmp/a.log;type=text/plain.')).toEqual([
      expect.objectContaining({ raw: './ci%20failure.png', path: './ci failure.png' }),
      expect.objectContaining({ raw: '//tmp/a.log;type=text/plain', path: '/tmp/a.log' }),
    ]);
    expect(lineReferences('include("") and mirror@./legacy')).toEqual([]);
  });

  it('gf opens the file the host would read, relative to the chat, and says when it is missing', () => {
    expect(definition(NAVIGATION_CHAT, 2, 12, true)).toEqual({ path: '/project/chats/notes.md' });
    expect(definition(NAVIGATION_CHAT, 2, 44, true)).toEqual({
      message: '@../shared/style.md: no such file: /project/shared/style.md',
    });
    expect(definition(['@You:', 'see @~/todo.md'], 2, 6, true)).toEqual({
      path: '/home/me/todo.md',
    });
    expect(definition(['@You:', '{{ include("parts/x.md") }}'], 2, 5, true)).toEqual({
      message: 'parts/x.md: no such file: /project/chats/parts/x.md',
    });
    // Nothing under the cursor: Neovim's own gf.
    expect(definition(NAVIGATION_CHAT, 2, 2, true)).toBeNull();
    expect(definition(NAVIGATION_CHAT, 7, 2, true)).toBeNull();
    // gd opens references too.
    expect(definition(NAVIGATION_CHAT, 2, 12)).toEqual({ path: '/project/chats/notes.md' });
  });

  it("gf on the path a task's result names opens the child's file (only in a tool result)", () => {
    const chat = [
      '@Assistant:',
      '**Tool Use:** `task` (`toolu_T`)',
      '',
      '```json',
      '{"prompt":"p"}',
      '```',
      '',
      '@You:',
      '**Tool Result:** `toolu_T` (error)',
      '',
      '```',
      "The task failed: boom. The task's chat: notes.tasks/01-a.chat",
      '```',
      '',
      "The task's chat: notes.tasks/01-a.chat",
    ];
    const path = {
      message: 'notes.tasks/01-a.chat: no such file: /project/chats/notes.tasks/01-a.chat',
    };
    expect(definition(chat, 12, 45, true)).toEqual(path);
    expect(definition(chat, 12, 3, true)).toBeNull();
    expect(definition(chat, 15, 20, true)).toBeNull();
  });
});

describe('hover', () => {
  it('describes tool blocks, references and the message around the cursor', () => {
    expect(hover(NAVIGATION_CHAT, 28, 5)).toBe(
      [
        '**Tool result** for `read` (`toolu_01Read`): finished',
        'Tool use on line 7',
        '@You: message 3 of 3, lines 27–32',
      ].join('\n\n'),
    );
    expect(hover(NAVIGATION_CHAT, 15, 0)).toBe(
      [
        '**Tool use** `bash` (`toolu_02Bash`)',
        'No result yet',
        '@Assistant: message 2 of 3, lines 4–25',
      ].join('\n\n'),
    );
    expect(hover(NAVIGATION_CHAT, 7, 0)).toContain('Result on line 28: finished');
    expect(hover(NAVIGATION_CHAT, 5, 0)).toBe('@Assistant: message 2 of 3, lines 4–25');
    expect(hover(NAVIGATION_CHAT, 2, 12)).toBe(
      '**@./notes.md**\n\n`/project/chats/notes.md` (23 bytes)',
    );
    expect(hover(['@You:', '@./parts and @./none.md'], 2, 3)).toBe(
      '**@./parts**\n\n`/project/chats/parts` (a directory)',
    );
    expect(hover(['@You:', '@./parts and @./none.md'], 2, 15)).toBe(
      '**@./none.md**\n\n`/project/chats/none.md` (no such file)',
    );
    expect(hover(['@You:', 'include("parts")'], 2, 0)).toBe(
      '**include("parts")**\n\n`/project/chats/parts` (a directory)',
    );
    // Before the first message: nothing.
    expect(hover(['```lua', 'x = 1', '```', '@You:', 'hi'], 2, 0)).toBeNull();
  });

  it('names thinking blocks by kind and placeholders by status', () => {
    const lines = [
      '@Assistant:', // 1
      '<thinking anthropic:signature="abc">', // 2
      'hmm',
      '</thinking>',
      '<thinking redacted>', // 5
      'x',
      '</thinking>',
      '<thinking>', // 8
      'y',
      '</thinking>',
      '**Tool Use:** `bash` (`t1`)', // 11
      '```json',
      '{}',
      '```',
      '@You:', // 15
      '**Tool Result:** `t1`', // 16
      '```flemma:tool status=approved',
      '```',
    ];
    expect(hover(lines, 3, 0)).toContain('**Thinking** (signed by anthropic), lines 2–4');
    expect(hover(lines, 5, 0)).toContain('**Thinking** (redacted), lines 5–7');
    expect(hover(lines, 9, 0)).toContain('**Thinking** (unsigned), lines 8–10');
    expect(hover(lines, 11, 0)).toContain('Result on line 16: approved, not run yet');
    expect(hover(lines, 17, 0)).toContain(
      '**Tool result** for `bash` (`t1`): approved, not run yet',
    );
    // gd from a thinking block: nothing to go to.
    expect(definitionAt(parseLines(lines), lines, 2, 0, PLACE)).toEqual(NOTHING);
  });
});

describe('the blocks navigation reads', () => {
  const FIXTURES = new URL('../fixtures/chat/', import.meta.url);
  const LENIENT = new Set([
    'tool-use-json',
    'tool-use-missing-fence',
    'tool-use-unclosed-fence',
    'tool-result-missing-fence',
    'tool-result-unclosed-fence',
  ]);

  it("on every chat fixture: the tree's tool blocks, and more only where the parser dropped one", () => {
    for (const file of readdirSync(FIXTURES).filter((name) => name.endsWith('.chat'))) {
      const lines = splitLines(readFileSync(new URL(file, FIXTURES), 'utf8'));
      const document = parseLines(lines);
      const expected: string[] = [];
      for (const message of document.messages) {
        for (const segment of message.segments) {
          if (segment.kind === 'tool_use') {
            expected.push(`${String(segment.span.startLine)} use ${segment.id} ${segment.name}`);
          } else if (segment.kind === 'tool_result') {
            const status = segment.placeholder?.status ?? (segment.isError ? 'error' : 'done');
            expected.push(
              `${String(segment.span.startLine)} result ${segment.toolUseId} ${status}`,
            );
          }
        }
      }
      const found = navigationBlocks(document, lines)
        .filter((block) => block.kind !== 'thinking')
        .map((block) =>
          block.kind === 'tool_use'
            ? `${String(block.startLine)} use ${block.id} ${block.name}`
            : `${String(block.startLine)} result ${block.id} ${block.status}`,
        );
      const dropped = new Set(
        document.diagnostics
          .filter((diagnostic) => LENIENT.has(diagnostic.code))
          .map((diagnostic) => diagnostic.span.startLine),
      );
      const extra = found.filter(
        (entry) => !expected.includes(entry) && !dropped.has(Number(entry.split(' ')[0])),
      );
      expect({ file, missing: expected.filter((entry) => !found.includes(entry)), extra }).toEqual({
        file,
        missing: [],
        extra: [],
      });
      // Sorted by line, as `gd` reads them.
      const starts = navigationBlocks(document, lines).map((block) => block.startLine);
      expect(starts).toEqual([...starts].sort((a, b) => a - b));
    }
  });
});
