// The public interface of a tool written in JavaScript or TypeScript and loaded by the host from
// a module named in `tools.modules` (a path ending in .js, .mjs or .cjs). See docs/tools.md.
//
//   // my-tools.mjs
//   /** @type {import('flemma/src/core/tools/api').ToolModule} */
//   export const definitions = [{ name: 'now', description: 'The time', input_schema: {…},
//     execute: async (input, ctx) => ({ success: true, output: new Date().toISOString() }) }];

import type { ExecutionContext } from './context.js';
import type { Preview } from './registry.js';

export type { ExecutionContext } from './context.js';

/** What `execute` returns (or resolves to): the ExecutionResult of docs/tools.md. */
export interface ToolResult {
  success: boolean;
  /** A string is written as it is; an object becomes JSON in a `json` fence. */
  output?: string | Record<string, unknown>;
  /** The message the model sees when `success` is false. */
  error?: string;
  /**
   * The failure is transient (a timeout, a busy server): the retry middleware runs the call
   * again with backoff (`tools.middleware.retry`). Only for calls that are safe to repeat.
   */
  retryable?: boolean;
}

export interface ToolModuleDefinition {
  name: string;
  description: string;
  /** JSON Schema of the input; validated with ajv before `execute` runs. */
  input_schema: Record<string, unknown>;
  /** OpenAI strict mode (every property in `required`, `additionalProperties: false`). */
  strict?: boolean;
  /** `false`: registered but offered only where a buffer names it. */
  enabled?: boolean;
  /** Long-running: shown with a spinner; honour `ctx.signal` to be cancellable. */
  async?: boolean;
  /** Runs in the host. Throwing is the same as `{ success: false, error: message }`. */
  execute(input: Record<string, unknown>, ctx: ExecutionContext): ToolResult | Promise<ToolResult>;
  /** One line after `name: ` in the placeholder preview; `maxLength` is the room left. */
  format_preview?(input: Record<string, unknown>, maxLength: number): Preview;
}

/** A module exports `definitions`, or `resolve(register, done)` to find its tools later. */
export type ToolModule =
  | { definitions: ToolModuleDefinition[] }
  | {
      resolve(
        register: (name: string, definition: ToolModuleDefinition) => void,
        done: (error?: string | Error) => void,
      ): void | Promise<void>;
    };
