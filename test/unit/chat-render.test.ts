// Rendering a prompt: templates go to the renderer port in one call, file references to the
// reader port, in order; trimming; errors name the line.
import {
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDirs } from '../helpers/temp.js';
import { parseLines } from '../../src/core/chat/parser.js';
import { assemblePrompt } from '../../src/core/chat/prompt.js';
import { ReferenceCache, readReference, referencePath } from '../../src/core/chat/references.js';
import { RenderError, type RenderPorts, renderPrompt } from '../../src/core/chat/render.js';

function prompt(lines: string[]): ReturnType<typeof assemblePrompt> {
  return assemblePrompt(parseLines(lines));
}

/** A renderer that shows what it got: each expression as `<code@line>`, code as nothing. */
function ports(overrides: Partial<RenderPorts> = {}): RenderPorts & { jobs: unknown[][] } {
  const jobs: unknown[][] = [];
  return {
    jobs,
    renderTemplates: (batch) => {
      jobs.push(...batch);
      return Promise.resolve({
        texts: batch.map((segments) =>
          segments
            .map((segment) =>
              segment.kind === 'text'
                ? segment.text
                : segment.kind === 'expression'
                  ? `<${segment.code.trim()}@${String(segment.line)}>`
                  : '',
            )
            .join(''),
        ),
      });
    },
    readReference: (reference) =>
      Promise.resolve({
        kind: 'text_file',
        mimeType: 'text/plain',
        text: `[${reference.path}]`,
        filename: reference.path,
      }),
    readsResultReferences: (name) => name === 'read',
    ...overrides,
  };
}

describe('renderPrompt', () => {
  it('sends text without templates as it is, and asks the renderer nothing', async () => {
    const p = ports();
    const rendered = await renderPrompt(prompt(['@You:', 'Hello there']), p);
    expect(rendered.messages).toEqual([
      { role: 'user', parts: [{ kind: 'text', text: 'Hello there' }] },
    ]);
    expect(p.jobs).toHaveLength(0);
  });

  it('renders every message’s templates in one call, with buffer lines', async () => {
    const p = ports();
    const rendered = await renderPrompt(
      prompt(['@System:', 'Be {{ mood }}.', '@You:', 'Hi {{ name }}!']),
      p,
    );
    expect(rendered.system).toBe('Be <mood@2>.');
    expect(rendered.messages[0]).toEqual({
      role: 'user',
      parts: [{ kind: 'text', text: 'Hi <name@4>!' }],
    });
    expect(p.jobs).toHaveLength(2);
  });

  it('trims whitespace beside {%- and -%}', async () => {
    const rendered = await renderPrompt(
      prompt(['@You:', 'a', '{%- if x then -%}', 'b', '{%- end %}', 'c']),
      ports(),
    );
    expect(rendered.messages[0]).toEqual({
      role: 'user',
      parts: [{ kind: 'text', text: 'ab\nc' }],
    });
  });

  it('puts file references between the text around them', async () => {
    const rendered = await renderPrompt(prompt(['@You:', 'Read @./a.md then {{ x }}.']), ports());
    expect(rendered.messages[0]?.parts).toEqual([
      { kind: 'text', text: 'Read ' },
      { kind: 'text_file', mimeType: 'text/plain', text: '[./a.md]', filename: './a.md' },
      { kind: 'text', text: ' then <x@2>.' },
    ]);
  });

  it('reads the file references of a tool result (a read image comes back that way)', async () => {
    const rendered = await renderPrompt(
      prompt([
        '@You:',
        'Look.',
        '@Assistant:',
        '**Tool Use:** `read` (`toolu_1`)',
        '',
        '```json',
        '{"path":"shot.png"}',
        '```',
        '@You:',
        '**Tool Result:** `toolu_1`',
        '',
        '```',
        '@./shot.png;type=image/png',
        '```',
      ]),
      ports(),
    );
    const result = rendered.messages[2]?.parts[0];
    expect(result).toMatchObject({
      kind: 'tool_result',
      toolUseId: 'toolu_1',
      parts: [{ kind: 'text_file', text: '[./shot.png]' }],
    });
  });

  it('sends any other tool’s result as written: its references are text, and no file is read', async () => {
    const reads: string[] = [];
    const output =
      'see @./secret.txt and @~/.ssh/id_rsa, then {{ x }} and @//etc/passwd;type=text/plain.';
    const rendered = await renderPrompt(
      prompt([
        '@You:',
        'Run it.',
        '@Assistant:',
        '**Tool Use:** `bash` (`toolu_1`)',
        '',
        '```json',
        '{"command":"cat page.html"}',
        '```',
        '@You:',
        '**Tool Result:** `toolu_1`',
        '',
        '```',
        output,
        '```',
      ]),
      ports({
        readReference: (reference) => {
          reads.push(reference.path);
          return Promise.reject(new Error('read'));
        },
      }),
    );
    expect(rendered.messages[2]?.parts[0]).toMatchObject({
      kind: 'tool_result',
      toolUseId: 'toolu_1',
      parts: [{ kind: 'text', text: output }],
    });
    expect(reads).toEqual([]);
  });

  it('reports the renderer’s error, and a reader’s error with the line and the reference', async () => {
    await expect(
      renderPrompt(
        prompt(['@You:', '{{ y }}']),
        ports({ renderTemplates: () => Promise.resolve({ error: 'line 2: boom' }) }),
      ),
    ).rejects.toThrow(new RenderError('line 2: boom'));
    await expect(
      renderPrompt(
        prompt(['@You:', 'x', 'see @./gone.md']),
        ports({ readReference: () => Promise.reject(new Error('no such file: /w/gone.md')) }),
      ),
    ).rejects.toThrow('line 3: @./gone.md: no such file: /w/gone.md');
  });
});

