// An agent's permission requests, judged by the chat's approval chain (docs/agents.md,
// "Permissions"): each request becomes the calls of ours it stands for (src/core/acp/permissions.ts)
// and the chain decides them with the buffer's configuration, frontmatter and trust, as it decides
// the chat's own calls (presets, command rules, the sensitive-place guard). One difference: the
// sandbox resolver's approval does not count, since the agent runs its commands itself, outside
// Flemma's sandbox. Approved: the agent's allow option; denied: its reject option. What would wait
// for the user is refused for now, with a message saying how to allow it (answering it in the chat
// is the next step of issue 33).
import type { RequestPermissionRequest, RequestPermissionResponse } from '@agentclientprotocol/sdk';
import {
  combineDecisions,
  permissionCalls,
  permissionOutcome,
} from '../../core/acp/permissions.js';
import type { Decision } from '../../core/approval/chain.js';
import { SANDBOX_RESOLVER } from '../../core/approval/resolvers.js';
import type { Notifier } from '../../core/util/notify.js';
import type { ApprovalService } from '../approval.js';
import type { BufferSettings } from '../buffer-settings.js';
import type { FileLogger } from '../log.js';

/** What judging a permission request needs of the chat: its buffer and its settings. */
export interface PermissionContext {
  bufnr: number;
  agent: string;
  editor: Pick<BufferSettings, 'config' | 'approval' | 'facts'>;
}

export type PermissionJudge = (
  chat: PermissionContext,
  request: RequestPermissionRequest,
  signal: AbortSignal,
) => Promise<RequestPermissionResponse>;

/** The judge of a host: its approval service, its messages, its log. */
export function permissionJudge(deps: {
  approval: Pick<ApprovalService, 'decide'>;
  notify: Pick<Notifier, 'warn'>;
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
    if (decision === 'approve') return { outcome: permissionOutcome(request.options, 'allow') };
    if (decision === 'require_approval') {
      deps.notify.warn(
        `${chat.agent} asked to ${what}; refused: approving it in the chat is not supported yet (allow it with tools.auto_approve)`,
      );
    }
    return { outcome: permissionOutcome(request.options, 'reject') };
  };
}
