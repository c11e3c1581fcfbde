// The lifecycle of one MCP server's connection, for the manager (manager.ts): an attempt to
// connect within the server's timeout, its tools registered, retries after a backoff, a server
// that went away found out (a failed ping) and reconnected, a stop.

import { backoffDelay } from '../../util/backoff.js';
import { errorText, type McpCallResult, type McpToolInfo } from './bridge.js';
import type { ReconnectSettings } from './config.js';
import { abortable, isProtocolError } from './calls.js';
import { emptyLists, registerServerTools, unregisterServerTools } from './lists.js';
import type { ServerRecord } from './server.js';
import type { ConnectionEvents, McpConnection, McpManagerOptions } from './types.js';

/** What the lifecycle needs of the manager. */
export interface LifecycleDeps {
  options: McpManagerOptions;
  /** The reconnect settings now in force. */
  reconnect(): ReconnectSettings;
  now(): number;
  /** State or tools changed. */
  changed(): void;
}

export class ServerLifecycle {
  constructor(private readonly deps: LifecycleDeps) {}

  start(record: ServerRecord): void {
    record.generation += 1;
    record.state = 'starting';
    record.loading = true;
    void this.attempt(record, record.generation);
  }

  /** Ends a server's connection and pending attempt and takes its tools away. */
  async stop(record: ServerRecord): Promise<void> {
    record.generation += 1;
    clearTimeout(record.timer);
    record.timer = undefined;
    record.retryAt = undefined;
    record.attempt?.abort(new Error('stopped'));
    record.attempt = undefined;
    this.unregisterTools(record);
    record.lists = emptyLists();
    record.state = 'stopped';
    record.loading = false;
    const conn = record.conn;
    record.conn = undefined;
    record.connectedAt = undefined;
    if (conn !== undefined) {
      try {
        await conn.close();
      } catch (error) {
        this.deps.options.log?.(
          `MCP server '${record.config.name}': closing failed: ${errorText(error)}`,
        );
      }
    }
  }

  /** One attempt to connect a server and list its tools, within its timeout. */
  private async attempt(record: ServerRecord, generation: number): Promise<void> {
    const { timeout } = record.config;
    const controller = new AbortController();
    record.attempt = controller;
    const timer = setTimeout(() => {
      controller.abort(new Error(`no answer within ${String(timeout)} s`));
    }, timeout * 1000);
    const current = (): boolean => record.generation === generation;
    const held: { conn?: McpConnection } = {};
    try {
      const connecting = this.deps.options.connect(
        record.config,
        this.connectionEvents(record, generation, held),
        controller.signal,
      );
      // A connection that arrives after the attempt was given up is closed at once.
      connecting.then(
        (late) => {
          if (controller.signal.aborted && held.conn !== late) {
            void late.close().catch(() => undefined);
          }
        },
        () => undefined,
      );
      const conn = await abortable(connecting, controller.signal);
      held.conn = conn;
      const listed = await abortable(conn.listTools(controller.signal), controller.signal);
      if (!current()) {
        await conn.close().catch(() => undefined);
        return;
      }
      this.connected(record, generation, conn, listed);
    } catch (error) {
      await held.conn?.close().catch(() => undefined);
      if (!current()) return;
      this.attemptFailed(
        record,
        generation,
        controller.signal.aborted ? controller.signal.reason : error,
      );
    } finally {
      clearTimeout(timer);
      if (record.attempt === controller) record.attempt = undefined;
      if (current()) record.loading = false;
      this.deps.changed();
    }
  }

  /** What the connection of an attempt says, heard while it is this server's current one. */
  private connectionEvents(
    record: ServerRecord,
    generation: number,
    held: { conn?: McpConnection },
  ): ConnectionEvents {
    const live = (): boolean => record.generation === generation && record.conn === held.conn;
    const refresh = (kind: 'resources' | 'prompts'): void => {
      const conn = held.conn;
      if (live() && conn !== undefined) void record.refreshLists(generation, conn, kind);
    };
    return {
      closed: (reason) => {
        if (live()) this.lost(record, reason ?? 'the connection closed');
      },
      error: (error) => {
        if (live()) void this.checkAlive(record, generation, error);
      },
      toolsChanged: () => {
        const conn = held.conn;
        if (live() && conn !== undefined) void this.relist(record, generation, conn);
      },
      resourcesChanged: () => {
        refresh('resources');
      },
      promptsChanged: () => {
        refresh('prompts');
      },
    };
  }

  /** An attempt connected: the server's tools are registered, its lists asked for. */
  private connected(
    record: ServerRecord,
    generation: number,
    conn: McpConnection,
    listed: readonly McpToolInfo[],
  ): void {
    const { name } = record.config;
    const wasLost = record.state === 'reconnecting';
    record.conn = conn;
    record.connectedAt = this.deps.now();
    record.state = 'connected';
    record.attempts = 0;
    record.lastError = undefined;
    record.retryAt = undefined;
    this.registerTools(record, listed);
    // Resources and prompts are listed after: a send waits for the tools only.
    void record.refreshLists(generation, conn, 'resources');
    void record.refreshLists(generation, conn, 'prompts');
    this.deps.options.log?.(
      `MCP server '${name}' connected: ${String(record.tools.length)} tool(s)${record.filtered > 0 ? `, ${String(record.filtered)} filtered out` : ''}`,
    );
    this.deps.options.connected?.(name, record.tools.length, wasLost);
    if (wasLost) {
      this.deps.options.notify(
        'info',
        `MCP server '${name}' is back (${String(record.tools.length)} tool(s))`,
      );
    }
  }

