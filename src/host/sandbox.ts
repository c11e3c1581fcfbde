// The sandbox as the executor sees it for one call: the access object tools use, and the facts a
// Lua tool's `ctx.sandbox` needs to answer without asking the host. The policy itself lives in
// src/core/tools/sandbox; this file only supplies what the core cannot know on its own.
//
// Decisions:
// - Environment variables in `rw_paths` are read from `facts.env` when the editor sends one
//   (Neovim's environment, which `:let $VAR=…` can change), else from the host's environment,
//   which the host inherited from Neovim when it started.
// - The shared backend registry is used, so backends registered elsewhere in the host apply.

import {
  type SandboxState as CoreSandboxState,
  type SandboxFacts as CoreSandboxFacts,
  type SandboxStatus,
  resolveSandbox,
  sandboxStatus,
} from '../core/tools/sandbox/index.js';

export type SandboxState = CoreSandboxState;

export interface SandboxFacts extends CoreSandboxFacts {
  /** Neovim's environment, when the editor sends it. */
  env?: Record<string, string | undefined>;
}

export type { SandboxStatus };

function envOf(facts: SandboxFacts): Record<string, string | undefined> {
  return facts.env ?? process.env;
}

export function sandboxFor(
  settings: Record<string, unknown> | undefined,
  facts: SandboxFacts,
  home: string,
): Promise<SandboxState> {
  return resolveSandbox(settings, facts, envOf(facts), home);
}

/** The report behind `:Flemma sandbox:status` (`lines` is ready to show). */
export function sandboxStatusFor(
  settings: Record<string, unknown> | undefined,
  facts: SandboxFacts,
  home: string,
): Promise<SandboxStatus> {
  return sandboxStatus(settings, facts, envOf(facts), home);
}
