// Parts of an evaluated prompt (src/core/provider/types.ts) written on one line each, so that a
// test's turn with several tool calls and results reads as the conversation it stands for.
import type {
  EvaluatedMessage,
  EvaluatedPart,
  EvaluatedThinking,
  EvaluatedToolResult,
  EvaluatedToolUse,
} from '../../src/core/provider/types.js';

/** A text part. */
export function textPart(text: string): EvaluatedPart {
  return { kind: 'text', text };
}

/** A tool use `id` of the tool `name` with `input` (`{}` when left out). */
export function toolUsePart(id: string, name: string, input: unknown = {}): EvaluatedToolUse {
  return { kind: 'tool_use', id, name, input };
}

/**
 * The result of the tool use `toolUseId` of the tool `name`: a string is one text part, an array
 * of strings one text part each, and any other part array is taken as it is. Neither an error nor
 * synthetic unless `flags` says so.
 */
export function toolResultPart(
  toolUseId: string,
  name: string,
  content: string | string[] | EvaluatedPart[],
  flags: { isError?: boolean; synthetic?: boolean } = {},
): EvaluatedToolResult {
  const parts =
    typeof content === 'string'
      ? [textPart(content)]
      : content.map((part) => (typeof part === 'string' ? textPart(part) : part));
  return {
    kind: 'tool_result',
    toolUseId,
    name,
    parts,
    isError: flags.isError ?? false,
    synthetic: flags.synthetic ?? false,
  };
}

/** A message of the user made of `parts`. */
export function userMessage(
  ...parts: (EvaluatedPart | EvaluatedToolResult)[]
): EvaluatedMessage & { role: 'user' } {
  return { role: 'user', parts };
}

/** A message of the model made of `parts`. */
export function assistantMessage(
  ...parts: (EvaluatedPart | EvaluatedThinking | EvaluatedToolUse)[]
): EvaluatedMessage & { role: 'assistant' } {
  return { role: 'assistant', parts };
}
