// The bash tool with real shells in temp directories: output handling, exit status, timeout,
// cancel, large output, config, sandbox wrapping, preview and schema.
//
// A cancel waits for the command to announce itself through a named pipe before aborting, so the
// test does not depend on timing. The death of a background child is polled for briefly, as
// nothing signals it to the test.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  type ContextInit,
  type SandboxAccess,
  createExecutionContext,
  noSandbox,
} from '../../src/core/tools/context.js';
import { bashTool, commandSummary, createBashTool } from '../../src/core/tools/definitions/bash.js';
import { compose, timeoutMiddleware } from '../../src/core/tools/middleware.js';
import type { RunOptions, RunResult } from '../../src/core/tools/process.js';
import {
  type ToolContext,
  type ToolDefinition,
  type ToolOutcome,
  ToolRegistry,
} from '../../src/core/tools/registry.js';
import { type TruncateFs, nodeTruncateFs } from '../../src/core/tools/truncate.js';
import {
  RUN_OK,
  cleanUpRuns,
  firstLine,
  isAlive,
  makeFifo,
  waitForExit,
} from '../helpers/processes.js';

let dir: string;
let overflowDir: string;
let truncateFs: TruncateFs;
let tool: ToolDefinition;
const pidsToKill: number[] = [];

beforeEach(async () => {
  dir = realpathSync(await mkdtemp(join(tmpdir(), 'flemma-bash-')));
  overflowDir = join(dir, 'overflow');
  execFileSync('mkdir', [overflowDir]);
  // The command writes to its output file there (output-file.ts), as in the host.
  truncateFs = { ...nodeTruncateFs, tmpdir: () => overflowDir };
  tool = createBashTool({ truncateFs });
});

afterEach(async () => {
  await cleanUpRuns(pidsToKill, dir);
});

type Extra = Partial<Omit<ContextInit, 'bufnr' | 'cwd' | 'toolId'>> & { toolId?: string };

function context(extra: Extra = {}): ToolContext {
  const init: ContextInit = { bufnr: 1, cwd: dir, timeout: 30, toolId: 'toolu_b1' };
  Object.assign(init, extra);
  return createExecutionContext(init, '/home/nobody');
}

function run(input: unknown, ctx: ToolContext = context(), def = tool): Promise<ToolOutcome> {
  if (def.execute === undefined) throw new Error('bash has no execute');
  return def.execute(input, ctx);
}

const call = (command: unknown, timeout: unknown = null) => ({ label: 'test', command, timeout });

/** A runner that records what it was asked to run and answers with `result`. */
function recordingRunner(result: Partial<RunResult> = {}) {
  const calls: { argv: readonly string[]; options: RunOptions }[] = [];
  const runFn = (argv: readonly string[], options: RunOptions): Promise<RunResult> => {
    calls.push({ argv, options });
    return Promise.resolve({ ...RUN_OK, ...result });
  };
  return { calls, runFn };
}

describe('bash: output', () => {
  it('merges stderr into the output in the order it was written', async () => {
    const result = await run(call('echo one; echo two >&2; echo three; echo four >&2'));
    expect(result).toEqual({ ok: true, output: 'one\ntwo\nthree\nfour' });
  });

  it('removes trailing whitespace only', async () => {
    const result = await run(call("printf '  indented\\n\\nlast  \\n\\n \\t\\n'"));
    expect(result).toEqual({ ok: true, output: '  indented\n\nlast' });
  });

  it('says (no output) when nothing but whitespace was printed', async () => {
    expect(await run(call('true'))).toEqual({ ok: true, output: '(no output)' });
    expect(await run(call("printf '\\n  \\n'"))).toEqual({ ok: true, output: '(no output)' });
  });

  it('runs in the context working directory', async () => {
    expect(await run(call('pwd'))).toEqual({ ok: true, output: dir });
  });
});

describe('bash: failures', () => {
  it('reports a non-zero exit with the output before it', async () => {
    expect(await run(call('echo oops; echo worse >&2; exit 3'))).toEqual({
      ok: false,
      error: 'oops\nworse\n\nCommand exited with code 3',
    });
  });

  it('reports a non-zero exit without output on its own', async () => {
    expect(await run(call('exit 2'))).toEqual({ ok: false, error: 'Command exited with code 2' });
  });

  it('reports a shell killed by a signal', async () => {
    expect(await run(call('echo before; kill -9 $$'))).toEqual({
      ok: false,
      error: 'before\n\nCommand terminated by signal SIGKILL',
    });
  });

  it('refuses an empty or missing command', async () => {
    for (const command of ['', '  \n ', undefined, 42]) {
      expect(await run(call(command))).toEqual({ ok: false, error: 'No command provided' });
    }
    expect(await run(null)).toEqual({ ok: false, error: 'No command provided' });
  });

  it('reports a shell that cannot be started', async () => {
    const ctx = context({ config: { shell: join(dir, 'no-such-shell') } });
    const result = await run(call('echo hi'), ctx);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatch(/^Failed to start job: \S/);
  });
});

