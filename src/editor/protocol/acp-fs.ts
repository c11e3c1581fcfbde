// The host → Lua method of an agent's file requests (docs/agents.md, "Files and terminals"), kept
// apart from the others; `HostToLua` and `HOST_TO_LUA` include it.
import type { Method, ToLuaSpecs } from './common.js';

export interface AcpFsToLua {
  /**
   * The loaded buffer showing `path`, if any: its text (unsaved changes included; a final newline
   * when the file gets one) and whether it has unsaved changes. Nothing when no buffer shows it.
   */
  'acp.buffer': Method<{ path: string }, { text?: string; modified?: boolean }>;
}

export const ACP_FS_TO_LUA: ToLuaSpecs<AcpFsToLua, 'request'> = {
  'acp.buffer': {
    kind: 'request',
    params: '`{path}`',
    answer: '`{text?, modified?}` (nothing when no loaded buffer shows the file)',
  },
};
