// Lua → host actions of `:Flemma chats` (docs/picker.md), kept apart from the other actions;
// `LuaToHost` and `LUA_TO_HOST` include them.
import { ActionError, type ActionSpecs, field, type Method } from './common.js';
import { strings } from './decoders.js';

/** Where `:Flemma chats` looks. */
export interface ChatsListParams {
  /** The chat directories (absolute). */
  dirs: string[];
  /** The working directory, whose project is searched; absent: no project. */
  cwd?: string;
  /** Include the children of `task` calls (`*.tasks/`). */
  children: boolean;
  /** Neovim's state directory. */
  state?: string;
  /** Neovim's cache directory (the picker's index). */
  cache?: string;
}

/** One chat of the list: its file, and the line the picker shows (title, model, age, cost, size). */
export interface ChatRow {
  path: string;
  line: string;
}

export interface ChatActions {
  /** `:Flemma chats`: the chats found, newest first, and how many files the listing read. */
  'chats:list': Method<ChatsListParams, { chats: ChatRow[]; read: number }>;
  /** The picker's preview: the last exchange of a chat's file. */
  'chats:preview': Method<{ path: string }, { lines: string[] }>;
}

/** A non-empty string field, or undefined. */
function optionalText(raw: unknown, key: string): string | undefined {
  const value = field(raw, key);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function listParams(raw: unknown): ChatsListParams {
  const cwd = optionalText(raw, 'cwd');
  const state = optionalText(raw, 'state');
  const cache = optionalText(raw, 'cache');
  return {
    dirs: strings(field(raw, 'dirs')).filter((dir) => dir !== ''),
    children: field(raw, 'children') === true,
    ...(cwd === undefined ? {} : { cwd }),
    ...(state === undefined ? {} : { state }),
    ...(cache === undefined ? {} : { cache }),
  };
}

function previewParams(raw: unknown): { path: string } {
  const path = optionalText(raw, 'path');
  if (path?.endsWith('.chat') !== true) {
    throw new ActionError(`expected { path = <a .chat file> }, got ${JSON.stringify(raw)}`);
  }
  return { path };
}

export const CHAT_ACTIONS: ActionSpecs<ChatActions, 'call'> = {
  'chats:list': {
    kind: 'call',
    params: '`{dirs, cwd?, children, state?, cache?}`',
    answer: '`{chats, read}`: chats `{path, line}`, newest first',
    section: 'commands',
    decode: listParams,
  },
  'chats:preview': {
    kind: 'call',
    params: '`{path}`',
    answer: '`{lines}`',
    section: 'commands',
    decode: previewParams,
  },
};