describe('bash: timeout and cancel', () => {
  it('stops the command and everything it started when the timeout expires', async () => {
    const result = await run(call('sleep 30 & echo child=$!; wait', 0.3));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const match = /^child=(\d+)\n\nCommand timed out after 0\.3 seconds\.$/.exec(result.error);
    expect(match).not.toBeNull();
    const child = Number(match?.[1]);
    pidsToKill.push(child);
    await waitForExit(child);
  });

  it('uses the context timeout when the call gives none', async () => {
    const result = await run(call('sleep 30'), context({ timeout: 0.2 }));
    expect(result).toEqual({ ok: false, error: 'Command timed out after 0.2 seconds.' });
  });

  it('passes the timeout in milliseconds, falling back for unusable values', async () => {
    const { calls, runFn } = recordingRunner();
    const def = createBashTool({ run: runFn, truncateFs });
    await run(call('true', 2.5), context(), def);
    await run(call('true', null), context({ timeout: 7 }), def);
    await run(call('true', -1), context({ timeout: 7 }), def);
    await run(call('true', '10'), context({ timeout: 7 }), def);
    expect(calls.map((c) => c.options.timeoutMs)).toEqual([2500, 7000, 7000, 7000]);
  });

  it("lets the tool's timeout setting win over the call, as the executor does", async () => {
    const { calls, runFn } = recordingRunner();
    const def = createBashTool({ run: runFn, truncateFs });
    await run(call('true', 300), context({ config: { timeout: 12 } }), def);
    await run(call('true', 4), context({ config: { timeout: 0 } }), def);
    expect(calls.map((c) => c.options.timeoutMs)).toEqual([12000, 4000]);
  });

  it('hands what the command prints to ctx.output as it comes, and still returns all of it', async () => {
    const chunks: Buffer[] = [];
    const output = (chunk: string | Uint8Array): void => {
      chunks.push(Buffer.from(chunk));
    };
    const result = await run(call('echo one; echo two >&2'), context({ output }));
    expect(result).toEqual({ ok: true, output: 'one\ntwo' });
    expect(Buffer.concat(chunks).toString('utf8')).toBe('one\ntwo\n');
  });

  it('hands on what the command printed while it still runs', async () => {
    const fifo = makeFifo(dir);
    let seen = '';
    let printed: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (printed = resolve));
    const output = (chunk: string | Uint8Array): void => {
      seen += Buffer.from(chunk).toString('utf8');
      if (seen.includes('first\n')) printed();
    };
    const ctx = context({ output, config: { env: { FIFO: fifo } } });
    // The command prints, then waits for the test, which answers once it saw the line.
    const running = run(call('echo first; read -r line < "$FIFO"; echo "then $line"'), ctx);
    await first;
    writeFileSync(fifo, 'go\n');
    expect(await running).toEqual({ ok: true, output: 'first\nthen go' });
    expect(seen).toBe('first\nthen go\n');
  });

  it('is cancelled through the context signal, and the process tree is stopped', async () => {
    const fifo = makeFifo(dir);
    const controller = new AbortController();
    const ctx = context({ signal: controller.signal, config: { env: { FIFO: fifo } } });
    const running = run(call('sleep 30 & echo $! > "$FIFO"; wait'), ctx);
    const child = Number(await firstLine(fifo));
    pidsToKill.push(child);
    expect(isAlive(child)).toBe(true);
    controller.abort();
    expect(await running).toEqual({ ok: false, error: 'Cancelled' });
    await waitForExit(child);
  });

  it('F-14: the timeout middleware answers at 100 ms, aborts the signal, and no process is left', async () => {
    const fifo = makeFifo(dir);
    const ctx = context({ config: { env: { FIFO: fifo } } });
    const handler = compose([timeoutMiddleware(100)], (c) => run(c.input, c.ctx));
    // The command would run for longer than the test may: only the timeout can end it.
    const result = handler({
      name: 'bash',
      input: call('sleep 300 & echo $! > "$FIFO"; wait'),
      ctx,
    });
    const child = Number(await firstLine(fifo));
    pidsToKill.push(child);
    expect(await result).toEqual({ ok: false, error: 'Tool timed out after 100ms' });
    await waitForExit(child);
  });

  it('does not run a command whose signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const marker = join(dir, 'ran');
    const result = await run(call(`touch '${marker}'`), context({ signal: controller.signal }));
    expect(result).toEqual({ ok: false, error: 'Cancelled' });
    expect(existsSync(marker)).toBe(false);
  });
});

