// The protocol of slash commands (docs/slash-commands.md): before a send of a chat that has any,
// the host asks the registry in Neovim what each one is. `HostToLua` and its table include it.
import type { SlashResolution, SlashUse } from '../../core/chat/slash.js';
import type { Doc, Method } from './common.js';

export interface SlashToLua {
  /** The registry's answer for each slash command of a chat, in order. */
  'slash.resolve': Method<{ bufnr: number; commands: SlashUse[] }, { results: SlashResolution[] }>;
}

export const SLASH_TO_LUA = {
  'slash.resolve': {
    kind: 'request',
    params: '`{bufnr, commands}`',
    answer: '`{results}`',
    section: 'slashresolve',
  },
} as const satisfies Record<keyof SlashToLua, Doc & { kind: 'request' }>;
