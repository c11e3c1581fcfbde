// Host → Lua methods of chats held in files (docs/rpc.md, "Chats on files"), kept apart from the
// others; `HostToLua` and `HOST_TO_LUA` include them.
import type { Method, ToLuaSpecs } from './common.js';
import type { FrontmatterAnswer, FrontmatterRequest } from './wire.js';

export interface FilesToLua {
  /** A chat held in a file was written by the host (`running`: its run goes on). */
  'files.changed': Method<{ path: string; running: boolean }, null>;
  /** A buffer showing `path`, if any: its number and whether it has unsaved changes. */
  'files.status': Method<{ path: string }, { bufnr?: number; modified: boolean }>;
  /**
   * `<M-CR>` on a `task` call (in buffer `parent`) whose child waits: open the child's file
   * `path` at the first of `calls` (and its diff when `diff`).
   */
  'tasks.show': Method<
    { parent: number; path: string; calls: { id: string; diff: boolean }[] },
    null
  >;
  /** A file chat's frontmatter: Lua (or a custom language) run, JSON/YAML operations checked. */
  'frontmatter.evaluate': Method<
    { bufnr: number; path: string; frontmatter: FrontmatterRequest; trusted: boolean },
    FrontmatterAnswer
  >;
}

export const FILES_TO_LUA = {
  'files.changed': {
    kind: 'notification',
    params: '`{path, running}`',
    answer: '`nil` (a buffer showing the file takes its lines)',
    section: 'chats-on-files',
  },
  'files.status': {
    kind: 'request',
    params: '`{path}`',
    answer: '`{bufnr?, modified}`',
    section: 'chats-on-files',
  },
  'tasks.show': {
    kind: 'notification',
    params: '`{parent, path, calls}`',
    answer: '`nil` (the child is opened in a split at its first waiting call)',
    section: 'chats-on-files',
  },
  'frontmatter.evaluate': {
    kind: 'request',
    params: '`{bufnr, path, frontmatter, trusted}`',
    answer: '`{ops, variables?}`, `{error}` or `{untrusted}`',
    section: 'chats-on-files',
  },
} as const satisfies ToLuaSpecs<FilesToLua>;
