// Lua → host actions of the chats' ACP agents (docs/agents.md, "Permissions"), kept apart from
// the other actions; `LuaToHost` and `LUA_TO_HOST` include them.
import { ActionError, bufnrOf, field, type Doc, type Method } from './common.js';

/** The user's answer to an agent's permission request. */
export type AgentAnswer = 'allow' | 'allow_always' | 'reject';

const ANSWERS: readonly AgentAnswer[] = ['allow', 'allow_always', 'reject'];

export interface AcpActions {
  /** The user answered the permission request `id` of the buffer's agent (`acp.permission`). */
  'acp:answer': Method<{ bufnr: number; id: string; answer: AgentAnswer }, null>;
}

interface Spec<M extends keyof AcpActions> extends Doc {
  readonly kind: 'notification';
  readonly decode: (raw: unknown) => AcpActions[M]['params'];
}

export const ACP_ACTIONS: { readonly [M in keyof AcpActions]: Spec<M> } = {
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
};
