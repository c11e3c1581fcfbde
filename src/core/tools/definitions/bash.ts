// The `bash` tool: runs a shell command for the model and returns what it printed.
//
// Decisions:
// - The command runs as `<shell> -c 'exec 2>&1\n<command>'`: the shell itself sends stderr into
//   stdout's pipe, so the two streams arrive in the order the command wrote them, which two
//   separate pipes cannot promise.
// - The shell and extra environment variables come from the tool's config (`tools.bash.shell`,
//   default `bash`; `tools.bash.env`, a map of strings merged over the host's environment).
//   Non-string values in `env` are ignored rather than stringified. The result goes through the
//   sandbox's `scrub_env` (provider keys and other secrets removed while the sandbox is enabled,
//   whatever the backend), and the command gets exactly that, not the host's environment too.
// - The argv goes through the sandbox's `wrap_command` first; a sandbox that cannot wrap is an
//   error, never a silent fallback to running unsandboxed.
// - The process leads its own process group (see process.ts), so a timeout or a cancel stops
//   everything the command started, background jobs included.
// - The time limit follows the executor's order (docs/tools.md), so that the executor, which
//   allows a few seconds more, never cuts the command short before its own timeout message: the
//   tool's `tools.bash.timeout` setting, else the call's `timeout`, else the context's default
//   (`tools.default_timeout`). Values that are not positive numbers are skipped.
// - Trailing whitespace is removed from the output, then the END is kept when it is too long
//   (that is where errors and summaries are) and the full text is saved to a temp file.
//   The command writes straight into that file (its stdout and stderr, output-file.ts), which the
//   host reads behind it: a command printing megabytes costs a scan of them and the decoding of
//   the end that is kept (truncate.ts), not a pipe's thousands of reads and a second write. When
//   the file cannot be made, the output comes through a pipe and is saved at the end.
// - What the command prints is handed to `ctx.output` as it is read (the live view under the
//   call's block and `:Flemma tool:output`); the result is still made from the whole output.
// - A command whose output passes 256 MB is stopped (a pipe's reader stopped it there too), and
//   the result says so after the end of what it printed.
// - A whitespace-only command counts as no command.
// - A process ended by a signal nobody here sent (say `kill -9 $$`) is reported as such, with
//   its output, like a non-zero exit.

import type { WrapResult } from '../context.js';
import { type RunOptions, type RunResult, runProcess } from '../process.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';
import { OUTPUT_LIMIT, OutputFile } from '../output-file.js';
import {
  MAX_BYTES,
  MAX_LINES,
  type TruncateFs,
  formatSize,
  nodeTruncateFs,
  overflowPath,
  truncateForResult,
  truncateOutputTail,
} from '../truncate.js';
import { type RunFn } from './ls.js';
import { builtinTool, optional, fieldsOf, textOf } from './builtin.js';

/** The shell used when `tools.bash.shell` is not set. */
export const BASH_DEFAULT_SHELL = 'bash';

export interface BashToolOptions {
  /** Run processes with this instead of `runProcess`. */
  run?: RunFn;
  /** Where overflow files go (tests point this at a temp directory). */
  truncateFs?: TruncateFs;
}

/** The argv that runs `command` with stderr folded into stdout. */
export function bashArgv(shell: string, command: string): string[] {
  return [shell, '-c', `exec 2>&1\n${command}`];
}

/** `tools.bash.shell` when it is a non-empty string, else the default. */
export function shellFrom(config: Record<string, unknown> | undefined): string {
  const shell = config?.['shell'];
  return typeof shell === 'string' && shell.trim() !== '' ? shell : BASH_DEFAULT_SHELL;
}

/** The string entries of `tools.bash.env`; anything else in it is dropped. */
export function envFrom(config: Record<string, unknown> | undefined): Record<string, string> {
  const raw = fieldsOf(config?.['env']);
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (typeof value === 'string') env[key] = value;
  }
  return env;
}

const isPositive = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;

/** Seconds the command may run: the tool's setting, else the call's value, else the default. */
function timeoutFrom(
  config: Record<string, unknown> | undefined,
  requested: unknown,
  fallback: number,
): number {
  const configured = config?.['timeout'];
  if (isPositive(configured)) return configured;
  return isPositive(requested) ? requested : fallback;
}

/** `text` with `suffix` after a blank line, or `suffix` alone when there is no text. */
function withTrailer(text: string, suffix: string): string {
  return text === '' ? suffix : `${text}\n\n${suffix}`;
}

async function shownOutput(
  result: RunResult,
  ctx: ToolContext,
  fs: TruncateFs,
  file: OutputFile | undefined,
): Promise<string> {
  const where = { source: 'bash', id: ctx.tool_id };
  // The command wrote to the file (output-file.ts): no bytes or text of the run's own.
  if (file !== undefined && result.bytes === undefined && result.output === '') {
    return (await file.cut(where)).text;
  }
  await file?.discard();
  const cut =
    result.bytes === undefined
      ? await truncateForResult(result.output.trimEnd(), { ...where, mode: 'tail' }, fs)
      : await truncateOutputTail(result.bytes, where, fs);
  return cut.text;
}

