// The MCP manager: one record per configured server (server.ts), which it connects, whose tools
// it registers (`mcp:<server>:<tool>`) and unregisters, whose resources and prompts it keeps
// listed (lists.ts) and reads, and which it reconnects when the server goes away. The connection
// itself comes from a `McpConnect` function (the SDK in the host, a fake in the unit tests), so
// everything here runs without a server.
//
// Readiness: a server counts as a loading tool source until its first attempt has finished
// (connected or failed), so a send made meanwhile waits for it; later reconnects do not hold
// sends up — the next request simply lacks the server's tools until it is back (docs/mcp.md).

import { backoffDelay } from '../../util/backoff.js';
import { errorText, type McpCallResult, type McpToolInfo } from './bridge.js';
import {
  DEFAULT_RECONNECT,
  type McpServerConfig,
  type McpSettings,
  type ReconnectSettings,
  describeTarget,
} from './config.js';
import { abortable, isProtocolError } from './calls.js';
import { emptyLists, registerServerTools, unregisterServerTools } from './lists.js';
import { ServerRecord } from './server.js';
import type {
  McpCatalog,
  McpConnect,
  McpConnection,
  McpPromptMessage,
  McpResourceContents,
  McpResourceListing,
  McpServerStatus,
  McpToolSink,
} from './types.js';

export type {
  ConnectionEvents,
  McpConnect,
  McpConnection,
  McpServerStatus,
  McpState,
  McpToolSink,
} from './types.js';

export interface McpManagerOptions {
  connect: McpConnect;
  sink: McpToolSink;
  /** A message for the user (`warn` for losses and failures, `info` for recoveries). */
  notify(level: 'info' | 'warn', message: string): void;
  /** Anything worth a log line (never a secret). */
  log?(message: string): void;
  /** A server connected and its tools are registered (`reconnected`: after a loss or failure). */
  connected?(server: string, tools: number, reconnected: boolean): void;
  /** A connected server went away (its tools are already unregistered). */
  disconnected?(server: string, reason: string): void;
  /** Called after every change of state or tools (readiness, previews, status). */
  onChange?(): void;
  /** How long a liveness check may wait for the server's answer (ms). */
  pingTimeoutMs?: number;
  now?: () => number;
}

export class McpManager {
  private readonly servers = new Map<string, ServerRecord>();
  private readonly disabled = new Set<string>();
  private reconnect: ReconnectSettings = { ...DEFAULT_RECONNECT };
  private readonly now: () => number;

  constructor(private readonly options: McpManagerOptions) {
    const now = options.now;
    this.now = now === undefined ? () => Date.now() : () => now();
  }

  /**
   * Applies the configuration: servers that are new start, servers that went away or changed
   * stop (a changed one starts again), unchanged ones are left alone.
   */
  configure(settings: McpSettings): void {
    this.reconnect = settings.reconnect;
    let changed = false;
    const wanted = new Map(settings.servers.map((server) => [server.name, server]));
    for (const [name, record] of this.servers) {
      const next = wanted.get(name);
      if (next === undefined || keyOf(next) !== record.key) {
        void this.stop(record);
        this.servers.delete(name);
        changed = true;
      }
    }
    const disabled = [...settings.disabled].sort();
    if (disabled.join('\0') !== [...this.disabled].sort().join('\0')) changed = true;
    this.disabled.clear();
    for (const name of disabled) this.disabled.add(name);
    for (const server of settings.servers) {
      if (this.servers.has(server.name)) continue;
      const record = this.createRecord(server);
      this.servers.set(server.name, record);
      this.start(record);
      changed = true;
    }
    // The same configuration comes with every change of Lua's tools: nothing to do then.
    if (changed) this.changed();
  }

  /** No server is in its first attempt. */
  isReady(): boolean {
    for (const record of this.servers.values()) if (record.loading) return false;
    return true;
  }

  /** Server names (configured and disabled), sorted. */
  names(): string[] {
    return [...new Set([...this.servers.keys(), ...this.disabled])].sort();
  }

  status(): McpServerStatus[] {
    const now = this.now();
    const out: McpServerStatus[] = [];
    for (const name of this.names()) {
      const record = this.servers.get(name);
      if (record === undefined) {
        out.push({
          name,
          transport: 'stdio',
          target: '',
          state: 'disabled',
          tools: [],
          filtered: 0,
          attempts: 0,
        });
        continue;
      }
      const status: McpServerStatus = {
        name,
        transport: record.config.transport,
        target: describeTarget(record.config),
        state: record.state,
        tools: [...record.tools].sort(),
        filtered: record.filtered,
        attempts: record.attempts,
      };
      if (record.lastError !== undefined) status.lastError = record.lastError;
      if (record.state === 'connected' && record.connectedAt !== undefined) {
        status.uptimeMs = now - record.connectedAt;
      }
      if (record.state === 'reconnecting' && record.retryAt !== undefined) {
        status.retryInMs = Math.max(0, record.retryAt - now);
      }
      out.push(status);
    }
    return out;
  }

