// Lua → host action of completion in chat buffers (docs/completion.md): `complete:items`, asked
// as a `call` (Lua never waits for it); `LuaToHost` and `LUA_TO_HOST` include it.
import type { CompleteAnswer, CompleteRequest } from '../../core/complete/items.js';
import { ActionError, type ActionSpecs, type Method, record } from './common.js';
import { strings } from './decoders.js';

export interface CompleteActions {
  'complete:items': Method<CompleteRequest, CompleteAnswer>;
}

function textOf(raw: Record<string, unknown>, key: string): string {
  const value = raw[key];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') {
    throw new ActionError(`expected ${key} to be a string, got ${JSON.stringify(value)}`);
  }
  return value;
}

function decodeRequest(raw: unknown): CompleteRequest {
  const params = record(raw);
  const where = params['where'];
  if (where !== 'reference' && where !== 'frontmatter') {
    throw new ActionError(
      `expected where = "reference" or "frontmatter", got ${JSON.stringify(where)}`,
    );
  }
  const col = params['col'];
  if (typeof col !== 'number' || !Number.isInteger(col) || col < 0) {
    throw new ActionError(`expected col to be a byte column, got ${JSON.stringify(col)}`);
  }
  return {
    where,
    line: textOf(params, 'line'),
    col,
    dir: textOf(params, 'dir'),
    lang: textOf(params, 'lang'),
    lines: strings(params['lines']),
  };
}

export const COMPLETE_ACTIONS: ActionSpecs<CompleteActions, 'call'> = {
  'complete:items': {
    kind: 'call',
    params: '`{where, line, col, dir?, lang?, lines?}`',
    answer: '`{items, start, incomplete}` (Vim complete-items)',
    section: 'completion',
    decode: decodeRequest,
  },
};
