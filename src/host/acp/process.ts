// One agent process of a chat (docs/agents.md): started with execa on the chat's first send, in its
// own process group, spoken to through the official ACP SDK (loaded with import() on first use)
// over newline-delimited JSON on its stdin and stdout; `initialize`d with the client capabilities
// Flemma serves, authenticated when the agent asks, one session for the chat. Its stderr goes to
// the log (redacted there), and its last lines name why it ended when it crashes.
import type { Readable, Writable } from 'node:stream';
import type {
  ContentBlock,
  CreateTerminalRequest,
  CreateTerminalResponse,
  InitializeResponse,
  ReadTextFileRequest,
  ReadTextFileResponse,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
  StopReason,
  TerminalExitStatus,
  TerminalOutputResponse,
  WriteTextFileRequest,
} from '@agentclientprotocol/sdk';
import { FAILED, ServeError } from '../../core/acp/fs.js';
import { loadExeca, signalGroup } from '../../core/tools/process.js';
import { HOST_VERSION } from '../base.js';
import type { FileLogger } from '../log.js';
import { expandReferences, redact } from '../../core/tools/mcp/config.js';
import type { ReferenceLookup } from '../references.js';

type AcpModule = typeof import('@agentclientprotocol/sdk');

/** The ACP SDK, loaded on first use (a host that never talks to an agent never loads it). */
export function loadAcp(): Promise<AcpModule> {
  return import('@agentclientprotocol/sdk');
}

/** A configured agent (`acp.agents.<name>`). */
export interface AgentSpec {
  name: string;
  command: string;
  args: readonly string[];
  env: Readonly<Record<string, string>>;
}

/**
 * The agent's file and terminal requests, served by the chat (src/host/acp/fs.ts, terminal.ts);
 * a failure is a `ServeError`, which the agent gets as a JSON-RPC error.
 */
export interface AgentServices {
  readTextFile(params: ReadTextFileRequest): Promise<ReadTextFileResponse>;
  writeTextFile(params: WriteTextFileRequest): Promise<void>;
  createTerminal(params: CreateTerminalRequest): Promise<CreateTerminalResponse>;
  terminalOutput(id: string): TerminalOutputResponse;
  waitForTerminalExit(id: string): Promise<TerminalExitStatus>;
  killTerminal(id: string): void;
  releaseTerminal(id: string): void;
}

/**
 * What the chat answers for its agent: the updates of a turn, the permission requests, and its
 * file and terminal requests (`services`; without them each is refused).
 */
export interface AgentClient {
  update(notification: SessionNotification): void;
  permission(
    request: RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<RequestPermissionResponse>;
  services?: AgentServices | undefined;
}

/** The capabilities Flemma serves to agents: files (read and write) and terminals. */
export const CLIENT_CAPABILITIES = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
} as const;

/** The JSON-RPC error agents answer when they need `authenticate` first. */
const AUTH_REQUIRED = -32000;

/** Why an agent could not be used, as one line for the user. */
export class AgentError extends Error {
  override name = 'AgentError';
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error !== null && typeof error === 'object' && 'message' in error) {
    return String(error.message);
  }
  return String(error);
}

function errorCode(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object' || !('code' in error)) return undefined;
  return typeof error.code === 'number' ? error.code : undefined;
}

/** A request served by `services`; its failure as the JSON-RPC error the agent gets. */
async function servedBy<T>(
  acp: AcpModule,
  services: AgentServices | undefined,
  run: (services: AgentServices) => T | Promise<T>,
): Promise<T> {
  if (services === undefined) throw new acp.RequestError(FAILED, 'Not served by this client');
  try {
    return await run(services);
  } catch (error) {
    if (error instanceof ServeError) throw new acp.RequestError(error.code, error.message);
    throw new acp.RequestError(FAILED, errorText(error));
  }
}

/** What `follow` reads of the child execa started. */
interface Spawned {
  stderr: Readable | null;
  stdin: Writable | null;
  then(
    done: (result: {
      exitCode?: number | undefined;
      signal?: string | undefined;
      shortMessage?: string | undefined;
    }) => void,
  ): unknown;
}

/** How long an agent asked to end may take before it is killed. */
const KILL_AFTER_MS = 2000;
/** How long a closed connection waits for the process's exit, which says why it closed. */
const EXIT_GRACE_MS = 1000;
/** The lines of stderr kept for the message of a crash. */
const STDERR_LINES = 5;

export interface AgentSession {
  sessionId: string;
  /** Whether the session was loaded (`session/load`) rather than started anew. */
  loaded: boolean;
}

/** A running agent and its connection. */
export class AgentProcess {
  private pid: number | undefined;
  private connection: import('@agentclientprotocol/sdk').ClientConnection | undefined;
  private readonly stderr: string[] = [];
  /** The credentials put into its environment: never in a message or the log. */
  private readonly secrets = new Set<string>();
  private stopping = false;
  /** Settles when the process is gone, with why. */
  readonly exited: Promise<string>;
  private markExited!: (why: string) => void;
  initialize: InitializeResponse | undefined;