/** Why a run that did not end well ended, after its output; undefined when it ended well. */
function failure(result: RunResult, timeoutSeconds: number): string | undefined {
  if (result.limited === true) {
    return `Command stopped: its output passed ${formatSize(OUTPUT_LIMIT)}.`;
  }
  if (result.timedOut) return `Command timed out after ${timeoutSeconds} seconds.`;
  if (result.exitCode === 0) return undefined;
  return result.exitCode === null
    ? `Command terminated by signal ${result.signal ?? 'unknown'}`
    : `Command exited with code ${result.exitCode}`;
}

/** Turns a finished run into the tool's outcome. */
export async function bashOutcome(
  result: RunResult,
  timeoutSeconds: number,
  ctx: ToolContext,
  fs: TruncateFs = nodeTruncateFs,
  file?: OutputFile,
): Promise<ToolOutcome> {
  if (result.cancelled || result.startError !== undefined) await file?.discard();
  if (result.cancelled) return { ok: false, error: 'Cancelled' };
  if (result.startError !== undefined) {
    return { ok: false, error: `Failed to start job: ${result.startError}` };
  }
  const output = await shownOutput(result, ctx, fs, file);
  const why = failure(result, timeoutSeconds);
  if (why === undefined) return { ok: true, output: output === '' ? '(no output)' : output };
  return { ok: false, error: withTrailer(output, why) };
}

async function executeBash(
  input: unknown,
  ctx: ToolContext,
  options: BashToolOptions,
): Promise<ToolOutcome> {
  const fields = fieldsOf(input);
  const command = fields['command'];
  if (typeof command !== 'string' || command.trim() === '') {
    return { ok: false, error: 'No command provided' };
  }
  const config = ctx.get_config();
  const timeoutSeconds = timeoutFrom(config, fields['timeout'], ctx.timeout);

  let wrapped: WrapResult;
  try {
    wrapped = await ctx.sandbox.wrap_command(bashArgv(shellFrom(config), command));
  } catch (err) {
    wrapped = { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  if (!wrapped.ok) return { ok: false, error: `Sandbox error: ${wrapped.error}` };
  if (ctx.signal.aborted) return { ok: false, error: 'Cancelled' };

  const run = options.run ?? runProcess;
  const fs = options.truncateFs ?? nodeTruncateFs;
  const how: RunOptions = {
    cwd: ctx.cwd,
    env: ctx.sandbox.scrub_env({ ...process.env, ...envFrom(config) }),
    extendEnv: false,
    signal: ctx.signal,
    timeoutMs: timeoutSeconds * 1000,
  };
  const limit = new AbortController();
  const file = await OutputFile.create(overflowPath('bash', ctx.tool_id, fs.tmpdir()), fs, {
    threshold: MAX_BYTES,
    ...(ctx.output === undefined ? {} : { onOutput: ctx.output }),
    onLimit: () => {
      limit.abort();
    },
  });
  if (file === undefined) {
    const shown = ctx.output === undefined ? {} : { onOutput: ctx.output };
    const result = await run(wrapped.argv, { ...how, ...shown, bytes: true });
    return bashOutcome(result, timeoutSeconds, ctx, fs);
  }
  const stopFollowing = file.follow();
  try {
    const result = await run(wrapped.argv, { ...how, outputFd: file.fd, limit: limit.signal });
    stopFollowing();
    return await bashOutcome(result, timeoutSeconds, ctx, fs, file);
  } finally {
    stopFollowing();
    await file.discard();
  }
}

/** The first non-blank line of a command, marked with ` …` when more lines follow. */
export function commandSummary(command: string): string {
  const lines = command.trim().split('\n');
  const first = (lines[0] ?? '').trimEnd();
  return lines.length > 1 ? `${first} …` : first;
}

/** A bash tool; `bashTool` is the one the host registers, tests can swap the runner. */
export function createBashTool(options: BashToolOptions = {}): ToolDefinition {
  return builtinTool({
    name: 'bash',
    description:
      'Run a shell command (bash -c) in the working directory and return its output, with stderr ' +
      'merged into stdout in the order it was written. A non-zero exit status is reported as an ' +
      'error that includes the output. When the output exceeds ' +
      `${MAX_LINES} lines or ${MAX_BYTES / 1024}KB only its end is returned, and the full ` +
      'output is saved to a file whose path is given. The command and everything it started are ' +
      'stopped when the timeout expires. Prefer the read, write, edit, grep, find and ls tools ' +
      'for file work.',
    why: 'run the command, e.g. "run the unit tests"',
    properties: {
      command: {
        type: 'string',
        description: 'The shell command to run; several lines form a script.',
      },
      timeout: optional(
        'number',
        'Seconds to let the command run before it is stopped (null: the configured ' +
          'default, normally 30).',
      ),
    },
    async: true,
    canAutoApproveIfSandboxed: true,
    // "Always" is per command, and YOLO mode still asks (docs/approval.md).
    requireCmdApproval: true,
    neverAutoApprove: true,
    cmdString: (input) => {
      const command = asCommand(input);
      return command === '' ? undefined : command;
    },
    label: 'Run shell command',
    execute: (input, ctx) => executeBash(input, ctx, options),
    detail: (input) => `$ ${commandSummary(textOf(input, 'command'))}`,
  });
}

function asCommand(input: unknown): string {
  const command = (input as Record<string, unknown> | null)?.['command'];
  return typeof command === 'string' ? command.trim() : '';
}

export const bashTool: ToolDefinition = createBashTool();
