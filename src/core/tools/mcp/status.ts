// `:Flemma mcp:status`: one block per server — transport, state, tool count, uptime, attempts,
// the last error — as the user reads it; and `:Flemma mcp:resources`, each server's resources.

import type { McpResourceListing, McpServerStatus } from './types.js';

export function mcpStatusLines(servers: readonly McpServerStatus[]): string[] {
  if (servers.length === 0) {
    return ['MCP: no server is configured (mcp.servers; see :help flemma-mcp)'];
  }
  const width = Math.max(...servers.map((server) => server.name.length));
  const lines = [`MCP servers (${String(servers.length)}):`];
  for (const server of servers) {
    const name = server.name.padEnd(width);
    if (server.state === 'disabled') {
      lines.push(`  ${name}  disabled (enabled = false)`);
      continue;
    }
    const parts = [server.transport, server.state, plural(server.tools.length, 'tool')];
    if (server.filtered > 0) parts.push(`${String(server.filtered)} filtered out`);
    if (server.uptimeMs !== undefined) parts.push(`up ${duration(server.uptimeMs)}`);
    if (server.state === 'reconnecting') {
      const next = server.retryInMs === undefined ? 'now' : `in ${duration(server.retryInMs)}`;
      parts.push(`next attempt ${next} (${plural(server.attempts, 'failure')})`);
    }
    lines.push(`  ${name}  ${parts.join(', ')}`);
    lines.push(`  ${' '.repeat(width)}  ${server.target}`);
    if (server.lastError !== undefined && server.state !== 'connected') {
      lines.push(`  ${' '.repeat(width)}  last error: ${server.lastError}`);
    }
  }
  return lines;
}

/**
 * `:Flemma mcp:resources`: each server's resources (URI, then name, description and type) and
 * resource templates, or why there are none.
 */
export function mcpResourceLines(listings: readonly McpResourceListing[]): string[] {
  if (listings.length === 0) {
    return ['MCP: no server is configured (mcp.servers; see :help flemma-mcp)'];
  }
  const lines = ['MCP resources (reference one in a message as @mcp:<server>:<uri>):'];
  for (const listing of listings) {
    if (listing.error !== undefined) {
      lines.push(`  ${listing.server}: ${listing.error}`);
      continue;
    }
    if (!listing.offered) {
      lines.push(`  ${listing.server}: offers no resources`);
      continue;
    }
    const counts = [plural(listing.resources.length, 'resource')];
    if (listing.templates.length > 0) counts.push(plural(listing.templates.length, 'template'));
    lines.push(`  ${listing.server} (${counts.join(', ')})`);
    const rows = [
      ...listing.resources.map((item) => ({ uri: item.uri, about: about(item) })),
      ...listing.templates.map((item) => ({
        uri: item.uriTemplate,
        about: `${about(item)} [template]`.trim(),
      })),
    ];
    const width = Math.min(48, Math.max(0, ...rows.map((row) => row.uri.length)));
    for (const row of rows) {
      lines.push(`    ${row.uri.padEnd(width)}  ${row.about}`.trimEnd());
    }
  }
  return lines;
}

/** `Title — description (type)`, as much of it as the server gave. */
function about(item: {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  mimeType?: string | undefined;
}): string {
  const label = item.title ?? item.name;
  const description = item.description?.split(/\r?\n/)[0]?.trim();
  let out = description === undefined || description === '' ? label : `${label} — ${description}`;
  if (item.mimeType !== undefined) out += ` (${item.mimeType})`;
  return out;
}

function plural(count: number, word: string): string {
  return `${String(count)} ${word}${count === 1 ? '' : 's'}`;
}

/** `850 ms`, `12.3 s`, `4 min 5 s`, `2 h 3 min`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${String(Math.round(ms))} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const whole = Math.floor(seconds);
  if (whole < 3600) return `${String(Math.floor(whole / 60))} min ${String(whole % 60)} s`;
  return `${String(Math.floor(whole / 3600))} h ${String(Math.floor((whole % 3600) / 60))} min`;
}
