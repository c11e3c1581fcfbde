// Names of tools that come from MCP servers. The canonical (internal) name is
// `mcp:<server>:<tool>`, so that policy and approval patterns such as `mcp:github:*` read
// naturally. The provider-safe API name (`mcp__<server>__<tool>`) is made at the provider
// boundary, not here.

import { nameGlob } from '../../util/glob.js';

/** What a server may be called in the configuration: it becomes part of every tool name. */
export const SERVER_NAME_PATTERN = /^[A-Za-z0-9_-]+$/;

const PREFIX = 'mcp:';

/** `mcp:<server>:<tool>`. Characters a tool name may not hold become `_` (see `safeToolPart`). */
export function mcpToolName(server: string, tool: string): string {
  return `${PREFIX}${server}:${safeToolPart(tool)}`;
}

/**
 * The server and tool of a canonical MCP name, or null for any other name. The tool part is
 * everything after the second colon, so it may contain colons itself:
 * `mcp:fs:read:file` → `{ server: 'fs', tool: 'read:file' }`; `file.read` → null.
 */
export function parseMcpToolName(name: string): { server: string; tool: string } | null {
  const match = /^mcp:([^:]+):(.+)$/.exec(name);
  if (match === null) return null;
  const [, server, tool] = match;
  if (server === undefined || tool === undefined) return null;
  return { server, tool };
}

/** The prefix every tool of one server shares (`mcp:fs:`), for patterns and clean-up. */
export function serverPrefix(server: string): string {
  return `${PREFIX}${server}:`;
}

/**
 * A tool name as the registry accepts it (`[A-Za-z0-9_.:-]`). MCP recommends such names but
 * does not require them; anything else (a space, a slash) becomes `_`. The server is always
 * called with the tool's own name.
 */
export function safeToolPart(tool: string): string {
  const cleaned = tool.replace(/[^A-Za-z0-9_.:-]/g, '_');
  return cleaned === '' ? '_' : cleaned;
}

/**
 * Whether a server's tool is offered: it matches `include` (when the list is not empty) and no
 * pattern of `exclude`. Exclusion wins. The patterns are globs over the server's own tool names
 * (src/core/util/glob.ts, names: `*` any run of characters, `?` one).
 */
export function toolSelected(
  tool: string,
  include: readonly string[],
  exclude: readonly string[],
): boolean {
  if (exclude.some((pattern) => nameGlob(pattern)(tool))) return false;
  if (include.length === 0) return true;
  return include.some((pattern) => nameGlob(pattern)(tool));
}
