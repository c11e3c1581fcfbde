// The first part of running a call (src/host/tools/prepare.ts), over fakes: the tool found and
// checked against the buffer's list and policy; the sandbox, working directory, undo journal and
// write gate made from the facts the dispatch brought; the turn's git note waited for only by a
// tool that may change files.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mayChangeFiles } from '../../src/core/tools/effects.js';
import { checkCall, prepareCall, type PreparePorts } from '../../src/host/tools/prepare.js';
import type { ToolDefinition } from '../../src/core/tools/registry.js';
import { FACTS, config, fakePorts, gate, quickTool } from '../helpers/executor-fakes.js';

function portsOf(fake: ReturnType<typeof fakePorts>, warned: string[] = []): PreparePorts {
  return {
    ...fake.deps,
    warnOnce: (key, message) => warned.push(`${key}: ${message}`),
  };
}

const call = (name: string, input: unknown = {}) => ({ bufnr: 1, id: 't', name, input });

function defOf(fake: ReturnType<typeof fakePorts>, name: string): ToolDefinition {
  const def = fake.registry.resolve(name);
  if (def === undefined) throw new Error(`no tool ${name}`);
  return def;
}

/** prepareCall for a call of the fake's tool `name`, under `used` and the FACTS. */
function prepareNamed(
  fake: ReturnType<typeof fakePorts>,
  name: string,
  signal: AbortSignal,
  ports: PreparePorts = portsOf(fake),
  used = config(),
) {
  return prepareCall(call(name), defOf(fake, name), used, FACTS, signal, ports);
}

describe('checkCall', () => {
  const fake = fakePorts([
    quickTool('calc'),
    { name: 'bare', description: 'no execute', inputSchema: { type: 'object' } },
  ]);
  const catalogue = fake.deps.catalogue;

  it('finds the tool, or says it does not know it (with a guess)', () => {
    expect(checkCall('calc', config(), catalogue)).toMatchObject({ kind: 'ready' });
    expect(checkCall('calx', config(), catalogue)).toEqual({
      kind: 'unknown',
      message: "Unknown tool: calx (did you mean 'calc'?)",
    });
    expect(checkCall('bare', config(), catalogue)).toEqual({
      kind: 'unknown',
      message: 'Tool bare cannot be executed: it has no execute function',
    });
  });

  it('refuses a call the buffer’s list does not offer or the policy blocks, whatever approved it', () => {
    const refusing = { ...catalogue, filterRefusal: () => 'not offered' };
    expect(checkCall('calc', config(), refusing)).toEqual({
      kind: 'refused',
      error: 'not offered',
    });
    const blocking = { ...catalogue, policyBlocks: () => true };
    const blocked = checkCall('calc', config(), blocking);
    expect(blocked.kind).toBe('refused');
    expect(blocked.kind === 'refused' ? blocked.error : '').toContain('calc');
  });
});

it('a read-only built-in does not wait for the turn’s git note; other tools do', async () => {
  expect(mayChangeFiles('read', true)).toBe(false);
  expect(mayChangeFiles('grep', true)).toBe(false);
  expect(mayChangeFiles('bash', true)).toBe(true);
  expect(mayChangeFiles('write', true)).toBe(true);
  // A Lua or JavaScript tool named `read` is not the built-in.
  expect(mayChangeFiles('read', false)).toBe(true);
  const fake = fakePorts([quickTool('read'), quickTool('edit')], { builtin: ['read', 'edit'] });
  fake.note = gate();
  const signal = new AbortController().signal;
  const read = await prepareNamed(fake, 'read', signal);
  expect(read.execCtx.tool_id).toBe('t');
  let edited = false;
  const edit = prepareNamed(fake, 'edit', signal).then(() => {
    edited = true;
  });
  await new Promise<void>((resolve) => setImmediate(resolve));
  expect(edited).toBe(false);
  fake.note.resolve();
  await edit;
  expect(edited).toBe(true);
});

it('gives the call its sandbox (a warning once), its cwd and an undo journal', async () => {
  const fake = fakePorts([quickTool('calc')], {
    sandbox: { warning: 'no sandbox backend', enabled: false },
    undo: true,
  });
  const warned: string[] = [];
  const ports = portsOf(fake, warned);
  const used = config({ calc: { cwd: '~/project' } });
  const signal = new AbortController().signal;
  const prepared = await prepareNamed(fake, 'calc', signal, ports, used);
  expect(prepared.execCtx.cwd).toBe('/home/u/project');
  expect(prepared.execCtx.signal).toBe(signal);
  expect(prepared.execCtx.__filename).toBe('/work/a.chat');
  expect(prepared.toolConfig).toEqual({ cwd: '~/project' });
  expect(prepared.journal?.limits.enabled).toBe(true);
  expect(fake.journal.of('sandbox')).toEqual(['sandbox t on']);
  expect(warned).toEqual(['sandbox: no sandbox backend']);
});

it('a cwd that does not expand warns and falls back to Neovim’s; undo off keeps no journal', async () => {
  const fake = fakePorts([quickTool('calc')]);
  const warned: string[] = [];
  const used = config({ calc: { cwd: 'urn:nowhere' } });
  const signal = new AbortController().signal;
  const prepared = await prepareNamed(fake, 'calc', signal, portsOf(fake, warned), used);
  expect(prepared.execCtx.cwd).toBe('/work');
  expect(warned.length).toBe(1);
  expect(warned[0]).toContain('urn:nowhere');
  expect(prepared.journal).toBeUndefined();
});

it('builds the write gate only when a write first asks it', async () => {
  const fake = fakePorts([quickTool('calc')]);
  const built: string[] = [];
  const ports: PreparePorts = {
    ...portsOf(fake),
    gate: (target) => {
      built.push(target.toolId);
      return { refusal: () => 'a sensitive place' };
    },
  };
  const signal = new AbortController().signal;
  const prepared = await prepareNamed(fake, 'calc', signal, ports);
  expect(built).toEqual([]);
  const dir = mkdtempSync(join(tmpdir(), 'flemma-gate-'));
  try {
    const target = join(dir, 'x.txt');
    await expect(prepared.execCtx.sandbox.open_for_write(target)).rejects.toThrow(
      /Sensitive place: write denied/,
    );
    expect(built).toEqual(['t']);
    expect(existsSync(target)).toBe(false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
