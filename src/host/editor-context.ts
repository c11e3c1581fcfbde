// What the host asks the editor once per step of the tool loop (and per send): the buffer's
// configuration, the editor's facts about it, and the provider environment variables — one round
// trip instead of one per question.
import type { LuaBridge } from '../editor/lua.js';
import { PROVIDERS } from './providers.js';

/** Neovim's view of a buffer that tools and the sandbox need. */
export interface EditorFacts {
  cwd: string;
  filename: string | null;
  sandbox_override: boolean | null;
}

export interface EditorContext {
  /** The configuration as plain data (`config.snapshot`). */
  config: Record<string, unknown>;
  facts: EditorFacts;
  /** The non-empty values of `KNOWN_ENV` in Neovim's environment (users may `:let $X = …`). */
  env: Record<string, string>;
}

/** The variables every provider reads by default (its credential and base URL). */
export const KNOWN_ENV: readonly string[] = [
  ...new Set(
    Object.values(PROVIDERS).flatMap((entry) => [
      ...entry.credentialEnv({}),
      ...(entry.baseUrlEnv === undefined ? [] : [entry.baseUrlEnv]),
    ]),
  ),
];

export async function fetchEditorContext(
  lua: Pick<LuaBridge, 'call'>,
  bufnr: number,
): Promise<EditorContext> {
  const answer = (await lua.call('editor.context', { bufnr, names: KNOWN_ENV })) as {
    config: Record<string, unknown>;
    facts: EditorFacts;
    env: Record<string, string> | unknown[];
  };
  // NOTE: an empty Lua table arrives as an array.
  return { ...answer, env: Array.isArray(answer.env) ? {} : answer.env };
}
