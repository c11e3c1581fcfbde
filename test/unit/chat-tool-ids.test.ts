// Tool uses that repeat an id (issue 19): the derived ids, the parser's warning, the prompt that
// carries one tool use per id (each with its result), the tool cycle's placeholders and error
// text, and the cursor look-up that never runs a repeat. End to end: test/nvim/tools-duplicate-ids.
import { describe, expect, it } from 'vitest';
import type { ToolUseSegment } from '../../src/core/chat/ast.js';
import {
  applyEdits,
  classifyToolBlocks,
  planPlaceholders,
  unresolvedToolUses,
} from '../../src/core/chat/edits.js';
import { parseLines } from '../../src/core/chat/parser.js';
import { assemblePrompt } from '../../src/core/chat/prompt.js';
import { duplicateToolIdText, toolUseIds } from '../../src/core/chat/tool-ids.js';
import { toolCallAt } from '../../src/core/tools/locate.js';
import { toolUse } from '../helpers/chat-lines.js';

const T3 = '```';
const use = toolUse;
const result = (id: string, text: string, suffix = ''): string[] => [
  `**Tool Result:** \`${id}\`${suffix}`,
  '',
  T3,
  text,
  T3,
];

function usesOf(doc: ReturnType<typeof parseLines>): ToolUseSegment[] {
  return doc.messages.flatMap((m) =>
    m.segments.filter((s): s is ToolUseSegment => s.kind === 'tool_use'),
  );
}

describe('tool uses with the same id', () => {
  it('keeps the first id and derives unique, provider-safe ids for the repeats', () => {
    const long = 'toolu_' + 'a'.repeat(70);
    const lines = [
      '@Assistant:',
      ...use('bash', 'x'),
      ...use('bash', 'x'),
      ...use('bash', 'x_dup3'),
      ...use('bash', 'x'),
      ...use('read', long),
      ...use('read', long),
    ];
    const doc = parseLines(lines);
    const uses = usesOf(doc);
    const ids = toolUseIds(doc.messages);
    // The third `x` would be x_dup3, which another tool use has: it takes x_dup4.
    expect(uses.map((u) => ids.keyOf(u))).toEqual([
      'x',
      'x_dup2',
      'x_dup3',
      'x_dup4',
      long,
      'toolu_' + 'a'.repeat(53) + '_dup2',
    ]);
    expect(ids.keyOf(uses[5] as ToolUseSegment)).toHaveLength(64);
    expect(uses.map((u) => ids.duplicateOf(u))).toEqual([
      undefined,
      { id: 'x', firstLine: 2 },
      undefined,
      { id: 'x', firstLine: 2 },
      undefined,
      { id: long, firstLine: 22 },
    ]);
  });

  it('warns on the second tool use, naming the id and the first one’s line', () => {
    const lines = [
      '@Assistant:',
      ...use('bash', 'dup'),
      '',
      '@You:',
      'again',
      '@Assistant:',
      ...use('bash', 'dup'),
    ];
    const doc = parseLines(lines);
    expect(doc.diagnostics).toEqual([
      {
        severity: 'warning',
        code: 'tool-use-duplicate-id',
        message:
          'Tool use id dup is already used by the tool use on line 2; this one is not run and is answered as dup_dup2 with an error result',
        span: { startLine: 11, endLine: 11 },
      },
    ]);
  });

  it('sends every tool use under its own id, each with its result, and a repeat’s result is not the first’s', () => {
    const lines = [
      '@Assistant:',
      ...use('bash', 'dup', '{"command":"a"}'),
      ...use('bash', 'dup', '{"command":"b"}'),
      '@You:',
      ...result('dup', 'ran a'),
      ...result('dup_dup2', duplicateToolIdText({ id: 'dup', firstLine: 2 }), ' (error)'),
    ];
    const doc = parseLines(lines);
    expect(doc.diagnostics.map((d) => d.code)).toEqual(['tool-use-duplicate-id']);
    const prompt = assemblePrompt(doc);
    expect(prompt.pendingToolCalls).toEqual([]);
    const assistant = prompt.messages[0];
    expect(assistant?.parts.map((p) => (p.kind === 'tool_use' ? p.id : p.kind))).toEqual([
      'dup',
      'dup_dup2',
    ]);
    const user = prompt.messages[1];
    expect(
      user?.parts.map((p) =>
        p.kind === 'tool_result' ? [p.toolUseId, p.isError, p.parts[0]] : p.kind,
      ),
    ).toEqual([
      ['dup', false, { kind: 'text', text: 'ran a' }],
      [
        'dup_dup2',
        true,
        {
          kind: 'text',
          text: 'Duplicate tool id dup: an earlier tool call (line 2 of the chat) already has this id, so this call was not run. Call the tool again with a new id if it is still needed.',
        },
      ],
    ]);
  });

  it('without results: both pending, the repeat marked, each with its own synthetic result', () => {
    const doc = parseLines(['@Assistant:', ...use('bash', 'dup'), ...use('bash', 'dup')]);
    const prompt = assemblePrompt(doc);
    expect(prompt.pendingToolCalls).toEqual([
      { id: 'dup', name: 'bash', line: 2, aborted: false },
      {
        id: 'dup_dup2',
        name: 'bash',
        line: 7,
        aborted: false,
        duplicateOf: { id: 'dup', firstLine: 2 },
      },
    ]);
    const results = prompt.messages[1]?.parts.flatMap((p) =>
      p.kind === 'tool_result' ? [p.toolUseId] : [],
    );
    expect(results).toEqual(['dup', 'dup_dup2']);
  });

  it('places a placeholder for each, and a repeat’s never waits or runs', () => {
    const lines = ['@Assistant:', ...use('bash', 'dup'), ...use('bash', 'dup')];
    const doc = parseLines(lines);
    expect(unresolvedToolUses(doc).map((u) => u.id)).toEqual(['dup', 'dup_dup2']);
    const placed = applyEdits(
      lines,
      planPlaceholders(doc, lines, [
        { id: 'dup', status: 'approved' },
        { id: 'dup_dup2', status: 'approved' },
      ]),
    );
    expect(placed.slice(11)).toEqual([
      '',
      '@You:',
      '',
      '**Tool Result:** `dup`',
      '',
      '```flemma:tool status=approved',
      '```',
      '',
      '**Tool Result:** `dup_dup2`',
      '',
      '```flemma:tool status=approved',
      '```',
    ]);
    // Approved by hand or not, the repeat is resolved as denied (its error text), never run.
    const groups = classifyToolBlocks(parseLines(placed));
    expect(groups.approved.map((b) => b.id)).toEqual(['dup']);
    expect(groups.denied.map((b) => [b.id, b.duplicateOf])).toEqual([
      ['dup_dup2', { id: 'dup', firstLine: 2 }],
    ]);
  });

  it('<M-CR> on a repeat refuses it instead of running the first call', () => {
    const lines = ['@Assistant:', ...use('bash', 'dup'), ...use('bash', 'dup')];
    const doc = parseLines(lines);
    expect(toolCallAt(doc, 2)).toMatchObject({ ok: true, call: { id: 'dup', toolUseLine: 2 } });
    expect(toolCallAt(doc, 8)).toEqual({
      ok: false,
      error: 'Tool use dup repeats the id of the tool use on line 2; it is not run',
    });
  });
});
