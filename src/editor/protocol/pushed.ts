// What Lua pushes of a buffer's editor side with a user's action (`chat:cycle`, `chat:send`):
// the provider environment variables and the editor's facts as they are then, which the host
// keeps (src/host/editor-state.ts; docs/architecture.md, "The message budget").
import { field } from './common.js';
import type { EditorFacts } from './wire.js';

export interface PushedState {
  /** The non-blank values of the variables the host reads (`:let $X = …` is not observable). */
  env?: Record<string, string>;
  facts?: EditorFacts;
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The environment as pushed: string values only (an empty Lua table arrives as an array). */
function envOf(raw: unknown): Record<string, string> | undefined {
  if (!isTable(raw)) return undefined;
  if (Array.isArray(raw)) return raw.length === 0 ? {} : undefined;
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) if (typeof value === 'string') env[name] = value;
  return env;
}

/** The editor's facts as pushed; undefined when they are not what `tools.facts` answers. */
function factsOf(raw: unknown): EditorFacts | undefined {
  const cwd = field(raw, 'cwd');
  if (typeof cwd !== 'string' || cwd === '') return undefined;
  const filename = field(raw, 'filename');
  const override = field(raw, 'sandbox_override');
  const facts: EditorFacts = {
    cwd,
    filename: typeof filename === 'string' ? filename : null,
    sandbox_override: typeof override === 'boolean' ? override : null,
  };
  const dirs = field(raw, 'editor_dirs');
  if (isTable(dirs) && !Array.isArray(dirs)) facts.editor_dirs = dirs;
  const servers = field(raw, 'servers');
  if (Array.isArray(servers)) facts.servers = servers.filter((s) => typeof s === 'string');
  return facts;
}

/** `{state = {env, facts}}` of an action's params, spread into its decoded params. */
export function pushedOf(raw: unknown): { state?: PushedState } {
  if (!isTable(raw)) return {};
  const state: PushedState = {};
  const env = envOf(field(raw, 'env'));
  if (env !== undefined) state.env = env;
  const facts = factsOf(field(raw, 'facts'));
  if (facts !== undefined) state.facts = facts;
  return { state };
}
