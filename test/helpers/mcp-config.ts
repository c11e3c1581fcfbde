// The configuration of an MCP server started over stdio, as the unit tests of the MCP manager
// hand it in: the program `fake` unless `extra` says otherwise, no filters, a 5 s timeout.
import type { McpServerConfig } from '../../src/core/tools/mcp/config.js';

/** A stdio server `name` running `fake` with no arguments; `extra` replaces any field. */
export const STDIO = (name: string, extra: Partial<McpServerConfig> = {}): McpServerConfig =>
  ({
    name,
    transport: 'stdio',
    command: 'fake',
    args: [],
    env: {},
    include: [],
    exclude: [],
    timeout: 5,
    ...extra,
  }) as McpServerConfig;
