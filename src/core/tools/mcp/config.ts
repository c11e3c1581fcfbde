// The `mcp` section of the configuration as the host receives it: checked again here (it came
// over RPC), with defaults, and `${…}` references in the values that may carry secrets.
//
//   mcp = {
//     servers = {
//       fs = { command = "npx", args = { "-y", "@modelcontextprotocol/server-filesystem", "." } },
//       github = { url = "https://api.githubcopilot.com/mcp/",
//                  headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }, include = { "get_*" } },
//     },
//     reconnect = { max_attempts = 5, initial_delay = 500, max_delay = 30000 },
//     timeout = 30,
//   }

import { SERVER_NAME_PATTERN } from './names.js';

interface ServerCommon {
  name: string;
  /** Globs over the server's tool names: only these (empty: all). */
  include: string[];
  /** Globs over the server's tool names: never these (wins over `include`). */
  exclude: string[];
  /** Seconds for connecting and listing the tools. */
  timeout: number;
}

export interface McpStdioServer extends ServerCommon {
  transport: 'stdio';
  command: string;
  args: string[];
  /** Added to the environment the SDK passes on (PATH, HOME, … — not every variable). */
  env: Record<string, string>;
  cwd?: string;
}

export interface McpHttpServer extends ServerCommon {
  transport: 'http';
  url: string;
  headers: Record<string, string>;
}

export type McpServerConfig = McpStdioServer | McpHttpServer;

export interface ReconnectSettings {
  /** Attempts after a server is lost (or fails to start) before Flemma gives up. */
  maxAttempts: number;
  /** Milliseconds before the first attempt; doubled after each failure … */
  initialDelayMs: number;
  /** … up to this. */
  maxDelayMs: number;
}

export interface McpSettings {
  servers: McpServerConfig[];
  /** Servers set `enabled = false`: listed by `:Flemma mcp:status`, never started. */
  disabled: string[];
  reconnect: ReconnectSettings;
  /** What was wrong with the configuration, one message per server or setting. */
  problems: string[];
}

export const DEFAULT_RECONNECT: ReconnectSettings = {
  maxAttempts: 5,
  initialDelayMs: 500,
  maxDelayMs: 30_000,
};

const DEFAULT_TIMEOUT_S = 30;

/** Reads the `mcp` section; a bad server is left out and reported, the others still start. */
export function parseMcpSettings(raw: unknown): McpSettings {
  const settings: McpSettings = {
    servers: [],
    disabled: [],
    reconnect: { ...DEFAULT_RECONNECT },
    problems: [],
  };
  if (raw === undefined || raw === null) return settings;
  if (!isRecord(raw)) {
    settings.problems.push('mcp: expected a table');
    return settings;
  }
  const reconnect = raw['reconnect'];
  if (isRecord(reconnect)) {
    settings.reconnect = {
      maxAttempts: count(reconnect['max_attempts'], DEFAULT_RECONNECT.maxAttempts),
      initialDelayMs: count(reconnect['initial_delay'], DEFAULT_RECONNECT.initialDelayMs),
      maxDelayMs: count(reconnect['max_delay'], DEFAULT_RECONNECT.maxDelayMs),
    };
  }
  const timeout = positive(raw['timeout'], DEFAULT_TIMEOUT_S);
  const servers = raw['servers'];
  if (servers === undefined || servers === null) return settings;
  // Lua sends an empty table as an empty list.
  if (Array.isArray(servers) && servers.length === 0) return settings;
  if (!isRecord(servers)) {
    settings.problems.push('mcp.servers: expected a table of servers by name');
    return settings;
  }
  for (const name of Object.keys(servers).sort()) {
    const spec = servers[name];
    const where = `mcp.servers.${name}`;
    if (!SERVER_NAME_PATTERN.test(name)) {
      settings.problems.push(
        `${where}: a server name may use only letters, digits, '_' and '-' (it becomes part of the tool names, mcp:<server>:<tool>)`,
      );
      continue;
    }
    if (!isRecord(spec)) {
      settings.problems.push(`${where}: expected a table`);
      continue;
    }
    if (spec['enabled'] === false) {
      settings.disabled.push(name);
      continue;
    }
    const result = parseServer(name, spec, timeout);
    if (typeof result === 'string') settings.problems.push(`${where}: ${result}`);
    else settings.servers.push(result);
  }
  return settings;
}

