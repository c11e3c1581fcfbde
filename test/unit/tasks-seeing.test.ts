// Seeing a task (docs/tasks.md, "Seeing a task"): a running child's state folded from its run
// events and said on one line, the parent's preview drawn once a frame with the attention signal
// when a child waits, the `:Flemma tasks` rows, and the note `:Flemma task:return` writes.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseChat } from '../../src/core/chat/parser.js';
import { listingLines, rowOfFile, rowOfRun, taskOrigin } from '../../src/core/tasks/listing.js';
import { inertText, latestAnswer, returnNote } from '../../src/core/tasks/return.js';
import {
  type ChildEvent,
  endedState,
  nextState,
  startingState,
  stateLine,
} from '../../src/core/tasks/status.js';
import { TaskBoard } from '../../src/host/tasks/status.js';
import { placeholder, toolUse } from '../helpers/chat-lines.js';
import { FRAME_MS } from '../../src/host/tools/live-output.js';

const CHILD = { profile: 'explorer', file: 'n.tasks/01-a.chat' };
const totals = (turns: number, tokens: number, cost: number): ChildEvent => ({
  type: 'usage',
  totals: { turns, cost, inputTokens: tokens - 10, outputTokens: 10 },
});

function fold(events: ChildEvent[]) {
  return events.reduce(nextState, startingState());
}

describe('the state line of a running child', () => {
  it.each<[string, ChildEvent[], string]>([
    ['before its first request', [], 'starting · turn 0 · 0 tokens · $0.0000'],
    [
      'while the model writes',
      [{ type: 'request', turn: 1 }],
      'writing · turn 1 · 0 tokens · $0.0000',
    ],
    [
      'while its tools run',
      [
        { type: 'request', turn: 1 },
        totals(1, 2400, 0.0123),
        { type: 'tool_started', id: 'a', name: 'grep' },
        { type: 'tool_started', id: 'b', name: 'read' },
        { type: 'tool_started', id: 'c', name: 'grep' },
      ],
      'grep, read · turn 1 · 2.4k tokens · $0.0123',
    ],
    [
      'once they finished and the next request went',
      [
        { type: 'tool_started', id: 'a', name: 'grep' },
        { type: 'tool_finished', id: 'a', name: 'grep', status: 'success' },
        { type: 'request', turn: 2 },
      ],
      'writing · turn 2 · 0 tokens · $0.0000',
    ],
    [
      'while a call waits for approval',
      [
        { type: 'request', turn: 1 },
        { type: 'attention', reason: 'approval', tools: ['bash'] },
      ],
      'waiting for approval: bash (<M-CR> shows it) · turn 1 · 0 tokens · $0.0000',
    ],
  ])('%s', (_, events, line) => {
    expect(stateLine(fold(events))).toBe(line);
  });

  it('says done, or why it failed, on one bounded line', () => {
    const running = fold([{ type: 'request', turn: 3 }, totals(3, 1_500_000, 1.5)]);
    expect(stateLine(endedState(running, undefined), CHILD)).toBe(
      'done · turn 3 · 1.5M tokens · $1.50 · explorer in n.tasks/01-a.chat',
    );
    const failed = endedState(running, `boom\u001b[31m\n${'x'.repeat(300)}`);
    const line = stateLine(failed, CHILD);
    expect(line).toMatch(/^failed: boom \[31m x+…$/);
    expect(Array.from(line)).toHaveLength(160);
  });

  it('keeps the last line the model wrote', () => {
    const state = fold([
      { type: 'text', text: 'first\nsecond\n' },
      { type: 'text', text: '\n  ' },
    ]);
    expect(state.lastText).toBe('second');
  });
});

describe('the preview of a running child', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is drawn at most once a frame per buffer, goes when the child ends, and a wait raises attention', () => {
    vi.useFakeTimers();
    const lua = { notify: vi.fn() };
    const previews = { note: vi.fn(), noteAll: vi.fn() };
    const board = new TaskBoard(lua, previews);
    const other = { profile: 'explorer', file: 'n.tasks/02-b.chat' };
    for (let turn = 1; turn <= 50; turn++) {
      board.progress(7, 'toolu_1', { type: 'request', turn }, CHILD);
      board.progress(7, 'toolu_2', totals(turn, turn * 100, 0), other);
    }
    expect(previews.noteAll).not.toHaveBeenCalled();
    vi.advanceTimersByTime(FRAME_MS);
    expect(previews.noteAll.mock.calls).toEqual([
      [
        7,
        [
          ['toolu_1', 'writing · turn 50 · 0 tokens · $0.0000 · explorer in n.tasks/01-a.chat'],
          ['toolu_2', 'starting · turn 50 · 5k tokens · $0.0000 · explorer in n.tasks/02-b.chat'],
        ],
      ],
    ]);
    board.progress(7, 'toolu_1', { type: 'attention', reason: 'approval', tools: ['bash'] }, CHILD);
    expect(lua.notify).toHaveBeenCalledWith('attention.signal', {
      bufnr: 7,
      reason: 'approval',
      tools: ['bash'],
    });
    board.ended(7, 'toolu_1', { kind: 'approval', tool: 'bash' }, CHILD);
    expect(previews.note).toHaveBeenCalledWith(7, 'toolu_1', undefined);
    vi.advanceTimersByTime(FRAME_MS);
    expect(previews.noteAll).toHaveBeenCalledTimes(1);
    expect(board.of(7).get('n.tasks/01-a.chat')).toMatchObject({
      phase: 'failed',
      failure: 'bash waits for approval',
    });
    board.forget(7);
    expect(board.of(7).size).toBe(0);
  });
});

