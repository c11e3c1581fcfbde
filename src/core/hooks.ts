// Lifecycle hook names (`domain:action`) and the User autocmd pattern derived from each.
import type { RequestRecord } from './usage/session.js';

/** The events of docs/hooks.md ("The events of the specification"), with the fields their payload carries. */
export interface HookPayloads {
  'request:sending': { bufnr: number };
  'request:finished': {
    bufnr: number;
    status: 'completed' | 'cancelled' | 'errored';
    /** The session's record of the request, with its prices (completed requests only). */
    request?: RequestRecord;
  };
  'tool:executing': { bufnr: number; tool_name: string; tool_id: string };
  'tool:completed': {
    bufnr: number;
    tool_name: string;
    tool_id: string;
    status: 'success' | 'error';
  };
  'usage:estimated': { bufnr: number; provider: string; model: string; input_tokens: number };
  'config:updated': Record<string, never>;
  'boot:complete': Record<string, never>;
  'sink:created': { bufnr: number; name: string };
  'sink:destroyed': { bufnr: number; name: string };
  'conversation:idle': { bufnr: number };
  'job:submitted': {
    bufnr: number;
    job_id: string;
    tool_id: string;
    tool_name: string;
    active_count: number;
  };
  'job:completed': {
    bufnr: number;
    job_id: string;
    tool_id: string;
    tool_name: string;
    success: boolean;
    active_count: number;
  };
  'autopilot:resume-scheduled': { bufnr: number; delay_ms: number };
  'autopilot:resume-cancelled': { bufnr: number };
  'autopilot:resumed': { bufnr: number };
  /** An MCP server connected (again, when `reconnected`) and its tools are registered. */
  'mcp:connected': { server: string; tools: number; reconnected: boolean };
  /** A connected MCP server went away; its tools are unregistered until it reconnects. */
  'mcp:disconnected': { server: string; reason: string };
  /**
   * `:Flemma compact` ended (docs/hooks.md, "Events that fire today"): `file` is the new chat when it was written,
   * `new_bufnr` its buffer when it was opened.
   */
  'compact:finished': {
    bufnr: number;
    status: 'completed' | 'cancelled' | 'errored';
    file?: string;
    new_bufnr?: number;
  };
  /**
   * `:Flemma fork`, `:Flemma rewind` or the rewind of `:Flemma retry` ended (docs/history.md):
   * `file` is the new chat (fork) or the sibling file of the removed messages (rewind, retry).
   */
  'history:finished': {
    bufnr: number;
    action: 'fork' | 'rewind' | 'retry';
    status: 'done' | 'refused' | 'failed';
    file?: string;
    new_bufnr?: number;
  };
  /** The cycle stopped at tool calls that wait for the user (docs/hooks.md, "Events that fire today"). */
  'approval:needed': { bufnr: number; tool_ids: string[]; tool_names: string[] };
}

export type HookName = keyof HookPayloads;

export const HOOK_NAMES: readonly HookName[] = [
  'request:sending',
  'request:finished',
  'tool:executing',
  'tool:completed',
  'usage:estimated',
  'config:updated',
  'boot:complete',
  'sink:created',
  'sink:destroyed',
  'conversation:idle',
  'job:submitted',
  'job:completed',
  'autopilot:resume-scheduled',
  'autopilot:resume-cancelled',
  'autopilot:resumed',
];

const HOOK_NAME_SHAPE = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?::[a-z][a-z0-9]*(?:-[a-z0-9]+)*)+$/;

/** Whether a string has the `domain:action` shape (lowercase words, `-` inside a segment). */
export function isHookName(name: string): boolean {
  return HOOK_NAME_SHAPE.test(name);
}

/**
 * The User autocmd pattern of a hook: `Flemma` followed by every `:`- or `-`-separated word in
 * TitleCase (`tool-use:completed` → `FlemmaToolUseCompleted`).
 */
export function hookPattern(name: string): string {
  const words = name.split(/[:-]/).filter((word) => word.length > 0);
  return 'Flemma' + words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('');
}
