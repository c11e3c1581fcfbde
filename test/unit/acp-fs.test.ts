// The pure parts of serving an ACP agent's file and terminal requests (src/core/acp/fs.ts) and of
// its writes in the reply (src/core/acp/writes.ts): the lines a read selects, a terminal's argv and
// kept output, the write line, its undo mark, and where review, undo and rewind find it.
import { describe, expect, it } from 'vitest';
import {
  INVALID_PARAMS,
  ServeError,
  TailBuffer,
  absolutePath,
  outputLimit,
  selectLines,
  terminalArgv,
} from '../../src/core/acp/fs.js';
import { markWriteUndone, undoTarget, writeAt, writeLine } from '../../src/core/acp/writes.js';
import { parseLines } from '../../src/core/chat/parser.js';
import { rewindCut } from '../../src/core/chat/history.js';
import { callsInScope } from '../../src/core/chat/review.js';
import { MAX_BYTES } from '../../src/core/tools/truncate.js';
import { toolResult, toolUse } from '../helpers/chat-lines.js';

describe('selectLines', () => {
  it.each([
    ['a\nb\nc\n', undefined, undefined, 'a\nb\nc\n'],
    ['a\nb\nc\n', 2, undefined, 'b\nc\n'],
    ['a\nb\nc\n', 2, 1, 'b\n'],
    ['a\nb\nc', 3, 5, 'c'],
    ['a\nb\nc', undefined, 2, 'a\nb\n'],
    ['a\nb\n', 9, undefined, ''],
    ['', 1, 1, ''],
  ])('%j from line %s, %s lines: %j', (text, line, limit, expected) => {
    expect(selectLines(text, line, limit)).toBe(expected);
  });

  it('refuses a line or limit that is not a positive integer', () => {
    expect(() => selectLines('a', 0)).toThrow(/line must be a positive integer/);
    expect(() => selectLines('a', 1, 1.5)).toThrow(/limit must be a positive integer/);
  });
});

describe('absolutePath', () => {
  it('takes an absolute path, and refuses any other as invalid params', () => {
    expect(absolutePath('/a/b')).toBe('/a/b');
    let error: unknown;
    try {
      absolutePath('a/b');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ServeError);
    expect(error).toMatchObject({ code: INVALID_PARAMS });
    expect((error as Error).message).toContain('"a/b"');
  });
});

describe('terminals', () => {
  it('run a command line through the shell, and a program with arguments unparsed', () => {
    expect(terminalArgv('bash', 'ls -l | wc', [])).toEqual(['bash', '-c', 'exec 2>&1\nls -l | wc']);
    expect(terminalArgv('sh', 'printf', ['%s', '$HOME'])).toEqual([
      'sh',
      '-c',
      'exec 2>&1\nexec "$0" "$@"',
      'printf',
      '%s',
      '$HOME',
    ]);
  });

  it('keep at most the agent’s limit, never more than a bash result', () => {
    expect(outputLimit(100)).toBe(100);
    expect(outputLimit(undefined)).toBe(MAX_BYTES);
    expect(outputLimit(10 * MAX_BYTES)).toBe(MAX_BYTES);
    expect(outputLimit(-1)).toBe(MAX_BYTES);
  });

  it('keep the end of the output, cut at a character boundary', () => {
    const kept = new TailBuffer(5);
    expect(kept.read()).toEqual({ output: '', truncated: false });
    kept.push(Buffer.from('ab'));
    expect(kept.read()).toEqual({ output: 'ab', truncated: false });
    // "é" is two bytes: the last five bytes start inside it, which goes.
    for (const chunk of ['cdé', 'fg', 'h']) kept.push(Buffer.from(chunk));
    expect(kept.read()).toEqual({ output: 'éfgh', truncated: true });
  });
});

const REPLY = [
  '@You:',
  'Fix it.',
  '',
  '@Assistant:',
  'Fixing.',
  '',
  writeLine('acp_write_1', '/p/notes.txt'),
  '',
  ...toolUse('bash', 'toolu_1', '{"command": "ls"}'),
  '',
  '@You:',
  '',
  ...toolResult('toolu_1', ['ok']),
  '',
  '@Assistant:',
  writeLine('acp_write_2', '/p/a b.txt'),
];

describe('an agent’s writes in the reply', () => {
  it('are a line each, marked undone once', () => {
    const line = writeLine('w`1', '/p/x\ny.txt');
    expect(line).toBe("**Agent Write:** `w'1` (written) /p/x y.txt");
    const undone = markWriteUndone(line);
    expect(undone).toBe("**Agent Write:** `w'1` (undone) /p/x y.txt");
    expect(markWriteUndone(undone ?? '')).toBeUndefined();
    expect(markWriteUndone('**Tool Result:** `x`')).toBeUndefined();
  });

  it('are found on their line by undo, listed by the review and undone by a rewind', () => {
    const doc = parseLines(REPLY);
    expect(writeAt(doc, 7)).toEqual({ id: 'acp_write_1', name: 'acp:write', line: 7 });
    expect(writeAt(doc, 5)).toBeUndefined();
    expect(undoTarget(doc, 6)).toEqual({
      ok: true,
      call: { id: 'acp_write_1', name: 'acp:write', line: 7 },
      row: 6,
    });
    expect(callsInScope(doc, { kind: 'all' }).map((call) => [call.id, call.line])).toEqual([
      ['acp_write_1', 7],
      ['toolu_1', 9],
      ['acp_write_2', 24],
    ]);
    const cut = rewindCut(REPLY, doc, 0);
    expect(typeof cut === 'string' ? cut : cut.calls.map((call) => call.id)).toEqual([
      'acp_write_2',
      'toolu_1',
      'acp_write_1',
    ]);
  });
});
