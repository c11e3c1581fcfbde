// MCP in the host: connections made with the official SDK (`@modelcontextprotocol/sdk`, loaded
// with import() when the first server is configured — a host without MCP servers never loads
// it), the `${…}` references of the configuration resolved from Neovim's environment and the
// credential chain, and the servers' processes stopped when the host exits.
//
// The manager (naming, registration, reconnecting) is `src/core/tools/mcp/manager.ts`.

import { homedir } from 'node:os';
import { expandHome } from '../core/util/expand-path.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpToolInfo } from '../core/tools/mcp/bridge.js';
import { errorText } from '../core/tools/mcp/bridge.js';
import { type McpServerConfig, expandReferences, redact } from '../core/tools/mcp/config.js';
import { McpManager } from '../core/tools/mcp/manager.js';
import type {
  ConnectionEvents,
  McpConnect,
  McpConnection,
  McpToolSink,
} from '../core/tools/mcp/types.js';
import type { HostBase } from './base.js';
import { HOST_VERSION } from './base.js';
import { type ReferenceLookup, referenceLookup } from './references.js';
import { secondsMs } from '../core/util/timer.js';

/** A server call is bounded by the executor's timeout (through its signal), not by the SDK's. */
const CALL_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** How much of a stdio server's stderr is kept for messages. */
const STDERR_TAIL = 4096;

type Sdk = {
  Client: typeof Client;
  StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
};

let sdk: Promise<Sdk> | undefined;

/** The SDK's client parts, loaded once (three lazy bundles sharing their chunks). */
function loadSdk(): Promise<Sdk> {
  sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]).then(([client, stdio, http]) => ({
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
  }));
  return sdk;
}

/** Connects with the SDK; `lookup` resolves the references in the server's settings. */
export function sdkConnector(lookup: ReferenceLookup, log: (message: string) => void): McpConnect {
  return async (server, events, signal) => {
    const secrets = new Set<string>();
    try {
      return await connect(server, events, signal, lookup, secrets, log);
    } catch (error) {
      throw new Error(redact(errorText(error), secrets));
    }
  };
}

/** What a connection shares with its client's handlers: whether it is being closed. */
interface Closing {
  closing: boolean;
}

/** The client, told of list changes (the manager lists again itself, all pages). */
function newClient(Client: Sdk['Client'], events: ConnectionEvents, state: Closing): Client {
  const changed = (tell: () => void) => ({
    autoRefresh: false,
    onChanged: () => {
      if (!state.closing) tell();
    },
  });
  return new Client(
    { name: 'flemma', version: HOST_VERSION },
    {
      capabilities: {},
      // The SDK only debounces the notifications.
      listChanged: {
        tools: changed(() => events.toolsChanged?.()),
        resources: changed(() => events.resourcesChanged?.()),
        prompts: changed(() => events.promptsChanged?.()),
      },
    },
  );
}

/** A server's transport: a process over stdio (its stderr's tail kept), or Streamable HTTP. */
interface Transport {
  transport: InstanceType<Sdk['StdioClientTransport']> | StreamableHTTPClientTransport;
  http?: StreamableHTTPClientTransport;
  pid: () => number | undefined;
  /** The end of what a stdio server wrote to stderr. */
  stderr: () => string;
}

async function openTransport(
  sdkParts: Sdk,
  server: McpServerConfig,
  expand: (text: string) => Promise<string>,
): Promise<Transport> {
  const expandAll = async (map: Record<string, string>): Promise<Record<string, string>> => {
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(map)) out[key] = await expand(value);
    return out;
  };
  if (server.transport === 'stdio') {
    const args: string[] = [];
    for (const arg of server.args) args.push(await expand(arg));
    const stdio = new sdkParts.StdioClientTransport({
      command: await expand(server.command),
      args,
      env: await expandAll(server.env),
      ...(server.cwd === undefined ? {} : { cwd: expandHome(await expand(server.cwd), homedir()) }),
      // Kept (a server's last words explain why it stopped), never inherited: the host's
      // stderr is not a place anyone reads.
      stderr: 'pipe',
    });
    let stderr = '';
    stdio.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    return { transport: stdio, pid: () => stdio.pid ?? undefined, stderr: () => stderr };
  }
  const http = new sdkParts.StreamableHTTPClientTransport(new URL(await expand(server.url)), {
    requestInit: { headers: await expandAll(server.headers) },
    // The manager reconnects (and re-lists the tools); the transport only reports.
    reconnectionOptions: {
      maxRetries: 0,
      initialReconnectionDelay: 1000,
      maxReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 1,
    },
  });
  return { transport: http, http, pid: () => undefined, stderr: () => '' };
}

