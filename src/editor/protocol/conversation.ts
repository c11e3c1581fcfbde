// Lua → host actions of long conversations (`:Flemma compact`, `:Flemma context`,
// `:Flemma usage:estimate`, the end of a reply the host stopped in), kept apart from the other
// actions; `LuaToHost` and `LUA_TO_HOST` include them.
import { ActionError, type ActionSpecs, bufnrOf, field, type Method } from './common.js';

interface Buf {
  bufnr: number;
}

export interface ConversationActions {
  /** `:Flemma compact`: the buffer's file (absolute) and whether it has unwritten changes. */
  'chat:compact': Method<Buf & { file: string; modified: boolean }, null>;
  'usage:estimate': Method<
    Buf,
    { input_tokens: number; cost?: number; provider: string; model: string } | null
  >;
  /** `:Flemma context`: the next request's estimate against the window, nothing sent. */
  'chat:context': Method<
    Buf,
    { lines: string[]; tokens: number; window: number; percent: number } | null
  >;
  /**
   * A reply stopped with the host that streamed it: what ends it after `content` (the reply as
   * the chat holds it), the interrupted marker and the next `@You:` (docs/context.md).
   */
  'chat:cut-off': Method<{ content: string }, { ending: string }>;
  /** `:Flemma run`: the buffer's file (absolute, written) runs as a chat held in a file. */
  'chat:run-file': Method<Buf & { file: string }, null>;
  /** `<C-c>` in a buffer whose file runs: that run is cancelled. */
  'chat:cancel-file': Method<{ file: string }, null>;
}

const buf = (raw: unknown): Buf => ({ bufnr: bufnrOf(raw) });

/** `file`: a chat's file, absolute. */
function fileOf(raw: unknown): string {
  const file = field(raw, 'file');
  if (typeof file !== 'string' || file === '') {
    throw new ActionError(`expected { file = <the chat's file> }, got ${JSON.stringify(raw)}`);
  }
  return file;
}

export const CONVERSATION_ACTIONS: ActionSpecs<ConversationActions> = {
  'chat:compact': {
    kind: 'notification',
    params: '`{bufnr, file, modified}`',
    answer: '`nil` (the summary runs on)',
    section: 'chatcompact',
    decode: (raw) => ({
      bufnr: bufnrOf(raw),
      file: fileOf(raw),
      modified: field(raw, 'modified') === true,
    }),
  },
  'usage:estimate': {
    kind: 'call',
    params: '`{bufnr}`',
    answer: '`{input_tokens, cost?, provider, model}` or `nil`',
    section: 'usage',
    decode: buf,
  },
  'chat:context': {
    kind: 'call',
    params: '`{bufnr}`',
    answer: '`{lines, tokens, window, percent}` or `nil`',
    section: 'usage',
    decode: buf,
  },
  'chat:cut-off': {
    kind: 'call',
    params: '`{content}`',
    answer: '`{ending}`',
    section: 'chatsend',
    decode: (raw) => {
      const content = field(raw, 'content');
      if (typeof content !== 'string') {
        throw new ActionError(`expected { content = <the reply's text> }, got ${typeof content}`);
      }
      return { content };
    },
  },
  'chat:run-file': {
    kind: 'notification',
    params: '`{bufnr, file}`',
    answer: '`nil` (the run goes on; `files.changed` tells its writes)',
    section: 'chats-on-files',
    decode: (raw) => ({ bufnr: bufnrOf(raw), file: fileOf(raw) }),
  },
  'chat:cancel-file': {
    kind: 'notification',
    params: '`{file}`',
    answer: '`nil`',
    section: 'chats-on-files',
    decode: (raw) => ({ file: fileOf(raw) }),
  },
};
