// The bridge from an MCP server's tools to registry definitions (docs/mcp.md): one definition per
// tool, named `mcp:<server>:<tool>`, described `[MCP:<server>] …`, with the server's input schema,
// whose `execute` calls the server and turns its answer into a tool outcome. It knows nothing of
// the SDK: a server is anything with `callTool`, so it is tested with a fake one.

import type { ToolDefinition, ToolOutcome } from '../registry.js';
import { mcpToolName } from './names.js';

/** A tool as a server lists it (`tools/list`), the fields the bridge uses. */
export interface McpToolInfo {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema?: Record<string, unknown> | undefined;
  annotations?: { title?: string | undefined; readOnlyHint?: boolean | undefined } | undefined;
}

/** One block of a tool's answer (`CallToolResult.content`); only `type` is relied on. */
export type McpContent = { type: string; [key: string]: unknown };

/** What `tools/call` answers. */
export interface McpCallResult {
  content?: McpContent[] | undefined;
  structuredContent?: Record<string, unknown> | undefined;
  isError?: boolean | undefined;
  /** The answer of servers on the 2024-10-07 protocol. */
  toolResult?: unknown;
}

/** The part of a connected server the bridge needs. */
export interface McpCaller {
  callTool(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpCallResult>;
}

/** A definition for one server tool; `execute` goes through `caller`. */
export function bridgeMcpTool(
  server: string,
  caller: McpCaller,
  info: McpToolInfo,
): ToolDefinition {
  const name = mcpToolName(server, info.name);
  const summary = info.description?.trim() || info.title || info.annotations?.title || info.name;
  return {
    name,
    description: `[MCP:${server}] ${summary}`,
    inputSchema: copySchema(info.inputSchema),
    label: info.title ?? info.annotations?.title ?? info.name,
    // A server call may take a while: it gets the spinner and can be cancelled.
    async: true,
    execute: async (input, ctx) => {
      const args =
        typeof input === 'object' && input !== null && !Array.isArray(input)
          ? (input as Record<string, unknown>)
          : {};
      try {
        const result = await caller.callTool(info.name, args, ctx.signal);
        return callResultToOutcome(result, name);
      } catch (error) {
        return { ok: false, error: errorText(error) };
      }
    },
  };
}

/** Every tool of a server, in the order the server listed them. */
export function bridgeMcpTools(
  server: string,
  caller: McpCaller,
  tools: readonly McpToolInfo[],
): ToolDefinition[] {
  return tools.map((info) => bridgeMcpTool(server, caller, info));
}

/**
 * A deep copy of the server's input schema as the registry wants it: an object schema with
 * `properties`. `$schema` goes (providers reject some dialect URIs and it says nothing about the
 * input); everything else — `required`, `additionalProperties`, `$defs`, descriptions — stays.
 */
export function copySchema(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  const copy = schema === undefined ? {} : structuredClone(schema);
  delete copy['$schema'];
  copy['type'] = 'object';
  const properties = copy['properties'];
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) {
    copy['properties'] = {};
  }
  return copy;
}

/**
 * A server's answer as a tool outcome. Text blocks are joined with newlines; other blocks are
 * described in one line each (their data never reaches the buffer). `isError` makes the text
 * the error the model sees. An answer with no content but `structuredContent` gives that object
 * (written as JSON).
 */
export function callResultToOutcome(result: McpCallResult, toolName: string): ToolOutcome {
  const blocks = Array.isArray(result.content) ? result.content : [];
  let text = blocks.map(describeContent).join('\n');
  if (blocks.length === 0 && result.toolResult !== undefined) {
    text =
      typeof result.toolResult === 'string'
        ? result.toolResult
        : JSON.stringify(result.toolResult, null, 2);
  }
  if (result.isError === true) {
    return {
      ok: false,
      error: text === '' ? `${toolName} reported an error without a message` : text,
    };
  }
  if (text === '' && isRecord(result.structuredContent)) {
    return { ok: true, output: result.structuredContent };
  }
  return { ok: true, output: text };
}

/** One content block as text: the text itself, or a one-line summary of anything else. */
export function describeContent(block: McpContent): string {
  switch (block.type) {
    case 'text':
      return typeof block['text'] === 'string' ? block['text'] : '';
    case 'image':
    case 'audio':
      return `[${block.type}: ${mimeOf(block)}, ${sizeOfBase64(block['data'])}]`;
    case 'resource_link': {
      const label = stringField(block, 'title') ?? stringField(block, 'name');
      const uri = stringField(block, 'uri') ?? '?';
      return `[resource link: ${label === undefined ? uri : `${label} <${uri}>`}]`;
    }
    case 'resource': {
      const resource = isRecord(block['resource']) ? block['resource'] : {};
      const uri = stringField(resource, 'uri') ?? '?';
      const text = stringField(resource, 'text');
      if (text !== undefined) return `[resource: ${uri}]\n${text}`;
      return `[resource: ${uri}, ${mimeOf(resource)}, ${sizeOfBase64(resource['blob'])}]`;
    }
    default:
      return `[${block.type} content]`;
  }
}

function mimeOf(block: Record<string, unknown>): string {
  return stringField(block, 'mimeType') ?? 'unknown type';
}

/** The decoded size of base64 data, for a summary (`12.3 KB`). */
function sizeOfBase64(data: unknown): string {
  if (typeof data !== 'string') return 'no data';
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  const bytes = Math.max(0, Math.floor((data.length * 3) / 4) - padding);
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A thrown value's message (an MCP error's text as the server sent it). */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}
