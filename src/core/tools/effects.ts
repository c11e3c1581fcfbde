// What a call may do to the files of the project, as far as the executor needs to know before it
// starts: a call that may change files waits for the turn's `git status` note (`:Flemma
// review`), so that its changes are never part of the turn's start; a call of a built-in tool
// that only reads need not wait.

/** Built-in tools that never change a file (they read, list, search, fetch or compute). */
export const READ_ONLY_BUILTINS: ReadonlySet<string> = new Set([
  'read',
  'ls',
  'grep',
  'find',
  'web_fetch',
  'calculator',
  'calculator_async',
  'process_status',
  'process_output',
]);

/**
 * Whether a call of `name` may change files. Only the built-in tools named above are known not
 * to (`builtin`: the name is the built-in's, not a Lua or JavaScript tool that replaced it);
 * every other tool may (a command, a tool of the user's).
 */
export function mayChangeFiles(name: string, builtin: boolean): boolean {
  return !(builtin && READ_ONLY_BUILTINS.has(name));
}