function parseServer(
  name: string,
  spec: Record<string, unknown>,
  defaultTimeout: number,
): McpServerConfig | string {
  const command = spec['command'];
  const url = spec['url'];
  if (command !== undefined && url !== undefined) {
    return 'set either `command` (a server run over stdio) or `url` (Streamable HTTP), not both';
  }
  const include = stringList(spec['include']);
  const exclude = stringList(spec['exclude']);
  if (include === undefined) return '`include` must be a list of strings';
  if (exclude === undefined) return '`exclude` must be a list of strings';
  const common = { name, include, exclude, timeout: positive(spec['timeout'], defaultTimeout) };
  if (typeof command === 'string' && command !== '') {
    const args = stringList(spec['args']);
    if (args === undefined) return '`args` must be a list of strings';
    const env = stringMap(spec['env']);
    if (env === undefined) return '`env` must be a table of strings';
    const server: McpStdioServer = { ...common, transport: 'stdio', command, args, env };
    const cwd = spec['cwd'];
    if (cwd !== undefined) {
      if (typeof cwd !== 'string') return '`cwd` must be a string';
      server.cwd = cwd;
    }
    return server;
  }
  if (typeof url === 'string' && url !== '') {
    const headers = stringMap(spec['headers']);
    if (headers === undefined) return '`headers` must be a table of strings';
    if (!/^https?:\/\//i.test(url) && !url.startsWith('${')) {
      return '`url` must start with http:// or https://';
    }
    return { ...common, transport: 'http', url, headers };
  }
  return 'needs `command` (a server run over stdio) or `url` (Streamable HTTP)';
}

/**
 * What a server is, as `:Flemma mcp:status` shows it: the command line or the URL, as written in
 * the configuration (so a `${TOKEN}` shows as `${TOKEN}`, never as its value).
 */
export function describeTarget(server: McpServerConfig): string {
  if (server.transport === 'http') return server.url;
  return [server.command, ...server.args].join(' ');
}

// ---------------------------------------------------------------------------------------------
// `${…}` references

/** What a `${…}` names: an environment variable, or a credential of the credential chain. */
export type SecretRef =
  { type: 'env'; name: string } | { type: 'credential'; kind: string; service: string };

const REFERENCE = /\$\{([^}]*)\}/g;

/** The reference inside `${…}`, or a message saying what is wrong with it. */
export function parseReference(inner: string): SecretRef | string {
  const credential = /^secret:([A-Za-z0-9_.-]+):([A-Za-z0-9_.-]+)$/.exec(inner);
  if (credential !== null) {
    return { type: 'credential', kind: credential[1] ?? '', service: credential[2] ?? '' };
  }
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(inner)) return { type: 'env', name: inner };
  return `\${${inner}} is neither \${VARIABLE} nor \${secret:<kind>:<service>}`;
}

/**
 * Replaces every `${VAR}` / `${secret:<kind>:<service>}` in `text`. `lookup` answers a value or
 * undefined; an unknown reference throws an error that names it (and never a value). Every value
 * put in is added to `secrets`, so that messages can be scrubbed of it.
 */
export async function expandReferences(
  text: string,
  lookup: (ref: SecretRef) => Promise<string | undefined>,
  secrets: Set<string>,
): Promise<string> {
  let out = '';
  let last = 0;
  for (const match of text.matchAll(REFERENCE)) {
    const inner = match[1] ?? '';
    const ref = parseReference(inner);
    if (typeof ref === 'string') throw new Error(ref);
    const value = await lookup(ref);
    if (value === undefined || value === '') {
      throw new Error(
        ref.type === 'env'
          ? `\${${inner}}: the environment variable ${ref.name} is not set`
          : `\${${inner}}: no credential ${ref.kind} for ${ref.service} was found`,
      );
    }
    secrets.add(value);
    out += text.slice(last, match.index) + value;
    last = match.index + match[0].length;
  }
  return out + text.slice(last);
}

/** `text` with every secret value replaced by `***`. */
export function redact(text: string, secrets: ReadonlySet<string>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('***');
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringList(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value))
    return isRecord(value) && Object.keys(value).length === 0 ? [] : undefined;
  return value.every((item) => typeof item === 'string') ? [...value] : undefined;
}

function stringMap(value: unknown): Record<string, string> | undefined {
  if (value === undefined || value === null) return {};
  if (Array.isArray(value)) return value.length === 0 ? {} : undefined;
  if (!isRecord(value)) return undefined;
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item === 'number') out[key] = String(item);
    else if (typeof item === 'string') out[key] = item;
    else return undefined;
  }
  return out;
}

function count(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
    ? Math.floor(value)
    : fallback;
}

function positive(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
}
