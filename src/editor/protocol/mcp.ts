// Lua → host actions of the MCP commands (`:Flemma mcp:status`, `mcp:restart`, `mcp:resources`,
// `mcp:prompt`), kept apart from the other actions; `LuaToHost` and `LUA_TO_HOST` include them.
import type { McpServerStatus } from '../../core/tools/mcp/manager.js';
import type { McpResourceListing } from '../../core/tools/mcp/types.js';
import { ActionError, type ActionSpecs, type Method, record } from './common.js';

export interface McpActions {
  'mcp:status': Method<null, { lines: string[]; servers: McpServerStatus[] }>;
  'mcp:restart': Method<{ server: string | undefined }, { restarted: string[] }>;
  'mcp:resources': Method<
    { server: string | undefined },
    { lines: string[]; servers: McpResourceListing[] }
  >;
  'mcp:prompt': Method<
    { server: string; name: string; args: Record<string, string> },
    { lines: string[]; notes: string[] }
  >;
}

function optionalText(raw: unknown, key: string): string | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const value = (raw as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : undefined;
}

function text(raw: unknown, key: string): string {
  const value = record(raw)[key];
  if (typeof value !== 'string' || value === '') {
    throw new ActionError(`expected ${key} to be a non-empty string, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** `args`: a table of strings (an empty Lua table arrives as a list). */
function promptArgs(raw: unknown): Record<string, string> {
  const value = record(raw)['args'];
  if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) {
    return {};
  }
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(record(value))) {
    if (typeof item !== 'string') {
      throw new ActionError(
        `expected the argument ${key} to be a string, got ${JSON.stringify(item)}`,
      );
    }
    out[key] = item;
  }
  return out;
}

export const MCP_ACTIONS: ActionSpecs<McpActions, 'call'> = {
  'mcp:status': {
    kind: 'call',
    params: 'none',
    answer: '`{lines, servers}`',
    section: 'commands',
    decode: () => null,
  },
  'mcp:restart': {
    kind: 'call',
    params: '`{server?}`',
    answer: '`{restarted}`',
    section: 'commands',
    decode: (raw) => ({ server: optionalText(raw, 'server') }),
  },
  'mcp:resources': {
    kind: 'call',
    params: '`{server?}`',
    answer: '`{lines, servers}`',
    section: 'commands',
    decode: (raw) => ({ server: optionalText(raw, 'server') }),
  },
  'mcp:prompt': {
    kind: 'call',
    params: '`{server, name, args}`',
    answer: '`{lines, notes}` (the chat text to insert)',
    section: 'commands',
    decode: (raw) => ({
      server: text(raw, 'server'),
      name: text(raw, 'name'),
      args: promptArgs(raw),
    }),
  },
};
