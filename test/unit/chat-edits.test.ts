// Tool-cycle edits: Phase 1's placeholders, Phase 2's grouping and error texts, result
// injection (docs/chat-format.md §7, §8), checked on the exact buffer lines and on the re-parsed tree.
import { describe, expect, it } from 'vitest';
import type {
  ChatDocument,
  Message,
  PlaceholderStatus,
  ToolResultSegment,
  ToolUseSegment,
} from '../../src/core/chat/ast.js';
import {
  ABORTED_TEXT,
  DENIED_TEXT,
  type Edit,
  REJECTED_TEXT,
  applyEdits,
  bottomToTop,
  classifyToolBlocks,
  narrowEdit,
  planPlaceholders,
  planResult,
  planUserSuppliedResult,
  protectionWarning,
  resolutionText,
  unresolvedToolUses,
} from '../../src/core/chat/edits.js';
import { parseLines } from '../../src/core/chat/parser.js';
import { toolUse } from '../helpers/chat-lines.js';

const T3 = '```';
const T4 = '````';
const T5 = '`````';

// Buffer fixtures, spelled out by hand so the tests do not depend on the writer they check.
const use = toolUse;
const seed = (id: string, status: PlaceholderStatus, ...body: string[]): string[] => [
  `**Tool Result:** \`${id}\``,
  '',
  `${T3}flemma:tool status=${status}`,
  ...body,
  T3,
];
const legacy = (id: string, status: PlaceholderStatus, ...body: string[]): string[] => [
  `**Tool Result:** \`${id}\` (${status})`,
  '',
  T3,
  ...body,
  T3,
];
const finished = (id: string, ...body: string[]): string[] => [
  `**Tool Result:** \`${id}\``,
  '',
  T3,
  ...body,
  T3,
];

const toolUses = (m: Message): ToolUseSegment[] =>
  m.segments.filter((s): s is ToolUseSegment => s.kind === 'tool_use');
const toolResults = (m: Message): ToolResultSegment[] =>
  m.segments.filter((s): s is ToolResultSegment => s.kind === 'tool_result');
const allResults = (d: ChatDocument): ToolResultSegment[] => d.messages.flatMap(toolResults);
const resultOf = (d: ChatDocument, id: string): ToolResultSegment => {
  const found = allResults(d).find((r) => r.toolUseId === id);
  if (found === undefined) throw new Error(`no result for ${id}`);
  return found;
};

/** Plan placeholders, apply them, re-parse, and check the tree invariants. */
function place(
  lines: string[],
  requests: { id: string; status: PlaceholderStatus }[],
): { edits: Edit[]; out: string[]; after: ChatDocument } {
  const before = parseLines(lines);
  const edits = planPlaceholders(before, lines, requests);
  const out = applyEdits(lines, edits);
  const after = parseLines(out);
  expect(after.diagnostics).toEqual([]);
  // Every edit is anchored on at least one existing row; several go bottom to top.
  for (const edit of edits) expect(edit.expect.length).toBeGreaterThan(0);
  expect(edits).toEqual(bottomToTop(edits));
  // Results follow the tool uses' order in every @You: answering an assistant message.
  after.messages.forEach((message, index) => {
    if (message.role !== 'Assistant') return;
    const next = after.messages[index + 1];
    if (next?.role !== 'You') return;
    const order = toolUses(message).map((u) => u.id);
    const ids = toolResults(next)
      .map((r) => r.toolUseId)
      .filter((id) => order.includes(id));
    expect(ids).toEqual(order.filter((id) => ids.includes(id)));
  });
  // Every new placeholder is in the current form with the requested status.
  const seen = new Set<string>();
  for (const request of requests) {
    if (seen.has(request.id)) continue;
    seen.add(request.id);
    const result = resultOf(after, request.id);
    if (allResults(before).some((r) => r.toolUseId === request.id)) continue;
    expect(result.placeholder).toEqual({ status: request.status, form: 'fence' });
    expect(result.content).toBe('');
  }
  return { edits, out, after };
}

describe('unresolvedToolUses (docs/chat-format.md §8)', () => {
  it('lists tool uses without any result, in buffer order, across messages', () => {
    const lines = [
      '@You:',
      'go',
      '',
      '@Assistant:',
      ...use('bash', 'a1'), // line 5
      '',
      ...use('read', 'a2'), // line 11
      '',
      '@You:',
      ...finished('a1', 'ok'),
      '',
      '@Assistant:',
      ...use('write', 'b1'),
      '',
      ...use('edit', 'b2'),
      '',
      ...use('ls', 'b3'),
      '',
      '@You:',
      ...seed('b2', 'pending'),
      '',
      ...legacy('b3', 'approved'),
    ];
    const d = parseLines(lines);
    expect(d.diagnostics).toEqual([]);
    expect(unresolvedToolUses(d)).toEqual([
      { id: 'a2', name: 'read', input: {}, line: 11, aborted: false, messageIndex: 1 },
      { id: 'b1', name: 'write', input: {}, line: 25, aborted: false, messageIndex: 3 },
    ]);
  });

  it('treats a finished error result as a result', () => {
    const lines = [
      '@Assistant:',
      ...use('bash', 'x'),
      '',
      '@You:',
      '**Tool Result:** `x` (error)',
      '',
      T3,
      'boom',
      T3,
    ];
    expect(unresolvedToolUses(parseLines(lines))).toEqual([]);
  });

  it('marks tool uses of a message that ends with an abort marker, blank lines aside', () => {
    const aborted = [
      '@Assistant:',
      'Working.',
      '',
      ...use('bash', 'x', '{"command":"ls"}'),
      '',
      '<!-- flemma:aborted: Response interrupted by the user. -->',
      '',
      '',
    ];
    expect(unresolvedToolUses(parseLines(aborted))).toEqual([
      {
        id: 'x',
        name: 'bash',
        input: { command: 'ls' },
        line: 4,
        aborted: true,
        messageIndex: 0,
      },
    ]);
    const continued = [...aborted.slice(0, -2), 'and then more text'];
    expect(unresolvedToolUses(parseLines(continued))[0]?.aborted).toBe(false);
  });

  it('lists a repeated id under its derived id, marked as a duplicate (test/unit/chat-tool-ids.test.ts)', () => {
    const lines = ['@Assistant:', ...use('bash', 'x'), '', ...use('bash', 'x')];
    const unresolved = unresolvedToolUses(parseLines(lines));
    expect(unresolved.map((u) => u.id)).toEqual(['x', 'x_dup2']);
    expect(unresolved[1]?.duplicateOf).toEqual({ id: 'x', firstLine: 2 });
  });
});