const CHILD_TEXT = (rest: string[]): string =>
  [
    '```json',
    '{"flemma":{"tools":{"$set":["read"]}},"task":{"agent":"explorer","parent":"../n.chat","tool_id":"toolu_1"}}',
    '```',
    '@You:',
    'Find it.',
    '',
    ...rest,
  ].join('\n');

const REPLY = ['@Assistant:', 'Found it in a.ts.', 'It is called twice.', ''];
const CALL = ['@Assistant:', ...toolUse('bash', 'toolu_B', '{"command":"ls"}'), ''];
const PENDING = ['@You:', ...placeholder('toolu_B', 'pending'), ''];

describe(':Flemma tasks', () => {
  it('reads where a child came from out of its frontmatter, and nothing out of other chats', () => {
    expect(taskOrigin(parseChat(CHILD_TEXT([])))).toEqual({
      agent: 'explorer',
      parent: '../n.chat',
      toolId: 'toolu_1',
    });
    expect(taskOrigin(parseChat('```json\n{"task": 3}\n```\n@You:\nhi\n'))).toBeUndefined();
    expect(taskOrigin(parseChat('```json\n{"task": \n```\n@You:\nhi\n'))).toBeUndefined();
    expect(
      taskOrigin(parseChat('```lua\ntask = { parent = "x" }\n```\n@You:\nhi\n')),
    ).toBeUndefined();
  });

  it.each<[string, string[], string, number, string]>([
    ['its model finished', REPLY, 'done', 1, 'It is called twice.'],
    ['a call waits for approval', [...CALL, ...PENDING], 'waiting', 1, ''],
    [
      'its reply was cut off',
      ['@Assistant:', 'Half', '', '<!-- flemma:aborted: cancelled -->', ''],
      'failed',
      1,
      'Half',
    ],
    ['the user wrote next', [...REPLY, '@You:', 'More?', ''], 'stopped', 1, 'It is called twice.'],
    ['nothing happened yet', [], 'stopped', 0, ''],
  ])('a child whose file says %s', (_, rest, state, turns, last) => {
    const document = parseChat(CHILD_TEXT(rest));
    const origin = taskOrigin(document);
    if (origin === undefined) throw new Error('no origin');
    expect(rowOfFile('n.tasks/01-a.chat', origin, document)).toEqual({
      file: 'n.tasks/01-a.chat',
      agent: 'explorer',
      state,
      turns,
      last,
    });
  });

  it('lists live children by their state, numbered', () => {
    const row = {
      file: 'n.tasks/01-a.chat',
      agent: 'explorer',
      state: 'stopped' as const,
      turns: 0,
      last: '',
    };
    const live = rowOfRun(
      row,
      fold([{ type: 'request', turn: 2 }, { type: 'text', text: 'Looking' }, totals(2, 900, 0.5)]),
    );
    const done = rowOfRun(
      { ...row, file: 'n.tasks/02-longer-name.chat' },
      endedState(startingState(), 'cancelled'),
    );
    expect(listingLines('n.chat', [live, done])).toEqual([
      'n.chat: 2 tasks',
      ' 1  running  n.tasks/01-a.chat            explorer   2 turns  $0.5000  writing · Looking',
      ' 2  failed   n.tasks/02-longer-name.chat  explorer   0 turns  $0.0000  failed: cancelled',
    ]);
    expect(listingLines('n.chat', [])).toEqual(['n.chat: no tasks']);
  });
});

describe(':Flemma task:return', () => {
  it('takes the latest reply that ended the model’s turn', () => {
    expect(latestAnswer(parseChat(CHILD_TEXT([...REPLY, '@You:', 'More?', '', ...CALL])))).toBe(
      'Found it in a.ts.\nIt is called twice.',
    );
    expect(latestAnswer(parseChat(CHILD_TEXT(CALL)))).toBeUndefined();
  });

  it('makes the model’s text inert where templates and file references are read', () => {
    expect(inertText('a {{ x }} b {% y %} c @./f, @../g @/abs @~/h @mcp:s:u me@./x {z}')).toBe(
      'a { { x }} b { % y %} c @ ./f, @ ../g @ /abs @ ~/h @ mcp:s:u me@./x {z}',
    );
    const note = returnNote('n.tasks/01-a.chat', '\\@You:\nsee {{x}}');
    expect(note).toEqual([
      'The task n.tasks/01-a.chat was continued; its answer now:',
      '',
      '\\@You:',
      'see { {x}}',
    ]);
    const parsed = parseChat(['@You:', ...note].join('\n'));
    expect(parsed.messages).toHaveLength(1);
    expect(parsed.messages[0]?.segments.map((segment) => segment.kind)).toEqual(['text']);
  });
});