describe('bash: large output', () => {
  it('keeps the tail of 5 MB of output and saves all of it', async () => {
    const command =
      "head -c 5000000 /dev/zero | tr '\\0' x | fold -w 99; printf '\\nTHE END\\n\\n'";
    const result = await run(call(command), context({ toolId: 'toolu_big' }));
    expect(result.ok).toBe(true);
    if (!result.ok || typeof result.output !== 'string') return;

    const saved = join(overflowDir, 'flemma_bash_toolu_big.txt');
    const full = readFileSync(saved, 'utf8');
    const lines = full.split('\n');
    // 5,000,000 x's in lines of 99, then THE END; the trailing blank lines were trimmed.
    expect(lines.length).toBe(Math.ceil(5_000_000 / 99) + 1);
    expect(lines[lines.length - 1]).toBe('THE END');
    expect(full.length).toBe(5_000_000 + lines.length - 1 + 'THE END'.length);

    const [kept, notice] = result.output.split('\n\n');
    const total = lines.length;
    const shown = (kept ?? '').split('\n').length;
    expect(notice).toBe(
      `[Showing lines ${total - shown + 1}-${total} of ${total} (50.0KB limit). Full output: ${saved}]`,
    );
    expect(kept?.endsWith('\nTHE END')).toBe(true);
    expect(Buffer.byteLength(kept ?? '')).toBeLessThanOrEqual(50 * 1024);
    expect(full.endsWith(kept ?? '-')).toBe(true);
    // How soon after the exit the result is ready is a benchmark figure (S4 in `npm run bench`).
  });

  it('also cuts the output of a failed command to its tail', async () => {
    const result = await run(call('seq 1 5000; exit 1'), context({ toolId: 'toolu_fail' }));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const saved = join(overflowDir, 'flemma_bash_toolu_fail.txt');
    expect(result.error).toMatch(
      new RegExp(
        `^3001\\n[\\s\\S]*\\n5000\\n\\n\\[Showing lines 3001-5000 of 5000\\. Full output: ${saved}\\]\\n\\nCommand exited with code 1$`,
      ),
    );
  });
});

describe('bash: where the output goes', () => {
  it('reads a pipe and saves the output at the end when no output file can be made', async () => {
    const withoutFile: TruncateFs = {
      writeFile: (path, data) => writeFile(path, data, 'utf8'),
      tmpdir: () => overflowDir,
    };
    const def = createBashTool({ truncateFs: withoutFile });
    const result = await run(call('seq 1 5000'), context({ toolId: 'toolu_pipe' }), def);
    const saved = join(overflowDir, 'flemma_bash_toolu_pipe.txt');
    expect(result.ok).toBe(true);
    if (!result.ok || typeof result.output !== 'string') return;
    expect(result.output.startsWith('3001\n')).toBe(true);
    expect(
      result.output.endsWith(`\n5000\n\n[Showing lines 3001-5000 of 5000. Full output: ${saved}]`),
    ).toBe(true);
    expect(readFileSync(saved, 'utf8').split('\n')).toHaveLength(5000);
  });

  it('leaves no file behind for an output a result holds whole', async () => {
    expect(await run(call('echo small'))).toEqual({ ok: true, output: 'small' });
    expect(readdirSync(overflowDir)).toEqual([]);
  });

  it('says the command was stopped when its output passed the limit', async () => {
    const { runFn } = recordingRunner({
      exitCode: null,
      signal: 'SIGTERM',
      output: 'y\ny\n',
      limited: true,
    });
    const def = createBashTool({ run: runFn, truncateFs });
    expect(await run(call('yes'), context(), def)).toEqual({
      ok: false,
      error: 'y\ny\n\nCommand stopped: its output passed 256.0MB.',
    });
  });
});