async function connect(
  server: McpServerConfig,
  events: ConnectionEvents,
  signal: AbortSignal,
  lookup: ReferenceLookup,
  secrets: Set<string>,
  log: (message: string) => void,
): Promise<McpConnection> {
  const expand = (text: string): Promise<string> => expandReferences(text, lookup, secrets);
  const sdkParts = await loadSdk();
  const state: Closing = { closing: false };
  const client = newClient(sdkParts.Client, events, state);
  const opened = await openTransport(sdkParts, server, expand);
  const lastWords = (): string => {
    const lines = opened
      .stderr()
      .trim()
      .split(/\r?\n/)
      .filter((line) => line.trim() !== '');
    return redact(lines.at(-1) ?? '', secrets);
  };
  client.onclose = () => {
    if (state.closing) return;
    const words = lastWords();
    events.closed(
      server.transport === 'stdio'
        ? `the server process exited${words === '' ? '' : `: ${words}`}`
        : 'the session closed',
    );
  };
  let connected = false;
  client.onerror = (error) => {
    // Errors while connecting are the attempt's own failure.
    if (state.closing || !connected) return;
    log(`MCP server '${server.name}': transport error: ${redact(error.message, secrets)}`);
    events.error(new Error(redact(error.message, secrets)));
  };
  try {
    await client.connect(opened.transport, { signal, timeout: secondsMs(server.timeout) });
  } catch (error) {
    state.closing = true;
    await client.close().catch(() => undefined);
    const words = lastWords();
    const message = errorText(error);
    throw new Error(words === '' || message.includes(words) ? message : `${message} (${words})`);
  }
  connected = true;
  const info = client.getServerVersion();
  if (info !== undefined) {
    log(`MCP server '${server.name}' is ${info.name} ${info.version}`);
  }
  return connectionOf(client, opened, state);
}

/** Every page of a paginated list. */
async function allPages<T>(
  fetch: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>,
): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await fetch(cursor);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return items;
}

function params(cursor: string | undefined): { cursor?: string } {
  return cursor === undefined ? {} : { cursor };
}

/** A connected client as the manager uses it. */
function connectionOf(client: Client, opened: Transport, state: Closing): McpConnection {
  const caps = client.getServerCapabilities();
  const { http } = opened;
  return {
    get pid() {
      return opened.pid();
    },
    capabilities: {
      resources: caps?.resources !== undefined,
      resourcesListChanged: caps?.resources?.listChanged === true,
      prompts: caps?.prompts !== undefined,
      promptsListChanged: caps?.prompts?.listChanged === true,
    },
    listResources: (listSignal) =>
      allPages(async (cursor) => {
        const page = await client.listResources(params(cursor), { signal: listSignal });
        return { items: page.resources, nextCursor: page.nextCursor };
      }),
    listResourceTemplates: (listSignal) =>
      allPages(async (cursor) => {
        const page = await client.listResourceTemplates(params(cursor), { signal: listSignal });
        return {
          items: page.resourceTemplates,
          nextCursor: page.nextCursor,
        };
      }),
    readResource: async (uri, readSignal) => {
      const answer = await client.readResource({ uri }, { signal: readSignal });
      return answer.contents;
    },
    listPrompts: (listSignal) =>
      allPages(async (cursor) => {
        const page = await client.listPrompts(params(cursor), { signal: listSignal });
        return { items: page.prompts, nextCursor: page.nextCursor };
      }),
    getPrompt: async (name, args, getSignal) => {
      const answer = await client.getPrompt({ name, arguments: args }, { signal: getSignal });
      return answer.messages;
    },
    listTools: async (listSignal) => {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, {
          signal: listSignal,
        });
        tools.push(...(page.tools as McpToolInfo[]));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return tools;
    },
    callTool: async (tool, args, callSignal) =>
      await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: callSignal,
        timeout: CALL_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
      }),
    ping: async (timeoutMs) => {
      await client.ping({ timeout: timeoutMs });
    },
    close: async () => {
      state.closing = true;
      // An HTTP session is ended politely; a server that is gone does not hold this up.
      if (http !== undefined) {
        await http.terminateSession().catch(() => undefined);
      }
      await client.close();
    },
  };
}

/**
 * The host's MCP manager: tools go into `sink`; messages go to the user; the servers' processes
 * are stopped when the host exits (a SIGTERM; the SDK's own close ends them on a normal stop).
 */
export function createMcpManager(
  ctx: Pick<HostBase, 'lua' | 'notify' | 'secrets' | 'logger' | 'hooks'>,
  sink: McpToolSink,
  onChange: () => void,
): McpManager {
  const log = (message: string): void => {
    ctx.logger.info(message);
  };
  const lookup = referenceLookup(ctx, 'MCP');
  const manager = new McpManager({
    connect: sdkConnector(lookup, log),
    sink,
    notify: (level, message) => {
      ctx.notify[level](message);
      if (level === 'warn') ctx.logger.warn(message);
      else ctx.logger.info(message);
    },
    log,
    onChange,
    // `User FlemmaMcpConnected` / `FlemmaMcpDisconnected` (a statusline can follow them).
    connected: (server, tools, reconnected) => {
      ctx.hooks.post('mcp:connected', { server, tools, reconnected });
    },
    disconnected: (server, reason) => {
      ctx.hooks.post('mcp:disconnected', { server, reason });
    },
  });
  process.on('exit', () => {
    for (const pid of manager.pids()) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // Already gone.
      }
    }
  });
  return manager;
}