describe('planPlaceholders (docs/chat-format.md §8, scenario 14)', () => {
  it('creates @You: after the assistant message when there is none', () => {
    const lines = ['@You:', 'go', '', '@Assistant:', 'Let me look.', '', ...use('bash', 'x'), ''];
    const { out, edits } = place(lines, [{ id: 'x', status: 'pending' }]);
    expect(out).toEqual([
      '@You:',
      'go',
      '',
      '@Assistant:',
      'Let me look.',
      '',
      ...use('bash', 'x'),
      '',
      '@You:',
      '',
      '**Tool Result:** `x`',
      '',
      '```flemma:tool status=pending',
      T3,
      '',
    ]);
    // Anchored on the tool use's closing fence, which is written back unchanged.
    expect(edits).toEqual([
      {
        start: 10,
        end: 11,
        expect: [T3],
        lines: [
          T3,
          '',
          '@You:',
          '',
          '**Tool Result:** `x`',
          '',
          '```flemma:tool status=pending',
          T3,
        ],
      },
    ]);
  });

  it('creates @You: at the end of a buffer without a trailing blank line', () => {
    const lines = ['@Assistant:', ...use('bash', 'x')];
    const { out } = place(lines, [{ id: 'x', status: 'approved' }]);
    expect(out).toEqual([
      ...lines,
      '',
      '@You:',
      '',
      '**Tool Result:** `x`',
      '',
      '```flemma:tool status=approved',
      T3,
    ]);
  });

  it('creates @You: between the assistant message and a message that follows directly', () => {
    const lines = ['@Assistant:', ...use('bash', 'x'), '@Assistant:', 'more'];
    const { out, after } = place(lines, [{ id: 'x', status: 'pending' }]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('bash', 'x'),
      '',
      '@You:',
      '',
      '**Tool Result:** `x`',
      '',
      '```flemma:tool status=pending',
      T3,
      '',
      '@Assistant:',
      'more',
    ]);
    expect(after.messages.map((m) => m.role)).toEqual(['Assistant', 'You', 'Assistant']);
  });

  it('goes right after an empty @You: whose next line is blank', () => {
    const lines = ['@Assistant:', ...use('bash', 'x'), '', '@You:', ''];
    const { out } = place(lines, [{ id: 'x', status: 'pending' }]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('bash', 'x'),
      '',
      '@You:',
      '',
      '**Tool Result:** `x`',
      '',
      '```flemma:tool status=pending',
      T3,
      '',
    ]);
  });

  it('goes right after an empty @You: that ends the buffer', () => {
    const lines = ['@Assistant:', ...use('bash', 'x'), '', '@You:'];
    const { out } = place(lines, [{ id: 'x', status: 'denied' }]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('bash', 'x'),
      '',
      '@You:',
      '',
      '**Tool Result:** `x`',
      '',
      '```flemma:tool status=denied',
      T3,
    ]);
  });

  it('goes above user text that directly follows @You:, which stays below', () => {
    const lines = ['@Assistant:', ...use('bash', 'x'), '', '@You:', 'Thanks! And then?', ''];
    const { out, after } = place(lines, [{ id: 'x', status: 'pending' }]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('bash', 'x'),
      '',
      '@You:',
      '',
      '**Tool Result:** `x`',
      '',
      '```flemma:tool status=pending',
      T3,
      '',
      'Thanks! And then?',
      '',
    ]);
    const you = after.messages[1];
    expect(you?.segments.map((s) => s.kind)).toEqual(['tool_result', 'text']);
  });

  it('goes after the block of the latest earlier tool (in order)', () => {
    const lines = [
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      '@You:',
      '',
      ...finished('a', 'file text'),
      '',
    ];
    const { out } = place(lines, [{ id: 'b', status: 'pending' }]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      '@You:',
      '',
      ...finished('a', 'file text'),
      '',
      '**Tool Result:** `b`',
      '',
      '```flemma:tool status=pending',
      T3,
      '',
    ]);
  });

  it('goes between existing results when they skip our tool (out of order)', () => {
    const lines = [
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      ...use('ls', 'c'),
      '',
      '@You:',
      '',
      ...seed('a', 'approved'),
      '',
      ...finished('c', 'listing'),
    ];
    const { out } = place(lines, [{ id: 'b', status: 'pending' }]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      ...use('ls', 'c'),
      '',
      '@You:',
      '',
      ...seed('a', 'approved'),
      '',
      ...seed('b', 'pending'),
      '',
      ...finished('c', 'listing'),
    ]);
  });

  it('goes before the first result when our tool precedes them all', () => {
    const lines = [
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      '@You:',
      '',
      ...finished('b', 'done'),
      '',
      'Thanks.',
    ];
    const { out, edits } = place(lines, [{ id: 'a', status: 'approved' }]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      '@You:',
      '',
      ...seed('a', 'approved'),
      '',
      ...finished('b', 'done'),
      '',
      'Thanks.',
    ]);
    // Anchored on the blank line above the first result.
    expect(edits[0]).toMatchObject({ start: 14, end: 15, expect: [''] });
  });

  it('places several placeholders in one plan, all in tool-use order', () => {
    const lines = [
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      ...use('ls', 'c'),
      '',
      ...use('grep', 'd'),
      '',
      '@You:',
      '',
      ...finished('c', 'listing'),
      '',
    ];
    const { out, edits } = place(lines, [
      { id: 'd', status: 'pending' },
      { id: 'a', status: 'approved' },
      { id: 'b', status: 'denied' },
    ]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      ...use('ls', 'c'),
      '',
      ...use('grep', 'd'),
      '',
      '@You:',
      '',
      ...seed('a', 'approved'),
      '',
      ...seed('b', 'denied'),
      '',
      ...finished('c', 'listing'),
      '',
      ...seed('d', 'pending'),
      '',
    ]);
    expect(edits).toHaveLength(2);
    expect(edits[0]?.start).toBeGreaterThan(edits[1]?.start ?? Infinity);
  });

  it('writes all placeholders of a fresh reply into one new @You:', () => {
    const lines = ['@Assistant:', ...use('read', 'a'), '', ...use('bash', 'b'), ''];
    const { out, edits } = place(lines, [
      { id: 'a', status: 'approved' },
      { id: 'b', status: 'pending' },
    ]);
    expect(edits).toHaveLength(1);
    expect(out).toEqual([
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      '@You:',
      '',
      ...seed('a', 'approved'),
      '',
      ...seed('b', 'pending'),
      '',
    ]);
  });

  it('writes all placeholders above the user text of an empty @You:', () => {
    const lines = ['@Assistant:', ...use('read', 'a'), '', ...use('bash', 'b'), '', '@You:', 'hi'];
    const { out } = place(lines, [
      { id: 'b', status: 'pending' },
      { id: 'a', status: 'aborted' },
    ]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      '@You:',
      '',
      ...seed('a', 'aborted'),
      '',
      ...seed('b', 'pending'),
      '',
      'hi',
    ]);
  });

  it('reuses existing blocks (both forms, finished too) and never duplicates an id', () => {
    const lines = [
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      ...use('ls', 'c'),
      '',
      ...use('grep', 'd'),
      '',
      '@You:',
      '',
      ...legacy('a', 'pending'),
      '',
      ...seed('b', 'approved'),
      '',
      ...finished('c', 'out'),
    ];
    const d = parseLines(lines);
    expect(
      planPlaceholders(d, lines, [
        { id: 'a', status: 'pending' },
        { id: 'b', status: 'approved' },
        { id: 'c', status: 'approved' },
      ]),
    ).toEqual([]);
    const { out, after } = place(lines, [
      { id: 'd', status: 'pending' },
      { id: 'd', status: 'approved' },
      { id: 'a', status: 'approved' },
    ]);
    expect(out).toEqual([...lines, '', ...seed('d', 'pending')]);
    expect(allResults(after).map((r) => [r.toolUseId, r.placeholder?.form])).toEqual([
      ['a', 'suffix'],
      ['b', 'fence'],
      ['c', undefined],
      ['d', 'fence'],
    ]);
    // Applying the same plan to the new buffer adds nothing.
    expect(planPlaceholders(after, out, [{ id: 'd', status: 'pending' }])).toEqual([]);
  });

  it('keeps a blank line before text that follows the previous block directly', () => {
    const lines = [
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      '@You:',
      ...legacy('a', 'approved'),
      'Note to self.',
    ];
    const { out } = place(lines, [{ id: 'b', status: 'pending' }]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('read', 'a'),
      '',
      ...use('bash', 'b'),
      '',
      '@You:',
      ...legacy('a', 'approved'),
      '',
      ...seed('b', 'pending'),
      '',
      'Note to self.',
    ]);
  });

  it('plans several assistant messages bottom to top', () => {
    const lines = [
      '@Assistant:',
      ...use('read', 'old'),
      '',
      '@You:',
      'never mind that',
      '',
      '@Assistant:',
      ...use('bash', 'new'),
      '',
    ];
    const { out, edits } = place(lines, [
      { id: 'old', status: 'aborted' },
      { id: 'new', status: 'pending' },
    ]);
    expect(edits.map((e) => e.start)).toEqual([15, 7]);
    expect(out).toEqual([
      '@Assistant:',
      ...use('read', 'old'),
      '',
      '@You:',
      '',
      ...seed('old', 'aborted'),
      '',
      'never mind that',
      '',
      '@Assistant:',
      ...use('bash', 'new'),
      '',
      '@You:',
      '',
      ...seed('new', 'pending'),
      '',
    ]);
  });

  it('places placeholders after a frontmatter and around thinking and text', () => {
    const lines = [
      '```lua',
      'flemma.opt.thinking = "high"',
      '```',
      '@Assistant:',
      '<thinking>',
      'plan',
      '</thinking>',
      '',
      ...use('bash', 'x'),
      '',
      'That should do it.',
      '',
    ];
    const { out } = place(lines, [{ id: 'x', status: 'pending' }]);
    expect(out.slice(14)).toEqual([
      'That should do it.',
      '',
      '@You:',
      '',
      ...seed('x', 'pending'),
      '',
    ]);
  });

  it('skips ids that no tool use carries or that the writer cannot spell', () => {
    const lines = ['@Assistant:', '**Tool Use:** `bash` (`a`b`)', '', '```json', '{}', '```'];
    const d = parseLines(lines);
    expect(toolUses(d.messages[0] as Message).map((u) => u.id)).toEqual(['a`b']);
    expect(
      planPlaceholders(d, lines, [
        { id: 'a`b', status: 'pending' },
        { id: 'nope', status: 'pending' },
      ]),
    ).toEqual([]);
  });

  it('is refused by the editor (and applyEdits) once the anchor row changed', () => {
    const lines = ['@Assistant:', ...use('bash', 'x'), '', '@You:', ''];
    const edits = planPlaceholders(parseLines(lines), lines, [{ id: 'x', status: 'pending' }]);
    const edited = [...lines];
    edited[7] = '@You: typing';
    expect(applyEdits(edited, edits)).toEqual(edited);
    expect(applyEdits(lines.slice(0, 3), edits)).toEqual(lines.slice(0, 3));
  });
});