describe('bash: config and sandbox', () => {
  it('runs `bash -c` with stderr folded in by default', async () => {
    const { calls, runFn } = recordingRunner({ output: 'hi\n' });
    const result = await run(call('echo hi'), context(), createBashTool({ run: runFn }));
    expect(result).toEqual({ ok: true, output: 'hi' });
    expect(calls).toHaveLength(1);
    expect(calls[0]?.argv).toEqual(['bash', '-c', 'exec 2>&1\necho hi']);
    expect(calls[0]?.options.cwd).toBe(dir);
    // The environment goes through the sandbox's scrub (none here: the host's, as it is).
    expect(calls[0]?.options.extendEnv).toBe(false);
    expect(calls[0]?.options.env?.['PATH']).toBe(process.env['PATH']);
  });

  it('uses the configured shell and merges string env values', async () => {
    const ctx = context({
      config: { shell: 'sh', env: { FLEMMA_GREETING: 'hi there', FLEMMA_NUMBER: 5 } },
    });
    const result = await run(
      call('echo "$0"; echo "$FLEMMA_GREETING"; echo "${FLEMMA_NUMBER-unset}"; echo "$HOME"'),
      ctx,
    );
    expect(result).toEqual({
      ok: true,
      output: `sh\nhi there\nunset\n${process.env['HOME'] ?? ''}`,
    });
    expect(await run(call('echo "$0"'))).toEqual({ ok: true, output: 'bash' });
  });

  it('runs the argv the sandbox wraps the command into', async () => {
    const seen: (readonly string[])[] = [];
    const sandbox: SandboxAccess = {
      enabled: true,
      is_path_writable: () => false,
      scrub_env: (env) => noSandbox.scrub_env(env),
      wrap_command: (argv) => {
        seen.push(argv);
        return Promise.resolve({ ok: true, argv: ['env', 'FLEMMA_WRAPPED=yes', ...argv] });
      },
    };
    const result = await run(call('echo "$FLEMMA_WRAPPED"'), context({ sandbox }));
    expect(result).toEqual({ ok: true, output: 'yes' });
    expect(seen).toEqual([['bash', '-c', 'exec 2>&1\necho "$FLEMMA_WRAPPED"']]);
  });

  it('reports a sandbox that cannot wrap the command, without running it', async () => {
    const marker = join(dir, 'ran');
    const refusing: SandboxAccess = {
      enabled: true,
      is_path_writable: () => false,
      scrub_env: (env) => noSandbox.scrub_env(env),
      wrap_command: () => Promise.resolve({ ok: false, error: 'bwrap is not installed' }),
    };
    expect(await run(call(`touch '${marker}'`), context({ sandbox: refusing }))).toEqual({
      ok: false,
      error: 'Sandbox error: bwrap is not installed',
    });
    const throwing: SandboxAccess = {
      ...refusing,
      wrap_command: () => Promise.reject(new Error('backend crashed')),
    };
    expect(await run(call(`touch '${marker}'`), context({ sandbox: throwing }))).toEqual({
      ok: false,
      error: 'Sandbox error: backend crashed',
    });
    expect(existsSync(marker)).toBe(false);
  });
});

describe('bash: definition', () => {
  it('has the wire schema and capabilities of the built-in', () => {
    expect(bashTool.name).toBe('bash');
    expect(bashTool.strict).toBe(true);
    expect(bashTool.async).toBe(true);
    expect(bashTool.canAutoApproveIfSandboxed).toBe(true);
    const schema = bashTool.inputSchema;
    expect(schema['type']).toBe('object');
    expect(schema['additionalProperties']).toBe(false);
    expect([...(schema['required'] as string[])].sort()).toEqual(['command', 'label', 'timeout']);
    const props = schema['properties'] as Record<string, Record<string, unknown>>;
    expect(Object.keys(props).sort()).toEqual(['command', 'label', 'timeout']);
    expect(props['command']?.['type']).toBe('string');
    expect(props['label']?.['type']).toBe('string');
    expect(props['timeout']?.['type']).toEqual(['number', 'null']);
    for (const prop of Object.values(props)) expect(typeof prop['description']).toBe('string');

    const registry = new ToolRegistry();
    registry.register(bashTool);
    expect(registry.specs()[0]?.inputSchema['required']).toEqual(['command', 'label', 'timeout']);
  });

  it('previews the first line of the command and the label', () => {
    const preview = (input: Record<string, unknown>) => bashTool.formatPreview?.(input, 80);
    expect(preview({ command: 'make test', label: 'running tests' })).toEqual({
      detail: '$ make test',
      label: 'running tests',
    });
    expect(preview({ command: 'cd src\nmake\n', label: 'build' })).toEqual({
      detail: '$ cd src …',
      label: 'build',
    });
    expect(preview({ command: 'ls\n' })).toEqual({ detail: '$ ls', label: undefined });
    expect(commandSummary('\n\n  git status  \n')).toBe('git status');
  });
});
