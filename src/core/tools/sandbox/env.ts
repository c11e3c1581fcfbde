// The environment of sandboxed commands (issue 19): what is removed before a command runs, so that
// a command the sandbox approved cannot read the provider keys (or any other secret kept in the
// environment) and send them out.
//
// Decisions (see docs/tools.md, "The sandbox"):
// - Removed: every variable the credential chain knows (the providers' keys and base URLs, given
//   by the caller), every name ending in `_KEY`, `_TOKEN`, `_SECRET` or `_CREDENTIALS` or
//   containing `PASSWORD` (compared without regard to case: `github_token` counts), and the
//   variables that lead to a session outside the sandbox: `SSH_AUTH_SOCK` (the ssh agent signs for
//   you), `GPG_AGENT_INFO`, `DBUS_SESSION_BUS_ADDRESS` (D-Bus can start programs outside),
//   `NVIM` and `NVIM_LISTEN_ADDRESS` (Neovim's server runs whatever a client asks), `TMUX` and
//   `TMUX_PANE`, and `GOOGLE_APPLICATION_CREDENTIALS`.
// - `sandbox.policy.env_allow` lists names that pass although a rule matches them, exactly as
//   written (case-sensitive). Nothing else can bring a removed variable back: a tool's own `env`
//   setting (`tools.bash.env`) is scrubbed like the inherited environment.
// - Only names travel to the backend (`policy.env_unset`, bwrap's `--unsetenv`), never values.

/** Names removed for what they lead to, not for what they are called. */
export const SESSION_VARIABLES: readonly string[] = [
  'SSH_AUTH_SOCK',
  'GPG_AGENT_INFO',
  'DBUS_SESSION_BUS_ADDRESS',
  'NVIM',
  'NVIM_LISTEN_ADDRESS',
  'TMUX',
  'TMUX_PANE',
  'GOOGLE_APPLICATION_CREDENTIALS',
];

const SECRET_NAME = /(?:_KEY|_TOKEN|_SECRET|_CREDENTIALS)$|PASSWORD/iu;

export interface ScrubRules {
  /** The variables the credential chain reads (`ANTHROPIC_API_KEY`, …). */
  known: readonly string[];
  /** `sandbox.policy.env_allow`. */
  allow: readonly string[];
}

/** Whether the sandbox removes `name` from a command's environment. */
export function isScrubbed(name: string, rules: ScrubRules): boolean {
  if (rules.allow.includes(name)) return false;
  return rules.known.includes(name) || SESSION_VARIABLES.includes(name) || SECRET_NAME.test(name);
}

/**
 * The names to remove: the known and session variables (whether set or not), and the names of
 * `env` that a rule matches; sorted, without the allowed ones.
 */
export function scrubbedNames(
  env: Readonly<Record<string, string | undefined>>,
  rules: ScrubRules,
): string[] {
  const names = new Set([...rules.known, ...SESSION_VARIABLES, ...Object.keys(env)]);
  return [...names].filter((name) => isScrubbed(name, rules)).sort();
}

/** A copy of `env` without the removed variables (and without unset ones). */
export function scrubEnv(
  env: Readonly<Record<string, string | undefined>>,
  rules: ScrubRules,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !isScrubbed(name, rules)) out[name] = value;
  }
  return out;
}
