// Sandbox roots (docs/tools.md, "Sandbox roots"): the built-in read and write tools, and
// ctx.sandbox.resolve, against real temp directories and symlinks. Scenarios V-14 … V-18.
import { realpathSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { createExecutionContext } from '../../src/core/tools/context.js';
import { readTool } from '../../src/core/tools/definitions/read.js';
import { writeTool } from '../../src/core/tools/definitions/write.js';
import { editTool } from '../../src/core/tools/definitions/edit.js';
import type { ToolDefinition, ToolOutcome } from '../../src/core/tools/registry.js';
import {
  SandboxRoots,
  SandboxViolation,
  isInside,
  parseRoots,
} from '../../src/core/tools/sandbox/roots.js';

let dir: string;
let ws: string;
let data: string;

beforeEach(async () => {
  dir = realpathSync(await mkdtemp(join(tmpdir(), 'flemma-roots-')));
  ws = join(dir, 'ws');
  data = join(dir, 'data');
  await mkdir(join(ws, 'data'), { recursive: true });
  await mkdir(data);
  await writeFile(join(ws, 'data/f.txt'), 'inside\n');
  // The decoy Vega's redirect would read instead of refusing.
  await writeFile(join(ws, 'passwd'), 'decoy\n');
  await writeFile(join(data, 'table.csv'), 'a,b\n');
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function ctxWith(roots: SandboxRoots): ReturnType<typeof createExecutionContext> {
  // The chat file lives elsewhere: with roots, relative paths are taken against the first root.
  return createExecutionContext(
    { bufnr: 1, cwd: dir, timeout: 30, toolId: 't', filename: join(dir, 'chat.chat'), roots },
    dir,
  );
}

const workspace = (): SandboxRoots =>
  new SandboxRoots([{ name: 'workspace', path: ws, mode: 'rw' }], { home: dir });

function read(path: string, roots = workspace()): Promise<ToolOutcome> {
  return (readTool as Required<ToolDefinition>).execute(
    { label: 'x', path, offset: null, limit: null },
    ctxWith(roots),
  );
}

describe('sandbox roots', () => {
  it('V-14: a relative path is read under the root', async () => {
    expect(await read('data/f.txt')).toEqual({ ok: true, output: 'inside' });
  });

  it('V-15: an absolute path outside and ../.. are refused, never redirected', async () => {
    for (const path of ['/etc/passwd', '../../etc/passwd']) {
      const out = await read(path);
      expect(out).toMatchObject({
        ok: false,
        error: expect.stringMatching(/escapes sandbox/) as unknown,
      });
      expect(JSON.stringify(out)).not.toContain('decoy');
    }
  });

  it('V-16: a symlink leaving the root is an escape', async () => {
    await symlink('/etc', join(ws, 'link'));
    expect(await read('link/passwd')).toMatchObject({
      ok: false,
      error: expect.stringMatching(
        /escapes sandbox: link\/passwd leads to \/etc\/passwd through a symbolic link/,
      ) as unknown,
    });
  });

  it('a dangling symlink that would be written through is an escape too', async () => {
    await symlink(join(dir, 'outside-new.txt'), join(ws, 'trap.txt'));
    const out = await (writeTool as Required<ToolDefinition>).execute(
      { label: 'x', path: 'trap.txt', content: 'x' },
      ctxWith(workspace()),
    );
    expect(out).toMatchObject({
      ok: false,
      error: expect.stringMatching(/escapes sandbox/) as unknown,
    });
  });

  it('V-17: a name starting with .. inside the root is allowed', async () => {
    await mkdir(join(ws, '..foo'));
    await writeFile(join(ws, '..foo/x'), 'dots\n');
    expect(await read('..foo/x')).toEqual({ ok: true, output: 'dots' });
    expect(isInside(join(ws, '..foo/x'), ws)).toBe(true);
    expect(isInside(`${ws}-other/x`, ws)).toBe(false);
  });

  it('V-18: a read-only root refuses writes and allows reads', async () => {
    const roots = new SandboxRoots(
      [
        { name: 'workspace', path: ws, mode: 'rw' },
        { name: 'data', path: data, mode: 'ro' },
      ],
      { home: dir },
    );
    const write = await (writeTool as Required<ToolDefinition>).execute(
      { label: 'x', path: join(data, 'new.csv'), content: 'x' },
      ctxWith(roots),
    );
    expect(write).toMatchObject({
      ok: false,
      error: expect.stringMatching(/read-only/) as unknown,
    });
    const edit = await (editTool as Required<ToolDefinition>).execute(
      { path: join(data, 'table.csv'), oldText: 'a', newText: 'z' },
      ctxWith(roots),
    );
    expect(edit).toMatchObject({ ok: false, error: expect.stringMatching(/read-only/) as unknown });
    expect(await readFile(join(data, 'table.csv'), 'utf8')).toBe('a,b\n');
    expect(await read(join(data, 'table.csv'), roots)).toEqual({ ok: true, output: 'a,b' });
    // The rw root still takes writes.
    const ok = await (writeTool as Required<ToolDefinition>).execute(
      { label: 'x', path: 'out.txt', content: 'y' },
      ctxWith(roots),
    );
    expect(ok).toMatchObject({ ok: true });
    expect(await readFile(join(ws, 'out.txt'), 'utf8')).toBe('y');
  });

  it('the innermost root decides: a read-only root nested in a read-write one stays read-only', async () => {
    const roots = new SandboxRoots(
      [
        { name: 'workspace', path: ws, mode: 'rw' },
        { name: 'inner', path: join(ws, 'data'), mode: 'ro' },
      ],
      { home: dir },
    );
    await expect(roots.resolve('data/f.txt', { write: true })).rejects.toThrow(
      /'inner' is read-only/,
    );
    await expect(roots.resolve('data/f.txt')).resolves.toBe(join(ws, 'data/f.txt'));
  });

  it('ctx.sandbox.resolve is there for JavaScript tools, with a root by name', async () => {
    const roots = new SandboxRoots(
      [
        { name: 'workspace', path: ws, mode: 'rw' },
        { name: 'data', path: data, mode: 'ro' },
      ],
      { home: dir },
    );
    const ctx = ctxWith(roots);
    expect(ctx.sandbox.roots.map((r) => r.name)).toEqual(['workspace', 'data']);
    await expect(ctx.sandbox.resolve('table.csv', { root: 'data' })).resolves.toBe(
      join(data, 'table.csv'),
    );
    await expect(ctx.sandbox.resolve('f.txt', { root: 'nope' })).rejects.toThrow(
      /Unknown sandbox root 'nope'/,
    );
    const error = await ctx.sandbox.resolve('/etc/hosts').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxViolation);
    expect((error as SandboxViolation).reason).toBe('escape');
  });

  it('without roots, file tools behave as before (relative to the chat file)', async () => {
    await writeFile(join(dir, 'here.txt'), 'chat dir\n');
    const ctx = createExecutionContext(
      { bufnr: 1, cwd: dir, timeout: 30, toolId: 't', filename: join(dir, 'chat.chat') },
      dir,
    );
    expect(ctx.sandbox.confined).toBe(false);
    expect(
      await (readTool as Required<ToolDefinition>).execute(
        { label: 'x', path: 'here.txt', offset: null, limit: null },
        ctx,
      ),
    ).toEqual({ ok: true, output: 'chat dir' });
  });

  it('a bad sandbox.roots setting fails closed with the problem', async () => {
    expect(parseRoots([{ path: 'relative/x' }], (p) => p)).toMatchObject({
      error: "sandbox.roots[1]: 'relative/x' does not expand to an absolute path",
    });
    expect(parseRoots([{ path: '/a', mode: 'rx' }], (p) => p).error).toMatch(
      /mode must be "rw" or "ro"/,
    );
    expect(parseRoots(['/srv/data', { name: 'w', path: '/w', mode: 'ro' }], (p) => p)).toEqual({
      roots: [
        { name: 'data', path: '/srv/data', mode: 'rw' },
        { name: 'w', path: '/w', mode: 'ro' },
      ],
    });
    const broken = SandboxRoots.invalid('sandbox.roots[1]: path must be a non-empty string', dir);
    expect(await read('data/f.txt', broken)).toEqual({
      ok: false,
      error: 'sandbox.roots[1]: path must be a non-empty string',
    });
  });
});
