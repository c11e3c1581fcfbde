// What a connected server offers, as the manager keeps it: its tools (registered in the registry
// as `mcp:<server>:<tool>`), its resources and resource templates, and its prompts. Each list is
// fetched when the server connects and again when the server says it changed
// (`notifications/*/list_changed`); completion and `:Flemma mcp:resources` read the kept lists.

import { bridgeMcpTool, errorText, type McpCaller, type McpToolInfo } from './bridge.js';
import type { McpServerConfig } from './config.js';
import { toolSelected } from './names.js';
import type {
  McpCatalog,
  McpConnection,
  McpPromptInfo,
  McpResourceInfo,
  McpResourceTemplateInfo,
  McpToolSink,
} from './types.js';

/** A server's resources, templates and prompts (empty when it offers none). */
export interface ServerLists {
  resources: McpResourceInfo[];
  templates: McpResourceTemplateInfo[];
  prompts: McpPromptInfo[];
}

export function emptyLists(): ServerLists {
  return { resources: [], templates: [], prompts: [] };
}

/** The resources and templates of `conn`, when it offers resources. */
export async function fetchResources(
  conn: McpConnection,
  signal: AbortSignal,
): Promise<Pick<ServerLists, 'resources' | 'templates'>> {
  if (conn.capabilities?.resources !== true) return { resources: [], templates: [] };
  const [resources, templates] = await Promise.all([
    conn.listResources?.(signal) ?? Promise.resolve([]),
    // Templates are optional even for a server with resources: one that has none may answer
    // "method not found", which means an empty list.
    (conn.listResourceTemplates?.(signal) ?? Promise.resolve([])).catch(
      (error: unknown): McpResourceTemplateInfo[] => {
        if ((error as { code?: unknown } | null)?.code === -32601) return [];
        throw error;
      },
    ),
  ]);
  return { resources, templates };
}

/** The prompts of `conn`, when it offers prompts. */
export async function fetchPrompts(
  conn: McpConnection,
  signal: AbortSignal,
): Promise<McpPromptInfo[]> {
  if (conn.capabilities?.prompts !== true) return [];
  return (await conn.listPrompts?.(signal)) ?? [];
}

/** One server's entry of the catalogue Lua completes from. */
export function catalogEntry(lists: ServerLists): McpCatalog[string] {
  return {
    prompts: lists.prompts.map((prompt) => ({
      name: prompt.name,
      arguments: (prompt.arguments ?? []).map((arg) => ({
        name: arg.name,
        required: arg.required === true,
      })),
    })),
    resources: lists.resources.map((resource) => resource.uri),
  };
}

/**
 * What is wrong with `args` for `prompt`, or undefined: a required argument missing (every
 * missing one named, with the whole usage), or an argument the prompt does not take.
 */
export function promptArgumentProblem(
  server: string,
  prompt: McpPromptInfo,
  args: Readonly<Record<string, string>>,
): string | undefined {
  const declared = prompt.arguments ?? [];
  const usage = declared
    .map((arg) => (arg.required === true ? `${arg.name}=…` : `[${arg.name}=…]`))
    .join(' ');
  const missing = declared
    .filter((arg) => arg.required === true && !Object.hasOwn(args, arg.name))
    .map((arg) => arg.name);
  const where = `prompt '${prompt.name}' of MCP server '${server}'`;
  if (missing.length > 0) {
    const names = missing.join(', ');
    return `${where} needs ${missing.length === 1 ? 'the argument' : 'the arguments'} ${names} (usage: :Flemma mcp:prompt ${server} ${prompt.name} ${usage})`;
  }
  const known = new Set(declared.map((arg) => arg.name));
  const unknown = Object.keys(args).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    const takes = declared.length === 0 ? 'takes no arguments' : `takes ${usage}`;
    return `${where} has no argument ${unknown.join(', ')} (it ${takes})`;
  }
  return undefined;
}

/** The tools of a server as registered: their names, and how many the filters left out. */
export interface RegisteredTools {
  tools: string[];
  filtered: number;
}

/**
 * Registers the listed tools of `config`'s server (calls go through `caller`) after taking away
 * `previous`; a tool the registry refuses is reported and left out.
 */
export function registerServerTools(
  sink: McpToolSink,
  config: McpServerConfig,
  caller: McpCaller,
  previous: readonly string[],
  listed: readonly McpToolInfo[],
  warn: (message: string) => void,
): RegisteredTools {
  unregisterServerTools(sink, previous);
  const { name, include, exclude } = config;
  const tools: string[] = [];
  let filtered = 0;
  for (const info of listed) {
    if (!toolSelected(info.name, include, exclude)) {
      filtered += 1;
      continue;
    }
    const def = bridgeMcpTool(name, caller, info);
    try {
      sink.register(def);
      tools.push(def.name);
    } catch (error) {
      warn(`MCP server '${name}': tool '${info.name}': ${errorText(error)}`);
    }
  }
  return { tools, filtered };
}

export function unregisterServerTools(sink: McpToolSink, tools: readonly string[]): void {
  for (const tool of tools) sink.unregister(tool);
}