describe('planResult (docs/chat-format.md §7, scenario 15)', () => {
  const base = (block: string[]): string[] => [
    '@Assistant:',
    ...use('calculator', 'a'),
    '',
    ...use('bash', 'b'),
    '',
    '@You:',
    '',
    ...block,
    '',
    ...seed('b', 'pending'),
    '',
    'Thanks!',
  ];
  const inject = (
    block: string[],
    output: unknown,
    isError = false,
    partialOutput?: unknown,
  ): { out: string[]; after: ChatDocument; edit: Edit } => {
    const lines = base(block);
    const d = parseLines(lines);
    const edit = planResult(
      d,
      lines,
      'a',
      partialOutput === undefined
        ? { id: 'a', output, isError }
        : { id: 'a', output, isError, partialOutput },
    );
    if (edit === undefined) throw new Error('no edit');
    expect(edit.expect).toEqual(block);
    const out = applyEdits(lines, [edit]);
    const after = parseLines(out);
    expect(after.diagnostics).toEqual([]);
    expect(allResults(after).map((r) => r.toolUseId)).toEqual(['a', 'b']);
    expect(resultOf(after, 'a').placeholder).toBeUndefined();
    expect(resultOf(after, 'b').placeholder).toEqual({ status: 'pending', form: 'fence' });
    expect(out.slice(-2)).toEqual(['', 'Thanks!']);
    return { out, after, edit };
  };
  const block = (out: string[]): string[] => out.slice(15, out.length - 7);

  it('writes a success as a bare header and the fenced output (seed form)', () => {
    const { out, after, edit } = inject(seed('a', 'approved'), '105');
    expect(edit).toMatchObject({ start: 15, end: 19 });
    expect(block(out)).toEqual(['**Tool Result:** `a`', '', T3, '105', T3]);
    expect(resultOf(after, 'a')).toMatchObject({ content: '105', isError: false });
  });

  it('replaces a legacy (pending) placeholder the same way', () => {
    const { out } = inject(legacy('a', 'approved'), 'line 1\nline 2');
    expect(block(out)).toEqual(['**Tool Result:** `a`', '', T3, 'line 1', 'line 2', T3]);
  });

  it('marks a failure with (error)', () => {
    const { out, after } = inject(seed('a', 'approved'), 'Division by zero', true);
    expect(block(out)).toEqual(['**Tool Result:** `a` (error)', '', T3, 'Division by zero', T3]);
    expect(resultOf(after, 'a').isError).toBe(true);
  });

  it('writes structured output as JSON in a json fence', () => {
    const { out } = inject(seed('a', 'approved'), { value: 105, unit: null });
    expect(block(out)).toEqual([
      '**Tool Result:** `a`',
      '',
      `${T3}json`,
      '{"value":105,"unit":null}',
      T3,
    ]);
  });

  it('appends partial output to a failure', () => {
    const { out } = inject(seed('a', 'approved'), 'timed out', true, 'step 1\nstep 2');
    expect(block(out)).toEqual([
      '**Tool Result:** `a` (error)',
      '',
      T3,
      'timed out',
      '',
      'Partial output:',
      'step 1',
      'step 2',
      T3,
    ]);
  });

  it('grows the fence past backtick runs in the output', () => {
    const four = inject(seed('a', 'approved'), `${T3}lua\nprint(1)\n${T3}`);
    expect(block(four.out)).toEqual([
      '**Tool Result:** `a`',
      '',
      T4,
      `${T3}lua`,
      'print(1)',
      T3,
      T4,
    ]);
    expect(resultOf(four.after, 'a').content).toBe(`${T3}lua\nprint(1)\n${T3}`);
    const five = inject(seed('a', 'approved'), `a ${T4} b`);
    expect(block(five.out)).toEqual(['**Tool Result:** `a`', '', T5, `a ${T4} b`, T5]);
  });

  it('replaces a placeholder with a four-backtick fence and user text inside', () => {
    const { out } = inject(
      ['**Tool Result:** `a`', '', '````flemma:tool status=approved', '```', 'x', '```', '````'],
      'ok',
    );
    expect(block(out)).toEqual(['**Tool Result:** `a`', '', T3, 'ok', T3]);
  });

  it('is undefined without a placeholder, unless a finished result may be replaced', () => {
    const lines = base(finished('a', 'old'));
    const d = parseLines(lines);
    const result = { id: 'a', output: 'new', isError: false };
    expect(planResult(d, lines, 'a', result)).toBeUndefined();
    expect(planResult(d, lines, 'zzz', result)).toBeUndefined();
    const edit = planResult(d, lines, 'a', result, { replaceFinished: true });
    expect(edit).toEqual({
      start: 15,
      end: 20,
      expect: finished('a', 'old'),
      lines: finished('a', 'new'),
    });
  });

  it('is refused once the user edited the block', () => {
    const lines = base(seed('a', 'approved'));
    const edit = planResult(parseLines(lines), lines, 'a', {
      id: 'a',
      output: 'x',
      isError: false,
    });
    expect(edit).toBeDefined();
    const edited = [...lines];
    edited[17] = '```flemma:tool status=rejected';
    expect(applyEdits(edited, edit === undefined ? [] : [edit])).toEqual(edited);
  });

  it('combines with other results when ordered bottom to top', () => {
    const lines = base(seed('a', 'approved'));
    const d = parseLines(lines);
    const edits = ['a', 'b'].map((id) =>
      planResult(d, lines, id, { id, output: `out ${id}`, isError: false }),
    );
    const out = applyEdits(lines, bottomToTop(edits.filter((e): e is Edit => e !== undefined)));
    expect(out.slice(15)).toEqual([
      ...finished('a', 'out a'),
      '',
      ...finished('b', 'out b'),
      '',
      'Thanks!',
    ]);
  });
});

