// `:Flemma mcp:status`: one block per server — transport, state, tool count, uptime, attempts,
// the last error — as the user reads it.

import type { McpServerStatus } from './manager.js';

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
