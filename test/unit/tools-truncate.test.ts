import { lstat, mkdtemp, open, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { OutputFile } from '../../src/core/tools/output-file.js';
import { writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  HEAD_CUT_MARKER,
  MAX_BYTES,
  MAX_LINES,
  TAIL_CUT_MARKER,
  formatSize,
  nodeTruncateFs,
  overflowPath,
  truncateForResult,
  truncateHead,
  truncateOutputTail,
  truncateTail,
  type TruncateFs,
} from '../../src/core/tools/truncate.js';

const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');
const numbered = (count: number): string =>
  Array.from({ length: count }, (_, i) => `line ${i + 1}`).join('\n');

/** A string of exactly `size` bytes split into lines of `width` bytes (newlines included). */
const filler = (size: number, width = 100): string => {
  const line = 'x'.repeat(width - 1);
  const full = Math.floor(size / width);
  const rest = size - full * width;
  return `${`${line}\n`.repeat(full)}${'y'.repeat(rest)}`;
};

const isValidUtf8Roundtrip = (text: string): boolean =>
  !text.includes('\uFFFD') && Buffer.from(text, 'utf8').toString('utf8') === text;

class FakeFs implements TruncateFs {
  readonly files = new Map<string, string>();
  constructor(
    private readonly dir = '/fake/tmp',
    private readonly fail = false,
  ) {}
  tmpdir(): string {
    return this.dir;
  }
  writeFile(path: string, data: string | Uint8Array): Promise<void> {
    if (this.fail) return Promise.reject(new Error(`EACCES: permission denied, open '${path}'`));
    this.files.set(path, Buffer.from(data).toString());
    return Promise.resolve();
  }
}

describe('constants', () => {
  it('are 2000 lines and 50 KB', () => {
    expect(MAX_LINES).toBe(2000);
    expect(MAX_BYTES).toBe(51200);
  });
});

describe('formatSize', () => {
  it('formats 1024-based sizes as docs/tools.md says (12345 → 12.1KB)', () => {
    expect(formatSize(0)).toBe('0B');
    expect(formatSize(1)).toBe('1B');
    expect(formatSize(512)).toBe('512B');
    expect(formatSize(1023)).toBe('1023B');
    expect(formatSize(1024)).toBe('1.0KB');
    expect(formatSize(1536)).toBe('1.5KB');
    expect(formatSize(12345)).toBe('12.1KB');
    expect(formatSize(MAX_BYTES)).toBe('50.0KB');
    expect(formatSize(1024 * 1024)).toBe('1.0MB');
    expect(formatSize(2 * 1024 * 1024)).toBe('2.0MB');
    expect(formatSize(1.25 * 1024 ** 3)).toBe('1.3GB');
    expect(formatSize(5000 * 1024 ** 3)).toBe('5000.0GB');
  });

  it('moves to the next unit instead of printing 1024.0', () => {
    expect(formatSize(1024 * 1024 - 1)).toBe('1.0MB');
    expect(formatSize(1024 * 1024 - 60)).toBe('1023.9KB');
  });

  it('treats negative and non-finite values as 0B', () => {
    expect(formatSize(-5)).toBe('0B');
    expect(formatSize(Number.NaN)).toBe('0B');
    expect(formatSize(Number.POSITIVE_INFINITY)).toBe('0B');
  });
});

describe('line limit', () => {
  it('exactly 2000 lines is not truncated', () => {
    const text = numbered(2000);
    for (const result of [truncateHead(text), truncateTail(text)]) {
      expect(result.truncated).toBe(false);
      expect(result.truncatedBy).toBeNull();
      expect(result.content).toBe(text);
      expect(result.totalLines).toBe(2000);
      expect(result.shownLines).toBe(2000);
      expect(result.totalBytes).toBe(bytes(text));
      expect(result.shownBytes).toBe(bytes(text));
    }
  });

  it('2001 lines: head keeps the first 2000, tail the last 2000', () => {
    const text = numbered(2001);
    const head = truncateHead(text);
    expect(head.truncated).toBe(true);
    expect(head.truncatedBy).toBe('lines');
    expect(head.totalLines).toBe(2001);
    expect(head.shownLines).toBe(2000);
    expect(head.content).toBe(numbered(2000));
    expect(head.shownBytes).toBe(bytes(head.content));

    const tail = truncateTail(text);
    expect(tail.truncated).toBe(true);
    expect(tail.truncatedBy).toBe('lines');
    expect(tail.shownLines).toBe(2000);
    expect(tail.content.startsWith('line 2\n')).toBe(true);
    expect(tail.content.endsWith('\nline 2001')).toBe(true);
  });

  it('honours custom limits', () => {
    const text = 'a\nb\nc\nd';
    expect(truncateHead(text, { maxLines: 2 }).content).toBe('a\nb');
    expect(truncateTail(text, { maxLines: 2 }).content).toBe('c\nd');
    expect(truncateTail(text, { maxBytes: 3 }).content).toBe('c\nd');
    expect(truncateHead(text, { maxLines: 0 })).toMatchObject({ content: '', shownLines: 0 });
  });
});

describe('trailing newline and empty text', () => {
  it('empty text is 0 lines and untouched', () => {
    expect(truncateHead('')).toMatchObject({
      content: '',
      truncated: false,
      totalLines: 0,
      totalBytes: 0,
      shownLines: 0,
      shownBytes: 0,
    });
    expect(truncateTail('').truncated).toBe(false);
  });

  it('a trailing newline ends the last line and adds no line', () => {
    expect(truncateHead('a\nb\n').totalLines).toBe(2);
    expect(truncateHead('a\nb').totalLines).toBe(2);
    expect(truncateHead('\n').totalLines).toBe(1);
    expect(truncateHead('a\nb\n\n').totalLines).toBe(3);
    const text = `${numbered(2000)}\n`;
    expect(truncateHead(text)).toMatchObject({ truncated: false, content: text });
  });

  it('a trailing newline does not push exactly-50-KB text over the limit', () => {
    const text = `${filler(MAX_BYTES)}\n`;
    const result = truncateTail(text);
    expect(result.truncated).toBe(false);
    expect(result.totalBytes).toBe(MAX_BYTES + 1);
    expect(result.content).toBe(text);
  });

  it('truncated content has no trailing newline', () => {
    const tail = truncateTail(`${numbered(2001)}\n`);
    expect(tail.content.endsWith('line 2001')).toBe(true);
    const head = truncateHead(`${numbered(2001)}\n`);
    expect(head.content.endsWith('line 2000')).toBe(true);
  });
});

describe('byte limit', () => {
  it('exactly 50 KB is not truncated', () => {
    const text = filler(MAX_BYTES);
    expect(bytes(text)).toBe(MAX_BYTES);
    expect(truncateHead(text).truncated).toBe(false);
    expect(truncateTail(text).truncated).toBe(false);
  });

  it('50 KB + 1 byte is truncated by bytes, keeping whole lines', () => {
    const text = filler(MAX_BYTES + 1);
    expect(bytes(text)).toBe(MAX_BYTES + 1);
    const head = truncateHead(text);
    expect(head).toMatchObject({
      truncated: true,
      truncatedBy: 'bytes',
      totalBytes: MAX_BYTES + 1,
    });
    expect(head.shownBytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(text.startsWith(head.content)).toBe(true);
    expect(head.content.split('\n').every((l) => l.length === 99)).toBe(true);

    const tail = truncateTail(text);
    expect(tail).toMatchObject({ truncated: true, truncatedBy: 'bytes' });
    expect(tail.shownBytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(text.endsWith(tail.content)).toBe(true);
    expect(tail.content.startsWith('x')).toBe(true);
    expect(tail.content.endsWith('x\ny')).toBe(true);
  });

  it('counts UTF-8 bytes, not UTF-16 units', () => {
    // 1000 lines of 30 "é" (60 bytes + newline): 61000 bytes but only 31000 characters.
    const text = Array.from({ length: 1000 }, () => 'é'.repeat(30)).join('\n');
    expect(text.length).toBeLessThan(MAX_BYTES);
    const head = truncateHead(text);
    expect(head.truncated).toBe(true);
    expect(head.shownLines).toBe(Math.floor((MAX_BYTES + 1) / 61));
    expect(head.shownBytes).toBe(bytes(head.content));
    expect(head.shownBytes).toBeLessThanOrEqual(MAX_BYTES);
  });
});

describe('a single line over the byte limit', () => {
  const huge = 'a'.repeat(200_000);

  it('head keeps its start with a marker, within the limit', () => {
    const result = truncateHead(huge);
    expect(result.truncated).toBe(true);
    expect(result.truncatedBy).toBe('bytes');
    expect(result.shownLines).toBe(1);
    expect(result.content.endsWith(HEAD_CUT_MARKER)).toBe(true);
    expect(result.shownBytes).toBe(MAX_BYTES);
    expect(result.cutLine).toEqual({
      line: 1,
      lineBytes: 200_000,
      keptBytes: MAX_BYTES - bytes(HEAD_CUT_MARKER),
    });
  });

  it('tail keeps its end with a marker, within the limit', () => {
    const text = `first\n${'b'.repeat(100_000)}z`;
    const result = truncateTail(text);
    expect(result.content.startsWith(TAIL_CUT_MARKER)).toBe(true);
    expect(result.content.endsWith('bz')).toBe(true);
    expect(result.shownBytes).toBe(MAX_BYTES);
    expect(result.cutLine).toMatchObject({ line: 2, lineBytes: 100_001 });
  });

  it('keeps whole smaller lines rather than cutting when at least one fits', () => {
    const text = `${'a'.repeat(100_000)}\nshort`;
    expect(truncateTail(text)).toMatchObject({ content: 'short', cutLine: null, shownLines: 1 });
    expect(truncateHead(`short\n${'a'.repeat(100_000)}`)).toMatchObject({
      content: 'short',
      cutLine: null,
    });
  });

  it('cuts without a marker when the limit is smaller than the marker', () => {
    const result = truncateHead('abcdefghij', { maxBytes: 4 });
    expect(result.content).toBe('abcd');
    const tail = truncateTail('abcdefghij', { maxBytes: 4 });
    expect(tail.content).toBe('ghij');
  });
});

describe('multi-byte characters at the cut', () => {
  // For each character and each alignment, the cut must land on a code-point boundary.
  const cases: [string, string][] = [
    ['é (2 bytes)', 'é'],
    ['CJK (3 bytes)', '漢'],
    ['🙂 (4 bytes, surrogate pair)', '🙂'],
  ];
  for (const [name, ch] of cases) {
    it(`never splits ${name}`, () => {
      const width = bytes(ch);
      for (let pad = 0; pad < width; pad += 1) {
        const line = 'p'.repeat(pad) + ch.repeat(100);
        for (let limit = 20; limit < 20 + width * 2; limit += 1) {
          const head = truncateHead(line, { maxBytes: limit });
          expect(isValidUtf8Roundtrip(head.content)).toBe(true);
          expect(head.shownBytes).toBeLessThanOrEqual(limit);
          const kept = head.content.slice(0, -HEAD_CUT_MARKER.length);
          expect(line.startsWith(kept)).toBe(true);
          expect(limit - bytes(HEAD_CUT_MARKER) - bytes(kept)).toBeLessThan(width);

          const tail = truncateTail(`${ch.repeat(100)}${'p'.repeat(pad)}`, { maxBytes: limit });
          expect(isValidUtf8Roundtrip(tail.content)).toBe(true);
          expect(tail.shownBytes).toBeLessThanOrEqual(limit);
          const keptTail = tail.content.slice(TAIL_CUT_MARKER.length);
          expect(`${ch.repeat(100)}${'p'.repeat(pad)}`.endsWith(keptTail)).toBe(true);
        }
      }
    });
  }

  it('whole-line truncation of multi-byte text stays valid at the default limit', () => {
    const text = Array.from({ length: 5000 }, (_, i) => `${i} é漢🙂`).join('\n');
    for (const result of [truncateHead(text), truncateTail(text)]) {
      expect(isValidUtf8Roundtrip(result.content)).toBe(true);
      expect(result.shownBytes).toBe(bytes(result.content));
    }
  });
});

describe('truncateForResult', () => {
  it('returns short output unchanged and writes no file', async () => {
    const fs = new FakeFs();
    const out = await truncateForResult(
      'hello\n',
      { source: 'bash', id: 'toolu_01', mode: 'tail' },
      fs,
    );
    expect(out).toMatchObject({ text: 'hello\n', truncated: false, fullOutputPath: null });
    expect(fs.files.size).toBe(0);
  });

  it('tail: keeps the last lines, saves the full output and names the file', async () => {
    const fs = new FakeFs('/fake/tmp');
    const text = `${numbered(5321)}\n`;
    const out = await truncateForResult(text, { source: 'bash', id: 'toolu_01', mode: 'tail' }, fs);
    const path = join('/fake/tmp', 'flemma_bash_toolu_01.txt');
    expect(out.truncated).toBe(true);
    expect(out.fullOutputPath).toBe(path);
    expect(fs.files.get(path)).toBe(text);
    expect(out.text).toBe(
      `${numbered(5321).split('\n').slice(-2000).join('\n')}\n\n` +
        `[Showing lines 3322-5321 of 5321. Full output: ${path}]`,
    );
  });

  it('head: keeps the first lines; the byte limit is named when it is the cause', async () => {
    const fs = new FakeFs('/t');
    const text = filler(MAX_BYTES + 1);
    const out = await truncateForResult(text, { source: 'read', id: 'toolu_02', mode: 'head' }, fs);
    expect(out.text).toMatch(
      /\n\n\[Showing lines 1-512 of 513 \(50\.0KB limit\)\. Full output: \/t\/flemma_read_toolu_02\.txt\]$/,
    );
    expect(out.text.startsWith(out.details.content)).toBe(true);
    expect(fs.files.get('/t/flemma_read_toolu_02.txt')).toBe(text);
  });

  it('single oversized line: "Output too large" for head, "Showing last" for tail', async () => {
    const fs = new FakeFs('/t');
    const huge = 'z'.repeat(2 * 1024 * 1024);
    const head = await truncateForResult(huge, { source: 'mcp', id: 'a', mode: 'head' }, fs);
    expect(head.text).toMatch(
      /\n\n\[Output too large: 2\.0MB in a single line, exceeds 50\.0KB limit; showing the first 50\.0KB\. Full output: \/t\/flemma_mcp_a\.txt\]$/,
    );
    const tail = await truncateForResult(
      `x\n${huge}`,
      { source: 'bash', id: 'b', mode: 'tail' },
      fs,
    );
    expect(tail.text).toMatch(
      /\n\n\[Showing last 50\.0KB of line 2\. Full output: \/t\/flemma_bash_b\.txt\]$/,
    );
    expect(fs.files.get('/t/flemma_bash_b.txt')).toBe(`x\n${huge}`);
  });

  it('an unwritable filesystem: no path, a clear notice, never throws', async () => {
    const fs = new FakeFs('/t', true);
    const out = await truncateForResult(
      numbered(2001),
      { source: 'bash', id: 'x', mode: 'head' },
      fs,
    );
    expect(out.truncated).toBe(true);
    expect(out.fullOutputPath).toBeNull();
    expect(
      out.text.endsWith('\n\n[Showing lines 1-2000 of 2001. Full output could not be saved.]'),
    ).toBe(true);
    expect(out.text).not.toContain('/t/');
  });

  it('a throwing tmpdir() is handled like a failed write', async () => {
    const fs: TruncateFs = {
      tmpdir: () => {
        throw new Error('no tmp');
      },
      writeFile: () => Promise.resolve(),
    };
    const out = await truncateForResult(numbered(2001), { source: 's', id: 'i', mode: 'tail' }, fs);
    expect(out.fullOutputPath).toBeNull();
    expect(out.text).toContain('Full output could not be saved.');
  });

  it('passes custom limits through', async () => {
    const fs = new FakeFs('/t');
    const out = await truncateForResult(
      'a\nb\nc',
      { source: 'bash', id: '1', mode: 'tail', maxLines: 1 },
      fs,
    );
    expect(out.text).toBe('c\n\n[Showing lines 3-3 of 3. Full output: /t/flemma_bash_1.txt]');
  });
});

/** Program outputs as bytes, and the limits they are cut to. */
const bytesWhere = { source: 'bash', id: 'toolu_bytes' };
const bigOutput = filler(MAX_BYTES * 3, 97);
const outputCases: [string, Buffer, { maxLines?: number; maxBytes?: number }?][] = [
  ['empty', Buffer.alloc(0)],
  ['only whitespace', Buffer.from(' \n\t\r\n')],
  ['small, trailing newlines', Buffer.from('a\nb\n\n')],
  ['megabytes of ASCII lines', Buffer.from(`${bigOutput}\n\n  `)],
  ['over the line limit only', Buffer.from(`${numbered(2500)}\n`)],
  ['lines over the line limit and the byte limit', Buffer.from(`${numbered(30_000)}\n`)],
  ['one line over the byte limit', Buffer.from('z'.repeat(MAX_BYTES * 2))],
  ['a long last line after short ones', Buffer.from(`a\nb\n${'q'.repeat(MAX_BYTES + 7)}`)],
  ['multi-byte text cut inside a character', Buffer.from(`${'é€😀\n'.repeat(9000)}tail`)],
  ['multi-byte single line', Buffer.from('€'.repeat(MAX_BYTES))],
  [
    'a line exactly at the window start',
    Buffer.from(`${'w'.repeat(100)}\n${'v'.repeat(MAX_BYTES)}`),
  ],
  ['a byte-order mark', Buffer.from(`\uFEFF${bigOutput}`)],
  ['bytes that are not UTF-8', Buffer.concat([Buffer.from(bigOutput), Buffer.from([0xff, 0x41])])],
  ['Unicode whitespace at the end', Buffer.from(`${bigOutput}\u00A0\u3000 \n`)],
  ['a non-ASCII last character', Buffer.from(`${bigOutput}é`)],
  ['custom limits', Buffer.from(`${numbered(500)}\n`), { maxLines: 7, maxBytes: 40 }],
  ['no lines allowed', Buffer.from(bigOutput), { maxLines: 0 }],
];

describe('truncateOutputTail (a program output as bytes)', () => {
  const where = bytesWhere;
  it.each(outputCases)(
    '%s: the same result and saved file as for the decoded, trimmed text',
    async (_, data, limits = {}) => {
      const asText = new FakeFs();
      const asBytes = new FakeFs();
      const text = new TextDecoder().decode(data).trimEnd();
      const expected = await truncateForResult(text, { ...where, ...limits, mode: 'tail' }, asText);
      const actual = await truncateOutputTail(data, { ...where, ...limits }, asBytes);
      expect(actual).toEqual(expected);
      expect(asBytes.files).toEqual(asText.files);
    },
  );
});

/** Runs `use` with a new temporary directory, removed after it. */
async function inTemp(use: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'flemma-out-'));
  try {
    await use(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('the output file a command writes (output-file.ts)', () => {
  const big = bigOutput;
  // What the gathered facts cannot settle as the whole bytes would: read back from the file.
  const readBack = new Set([
    'a byte-order mark',
    'bytes that are not UTF-8',
    'Unicode whitespace at the end',
    'a non-ASCII last character',
    'multi-byte single line',
    // Under the byte limit (in the file for good only because of the low threshold here).
    'over the line limit only',
  ]);
  // Pieces of 3 bytes only for small outputs: each is a look at the file.
  const fileCases = outputCases.flatMap(([name, data, limits]) =>
    [3, 997, 4096, Number.MAX_SAFE_INTEGER]
      .filter((size) => size > 3 || data.length <= 4096)
      .map(
        (size) =>
          [
            `${name}, read in pieces of ${String(Math.min(size, data.length))}`,
            data,
            limits ?? {},
            size,
          ] as const,
      ),
  );

  it.each(fileCases)(
    '%s: the same result and file as when saved at the end',
    async (_, data, limits, size) => {
      const dir = await mkdtemp(join(tmpdir(), 'flemma-out-'));
      try {
        const where = { source: 'bash', id: 'toolu_out', ...limits };
        const asText = new FakeFs(dir);
        const text = new TextDecoder().decode(data).trimEnd();
        const expected = await truncateForResult(text, { ...where, mode: 'tail' }, asText);
        let reads = 0;
        const fs: TruncateFs = {
          ...nodeTruncateFs,
          tmpdir: () => dir,
          readStart: (path, length) => {
            reads += 1;
            return nodeTruncateFs.readStart?.(path, length) ?? Promise.reject(new Error('none'));
          },
        };
        const shown: Buffer[] = [];
        // A low threshold: every case but the smallest keeps its file until the cut.
        const file = await OutputFile.create(overflowPath(where.source, where.id, dir), fs, {
          threshold: 16,
          onOutput: (chunk) => shown.push(Buffer.from(chunk)),
        });
        if (file === undefined) throw new Error('no output file');
        // The command writes; the host looks between its writes.
        for (let at = 0; at < data.length; at += size) {
          writeSync(file.fd, data.subarray(at, at + size));
          await file.catchUp();
        }
        const actual = await file.cut(where);
        expect(actual).toEqual(expected);
        expect(Buffer.concat(shown).equals(data)).toBe(true);
        const files = Object.fromEntries(
          await Promise.all(
            (await readdir(dir)).map(async (name): Promise<[string, string]> => [
              join(dir, name),
              await readFile(join(dir, name), 'utf8'),
            ]),
          ),
        );
        expect(files).toEqual(Object.fromEntries(asText.files));
        expect(reads > 0).toBe(readBack.has(_.replace(/, read in pieces of \d+$/u, '')));
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  it('reads all a command wrote by the cut, with no look before it', async () => {
    await inTemp(async (dir) => {
      const fs: TruncateFs = { ...nodeTruncateFs, tmpdir: () => dir };
      const path = overflowPath('bash', 'toolu_late', dir);
      const file = await OutputFile.create(path, fs, { threshold: MAX_BYTES });
      if (file === undefined) throw new Error('no output file');
      writeSync(file.fd, `${big}\nlast line\n\n`);
      const cut = await file.cut({ source: 'bash', id: 'toolu_late' });
      expect(cut.fullOutputPath).toBe(path);
      expect(cut.text.split('\n\n')[0]?.endsWith('\nlast line')).toBe(true);
      expect(await readFile(path, 'utf8')).toBe(`${big}\nlast line`);
    });
  });

  it('says once when the output passed its limit', async () => {
    await inTemp(async (dir) => {
      const fs: TruncateFs = { ...nodeTruncateFs, tmpdir: () => dir };
      let passed = 0;
      const file = await OutputFile.create(overflowPath('bash', 'toolu_lim', dir), fs, {
        threshold: 16,
        limit: 1000,
        onLimit: () => (passed += 1),
      });
      if (file === undefined) throw new Error('no output file');
      writeSync(file.fd, 'a'.repeat(1000));
      await file.catchUp();
      expect(passed).toBe(0);
      writeSync(file.fd, 'b');
      await file.catchUp();
      writeSync(file.fd, 'c'.repeat(500));
      await file.catchUp();
      expect(passed).toBe(1);
      await file.discard();
    });
  });

  it('does not follow a link left at the output path, and is not made', async () => {
    await inTemp(async (dir) => {
      const target = join(dir, 'precious.txt');
      await writeFile(target, 'keep me');
      const path = overflowPath('bash', 'toolu_link', dir);
      const fs: TruncateFs = {
        ...nodeTruncateFs,
        tmpdir: () => dir,
        // Someone puts the link back between the removal and the create.
        create: async (at) => {
          await rm(at, { force: true });
          await symlink(target, at);
          return open(at, 'ax+', 0o600);
        },
      };
      expect(await OutputFile.create(path, fs, { threshold: 10 })).toBeUndefined();
      expect(await readFile(target, 'utf8')).toBe('keep me');
      // The real create removes the link and makes the file.
      const file = await OutputFile.create(
        path,
        { ...nodeTruncateFs, tmpdir: () => dir },
        {
          threshold: 10,
        },
      );
      expect((await lstat(path)).isSymbolicLink()).toBe(false);
      await file?.discard();
      expect(await readFile(target, 'utf8')).toBe('keep me');
    });
  });

  it('leaves no file behind when the output is discarded', async () => {
    await inTemp(async (dir) => {
      const fs: TruncateFs = { ...nodeTruncateFs, tmpdir: () => dir };
      const file = await OutputFile.create(overflowPath('bash', 'toolu_gone', dir), fs, {
        threshold: 10,
      });
      if (file === undefined) throw new Error('no output file');
      writeSync(file.fd, big);
      await file.catchUp();
      await file.discard();
      expect(await readdir(dir)).toEqual([]);
    });
  });
});

describe('overflow file name', () => {
  it('sanitizes source and id', () => {
    expect(overflowPath('bash', 'toolu_01', '/tmp')).toBe('/tmp/flemma_bash_toolu_01.txt');
    expect(overflowPath('srv:tool/x', '../../etc/passwd', '/tmp')).toBe(
      '/tmp/flemma_srv_tool_x_.._.._etc_passwd.txt',
    );
    expect(overflowPath('', 'a b\n', '/tmp')).toBe('/tmp/flemma___a_b_.txt');
    expect(overflowPath('s', 'é🙂', '/tmp')).toBe('/tmp/flemma_s___.txt');
    const long = overflowPath('s', 'x'.repeat(500), '/tmp');
    expect(long.length).toBeLessThan(120);
  });
});

describe('nodeTruncateFs', () => {
  it('writes the full output to a real temp directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flemma-truncate-'));
    try {
      const fs: TruncateFs = {
        writeFile: (path, data) => nodeTruncateFs.writeFile(path, data),
        tmpdir: () => dir,
      };
      const text = `${numbered(2500)}\n`;
      const out = await truncateForResult(text, { source: 'bash', id: 'real', mode: 'tail' }, fs);
      expect(out.fullOutputPath).toBe(join(dir, 'flemma_bash_real.txt'));
      expect(await readFile(join(dir, 'flemma_bash_real.txt'), 'utf8')).toBe(text);
      expect(nodeTruncateFs.tmpdir()).toBe(tmpdir());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
