// An agent's permission requests, judged by the chat's approval chain (docs/agents.md,
// "Permissions"): each request becomes the calls of ours it stands for (src/core/acp/permissions.ts)
// and the chain decides them with the buffer's configuration, frontmatter and trust, as it decides
// the chat's own calls (presets, command rules, the sensitive-place guard). One difference: the
// sandbox resolver's approval does not count, since the agent runs its commands itself, outside
// Flemma's sandbox. Approved: the agent's allow option; denied: its reject option. What would wait
// for the user is left to the caller (`AcpAgents`), which asks the user.
import type { RequestPermissionRequest, RequestPermissionResponse } from '@agentclientprotocol/sdk';
import {
  combineDecisions,
  permissionCalls,
  permissionOutcome,
} from '../../core/acp/permissions.js';
import type { Decision } from '../../core/approval/chain.js';
import { SANDBOX_RESOLVER } from '../../core/approval/resolvers.js';
import type { ApprovalService } from '../approval.js';
import type { BufferSettings } from '../buffer-settings.js';
import type { FileLogger } from '../log.js';

/** What judging a permission request needs of the chat: its buffer and its settings. */
export interface PermissionContext {
  bufnr: number;
  agent: string;
  editor: Pick<BufferSettings, 'config' | 'approval' | 'facts'>;
}

/** The chain's answer to a request: the agent's answer, or undefined when the user decides. */
export type PermissionJudge = (
  chat: PermissionContext,
  request: RequestPermissionRequest,
  signal: AbortSignal,
) => Promise<RequestPermissionResponse | undefined>;

/** The judge of a host: its approval service, its messages, its log. */
export function permissionJudge(deps: {
  approval: Pick<ApprovalService, 'decide'>;
  logger: Pick<FileLogger, 'info'>;
}): PermissionJudge {
  return async (chat, request, signal) => {
    const { editor } = chat;
    const calls = permissionCalls(request.toolCall);
    const decisions: Decision[] = [];
    for (const [index, call] of calls.entries()) {
      const outcome = await deps.approval.decide(
        {
          bufnr: chat.bufnr,
          toolId: `acp_${request.toolCall.toolCallId}_${String(index)}`,
          toolName: call.toolName,
          input: call.input,
        },
        editor.config,
        editor.approval,
        editor.facts,
      );
      // The agent's command does not run in Flemma's sandbox: its approval does not hold here.
      const sandboxed = outcome.resolver === SANDBOX_RESOLVER && outcome.decision === 'approve';
      decisions.push(sandboxed ? 'require_approval' : outcome.decision);
    }
    const decision = signal.aborted ? 'deny' : combineDecisions(decisions);
    const what = `${calls.map((call) => call.toolName).join(', ')}: ${request.toolCall.title ?? request.toolCall.toolCallId}`;
    deps.logger.info(`acp ${chat.agent}: permission for ${what}: ${decision}`);
    if (signal.aborted) return { outcome: permissionOutcome(request.options, 'cancelled') };
    if (decision === 'require_approval') return undefined;
    return {
      outcome: permissionOutcome(request.options, decision === 'approve' ? 'allow' : 'reject'),
    };
  };
}
