// What a Lua tool's `ctx` asks the host (docs/tools.md, "The ExecutionContext"): truncation
// (`tools:truncate`, `tools:format-size`, with src/core/tools/truncate.ts) and the write policy
// (`tools:writable`, with src/core/tools/sandbox/paths.ts). The Lua side keeps no copy of these
// rules; answers use the Lua names (snake_case, and the `output_*` aliases Lua tools read, docs/tools.md "The ExecutionContext").
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
import type {
  LuaTruncateFacts,
  LuaTruncateParams,
  LuaTruncation,
  LuaWritableParams,
} from '../editor/protocol/wire.js';

/** The limits every Lua tool's `ctx.truncate` shows, sent with each call (`tools.execute`). */
export const LUA_TRUNCATE_FACTS: LuaTruncateFacts = {
  max_lines: MAX_LINES,
  max_bytes: MAX_BYTES,
  head_cut_marker: HEAD_CUT_MARKER,
  tail_cut_marker: TAIL_CUT_MARKER,
};

/** `tools:truncate`. */
export function truncateForLua(p: LuaTruncateParams): LuaTruncation {
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
export function formatSizeForLua({ bytes }: { bytes: number }): string {
  return formatSize(bytes);
}

/**
 * `tools:writable`: `{path, base, rw_paths}` (`rw_paths` as the call's context carried them) →
 * whether writing `path` (relative to `base`) stays inside them, symbolic links followed.
 */
export function writableForLua({ path, base, rw_paths }: LuaWritableParams): boolean {
  return isPathWritable(path, rw_paths, base);
}