describe('readReference', () => {
  const temp = tempDirs();
  const dir = mkdtempSync(join(tmpdir(), 'flemma-refs-'));
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  writeFileSync(join(dir, 'notes.md'), '# Notes\n');
  writeFileSync(join(dir, 'doc.pdf'), '%PDF-1.4\n');
  writeFileSync(join(dir, 'blob.bin'), Buffer.from([0, 1, 2, 3]));

  const ref = (path: string, mime?: string) => ({
    kind: 'file_reference' as const,
    path,
    raw: path,
    line: 1,
    ...(mime === undefined ? {} : { mime }),
  });

  it('resolves ./, ../, ~/ and absolute paths', () => {
    expect(referencePath('./a', '/w/chats', '/home/u')).toBe('/w/chats/a');
    expect(referencePath('../a', '/w/chats', '/home/u')).toBe('/w/a');
    expect(referencePath('~/a', '/w/chats', '/home/u')).toBe('/home/u/a');
    expect(referencePath('/etc/x', '/w/chats', '/home/u')).toBe('/etc/x');
  });

  it('inlines text, attaches PDFs, names what it cannot send, and says when a file is missing', async () => {
    expect(await readReference(ref('./notes.md'), dir, '/h')).toEqual({
      kind: 'text_file',
      mimeType: 'text/markdown',
      text: '# Notes\n',
      filename: 'notes.md',
    });
    expect(await readReference(ref('./doc.pdf'), dir, '/h')).toMatchObject({
      kind: 'pdf',
      filename: 'doc.pdf',
    });
    expect(await readReference(ref('./blob.bin'), dir, '/h')).toEqual({
      kind: 'unsupported_file',
      filename: 'blob.bin',
    });
    // `;type=` wins over the extension.
    expect(await readReference(ref('./blob.bin', 'text/plain'), dir, '/h')).toMatchObject({
      kind: 'text_file',
    });
    await expect(readReference(ref('./nope.md'), dir, '/h')).rejects.toThrow(
      `no such file: ${join(dir, 'nope.md')}`,
    );
  });

  it('in a file that is not trusted, reads only inside the chat file’s directory tree', async () => {
    const root = temp('flemma-scope-');
    const chats = join(root, 'chats');
    mkdirSync(join(chats, 'sub'), { recursive: true });
    writeFileSync(join(chats, 'sub', 'in.md'), 'inside\n');
    writeFileSync(join(chats, '.env'), 'KEY=1\n');
    writeFileSync(join(root, 'outside.md'), 'outside\n');
    symlinkSync(join(root, 'outside.md'), join(chats, 'link.md'));
    const scope = {
      confineTo: chats,
      isSensitive: (path: string) => path.endsWith('/.env'),
    };
    const read = (path: string) => readReference(ref(path), chats, root, scope);
    expect(await read('./sub/in.md')).toMatchObject({ text: 'inside\n' });
    expect(await read('./sub/../sub/in.md')).toMatchObject({ text: 'inside\n' });
    for (const [path, why] of [
      ['../outside.md', "it leaves the chat file's directory"],
      ['./sub/../../outside.md', "it leaves the chat file's directory"],
      ['~/outside.md', 'it points into the home directory'],
      ['/etc/passwd', 'it is an absolute path'],
      ['/proc/self/environ', 'it is an absolute path'],
      ['./link.md', 'through a symbolic link'],
      ['./.env', 'it names a sensitive file'],
    ] as const) {
      await expect(read(path), path).rejects.toThrow(why);
      await expect(read(path), path).rejects.toThrow('not read: this chat file is not trusted and');
    }
    // Trusted (no scope): the same references are read.
    expect(await readReference(ref('../outside.md'), chats, root)).toMatchObject({
      text: 'outside\n',
    });
    expect(await readReference(ref('./link.md'), chats, root)).toMatchObject({
      text: 'outside\n',
    });
  });

  it('keeps an unchanged file; one edited (its modification time put back) or replaced is read again', async () => {
    const cache = new ReferenceCache();
    const path = join(dir, 'kept.md');
    writeFileSync(path, 'one\n');
    // A modification time in whole seconds, which the edits below can put back exactly.
    const mtime = new Date('2020-01-01T00:00:00Z');
    utimesSync(path, mtime, mtime);
    const read = () => readReference(ref('./kept.md'), dir, '/h', {}, cache);
    const first = await read();
    expect(first).toMatchObject({ text: 'one\n' });
    // Unchanged: the part read before.
    expect(await read()).toBe(first);
    // Edited to the same size, its modification time set back as `cp -p` or `touch -d` would.
    writeFileSync(path, 'two\n');
    utimesSync(path, mtime, mtime);
    expect(await read()).toMatchObject({ text: 'two\n' });
    // Replaced by another file (renamed over it) of the same size and modification time.
    writeFileSync(join(dir, 'kept.tmp'), 'six\n');
    utimesSync(join(dir, 'kept.tmp'), mtime, mtime);
    renameSync(join(dir, 'kept.tmp'), path);
    expect(await read()).toMatchObject({ text: 'six\n' });
  });
});
