// An agent's terminals (`terminal/*`), run by Flemma as the chat's `bash` tool runs a command
// (docs/agents.md, "Files and terminals"): the call prepared as the executor prepares a `bash`
// call (src/host/tools/prepare.ts), the argv through the sandbox's `wrap_command` (a sandbox that
// cannot wrap is an error, never an unsandboxed run), the environment through its `scrub_env`
// (`tools.bash.env` and the agent's variables on top of Neovim's, then scrubbed), its own process
// group (src/core/tools/process.ts), and the output kept within a `bash` result's limit.
//
// Decisions:
// - The working directory is the agent's `cwd` (absolute), else the agent's own directory.
// - No time limit of Flemma's: the agent kills what it started (`terminal/kill`). Every terminal
//   of a chat is killed when the turn that started it is cancelled, when the agent ends, and when
//   the host exits; `terminal/release` kills and forgets one.
// - Only during a turn of the chat.
import type {
  CreateTerminalRequest,
  CreateTerminalResponse,
  TerminalExitStatus,
  TerminalOutputResponse,
} from '@agentclientprotocol/sdk';
import {
  FAILED,
  INVALID_PARAMS,
  ServeError,
  TailBuffer,
  absolutePath,
  outputLimit,
  terminalArgv,
} from '../../core/acp/fs.js';
import { bashTool, envFrom, shellFrom } from '../../core/tools/definitions/bash.js';
import { type RunResult, runProcess } from '../../core/tools/process.js';
import { type AgentScope, type ServePorts, prepareFor } from './fs.js';

interface Terminal {
  output: TailBuffer;
  stop: AbortController;
  exit: TerminalExitStatus | undefined;
  done: Promise<TerminalExitStatus>;
}

function exitOf(result: RunResult, output: TailBuffer): TerminalExitStatus {
  if (result.startError !== undefined) {
    output.push(Buffer.from(`Failed to start: ${result.startError}\n`));
    return { exitCode: 127, signal: null };
  }
  return { exitCode: result.exitCode, signal: result.signal };
}

/** The terminals of one chat's agent. */
export class AgentTerminals {
  private readonly terminals = new Map<string, Terminal>();
  private seq = 0;
  private readonly onExit = (): void => {
    this.closeAll();
  };

  constructor(private readonly ports: ServePorts) {}

  async create(scope: AgentScope, params: CreateTerminalRequest): Promise<CreateTerminalResponse> {
    const turn = scope.turn;
    if (turn === undefined) {
      throw new ServeError(FAILED, 'Terminal denied – no turn of this chat is running');
    }
    if (typeof params.command !== 'string' || params.command.trim() === '') {
      throw new ServeError(INVALID_PARAMS, 'No command provided');
    }
    const cwd =
      params.cwd === null || params.cwd === undefined ? scope.cwd : absolutePath(params.cwd, 'cwd');
    const input = { command: [params.command, ...(params.args ?? [])].join(' ') };
    const prepared = await prepareFor(this.ports, scope, bashTool, input, turn);
    const ctx = prepared.execCtx;
    const config = ctx.get_config();
    const shell = shellFrom(config);
    const wrapped = await ctx.sandbox
      .wrap_command(terminalArgv(shell, params.command, params.args ?? []))
      .catch((error: unknown) => ({
        ok: false as const,
        error: error instanceof Error ? error.message : String(error),
      }));
    if (!wrapped.ok) throw new ServeError(FAILED, `Sandbox error: ${wrapped.error}`);
    const agentEnv = Object.fromEntries((params.env ?? []).map((item) => [item.name, item.value]));
    const stop = new AbortController();
    const output = new TailBuffer(outputLimit(params.outputByteLimit));
    const terminal: Terminal = { output, stop, exit: undefined, done: Promise.resolve({}) };
    const kill = (): void => {
      stop.abort();
    };
    turn.addEventListener('abort', kill, { once: true });
    // Cancelled already (before or while the call was prepared).
    if (turn.aborted) kill();
    terminal.done = runProcess(wrapped.argv, {
      cwd,
      env: ctx.sandbox.scrub_env({ ...process.env, ...envFrom(config), ...agentEnv }),
      extendEnv: false,
      signal: stop.signal,
      bytes: true,
      sink: (chunk) => {
        output.push(chunk);
      },
    }).then((result) => {
      turn.removeEventListener('abort', kill);
      terminal.exit = exitOf(result, output);
      return terminal.exit;
    });
    const terminalId = `term_${String(++this.seq)}`;
    if (this.terminals.size === 0) process.once('exit', this.onExit);
    this.terminals.set(terminalId, terminal);
    return { terminalId };
  }

  private find(id: string): Terminal {
    const terminal = this.terminals.get(id);
    if (terminal === undefined) throw new ServeError(INVALID_PARAMS, `No terminal ${id}`);
    return terminal;
  }

  output(id: string): TerminalOutputResponse {
    const terminal = this.find(id);
    return { ...terminal.output.read(), exitStatus: terminal.exit ?? null };
  }

  async waitForExit(id: string): Promise<TerminalExitStatus> {
    return this.find(id).done;
  }

  kill(id: string): void {
    this.find(id).stop.abort();
  }

  release(id: string): void {
    this.find(id).stop.abort();
    this.terminals.delete(id);
    if (this.terminals.size === 0) process.removeListener('exit', this.onExit);
  }

  /** Every terminal killed (the agent ended, the host exits). */
  closeAll(): void {
    for (const terminal of this.terminals.values()) terminal.stop.abort();
    this.terminals.clear();
    process.removeListener('exit', this.onExit);
  }
}