describe('classifyToolBlocks (docs/chat-format.md §8, scenario 16)', () => {
  const lines = [
    '@Assistant:',
    ...use('bash', 'p0'),
    '',
    ...use('bash', 'p1'),
    '',
    ...use('write', 'ap0'),
    '',
    ...use('write', 'ap1'),
    '',
    ...use('bash', 'de'),
    '',
    ...use('bash', 're0'),
    '',
    ...use('bash', 're1'),
    '',
    ...use('read', 'done'),
    '',
    ...use('read', 'ws'),
    '',
    '@You:',
    '',
    // Blocks deliberately not in tool-use order: the groups are sorted by the tool use.
    ...legacy('p1', 'pending', 'my own output'),
    '',
    ...seed('p0', 'pending'),
    '',
    ...seed('ap1', 'approved', 'edited by me'),
    '',
    ...seed('ws', 'approved', '  ', ''),
    '',
    ...legacy('ap0', 'approved'),
    '',
    ...seed('de', 'denied', 'please?'),
    '',
    ...legacy('re1', 'rejected', 'Not on my machine.'),
    '',
    ...seed('re0', 'rejected'),
    '',
    ...finished('done', 'text'),
    '',
    ...seed('orphan', 'pending'),
    '',
    '@Assistant:',
    'Working on it.',
    '',
    ...use('bash', 'ab'),
    '',
    '<!-- flemma:aborted: Stopped by user -->',
    '',
    '@You:',
    '',
    ...seed('ab', 'aborted'),
  ];
  const lineOf = (text: string): number => lines.indexOf(text) + 1;
  const d = parseLines(lines);
  const groups = classifyToolBlocks(d);
  const ids = (key: keyof typeof groups): string[] => groups[key].map((b) => b.id);

  it('parses the fixture cleanly apart from the orphan', () => {
    expect(d.diagnostics.map((x) => x.code)).toEqual(['tool-result-orphaned']);
  });

  it('groups by status and content, sorted by the tool use line', () => {
    expect(ids('pendingEmpty')).toEqual(['p0']);
    expect(ids('pendingWithContent')).toEqual(['p1']);
    expect(ids('approved')).toEqual(['ap0', 'ws']);
    expect(ids('approvedWithContent')).toEqual(['ap1']);
    expect(ids('denied')).toEqual(['de']);
    expect(ids('rejected')).toEqual(['re0', 're1']);
    expect(ids('aborted')).toEqual(['ab']);
  });

  it('pairs each block with its tool use and keeps the content as written', () => {
    expect(groups.pendingWithContent[0]).toEqual({
      id: 'p1',
      name: 'bash',
      input: {},
      toolUseLine: lineOf('**Tool Use:** `bash` (`p1`)'),
      toolResultLine: lineOf('**Tool Result:** `p1` (pending)'),
      content: 'my own output',
    });
    expect(groups.approvedWithContent[0]).toMatchObject({
      id: 'ap1',
      name: 'write',
      toolResultLine: lineOf('**Tool Result:** `ap1`'),
      content: 'edited by me',
    });
    expect(groups.rejected.map((b) => b.content)).toEqual(['', 'Not on my machine.']);
    expect(groups.approved[1]).toMatchObject({ id: 'ws', content: '  \n' });
    expect(groups.aborted[0]).toEqual({
      id: 'ab',
      name: 'bash',
      input: {},
      toolUseLine: lineOf('**Tool Use:** `bash` (`ab`)'),
      toolResultLine: lineOf('**Tool Result:** `ab`'),
      content: '',
      abortMessage: 'Stopped by user',
    });
  });

  it('resolves each group to the texts of docs/chat-format.md §8', () => {
    const texts = [...groups.denied, ...groups.rejected].map((b) =>
      resolutionText(b.id === 'de' ? 'denied' : 'rejected', b.content),
    );
    expect(texts).toEqual([DENIED_TEXT, REJECTED_TEXT, 'Not on my machine.']);
    const ab = groups.aborted[0];
    expect(ab && resolutionText('aborted', ab.content, ab.abortMessage)).toBe('Stopped by user');
  });

  it('warns about protected blocks in the documented wording', () => {
    expect(protectionWarning(groups.approvedWithContent.length)).toBe(
      '1 approved block has your text: not run (plain ``` sends it)',
    );
    expect(protectionWarning(2)).toBe(
      '2 approved blocks have your text: not run (plain ``` sends it)',
    );
  });

  it('is empty for a document without placeholders', () => {
    const empty = classifyToolBlocks(parseLines(['@You:', 'hi']));
    expect(Object.values(empty).every((group: unknown[]) => group.length === 0)).toBe(true);
  });

  it('takes the first placeholder when an id has two', () => {
    const twice = parseLines([
      '@Assistant:',
      ...use('bash', 'x'),
      '',
      '@You:',
      ...seed('x', 'denied'),
      '',
      ...seed('x', 'approved'),
    ]);
    const g = classifyToolBlocks(twice);
    expect(g.denied.map((b) => b.toolResultLine)).toEqual([9]);
    expect(g.approved).toEqual([]);
  });
});

