// The chats' agents (docs/agents.md): one agent process per chat buffer, started on its first send
// and kept for the next ones, ended when the buffer goes away, its agent changes or the host exits
// (SIGKILL to every group on exit: no agent outlives the host). A chat's turn is a provider reply:
// `adapter` gives the streamer a `ProviderAdapter` whose events are the turn's updates
// (src/core/acp/updates.ts); a crash ends the turn with the agent's last words and the next send
// starts a new process. Its permission requests: the approval chain's answer, else the user's
// (`acp.permission`, answered by `acp:answer`): a placeholder in the reply while it waits, each
// request its own, rewritten in place to the answer.
import type {
  InitializeResponse,
  PromptCapabilities,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
} from '@agentclientprotocol/sdk';
import { AgentTurn } from '../../core/acp/updates.js';
import { dollarsOf } from '../../core/acp/usage.js';
import {
  type SessionMark,
  continues,
  markOf,
  promptBlocks,
  transcriptPrompt,
} from '../../core/acp/prompt.js';
import { SessionStore } from './sessions.js';
import {
  type PermissionAnswer,
  permissionDiff,
  permissionOutcome,
  permissionPlaceholder,
  permissionText,
} from '../../core/acp/permissions.js';
import type { PermissionContext, PermissionJudge } from './permissions.js';
import {
  type ProviderAdapter,
  ProviderError,
  type ProviderEvent,
  type ProviderRequest,
} from '../../core/provider/types.js';
import type { HostBase } from '../base.js';
import { AgentError, type AgentClient, AgentProcess, type AgentSpec } from './process.js';
import { EventQueue } from './queue.js';
import { type ReferenceLookup, referenceLookup } from '../references.js';
import { AgentProbes } from './probe.js';
import type { ServeAgent } from './serve.js';

/** A chat's agent: its process, its session, the turn that listens to it. */
interface ChatAgent {
  key: string;
  process: AgentProcess;
  /** The process started and `initialize`d. */
  ready: Promise<unknown>;
  /** The running turn's listener of the agent's updates. */
  listener: ((notification: SessionNotification) => void) | undefined;
  /** The session the chat is in, and what it was last prompted with. */
  mark: SessionMark | undefined;
  /** The chat as its last turn had it, for the permission requests. */
  context: PermissionContext;
  /** The running turn's cancel: its permission requests are answered `cancelled`. */
  turnSignal: AbortSignal | undefined;
  /**
   * A block of the running turn's reply, written after what came so far; with `replacing`, the
   * block that read so, rewritten.
   */
  note: ((lines: string[], replacing?: string[]) => void) | undefined;
  /** Its permission requests waiting for the user: their answer, by the agent's call id. */
  waiting: Map<string, (answer: PermissionAnswer) => void>;
  /** Each session's running cost (USD) as the agent last reported it (`usage_update`). */
  costs: Map<string, number>;
}

/** A session's running cost, kept from every `usage_update` (those of a loaded session too). */
function keepCost(costs: Map<string, number>, notification: SessionNotification): void {
  const { update, sessionId } = notification;
  if (update.sessionUpdate !== 'usage_update') return;
  const dollars = dollarsOf(update.cost);
  if (dollars !== undefined) costs.set(sessionId, dollars);
}

function specKey(spec: AgentSpec, cwd: string): string {
  return JSON.stringify([spec.command, spec.args, spec.env, cwd]);
}

export class AcpAgents {
  private readonly chats = new Map<number, ChatAgent>();
  private readonly sessions = new SessionStore();
  private exitHook: (() => void) | undefined;
  private probing: AgentProbes | undefined;

  constructor(
    private readonly base: Pick<HostBase, 'logger' | 'lua' | 'secrets'>,
    private readonly judge: PermissionJudge = (_chat, request) =>
      // Until a chat's permissions are wired: refused, never approved.
      Promise.resolve({ outcome: permissionOutcome(request.options, 'reject') }),
    /** The agent's file and terminal requests (none served without it). */
    private readonly serve?: ServeAgent,
  ) {}

  /** The references of the agents' `env` (`${VAR}`, `${secret:…}`), resolved at their start. */
  private get lookup(): ReferenceLookup {
    return referenceLookup(this.base, 'ACP agent');
  }

  /**
   * The adapter of a chat's turn with `spec`, in `cwd` (the chat file's directory); `editor`: the
   * chat's settings, which judge the agent's permission requests.
   */
  adapter(
    bufnr: number,
    spec: AgentSpec,
    cwd: string,
    editor: PermissionContext['editor'],
  ): ProviderAdapter {
    const context: PermissionContext = { bufnr, agent: spec.name, editor };
    return {
      name: spec.name,
      buildBody: (request) => ({ agent: spec.name, prompt: promptBlocks(request, {}, cwd) }),
      stream: (request, signal) => this.turn(context, spec, cwd, request, signal),
    };
  }

