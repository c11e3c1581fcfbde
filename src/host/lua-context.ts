// What a Lua tool's `ctx` asks the host (docs/tools.md, "The ExecutionContext"): truncation
// (`tools:truncate`, `tools:format-size`, with src/core/tools/truncate.ts) and the write policy
// (`tools:writable`, with src/core/tools/sandbox/paths.ts). The Lua side keeps no copy of these
// rules; answers use the Lua names (snake_case, and the `output_*` aliases the seed's tools read).
import {
  HEAD_CUT_MARKER,
  MAX_BYTES,
  MAX_LINES,
  TAIL_CUT_MARKER,
  type TruncateLimits,
  formatSize,
  truncateHead,
  truncateTail,
} from '../core/tools/truncate.js';
import { isPathWritable } from '../core/tools/sandbox/paths.js';

/** `{text, from = "head" | "tail", max_lines?, max_bytes?}`. */
export interface LuaTruncateParams {
  text: string;
  from: 'head' | 'tail';
  max_lines?: number;
  max_bytes?: number;
}

/** The answer, as a Lua tool reads it; absent fields are nil in Lua. */
export interface LuaTruncation {
  content: string;
  truncated: boolean;
  truncated_by?: 'lines' | 'bytes';
  total_lines: number;
  total_bytes: number;
  shown_lines: number;
  shown_bytes: number;
  cut_line?: { line: number; line_bytes: number; kept_bytes: number };
  output_lines: number;
  output_bytes: number;
}

/** The limits every Lua tool's `ctx.truncate` shows, sent with each call (`tools.execute`). */
export const LUA_TRUNCATE_FACTS = {
  max_lines: MAX_LINES,
  max_bytes: MAX_BYTES,
  head_cut_marker: HEAD_CUT_MARKER,
  tail_cut_marker: TAIL_CUT_MARKER,
} as const;

export class LuaContextError extends Error {
  override name = 'LuaContextError';
}

/** A limit as the Lua API took it: anything but a number means the default. */
function limit(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

export function truncateParams(params: unknown): LuaTruncateParams {
  const p = (params ?? {}) as Record<string, unknown>;
  const { text, from } = p;
  if (typeof text !== 'string' || (from !== 'head' && from !== 'tail')) {
    throw new LuaContextError(
      `expected { text = <string>, from = "head" | "tail" }, got ${JSON.stringify(params)}`,
    );
  }
  const out: LuaTruncateParams = { text, from };
  const maxLines = limit(p['max_lines']);
  const maxBytes = limit(p['max_bytes']);
  if (maxLines !== undefined) out.max_lines = maxLines;
  if (maxBytes !== undefined) out.max_bytes = maxBytes;
  return out;
}

/** `tools:truncate`. */
export function truncateForLua(params: unknown): LuaTruncation {
  const p = truncateParams(params);
  const limits: TruncateLimits = {};
  if (p.max_lines !== undefined) limits.maxLines = p.max_lines;
  if (p.max_bytes !== undefined) limits.maxBytes = p.max_bytes;
  const result = p.from === 'head' ? truncateHead(p.text, limits) : truncateTail(p.text, limits);
  const out: LuaTruncation = {
    content: result.content,
    truncated: result.truncated,
    total_lines: result.totalLines,
    total_bytes: result.totalBytes,
    shown_lines: result.shownLines,
    shown_bytes: result.shownBytes,
    output_lines: result.shownLines,
    output_bytes: result.shownBytes,
  };
  if (result.truncatedBy !== null) out.truncated_by = result.truncatedBy;
  if (result.cutLine !== null) {
    out.cut_line = {
      line: result.cutLine.line,
      line_bytes: result.cutLine.lineBytes,
      kept_bytes: result.cutLine.keptBytes,
    };
  }
  return out;
}

/** `tools:format-size`: `{bytes}` → `12.1KB` (anything but a positive number is `0B`). */
export function formatSizeForLua(params: unknown): string {
  const bytes = (params as { bytes?: unknown } | null)?.bytes;
  return formatSize(typeof bytes === 'number' ? bytes : 0);
}

/**
 * `tools:writable`: `{path, base, rw_paths}` (`rw_paths` as the call's context carried them) →
 * whether writing `path` (relative to `base`) stays inside them, symbolic links followed.
 */
export function writableForLua(params: unknown): boolean {
  const p = (params ?? {}) as Record<string, unknown>;
  const { path, base } = p;
  const rwPaths = Array.isArray(p['rw_paths']) ? (p['rw_paths'] as unknown[]) : undefined;
  if (typeof path !== 'string' || typeof base !== 'string' || rwPaths === undefined) {
    throw new LuaContextError(
      `expected { path = <string>, base = <string>, rw_paths = <list> }, got ${JSON.stringify(params)}`,
    );
  }
  const roots = rwPaths.filter((root): root is string => typeof root === 'string');
  return isPathWritable(path, roots, base);
}