describe('resolutionText (scenario 17)', () => {
  it('denied is the policy text, even with content', () => {
    expect(resolutionText('denied', '')).toBe('The tool was denied by a policy.');
    expect(resolutionText('denied', 'but I want it')).toBe('The tool was denied by a policy.');
  });

  it('rejected is the user text, or the default when empty or blank', () => {
    expect(resolutionText('rejected', '')).toBe('This tool has been rejected by the user.');
    expect(resolutionText('rejected', ' \n ')).toBe('This tool has been rejected by the user.');
    expect(resolutionText('rejected', "I don't want to run rm -rf on my home directory.")).toBe(
      "I don't want to run rm -rf on my home directory.",
    );
  });

  it('aborted is the abort message, or the default', () => {
    expect(resolutionText('aborted', '', 'Cut off')).toBe('Cut off');
    expect(resolutionText('aborted', 'ignored', '')).toBe(ABORTED_TEXT);
    expect(resolutionText('aborted', '')).toBe('Response interrupted by the user.');
  });
});

describe('planUserSuppliedResult (docs/chat-format.md §8: pending with content)', () => {
  const base = (block: string[]): string[] => [
    '@Assistant:',
    ...use('bash', 'x'),
    '',
    '@You:',
    '',
    ...block,
  ];
  const supply = (block: string[]): { out: string[]; after: ChatDocument } => {
    const lines = base(block);
    const edit = planUserSuppliedResult(parseLines(lines), lines, 'x');
    if (edit === undefined) throw new Error('no edit');
    expect(edit).toMatchObject({ start: 9, end: lines.length, expect: block });
    const out = applyEdits(lines, [edit]);
    const after = parseLines(out);
    expect(after.diagnostics).toEqual([]);
    expect(resultOf(after, 'x').placeholder).toBeUndefined();
    expect(unresolvedToolUses(after)).toEqual([]);
    return { out, after };
  };

  it('strips the flemma:tool fence and keeps the content (seed form)', () => {
    const { out, after } = supply(seed('x', 'pending', 'total 0', 'drwxr-xr-x .'));
    expect(out.slice(9)).toEqual(['**Tool Result:** `x`', '', T3, 'total 0', 'drwxr-xr-x .', T3]);
    expect(resultOf(after, 'x')).toMatchObject({
      content: 'total 0\ndrwxr-xr-x .',
      isError: false,
    });
  });

  it('clears the (pending) suffix (legacy form)', () => {
    const { out } = supply(legacy('x', 'pending', '42'));
    expect(out.slice(9)).toEqual(['**Tool Result:** `x`', '', T3, '42', T3]);
  });

  it('keeps content holding a fence intact', () => {
    const body = ['see:', T3, 'code', T3];
    const { out, after } = supply([
      '**Tool Result:** `x`',
      '',
      '````flemma:tool status=pending',
      ...body,
      T4,
    ]);
    expect(out.slice(9)).toEqual(['**Tool Result:** `x`', '', T4, ...body, T4]);
    expect(resultOf(after, 'x').content).toBe(body.join('\n'));
  });

  it('is undefined for an empty pending block, another status or no block', () => {
    for (const block of [
      seed('x', 'pending'),
      seed('x', 'pending', ''),
      seed('x', 'approved', 'edited'),
      seed('x', 'rejected', 'no'),
      finished('x', 'done'),
    ]) {
      const lines = base(block);
      expect(planUserSuppliedResult(parseLines(lines), lines, 'x')).toBeUndefined();
    }
    const lines = base(seed('x', 'pending', 'out'));
    expect(planUserSuppliedResult(parseLines(lines), lines, 'y')).toBeUndefined();
  });
});

