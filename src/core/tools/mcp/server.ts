// One configured MCP server as the manager keeps it: its state and connection (the manager's
// lifecycle moves these), and what is asked of the live connection besides tools — listing its
// resources and prompts again, reading a resource, getting a prompt.

import { errorText, type McpCaller } from './bridge.js';
import { type McpServerConfig, describeTarget } from './config.js';
import {
  type ServerLists,
  catalogEntry,
  emptyLists,
  fetchPrompts,
  fetchResources,
  promptArgumentProblem,
} from './lists.js';
import type {
  McpCatalog,
  McpConnection,
  McpPromptMessage,
  McpResourceContents,
  McpResourceListing,
  McpServerStatus,
  McpState,
} from './types.js';

export interface ServerHooks {
  /** Something the user sees changed (a list). */
  changed(): void;
  log?(message: string): void;
}

export class ServerRecord {
  state: McpState = 'starting';
  conn?: McpConnection | undefined;
  tools: string[] = [];
  filtered = 0;
  lastError?: string | undefined;
  connectedAt?: number | undefined;
  attempts = 0;
  /** Bumped by every start and stop: events of an older connection are ignored. */
  generation = 0;
  /** The first attempt (of a start or restart) has not finished: sends wait. */
  loading = false;
  timer?: ReturnType<typeof setTimeout> | undefined;
  retryAt?: number | undefined;
  attempt?: AbortController | undefined;
  checking = false;
  caller: McpCaller = { callTool: () => Promise.reject(new Error('not connected')) };
  /** Resources, templates and prompts, as last listed. */
  lists: ServerLists = emptyLists();
  /** Bumped by every listing of a kind: only the newest answer is kept. */
  private readonly listings = { resources: 0, prompts: 0 };

  constructor(
    readonly config: McpServerConfig,
    readonly key: string,
    private readonly hooks: ServerHooks,
  ) {}

  get name(): string {
    return this.config.name;
  }

  /** The live connection, or an error saying why there is none. */
  connection(): McpConnection {
    const conn = this.conn;
    if (conn === undefined || this.state !== 'connected') {
      const why = this.lastError === undefined ? '' : `: ${this.lastError}`;
      throw new Error(`MCP server '${this.name}' is not connected (${this.state}${why})`);
    }
    return conn;
  }

  /** The server as `:Flemma mcp:status` shows it, at `now`. */
  status(now: number): McpServerStatus {
    const status: McpServerStatus = {
      name: this.name,
      transport: this.config.transport,
      target: describeTarget(this.config),
      state: this.state,
      tools: [...this.tools].sort(),
      filtered: this.filtered,
      attempts: this.attempts,
    };
    if (this.lastError !== undefined) status.lastError = this.lastError;
    if (this.state === 'connected' && this.connectedAt !== undefined) {
      status.uptimeMs = now - this.connectedAt;
    }
    if (this.state === 'reconnecting' && this.retryAt !== undefined) {
      status.retryInMs = Math.max(0, this.retryAt - now);
    }
    return status;
  }

  catalogEntry(): McpCatalog[string] {
    return catalogEntry(this.lists);
  }

  /**
   * Lists the resources (and templates) or the prompts of `conn` again and keeps the answer, if
   * `conn` is still this server's of `generation`. Failures are logged (the old list stays), or
   * thrown with `rethrow`.
   */
  async refreshLists(
    generation: number,
    conn: McpConnection,
    kind: 'resources' | 'prompts',
    rethrow = false,
  ): Promise<void> {
    const sequence = ++this.listings[kind];
    const current = (): boolean =>
      this.generation === generation && this.conn === conn && this.listings[kind] === sequence;
    const signal = AbortSignal.timeout(this.config.timeout * 1000);
    try {
      if (kind === 'resources') {
        const { resources, templates } = await fetchResources(conn, signal);
        if (!current()) return;
        this.lists.resources = resources;
        this.lists.templates = templates;
      } else {
        const prompts = await fetchPrompts(conn, signal);
        if (!current()) return;
        this.lists.prompts = prompts;
      }
      this.hooks.changed();
    } catch (error) {
      this.hooks.log?.(
        `MCP server '${this.name}': listing its ${kind} failed: ${errorText(error)}`,
      );
      if (rethrow) throw error;
    }
  }

  /**
   * The resources and templates. A server that announces changes of its resources is answered
   * from the kept list; any other is asked again.
   */
  async listing(): Promise<McpResourceListing> {
    const listing = { server: this.name, resources: [], templates: [], offered: false };
    const conn = this.conn;
    if (conn === undefined || this.state !== 'connected') {
      return { ...listing, error: `not connected (${this.state})` };
    }
    const caps = conn.capabilities;
    if (caps?.resources !== true) return listing;
    if (!caps.resourcesListChanged) {
      try {
        await this.refreshLists(this.generation, conn, 'resources', true);
      } catch (error) {
        return { ...listing, offered: true, error: errorText(error) };
      }
    }
    return {
      server: this.name,
      offered: true,
      resources: [...this.lists.resources],
      templates: [...this.lists.templates],
    };
  }

  /**
   * A resource's contents (`resources/read`); the error names the server and the URI.
   * `suspect` is told of a failure that may mean the server is gone.
   */
  async readResource(
    uri: string,
    signal: AbortSignal,
    suspect: (error: unknown) => void,
  ): Promise<McpResourceContents[]> {
    const conn = this.connection();
    if (conn.capabilities?.resources !== true || conn.readResource === undefined) {
      throw new Error(`MCP server '${this.name}' offers no resources`);
    }
    try {
      return await conn.readResource(uri, this.bounded(signal));
    } catch (error) {
      if (!signal.aborted) suspect(error);
      throw new Error(`MCP server '${this.name}' could not read ${uri}: ${errorText(error)}`);
    }
  }

  /**
   * A prompt's messages (`prompts/get`) once its arguments are checked against the prompt's
   * declaration: a missing required argument is named before the server is asked.
   */
  async getPrompt(
    prompt: string,
    args: Record<string, string>,
    signal: AbortSignal,
  ): Promise<McpPromptMessage[]> {
    const conn = this.connection();
    if (conn.capabilities?.prompts !== true || conn.getPrompt === undefined) {
      throw new Error(`MCP server '${this.name}' offers no prompts`);
    }
    let info = this.lists.prompts.find((item) => item.name === prompt);
    if (info === undefined) {
      // The list may not be there yet (just connected) or be older than the server's.
      await this.refreshLists(this.generation, conn, 'prompts', true);
      info = this.lists.prompts.find((item) => item.name === prompt);
    }
    if (info === undefined) {
      const known = this.lists.prompts.map((item) => item.name);
      throw new Error(
        `MCP server '${this.name}' has no prompt '${prompt}'${known.length > 0 ? ` (it has: ${known.join(', ')})` : ''}`,
      );
    }
    const problem = promptArgumentProblem(this.name, info, args);
    if (problem !== undefined) throw new Error(problem);
    try {
      return await conn.getPrompt(prompt, args, this.bounded(signal));
    } catch (error) {
      throw new Error(`MCP server '${this.name}': prompt '${prompt}': ${errorText(error)}`);
    }
  }

  /** `signal`, also aborted after the server's `timeout`. */
  private bounded(signal: AbortSignal): AbortSignal {
    return AbortSignal.any([signal, AbortSignal.timeout(this.config.timeout * 1000)]);
  }
}
