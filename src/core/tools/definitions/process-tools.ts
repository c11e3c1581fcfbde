// `process_start`, `process_status`, `process_output`, `process_kill`: background processes the
// model starts and watches across turns (dev servers, watchers, long builds). See background.ts.
//
// Decisions (see docs/tools.md):
// - `process_start` runs `command` with `args` as an argument list (no shell) when `args` is
//   given, else `command` through `sh -c`. The argv goes through the sandbox's `wrap_command`,
//   as `bash` does; a sandbox that cannot wrap is an error.
// - `cwd` is resolved against the chat file's directory; default the context's cwd.
// - `process_status` without `id` lists the buffer's processes.

import type { ProcessInfo, ProcessManager } from '../background.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(info: ProcessInfo): string {
  const state = info.running
    ? 'running'
    : info.startError !== undefined
      ? `failed to start: ${info.startError}`
      : info.signal !== null
        ? `ended by ${info.signal}`
        : `exited with code ${String(info.exitCode)}`;
  const seconds = (((info.endedAt ?? Date.now()) - info.startedAt) / 1000).toFixed(1);
  return `${info.id} (pid ${String(info.pid)}, buffer ${String(info.bufnr)}): ${state}, ${seconds}s, ${String(info.outputBytes)} bytes of output — ${info.command}`;
}

function idOf(args: Record<string, unknown>): string | undefined {
  return typeof args['id'] === 'string' && args['id'] !== '' ? args['id'] : undefined;
}

function unknownProcess(id: string): ToolOutcome {
  return { ok: false, error: `No background process '${id}' (process_status lists them)` };
}

/** `process_start`: runs a command in the background and answers its id at once. */
function startTool(manager: ProcessManager): ToolDefinition {
  return {
    name: 'process_start',
    label: 'Start a background process',
    aliases: ['process.start'],
    dangerous: true,
    description:
      'Start a long-running program in the background (a server, a watcher) and return its id at once. ' +
      'Without args the command runs through sh -c. Follow it with process_status, process_output and process_kill.',
    inputSchema: {
      type: 'object',
      properties: {
        command: {
          type: 'string',
          description: 'The program, or a shell command line when args is absent',
        },
        args: { type: 'array', items: { type: 'string' }, description: 'Arguments (no shell)' },
        cwd: { type: 'string', description: 'Working directory (relative to the chat file)' },
      },
      required: ['command'],
      additionalProperties: false,
    },
    formatPreview: (input) => (typeof input['command'] === 'string' ? input['command'] : ''),
    execute: async (input: unknown, ctx: ToolContext): Promise<ToolOutcome> => {
      const args = isRecord(input) ? input : {};
      const command = typeof args['command'] === 'string' ? args['command'].trim() : '';
      if (command === '') return { ok: false, error: 'command is required' };
      const list = Array.isArray(args['args'])
        ? args['args'].filter((a): a is string => typeof a === 'string')
        : undefined;
      const argv = list === undefined ? ['sh', '-c', command] : [command, ...list];
      const wrapped = await ctx.sandbox.wrap_command(argv);
      if (!wrapped.ok) return { ok: false, error: wrapped.error };
      const cwd =
        typeof args['cwd'] === 'string' && args['cwd'] !== ''
          ? ctx.path.resolve(args['cwd'])
          : ctx.cwd;
      const shown = list === undefined ? command : [command, ...list].join(' ');
      const info = await manager.start({
        bufnr: ctx.bufnr,
        argv: wrapped.argv,
        command: shown,
        cwd,
        env: ctx.sandbox.scrub_env(process.env),
        extendEnv: false,
      });
      if (info.startError !== undefined) return { ok: false, error: describe(info) };
      return { ok: true, output: `Started ${describe(info)}` };
    },
  };
}

/** `process_status`: one process, or every process of the buffer. */
function statusTool(manager: ProcessManager): ToolDefinition {
  return {
    name: 'process_status',
    label: 'Background process status',
    aliases: ['process.status', 'process.list'],
    description:
      "The state of a background process started with process_start (running, exit code), or of all of this chat's processes when id is left out.",
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The id process_start returned (p1, p2…)' },
      },
      additionalProperties: false,
    },
    execute: (input: unknown, ctx: ToolContext): Promise<ToolOutcome> => {
      const args = isRecord(input) ? input : {};
      const id = idOf(args);
      if (id === undefined) {
        const all = manager.list(ctx.bufnr);
        return Promise.resolve({
          ok: true,
          output:
            all.length === 0
              ? 'No background processes in this chat.'
              : all.map(describe).join('\n'),
        });
      }
      const info = manager.info(id);
      return Promise.resolve(
        info === undefined ? unknownProcess(id) : { ok: true, output: describe(info) },
      );
    },
  };
}

/** `process_output`: the tail of what a process printed. */
function outputTool(manager: ProcessManager): ToolDefinition {
  return {
    name: 'process_output',
    label: 'Background process output',
    aliases: ['process.output'],
    description:
      'What a background process printed so far (stdout and stderr interleaved; the last tail_bytes).',
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The process id' },
        tail_bytes: {
          type: 'integer',
          description: 'Only the last this many characters (default 8000)',
        },
      },
      required: ['id'],
      additionalProperties: false,
    },
    execute: (input: unknown): Promise<ToolOutcome> => {
      const args = isRecord(input) ? input : {};
      const id = idOf(args) ?? '';
      const tail =
        typeof args['tail_bytes'] === 'number' && args['tail_bytes'] > 0
          ? args['tail_bytes']
          : 8000;
      const info = manager.info(id);
      const text = manager.output(id, tail);
      if (info === undefined || text === undefined) return Promise.resolve(unknownProcess(id));
      return Promise.resolve({
        ok: true,
        output: `${describe(info)}\n\n${text === '' ? '(no output yet)' : text}`,
      });
    },
  };
}

/** `process_kill`: stops a process and everything it started. */
function killTool(manager: ProcessManager): ToolDefinition {
  return {
    name: 'process_kill',
    label: 'Stop a background process',
    aliases: ['process.kill'],
    dangerous: true,
    description:
      'Stop a background process and everything it started (SIGTERM, then SIGKILL after 2 s).',
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The process id' },
        signal: {
          type: 'string',
          enum: ['SIGTERM', 'SIGINT', 'SIGKILL'],
          description: 'Default SIGTERM',
        },
      },
      required: ['id'],
      additionalProperties: false,
    },
    execute: async (input: unknown): Promise<ToolOutcome> => {
      const args = isRecord(input) ? input : {};
      const id = idOf(args) ?? '';
      const info = manager.info(id);
      if (info === undefined) return unknownProcess(id);
      const signal = (
        typeof args['signal'] === 'string' ? args['signal'] : 'SIGTERM'
      ) as NodeJS.Signals;
      const stopped = await manager.kill(id, signal);
      const after = manager.info(id) ?? info;
      return {
        ok: true,
        output: stopped ? `Stopped ${describe(after)}` : `Not running: ${describe(after)}`,
      };
    },
  };
}

/** The four tools over `manager` (the host's one, which outlives the tool calls). */
export function processTools(manager: ProcessManager): ToolDefinition[] {
  return [startTool(manager), statusTool(manager), outputTool(manager), killTool(manager)];
}
