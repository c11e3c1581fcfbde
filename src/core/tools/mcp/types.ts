// The shapes the MCP manager works with: a connection to one server (the SDK's client in the
// host, a fake in the unit tests), what it reports, and what the manager reports in turn. Kept
// apart from the manager so that the lists (lists.ts) and the host share them without a cycle.

import type { ToolDefinition } from '../registry.js';
import type { McpCaller, McpToolInfo } from './bridge.js';
import type { McpServerConfig } from './config.js';

/** A resource as a server lists it (`resources/list`), the fields Flemma shows. */
export interface McpResourceInfo {
  uri: string;
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  mimeType?: string | undefined;
  size?: number | undefined;
}

/** A resource template (`resources/templates/list`): a URI with `{placeholders}`. */
export interface McpResourceTemplateInfo {
  uriTemplate: string;
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  mimeType?: string | undefined;
}

/** One item of a `resources/read` answer: text, or base64 data (`blob`). */
export interface McpResourceContents {
  uri: string;
  mimeType?: string | undefined;
  text?: string | undefined;
  blob?: string | undefined;
}

/** A prompt as a server lists it (`prompts/list`). */
export interface McpPromptInfo {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  arguments?:
    | { name: string; description?: string | undefined; required?: boolean | undefined }[]
    | undefined;
}

/** One message of a `prompts/get` answer; `content` is one MCP content block. */
export interface McpPromptMessage {
  role: 'user' | 'assistant';
  content: { type: string; [key: string]: unknown };
}

/** What a server declared it offers (`initialize`), the parts Flemma uses. */
export interface McpCapabilities {
  resources: boolean;
  /** The server tells when its resources change (`notifications/resources/list_changed`). */
  resourcesListChanged: boolean;
  prompts: boolean;
  promptsListChanged: boolean;
}

/** A connected server, as the manager uses it. */
export interface McpConnection extends McpCaller {
  /** Every tool the server offers (all pages). */
  listTools(signal: AbortSignal): Promise<McpToolInfo[]>;
  /** Resolves when the server answers a ping within `timeoutMs`. */
  ping(timeoutMs: number): Promise<void>;
  /** Ends the session and, for stdio, the process. */
  close(): Promise<void>;
  /** The server process (stdio), for stopping it as the host exits. */
  readonly pid?: number | undefined;
  /** What the server offers besides tools; absent: tools only. */
  readonly capabilities?: McpCapabilities | undefined;
  /** Every resource (all pages). */
  listResources?(signal: AbortSignal): Promise<McpResourceInfo[]>;
  /** Every resource template (all pages). */
  listResourceTemplates?(signal: AbortSignal): Promise<McpResourceTemplateInfo[]>;
  readResource?(uri: string, signal: AbortSignal): Promise<McpResourceContents[]>;
  /** Every prompt (all pages). */
  listPrompts?(signal: AbortSignal): Promise<McpPromptInfo[]>;
  getPrompt?(
    name: string,
    args: Record<string, string>,
    signal: AbortSignal,
  ): Promise<McpPromptMessage[]>;
}

/** What a connection reports after it is made. */
export interface ConnectionEvents {
  /** The transport closed (a stdio server exited, the session ended). */
  closed(reason?: string): void;
  /** The transport saw an error; the manager checks whether the server is still there. */
  error(error: unknown): void;
  /** The server said its tools changed (`notifications/tools/list_changed`). */
  toolsChanged?(): void;
  /** `notifications/resources/list_changed`. */
  resourcesChanged?(): void;
  /** `notifications/prompts/list_changed`. */
  promptsChanged?(): void;
}

export type McpConnect = (
  server: McpServerConfig,
  events: ConnectionEvents,
  signal: AbortSignal,
) => Promise<McpConnection>;

/** Where the manager puts the tools (the host's registry). */
export interface McpToolSink {
  register(def: ToolDefinition): void;
  unregister(name: string): boolean;
}

export type McpState =
  'starting' | 'connected' | 'reconnecting' | 'failed' | 'stopped' | 'disabled';

export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  /** The command line or URL as configured (references unexpanded). */
  target: string;
  state: McpState;
  /** The registered tool names, sorted. */
  tools: string[];
  /** Tools the server offers that `include` / `exclude` left out. */
  filtered: number;
  lastError?: string;
  /** Milliseconds since the current connection was made. */
  uptimeMs?: number;
  /** Failed attempts since the server was last connected. */
  attempts: number;
  /** When the next attempt is due (ms from now), while reconnecting. */
  retryInMs?: number;
}

/** A server's resources and templates as `:Flemma mcp:resources` shows them. */
export interface McpResourceListing {
  server: string;
  /** The server offers resources at all (its `resources` capability). */
  offered: boolean;
  resources: McpResourceInfo[];
  templates: McpResourceTemplateInfo[];
  /** Why the list could not be had (not connected, the server failed to answer). */
  error?: string;
}

/** What Lua completes from: each connected server's prompts and resource URIs. */
export interface McpCatalog {
  [server: string]: {
    prompts: { name: string; arguments: { name: string; required: boolean }[] }[];
    resources: string[];
  };
}

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
