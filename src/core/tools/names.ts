// Provider-safe tool names. A tool's canonical name (the one in the registry, in policies and in
// the `.chat` file) may contain `.` and `:` (`file.read`, `mcp:github:create_issue`); the name a
// provider sees (its "API name") uses only `[A-Za-z0-9_-]` and is at most 64 characters, the
// strictest rule among the providers Flemma speaks to.
//
// Decisions:
// - `mcp:<server>:<tool>` becomes `mcp__<server>__<tool>` (every `:` is `__`), every other
//   character outside the set (`.` included) becomes `_`: `file.read` → `file_read`.
// - A name longer than 64 characters keeps its first 55 characters and gets `_` and the first 8
//   hex digits of the SHA-256 of the canonical name, so two long names that share a prefix still
//   differ.
// - The mapping is a pure function of the canonical name; the registry refuses a tool whose API
//   name another tool already has (`API name collision: a_b`), so it can be reversed.
// - An API name maps to itself: sanitising is idempotent, so a `.chat` file that holds the API
//   name (`file_read`) instead of the canonical one still finds its tool.

import { createHash } from 'node:crypto';

export const API_NAME_MAX = 64;
export const API_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The provider-safe name of a canonical tool name. */
export function apiToolName(name: string): string {
  const safe = name.replace(/:/g, '__').replace(/[^A-Za-z0-9_-]/g, '_');
  const base = safe === '' ? '_' : safe;
  if (base.length <= API_NAME_MAX) return base;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${base.slice(0, API_NAME_MAX - 9)}_${hash}`;
}
