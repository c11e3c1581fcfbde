// The messages of the chats' ACP agents (docs/agents.md, "Permissions"), kept apart from the
// others: Lua → host actions (`LuaToHost` and `LUA_TO_HOST` include them) and host → Lua methods
// (`HostToLua` and `HOST_TO_LUA` include them).
import { ActionError, bufnrOf, field } from './common.js';
import type { ActionSpecs, Method, ToLuaSpecs } from './common.js';

/** The user's answer to an agent's permission request. */
export type AgentAnswer = 'allow' | 'allow_always' | 'reject';

const ANSWERS: readonly AgentAnswer[] = ['allow', 'allow_always', 'reject'];

/** One configured agent's line of `:checkhealth flemma` (`acp:probe`). */
export interface AgentHealth {
  name: string;
  level: 'ok' | 'warn' | 'error';
  text: string;
}

export interface AcpActions {
  /** The user answered the permission request `id` of the buffer's agent (`acp.permission`). */
  'acp:answer': Method<{ bufnr: number; id: string; answer: AgentAnswer }, null>;
  /**
   * `:checkhealth flemma`: what the agents of `acp.agents` answer to `initialize`: those a chat
   * runs, and those of `names` (started for it).
   */
  'acp:probe': Method<{ names: string[] }, { agents: AgentHealth[] }>;
}

export const ACP_ACTIONS: ActionSpecs<AcpActions> = {
  'acp:answer': {
    kind: 'notification',
    params: '`{bufnr, id, answer}`: `answer` is `allow`, `allow_always` or `reject`',
    answer: '`nil`',
    decode: (raw) => {
      const id = field(raw, 'id');
      const answer = ANSWERS.find((item) => item === field(raw, 'answer'));
      if (typeof id !== 'string' || answer === undefined) {
        throw new ActionError(
          `expected { bufnr, id, answer = "allow"|"allow_always"|"reject" }, got ${JSON.stringify(raw)}`,
        );
      }
      return { bufnr: bufnrOf(raw), id, answer };
    },
  },
  'acp:probe': {
    kind: 'call',
    params: '`{names}`: the agents that may be started to ask',
    answer:
      "`{agents}`: per agent of the setup's `acp.agents` a chat runs or `names` has, `{name, level, text}` (`level` `ok`, `warn` or `error`)",
    decode: (raw) => {
      const given = field(raw, 'names') ?? [];
      // An empty Lua table may arrive as a map.
      const names = typeof given === 'object' && Object.keys(given).length === 0 ? [] : given;
      if (!Array.isArray(names) || !names.every((name) => typeof name === 'string')) {
        throw new ActionError(`expected { names = { "agent", … } }, got ${JSON.stringify(raw)}`);
      }
      return { names };
    },
  },
};

export interface AcpToLua {
  /**
   * A chat's agent asks a permission the approval chain leaves to the user; `diff`: the change an
   * `edit` request proposes (the diff view).
   */
  'acp.permission': Method<
    {
      bufnr: number;
      id: string;
      message: string;
      diff?: { path: string; before: string; after: string; exists: boolean };
    },
    null
  >;
  /** That request was answered or cancelled: it waits no more. */
  'acp.settled': Method<{ bufnr: number; id: string }, null>;
}

export const ACP_TO_LUA: ToLuaSpecs<AcpToLua, 'notification'> = {
  'acp.permission': {
    kind: 'notification',
    params: '`{bufnr, id, message, diff?}`: `diff` `{path, before, after, exists}` for an `edit`',
    answer:
      '`nil` (`<M-CR>`, `tool:approve`, `tool:approve-always`, `tool:reject` answer it with `acp:answer`)',
  },
  'acp.settled': {
    kind: 'notification',
    params: '`{bufnr, id}`',
    answer: '`nil`',
  },
};
