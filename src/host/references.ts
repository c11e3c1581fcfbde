// The `${VAR}` and `${secret:<kind>:<service>}` references of settings that start a program or
// reach a server (MCP servers, ACP agents): Neovim's environment first (`env.first`, as
// `:let $VAR` set it), the host's own after it; a credential through the credential chain
// (docs/credentials.md). Only settings of the user's own configuration carry them (`mcp.*` and
// `acp.agents.*` need trust), never a chat's text.
import type { SecretRef } from '../core/tools/mcp/config.js';
import type { HostBase } from './base.js';

/** Answers a `${…}` reference: Neovim's environment, or the credential chain. */
export type ReferenceLookup = (ref: SecretRef) => Promise<string | undefined>;

/** The lookup of a host; `what` names the consumer in the credential's description (`MCP`). */
export function referenceLookup(
  ctx: Pick<HostBase, 'lua' | 'secrets'>,
  what: string,
): ReferenceLookup {
  return async (ref) => {
    if (ref.type === 'env') {
      const answer = await ctx.lua.call('env.first', { names: [ref.name] });
      if (answer !== null && typeof answer.value === 'string') return answer.value;
      return process.env[ref.name];
    }
    const resolved = await ctx.secrets.resolve({
      kind: ref.kind,
      service: ref.service,
      description: `${ref.kind} for ${ref.service} (${what})`,
    });
    return resolved.ok ? resolved.value : undefined;
  };
}
