// The `task` tool (docs/tasks.md): the model hands a prompt to a child chat that runs in its own
// file beside the parent, with a profile's tools (never more than the parent's), and gets back its
// final message and the file's path. Running the child is the host's (src/host/tasks/): this is
// the definition, its input and the description that lists the profiles.
import type { AgentProfile } from '../../tasks/profiles.js';
import { DEFAULT_AGENT } from '../../tasks/profiles.js';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../registry.js';
import { fieldsOf, labelOf, optional, stringField } from './builtin.js';

export const TASK_TOOL_NAME = 'task';

/** The longest a `task` call may take: a child is bounded by its turns and cost instead. */
const NO_TIMEOUT_SECONDS = 2147483;

/** A `task` call's input, checked. */
export interface TaskInput {
  prompt: string;
  agent?: string;
  name?: string;
}

/** The input of a call, or why it cannot run. */
export function taskInput(input: unknown): TaskInput | string {
  const fields = fieldsOf(input);
  const prompt = stringField(fields, 'prompt');
  if (prompt === undefined || prompt.trim() === '') return 'No prompt provided';
  const out: TaskInput = { prompt };
  const agent = stringField(fields, 'agent');
  if (agent !== undefined) out.agent = agent;
  const name = stringField(fields, 'name');
  if (name !== undefined) out.name = name;
  return out;
}

const DESCRIPTION =
  'Delegate a self-contained piece of work to a sub-agent: a new conversation in its own chat file, with its own context and a profile\'s tools (never more than yours). It works until it is done and returns only its final answer and the path of its chat file. Use it for searches and reading that would fill this conversation ("find every caller of X", "summarise these five modules"). Several task calls in one reply run at the same time. Write the prompt so it stands alone: the sub-agent sees nothing of this conversation.';

/**
 * The description and input schema offered, listing the profiles a chat may use (their names
 * are the `agent` field's choices). Without profiles: the registered definition's, whose
 * `agent` is any string (a call is checked against the chat's profiles when it runs).
 */
export function taskToolShape(
  profiles?: readonly Pick<AgentProfile, 'name' | 'description'>[],
): Pick<ToolDefinition, 'description' | 'inputSchema' | 'strict'> {
  const names = profiles?.map((profile) => profile.name);
  const list = (profiles ?? [])
    .map((profile) => `- ${profile.name}: ${profile.description}`)
    .join('\n');
  const properties = {
    label: { type: 'string', description: 'A few words saying why you delegate this task.' },
    prompt: {
      type: 'string',
      description: 'The whole task for the sub-agent: what to find or do, and what to report.',
    },
    agent: {
      ...optional('string', `The profile to run it with (default: ${DEFAULT_AGENT}).`),
      ...(names === undefined ? {} : { enum: [...names, null] }),
    },
    name: optional(
      'string',
      'A short name for the task (a few words); its chat file is named after it.',
    ),
  };
  return {
    description: list === '' ? DESCRIPTION : `${DESCRIPTION}\n\nProfiles:\n${list}`,
    inputSchema: {
      type: 'object',
      properties,
      required: Object.keys(properties).sort(),
      additionalProperties: false,
    },
    strict: true,
  };
}

/** What runs a `task` call (the host's task service). */
export type TaskRunner = (input: TaskInput, ctx: ToolContext) => Promise<ToolOutcome>;

/** The `task` tool, run by `runner`; opt-in (a chat's or the configuration's `tools` names it). */
export function taskTool(runner: TaskRunner): ToolDefinition {
  return {
    name: TASK_TOOL_NAME,
    ...taskToolShape(),
    async: true,
    enabled: false,
    timeoutSeconds: NO_TIMEOUT_SECONDS,
    formatPreview: (input) => {
      const fields = fieldsOf(input);
      const agent = stringField(fields, 'agent') ?? DEFAULT_AGENT;
      const name = stringField(fields, 'name') ?? stringField(fields, 'prompt') ?? '';
      return { detail: `${agent}: ${name}`, label: labelOf(fields) };
    },
    execute: (input, ctx) => {
      const checked = taskInput(input);
      if (typeof checked === 'string') return Promise.resolve({ ok: false, error: checked });
      return runner(checked, ctx);
    },
  };
}
