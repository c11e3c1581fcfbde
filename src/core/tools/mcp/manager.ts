// The MCP manager: one record per configured server (server.ts), which it connects, whose tools
// it registers (`mcp:<server>:<tool>`) and unregisters, whose resources and prompts it keeps
// listed (lists.ts) and reads, and which it reconnects when the server goes away. The connection
// itself comes from a `McpConnect` function (the SDK in the host, a fake in the unit tests), so
// everything here runs without a server.
//
// Readiness: a server counts as a loading tool source until its first attempt has finished
// (connected or failed), so a send made meanwhile waits for it; later reconnects do not hold
// sends up — the next request simply lacks the server's tools until it is back (docs/mcp.md).
// The connection's lifecycle (attempts, retries, losses) is lifecycle.ts.

import { errorText } from './bridge.js';
import {
  DEFAULT_RECONNECT,
  type McpServerConfig,
  type McpSettings,
  type ReconnectSettings,
} from './config.js';
import { isProtocolError } from './calls.js';
import { ServerLifecycle } from './lifecycle.js';
import { ServerRecord } from './server.js';
import type {
  McpCatalog,
  McpManagerOptions,
  McpPromptMessage,
  McpResourceContents,
  McpResourceListing,
  McpServerStatus,
} from './types.js';

export type {
  ConnectionEvents,
  McpConnect,
  McpConnection,
  McpManagerOptions,
  McpServerStatus,
  McpState,
  McpToolSink,
} from './types.js';

export class McpManager {
  private readonly servers = new Map<string, ServerRecord>();
  private readonly disabled = new Set<string>();
  private reconnect: ReconnectSettings = { ...DEFAULT_RECONNECT };
  private readonly now: () => number;
  private readonly lifecycle: ServerLifecycle;

  constructor(private readonly options: McpManagerOptions) {
    const now = options.now;
    this.now = now === undefined ? () => Date.now() : () => now();
    this.lifecycle = new ServerLifecycle({
      options,
      reconnect: () => this.reconnect,
      now: this.now,
      changed: () => {
        this.changed();
      },
    });
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
        void this.lifecycle.stop(record);
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
      this.lifecycle.start(record);
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
      out.push(record.status(now));
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
      void this.lifecycle.stop(record);
      record.attempts = 0;
      record.lastError = undefined;
      this.lifecycle.start(record);
    }
    this.changed();
    return targets.map((record) => record.config.name);
  }

  /** Stops every server (the host is going away). */
  async shutdown(): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const record of this.servers.values()) closing.push(this.lifecycle.stop(record));
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
      if (!isProtocolError(error)) void this.lifecycle.checkAlive(record, generation, error);
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
      callTool: (tool, args, signal) => this.lifecycle.callTool(record, tool, args, signal),
    };
    return record;
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