  constructor(
    readonly spec: AgentSpec,
    private readonly cwd: string,
    private readonly client: AgentClient,
    private readonly logger: Pick<FileLogger, 'info' | 'warn' | 'debug'>,
    /** Answers the `${VAR}` and `${secret:…}` references of the agent's `env`. */
    private readonly lookup: ReferenceLookup,
  ) {
    this.exited = new Promise((resolve) => {
      this.markExited = resolve;
    });
  }

  get alive(): boolean {
    return this.pid !== undefined && !this.stopping;
  }

  /**
   * The agent's `env` with its references put in: `${VAR}` from Neovim's environment,
   * `${secret:<kind>:<service>}` through the credential chain (docs/agents.md, "Signing in").
   */
  private async environment(): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.spec.env)) {
      try {
        env[name] = await expandReferences(value, this.lookup, this.secrets);
      } catch (error) {
        throw new AgentError(`acp.agents.${this.spec.name}.env.${name}: ${errorText(error)}`);
      }
    }
    return env;
  }

  /** Start the process and `initialize` it. */
  async start(): Promise<InitializeResponse> {
    const [{ execa }, acp, env] = await Promise.all([loadExeca(), loadAcp(), this.environment()]);
    const { spec } = this;
    const child = execa(spec.command, [...spec.args], {
      cwd: this.cwd,
      env,
      extendEnv: true,
      detached: true,
      reject: false,
      buffer: false,
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      cleanup: false,
    });
    this.pid = child.pid;
    this.follow(child);
    if (child.pid === undefined) {
      throw new AgentError(`could not start ${spec.command}: ${await this.exited}`);
    }
    // Loaded here: the host's start does without `node:stream` (src/host/channel.ts).
    const streams = await import('node:stream');
    const stream = acp.ndJsonStream(
      streams.Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
      streams.Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
    );
    this.connection = this.serve(
      acp,
      acp
        .client({ name: 'flemma' })
        .onNotification(acp.methods.client.session.update, ({ params }) => {
          this.client.update(params);
        })
        .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) =>
          this.client.permission(params, signal),
        ),
    ).connect(stream);
    const initialized: InitializeResponse = await this.request((agent) =>
      agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: CLIENT_CAPABILITIES,
        clientInfo: { name: 'flemma', version: HOST_VERSION },
      }),
    );
    this.initialize = initialized;
    const info = initialized.agentInfo;
    this.logger.info(
      `acp: ${spec.name} (pid ${String(this.pid)}) is ${info?.name ?? 'an agent'} ${info?.version ?? ''}`.trimEnd(),
    );
    return initialized;
  }

  /** The handlers of the agent's file and terminal requests (`AgentServices`). */
  private serve(
    acp: AcpModule,
    app: ReturnType<AcpModule['client']>,
  ): ReturnType<AcpModule['client']> {
    const { fs, terminal } = acp.methods.client;
    const served = <T>(run: (services: AgentServices) => T | Promise<T>): Promise<T> =>
      servedBy(acp, this.client.services, run);
    return app
      .onRequest(fs.readTextFile, ({ params }) => served((s) => s.readTextFile(params)))
      .onRequest(fs.writeTextFile, ({ params }) =>
        served(async (s) => {
          await s.writeTextFile(params);
          return {};
        }),
      )
      .onRequest(terminal.create, ({ params }) => served((s) => s.createTerminal(params)))
      .onRequest(terminal.output, ({ params }) =>
        served((s) => s.terminalOutput(params.terminalId)),
      )
      .onRequest(terminal.waitForExit, ({ params }) =>
        served((s) => s.waitForTerminalExit(params.terminalId)),
      )
      .onRequest(terminal.kill, ({ params }) =>
        served((s) => {
          s.killTerminal(params.terminalId);
          return {};
        }),
      )
      .onRequest(terminal.release, ({ params }) =>
        served((s) => {
          s.releaseTerminal(params.terminalId);
          return {};
        }),
      );
  }

  /** The process's end, its stderr to the log. */
  private follow(child: Spawned): void {
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      for (const raw of chunk.split('\n')) {
        if (raw.trim() === '') continue;
        const line = redact(raw, this.secrets);
        this.stderr.push(line);
        if (this.stderr.length > STDERR_LINES) this.stderr.shift();
        this.logger.debug(`acp ${this.spec.name} stderr: ${line}`);
      }
    });
    // Nobody reads the stream's errors otherwise (EPIPE after the agent died).
    child.stdin?.on('error', () => undefined);
    void child.then((result) => {
      const why =
        result.exitCode !== undefined
          ? `exit code ${String(result.exitCode)}`
          : (result.signal ?? result.shortMessage?.split('\n')[0] ?? 'it could not start');
      this.pid = undefined;
      this.connection?.close(new AgentError(`the agent exited (${why})`));
      this.markExited(why);
    });
  }

  /** Throws the exit's error once the process exited, if it does within a moment. */
  private async exitedSoon(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const moment = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, EXIT_GRACE_MS, undefined);
    });
    const why = await Promise.race([this.exited, moment]);
    clearTimeout(timer);
    if (why !== undefined) throw this.exitError(why);
  }

  /** Why the agent exited, with the last lines it wrote to stderr. */
  private exitError(why: string): AgentError {
    const words = this.stderr.join(' | ');
    return new AgentError(`the agent exited (${why})${words === '' ? '' : `: ${words}`}`);
  }

  /** A request to the agent; its failure (or the agent's exit meanwhile) as an `AgentError`. */
  private async request<T>(
    send: (agent: import('@agentclientprotocol/sdk').ClientContext) => Promise<T>,
  ): Promise<T> {
    const connection = this.connection;
    if (connection === undefined) throw new AgentError('the agent is not running');
    const gone = this.exited.then((why) => {
      throw this.exitError(why);
    });
    try {
      return await Promise.race([send(connection.agent), gone]);
    } catch (error) {
      if (error instanceof AgentError) throw error;
      // The connection closed (its stdout ended): the exit follows, which says why.
      if (connection.signal.aborted) await this.exitedSoon();
      throw Object.assign(new AgentError(errorText(error)), {
        code: errorCode(error),
      });
    }
  }

  /**
   * The chat's session: `session/load` of `previous` when the agent can load sessions, else a
   * new one; `authenticate` first when the agent asks for it.
   */
  async session(previous: string | undefined): Promise<AgentSession> {
    const acp = await loadAcp();
    const cwd = this.cwd;
    if (previous !== undefined && this.initialize?.agentCapabilities?.loadSession === true) {
      try {
        await this.withAuth(() =>
          this.request((agent) =>
            agent.request(acp.methods.agent.session.load, {
              sessionId: previous,
              cwd,
              mcpServers: [],
            }),
          ),
        );
        return { sessionId: previous, loaded: true };
      } catch (error) {
        this.logger.info(
          `acp: ${this.spec.name} could not load session ${previous}: ${errorText(error)}`,
        );
      }
    }
    const created = await this.withAuth(() =>
      this.request((agent) =>
        agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }),
      ),
    );
    return { sessionId: created.sessionId, loaded: false };
  }

  /** `run`, and once more after `authenticate` when the agent said it needs it. */
  private async withAuth<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (errorCode(error) !== AUTH_REQUIRED) throw error;
      const acp = await loadAcp();
      const methods = this.initialize?.authMethods ?? [];
      // Only a method the agent carries out itself (its own credential chain, a key in its
      // environment); one that needs a terminal is the user's to run.
      const method = methods.find(
        (candidate) => (candidate as Record<string, unknown>)['type'] !== 'terminal',
      );
      if (method === undefined) {
        const names = methods.map((candidate) => candidate.name).join(', ');
        throw new AgentError(
          `the agent needs you to sign in${names === '' ? '' : ` (${names})`}: run it once in a terminal, then send again`,
        );
      }
      await this.request((agent) =>
        agent.request(acp.methods.agent.authenticate, { methodId: method.id }),
      );
      return run();
    }
  }

  /**
   * One turn: `session/prompt`, its stop reason and the usage the answer reports (`usage`, not in
   * the stable schema yet: passed on as it came, src/core/acp/usage.ts reads it).
   */
  async prompt(
    sessionId: string,
    prompt: ContentBlock[],
  ): Promise<{ stopReason: StopReason; usage: unknown }> {
    const acp = await loadAcp();
    const answer: { stopReason: StopReason; usage?: unknown } = await this.request((agent) =>
      agent.request(acp.methods.agent.session.prompt, { sessionId, prompt }),
    );
    return { stopReason: answer.stopReason, usage: answer.usage };
  }

  /** `session/cancel` (a notification: the prompt then ends with `cancelled`). */
  async cancel(sessionId: string): Promise<void> {
    const acp = await loadAcp();
    await this.connection?.agent
      .notify(acp.methods.agent.session.cancel, { sessionId })
      .catch(() => undefined);
  }

  /** End the process: SIGTERM to its group, SIGKILL after a while. */
  async stop(): Promise<void> {
    const pid = this.pid;
    this.stopping = true;
    this.connection?.close();
    if (pid === undefined) return;
    signalGroup(pid, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), KILL_AFTER_MS);
    await this.exited;
    clearTimeout(timer);
  }

  /** SIGKILL to the group now (the host is exiting). */
  killSync(): void {
    if (this.pid !== undefined) signalGroup(this.pid, 'SIGKILL');
  }
}
