// Race-free writes (issue 19): `openBeneath` and the write tool through `ctx.sandbox.open_for_write`
// against real files, links that lead out, a FIFO in a file's place, and a link flipped by another
// process while 150 writes land.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import { createExecutionContext, noSandbox } from '../../src/core/tools/context.js';
import { editTool } from '../../src/core/tools/definitions/edit.js';
import { writeTool } from '../../src/core/tools/definitions/write.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../../src/core/tools/registry.js';
import { WriteRefused, canOpenBeneath, openBeneath } from '../../src/core/tools/sandbox/beneath.js';
import { isPathWritable } from '../../src/core/tools/sandbox/paths.js';
import { linkFlipper } from '../helpers/processes.js';
import { fileTempDir } from '../helpers/temp.js';

let flipper: ChildProcess | undefined;

afterEach(() => {
  flipper?.kill('SIGKILL');
  flipper = undefined;
});

const dir = fileTempDir('flemma-beneath-');

const under =
  (allowed: string) =>
  (real: string): boolean =>
    real === allowed || real.startsWith(`${allowed}/`);

/** A tool context whose sandbox allows writing below `writable` only; relative paths from `base`. */
function context(base: string, writable: string): ToolContext {
  return createExecutionContext(
    {
      bufnr: 1,
      cwd: base,
      timeout: 30,
      toolId: 'toolu_b1',
      filename: join(base, 'chat.chat'),
      sandbox: {
        ...noSandbox,
        enabled: true,
        is_path_writable: (path) => isPathWritable(path, [writable]),
      },
    },
    dir(),
  );
}

function run(def: ToolDefinition, input: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  if (def.execute === undefined) throw new Error('no execute');
  return def.execute(input, ctx);
}

describe.skipIf(!canOpenBeneath())('openBeneath', () => {
  it('creates missing directories and the file, and says where it is', async () => {
    const base = dir('plain');
    const { handle, real } = await openBeneath(join(base, 'a', 'b', 'c.txt'), {
      allowed: under(base),
      mkdir: true,
    });
    await handle.writeFile('hello', 'utf8');
    await handle.close();
    expect(real).toBe(join(base, 'a', 'b', 'c.txt'));
    expect(readFileSync(real, 'utf8')).toBe('hello');
  });

  it('follows a link that stays where writing is allowed (relative and absolute)', async () => {
    const base = dir('links');
    const target = dir('links', 'target');
    symlinkSync('target', join(base, 'rel'));
    symlinkSync(target, join(base, 'abs'));
    symlinkSync('../target/f2.txt', join(dir('links', 'sub'), 'file-link'));
    for (const path of [join(base, 'rel', 'f1.txt'), join(base, 'abs', 'f1.txt')]) {
      const { handle, real } = await openBeneath(path, { allowed: under(base) });
      await handle.close();
      expect(real).toBe(join(target, 'f1.txt'));
    }
    const { handle, real } = await openBeneath(join(base, 'sub', 'file-link'), {
      allowed: under(base),
    });
    await handle.close();
    expect(real).toBe(join(target, 'f2.txt'));
    expect(existsSync(join(target, 'f2.txt'))).toBe(true);
  });

  it('refuses a link that leads out, before creating anything there', async () => {
    const base = dir('escape', 'inside');
    const outside = dir('escape', 'outside');
    symlinkSync(outside, join(base, 'out'));
    symlinkSync(join(outside, 'new-dir', 'f.txt'), join(base, 'dangling'));
    for (const path of [join(base, 'out', 'deep', 'f.txt'), join(base, 'dangling')]) {
      await expect(openBeneath(path, { allowed: under(base), mkdir: true })).rejects.toBeInstanceOf(
        WriteRefused,
      );
    }
    expect(readdirSync(outside)).toEqual([]);
  });

  it('needs mkdir for missing directories, an existing file for update, and a regular file', async () => {
    const base = dir('errors');
    await expect(openBeneath(join(base, 'no', 'f'), { allowed: () => true })).rejects.toMatchObject(
      { code: 'ENOENT' },
    );
    await expect(
      openBeneath(join(base, 'missing'), { allowed: () => true, update: true }),
    ).rejects.toMatchObject({ code: 'ENOENT' });
    const fifo = join(base, 'fifo');
    const made = spawn('mkfifo', [fifo]);
    await new Promise((resolve) => made.on('exit', resolve));
    // A FIFO in the file's place fails at once instead of waiting for a reader.
    await expect(openBeneath(fifo, { allowed: () => true })).rejects.toMatchObject({
      code: expect.stringMatching(/ENXIO|EINVAL/) as unknown,
    });
  });
});

describe('the write and edit tools through open_for_write', () => {
  it('write refuses a path whose link leads out of the writable paths, edit too', async () => {
    const base = dir('tools', 'project');
    const outside = dir('tools', 'outside');
    writeFileSync(join(outside, 'victim.txt'), 'original\n');
    symlinkSync(outside, join(base, 'out'));
    const ctx = context(base, base);
    const written = await run(writeTool, { path: 'out/new.txt', content: 'x' }, ctx);
    expect(written).toMatchObject({ ok: false });
    expect(JSON.stringify(written)).toContain('Sandbox: write denied');
    const edited = await run(
      editTool,
      { path: 'out/victim.txt', oldText: 'original', newText: 'changed' },
      ctx,
    );
    expect(edited).toMatchObject({ ok: false });
    expect(readFileSync(join(outside, 'victim.txt'), 'utf8')).toBe('original\n');
    expect(readdirSync(outside)).toEqual(['victim.txt']);
  });

  it('edit rewrites the file in place through one handle', async () => {
    const base = dir('tools-edit');
    writeFileSync(join(base, 'f.txt'), 'a long line\nshort\n');
    const ctx = context(base, base);
    expect(
      await run(editTool, { path: 'f.txt', oldText: 'a long line', newText: 'b' }, ctx),
    ).toEqual({ ok: true, output: 'Successfully replaced text in f.txt.' });
    expect(readFileSync(join(base, 'f.txt'), 'utf8')).toBe('b\nshort\n');
  });

  it('150 writes while another process flips a link between inside and outside: nothing lands outside', async () => {
    const base = dir('race', 'project');
    const inside = dir('race', 'project', 'inside');
    const outside = dir('race', 'outside');
    flipper = linkFlipper(join(base, 'flip'), inside, outside);
    // The link exists (and flips) before the first write.
    await once(flipper.stdout ?? process.stdin, 'data');
    const ctx = context(base, base);
    const outcomes = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        run(writeTool, { path: `flip/sub/file-${String(i)}.txt`, content: `${i}\n` }, ctx),
      ),
    );
    flipper.kill('SIGKILL');
    flipper = undefined;
    expect(readdirSync(outside)).toEqual([]);
    const landed = existsSync(join(inside, 'sub')) ? readdirSync(join(inside, 'sub')).length : 0;
    expect(landed + outcomes.filter((outcome) => !outcome.ok).length).toBe(150);
  });
});
