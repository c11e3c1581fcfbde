// The `exec` implementation of a declarative tool (the decisions are in compile.ts).
import type { ToolOutcome } from '../registry.js';
import { runProcess, type RunResult } from '../process.js';
import { CommandSyntaxError, displayCommand, splitCommand } from './argv.js';
import { DeclarativeError, type TemplateScope, parseDuration, templateAt } from './definition.js';
import type { RenderOptions, Template } from './template.js';
import {
  type CompileOptions,
  type Compiled,
  DEFAULT_TIMEOUT_MS,
  type Values,
  formatMs,
  renderMap,
  stringMap,
} from './compiled.js';

interface Word {
  template: Template;
  quoted: boolean;
}

export function compileExec(
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
  options: CompileOptions,
): Compiled {
  const words = commandWords(impl['command'], scope);
  const rawEnv = impl['env'];
  const envEntries: [string, Template][] = Array.isArray(rawEnv)
    ? (rawEnv as string[]).map((name) => [
        name,
        templateAt(`implementation.env`, `\${${name}}`, scope),
      ])
    : stringMap('implementation.env', rawEnv, scope);
  const cwd =
    typeof impl['cwd'] === 'string'
      ? templateAt('implementation.cwd', impl['cwd'], scope)
      : undefined;
  const timeoutMs = parseDuration(impl['timeout'], DEFAULT_TIMEOUT_MS);

  const argvOf = (values: Values, opts: RenderOptions): string[] => {
    const argv: string[] = [];
    for (const word of words) {
      const text = word.template.render(values, opts);
      if (text === '' && !word.quoted) continue;
      argv.push(text);
    }
    return argv;
  };

  return {
    async: true,
    budgetMs: timeoutMs,
    preview: (values) =>
      `Run the command \`${displayCommand(argvOf(values, { ...render, keepEnv: true }))}\`?`,
    execute: async (values, ctx) => {
      const argv = argvOf(values, render);
      const env: Record<string, string> = {};
      const path = (options.env ?? process.env)['PATH'];
      if (path !== undefined) env['PATH'] = path;
      for (const [key, value] of renderMap(envEntries, values, render)) env[key] = value;
      const dir =
        cwd === undefined ? ctx.cwd : await ctx.sandbox.resolve(cwd.render(values, render));
      const wrapped = await ctx.sandbox.wrap_command(argv);
      if (!wrapped.ok) return { ok: false, error: `Sandbox error: ${wrapped.error}` };
      const run = options.run ?? runProcess;
      const result = await run(wrapped.argv, {
        cwd: dir,
        env,
        extendEnv: false,
        signal: ctx.signal,
        timeoutMs,
        mergeStderr: true,
      });
      return outcomeOf(result, displayCommand(argv), timeoutMs);
    },
  };
}

/** The command's words: a list is one word each; a string is split first (then rendered). */
function commandWords(command: unknown, scope: TemplateScope): Word[] {
  let words: Word[];
  try {
    words = Array.isArray(command)
      ? (command as string[]).map((text, i) => ({
          template: templateAt(`implementation.command[${String(i)}]`, text, scope),
          quoted: true,
        }))
      : splitCommand(String(command)).map((w) => ({
          template: templateAt('implementation.command', w.text, scope),
          quoted: w.quoted,
        }));
  } catch (error) {
    if (error instanceof CommandSyntaxError)
      throw new DeclarativeError(`implementation.command: ${error.message}`);
    throw error;
  }
  if (words.length === 0) throw new DeclarativeError('implementation.command is empty');
  return words;
}

/** A finished command as the call's outcome: a non-zero exit is an error with the output. */
function outcomeOf(result: RunResult, shown: string, timeoutMs: number): ToolOutcome {
  if (result.startError !== undefined) {
    return { ok: false, error: `Cannot run \`${shown}\`: ${result.startError}` };
  }
  if (result.cancelled) return { ok: false, error: 'Cancelled' };
  // One final newline is the end of the last line, not an empty line of output.
  const output = result.output.replace(/\r?\n$/, '');
  const fail = (why: string): ToolOutcome =>
    output === '' ? { ok: false, error: why } : { ok: false, error: why, partialOutput: output };
  if (result.timedOut) return fail(`Command timed out after ${formatMs(timeoutMs)}: ${shown}`);
  if (result.exitCode !== 0) {
    const why =
      result.exitCode === null
        ? `Command terminated by signal ${result.signal ?? 'unknown'}`
        : `Command exited with code ${String(result.exitCode)}`;
    return fail(`${why}: ${shown}`);
  }
  return { ok: true, output };
}