describe('applyEdits', () => {
  it('applies edits in order and leaves the input alone', () => {
    const lines = ['a', 'b', 'c'];
    const out = applyEdits(lines, [
      { start: 2, end: 3, lines: ['C', 'D'], expect: ['c'] },
      { start: 0, end: 1, lines: [], expect: ['a'] },
      { start: 1, end: 1, lines: ['x'], expect: [] },
    ]);
    expect(out).toEqual(['b', 'x', 'C', 'D']);
    expect(lines).toEqual(['a', 'b', 'c']);
  });

  it('skips an edit whose rows changed or lie past the end', () => {
    const lines = ['a', 'b'];
    expect(applyEdits(lines, [{ start: 1, end: 2, lines: ['B'], expect: ['x'] }])).toEqual(lines);
    expect(applyEdits(lines, [{ start: 2, end: 3, lines: ['B'], expect: ['c'] }])).toEqual(lines);
  });
});

describe('narrowEdit', () => {
  it('replaces only the rows that change', () => {
    const edit: Edit = {
      start: 10,
      end: 14,
      expect: ['**Tool Result:** `t1`', '', `${T3}flemma:tool status=pending`, T3],
      lines: ['**Tool Result:** `t1`', '', `${T3}flemma:tool status=approved`, T3],
    };
    expect(narrowEdit(edit)).toEqual({
      start: 12,
      end: 13,
      expect: [`${T3}flemma:tool status=pending`],
      lines: [`${T3}flemma:tool status=approved`],
    });
  });

  it('keeps one row of an insertion, and of an edit that changes nothing', () => {
    const insertion: Edit = { start: 3, end: 4, expect: ['@You:'], lines: ['@You:', '', 'x'] };
    expect(narrowEdit(insertion)).toEqual(insertion);
    const before: Edit = { start: 3, end: 5, expect: ['a', 'b'], lines: ['x', 'a', 'b'] };
    expect(narrowEdit(before)).toEqual({ start: 3, end: 4, expect: ['a'], lines: ['x', 'a'] });
    const same: Edit = { start: 0, end: 2, expect: ['a', 'b'], lines: ['a', 'b'] };
    expect(narrowEdit(same)).toEqual({ start: 1, end: 2, expect: ['b'], lines: ['b'] });
  });

  it('gives the same buffer as the whole edit', () => {
    const lines = ['a', 'b', 'c', 'd', 'e'];
    const cases: Edit[] = [
      { start: 1, end: 4, expect: ['b', 'c', 'd'], lines: ['b', 'X', 'd'] },
      { start: 1, end: 4, expect: ['b', 'c', 'd'], lines: ['b', 'd'] },
      { start: 0, end: 2, expect: ['a', 'b'], lines: ['a', 'b', 'b', 'a', 'b'] },
      { start: 2, end: 5, expect: ['c', 'd', 'e'], lines: [] },
    ];
    for (const edit of cases) {
      expect(applyEdits(lines, [narrowEdit(edit)])).toEqual(applyEdits(lines, [edit]));
      expect(narrowEdit(edit).expect.length).toBeGreaterThan(0);
    }
  });
});