  /** The user answered permission request `id` of the buffer's agent (`acp:answer`). */
  answer(bufnr: number, id: string, answer: PermissionAnswer): void {
    this.chats.get(bufnr)?.waiting.get(id)?.(answer);
  }

  /** The buffer went away: its agent ends (what it asked is cancelled). */
  forget(bufnr: number): void {
    const chat = this.chats.get(bufnr);
    if (chat === undefined) return;
    settleAll(chat);
    this.chats.delete(bufnr);
    void chat.process.stop();
  }

  /** The process ids of the running agents, by buffer (`:checkhealth`, tests through host:info). */
  running(): { bufnr: number; agent: string; alive: boolean }[] {
    return [...this.chats].map(([bufnr, chat]) => ({
      bufnr,
      agent: chat.process.spec.name,
      alive: chat.process.alive,
    }));
  }

  /** `:checkhealth`'s look at the configured agents (a running chat's agent answers itself). */
  get probes(): AgentProbes {
    this.probing ??= new AgentProbes(this.base, (spec) => this.initialized(spec), this.lookup);
    return this.probing;
  }

  /**
   * What a chat's running agent with `spec`'s command, arguments and environment answered to
   * `initialize` (`:checkhealth`, without starting another), if one runs.
   */
  initialized(spec: AgentSpec): InitializeResponse | undefined {
    const key = JSON.stringify([spec.command, spec.args, spec.env]);
    for (const chat of this.chats.values()) {
      const { process } = chat;
      const own = JSON.stringify([process.spec.command, process.spec.args, process.spec.env]);
      if (own === key && process.alive && process.initialize !== undefined) {
        return process.initialize;
      }
    }
    return undefined;
  }

  /** The chat's agent, started (and its session made) when it has none or its agent changed. */
  private chat(context: PermissionContext, spec: AgentSpec, cwd: string): ChatAgent {
    const { bufnr } = context;
    const key = specKey(spec, cwd);
    const known = this.chats.get(bufnr);
    if (known !== undefined && known.key === key && known.process.alive) {
      known.context = context;
      return known;
    }
    if (known !== undefined) {
      settleAll(known);
      void known.process.stop();
    }
    const served = this.serve?.(() => ({
      ...chat.context,
      cwd,
      turn: chat.turnSignal,
      note: chat.note,
    }));
    const client: AgentClient = {
      update: (notification) => {
        keepCost(chat.costs, notification);
        chat.listener?.(notification);
      },
      permission: (request, signal) => this.permission(chat, request, signal),
      services: served?.services,
    };
    const process = new AgentProcess(spec, cwd, client, this.base.logger, this.lookup);
    const chat: ChatAgent = {
      key,
      process,
      listener: undefined,
      mark: undefined,
      context,
      turnSignal: undefined,
      note: undefined,
      costs: new Map(),
      waiting: new Map(),
      ready: process.start(),
    };
    chat.ready.catch(() => undefined);
    this.chats.set(bufnr, chat);
    this.hookExit();
    void process.exited.then(() => {
      served?.close();
      // A crash: the next send starts a new process.
      if (this.chats.get(bufnr) === chat) this.chats.delete(bufnr);
    });
    return chat;
  }

  /** One turn: the prompt out, the updates in as provider events, until its stop reason. */
  private async *turn(
    context: PermissionContext,
    spec: AgentSpec,
    cwd: string,
    request: ProviderRequest,
    signal: AbortSignal,
  ): AsyncGenerator<ProviderEvent> {
    const chat = this.chat(context, spec, cwd);
    await failure(spec, chat.ready);
    const { sessionId, fresh } = await failure(spec, this.session(chat, request));
    chat.mark = markOf(sessionId, request);
    const { filename, editor_dirs: dirs } = context.editor.facts;
    if (filename !== null && dirs?.state !== undefined && dirs.state !== '') {
      this.sessions.set(dirs.state, filename, spec.name, chat.mark);
    }
    const caps: PromptCapabilities =
      chat.process.initialize?.agentCapabilities?.promptCapabilities ?? {};
    // A new session on a chat with earlier turns: the transcript goes along, in the one message.
    const prompt = fresh ? transcriptPrompt(request, caps, cwd) : promptBlocks(request, caps, cwd);
    const queue = new EventQueue<ProviderEvent>();
    const turn = new AgentTurn(chat.costs.get(sessionId));
    chat.listener = (notification) => {
      if (notification.sessionId === sessionId) queue.push(turn.push(notification.update));
    };
    const cancel = (): void => {
      // Its placeholders say so before the reply ends.
      settleAll(chat);
      void chat.process.cancel(sessionId);
      queue.close();
    };
    signal.addEventListener('abort', cancel, { once: true });
    chat.turnSignal = signal;
    chat.note = (lines, replacing) => {
      queue.push(
        replacing === undefined
          ? turn.note(lines)
          : [{ type: 'rewrite', from: replacing, to: lines }],
      );
    };
    failure(spec, chat.process.prompt(sessionId, prompt)).then(
      ({ stopReason, usage }) => {
        // The turn is over: nothing it asked waits any more.
        settleAll(chat);
        queue.push([...turn.finish(usage), { type: 'done', stopReason }]);
        queue.close();
      },
      (error: unknown) => {
        settleAll(chat);
        queue.fail(error);
      },
    );
    try {
      yield* queue;
    } finally {
      signal.removeEventListener('abort', cancel);
      chat.listener = undefined;
      chat.turnSignal = undefined;
      chat.note = undefined;
    }
  }

