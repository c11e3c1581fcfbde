// What a value from Lua (over RPC) or from JSON is: an object, or an empty table.

/** A plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An empty Lua table arrives over RPC as `[]` or `{}`; both mean "nothing". */
export function isEmptyTable(value: unknown): boolean {
  return (
    (Array.isArray(value) && value.length === 0) ||
    (isRecord(value) && Object.keys(value).length === 0)
  );
}