describe('a whole cycle', () => {
  it('goes from a reply to finished results in tool-use order', () => {
    const reply = [
      '@You:',
      'Check the tests and the config.',
      '',
      '@Assistant:',
      'Let me look.',
      '',
      ...use('bash', 'toolu_01A', '{"command":"make test"}'),
      '',
      ...use('read', 'toolu_01B', '{"path":"config.lua"}'),
      '',
      ...use('bash', 'toolu_01C', '{"command":"rm -rf /"}'),
      '',
    ];
    // Phase 1.
    const statuses: Record<string, PlaceholderStatus> = {
      toolu_01A: 'pending',
      toolu_01B: 'approved',
      toolu_01C: 'denied',
    };
    const doc1 = parseLines(reply);
    const requests = unresolvedToolUses(doc1).map((u) => ({
      id: u.id,
      status: statuses[u.id] ?? 'pending',
    }));
    let lines = applyEdits(reply, planPlaceholders(doc1, reply, requests));
    // The user fills in the pending block by hand.
    const doc2 = parseLines(lines);
    const pending = resultOf(doc2, 'toolu_01A');
    lines = [
      ...lines.slice(0, pending.fence.closeLine - 1),
      '42 passed',
      ...lines.slice(pending.fence.closeLine - 1),
    ];
    // Phase 2.
    const doc3 = parseLines(lines);
    const groups = classifyToolBlocks(doc3);
    expect(groups.pendingWithContent.map((b) => b.id)).toEqual(['toolu_01A']);
    expect(groups.approved.map((b) => b.id)).toEqual(['toolu_01B']);
    expect(groups.denied.map((b) => b.id)).toEqual(['toolu_01C']);
    const edits = [
      ...groups.pendingWithContent.map((b) => planUserSuppliedResult(doc3, lines, b.id)),
      ...groups.approved.map((b) =>
        planResult(doc3, lines, b.id, { id: b.id, output: 'return {}', isError: false }),
      ),
      ...groups.denied.map((b) =>
        planResult(doc3, lines, b.id, {
          id: b.id,
          output: resolutionText('denied', b.content),
          isError: true,
        }),
      ),
    ].filter((e): e is Edit => e !== undefined);
    lines = applyEdits(lines, bottomToTop(edits));
    expect(lines.slice(reply.length)).toEqual([
      '@You:',
      '',
      ...finished('toolu_01A', '42 passed'),
      '',
      ...finished('toolu_01B', 'return {}'),
      '',
      '**Tool Result:** `toolu_01C` (error)',
      '',
      T3,
      DENIED_TEXT,
      T3,
      '',
    ]);
    const done = parseLines(lines);
    expect(done.diagnostics).toEqual([]);
    expect(unresolvedToolUses(done)).toEqual([]);
    expect(allResults(done).every((r) => r.placeholder === undefined)).toBe(true);
    expect(Object.values(classifyToolBlocks(done)).flat()).toEqual([]);
  });
});