  /**
   * Stops and starts a server again (every server when `name` is undefined), resetting its
   * attempts. Returns the names restarted; an unknown name throws.
   */
  restart(name?: string): string[] {
    const targets = name === undefined ? [...this.servers.values()] : [this.record(name)];
    for (const record of targets) {
      void this.stop(record);
      record.attempts = 0;
      record.lastError = undefined;
      this.start(record);
    }
    this.changed();
    return targets.map((record) => record.config.name);
  }

  /** Stops every server (the host is going away). */
  async shutdown(): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const record of this.servers.values()) closing.push(this.stop(record));
    this.servers.clear();
    await Promise.allSettled(closing);
  }

  /** Processes of stdio servers still running (to be killed if the host exits at once). */
  pids(): number[] {
    const out: number[] = [];
    for (const record of this.servers.values()) {
      const pid = record.conn?.pid;
      if (typeof pid === 'number') out.push(pid);
    }
    return out;
  }

  /** Each connected server's prompts and resource URIs (what Lua completes from). */
  catalog(): McpCatalog {
    const out: McpCatalog = {};
    for (const name of [...this.servers.keys()].sort()) {
      const record = this.servers.get(name);
      if (record?.state === 'connected') out[name] = record.catalogEntry();
    }
    return out;
  }

  /** The resources and templates of one server (every configured one without a name). */
  async resourceListing(name?: string): Promise<McpResourceListing[]> {
    const records =
      name === undefined
        ? [...this.servers.keys()].sort().map((key) => this.record(key))
        : [this.record(name)];
    return await Promise.all(records.map((record) => record.listing()));
  }

  /** A resource's contents (`resources/read`); the error names the server and the URI. */
  async readResource(
    name: string,
    uri: string,
    signal: AbortSignal,
  ): Promise<McpResourceContents[]> {
    const record = this.record(name);
    const generation = record.generation;
    return await record.readResource(uri, signal, (error) => {
      // A failed read may be the first sign that an HTTP server is gone.
      if (!isProtocolError(error)) void this.checkAlive(record, generation, error);
    });
  }

  /** A prompt's messages, its arguments checked first (server.ts). */
  async getPrompt(
    name: string,
    prompt: string,
    args: Record<string, string>,
    signal: AbortSignal,
  ): Promise<McpPromptMessage[]> {
    return await this.record(name).getPrompt(prompt, args, signal);
  }

  // -------------------------------------------------------------------------------------------

  /** The record of a configured server; an unknown or disabled name throws, saying so. */
  private record(name: string): ServerRecord {
    const record = this.servers.get(name);
    if (record !== undefined) return record;
    const known = this.names();
    throw new Error(
      this.disabled.has(name)
        ? `MCP server '${name}' is disabled (enabled = false)`
        : `unknown MCP server '${name}'${known.length > 0 ? ` (configured: ${known.join(', ')})` : ' (none is configured)'}`,
    );
  }

  private createRecord(config: McpServerConfig): ServerRecord {
    const record = new ServerRecord(config, keyOf(config), {
      changed: () => {
        this.changed();
      },
      log: (message) => this.options.log?.(message),
    });
    record.caller = {
      callTool: (tool, args, signal) => this.callTool(record, tool, args, signal),
    };
    return record;
  }

  private start(record: ServerRecord): void {
    record.generation += 1;
    record.state = 'starting';
    record.loading = true;
    void this.attempt(record, record.generation);
  }

  /** Ends a server's connection and pending attempt and takes its tools away. */
  private async stop(record: ServerRecord): Promise<void> {
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
        this.options.log?.(
          `MCP server '${record.config.name}': closing failed: ${errorText(error)}`,
        );
      }
    }
  }

  private async attempt(record: ServerRecord, generation: number): Promise<void> {
    const { name, timeout } = record.config;
    const controller = new AbortController();
    record.attempt = controller;
    const timer = setTimeout(() => {
      controller.abort(new Error(`no answer within ${String(timeout)} s`));
    }, timeout * 1000);
    const current = (): boolean => record.generation === generation;
    let conn: McpConnection | undefined;
    try {
      const connecting = this.options.connect(
        record.config,
        {
          closed: (reason) => {
            if (current() && record.conn === conn)
              this.lost(record, reason ?? 'the connection closed');
          },
          error: (error) => {
            if (current() && record.conn === conn) void this.checkAlive(record, generation, error);
          },
          toolsChanged: () => {
            if (current() && record.conn === conn && conn !== undefined) {
              void this.relist(record, generation, conn);
            }
          },
          resourcesChanged: () => {
            if (current() && record.conn === conn && conn !== undefined) {
              void record.refreshLists(generation, conn, 'resources');
            }
          },
          promptsChanged: () => {
            if (current() && record.conn === conn && conn !== undefined) {
              void record.refreshLists(generation, conn, 'prompts');
            }
          },
        },
        controller.signal,
      );
      // A connection that arrives after the attempt was given up is closed at once.
      connecting.then(
        (late) => {
          if (controller.signal.aborted && conn !== late) void late.close().catch(() => undefined);
        },
        () => undefined,
      );
      conn = await abortable(connecting, controller.signal);
      const listed = await abortable(conn.listTools(controller.signal), controller.signal);
      if (!current()) {
        await conn.close().catch(() => undefined);
        return;
      }
      const wasLost = record.state === 'reconnecting';
      record.conn = conn;
      record.connectedAt = this.now();
      record.state = 'connected';
      record.attempts = 0;
      record.lastError = undefined;
      record.retryAt = undefined;
      this.registerTools(record, listed);
      // Resources and prompts are listed after: a send waits for the tools only.
      void record.refreshLists(generation, conn, 'resources');
      void record.refreshLists(generation, conn, 'prompts');
      this.options.log?.(
        `MCP server '${name}' connected: ${String(record.tools.length)} tool(s)${record.filtered > 0 ? `, ${String(record.filtered)} filtered out` : ''}`,
      );
      this.options.connected?.(name, record.tools.length, wasLost);
      if (wasLost) {
        this.options.notify(
          'info',
          `MCP server '${name}' is back (${String(record.tools.length)} tool(s))`,
        );
      }
    } catch (error) {
      if (!current()) {
        await conn?.close().catch(() => undefined);
        return;
      }
      await conn?.close().catch(() => undefined);
      const reason = controller.signal.aborted
        ? errorText(controller.signal.reason)
        : errorText(error);
      record.lastError = reason;
      record.conn = undefined;
      this.options.log?.(`MCP server '${name}': attempt failed: ${reason}`);
      const first = record.state === 'starting';
      record.attempts += 1;
      if (first) {
        const retry = this.reconnect.maxAttempts > 0 ? '; retrying in the background' : '';
        this.options.notify('warn', `MCP server '${name}' failed to start: ${reason}${retry}`);
      }
      this.scheduleRetry(record, generation);
    } finally {
      clearTimeout(timer);
      if (record.attempt === controller) record.attempt = undefined;
      if (current()) record.loading = false;
      this.changed();
    }
  }

  /** After a failed attempt: the next one after a backoff, or give up at the limit. */
  private scheduleRetry(record: ServerRecord, generation: number): void {
    const { maxAttempts, initialDelayMs, maxDelayMs } = this.reconnect;
    const { name } = record.config;
    if (record.attempts > maxAttempts) {
      record.state = 'failed';
      record.retryAt = undefined;
      if (maxAttempts > 0) {
        this.options.notify(
          'warn',
          `MCP server '${name}' could not be reached after ${String(maxAttempts)} attempt(s): ${record.lastError ?? 'unknown error'}. :Flemma mcp:restart ${name} tries again.`,
        );
      }
      return;
    }
    record.state = 'reconnecting';
    const delay = backoffDelay({ baseMs: initialDelayMs, maxMs: maxDelayMs }, record.attempts);
    record.retryAt = this.now() + delay;
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
    const retry = this.reconnect.maxAttempts > 0 ? '; reconnecting' : '';
    this.options.notify(
      'warn',
      `MCP server '${name}' stopped (${reason}): its ${String(count)} tool(s) are unavailable${retry}`,
    );
    this.options.log?.(`MCP server '${name}' lost: ${reason}`);
    this.options.disconnected?.(name, reason);
    if (this.reconnect.maxAttempts === 0) {
      record.state = 'failed';
    } else {
      record.state = 'reconnecting';
      this.scheduleRetry(record, record.generation);
    }
    this.changed();
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
      this.options.log?.(
        `MCP server '${name}' changed its tools: ${String(record.tools.length)} tool(s)`,
      );
      this.changed();
    } catch (error) {
      this.options.log?.(
        `MCP server '${name}': listing the changed tools failed: ${errorText(error)}`,
      );
    }
  }

  /** A transport error or a failed call: is the server still there? If not, it is lost. */
  private async checkAlive(
    record: ServerRecord,
    generation: number,
    cause: unknown,
  ): Promise<void> {
    if (record.checking) return;
    const conn = record.conn;
    if (conn === undefined || record.state !== 'connected') return;
    record.checking = true;
    try {
      await conn.ping(this.options.pingTimeoutMs ?? 5000);
    } catch {
      if (record.generation === generation && record.conn === conn) {
        this.lost(record, errorText(cause));
      }
    } finally {
      record.checking = false;
    }
  }

  private async callTool(
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
      this.options.sink,
      record.config,
      record.caller,
      record.tools,
      listed,
      (message) => {
        this.options.notify('warn', message);
      },
    );
    record.tools = tools;
    record.filtered = filtered;
  }

  private unregisterTools(record: ServerRecord): void {
    unregisterServerTools(this.options.sink, record.tools);
    record.tools = [];
  }

  private changed(): void {
    try {
      this.options.onChange?.();
    } catch (error) {
      this.options.log?.(`MCP change listener failed: ${errorText(error)}`);
    }
  }
}

function keyOf(server: McpServerConfig): string {
  return JSON.stringify(server);
}