  /** An attempt failed: said on the first one, then retried after a backoff. */
  private attemptFailed(record: ServerRecord, generation: number, cause: unknown): void {
    const { name } = record.config;
    const reason = errorText(cause);
    record.lastError = reason;
    record.conn = undefined;
    this.deps.options.log?.(`MCP server '${name}': attempt failed: ${reason}`);
    const first = record.state === 'starting';
    record.attempts += 1;
    if (first) {
      const retry = this.deps.reconnect().maxAttempts > 0 ? '; retrying in the background' : '';
      this.deps.options.notify('warn', `MCP server '${name}' failed to start: ${reason}${retry}`);
    }
    this.scheduleRetry(record, generation);
  }

  /** After a failed attempt: the next one after a backoff, or give up at the limit. */
  private scheduleRetry(record: ServerRecord, generation: number): void {
    const { maxAttempts, initialDelayMs, maxDelayMs } = this.deps.reconnect();
    const { name } = record.config;
    if (record.attempts > maxAttempts) {
      record.state = 'failed';
      record.retryAt = undefined;
      if (maxAttempts > 0) {
        this.deps.options.notify(
          'warn',
          `MCP server '${name}' could not be reached after ${String(maxAttempts)} attempt(s): ${record.lastError ?? 'unknown error'}. :Flemma mcp:restart ${name} tries again.`,
        );
      }
      return;
    }
    record.state = 'reconnecting';
    const delay = backoffDelay({ baseMs: initialDelayMs, maxMs: maxDelayMs }, record.attempts);
    record.retryAt = this.deps.now() + delay;
    record.timer = setTimeout(() => {
      record.timer = undefined;
      if (record.generation !== generation) return;
      void this.attempt(record, generation);
    }, delay);
  }

  /** A connected server went away: its tools go, and reconnecting starts. */
  private lost(record: ServerRecord, reason: string): void {
    if (record.state !== 'connected') return;
    const { name } = record.config;
    const count = record.tools.length;
    const conn = record.conn;
    record.conn = undefined;
    record.connectedAt = undefined;
    record.lastError = reason;
    record.attempts = 1;
    this.unregisterTools(record);
    record.lists = emptyLists();
    void conn?.close().catch(() => undefined);
    const retry = this.deps.reconnect().maxAttempts > 0 ? '; reconnecting' : '';
    this.deps.options.notify(
      'warn',
      `MCP server '${name}' stopped (${reason}): its ${String(count)} tool(s) are unavailable${retry}`,
    );
    this.deps.options.log?.(`MCP server '${name}' lost: ${reason}`);
    this.deps.options.disconnected?.(name, reason);
    if (this.deps.reconnect().maxAttempts === 0) {
      record.state = 'failed';
    } else {
      record.state = 'reconnecting';
      this.scheduleRetry(record, record.generation);
    }
    this.deps.changed();
  }

  /** The server's tools changed: list them again and replace the registered ones. */
  private async relist(
    record: ServerRecord,
    generation: number,
    conn: McpConnection,
  ): Promise<void> {
    const { name, timeout } = record.config;
    try {
      const listed = await conn.listTools(AbortSignal.timeout(timeout * 1000));
      if (record.generation !== generation || record.conn !== conn) return;
      this.registerTools(record, listed);
      this.deps.options.log?.(
        `MCP server '${name}' changed its tools: ${String(record.tools.length)} tool(s)`,
      );
      this.deps.changed();
    } catch (error) {
      this.deps.options.log?.(
        `MCP server '${name}': listing the changed tools failed: ${errorText(error)}`,
      );
    }
  }

  /** A transport error or a failed call: is the server still there? If not, it is lost. */
  async checkAlive(record: ServerRecord, generation: number, cause: unknown): Promise<void> {
    if (record.checking) return;
    const conn = record.conn;
    if (conn === undefined || record.state !== 'connected') return;
    record.checking = true;
    try {
      await conn.ping(this.deps.options.pingTimeoutMs ?? 5000);
    } catch {
      if (record.generation === generation && record.conn === conn) {
        this.lost(record, errorText(cause));
      }
    } finally {
      record.checking = false;
    }
  }

  async callTool(
    record: ServerRecord,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpCallResult> {
    const conn = record.conn;
    if (conn === undefined || record.state !== 'connected') {
      throw new Error(`MCP server '${record.config.name}' is not connected (${record.state})`);
    }
    const generation = record.generation;
    try {
      return await conn.callTool(tool, args, signal);
    } catch (error) {
      // A failed call may be the first sign that an HTTP server is gone.
      if (!signal.aborted && !isProtocolError(error))
        void this.checkAlive(record, generation, error);
      throw error;
    }
  }

  private registerTools(record: ServerRecord, listed: readonly McpToolInfo[]): void {
    const { tools, filtered } = registerServerTools(
      this.deps.options.sink,
      record.config,
      record.caller,
      record.tools,
      listed,
      (message) => {
        this.deps.options.notify('warn', message);
      },
    );
    record.tools = tools;
    record.filtered = filtered;
  }

  private unregisterTools(record: ServerRecord): void {
    unregisterServerTools(this.deps.options.sink, record.tools);
    record.tools = [];
  }
}