  /**
   * The session of the chat's turn: the one it is in while the chat goes on from its last turn;
   * else the one kept for the chat file, loaded when the agent can (`session/load`); else a new
   * one, which gets the chat so far with its prompt (`fresh`).
   */
  private async session(
    chat: ChatAgent,
    request: ProviderRequest,
  ): Promise<{ sessionId: string; fresh: boolean }> {
    if (chat.mark !== undefined && continues(request, chat.mark)) {
      return { sessionId: chat.mark.sessionId, fresh: false };
    }
    const { facts } = chat.context.editor;
    const state = facts.editor_dirs?.state;
    const kept =
      chat.mark === undefined && facts.filename !== null && state !== undefined && state !== ''
        ? this.sessions.get(state, facts.filename, chat.process.spec.name)
        : undefined;
    const previous = kept !== undefined && continues(request, kept) ? kept.sessionId : undefined;
    const session = await chat.process.session(previous);
    if (previous !== undefined && !session.loaded) {
      this.base.logger.info(`acp: ${chat.process.spec.name} could not load session ${previous}`);
    }
    return { sessionId: session.sessionId, fresh: !session.loaded && request.messages.length > 1 };
  }

  /**
   * A permission request of the chat's agent: the approval chain's answer, else the user's
   * (`acp.permission` asks, `acp:answer` answers); `cancelled` once the turn is cancelled.
   */
  private async permission(
    chat: ChatAgent,
    request: RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<RequestPermissionResponse> {
    const turn = chat.turnSignal;
    const combined = turn === undefined ? signal : AbortSignal.any([signal, turn]);
    const judged = await this.judge(chat.context, request, combined);
    if (judged !== undefined) return judged;
    return { outcome: permissionOutcome(request.options, await this.ask(chat, request, combined)) };
  }

  /**
   * The user's answer to a request: a placeholder in the reply while it waits (each request its
   * own), rewritten in place to the answer; Lua is told (`acp.permission`, with the change of an
   * `edit` for the diff view) and told again once it is settled (`acp.settled`).
   */
  private ask(
    chat: ChatAgent,
    request: RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<PermissionAnswer> {
    const { bufnr, agent } = chat.context;
    const id = request.toolCall.toolCallId;
    const what = permissionText(request.toolCall);
    const asked = permissionPlaceholder(id, what, 'pending');
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve('cancelled');
        return;
      }
      const done = (answer: PermissionAnswer): void => {
        if (chat.waiting.get(id) !== done) return;
        chat.waiting.delete(id);
        signal.removeEventListener('abort', cancel);
        this.base.lua.notify('acp.settled', { bufnr, id });
        chat.note?.(permissionPlaceholder(id, what, answer), asked);
        resolve(answer);
      };
      const cancel = (): void => {
        done('cancelled');
      };
      // The same call asked again: the earlier question is over.
      chat.waiting.get(id)?.('cancelled');
      signal.addEventListener('abort', cancel, { once: true });
      chat.waiting.set(id, done);
      chat.note?.(asked);
      const diff = request.toolCall.kind === 'edit' ? permissionDiff(request.toolCall) : undefined;
      this.base.lua.notify('acp.permission', {
        bufnr,
        id,
        message: `${agent} asks: ${what}`,
        ...(diff === undefined ? {} : { diff }),
      });
    });
  }

  /** On the host's exit, SIGKILL to every agent still running (synchronous). */
  private hookExit(): void {
    if (this.exitHook !== undefined) return;
    this.exitHook = () => {
      for (const chat of this.chats.values()) chat.process.killSync();
    };
    process.once('exit', this.exitHook);
  }
}

/** Every request of the chat that waits for the user, answered `cancelled`. */
function settleAll(chat: ChatAgent): void {
  for (const done of [...chat.waiting.values()]) done('cancelled');
}

/** A failure of the agent as the provider error the streamer reports. */
async function failure<T>(spec: AgentSpec, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof AgentError && message.startsWith('could not start')) {
      throw new ProviderError(spec.name, 'connection', message);
    }
    if (error instanceof AgentError && message.includes('exited')) {
      throw new ProviderError(
        spec.name,
        'connection',
        `${message} (a new one starts on the next send)`,
      );
    }
    throw new ProviderError(spec.name, 'unknown', message);
  }
}