describe('random chats', () => {
  // A small deterministic generator: the same chats on every run.
  function rng(seed: number): (n: number) => number {
    let state = seed;
    return (n) => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return Math.floor((state / 2147483648) * n);
    };
  }
  const statuses: PlaceholderStatus[] = ['pending', 'approved', 'denied', 'rejected', 'aborted'];

  function chat(pick: (n: number) => number, ordered: boolean): string[] {
    const lines: string[] = ['@You:', 'start', ''];
    let next = 0;
    for (let turn = 0, turns = 1 + pick(3); turn < turns; turn++) {
      lines.push('@Assistant:');
      if (pick(2) === 0) lines.push('Some text.', '');
      const ids: string[] = [];
      for (let i = 0, n = 1 + pick(4); i < n; i++) {
        const id = `t${String(next++)}`;
        ids.push(id);
        lines.push(...use('bash', id), '');
      }
      if (pick(3) === 0) lines.push('<!-- flemma:aborted: cut -->', '');
      const last = turn === turns - 1;
      if (last && pick(2) === 0) continue;
      lines.push('@You:');
      if (pick(2) === 0) lines.push('');
      let answered = ids.filter(() => pick(2) === 0);
      if (!ordered) answered = answered.sort(() => pick(3) - 1);
      for (const id of answered) {
        const kind = pick(3);
        const status = statuses[pick(statuses.length)] ?? 'pending';
        const body = pick(3) === 0 ? ['typed'] : [];
        if (kind === 0) lines.push(...seed(id, status, ...body));
        else if (kind === 1) lines.push(...legacy(id, status, ...body));
        else lines.push(...finished(id, 'out'));
        if (pick(4) !== 0) lines.push('');
      }
      if (pick(2) === 0) lines.push('user text', '');
      // Every earlier @You: needs text or results before the next reply.
      if (!last && answered.length === 0) lines.push('continue', '');
    }
    return lines;
  }

  it('places every missing placeholder, in order, without new diagnostics', () => {
    let placed = 0;
    for (let seedValue = 1; seedValue <= 300; seedValue++) {
      const pick = rng(seedValue);
      const ordered = seedValue % 3 !== 0;
      const lines = chat(pick, ordered);
      const before = parseLines(lines);
      expect(before.diagnostics).toEqual([]);
      const requests = unresolvedToolUses(before).map((u) => ({
        id: u.id,
        status: u.aborted ? ('aborted' as const) : (statuses[pick(3)] ?? 'pending'),
      }));
      placed += requests.length;
      const out = applyEdits(lines, planPlaceholders(before, lines, requests));
      const after = parseLines(out);
      expect(after.diagnostics, lines.join('\n')).toEqual(before.diagnostics);
      expect(unresolvedToolUses(after)).toEqual([]);
      // Only insertions: every original line is still there, in order.
      expect(keepsAll(lines, out)).toBe(true);
      if (ordered) {
        after.messages.forEach((message, index) => {
          const you = after.messages[index + 1];
          if (message.role !== 'Assistant' || you?.role !== 'You') return;
          const ids = toolResults(you).map((r) => r.toolUseId);
          expect(ids, out.join('\n')).toEqual(toolUses(message).map((u) => u.id));
        });
      }
      // Phase 2 resolves everything but empty pending and protected approved blocks.
      const groups = classifyToolBlocks(after);
      const edits = [
        ...groups.pendingWithContent.map((b) => planUserSuppliedResult(after, out, b.id)),
        ...groups.approved.map((b) =>
          planResult(after, out, b.id, { id: b.id, output: 'ran', isError: false }),
        ),
        ...(['denied', 'rejected', 'aborted'] as const).flatMap((status) =>
          groups[status].map((b) =>
            planResult(after, out, b.id, {
              id: b.id,
              output: resolutionText(status, b.content, b.abortMessage),
              isError: true,
            }),
          ),
        ),
      ];
      expect(edits.every((e) => e !== undefined)).toBe(true);
      const resolved = applyEdits(
        out,
        bottomToTop(edits.filter((e): e is Edit => e !== undefined)),
      );
      const final = parseLines(resolved);
      expect(final.diagnostics).toEqual(before.diagnostics);
      const left = classifyToolBlocks(final);
      expect(left.pendingEmpty.map((b) => b.id)).toEqual(groups.pendingEmpty.map((b) => b.id));
      expect(left.approvedWithContent.map((b) => b.id)).toEqual(
        groups.approvedWithContent.map((b) => b.id),
      );
      expect(
        [left.pendingWithContent, left.approved, left.denied, left.rejected, left.aborted].flat(),
      ).toEqual([]);
    }
    expect(placed).toBeGreaterThan(300);
  });

  function keepsAll(original: readonly string[], edited: readonly string[]): boolean {
    let at = 0;
    for (const line of edited) if (line === original[at]) at++;
    return at === original.length;
  }
});
